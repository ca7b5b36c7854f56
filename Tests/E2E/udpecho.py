"""The UDP echo protocol of servers.py, shared by the server, clients.py and the tests.

The first byte of a datagram picks the mode:

    b"E" + payload   reply b"e" + peer + payload, where peer = family u8 (4 or 6), port u16, then
                     the address (4 or 16 bytes): the source the server saw. Not logged (it is
                     meant for thousands of requests); the reply itself carries the evidence.
    b"R" + payload   reply: the datagram unchanged, so that a maximal datagram (65,507 bytes) fits
                     the reply too. Logged: {"proto": "udp", "mode": "R", "peer", "port", "bytes",
                     "sha256"}.
    b""              reply: an empty datagram. Logged with mode "0".

Anything else is logged as an unknown mode and not answered.
"""

from __future__ import annotations

import socket
import struct

MAX_V4 = 65507  # 65,535 − 20 (IPv4 header) − 8 (UDP header)


def plain(addr: str) -> str:
    return addr[7:] if addr.startswith("::ffff:") else addr


def encode_peer(addr: str, port: int) -> bytes:
    addr = plain(addr)
    if ":" in addr:
        return struct.pack("!BH", 6, port) + socket.inet_pton(socket.AF_INET6, addr)
    return struct.pack("!BH", 4, port) + socket.inet_pton(socket.AF_INET, addr)


def echo_reply(request: bytes, addr: str, port: int) -> bytes:
    """The answer to an "E" request from (addr, port)."""
    return b"e" + encode_peer(addr, port) + request[1:]


def parse_echo_reply(reply: bytes) -> tuple[str, int, bytes]:
    """(peer address, peer port, payload) of an "E" reply; ValueError if it is not one."""
    if len(reply) < 4 or reply[:1] != b"e":
        raise ValueError(f"not an echo reply: {reply[:16]!r}")
    fam, port = struct.unpack("!BH", reply[1:4])
    n = {4: 4, 6: 16}.get(fam)
    if n is None or len(reply) < 4 + n:
        raise ValueError(f"bad peer in echo reply: {reply[:24]!r}")
    af = socket.AF_INET if fam == 4 else socket.AF_INET6
    return socket.inet_ntop(af, reply[4:4 + n]), port, reply[4 + n:]
