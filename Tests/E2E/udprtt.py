"""UDP request/response latency and loss, one request in flight, against servers.py's UDP echo.

    ip netns exec CLIENT python3 udprtt.py --host 10.20.0.2 --port 9001 [--count 2000] [--size 100]
        [--timeout 0.1] [--new-socket] [--slow 0.15]

Sends `count` "E" requests of `size` bytes from one socket (`--new-socket`: each from a socket of
its own, as a stub resolver sends each query), each after the answer to the previous one or its
timeout, and prints one JSON object: "count", "answered", "lost" (no answer within `timeout`),
"p50", "p90", "p99", "max" (seconds, over the answered), "slow" (answers that took longer than
`--slow`, default 0.15 s: one held behind a lost TCP segment waits at least TCP's 200 ms minimum
RTO) and "late" (answers that came after their timeout; they are not counted as answered). Each
request carries its sequence number, so a late answer is never taken for the next one.
"""

from __future__ import annotations

import argparse
import json
import socket
import struct
import sys
import time

import udpecho


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--host", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--count", type=int, default=2000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--timeout", type=float, default=0.1)
    ap.add_argument("--new-socket", action="store_true")
    ap.add_argument("--slow", type=float, default=0.15)
    args = ap.parse_args(argv)

    def connected() -> socket.socket:
        s = socket.socket(socket.AF_INET6 if ":" in args.host else socket.AF_INET, socket.SOCK_DGRAM)
        s.connect((args.host, args.port))
        return s

    s = connected()
    pad = b"p" * max(0, args.size - 1 - 8)
    times, late = [], 0
    for seq in range(args.count):
        if args.new_socket and seq > 0:
            s.close()
            s = connected()
        t0 = time.perf_counter()
        s.send(b"E" + struct.pack("!Q", seq) + pad)
        deadline = t0 + args.timeout
        while True:
            left = deadline - time.perf_counter()
            if left <= 0:
                break
            s.settimeout(left)
            try:
                data = s.recv(65535)
            except (socket.timeout, ConnectionRefusedError):
                continue
            got = struct.unpack("!Q", udpecho.parse_echo_reply(data)[2][:8])[0]
            if got == seq:
                times.append(time.perf_counter() - t0)
                break
            late += 1
    times.sort()

    def pick(q: float) -> float | None:
        return times[min(len(times) - 1, int(q * len(times)))] if times else None

    print(json.dumps({"count": args.count, "answered": len(times), "lost": args.count - len(times), "late": late,
                      "p50": pick(0.5), "p90": pick(0.9), "p99": pick(0.99), "max": times[-1] if times else None,
                      "slow": sum(1 for t in times if t > args.slow)}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
