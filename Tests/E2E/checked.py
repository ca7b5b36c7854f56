"""Transfers that check every byte as it arrives, in a thread, for tests that break the path under
them: a stream must either complete intact or end (reset, EOF) with every byte it delivered
correct — a corrupted byte is the one outcome never allowed.

    d = Download(topo, size=1 << 30).start()      # servers.py's firehose ("F"), checked against content.py
    e = Echo(topo, size=64 << 20, seed=7).start()  # servers.py's checked echo ("E"), both directions
    ...
    d.join(timeout=20); d.outcome                 # "complete", "reset", "eof", "corrupt", "error: …" or "running"
"""

from __future__ import annotations

import socket
import struct
import threading
import time

import content
import harness as h
import netns


class Transfer:
    """A thread whose `outcome` says how its stream ended and `received` how far it got intact."""

    def __init__(self, topo, size: int, timeout: float = 30) -> None:
        self.topo, self.size, self.timeout = topo, size, timeout
        self.received = 0
        self.outcome = "running"
        self.corrupt_at: int | None = None
        self.ended_at: float | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> "Transfer":
        self.thread.start()
        return self

    def join(self, timeout: float) -> "Transfer":
        self.thread.join(timeout)
        return self

    def wait_received(self, n: int, timeout: float = 10) -> None:
        h.wait_for(lambda: self.received >= n or self.outcome != "running", timeout,
                   what=f"{type(self).__name__} to pass {n} bytes")
        assert self.outcome == "running", f"the transfer ended early: {self.outcome} after {self.received} bytes"

    def _run(self) -> None:
        s = self.topo.socket(self.topo.client)
        s.settimeout(self.timeout)
        try:
            s.connect((netns.SERVER_V4, h.TCP_PORT))
            self.outcome = self.body(s)
        except ConnectionResetError:
            self.outcome = "reset"
        except socket.timeout:
            self.outcome = "hang"
        except OSError as e:
            self.outcome = f"error: {e}"
        finally:
            self.ended_at = time.monotonic()
            s.close()

    def check(self, data: bytes, expected: bytes) -> bool:
        if data != expected:
            for i, (a, b) in enumerate(zip(data, expected)):
                if a != b:
                    self.corrupt_at = self.received + i
                    break
            return False
        self.received += len(data)
        return True

    def body(self, s: socket.socket) -> str:
        raise NotImplementedError


class Download(Transfer):
    """`size` bytes of content.py's stream from servers.py's firehose mode ("F"); with `pause`, a
    sleep of that many seconds after each read of up to 256 KiB, so that a long transfer is still
    running when a test breaks its path."""

    def __init__(self, topo, size: int, timeout: float = 30, pause: float = 0) -> None:
        super().__init__(topo, size, timeout)
        self.pause = pause

    def body(self, s: socket.socket) -> str:
        s.sendall(b"F" + struct.pack("!Q", self.size))
        while self.received < self.size:
            if self.pause:
                time.sleep(self.pause)
            b = s.recv(1 << 18)
            if not b:
                return "eof"
            if not self.check(b, content.at(self.received, len(b))):
                return "corrupt"
        return "complete" if not s.recv(1) else "corrupt"


class Echo(Transfer):
    """`size` bytes of content.stream_bytes(seed) through servers.py's checked echo ("E"): sent while
    the echo is read back and compared; the server's trailer (sha256 + verdict) ends it."""

    def __init__(self, topo, size: int, seed: int, timeout: float = 30) -> None:
        super().__init__(topo, size, timeout)
        self.seed = seed
        self.data = content.stream_bytes(seed, size)

    def body(self, s: socket.socket) -> str:
        s.sendall(b"E" + struct.pack("!QQ", self.size, self.seed))
        failed: list[BaseException] = []

        def send() -> None:
            try:
                for off in range(0, self.size, 1 << 16):
                    s.sendall(self.data[off:off + (1 << 16)])
            except OSError as e:
                failed.append(e)

        sender = threading.Thread(target=send, daemon=True)
        sender.start()
        while self.received < self.size:
            b = s.recv(min(1 << 18, self.size - self.received))
            if not b:
                return "eof"
            if not self.check(b, self.data[self.received:self.received + len(b)]):
                return "corrupt"
        trailer = b""
        while len(trailer) < 33:
            b = s.recv(33 - len(trailer))
            if not b:
                return "eof"
            trailer += b
        return "complete" if trailer[32] == 1 else "corrupt"
