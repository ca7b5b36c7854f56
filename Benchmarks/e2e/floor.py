"""The floor modes: two forward.c processes in a chain, the shape of any proxy-style tunnel, and nothing else.

    client ns                                relay ns                            server ns
    iperf3 -c 127.0.0.1 ── forwarder A ──────── forwarder B (10.10.0.2) ──────── iperf3 -s (10.20.0.2)
                           127.0.0.1:PORT       PORT                              PORT

Like the sluice mode the relay namespace does not forward packets and the client has no route to the
server, so every byte crosses user space in A and in B, over three TCP connections (a new connection:
three handshakes, A's and B's connect each waiting for the next hop's). UDP ports go the same way as
datagrams: A keeps an association (a socket of its own toward B) per application socket, B one per
association of A toward the server, each made on its first datagram. "floor" copies; "floor-aead" seals
and opens ChaCha20-Poly1305 records (TCP) or datagrams (UDP) between A and B (forward.c's comment says
how). No TUN, no user-space TCP/IP, no multiplexing: whatever the chain reaches is the most any tunnel of
this design reaches on this machine, in throughput and in the time of a connection or a round trip.

A chain must prove it carries the bytes before it may produce a figure: `check()` sends 16 MiB each way
through it at once, in uneven writes, and compares SHA-256 digests on both far sides (an echo alone would
not do: two forwarders that both seal, or neither opens, give the bytes back unchanged). `check_udp()`
does the same for datagrams: from several sockets, each size from empty to 60,000 bytes, compared where
the server receives them and again where the answer (other bytes) comes back.
"""

from __future__ import annotations

import dataclasses
import hashlib
import random
import socket
import threading
from pathlib import Path

import harness as h
import netns

MODES = ("floor", "floor-aead")
# floor-aead moving at most 64 KiB a read or write of plain bytes (forward.c --unit), as a tunnel behind
# a TUN device does: the device's tso_max_size caps each packet it hands over or takes at 64 KiB. It runs
# in the paired iperf3 rounds only (paired.THROUGHPUT), as a floor of a TUN-based design: where it misses
# a throughput or CPU target that floor-aead sets, that unit alone misses it.
UNIT_MODE = "floor-aead-64k"
UNIT_BYTES = 64 * 1024
ALL_MODES = (*MODES, UNIT_MODE)  # every floor a run may have: the two chains and the one derived from floor-aead
CHECK_PORT = 9110  # TCP and UDP: the checks' own servers (not the loadgen server's ports)
CHECK_BYTES = 16 << 20
CHECK_SIZES = (0, 1, 64, 1400, 1473, 9000, 60000)  # bytes per datagram: empty, one byte, below and above the MTU
CHECK_SOCKETS = 3  # each a new association in both forwarders
ADDRESS = "127.0.0.1"  # where the application in the client namespace connects: forwarder A


def base(mode: str) -> str:
    """The floor mode that `mode` runs: floor-aead for UNIT_MODE, else `mode` itself."""
    return "floor-aead" if mode == UNIT_MODE else mode


def settings(mode: str, s):
    """`s` (measure.Settings) with UNIT_MODE's --unit after the run's floor arguments (forward.c takes the
    last of an option given twice); `s` itself for every other mode."""
    if mode != UNIT_MODE:
        return s
    return dataclasses.replace(s, floor_args=[*s.floor_args, "--unit", str(UNIT_BYTES)])


def cipher_args(mode: str, role: str) -> list[str]:
    return ["--cipher", "chacha20-poly1305", "--role", role] if mode == "floor-aead" else ["--cipher", "none"]


def pairs(side: str, ports: list[int], udp_ports: list[int]) -> list[str]:
    """forward.c's LISTEN TARGET arguments for forwarder A ("client") or B ("relay")."""
    listen, target = {"client": (ADDRESS, netns.RELAY_CLIENT_SIDE_V4),
                      "relay": (netns.RELAY_CLIENT_SIDE_V4, netns.SERVER_V4)}[side]
    return [*(a for p in ports for a in (f"{listen}:{p}", f"{target}:{p}")),
            *(a for p in udp_ports for a in (f"udp:{listen}:{p}", f"{target}:{p}"))]


def start(runner: h.Runner, topo: netns.Topology, workdir: Path, forward: Path, mode: str,
          ports: list[int], udp_ports: list[int] = (), extra: list[str] = ()) -> tuple[h.Proc, h.Proc]:
    """Starts B in the relay namespace, then A in the client namespace, each forwarding every TCP port
    in `ports` and UDP port in `udp_ports` (and CHECK_PORT, both); returns (A, B) once both listen.
    `extra` goes to both forwarders after the mode's own options (bench.py --floor-arg)."""
    ports, udp_ports = [*ports, CHECK_PORT], [*udp_ports, CHECK_PORT]
    relay_pairs, client_pairs = pairs("relay", ports, udp_ports), pairs("client", ports, udp_ports)
    procs = []
    for name, ns, role, args in (("forward-relay", topo.relay, "relay", relay_pairs),
                                 ("forward-client", topo.client, "client", client_pairs)):
        ready = workdir / f"{name}.ready"
        ready.unlink(missing_ok=True)
        p = runner.start(name, [str(forward), *cipher_args(mode, role), *extra, "--ready", str(ready), *args], ns=ns)
        h.wait_for(lambda: ready.exists() or not p.alive(), 10, what=f"{name} to listen")
        if not p.alive():
            raise RuntimeError(f"{name} exited {p.popen.returncode}:\n{h.tail(p.log)}")
        procs.append(p)
    return procs[1], procs[0]


def _send(sock: socket.socket, data: bytes, seed: int) -> None:
    """Writes `data` in uneven pieces (1 byte to more than four records), then half-closes."""
    rng, pos = random.Random(seed), 0
    while pos < len(data):
        n = rng.choice((1, 7, 1000, 65519, 65520, 300000))
        sock.sendall(data[pos:pos + n])
        pos += n
    sock.shutdown(socket.SHUT_WR)


def _receive(sock: socket.socket) -> tuple[int, bytes]:
    digest, count = hashlib.sha256(), 0
    while True:
        b = sock.recv(1 << 18)
        if not b:
            return count, digest.digest()
        digest.update(b)
        count += len(b)


def check(topo: netns.Topology, size: int = CHECK_BYTES, timeout: float = 30) -> dict:
    """Sends `size` bytes from the client namespace to a server in the server namespace through the
    chain, and `size` other bytes back at the same time; raises unless both arrive whole and unchanged."""
    up = random.Random(1).randbytes(size)
    down = random.Random(2).randbytes(size)
    server_got: dict = {}
    errors: list[BaseException] = []

    def guarded(fn, *args) -> threading.Thread:
        def run() -> None:
            try:
                fn(*args)
            except BaseException as e:  # reported below
                errors.append(e)
        t = threading.Thread(target=run, name=f"floor-check-{fn.__name__}", daemon=True)
        t.start()
        return t

    listener = netns.socket_in(topo.server)
    conn = client = None
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((netns.SERVER_V4, CHECK_PORT))
        listener.listen(1)
        listener.settimeout(timeout)
        client = netns.socket_in(topo.client)
        client.settimeout(timeout)
        client.connect((ADDRESS, CHECK_PORT))
        conn, _ = listener.accept()
        conn.settimeout(timeout)

        def serve() -> None:
            server_got["count"], server_got["sha256"] = _receive(conn)

        threads = [guarded(serve), guarded(_send, conn, down, 4), guarded(_send, client, up, 3)]
        try:
            got_count, got_sha = _receive(client)
        except OSError as e:  # a forwarder that failed (a record it could not open) resets the connection
            raise RuntimeError(f"the byte check through the chain failed: {e!r}: the chain is broken, so it gets "
                               "no figure") from e
        for t in threads:
            t.join(timeout)
        if errors:
            raise RuntimeError(f"the byte check through the chain failed: {errors[0]!r}")
        want_up, want_down = hashlib.sha256(up).digest(), hashlib.sha256(down).digest()
        if server_got.get("count") != size or server_got.get("sha256") != want_up:
            raise RuntimeError(f"the server received {server_got.get('count')} bytes, not the {size} sent "
                               "(or not the same bytes): the chain is broken, so it gets no figure")
        if got_count != size or got_sha != want_down:
            raise RuntimeError(f"the client received {got_count} bytes, not the {size} the server sent "
                               "(or not the same bytes): the chain is broken, so it gets no figure")
        return {"bytes_each_way": size, "sha256_up": want_up.hex(), "sha256_down": want_down.hex()}
    finally:
        for s in (client, conn, listener):
            if s is not None:
                s.close()


def _answer(datagram: bytes) -> bytes:
    """What the check's server sends back: other bytes than it got, so that a chain that hands the
    server sealed bytes (and opens them on the way back) cannot pass."""
    return bytes(reversed(datagram)) + b"!"


def check_udp(topo: netns.Topology, timeout: float = 5) -> dict:
    """Sends datagrams of every CHECK_SIZES size from CHECK_SOCKETS new sockets in the client namespace
    through the chain to a server in the server namespace, one at a time; raises unless the server gets
    each one unchanged and its answer comes back unchanged to the socket that asked."""
    server = netns.socket_in(topo.server, kind=socket.SOCK_DGRAM)
    got: list[bytes] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                d, peer = server.recvfrom(1 << 16)
            except (socket.timeout, OSError):
                continue
            got.append(d)
            server.sendto(_answer(d), peer)

    rng = random.Random(5)
    try:
        server.bind((netns.SERVER_V4, CHECK_PORT))
        server.settimeout(0.2)
        t = threading.Thread(target=serve, name="floor-check-udp", daemon=True)
        t.start()
        count = 0
        for n in range(CHECK_SOCKETS):
            with netns.socket_in(topo.client, kind=socket.SOCK_DGRAM) as client:
                client.settimeout(timeout)
                client.connect((ADDRESS, CHECK_PORT))
                for size in CHECK_SIZES:
                    sent = rng.randbytes(size)
                    client.send(sent)
                    try:
                        back = client.recv(1 << 16)
                    except socket.timeout:
                        raise RuntimeError(f"no answer to a {size}-byte datagram from socket {n + 1} through the chain "
                                           f"within {timeout} s (the server got {len(got)} of {count + 1}): the chain "
                                           "is broken, so it gets no figure") from None
                    if got[-1:] != [sent]:
                        raise RuntimeError(f"the server received {len(got[-1]) if got else 'no'} bytes, not the {size}-byte "
                                           "datagram sent (or not the same bytes): the chain is broken, so it gets no figure")
                    if back != _answer(sent):
                        raise RuntimeError(f"the client got back {len(back)} bytes, not the server's {size + 1}-byte answer "
                                           "(or not the same bytes): the chain is broken, so it gets no figure")
                    count += 1
        return {"datagrams_each_way": count, "sizes": list(CHECK_SIZES), "sockets": CHECK_SOCKETS}
    finally:
        stop.set()
        server.close()
