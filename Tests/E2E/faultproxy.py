"""A TCP proxy between client and relay that injects one fault on command: the faults a carrier
meets on a real path, made on purpose.

    ip netns exec RELAY python3 faultproxy.py --listen 10.10.0.2:7001 --target 127.0.0.1:7000 \
        --status status.json --ready-file ready.json --control command.json

The test writes one command (JSON) to the --control file and sends SIGUSR1; the proxy applies it:

  {"fault": "delay", "ms": 100}                      every chunk waits this long, both ways, until "clear"
  {"fault": "throttle", "bytes_per_second": 2000000}  each direction at most this fast, until "clear"
  {"fault": "stall"}                                  open connections stop passing bytes both ways and
                                                      stay open (a dead NAT mapping); new ones pass
  {"fault": "cut", "direction": "s2c", "after": N}    after N more bytes that way: FIN both sides
  {"fault": "rst", "direction": "c2s", "after": N}    after N more bytes that way: RST both sides
  {"fault": "flip", "direction": "s2c", "after": N}   the byte N bytes on flips one bit; the rest passes
  {"fault": "clear"}                                  delay and throttle end; stalled connections are
                                                      closed with RST (the NAT mapping's end)

cut, rst, flip and stall apply to the connections open when the command arrives; "c2s" is client to
relay. The --status file (rewritten atomically while something changes) holds
{"connections": [{"id", "c2s", "s2c", "closed_by", "faults": [{"fault", "at", "t"}]}], "commands": n}.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import proxy  # noqa: E402  (serve, arguments, split_hostport)


class Conn:
    def __init__(self, cid: int) -> None:
        self.rec = {"id": cid, "opened": time.time(), "c2s": 0, "s2c": 0, "closed_by": None, "faults": []}
        self.stalled = False
        self.healed = asyncio.Event()
        # per direction: (kind, bytes left before it fires) or None
        self.pending: dict[str, tuple[str, int] | None] = {"c2s": None, "s2c": None}
        self.writers: list[asyncio.StreamWriter] = []
        self.done = False

    def note(self, fault: str, at: int) -> None:
        self.rec["faults"].append({"fault": fault, "at": at, "t": time.time()})

    def abort(self, reset: bool) -> None:
        """Closes both sides: with RST (SO_LINGER 0) or with FIN."""
        self.done = True
        for w in self.writers:
            try:
                if reset:
                    sock = w.get_extra_info("socket")
                    if sock is not None:
                        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    w.transport.abort()
                else:
                    w.write_eof()
                    w.close()
            except (OSError, RuntimeError):
                pass


class FaultProxy(proxy.StatusFile):
    def __init__(self, target: tuple[str, int], status: str) -> None:
        self.target, self.status = target, status
        self.conns: list[Conn] = []
        self.delay = 0.0
        self.rate = 0.0
        self.commands = 0
        self.dirty = True

    async def pipe(self, conn: Conn, direction: str, reader, writer) -> None:
        sent_at = time.monotonic()
        try:
            while not conn.done:
                if conn.stalled:
                    await conn.healed.wait()
                    return
                b = await reader.read(65536)
                if not b or conn.done:
                    break
                if conn.stalled:  # armed while this read waited: these bytes never arrive
                    await conn.healed.wait()
                    return
                b = self.apply(conn, direction, b)
                if b is None:
                    return
                if self.delay:
                    await asyncio.sleep(self.delay)
                if self.rate:
                    sent_at = max(sent_at, time.monotonic()) + len(b) / self.rate
                    await asyncio.sleep(max(0.0, sent_at - time.monotonic()))
                conn.rec[direction] += len(b)
                self.dirty = True
                writer.write(b)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            if conn.rec["closed_by"] is None:
                conn.rec["closed_by"] = "client" if direction == "c2s" else "target"
            self.dirty = True
            if not conn.done and not conn.stalled:
                try:
                    writer.write_eof()
                except (OSError, RuntimeError):
                    pass

    def apply(self, conn: Conn, direction: str, b: bytes) -> bytes | None:
        """The chunk as it passes, after a pending cut, reset or flip in this direction; None when
        the connection was closed instead."""
        pending = conn.pending[direction]
        if pending is None:
            return b
        kind, left = pending
        if left >= len(b):
            conn.pending[direction] = (kind, left - len(b))
            return b
        at = conn.rec[direction] + left
        conn.pending[direction] = None
        conn.note(kind, at)
        if kind == "flip":
            return b[:left] + bytes([b[left] ^ 0x10]) + b[left + 1:]
        # cut / rst: the first `left` bytes still go, then the connection ends.
        if left:
            onward = conn.writers[1] if direction == "c2s" else conn.writers[0]
            onward.write(b[:left])
            conn.rec[direction] += left
        conn.abort(reset=(kind == "rst"))
        return None

    async def handle(self, creader, cwriter) -> None:
        conn = Conn(len(self.conns))
        self.conns.append(conn)
        self.dirty = True
        try:
            treader, twriter = await asyncio.open_connection(*self.target)
        except OSError:
            conn.rec["closed_by"] = "target"
            cwriter.close()
            return
        conn.writers = [cwriter, twriter]
        await asyncio.gather(self.pipe(conn, "c2s", creader, twriter), self.pipe(conn, "s2c", treader, cwriter))
        if not conn.done:
            cwriter.close()
            twriter.close()

    def command(self, cmd: dict) -> None:
        self.commands += 1
        fault = cmd["fault"]
        live = [c for c in self.conns if c.rec["closed_by"] is None and not c.done]
        if fault == "delay":
            self.delay = cmd["ms"] / 1000
        elif fault == "throttle":
            self.rate = float(cmd["bytes_per_second"])
        elif fault == "stall":
            for c in live:
                c.stalled = True
                c.note("stall", c.rec["c2s"])
        elif fault in ("cut", "rst", "flip"):
            for c in live:
                c.pending[cmd["direction"]] = (fault, int(cmd["after"]))
        elif fault == "clear":
            self.delay = self.rate = 0.0
            for c in self.conns:
                if c.stalled and not c.done:
                    c.abort(reset=True)
                    c.healed.set()
        else:
            print(f"unknown fault {fault!r}", file=sys.stderr)
        self.dirty = True

    def snapshot(self) -> dict:
        return {"connections": [c.rec for c in self.conns], "commands": self.commands}


def main() -> int:
    ap = proxy.arguments()
    ap.add_argument("--control", required=True)
    args = ap.parse_args()
    fault_proxy = FaultProxy(proxy.split_hostport(args.target), args.status)

    def on_command() -> None:
        with open(args.control) as f:
            fault_proxy.command(json.load(f))

    asyncio.run(proxy.serve(fault_proxy, args, setup=lambda loop: loop.add_signal_handler(signal.SIGUSR1, on_command)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
