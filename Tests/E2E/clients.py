"""Test clients run inside the client namespace; each prints one JSON object on stdout.

    ip netns exec CLIENT python3 clients.py concurrent --host 10.20.0.2 --port 9000 \
        --conns 200 --size 262144 [--timeout 120]

`concurrent` opens all connections at once against servers.py's echo mode ("E"); each sends `size`
bytes of its own seeded content while reading the echo, then checks the echo byte for byte and the
server's trailer (sha256 of what the server received + its own verdict).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import content  # noqa: E402


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


def main() -> int:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("concurrent")
    c.add_argument("--host", required=True)
    c.add_argument("--port", type=int, required=True)
    c.add_argument("--conns", type=int, default=200)
    c.add_argument("--size", type=int, default=256 * 1024)
    c.add_argument("--timeout", type=float, default=120)
    args = ap.parse_args()
    if args.cmd == "concurrent":
        print(json.dumps(asyncio.run(concurrent(args))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
