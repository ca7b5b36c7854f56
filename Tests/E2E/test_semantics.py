"""Connection semantics an application relies on, seen through the tunnel with real sockets:
half-close in both directions, resets in both directions, and the relay's per-client stream cap.

The sockets are created inside the client namespace (netns.socket_in), so they route through the TUN.
"""

import errno
import hashlib
import socket
import struct
import time

import pytest

import content
import harness as h
import netns

FAMILIES = {"ipv4": (socket.AF_INET, netns.SERVER_V4), "ipv6": (socket.AF_INET6, netns.SERVER_V6)}


def connect(t, family: str, mode: bytes, timeout: float = 10) -> socket.socket:
    af, host = FAMILIES[family]
    s = t.topo.socket(t.topo.client, af)
    s.settimeout(timeout)
    s.connect((host, h.TCP_PORT))
    s.sendall(mode)
    return s


def read_to_eof(s: socket.socket) -> bytes:
    parts = []
    while b := s.recv(65536):
        parts.append(b)
    return b"".join(parts)


def server_event(t, mode: str, timeout: float = 10) -> dict:
    found = []

    def seen() -> bool:
        found[:] = [e for e in t.servers.events() if e.get("proto") == "tcp" and e.get("mode") == mode]
        return bool(found)

    h.wait_for(seen, timeout, what=f"the server's record of a mode {mode} connection")
    return found[-1]


@pytest.mark.parametrize("family", FAMILIES)
def test_half_close_from_the_application(make_tunnel, family):
    """The application sends, shuts down its sending side, and still receives the server's answer."""
    t = make_tunnel()
    payload = content.stream_bytes(3, 3 * content.MiB + 17)
    s = connect(t, family, b"H")
    s.sendall(payload)
    s.shutdown(socket.SHUT_WR)
    answer = read_to_eof(s)
    s.close()
    assert len(answer) == 40, f"expected 8 + 32 bytes of answer after our FIN, got {len(answer)}"
    n, digest = struct.unpack("!Q", answer[:8])[0], answer[8:]
    assert n == len(payload), "the server saw a different byte count before our FIN"
    assert digest == hashlib.sha256(payload).digest()


@pytest.mark.parametrize("family", FAMILIES)
def test_half_close_toward_the_application(make_tunnel, family):
    """The server sends and shuts down its side; the application reads to EOF and can still send."""
    t = make_tunnel()
    size = 2 * content.MiB + 5
    s = connect(t, family, b"R" + struct.pack("!Q", size))
    got = read_to_eof(s)
    assert got == content.stream_bytes(7, size), "data before the server's FIN differs"
    late = content.stream_bytes(11, 300_000)
    s.sendall(late)  # our direction is still open after the server's FIN
    s.shutdown(socket.SHUT_WR)
    s.close()
    e = server_event(t, "R")
    assert e["bytes"] == len(late) and e["sha256"] == hashlib.sha256(late).hexdigest()


def test_reset_by_the_server_reaches_the_application(make_tunnel):
    t = make_tunnel()
    s = connect(t, "ipv4", b"X")
    assert s.recv(3) == b"bye"
    with pytest.raises(ConnectionResetError):
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            if not s.recv(65536):
                pytest.fail("the server's RST arrived as an orderly EOF")
    s.close()


def test_reset_by_the_application_reaches_the_server(make_tunnel):
    t = make_tunnel()
    s = connect(t, "ipv4", b"W")
    s.sendall(b"ping")
    assert s.recv(4) == b"ping"
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()  # RST
    assert server_event(t, "W")["end"] == "reset", "the server saw an orderly close, not a reset"


@pytest.mark.sluice
def test_relay_stream_cap_refuses_new_streams(make_tunnel):
    """With --max-streams 3 the fourth concurrent connection is refused (ECONNREFUSED) and the
    relay logs why; once one closes, a new connection works again."""
    t = make_tunnel(relay_extra=["--max-streams", "3"], wait=False)
    h.wait_for(lambda: "carrier #2" in h.tail(t.relay.log, 200), 10, what="both carriers up")
    held = [connect(t, "ipv4", b"I") for _ in range(3)]
    for s in held:
        s.sendall(b"x")
        assert s.recv(1) == b"x"
    af, host = FAMILIES["ipv4"]
    extra = t.topo.socket(t.topo.client, af)
    extra.settimeout(5)
    started = time.monotonic()
    with pytest.raises(OSError) as refused:
        extra.connect((host, h.TCP_PORT))
    assert refused.value.errno == errno.ECONNREFUSED
    assert time.monotonic() - started < 1
    extra.close()
    assert "limit of 3 open streams reached" in h.tail(t.relay.log, 50)

    held.pop().close()
    def reconnects() -> bool:
        try:
            s = connect(t, "ipv4", b"I", timeout=2)
        except OSError:
            return False
        s.sendall(b"y")
        ok = s.recv(1) == b"y"
        s.close()
        return ok
    h.wait_for(reconnects, 5, interval=0.2, what="a new stream after one closed")
    for s in held:
        s.close()
