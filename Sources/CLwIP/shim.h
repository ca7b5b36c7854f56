// lwIP's raw API only. Never lwIP's sockets or posix headers: they clash with Glibc.
//
// Below the includes: inline shims for what Swift cannot import — lwIP's macros (tcp_listen,
// tcp_sndbuf, tcp_nagle_disable, IP_ANY_TYPE, ...) and the netif/pcb fields the accept-any method
// writes. They live here, in lwIP's own module, so that no other C module includes lwIP's headers
// (two modules including them textually clash in the module cache). Every function is called only on
// the stack thread, the one thread that owns lwIP.
#include <lwip/init.h>
#include <lwip/tcp.h>
#include <lwip/udp.h>
#include <lwip/netif.h>
#include <lwip/pbuf.h>
#include <lwip/ip.h>
#include <lwip/ip_addr.h>
#include <lwip/timeouts.h>
#include <lwip/inet_chksum.h>
#include <lwip/nd6.h>
#include <lwip/priv/tcp_priv.h>
#include <string.h>
#include <stdlib.h>
#include <stddef.h>
#include <stdint.h>

typedef err_t (*sluice_output4_fn)(struct netif *netif, struct pbuf *p, const ip4_addr_t *dest);
typedef err_t (*sluice_output6_fn)(struct netif *netif, struct pbuf *p, const ip6_addr_t *dest);
typedef err_t (*sluice_accept_fn)(void *arg, struct tcp_pcb *newpcb, err_t err);

struct sluice_netif_setup {
    sluice_output4_fn out4;
    sluice_output6_fn out6;
    uint16_t mtu;
};

static inline err_t sluice_netif_init(struct netif *netif) {
    struct sluice_netif_setup *setup = (struct sluice_netif_setup *)netif->state;
    netif->state = NULL;  // replaced by the caller's state right after netif_add
    netif->name[0] = 's';
    netif->name[1] = 'l';
    netif->output = setup->out4;
    netif->output_ip6 = setup->out6;
    netif->mtu = setup->mtu;
#if LWIP_IPV6 && LWIP_ND6_ALLOW_RA_UPDATES
    netif->mtu6 = setup->mtu;
#endif
    netif->flags = NETIF_FLAG_UP | NETIF_FLAG_LINK_UP;
    return ERR_OK;
}

static inline struct netif *sluice_netif_create(void *state, sluice_output4_fn out4, sluice_output6_fn out6, uint16_t mtu) {
    struct netif *netif = calloc(1, sizeof *netif);
    if (!netif) return NULL;
    struct sluice_netif_setup setup = { out4, out6, mtu };
    if (!netif_add_noaddr(netif, &setup, sluice_netif_init, ip_input)) {
        free(netif);
        return NULL;
    }
    netif->state = state;
#if LWIP_IPV6_SEND_ROUTER_SOLICIT
    netif->rs_count = 0;
#endif
    netif_set_up(netif);
    netif_set_link_up(netif);
    netif_set_default(netif);
    return netif;
}

static inline void sluice_netif_destroy(struct netif *netif) {
    netif_remove(netif);
    free(netif);
}

static inline void *sluice_netif_state(struct netif *netif) { return netif->state; }

static inline void sluice_netif_set_dest4(struct netif *netif, const uint8_t addr[4]) {
    ip4_addr_t a;
    memcpy(&a.addr, addr, 4);
    ip_addr_copy_from_ip4(netif->ip_addr, a);
    /* A /0 netmask and no gateway: everything is on link, so replies route back through this netif. */
    ip4_addr_set_zero(ip_2_ip4(&netif->netmask));
}

static inline void sluice_netif_set_dest6(struct netif *netif, const uint8_t addr[16]) {
    ip6_addr_t a;
    memcpy(a.addr, addr, 16);
    ip6_addr_clear_zone(&a);
    ip_addr_copy_from_ip6(netif->ip6_addr[0], a);
    netif->ip6_addr_state[0] = IP6_ADDR_PREFERRED;
}

static inline err_t sluice_netif_input(struct netif *netif, struct pbuf *p) { return netif->input(p, netif); }

static inline struct tcp_pcb *sluice_tcp_listen_any(void *arg, sluice_accept_fn accept) {
    struct tcp_pcb *pcb = tcp_new_ip_type(IPADDR_TYPE_ANY);
    if (!pcb) return NULL;
    if (tcp_bind(pcb, IP_ANY_TYPE, 1) != ERR_OK) {
        tcp_close(pcb);
        return NULL;
    }
    struct tcp_pcb *listener = tcp_listen_with_backlog(pcb, TCP_DEFAULT_LISTEN_BACKLOG);
    if (!listener) {
        tcp_close(pcb);
        return NULL;
    }
    tcp_arg(listener, arg);
    tcp_accept(listener, (tcp_accept_fn)accept);
    return listener;
}

static inline void sluice_tcp_listen_set_port(struct tcp_pcb *listener, uint16_t port) {
    ((struct tcp_pcb_listen *)listener)->local_port = port;
}

/// The whole send-buffer space: tcp_sndbuf() caps it at 64 KiB (TCPWND16), tcp_write checks snd_buf.
static inline uint32_t sluice_tcp_sndbuf(const struct tcp_pcb *pcb) { return pcb->snd_buf; }
/// Raises an accepted pcb's send buffer past TCP_SND_BUF (64 KiB here), which alone caps a download
/// at one window of data per round trip; TCP_SND_QUEUELEN still bounds the segments queued.
static inline void sluice_tcp_set_sndbuf(struct tcp_pcb *pcb, uint32_t bytes) { pcb->snd_buf = bytes; }
static inline uint32_t sluice_tcp_sndqueuelen(const struct tcp_pcb *pcb) { return tcp_sndqueuelen(pcb); }
static inline uint32_t sluice_tcp_sndqueuelen_max(void) { return TCP_SND_QUEUELEN; }
static inline uint32_t sluice_tcp_mss(const struct tcp_pcb *pcb) { return tcp_mss(pcb); }
/// Sets the most payload lwIP puts in one segment of `pcb` (TCP_MSS caps it at the handshake).
static inline void sluice_tcp_set_mss(struct tcp_pcb *pcb, uint16_t mss) { pcb->mss = mss; }
static inline void sluice_tcp_nagle_disable(struct tcp_pcb *pcb) { tcp_nagle_disable(pcb); }

/// Whether `pcb` owes the application an ACK: bytes received and not yet acknowledged (lwIP's delayed
/// ACK, TF_ACK_DELAY, which only its 250 ms fast timer would send), an ACK asked for (TF_ACK_NOW), or
/// a receive window that grew past the right edge the last segment announced (tcp_recved announces
/// growth smaller than TCP_WND_UPDATE_THRESHOLD only with the next segment that goes out anyway).
/// Reads tcp_pcb fields of the public tcp.h; the flag names are tcp.h's too.
static inline int sluice_tcp_ack_owed(const struct tcp_pcb *pcb) {
    if (tcp_is_flag_set(pcb, TF_ACK_DELAY | TF_ACK_NOW)) return 1;
    return (int32_t)(pcb->rcv_nxt + pcb->rcv_ann_wnd - pcb->rcv_ann_right_edge) > 0;
}
/// Makes the next tcp_output send an ACK even with no data to carry it: what lwIP's tcp_ack_now
/// (tcp_priv.h) does, with tcp.h's tcp_set_flags.
static inline void sluice_tcp_ack_now(struct tcp_pcb *pcb) { tcp_set_flags(pcb, TF_ACK_NOW); }
/// Turns the immediate ACK lwIP's receive path asks for on every second data segment (TF_ACK_NOW,
/// sent by the tcp_output that ends tcp_input) into an owed one (TF_ACK_DELAY), which the end of
/// the loop turn sends: a turn that reads several super-segments answers them with one ACK. Call
/// from the recv callback of a data segment. Not once the peer's FIN arrived (the pcb is no longer
/// ESTABLISHED or FIN_WAIT_*): lwIP may hand the pcb to TIME_WAIT then, and that ACK must go now.
static inline void sluice_tcp_defer_ack(struct tcp_pcb *pcb) {
    if (!tcp_is_flag_set(pcb, TF_ACK_NOW)) return;
    if (pcb->state != ESTABLISHED && pcb->state != FIN_WAIT_1 && pcb->state != FIN_WAIT_2) return;
    tcp_clear_flags(pcb, TF_ACK_NOW);
    tcp_set_flags(pcb, TF_ACK_DELAY);
}

static inline void sluice_copy_addr(const ip_addr_t *a, uint8_t out[16]) {
    memset(out, 0, 16);
    if (IP_IS_V6(a)) memcpy(out, ip_2_ip6(a)->addr, 16);
    else memcpy(out, &ip_2_ip4(a)->addr, 4);
}

static inline int sluice_tcp_endpoints(const struct tcp_pcb *pcb, uint8_t local[16], uint16_t *local_port,
                         uint8_t remote[16], uint16_t *remote_port) {
    sluice_copy_addr(&pcb->local_ip, local);
    sluice_copy_addr(&pcb->remote_ip, remote);
    *local_port = pcb->local_port;
    *remote_port = pcb->remote_port;
    return IP_IS_V6(&pcb->local_ip) ? 6 : 4;
}

static inline void sluice_tcp_detach(struct tcp_pcb *pcb) {
    tcp_arg(pcb, NULL);
    tcp_recv(pcb, NULL);
    tcp_sent(pcb, NULL);
    tcp_err(pcb, NULL);
    tcp_poll(pcb, NULL, 0);
}

/// Removes a TIME_WAIT pcb holding the 4-tuple of a new connection. An application that reuses a
/// source port (after walking its ephemeral range) sends a fresh SYN for a tuple lwIP still keeps
/// in TIME_WAIT, which lwIP would answer with a bare ACK instead of accepting it, as a kernel
/// server would. Returns 1 when one was removed.
static inline int sluice_tcp_drop_timewait(const uint8_t local[16], uint16_t local_port,
                                           const uint8_t remote[16], uint16_t remote_port) {
    uint8_t l[16], r[16];
    for (struct tcp_pcb *pcb = tcp_tw_pcbs; pcb != NULL; pcb = pcb->next) {
        if (pcb->local_port != local_port || pcb->remote_port != remote_port) continue;
        sluice_copy_addr(&pcb->local_ip, l);
        sluice_copy_addr(&pcb->remote_ip, r);
        if (memcmp(l, local, 16) == 0 && memcmp(r, remote, 16) == 0) {
            tcp_abort(pcb);
            return 1;
        }
    }
    return 0;
}

/// Frees the TIME_WAIT pcbs that have waited at least `min_ticks` slow-timer ticks (500 ms each;
/// 0 frees all), returning how many. lwIP keeps them for 2 × MSL = 120 s in a list it scans
/// linearly for every inbound segment, so at thousands of connections a second the list, not the
/// traffic, sets the pace. On a TUN toward local applications a lost final ACK is the only risk this covers; the
/// application then gets RST for its retransmitted FIN, after it has already closed. Never call it
/// from inside an lwIP callback (the pcb may be in use there).
static inline int sluice_tcp_reap_timewait(uint32_t min_ticks) {
    int freed = 0;
    struct tcp_pcb *pcb = tcp_tw_pcbs;
    while (pcb != NULL) {
        struct tcp_pcb *next = pcb->next;
        if ((uint32_t)(tcp_ticks - pcb->tmr) >= min_ticks) {
            tcp_abort(pcb);
            freed++;
        }
        pcb = next;
    }
    return freed;
}

// MARK: packet buffers lwIP adopts
//
// A TUN read of a 64 KiB super-packet lands in memory the engine owns; lwIP's pbuf_alloc would make it
// copy every uploaded byte once more before lwIP sees it. A packet buffer instead carries a custom pbuf
// (lwIP's documented pbuf_alloced_custom, for drivers that receive into their own memory) in a header
// in front of the bytes: the packet is read into the buffer, and the buffer is handed to lwIP as that
// pbuf. Whoever frees the pbuf last (lwIP, or a flow that queued it) frees the buffer.
#if !LWIP_SUPPORT_CUSTOM_PBUF
#error "lwIP built without custom pbufs: packet buffers need pbuf_alloced_custom"
#endif

/// The header in front of a packet buffer's bytes, 64 bytes so that the bytes start cache-line aligned.
struct sluice_packet_buffer_header {
    struct pbuf_custom custom;
    char padding[64 - sizeof(struct pbuf_custom)];
};
_Static_assert(sizeof(struct sluice_packet_buffer_header) == 64, "packet buffer header is one cache line");
_Static_assert(offsetof(struct sluice_packet_buffer_header, custom) == 0, "the pbuf is the buffer's start");

static inline void sluice_packet_buffer_release(struct pbuf *p) { free(p); }

/// A buffer of `capacity` bytes, 64-byte aligned, or NULL when memory is short. Free it with
/// sluice_packet_buffer_free unless it was adopted.
static inline void *sluice_packet_buffer_alloc(size_t capacity) {
    void *base = NULL;
    if (posix_memalign(&base, 64, sizeof(struct sluice_packet_buffer_header) + capacity) != 0) return NULL;
    return (char *)base + sizeof(struct sluice_packet_buffer_header);
}

static inline void sluice_packet_buffer_free(void *bytes) {
    free((char *)bytes - sizeof(struct sluice_packet_buffer_header));
}

/// The buffer cut to its first `capacity` bytes (realloc; glibc shrinks in place), or NULL when
/// realloc failed and the buffer is as it was. Not once adopted.
static inline void *sluice_packet_buffer_shrink(void *bytes, size_t capacity) {
    char *base = realloc((char *)bytes - sizeof(struct sluice_packet_buffer_header),
                         sizeof(struct sluice_packet_buffer_header) + capacity);
    return base == NULL ? NULL : base + sizeof(struct sluice_packet_buffer_header);
}

/// Gives the buffer to lwIP as a pbuf over its `length` bytes from `offset` (a PBUF_REF: its payload is
/// memory lwIP did not allocate). From here on the pbuf owns the buffer: pbuf_free releases it.
static inline struct pbuf *sluice_packet_buffer_adopt(void *bytes, size_t offset, uint16_t length) {
    struct sluice_packet_buffer_header *header =
        (struct sluice_packet_buffer_header *)((char *)bytes - sizeof(struct sluice_packet_buffer_header));
    header->custom.custom_free_function = sluice_packet_buffer_release;
    return pbuf_alloced_custom(PBUF_RAW, length, PBUF_REF, &header->custom, (char *)bytes + offset, length);
}
