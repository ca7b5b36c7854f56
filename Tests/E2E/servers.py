"""The test servers, run in the server namespace: an HTTP server, a raw TCP server, a UDP echo server.

    ip netns exec SERVER python3 servers.py --http-port 8080 --tcp-port 9000 \
        --udp-port 9001 --udp-bind 10.20.0.2 --udp-bind fd20::2 \
        --log peers.jsonl --ready-file ready.json [--pregen-mib 64]

HTTP and TCP listen on [::] dual-stack. Every request/connection is appended to the --log file as one JSON
line with the peer address (IPv4-mapped addresses shown as plain IPv4), so a test can assert that the
server saw the relay's address.

HTTP (ThreadingHTTPServer, HTTP/1.1):
  GET /bytes/N     N bytes of content.py's deterministic content; header X-Peer: the client address
  PUT|POST /any    reads the body (Content-Length or chunked), answers JSON {"bytes","sha256","peer"}
  GET /peer        JSON {"peer"}

Raw TCP, the first byte picks the mode:
  b"E" u64 size u64 seed   echo `size` bytes while checking them against content.stream_bytes(seed,
                           size), then send a trailer: sha256 of what arrived (32) + verdict (1 = ok)
  b"I"                     interactive echo until EOF (an idle flow that can be probed at any time)
  b"F" u64 limit           firehose: send up to `limit` bytes of content, never read

UDP echo (udpecho.py has the format): one socket per --udp-bind address, so that every reply leaves
from the address its request was sent to (an unbound socket would let the kernel pick a source, and
the server namespace has two addresses per family).

SIGUSR1 appends the progress of every open raw TCP connection to the log ({"inflight": true, ...}).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import http.server
import json
import os
import signal
import socket
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import content  # noqa: E402
import udpecho  # noqa: E402

_log_lock = threading.Lock()
_log_path: str | None = None


def plain(addr: str) -> str:
    return addr[7:] if addr.startswith("::ffff:") else addr


def log(**event) -> None:
    event["t"] = time.time()
    line = json.dumps(event) + "\n"
    with _log_lock:
        if _log_path:
            with open(_log_path, "a") as f:
                f.write(line)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "sluice-e2e"

    def log_message(self, fmt, *args) -> None:  # quiet: the JSON log is the record
        pass

    @property
    def peer(self) -> str:
        return plain(self.client_address[0])

    def _reply(self, code: int, body: bytes, ctype: str = "application/json") -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Peer", self.peer)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path.startswith("/bytes/"):
            try:
                n = int(self.path[len("/bytes/"):])
            except ValueError:
                return self._reply(400, b'{"error":"bad size"}')
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(n))
            self.send_header("X-Peer", self.peer)
            self.end_headers()
            sent = 0
            try:
                for c in content.chunks(n):
                    self.wfile.write(c)
                    sent += len(c)
            finally:
                log(proto="http", method="GET", path=self.path, peer=self.peer, bytes_out=sent)
        elif self.path == "/peer":
            log(proto="http", method="GET", path=self.path, peer=self.peer, bytes_out=0)
            self._reply(200, json.dumps({"peer": self.peer}).encode())
        else:
            self._reply(404, b'{"error":"not found"}')

    def _read_body(self):
        h = hashlib.sha256()
        total = 0
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                total += self._hash_exactly(size, h)
                self.rfile.readline()
        else:
            total = self._hash_exactly(int(self.headers.get("Content-Length", "0")), h)
        return total, h.hexdigest()

    def _hash_exactly(self, count: int, h) -> int:
        """Reads `count` body bytes into the hash `h`; raises if the body ends first."""
        left = count
        while left:
            b = self.rfile.read(min(left, 1 << 20))
            if not b:
                raise ConnectionError("body ended early")
            h.update(b)
            left -= len(b)
        return count

    def do_PUT(self) -> None:
        total, digest = self._read_body()
        log(proto="http", method=self.command, path=self.path, peer=self.peer, bytes_in=total, sha256=digest)
        self._reply(200, json.dumps({"bytes": total, "sha256": digest, "peer": self.peer}).encode())

    do_POST = do_PUT


class DualStackHTTPServer(http.server.ThreadingHTTPServer):
    address_family = socket.AF_INET6
    daemon_threads = True
    request_queue_size = 512

    def server_bind(self) -> None:
        self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        super().server_bind()


async def read_exactly(reader: asyncio.StreamReader, n: int) -> bytes:
    return await reader.readexactly(n)


_inflight: dict[int, dict] = {}  # open raw TCP connections' progress, dumped on SIGUSR1


def dump_inflight() -> None:
    for st in list(_inflight.values()):
        log(proto="tcp", inflight=True, **st)


async def handle_tcp(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    peer = plain(writer.get_extra_info("peername")[0])
    mode = "?"
    state: dict = {"peer": peer, "since": time.time()}
    _inflight[id(state)] = state
    try:
        mode = (await reader.readexactly(1)).decode(errors="replace")
        if mode == "E":
            size, seed = struct.unpack("!QQ", await reader.readexactly(16))
            state["seed"] = seed
            expected = content.stream_bytes(seed, size)
            h = hashlib.sha256()
            got = 0
            ok = True
            while got < size:
                b = await reader.read(min(65536, size - got))
                if not b:
                    raise ConnectionError(f"EOF after {got} of {size} bytes")
                ok = ok and b == expected[got:got + len(b)]
                h.update(b)
                got += len(b)
                state["received"] = got
                state["intact"] = ok  # logged with an error too: was every byte right until then?
                writer.write(b)
                await writer.drain()
                state["echoed"] = got
            writer.write(h.digest() + (b"\x01" if ok else b"\x00"))
            await writer.drain()
            log(proto="tcp", mode="E", peer=peer, seed=seed, bytes=got, ok=ok)
        elif mode == "I":
            n = 0
            while True:
                b = await reader.read(65536)
                if not b:
                    break
                n += len(b)
                writer.write(b)
                await writer.drain()
            log(proto="tcp", mode="I", peer=peer, bytes=n)
        elif mode == "F":
            (limit,) = struct.unpack("!Q", await reader.readexactly(8))
            sent = 0
            try:
                for c in content.chunks(limit):
                    writer.write(c)
                    await writer.drain()
                    sent += len(c)
            finally:
                log(proto="tcp", mode="F", peer=peer, bytes_out=sent)
        elif mode == "H":
            # Half-close from the application: read to EOF, then answer with what arrived.
            h = hashlib.sha256()
            n = 0
            while b := await reader.read(65536):
                h.update(b)
                n += len(b)
            writer.write(struct.pack("!Q", n) + h.digest())
            await writer.drain()
            log(proto="tcp", mode="H", peer=peer, bytes=n)
        elif mode == "R":
            # Half-close toward the application: send N bytes and FIN, then read to its EOF.
            (size,) = struct.unpack("!Q", await reader.readexactly(8))
            writer.write(content.stream_bytes(7, size))
            await writer.drain()
            writer.write_eof()
            h = hashlib.sha256()
            n = 0
            while b := await reader.read(65536):
                h.update(b)
                n += len(b)
            log(proto="tcp", mode="R", peer=peer, bytes=n, sha256=h.hexdigest())
        elif mode == "X":
            # Reset toward the application: a few bytes, then close with RST (SO_LINGER 0).
            writer.write(b"bye")
            await writer.drain()
            await asyncio.sleep(0.2)
            sock = writer.get_extra_info("socket")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            log(proto="tcp", mode="X", peer=peer)
            writer.transport.abort()
            return
        elif mode == "W":
            # Wait for the application's reset: echo until the connection breaks, then log how.
            try:
                while b := await reader.read(65536):
                    writer.write(b)
                    await writer.drain()
                log(proto="tcp", mode="W", peer=peer, end="eof")
            except ConnectionResetError:
                log(proto="tcp", mode="W", peer=peer, end="reset")
        else:
            log(proto="tcp", mode=mode, peer=peer, error="unknown mode")
    except (ConnectionError, asyncio.IncompleteReadError, OSError) as e:
        log(proto="tcp", mode=mode, error=repr(e), **state)
    finally:
        _inflight.pop(id(state), None)
        writer.close()


async def tcp_main(port: int, started: threading.Event) -> None:
    sock = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    sock.bind(("::", port))
    server = await asyncio.start_server(handle_tcp, sock=sock, backlog=1024)
    started.set()
    async with server:
        await server.serve_forever()


def udp_serve(sock: socket.socket) -> None:
    """Answers the UDP echo protocol on one bound socket, forever (a daemon thread)."""
    while True:
        try:
            data, src = sock.recvfrom(65535)
        except OSError:
            continue  # e.g. ECONNREFUSED queued by an ICMP error for an earlier reply
        addr, port = plain(src[0]), src[1]
        try:
            if data[:1] == b"E":
                sock.sendto(udpecho.echo_reply(data, addr, port), src)
            elif data[:1] == b"R":
                sock.sendto(data, src)
                log(proto="udp", mode="R", peer=addr, port=port, bytes=len(data),
                    sha256=hashlib.sha256(data).hexdigest())
            elif not data:
                sock.sendto(b"", src)
                log(proto="udp", mode="0", peer=addr, port=port, bytes=0)
            else:
                log(proto="udp", mode=data[:1].decode(errors="replace"), peer=addr, port=port,
                    error="unknown mode")
        except OSError as e:
            log(proto="udp", peer=addr, port=port, error=repr(e))


def udp_socket(addr: str, port: int) -> socket.socket:
    fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
    sock = socket.socket(fam, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
    sock.bind((addr, port))
    return sock


def main() -> int:
    global _log_path
    ap = argparse.ArgumentParser()
    ap.add_argument("--http-port", type=int, default=8080)
    ap.add_argument("--tcp-port", type=int, default=9000)
    ap.add_argument("--udp-port", type=int, default=9001)
    ap.add_argument("--udp-bind", action="append", default=[], help="an address for the UDP echo (repeatable)")
    ap.add_argument("--log", required=True)
    ap.add_argument("--ready-file", required=True)
    ap.add_argument("--pregen-mib", type=int, default=64, help="content blocks to generate before serving")
    args = ap.parse_args()
    _log_path = args.log
    open(args.log, "a").close()

    for i in range(args.pregen_mib):
        content.block(i)

    httpd = DualStackHTTPServer(("::", args.http_port), Handler)
    threading.Thread(target=httpd.serve_forever, name="http", daemon=True).start()
    started = threading.Event()
    threading.Thread(target=lambda: asyncio.run(tcp_main(args.tcp_port, started)), name="tcp",
                     daemon=True).start()
    if not started.wait(10):
        print("tcp server did not start", file=sys.stderr)
        return 1
    for addr in args.udp_bind:
        threading.Thread(target=udp_serve, args=(udp_socket(addr, args.udp_port),), name=f"udp-{addr}",
                         daemon=True).start()

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    signal.signal(signal.SIGUSR1, lambda *_: dump_inflight())
    tmp = args.ready_file + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"pid": os.getpid(), "http": args.http_port, "tcp": args.tcp_port, "udp": args.udp_port}, f)
    os.replace(tmp, args.ready_file)
    while not stop.wait(0.5):
        pass
    httpd.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
