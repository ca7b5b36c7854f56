// lwIP shims. lwIP's raw API hides much behind macros (tcp_listen, tcp_sndbuf, tcp_nagle_disable,
// IP_ANY_TYPE, ...) that Swift cannot import, and the accept-any method writes netif and pcb fields
// directly. Every function here is called only on the stack thread, the one thread that owns lwIP.
#pragma once
#include <stdint.h>
#include <lwip/tcp.h>
#include <lwip/netif.h>
#include <lwip/pbuf.h>

typedef err_t sluice_err_t;

typedef sluice_err_t (*sluice_output4_fn)(struct netif *netif, struct pbuf *p, const void *dest);
typedef sluice_err_t (*sluice_output6_fn)(struct netif *netif, struct pbuf *p, const void *dest);
typedef sluice_err_t (*sluice_accept_fn)(void *arg, struct tcp_pcb *newpcb, sluice_err_t err);

/// lwip_init() once per process, without the tcpip thread (NO_SYS=0 build used single-threaded).
void sluice_lwip_init_once(void);

/// Adds the one netif through which every flow passes: no address until a packet names one, output
/// callbacks that write to the TUN, router solicitations off, set as the default netif.
struct netif *sluice_netif_create(void *state, sluice_output4_fn out4, sluice_output6_fn out6, uint16_t mtu);
void sluice_netif_destroy(struct netif *netif);
void *sluice_netif_state(struct netif *netif);

/// Accept-any: before an inbound packet, make its destination the netif's own address (IPv4 field, or
/// IPv6 slot 0 in state preferred). Never netif_set_ipaddr, which aborts pcbs bound to the old address.
void sluice_netif_set_dest4(struct netif *netif, const uint8_t addr[4]);
void sluice_netif_set_dest6(struct netif *netif, const uint8_t addr[16]);
/// Passes a whole IP packet to lwIP (netif->input, i.e. ip_input). lwIP owns `p` afterwards.
sluice_err_t sluice_netif_input(struct netif *netif, struct pbuf *p);

/// A listening pcb on IP_ANY_TYPE; its port is rewritten per inbound SYN.
struct tcp_pcb *sluice_tcp_listen_any(void *arg, sluice_accept_fn accept);
void sluice_tcp_listen_set_port(struct tcp_pcb *listener, uint16_t port);

/// tcp_sndbuf / tcp_sndqueuelen / TCP_SND_QUEUELEN / tcp_mss macros.
uint32_t sluice_tcp_sndbuf(const struct tcp_pcb *pcb);
uint32_t sluice_tcp_sndqueuelen(const struct tcp_pcb *pcb);
uint32_t sluice_tcp_sndqueuelen_max(void);
uint32_t sluice_tcp_mss(const struct tcp_pcb *pcb);
void sluice_tcp_nagle_disable(struct tcp_pcb *pcb);
/// Both endpoints of an accepted pcb: addresses as 16 bytes (IPv4 in the first 4), host-order ports.
/// Returns 6 for IPv6, 4 for IPv4.
int sluice_tcp_endpoints(const struct tcp_pcb *pcb, uint8_t local[16], uint16_t *local_port,
                         uint8_t remote[16], uint16_t *remote_port);
/// Clears every callback and the arg, so lwIP can never call back into a released Swift object.
void sluice_tcp_detach(struct tcp_pcb *pcb);
