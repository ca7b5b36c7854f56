// Layout checks for the rtnetlink structs Swift builds messages from (see sluice_netlink.h):
// the Swift side writes these structs byte for byte, so their sizes must be the kernel ABI's.
#include "sluice_netlink.h"

_Static_assert(sizeof(struct nlmsghdr) == 16, "nlmsghdr is 16 bytes");
_Static_assert(NLMSG_HDRLEN == 16, "nlmsghdr needs no padding");
_Static_assert(sizeof(struct rtattr) == 4, "rtattr is 4 bytes");
_Static_assert(sizeof(struct ifinfomsg) == 16, "ifinfomsg is 16 bytes");
_Static_assert(sizeof(struct ifaddrmsg) == 8, "ifaddrmsg is 8 bytes");
_Static_assert(sizeof(struct rtmsg) == 12, "rtmsg is 12 bytes");
_Static_assert(sizeof(struct fib_rule_hdr) == 12, "fib_rule_hdr is 12 bytes");
_Static_assert(sizeof(struct nlmsgerr) == 20, "nlmsgerr is an int and the echoed nlmsghdr");
