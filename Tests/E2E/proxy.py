"""A byte-counting TCP proxy, put in front of the relay to see exactly what crosses port 7000.

    ip netns exec RELAY python3 proxy.py --listen 10.10.0.2:7001 --target 127.0.0.1:7000 \
        --status status.json --ready-file ready.json [--capture 125]

For every connection it counts bytes each way, keeps the first --capture bytes the client sent
(message 1 of the handshake is exactly the first 125), and notes which side closed first. The
--status file is rewritten atomically (every 0.05 s while something changed) as
{"connections": [{"id", "opened", "c2s", "s2c", "first_c2s", "closed_by", "closed_after"}]}
with first_c2s in hex and closed_by "client", "target" or null while open.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import time


def split_hostport(s: str) -> tuple[str, int]:
    host, _, port = s.rpartition(":")
    return host.strip("[]"), int(port)


class StatusFile:
    """A proxy's --status file: rewritten atomically from `snapshot()` every 0.05 s while `dirty`.
    Shared with faultproxy.py."""

    status: str
    dirty: bool = True

    def snapshot(self) -> dict:
        raise NotImplementedError

    def write_status(self) -> None:
        tmp = self.status + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.snapshot(), f)
        os.replace(tmp, self.status)

    async def status_loop(self) -> None:
        while True:
            if self.dirty:
                self.dirty = False
                self.write_status()
            await asyncio.sleep(0.05)


class Proxy(StatusFile):
    def __init__(self, target: tuple[str, int], status: str, capture: int) -> None:
        self.target, self.status, self.capture = target, status, capture
        self.conns: list[dict] = []
        self.dirty = True

    async def pipe(self, rec: dict, key: str, reader, writer, side: str) -> None:
        try:
            while True:
                b = await reader.read(65536)
                if not b:
                    break
                if key == "c2s" and len(rec["_first"]) < self.capture:
                    rec["_first"] += b[: self.capture - len(rec["_first"])]
                rec[key] += len(b)
                self.dirty = True
                writer.write(b)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            if rec["closed_by"] is None:
                rec["closed_by"] = side
                rec["closed_after"] = time.monotonic() - rec["_t0"]
            self.dirty = True
            try:
                writer.write_eof()
            except (OSError, RuntimeError):
                pass

    async def handle(self, creader, cwriter) -> None:
        rec = {"id": len(self.conns), "opened": time.time(), "c2s": 0, "s2c": 0, "closed_by": None,
               "closed_after": None, "_first": b"", "_t0": time.monotonic()}
        self.conns.append(rec)
        self.dirty = True
        try:
            treader, twriter = await asyncio.open_connection(*self.target)
        except OSError:
            rec["closed_by"] = "target"
            rec["closed_after"] = 0.0
            cwriter.close()
            return
        await asyncio.gather(self.pipe(rec, "c2s", creader, twriter, "client"),
                             self.pipe(rec, "s2c", treader, cwriter, "target"))
        cwriter.close()
        twriter.close()

    def snapshot(self) -> dict:
        return {"connections": [{k: v for k, v in c.items() if not k.startswith("_")} | {"first_c2s": c["_first"].hex()}
                                for c in self.conns]}


async def serve(proxy, args, setup=None) -> None:
    """Runs `proxy` (its `handle`, `write_status` and `status_loop`) on --listen until SIGTERM or
    SIGINT, writing --ready-file once it listens; `setup(loop)` adds signal handlers of its own.
    Shared with faultproxy.py."""
    host, port = split_hostport(args.listen)
    server = await asyncio.start_server(proxy.handle, host, port, reuse_address=True)
    loop = asyncio.get_running_loop()
    if setup:
        setup(loop)
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    proxy.write_status()
    with open(args.ready_file + ".tmp", "w") as f:
        json.dump({"pid": os.getpid()}, f)
    os.replace(args.ready_file + ".tmp", args.ready_file)
    status = asyncio.create_task(proxy.status_loop())
    await stop.wait()
    status.cancel()
    server.close()
    proxy.write_status()


def arguments() -> argparse.ArgumentParser:
    """The options every proxy here takes."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--listen", required=True)
    ap.add_argument("--target", required=True)
    ap.add_argument("--status", required=True)
    ap.add_argument("--ready-file", required=True)
    return ap


def main() -> int:
    ap = arguments()
    ap.add_argument("--capture", type=int, default=125)
    args = ap.parse_args()
    asyncio.run(serve(Proxy(split_hostport(args.target), args.status, args.capture), args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
