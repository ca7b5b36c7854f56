"""Malformed IP packets, written straight into a TUN device's transmit path.

    ip netns exec CLIENT python3 rawpackets.py inject --dev sluice0 --seconds 4 [--seed N]
    ip netns exec SOME_NS python3 rawpackets.py self-test --dev e2etun0

A packet socket (AF_PACKET, SOCK_RAW) bound to a TUN device hands its bytes to the device's reader
unchanged: no IP stack on the way fills in lengths or checksums, so the reader (`sluice up`) sees
exactly the malformed packet. (A raw IP socket would not do: the kernel rewrites the IPv4 total
length and header checksum.)

`inject` sends the fixed corpus below, then seeded mutations of it (truncations, bit flips, random
bytes) until --seconds have passed, and prints one JSON object with what it sent. Destinations are
inside the routed prefixes 10.20.0.0/24 and fd20::/64 (mutations keep them), so whatever the reader
makes of a packet stays inside the test's namespaces; the two packets whose version nibble lies
about their layout have a garbage destination, which the relay namespace has no route to.

`self-test` checks the premises without Sluice: it creates its own TUN device, injects the corpus
and reads it back from the device, byte for byte; and it writes well-formed UDP and ICMP echo packets
made by the same builders into the device, toward addresses of its own, to show that the kernel
accepts them (so the corpus's "bad checksum" and "bad length" packets differ from good ones only
there).
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import random
import select
import socket
import struct
import subprocess
import sys
import time

SRC4, SRC6 = "198.18.0.1", "fd53::1"  # the TUN's addresses: what the kernel would use as sources
DST4 = ["10.20.0.2", "10.20.0.77", "10.20.0.255", "10.20.0.0"]
DST6 = ["fd20::2", "fd20::77"]
MAX_PACKET = 1500  # the TUN's MTU: a packet socket refuses more


def a4(s: str) -> bytes:
    return socket.inet_pton(socket.AF_INET, s)


def a6(s: str) -> bytes:
    return socket.inet_pton(socket.AF_INET6, s)


def csum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


# -- builders: correct by default, each field overridable to make it wrong ------------------------

def ipv4(proto: int, payload: bytes, src: str = SRC4, dst: str = DST4[0], *, ihl: int = 5,
         total: int | None = None, ident: int = 0x5151, flags_frag: int = 0, ttl: int = 64,
         check: int | None = None, version: int = 4, options: bytes = b"") -> bytes:
    hdr_len = 20 + len(options)
    total = hdr_len + len(payload) if total is None else total
    hdr = struct.pack("!BBHHHBBH4s4s", (version << 4) | (ihl & 0xF), 0, total & 0xFFFF, ident, flags_frag,
                      ttl, proto, 0, a4(src), a4(dst)) + options
    if check is None:
        check = csum(hdr)
    return hdr[:10] + struct.pack("!H", check) + hdr[12:] + payload


def ipv6(nh: int, payload: bytes, src: str = SRC6, dst: str = DST6[0], *, plen: int | None = None,
         version: int = 6, hops: int = 64) -> bytes:
    plen = len(payload) if plen is None else plen
    return struct.pack("!IHBB16s16s", version << 28, plen & 0xFFFF, nh, hops, a6(src), a6(dst)) + payload


def pseudo4(src: str, dst: str, proto: int, length: int) -> bytes:
    return a4(src) + a4(dst) + struct.pack("!BBH", 0, proto, length)


def pseudo6(src: str, dst: str, nh: int, length: int) -> bytes:
    return a6(src) + a6(dst) + struct.pack("!IxxxB", length, nh)


def udp(sport: int, dport: int, data: bytes, pseudo: bytes | None, *, length: int | None = None,
        check: int | None = None) -> bytes:
    length = 8 + len(data) if length is None else length
    seg = struct.pack("!HHHH", sport, dport, length & 0xFFFF, 0) + data
    if check is None:
        check = csum(pseudo + seg) if pseudo is not None else 0
        check = check or 0xFFFF
    return seg[:6] + struct.pack("!H", check) + seg[8:]


def tcp(sport: int, dport: int, flags: int, pseudo: bytes, *, offset: int = 5, options: bytes = b"",
        data: bytes = b"", seq: int = 1, check: int | None = None) -> bytes:
    seg = struct.pack("!HHIIBBHHH", sport, dport, seq, 0, (offset & 0xF) << 4, flags, 65535, 0, 0) + options + data
    if check is None:
        check = csum(pseudo + seg)
    return seg[:16] + struct.pack("!H", check) + seg[18:]


def icmp(typ: int, code: int, body: bytes, pseudo: bytes = b"", *, check: int | None = None) -> bytes:
    msg = struct.pack("!BBH", typ, code, 0) + body
    if check is None:
        check = csum(pseudo + msg)
    return msg[:2] + struct.pack("!H", check) + msg[4:]


def udp4(dport: int = 9001, data: bytes = b"Ehello", dst: str = DST4[0], **kw) -> bytes:
    return ipv4(17, udp(40000, dport, data, pseudo4(SRC4, dst, 17, 8 + len(data)), **kw), dst=dst)


def udp6(dport: int = 9001, data: bytes = b"Ehello", dst: str = DST6[0], **kw) -> bytes:
    return ipv6(17, udp(40000, dport, data, pseudo6(SRC6, dst, 17, 8 + len(data)), **kw), dst=dst)


def ext(nh: int, body: bytes = b"\x01\x04\0\0\0\0") -> bytes:
    """An IPv6 extension header (hop-by-hop, destination options, routing): next header, length in
    8-byte units beyond the first 8, then `body` (default: a PadN option filling it)."""
    n = (2 + len(body) + 7) // 8
    return bytes([nh, n - 1]) + body + b"\0" * (n * 8 - 2 - len(body))


def frag6(nh: int, offset: int, more: bool, ident: int) -> bytes:
    return struct.pack("!BBHI", nh, 0, (offset // 8) << 3 | int(more), ident)


def dns_query(name_wire: bytes, qdcount: int = 1) -> bytes:
    return struct.pack("!HHHHHH", 0x1234, 0x0100, qdcount, 0, 0, 0) + name_wire + struct.pack("!HH", 1, 1)


def corpus() -> list[tuple[str, bytes]]:
    """Named malformed (and a few odd but valid) packets; every one at most MAX_PACKET bytes."""
    p4 = lambda proto, n: pseudo4(SRC4, DST4[0], proto, n)  # noqa: E731
    p6 = lambda nh, n: pseudo6(SRC6, DST6[0], nh, n)  # noqa: E731
    good_udp4 = udp4()
    good_udp6 = udp6()
    syn4 = tcp(40001, 9000, 0x02, p4(6, 20))
    syn6 = tcp(40001, 9000, 0x02, p6(6, 20))
    out: list[tuple[str, bytes]] = [
        # IPv4 header
        ("v4 one byte", b"\x45"),
        ("v4 19-byte header", good_udp4[:19]),
        ("v4 ihl 4", ipv4(17, good_udp4[20:], ihl=4)),
        ("v4 ihl 0", ipv4(17, good_udp4[20:], ihl=0)),
        ("v4 ihl 15, 20 bytes", ipv4(17, b"", ihl=15)),
        ("v4 ihl 15, garbage options", ipv4(17, good_udp4[20:], ihl=15, options=bytes(range(1, 41)))),
        ("v4 option length 0", ipv4(17, good_udp4[20:], ihl=6, options=b"\x07\x00\x00\x00")),
        ("v4 total length beyond packet", ipv4(17, good_udp4[20:], total=1400)),
        ("v4 total length 65535", ipv4(17, good_udp4[20:], total=65535)),
        ("v4 total length below header", ipv4(17, good_udp4[20:], total=12)),
        ("v4 total length 0", ipv4(17, good_udp4[20:], total=0)),
        ("v4 bad header checksum", ipv4(17, good_udp4[20:], check=0x1234)),
        ("v4 version 0", ipv4(17, good_udp4[20:], version=0)),
        ("v4 version 5", ipv4(17, good_udp4[20:], version=5)),
        ("v4 version 15", ipv4(17, good_udp4[20:], version=15)),
        ("v4 header as version 6", ipv4(17, good_udp4[20:], version=6)),
        ("v4 ttl 0", ipv4(17, good_udp4[20:], ttl=0)),
        ("v4 source 0.0.0.0", ipv4(17, good_udp4[20:], src="0.0.0.0")),
        ("v4 source broadcast", ipv4(17, good_udp4[20:], src="255.255.255.255")),
        ("v4 source loopback", ipv4(17, good_udp4[20:], src="127.0.0.1")),
        ("v4 source multicast", ipv4(17, good_udp4[20:], src="224.0.0.1")),
        ("v4 dst network address", udp4(dst="10.20.0.0")),
        ("v4 dst broadcast", udp4(dst="10.20.0.255")),
    ]
    for proto in (0, 2, 41, 47, 50, 132, 136, 253, 255):
        out.append((f"v4 protocol {proto}", ipv4(proto, b"\x00" * 24)))
    out += [
        # UDP over IPv4
        ("udp4 header truncated", ipv4(17, good_udp4[20:24])),
        ("udp4 length 0", udp4(length=0)),
        ("udp4 length 7", udp4(length=7)),
        ("udp4 length beyond packet", udp4(length=1000)),
        ("udp4 length below data", udp4(data=b"E" + b"x" * 100, length=20)),
        ("udp4 bad checksum", udp4(check=0xBEEF)),
        ("udp4 no checksum", udp4(check=0)),
        ("udp4 to port 0", udp4(dport=0)),
        ("udp4 from port 0", ipv4(17, udp(0, 9001, b"Ex", p4(17, 10)))),
        ("udp4 dns garbage", udp4(dport=53, data=b"\xff" * 5)),
        ("udp4 dns header only", udp4(dport=53, data=struct.pack("!6H", 1, 0x0100, 1, 0, 0, 0))),
        ("udp4 dns 65535 questions", udp4(dport=53, data=dns_query(b"\x01a\x00", qdcount=65535))),
        ("udp4 dns compression loop", udp4(dport=53, data=dns_query(b"\xc0\x0c"))),
        ("udp4 dns label too long", udp4(dport=53, data=dns_query(b"\x3f" + b"a" * 20))),
        ("udp4 dns response flag", udp4(dport=53, data=struct.pack("!6H", 7, 0x8180, 0, 1, 0, 0) + b"\0" * 16)),
        # TCP over IPv4
        ("tcp4 truncated header", ipv4(6, syn4[:10])),
        ("tcp4 data offset 0", ipv4(6, tcp(40001, 9000, 0x02, p4(6, 20), offset=0))),
        ("tcp4 data offset 15 in 20 bytes", ipv4(6, tcp(40001, 9000, 0x02, p4(6, 20), offset=15))),
        ("tcp4 every flag", ipv4(6, tcp(40001, 9000, 0xFF, p4(6, 20)))),
        ("tcp4 syn bad checksum", ipv4(6, tcp(40001, 9000, 0x02, p4(6, 20), check=0x1111))),
        ("tcp4 syn option length 0", ipv4(6, tcp(40001, 9000, 0x02, p4(6, 24), offset=6, options=b"\x02\x00\x05\xb4"))),
        ("tcp4 syn option past header", ipv4(6, tcp(40001, 9000, 0x02, p4(6, 24), offset=6, options=b"\x03\x28\x07\x00"))),
        ("tcp4 syn with data", ipv4(6, tcp(40001, 9000, 0x02, p4(6, 25), data=b"x"))),
        ("tcp4 stray ack", ipv4(6, tcp(40002, 9000, 0x10, p4(6, 20)))),
        ("tcp4 stray rst", ipv4(6, tcp(40002, 9000, 0x04, p4(6, 20)))),
        ("tcp4 to port 0", ipv4(6, tcp(40001, 0, 0x02, p4(6, 20)))),
        # ICMP
        ("icmp4 3 bytes", ipv4(1, b"\x08\x00\x00")),
        ("icmp4 echo bad checksum", ipv4(1, icmp(8, 0, b"\x00\x01\x00\x01ping", check=0x0101))),
        ("icmp4 echo no payload", ipv4(1, icmp(8, 0, b"\x00\x01\x00\x02"))),
        ("icmp4 echo 4 bytes", ipv4(1, icmp(8, 0, b""))),
        ("icmp4 type 255", ipv4(1, icmp(255, 255, b"\0" * 8))),
        ("icmp4 unreachable, truncated quote", ipv4(1, icmp(3, 3, b"\0" * 4 + good_udp4[:10]))),
        ("icmp4 unreachable quoting udp", ipv4(1, icmp(3, 3, b"\0" * 4 + good_udp4[:28]))),
        ("icmp4 echo to broadcast", ipv4(1, icmp(8, 0, b"\x00\x01\x00\x03"), dst="10.20.0.255")),
        # IPv4 fragments (a UDP datagram of id 0x7001, in pieces that do not fit together)
        ("frag4 first, never completed", ipv4(17, udp(40000, 9001, b"E" + b"a" * 40, p4(17, 49))[:24], ident=0x7000,
                                             flags_frag=0x2000)),
        ("frag4 overlap 1/3", ipv4(17, udp(40000, 9001, b"E" + b"b" * 40, p4(17, 49))[:24], ident=0x7001,
                                  flags_frag=0x2000)),
        ("frag4 overlap 2/3", ipv4(17, b"c" * 24, ident=0x7001, flags_frag=0x2000 | 2)),
        ("frag4 overlap 3/3", ipv4(17, b"d" * 9, ident=0x7001, flags_frag=3)),
        ("frag4 duplicate first", ipv4(17, udp(40000, 9001, b"E" + b"b" * 40, p4(17, 49))[:24], ident=0x7001,
                                      flags_frag=0x2000)),
        ("frag4 offset past 65535", ipv4(17, b"e" * 600, ident=0x7002, flags_frag=8189)),
        ("frag4 DF and MF", ipv4(17, good_udp4[20:], ident=0x7003, flags_frag=0x6000)),
        ("frag4 evil bit", ipv4(17, good_udp4[20:], flags_frag=0x8000)),
        ("frag4 middle fragment alone", ipv4(17, b"f" * 16, ident=0x7004, flags_frag=0x2000 | 10)),
        ("frag4 odd length, not last", ipv4(17, b"g" * 13, ident=0x7005, flags_frag=0x2000)),
        ("frag4 last only", ipv4(17, b"h" * 8, ident=0x7006, flags_frag=100)),
    ]
    # IPv6
    chain = b"".join(ext(60) for _ in range(149)) + ext(17)  # 150 destination-options headers
    out += [
        ("v6 39 bytes", good_udp6[:39]),
        ("v6 payload length beyond packet", ipv6(17, good_udp6[40:], plen=1400)),
        ("v6 payload length below udp", ipv6(17, good_udp6[40:], plen=4)),
        ("v6 payload length 0 with data", ipv6(17, good_udp6[40:], plen=0)),
        ("v6 version 4", ipv6(17, good_udp6[40:], version=4)),
        ("v6 version 0", ipv6(17, good_udp6[40:], version=0)),
        ("v6 hop limit 0", ipv6(17, good_udp6[40:], hops=0)),
        ("v6 source unspecified", ipv6(17, good_udp6[40:], src="::")),
        ("v6 source multicast", ipv6(17, good_udp6[40:], src="ff02::1")),
        ("v6 source loopback", ipv6(17, good_udp6[40:], src="::1")),
        ("v6 source v4-mapped", ipv6(17, good_udp6[40:], src="::ffff:10.20.0.2")),
        ("v6 next header 59 with data", ipv6(59, b"trailing")),
        ("v6 next header 253", ipv6(253, b"\0" * 16)),
        ("v6 next header 0 not first", ipv6(60, ext(0) + ext(17) + good_udp6[40:])),
        ("v6 150 destination-options headers, then nothing", ipv6(60, b"".join(ext(60) for _ in range(150)))),
        ("v6 150 destination-options headers, then udp", ipv6(60, chain + good_udp6[40:])),
        ("v6 hop-by-hop, 150 destination-options headers, udp", ipv6(0, ext(60) + chain + good_udp6[40:])),
        ("v6 extension header past packet", ipv6(60, bytes([17, 200]) + b"\x01\x04\0\0\0\0")),
        ("v6 extension header truncated", ipv6(60, b"\x11")),
        ("v6 PadN longer than header", ipv6(60, ext(17, b"\x01\x20\0\0\0\0") + good_udp6[40:])),
        ("v6 jumbo option, payload length 0", ipv6(0, ext(17, b"\xc2\x04\x00\x01\x00\x00") + good_udp6[40:], plen=0)),
        ("v6 routing type 0", ipv6(43, bytes([17, 2, 0, 1, 0, 0, 0, 0]) + a6("fd20::2") + good_udp6[40:])),
        ("v6 routing segments left beyond", ipv6(43, bytes([17, 0, 4, 9, 0, 0, 0, 0]) + good_udp6[40:])),
        ("v6 atomic fragment", ipv6(44, frag6(17, 0, False, 0x6000) + good_udp6[40:])),
        ("v6 first fragment without udp header", ipv6(44, frag6(60, 0, True, 0x6001) + ext(17))),
        ("v6 fragment overlap 1/3", ipv6(44, frag6(17, 0, True, 0x6002) + udp(40000, 9001, b"E" + b"b" * 40,
                                                                             p6(17, 49))[:24])),
        ("v6 fragment overlap 2/3", ipv6(44, frag6(17, 16, True, 0x6002) + b"c" * 24)),
        ("v6 fragment overlap 3/3", ipv6(44, frag6(17, 24, False, 0x6002) + b"d" * 9)),
        ("v6 fragment inside fragment", ipv6(44, frag6(44, 0, False, 0x6003) + frag6(17, 0, True, 0x6004) +
                                             good_udp6[40:])),
        ("v6 fragment offset past 65535", ipv6(44, frag6(17, 65528, False, 0x6005) + b"e" * 600)),
        ("v6 fragment header truncated", ipv6(44, b"\x11\x00\x00")),
        ("udp6 header truncated", ipv6(17, good_udp6[40:44])),
        ("udp6 length 0", udp6(length=0)),
        ("udp6 length beyond packet", udp6(length=900)),
        ("udp6 bad checksum", udp6(check=0xBEEF)),
        ("udp6 checksum 0 (not allowed in IPv6)", udp6(check=0)),
        ("udp6 to port 0", udp6(dport=0)),
        ("udp6 dns compression loop", udp6(dport=53, data=dns_query(b"\xc0\x0c"))),
        ("tcp6 data offset 15", ipv6(6, tcp(40001, 9000, 0x02, p6(6, 20), offset=15))),
        ("tcp6 truncated", ipv6(6, syn6[:13])),
        ("tcp6 syn bad checksum", ipv6(6, tcp(40001, 9000, 0x02, p6(6, 20), check=0x2222))),
        ("icmp6 3 bytes", ipv6(58, b"\x80\x00\x00")),
        ("icmp6 echo bad checksum", ipv6(58, icmp(128, 0, b"\x00\x01\x00\x01ping", check=0x0101))),
        ("icmp6 echo", ipv6(58, icmp(128, 0, b"\x00\x01\x00\x02", p6(58, 8)))),
        ("icmp6 type 255", ipv6(58, icmp(255, 0, b"\0" * 8, p6(58, 12)))),
        ("icmp6 packet too big, truncated quote", ipv6(58, icmp(2, 0, struct.pack("!I", 1280) + good_udp6[:20],
                                                                p6(58, 28)))),
        ("icmp6 router advertisement", ipv6(58, icmp(134, 0, b"\x40\0\x07\x08" + b"\0" * 8, p6(58, 16)))),
    ]
    return [(name, pkt[:MAX_PACKET]) for name, pkt in out]


def fragment_flood(n: int = 500) -> list[tuple[str, bytes]]:
    """First fragments of `n` datagrams that never complete (reassembly state must be bounded)."""
    body = udp(40000, 9001, b"E" + b"z" * 1400, pseudo4(SRC4, DST4[0], 17, 1409))[:1400]
    return [(f"frag4 flood {i}", ipv4(17, body, ident=0x8000 + i, flags_frag=0x2000)) for i in range(n)]


def mutate(rng: random.Random, pkt: bytes) -> bytes:
    """A variant of `pkt`: truncated, bit-flipped, random after the first byte, or with 0xFFFF
    written somewhere. The version nibble and the destination address stay as they were, so the
    reader parses the packet as its kind and anything it sends on goes to the test's namespaces."""
    b = bytearray(pkt)
    op = rng.randrange(4)
    if op == 0 and len(b) > 1:
        return bytes(b[:rng.randrange(1, len(b))])
    if op == 1:
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(b))
            b[i] ^= 1 << rng.randrange(8)
    elif op == 2:
        b = bytearray(pkt[:1] + rng.randbytes(rng.randrange(1, 400)))
    else:
        i = rng.randrange(len(b))
        b[i:i + 2] = b"\xff\xff"
    b[0] = (pkt[0] & 0xF0) | (b[0] & 0x0F)
    dst = (16, 20) if pkt[0] >> 4 == 4 else (24, 40)
    if len(pkt) >= dst[1] and len(b) >= dst[1]:
        b[dst[0]:dst[1]] = pkt[dst[0]:dst[1]]
    return bytes(b[:MAX_PACKET])


def packet_socket(dev: str) -> socket.socket:
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
    s.bind((dev, 0))
    return s


def send_all(s: socket.socket, packets, errors: dict) -> int:
    sent = 0
    for _, pkt in packets:
        try:
            s.send(pkt)
            sent += 1
        except OSError as e:  # e.g. ENOBUFS when the reader is behind: counted, not fatal
            errors[e.strerror or str(e)] = errors.get(e.strerror or str(e), 0) + 1
    return sent


def inject(dev: str, seconds: float, seed: int, pps: int) -> dict:
    rng = random.Random(seed)
    base = corpus()
    s = packet_socket(dev)
    errors: dict = {}
    sent = send_all(s, base, errors) + send_all(s, fragment_flood(), errors)
    mutated = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        t0 = time.monotonic()
        batch = [("", mutate(rng, rng.choice(base)[1])) for _ in range(pps // 20)]
        n = send_all(s, batch, errors)
        sent += n
        mutated += n
        time.sleep(max(0.0, 0.05 - (time.monotonic() - t0)))
    s.close()
    return {"seed": seed, "corpus": len(base), "sent": sent, "mutated": mutated, "errors": errors}


# -- self-test: our own TUN device, read back ------------------------------------------------------

TUNSETIFF = 0x400454CA
IFF_TUN, IFF_NO_PI = 0x0001, 0x1000


def builders_accepted(fd: int, dev: str) -> dict:
    """Writes a UDP datagram and an ICMP echo request, per family, into the TUN toward the device's
    own addresses; the kernel must deliver the datagram to a socket and answer the echo."""
    local = {4: ("10.99.0.1", "10.99.0.2"), 6: ("fd99::1", "fd99::2")}
    subprocess.run(["ip", "addr", "add", "10.99.0.1/24", "dev", dev], check=True, timeout=10)
    subprocess.run(["ip", "addr", "add", "fd99::1/64", "dev", dev, "nodad"], check=True, timeout=10)
    out = {}
    for fam, (me, peer) in local.items():
        af = socket.AF_INET if fam == 4 else socket.AF_INET6
        rx = socket.socket(af, socket.SOCK_DGRAM)
        rx.bind((me, 0))
        port = rx.getsockname()[1]
        data = b"built by rawpackets"
        if fam == 4:
            dgram = ipv4(17, udp(5000, port, data, pseudo4(peer, me, 17, 8 + len(data))), src=peer, dst=me)
            echo = ipv4(1, icmp(8, 0, b"\x12\x34\x00\x01ping"), src=peer, dst=me)
        else:
            dgram = ipv6(17, udp(5000, port, data, pseudo6(peer, me, 17, 8 + len(data))), src=peer, dst=me)
            echo = ipv6(58, icmp(128, 0, b"\x12\x34\x00\x01ping", pseudo6(peer, me, 58, 12)), src=peer, dst=me)
        # Written again every 0.3 s for up to 3 s: a device that has just come up may drop the first
        # (IPv6 on a fresh TUN, seen on a loaded machine); one that keeps refusing fails the check.
        out[f"udp{fam}"] = False
        rx.settimeout(0.3)
        deadline = time.monotonic() + 3
        try:
            while time.monotonic() < deadline and not out[f"udp{fam}"]:
                os.write(fd, dgram)
                try:
                    got, src = rx.recvfrom(100)
                    out[f"udp{fam}"] = got == data and src[0] == peer and src[1] == 5000
                except socket.timeout:
                    continue
        finally:
            rx.close()
        os.write(fd, echo)
        reply_type = 0 if fam == 4 else 129
        deadline = time.monotonic() + 3
        out[f"icmp{fam}"] = False
        while time.monotonic() < deadline and not out[f"icmp{fam}"]:
            select.select([fd], [], [], 0.1)
            try:
                pkt = os.read(fd, 65536)
            except BlockingIOError:
                continue
            hdr = 20 if fam == 4 else 40
            out[f"icmp{fam}"] = pkt[0] >> 4 == fam and len(pkt) > hdr and pkt[hdr] == reply_type \
                and pkt[hdr + 4:] == b"\x12\x34\x00\x01ping"
    return out


def self_test(dev: str) -> dict:
    fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK)
    try:
        fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", dev.encode(), IFF_TUN | IFF_NO_PI))
        subprocess.run(["ip", "link", "set", dev, "up"], check=True, timeout=10)
        accepted = builders_accepted(fd, dev)
        packets = corpus() + fragment_flood(20)
        want: dict[bytes, list[str]] = {}
        for name, pkt in packets:
            want.setdefault(pkt, []).append(name)
        s = packet_socket(dev)
        errors: dict = {}
        sent = send_all(s, packets, errors)
        s.close()
        seen: set[bytes] = set()
        others = 0
        deadline = time.monotonic() + 5
        while len(seen) < len(want) and time.monotonic() < deadline:
            select.select([fd], [], [], 0.1)
            while True:
                try:
                    got = os.read(fd, 65536)
                except BlockingIOError:
                    break
                if got in want:
                    seen.add(got)
                else:
                    others += 1  # the kernel's own (IPv6 router solicitations, MLD reports)
        missing = [n for pkt, names in want.items() if pkt not in seen for n in names]
        return {"packets": len(packets), "sent": sent, "errors": errors, "missing": missing, "others": others,
                "builders_accepted": accepted}
    finally:
        os.close(fd)  # a non-persistent TUN disappears with its last descriptor


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    i = sub.add_parser("inject")
    i.add_argument("--dev", required=True)
    i.add_argument("--seconds", type=float, default=4)
    i.add_argument("--seed", type=int, default=None)
    i.add_argument("--pps", type=int, default=20000, help="mutated packets per second")
    t = sub.add_parser("self-test")
    t.add_argument("--dev", required=True)
    args = ap.parse_args()
    if args.cmd == "inject":
        seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "big")
        print(json.dumps(inject(args.dev, args.seconds, seed, args.pps)))
    else:
        print(json.dumps(self_test(args.dev)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
