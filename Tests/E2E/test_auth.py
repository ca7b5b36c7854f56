"""The relay's silence: anything that fails authentication gets zero bytes, then a close after the
handshake timeout (protocol.md §1). Bytes relay→client are counted by proxy.py in front of the relay,
or read directly by a probe socket in the client namespace.
"""

import os
import socket
import time

import pytest

import harness as h
import netns

pytestmark = pytest.mark.sluice

HANDSHAKE_TIMEOUT = 2
RELAY_FAST = ["--handshake-timeout", str(HANDSHAKE_TIMEOUT)]
MSG1 = 125


def probe_relay(topo, payload: bytes, wait: float = 10.0) -> tuple[bytes, float | None]:
    """Connects from the client namespace straight to the relay, sends payload, reads until the relay
    closes. Returns (bytes received, seconds from connect to close, or None if still open at `wait`)."""
    s = topo.socket(topo.client)
    s.settimeout(5)
    got = b""
    try:
        s.connect((netns.RELAY_CLIENT_SIDE_V4, h.RELAY_PORT))
        t0 = time.monotonic()
        s.sendall(payload)
        while True:
            left = t0 + wait - time.monotonic()
            if left <= 0:
                return got, None
            s.settimeout(left)
            try:
                b = s.recv(65536)
            except socket.timeout:
                return got, None
            except ConnectionResetError:
                return got, time.monotonic() - t0
            if not b:
                return got, time.monotonic() - t0
            got += b
    finally:
        s.close()


def assert_silent_close(got: bytes, closed_after: float | None) -> None:
    assert got == b"", f"the relay answered {len(got)} bytes to an unauthenticated peer"
    assert closed_after is not None, "the relay never closed the connection"
    assert HANDSHAKE_TIMEOUT - 0.5 <= closed_after <= HANDSHAKE_TIMEOUT + 2.5, \
        f"closed after {closed_after:.2f} s, expected about its {HANDSHAKE_TIMEOUT} s handshake timeout"


@pytest.mark.parametrize("case", ["unknown-key", "wrong-psk"])
def test_unauthorized_client_gets_zero_bytes(make_tunnel, runner, case):
    """An unlisted client key, or a listed key with the wrong PSK (message 1 carries a PSK proof,
    docs/protocol.md §1): no flow, and not one byte from the relay."""
    wd = runner.workdir
    if case == "unknown-key":
        t = make_tunnel(authorized=False, via_proxy=True, wait=False, relay_extra=RELAY_FAST)
    else:
        t = make_tunnel(via_proxy=True, wait=False, relay_extra=RELAY_FAST,
                        relay_psk=h.make_psk(wd, "relay"), client_psk=h.make_psk(wd, "client"))
    r = h.curl(t.topo, ["-o", "/dev/null", h.url(t.topo, "ipv4", "/bytes/1000")], max_time=4, connect_timeout=4)
    assert not r.ok, "a request went through although the relay must refuse this client"
    h.wait_for(lambda: t.check_alive() or any(c["c2s"] >= MSG1 for c in t.proxy.connections()), 10,
               what="the client to send a handshake through the proxy")
    h.wait_for(lambda: t.check_alive() or any(c["closed_by"] == "target" for c in t.proxy.connections()),
               HANDSHAKE_TIMEOUT + 5,
               what="the relay to close an unauthenticated carrier")
    conns = t.proxy.connections()
    assert sum(c["s2c"] for c in conns) == 0, f"relay sent bytes to an unauthorized client: {conns}"
    assert t.servers.events() == [], "the server saw traffic from an unauthorized client"


def test_replayed_handshake_gets_zero_bytes(make_tunnel):
    t = make_tunnel(via_proxy=True, relay_extra=RELAY_FAST)
    first = h.wait_for(lambda: [c for c in t.proxy.connections() if c["s2c"] > 0], 5,
                       what="the proxy to record the accepted carrier")[0]
    msg1 = bytes.fromhex(first["first_c2s"])
    assert len(msg1) == MSG1
    assert first["s2c"] >= 64, "control: the accepted handshake got no reply, so the counter proves nothing"
    got, closed_after = probe_relay(t.topo, msg1)
    assert_silent_close(got, closed_after)
    t.wait_flow(timeout=5)  # the genuine client is unaffected by the replay


@pytest.mark.parametrize("payload", [
    pytest.param(os.urandom(MSG1), id="random-125"),
    pytest.param(os.urandom(64 * 1024), id="random-64k"),
    pytest.param(b"GET / HTTP/1.1\r\nHost: relay\r\n\r\n", id="http-request"),
    pytest.param(b"", id="nothing"),
])
def test_garbage_gets_zero_bytes(runner, topology, payload):
    key, client = h.make_keypair(runner.workdir, "relay"), h.make_keypair(runner.workdir, "client")
    relay = runner.start("relay", h.relay_argv(key, [client.public], extra=RELAY_FAST), ns=topology.relay)
    h.wait_relay_listening(topology, relay)
    got, closed_after = probe_relay(topology, payload)
    assert_silent_close(got, closed_after)
    assert relay.alive(), "the relay died"
