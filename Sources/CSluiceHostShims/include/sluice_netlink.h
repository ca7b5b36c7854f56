// rtnetlink message layout macros (NLMSG_*, RTA_*) that Swift cannot import. The structs
// (nlmsghdr, ifinfomsg, ifaddrmsg, rtmsg, fib_rule_hdr, nlmsgerr) and the plain integer
// constants (RTM_*, NLM_F_*, IFA_*, RTA_*, FRA_*) come through the kernel headers below; the
// alignment and header-length macros are re-exported as inline functions.
#pragma once
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/fib_rules.h>
#include <linux/if_addr.h>
#include <linux/if_link.h>

/// NLMSG_ALIGN(len): netlink messages start on 4-byte boundaries.
static inline unsigned int sluice_nlmsg_align(unsigned int len) { return NLMSG_ALIGN(len); }
/// NLMSG_HDRLEN: aligned size of struct nlmsghdr.
static inline unsigned int sluice_nlmsg_hdrlen(void) { return NLMSG_HDRLEN; }
/// RTA_ALIGN(len): route attributes start on 4-byte boundaries.
static inline unsigned int sluice_rta_align(unsigned int len) { return RTA_ALIGN(len); }
/// RTA_LENGTH(0): aligned size of struct rtattr.
static inline unsigned int sluice_rta_hdrlen(void) { return RTA_LENGTH(0); }
/// NLA_TYPE_MASK: attribute type bits without NLA_F_NESTED / NLA_F_NET_BYTEORDER.
static inline unsigned short sluice_nla_type_mask(void) { return (unsigned short)NLA_TYPE_MASK; }
