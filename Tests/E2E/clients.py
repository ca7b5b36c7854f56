"""Test clients run inside the client namespace; each prints one JSON object on stdout.

    ip netns exec CLIENT python3 clients.py concurrent --host 10.20.0.2 --port 9000 \
        --conns 200 --size 262144 [--timeout 120]
    ip netns exec CLIENT python3 clients.py udp-echo --host 10.20.0.2 --port 9001 \
        --count 10000 --window 50 --size 200 --expect-peer 10.20.0.1 [--loss-after 2] [--timeout 60]

`concurrent` opens all connections at once against servers.py's echo mode ("E"); each sends `size`
bytes of its own seeded content while reading the echo, then checks the echo byte for byte and the
server's trailer (sha256 of what the server received + its own verdict).

`udp-echo` sends `count` numbered requests of servers.py's UDP echo ("E", udpecho.py) from one
socket, keeping at most `window` unanswered, and checks every reply: it comes from host:port, its
payload is the request's, and the source the server saw is --expect-peer. A request unanswered after
--loss-after seconds counts as lost (and frees its place in the window); after --give-up consecutive
losses the client stops, so a tunnel that passes nothing fails fast. All relay-side endpoints
the server saw are reported: one socket should be one mapping.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import select
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import content  # noqa: E402
import udpecho  # noqa: E402


async def one(host: str, port: int, size: int, seed: int, io_timeout: float) -> tuple[bool, str]:
    data = content.stream_bytes(seed, size)
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), io_timeout)
    except Exception as e:  # reported per connection
        return False, f"connect: {e!r}"
    progress = {"sent": 0, "received": 0}
    try:
        async def send() -> None:
            writer.write(b"E" + struct.pack("!QQ", size, seed))
            for off in range(0, size, 65536):
                writer.write(data[off:off + 65536])
                await writer.drain()
                progress["sent"] = min(size, off + 65536)

        async def receive() -> bytes:
            buf = bytearray()
            while len(buf) < size + 33:
                b = await reader.read(size + 33 - len(buf))
                if not b:
                    raise ConnectionError(f"EOF after {len(buf)} bytes")
                buf += b
                progress["received"] = len(buf)
            return bytes(buf)

        try:
            _, got = await asyncio.wait_for(asyncio.gather(send(), receive()), io_timeout)
        except Exception as e:
            return False, f"{e!r} (seed {seed}; sent {progress['sent']} of {size}, " \
                          f"received {progress['received']} of {size + 33})"
        echo, digest, verdict = got[:size], got[size:size + 32], got[size + 32]
        if echo != data:
            first = next(i for i in range(size) if echo[i] != data[i])
            return False, f"echo differs from byte {first}"
        if digest != hashlib.sha256(data).digest():
            return False, "server's sha256 of the upload differs"
        if verdict != 1:
            return False, "server's verdict: content mismatch"
        return True, ""
    except Exception as e:
        return False, repr(e)
    finally:
        writer.close()


async def concurrent(args) -> dict:
    start = time.monotonic()
    results = await asyncio.gather(*(
        one(args.host, args.port, args.size, 1000 + i, args.timeout) for i in range(args.conns)))
    seconds = time.monotonic() - start
    failures = [f"conn {i}: {why}" for i, (ok, why) in enumerate(results) if not ok]
    return {"conns": args.conns, "ok": sum(ok for ok, _ in results), "failures": failures[:20],
            "failed": len(failures), "seconds": seconds, "bytes_each_way": args.conns * args.size}


def udp_payload(seq: int, size: int) -> bytes:
    """Request `seq`'s payload: its number, then bytes derived from it (so a mix-up shows)."""
    head = struct.pack("!I", seq)
    fill = hashlib.sha256(head).digest()
    return (head + fill * (size // 32 + 1))[:max(size, 4)]


def udp_echo(args) -> dict:
    fam = socket.AF_INET6 if ":" in args.host else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    s.bind(("::" if fam == socket.AF_INET6 else "0.0.0.0", 0))
    s.setblocking(False)
    stats = {"sent": 0, "received": 0, "lost": 0, "late": 0, "duplicates": 0, "corrupt": 0,
             "bad_source": 0, "bad_peer": 0, "send_errors": 0}
    examples: list[str] = []
    peers: set[str] = set()
    pending: dict[int, float] = {}  # seq -> when sent
    answered: set[int] = set()
    expired: set[int] = set()
    rtts: list[float] = []
    nxt = 0
    streak = 0  # consecutive losses
    start = time.monotonic()
    deadline = start + args.timeout

    def note(kind: str, text: str) -> None:
        stats[kind] += 1
        if len(examples) < 10:
            examples.append(f"{kind}: {text}")

    while (nxt < args.count or pending) and time.monotonic() < deadline and streak < args.give_up:
        while len(pending) < args.window and nxt < args.count:
            try:
                s.sendto(b"E" + udp_payload(nxt, args.size), (args.host, args.port))
                pending[nxt] = time.monotonic()
                stats["sent"] += 1
            except BlockingIOError:
                break
            except OSError as e:
                note("send_errors", f"seq {nxt}: {e!r}")
            nxt += 1
        select.select([s], [], [], 0.05)
        while True:
            try:
                data, src = s.recvfrom(65535)
            except BlockingIOError:
                break
            except OSError as e:  # an ICMP error for an earlier datagram, reported on this socket
                note("send_errors", f"recv: {e!r}")
                continue
            now = time.monotonic()
            try:
                peer, port, payload = udpecho.parse_echo_reply(data)
                seq = struct.unpack("!I", payload[:4])[0]
            except (ValueError, struct.error) as e:
                note("corrupt", str(e))
                continue
            if (udpecho.plain(src[0]), src[1]) != (args.host, args.port):
                note("bad_source", f"seq {seq} from {src[0]} port {src[1]}")
            if peer != args.expect_peer:
                note("bad_peer", f"seq {seq}: the server saw {peer}")
            peers.add(f"{peer} {port}")
            if payload != udp_payload(seq, args.size):
                note("corrupt", f"seq {seq}: payload differs")
            elif seq in pending:
                rtts.append(now - pending.pop(seq))
                answered.add(seq)
                stats["received"] += 1
                streak = 0
            elif seq in expired:
                stats["late"] += 1
            elif seq in answered:
                note("duplicates", f"seq {seq}")
            else:
                note("corrupt", f"seq {seq} was never sent")
        now = time.monotonic()
        for seq in [q for q, t in pending.items() if now - t > args.loss_after]:
            del pending[seq]
            expired.add(seq)
            stats["lost"] += 1
            streak += 1
    stats["lost"] += len(pending) + (args.count - nxt)  # what the overall timeout or giving up cut off
    rtts.sort()
    s.close()
    return {**stats, "count": args.count, "peers": sorted(peers), "examples": examples,
            "seconds": time.monotonic() - start,
            "rtt_ms_p50": 1000 * rtts[len(rtts) // 2] if rtts else None,
            "rtt_ms_p99": 1000 * rtts[len(rtts) * 99 // 100] if rtts else None}


def main() -> int:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("concurrent")
    c.add_argument("--host", required=True)
    c.add_argument("--port", type=int, required=True)
    c.add_argument("--conns", type=int, default=200)
    c.add_argument("--size", type=int, default=256 * 1024)
    c.add_argument("--timeout", type=float, default=120)
    u = sub.add_parser("udp-echo")
    u.add_argument("--host", required=True)
    u.add_argument("--port", type=int, required=True)
    u.add_argument("--count", type=int, default=10000)
    u.add_argument("--window", type=int, default=50)
    u.add_argument("--size", type=int, default=200)
    u.add_argument("--expect-peer", required=True, help="the source address the server should see")
    u.add_argument("--loss-after", type=float, default=2.0)
    u.add_argument("--timeout", type=float, default=60)
    u.add_argument("--give-up", type=int, default=100, help="consecutive losses after which to stop")
    args = ap.parse_args()
    if args.cmd == "concurrent":
        print(json.dumps(asyncio.run(concurrent(args))))
    elif args.cmd == "udp-echo":
        print(json.dumps(udp_echo(args)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
