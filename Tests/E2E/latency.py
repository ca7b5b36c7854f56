"""Both ends of the latency patterns: a server in the server namespace, a probe in the client namespace.

    ip netns exec SERVER python3 latency.py serve --port 9300 --ready-file ready.json
    ip netns exec CLIENT python3 latency.py probe --host 10.20.0.2 --port 9300 [--exchanges 30]
        [--round-trips 500] [--upload-mib 16] [--pause-ms 1000]

The probe runs three patterns, one connection each, and prints one JSON object (seconds):

- "write_write_read": Nagle on (the socket default). Each exchange writes 100 bytes, writes 100 more,
  and reads the server's 2-byte answer; the application's kernel holds the second write until the
  first is acknowledged, so the exchange costs whatever the peer's delayed ACK costs. Median of
  --exchanges, after one exchange not counted.
- "rtt_1byte": TCP_NODELAY, one byte out, one byte back. Median of --round-trips, after 50 not
  counted.
- "paused_upload": --upload-mib MiB to a server that reads nothing for --pause-ms and then reads on,
  timed from the first byte sent to the server's count of what it read. The tail after the pause is
  what window updates cost.

The server is blocking and one thread per connection, so a round trip costs it one wake-up and two
syscalls (asyncio's loop added tens of microseconds to a 1-byte round trip). The first byte of a
connection picks the pattern: b"Q" u32 request u32 answer (answer every `request` bytes read with
`answer` bytes, until EOF); b"U" u64 size u32 pause_ms (sleep, read `size` bytes, answer with u64 read).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import socketserver
import statistics
import struct
import sys
import time

from dualstack import TCP6


def read_exactly(s: socket.socket, n: int) -> bytes:
    parts, got = [], 0
    while got < n:
        b = s.recv(min(n - got, 1 << 20))
        if not b:
            raise ConnectionError(f"EOF after {got} of {n} bytes")
        parts.append(b)
        got += len(b)
    return b"".join(parts)


# -- server -----------------------------------------------------------------------------------------

class Handler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        s: socket.socket = self.request
        mode = s.recv(1)
        if mode == b"Q":
            request, answer = struct.unpack("!II", read_exactly(s, 8))
            reply = b"a" * answer
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            while True:
                try:
                    read_exactly(s, request)
                except ConnectionError:
                    return
                s.sendall(reply)
        elif mode == b"U":
            size, pause_ms = struct.unpack("!QI", read_exactly(s, 12))
            time.sleep(pause_ms / 1000)
            got = 0
            while got < size:
                b = s.recv(1 << 20)
                if not b:
                    break
                got += len(b)
            s.sendall(struct.pack("!Q", got))


def serve(args) -> int:
    server = TCP6(("::", args.port), Handler)
    tmp = args.ready_file + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"pid": os.getpid(), "port": args.port}, f)
    os.replace(tmp, args.ready_file)
    server.serve_forever()
    return 0


# -- probe ------------------------------------------------------------------------------------------

def connect(host: str, port: int, nodelay: bool, timeout: float) -> socket.socket:
    s = socket.create_connection((host, port), timeout=timeout)
    if nodelay:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def median_time(count: int, unmeasured: int, exchange) -> float:
    """The median wall time of `count` calls of `exchange`, after `unmeasured` calls not counted."""
    times = []
    for i in range(unmeasured + count):
        t0 = time.perf_counter()
        exchange()
        if i >= unmeasured:
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def write_write_read(host: str, port: int, exchanges: int, timeout: float) -> float:
    with connect(host, port, nodelay=False, timeout=timeout) as s:
        s.sendall(b"Q" + struct.pack("!II", 200, 2))

        def exchange() -> None:
            s.sendall(b"x" * 100)
            s.sendall(b"y" * 100)
            read_exactly(s, 2)

        return median_time(exchanges, 1, exchange)


def rtt_1byte(host: str, port: int, round_trips: int, timeout: float) -> float:
    with connect(host, port, nodelay=True, timeout=timeout) as s:
        s.sendall(b"Q" + struct.pack("!II", 1, 1))

        def exchange() -> None:
            s.send(b"p")
            if not s.recv(1):
                raise ConnectionError("EOF during the round trips")

        return median_time(round_trips, 50, exchange)


def paused_upload(host: str, port: int, mib: int, pause_ms: int, timeout: float) -> float:
    size = mib << 20
    chunk = b"u" * (1 << 20)
    with connect(host, port, nodelay=False, timeout=timeout) as s:
        t0 = time.perf_counter()
        s.sendall(b"U" + struct.pack("!QI", size, pause_ms))
        for _ in range(mib):
            s.sendall(chunk)
        (got,) = struct.unpack("!Q", read_exactly(s, 8))
        elapsed = time.perf_counter() - t0
    if got != size:
        raise ConnectionError(f"the server read {got} of {size} bytes")
    return elapsed


def probe(args) -> int:
    out = {
        "write_write_read": write_write_read(args.host, args.port, args.exchanges, args.timeout),
        "rtt_1byte": rtt_1byte(args.host, args.port, args.round_trips, args.timeout),
        "paused_upload": paused_upload(args.host, args.port, args.upload_mib, args.pause_ms, args.timeout),
    }
    print(json.dumps(out))
    return 0


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve")
    s.add_argument("--port", type=int, required=True)
    s.add_argument("--ready-file", required=True)
    p = sub.add_parser("probe")
    p.add_argument("--host", required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--exchanges", type=int, default=30)
    p.add_argument("--round-trips", type=int, default=500)
    p.add_argument("--upload-mib", type=int, default=16)
    p.add_argument("--pause-ms", type=int, default=1000)
    p.add_argument("--timeout", type=float, default=20, help="seconds any one socket operation may take")
    args = ap.parse_args(argv)
    return serve(args) if args.cmd == "serve" else probe(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
