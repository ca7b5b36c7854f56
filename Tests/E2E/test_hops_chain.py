"""Benchmarks/e2e/hops.py's following of one request and its answer across the capture points.

Pure Python, no namespaces: the packets are made here, shaped as tcpdump saw a new UDP association
through Sluice and a round trip through kernel forwarding.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "Benchmarks" / "e2e"))

import hops  # noqa: E402

TUN_ADDR = "198.18.0.1"
PORT = hops.PORTS["udp_new"]
RELAY = hops.h.RELAY_PORT


def udp(ts, src, dst, sport, dport, payload, ipid=1):
    return hops.Packet(ts, src, dst, 17, sport, dport, (src, dst, sport, dport, ipid, payload), False, False, payload)


def tcp(ts, src, dst, sport, dport, seq, payload):
    return hops.Packet(ts, src, dst, 6, sport, dport, (src, dst, sport, dport, 0, seq, payload), False, True, payload)


def window(caps, lo, hi):
    for pkts in caps.values():
        pkts.sort(key=lambda p: p.ts)
    return hops.Window(caps, {k: [p.ts for p in v] for k, v in caps.items()}, lo, hi)


def test_new_association_answer_is_not_its_open_ok():
    """The relay writes OPEN_OK (29 bytes on the carrier) just before the answer (on the UDP path):
    the answer's hop through the relay ends at the path datagram, not at the OPEN_OK."""
    c, r, s = hops.CLIENT, hops.RELAY, hops.SERVER
    open_ = tcp(1_100, c, r, 40000, RELAY, 5, 116)
    open_ok = tcp(1_500, r, c, RELAY, 40000, 9, 29)
    answer = udp(1_600, r, c, RELAY, 50000, 107, ipid=7)
    request_out = udp(1_200, hops.netns.RELAY_SERVER_SIDE_V4, s, 45000, PORT, 64, ipid=3)
    answer_in = udp(1_400, s, hops.netns.RELAY_SERVER_SIDE_V4, PORT, 45000, 64, ipid=4)
    caps = {
        "tun": [udp(1_000, TUN_ADDR, s, 38000, PORT, 64), udp(1_700, s, TUN_ADDR, PORT, 38000, 64)],
        "client": [open_, open_ok._replace(ts=1_510), answer._replace(ts=1_610)],
        "relay-in": [open_._replace(ts=1_110), open_ok, answer],
        "relay-out": [request_out, answer_in],
        "server": [request_out._replace(ts=1_210), answer_in._replace(ts=1_390)],
    }
    points = hops.chain(window(caps, 900, 1_800), True, "data", "data", PORT)
    assert points == [1_000, 1_100, 1_110, 1_200, 1_210, 1_390, 1_400, 1_600, 1_610, 1_700]
    h = hops.hops(points)
    assert (h["client↑"], h["relay↑"], h["relay↓"], h["client↓"], h["total"]) == (0.1, 0.09, 0.2, 0.09, 0.7)


def test_kernel_forwarding_follows_the_same_packet_and_stops_at_the_window():
    c, s = hops.CLIENT, hops.SERVER
    req, ans = udp(2_000, c, s, 38000, PORT, 64, ipid=1), udp(2_300, s, c, PORT, 38000, 64, ipid=2)
    caps = {"client": [req, ans._replace(ts=2_330)], "relay-in": [req._replace(ts=2_010), ans._replace(ts=2_320)],
            "relay-out": [req._replace(ts=2_020), ans._replace(ts=2_310)],
            "server": [req._replace(ts=2_030), ans]}
    points = hops.chain(window(caps, 1_900, 2_400), False, "data", "data", PORT)
    assert points == [2_000, 2_000, 2_010, 2_020, 2_030, 2_300, 2_310, 2_320, 2_330, 2_330]
    assert hops.chain(window(caps, 1_900, 2_320), False, "data", "data", PORT) is None, "the answer came after the window"
