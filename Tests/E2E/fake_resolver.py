"""A tiny DNS resolver for the tests: answers every A query with --a and every AAAA query with
--aaaa (other types: an empty answer), over UDP and TCP on [::]:53 dual-stack, and appends one JSON
line per query to --log with the peer's address, so a test can see who asked. With --zone (repeatable)
it knows only names within those zones and answers NXDOMAIN for every other, so a test can tell which
resolver answered.

    ip netns exec SERVER python3 fake_resolver.py --log dns.jsonl --ready-file ready --a 10.20.0.2 --aaaa fd20::2
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import socket
import socketserver
import struct
import threading
import time

from dualstack import TCP6, UDP6

args = None
lock = threading.Lock()


def plain(addr: str) -> str:
    return addr[7:] if addr.startswith("::ffff:") else addr


def answer(query: bytes, peer: str, transport: str) -> bytes | None:
    if len(query) < 12:
        return None
    qid, flags, qd = struct.unpack("!HHH", query[:6])
    pos, labels = 12, []
    while pos < len(query) and query[pos] != 0:
        n = query[pos]
        labels.append(query[pos + 1:pos + 1 + n].decode(errors="replace"))
        pos += 1 + n
    pos += 1
    if qd != 1 or pos + 4 > len(query):
        return None
    qtype, qclass = struct.unpack("!HH", query[pos:pos + 4])
    question = query[12:pos + 4]
    name = ".".join(labels)
    with lock:
        with open(args.log, "a") as f:
            f.write(json.dumps({"peer": plain(peer), "name": name, "type": qtype, "transport": transport,
                                "t": time.time()}) + "\n")
    records = b""
    count = 0
    rcode = 0
    known = not args.zone or any(name.lower() == z or name.lower().endswith("." + z) for z in args.zone)
    if not known:
        rcode = 3  # NXDOMAIN
    elif qtype == 1 and args.a:
        records = b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 60, 4) + ipaddress.IPv4Address(args.a).packed
        count = 1
    elif qtype == 28 and args.aaaa:
        records = b"\xc0\x0c" + struct.pack("!HHIH", 28, 1, 60, 16) + ipaddress.IPv6Address(args.aaaa).packed
        count = 1
    rd = flags & 0x0100
    header = struct.pack("!HHHHHH", qid, 0x8000 | 0x0400 | rd | 0x0080 | rcode, 1, count, 0, 0)
    return header + question + records


class UDPHandler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        data, sock = self.request
        reply = answer(data, self.client_address[0], "udp")
        if reply:
            sock.sendto(reply, self.client_address)


class TCPHandler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        sock = self.request
        sock.settimeout(5)
        try:
            head = sock.recv(2, socket.MSG_WAITALL)
            if len(head) < 2:
                return
            data = sock.recv(struct.unpack("!H", head)[0], socket.MSG_WAITALL)
            reply = answer(data, self.client_address[0], "tcp")
            if reply:
                sock.sendall(struct.pack("!H", len(reply)) + reply)
        except OSError:
            pass


def main() -> None:
    global args
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=53)
    ap.add_argument("--log", required=True)
    ap.add_argument("--ready-file", required=True)
    ap.add_argument("--a", default="")
    ap.add_argument("--aaaa", default="")
    ap.add_argument("--zone", action="append", default=[], help="answer only names within this zone (repeatable)")
    args = ap.parse_args()
    args.zone = [z.lower().rstrip(".") for z in args.zone]
    servers = [UDP6(("::", args.port), UDPHandler), TCP6(("::", args.port), TCPHandler)]
    for s in servers:
        threading.Thread(target=s.serve_forever, daemon=True).start()
    with open(args.ready_file, "w") as f:
        f.write("ready\n")
    threading.Event().wait()


if __name__ == "__main__":
    main()
