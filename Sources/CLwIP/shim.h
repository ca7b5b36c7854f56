// lwIP's raw API only. Never lwIP's sockets or posix headers: they clash with Glibc.
#include <lwip/init.h>
#include <lwip/tcp.h>
#include <lwip/udp.h>
#include <lwip/netif.h>
#include <lwip/pbuf.h>
#include <lwip/ip.h>
#include <lwip/ip_addr.h>
#include <lwip/timeouts.h>
#include <lwip/inet_chksum.h>
