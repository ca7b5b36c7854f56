"""The relay's destination policy (docs/configuration.md, "Destination policy"), capability
negotiation (docs/protocol.md §1.1) and reload (SIGHUP).

Paths to what the policy refuses:
- the relay host's loopback: `sluice up --dns 127.0.0.1` sends every DNS query (UDP and TCP, port 53)
  to 127.0.0.1:53 *at the relay*, where a service listens;
- a link-local metadata address: 169.254.169.254 on the relay namespace's loopback, with a listener
  answering "metadata-secret" (what a cloud host's metadata service would give away), routed into
  the tunnel with `--route 169.254.169.254/32`;
- a multicast group: `--route 239.0.0.0/8`, a receiver in the server namespace joined to the group;
- a name that resolves to 127.0.0.1 (`localhost`, in the relay's /etc/hosts): `up` never sends
  names, so sluiceproto.py, an independent client of the protocol, opens the stream.
Each is refused quickly (ECONNREFUSED, an ICMP error, or nothing delivered), and works with
`--allow-destination` for it, which shows the refusal is the policy's and not the path's.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import struct
import threading
import time
from pathlib import Path

import pytest

import harness as h
import netns
import sluiceproto as sp

pytestmark = pytest.mark.sluice

METADATA = "169.254.169.254"
SECRET = b"metadata-secret"
GROUP, GROUP_PORT = "239.1.2.3", 5000


class Banner:
    """TCP listeners that send `text` to whoever connects, and UDP sockets that echo, in a namespace."""

    def __init__(self, topo, ns: str) -> None:
        self.topo, self.ns = topo, ns
        self.socks: list[socket.socket] = []
        self.stop = threading.Event()

    def tcp(self, addr: str, port: int, text: bytes) -> None:
        s = self.topo.socket(self.ns, netns.family_of(addr))
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((addr, port))
        s.listen(64)
        s.settimeout(0.2)
        self.socks.append(s)

        def serve() -> None:
            while not self.stop.is_set():
                try:
                    c, _ = s.accept()
                except (socket.timeout, OSError):
                    continue
                with c:
                    try:
                        c.sendall(text)
                    except OSError:
                        pass

        threading.Thread(target=serve, daemon=True).start()

    def udp(self, addr: str, port: int) -> None:
        s = self.topo.socket(self.ns, netns.family_of(addr), socket.SOCK_DGRAM)
        s.bind((addr, port))
        s.settimeout(0.2)
        self.socks.append(s)

        def serve() -> None:
            while not self.stop.is_set():
                try:
                    data, src = s.recvfrom(2048)
                    s.sendto(data, src)
                except (socket.timeout, OSError):
                    continue

        threading.Thread(target=serve, daemon=True).start()

    def close(self) -> None:
        self.stop.set()
        for s in self.socks:
            s.close()


@pytest.fixture
def banner(topology):
    b = Banner(topology, topology.relay)
    yield b
    b.close()


def tcp_outcome(topo, addr: str, port: int, timeout: float = 5) -> tuple[str, float]:
    """Connects from the client namespace: ("refused" | "data:<bytes>" | "timeout" | error, seconds)."""
    s = topo.socket(topo.client, netns.family_of(addr))
    s.settimeout(timeout)
    t0 = time.monotonic()
    try:
        s.connect((addr, port))
        data = s.recv(100)
        return f"data:{data.decode(errors='replace')}", time.monotonic() - t0
    except ConnectionRefusedError:
        return "refused", time.monotonic() - t0
    except socket.timeout:
        return "timeout", time.monotonic() - t0
    except OSError as e:
        return f"error:{e.errno}", time.monotonic() - t0
    finally:
        s.close()


def udp_outcome(topo, addr: str, port: int, timeout: float = 3) -> tuple[str, float]:
    """A connected UDP socket sends one datagram: ("echo" | "unreachable" | "prohibited" | "timeout", s)."""
    s = topo.socket(topo.client, netns.family_of(addr), socket.SOCK_DGRAM)
    s.settimeout(timeout)
    t0 = time.monotonic()
    try:
        s.connect((addr, port))
        s.send(b"hello")
        data = s.recv(100)
        return ("echo" if data == b"hello" else f"data:{data!r}"), time.monotonic() - t0
    except socket.timeout:
        return "timeout", time.monotonic() - t0
    except OSError as e:
        # ICMP type 3 code 13 (administratively prohibited) and code 1 (host unreachable) are both
        # EHOSTUNREACH for an IPv4 socket; ICMPv6 type 1 code 1 is EACCES.
        return {113: "unreachable", 13: "prohibited"}.get(e.errno, f"error:{e.errno}"), time.monotonic() - t0
    finally:
        s.close()


def log_text(proc: h.Proc) -> str:
    return proc.log.read_text(errors="replace")


def wait_log(proc: h.Proc, fragment: str, timeout: float = 5) -> str:
    return h.wait_for(lambda: fragment in log_text(proc) and log_text(proc), timeout, what=f"{proc.name} to log {fragment!r}")


# -- the relay host's loopback -----------------------------------------------------------------------

@pytest.mark.parametrize("allowed", [False, True], ids=["default", "allowed"])
def test_relay_loopback(make_tunnel, banner, allowed):
    """`--dns 127.0.0.1` makes every DNS query go to 127.0.0.1:53 at the relay: refused by default
    (ECONNREFUSED for TCP, an ICMP error for UDP, in well under a second), reached with
    `--allow-destination 127.0.0.1/32`."""
    banner.tcp("127.0.0.1", 53, b"relay-local-service")
    banner.udp("127.0.0.1", 53)
    t = make_tunnel(client_extra=["--dns", "127.0.0.1"],
                    relay_extra=["--allow-destination", "127.0.0.1/32"] if allowed else [])
    tcp, tcp_s = tcp_outcome(t.topo, netns.SERVER_V4, 53)
    udp, udp_s = udp_outcome(t.topo, netns.SERVER_V4, 53)
    print(f"loopback ({'allowed' if allowed else 'default'}): TCP {tcp} in {tcp_s:.3f} s, UDP {udp} in {udp_s:.3f} s")
    if allowed:
        assert tcp == "data:relay-local-service"
        assert udp == "echo"
        return
    assert tcp == "refused" and tcp_s < 1, f"TCP to the relay's 127.0.0.1:53: {tcp} after {tcp_s:.2f} s"
    assert udp == "unreachable" and udp_s < 1, f"UDP to the relay's 127.0.0.1:53: {udp} after {udp_s:.2f} s"
    relay_log = wait_log(t.relay, "127.0.0.1:53 refused")
    assert "built-in rule 127.0.0.0/8 (loopback)" in relay_log
    # The client names the destination as the application used it (--dns sent it to the resolver).
    client_log = wait_log(t.client, "UDP to 10.20.0.2:53 forbidden by the relay's destination policy")
    assert "TCP to 10.20.0.2:53 forbidden by the relay's destination policy: the relay's destination policy refuses 127.0.0.1:53" in client_log
    # Once per destination: a second refusal writes no second line.
    tcp_outcome(t.topo, netns.SERVER_V4, 53)
    time.sleep(0.3)
    assert log_text(t.client).count("TCP to 10.20.0.2:53 forbidden") == 1


# -- a link-local metadata service --------------------------------------------------------------------

@pytest.mark.parametrize("allowed", [False, True], ids=["default", "allowed"])
def test_metadata_address(make_tunnel, banner, topology, allowed):
    """169.254.169.254 on the relay host: the client that routes it through the tunnel gets
    ECONNREFUSED at once — not the secret — unless the relay allows exactly that address."""
    topology.exec(topology.relay, ["ip", "addr", "add", f"{METADATA}/32", "dev", "lo"], check=True)
    banner.tcp(METADATA, 80, SECRET)
    t = make_tunnel(client_extra=["--route", f"{METADATA}/32"],
                    relay_extra=["--allow-destination", f"{METADATA}/32"] if allowed else [])
    outcome, took = tcp_outcome(t.topo, METADATA, 80)
    print(f"metadata ({'allowed' if allowed else 'default'}): {outcome} in {took:.3f} s")
    if allowed:
        assert outcome == f"data:{SECRET.decode()}"
    else:
        assert outcome == "refused" and took < 1, f"{outcome} after {took:.2f} s"
        assert "built-in rule 169.254.0.0/16" in wait_log(t.relay, f"{METADATA}:80 refused")


# -- a multicast group -----------------------------------------------------------------------------------

@pytest.mark.parametrize("allowed", [False, True], ids=["default", "allowed"])
def test_multicast_group(make_tunnel, topology, allowed):
    """A datagram to 239.1.2.3 through the tunnel reaches a receiver joined to the group behind the
    relay only with `--allow-destination 239.0.0.0/8`. (No ICMP error comes back about a multicast
    destination — RFC 1122 forbids it — so the refusal shows as the relay's line and silence.)"""
    topology.exec(topology.relay, ["ip", "route", "add", "239.0.0.0/8", "dev", "to-server"], check=True)
    rx = topology.socket(topology.server, socket.AF_INET, socket.SOCK_DGRAM)
    rx.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    rx.bind(("0.0.0.0", GROUP_PORT))
    rx.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP,
                  socket.inet_aton(GROUP) + socket.inet_aton(netns.SERVER_V4))
    rx.settimeout(1.5)
    try:
        t = make_tunnel(client_extra=["--route", "239.0.0.0/8"],
                        relay_extra=["--allow-destination", "239.0.0.0/8"] if allowed else [])
        tx = t.topo.socket(t.topo.client, socket.AF_INET, socket.SOCK_DGRAM)
        try:
            for _ in range(3):
                tx.sendto(b"to the group", (GROUP, GROUP_PORT))
        finally:
            tx.close()
        try:
            data, src = rx.recvfrom(100)
            got = f"{data!r} from {src[0]}"
        except socket.timeout:
            got = None
        if allowed:
            assert got == f"{b'to the group'!r} from {netns.RELAY_SERVER_SIDE_V4}", got
        else:
            assert got is None, f"the group received {got} although the policy refuses multicast"
            assert "built-in rule 224.0.0.0/4 (multicast)" in wait_log(t.relay, f"{GROUP}:{GROUP_PORT} refused", 2)
    finally:
        rx.close()


# -- names, and the protocol's own view -------------------------------------------------------------------

@pytest.fixture
def proto_relay(runner, topology, banner):
    """A relay (no `sluice up`) for sluiceproto.py clients, and a service on the relay's 127.0.0.1:5432."""
    banner.tcp("127.0.0.1", 5432, b"postgres")

    def start(extra=()):
        relay_key = h.make_keypair(runner.workdir, "relay")
        client = h.make_keypair(runner.workdir, "client")
        proc = runner.start("relay", h.relay_argv(relay_key, [client.public], extra=list(extra)), ns=topology.relay)
        h.wait_relay_listening(topology, proc)

        def connect(hello=True) -> sp.Carrier:
            s = topology.socket(topology.client)
            s.settimeout(5)
            s.connect((netns.RELAY_CLIENT_SIDE_V4, h.RELAY_PORT))
            return sp.Carrier.connect(None, sp.private_key_bytes(relay_key.public),
                                      sp.private_key_bytes(client.private), hello=hello, sock=s)

        return proc, connect

    return start


def test_names_and_addresses_judged_after_resolution(proto_relay):
    """OPEN to `localhost` (the relay's /etc/hosts: 127.0.0.1, ::1), to 127.0.0.1 and to
    ::ffff:127.0.0.1 is RESET(forbidden) — after resolution, so no name leads around the policy —
    and, for a client that predates features (no HELLO), RESET(refused)."""
    relay, connect = proto_relay()
    c = connect()
    assert c.features & sp.FEATURE_POLICY_REFUSALS, "the relay advertises policy refusals in message 2"
    for host in [("domain", "localhost"), "127.0.0.1", "::ffff:127.0.0.1", "0.0.0.0", "::1", "::"]:
        answer = c.wait_stream(c.open(host, 5432))
        assert answer[:2] == ("RESET", sp.FORBIDDEN), f"{host}: {answer}"
        assert "destination policy refuses" in answer[2]
    old = connect(hello=False)
    answer = old.wait_stream(old.open(("domain", "localhost"), 5432))
    assert answer[:2] == ("RESET", sp.REFUSED), f"a client without HELLO got {answer}"
    assert "(127.0.0.1" in answer[2], answer[2]
    c.close()
    old.close()
    assert relay.alive()


def test_allowed_name_connects(proto_relay):
    relay, connect = proto_relay(["--allow-destination", "127.0.0.1/32"])
    c = connect()
    assert c.wait_stream(c.open(("domain", "localhost"), 5432))[0] == "OPEN_OK"
    assert c.wait_stream(c.open("::1", 5432))[:2] == ("RESET", sp.FORBIDDEN), "::1 stays refused"
    c.close()


def test_hello_out_of_turn_closes_the_carrier(proto_relay):
    """A second HELLO is a protocol error: the relay sends GO_AWAY(5) and closes (protocol.md §1.1)."""
    relay, connect = proto_relay()
    c = connect()
    c.send_frames([sp.frame(sp.HELLO, 0, struct.pack(">I", 1))])
    frames = []
    with pytest.raises(ConnectionError):
        while True:
            frames += c.read_frames(timeout=5)
    assert (sp.GO_AWAY, 0, bytes([sp.PROTOCOL_ERROR])) in frames, frames
    assert "HELLO out of turn: a second HELLO" in wait_log(relay, "out of turn")
    c.close()


# -- reload ---------------------------------------------------------------------------------------------

def test_sighup_closes_only_removed_clients(runner, topology, servers):
    """Two clients, `sluice up` (A) and a sluiceproto carrier (B), on a relay run from relay.json. A
    broken file and SIGHUP: refused with one line, both stay. B removed and SIGHUP: B's carrier is
    closed, A's open flow and new flows keep working; B cannot come back."""
    wd = runner.workdir
    relay_key = h.make_keypair(wd, "relay")
    a, b = h.make_keypair(wd, "client"), h.make_keypair(wd, "other")
    config = wd / "relay.json"

    def write(clients, extra: str = "") -> None:
        body = {"listen": f"0.0.0.0:{h.RELAY_PORT}", "privateKey": str(relay_key.path), "allowClient": clients}
        config.write_text(json.dumps(body)[:-1] + extra + "}")

    write([a.public, b.public])
    relay = runner.start("relay", [h.sluice_bin(), "relay", "--config", str(config)], ns=topology.relay)
    h.wait_relay_listening(topology, relay)
    client = runner.start("client", h.client_argv(f"{netns.RELAY_CLIENT_SIDE_V4}:{h.RELAY_PORT}", relay_key.public, a,
                                                  carriers=1), ns=topology.client)
    h.wait_client_up(topology, client)

    def echo(sock, text: bytes) -> bytes:
        sock.sendall(text)
        got = b""
        while len(got) < len(text):
            chunk = sock.recv(100)
            if not chunk:
                break
            got += chunk
        return got

    flow = h.wait_for(lambda: _connect_echo(topology), 15, interval=0.2, what="a flow through client A")
    try:
        flow.sendall(b"I")  # servers.py: interactive echo
        assert echo(flow, b"before") == b"before"
        s = topology.socket(topology.client)
        s.connect((netns.RELAY_CLIENT_SIDE_V4, h.RELAY_PORT))
        carrier_b = sp.Carrier.connect(None, sp.private_key_bytes(relay_key.public), sp.private_key_bytes(b.private), sock=s)
        assert carrier_b.wait_stream(carrier_b.open(netns.SERVER_V4, h.TCP_PORT))[0] == "OPEN_OK"

        config.write_text('{"listen": "0.0.0.0:7000", "allowClient": [')  # broken
        relay.signal(signal.SIGHUP)
        wait_log(relay, "reload refused, the running configuration stays")
        assert echo(flow, b"still") == b"still"
        assert carrier_b.wait_stream(carrier_b.open(netns.SERVER_V4, h.TCP_PORT))[0] == "OPEN_OK", "B dropped by a broken reload"

        write([a.public])
        t0 = time.monotonic()
        relay.signal(signal.SIGHUP)
        with pytest.raises(ConnectionError):
            while time.monotonic() - t0 < 5:
                carrier_b.read_frames(timeout=5)
        print(f"client B's carrier closed {time.monotonic() - t0:.3f} s after SIGHUP")
        line = wait_log(relay, "reloaded:")
        assert "1 client key(s) allowed (0 added, 1 removed; 1 carrier(s) of removed clients closed)" in line
        assert echo(flow, b"after") == b"after", "client A's open flow broke"
        assert h.curl(topology, ["-o", "/dev/null", h.url(topology, "ipv4", "/bytes/1000")], max_time=5).ok
        assert client.alive() and relay.alive()
        with pytest.raises((ConnectionError, socket.timeout, TimeoutError, OSError)):
            s2 = topology.socket(topology.client)
            s2.connect((netns.RELAY_CLIENT_SIDE_V4, h.RELAY_PORT))
            sp.Carrier.connect(None, sp.private_key_bytes(relay_key.public), sp.private_key_bytes(b.private), sock=s2,
                               timeout=3)
    finally:
        flow.close()


def _connect_echo(topo):
    s = topo.socket(topo.client)
    s.settimeout(3)
    try:
        s.connect((netns.SERVER_V4, h.TCP_PORT))
        return s
    except OSError:
        s.close()
        return None


# -- old peers: main's binary ------------------------------------------------------------------------------

OLD_BIN = os.environ.get("SLUICE_OLD_BIN", "")


@pytest.mark.skipif(not (OLD_BIN and os.access(OLD_BIN, os.X_OK)),
                    reason="set SLUICE_OLD_BIN to a sluice binary from before capability negotiation")
@pytest.mark.parametrize("old", ["client", "relay"])
def test_with_an_old_peer(runner, topology, servers, banner, old):
    """New relay with an old client, and new client with an old relay: transfers work both ways
    (sha256), and with the old client a refused destination is ECONNREFUSED (RESET refused)."""
    wd = runner.workdir
    topology.exec(topology.relay, ["ip", "addr", "add", f"{METADATA}/32", "dev", "lo"], check=True)
    banner.tcp(METADATA, 80, SECRET)
    relay, client = h.start_with_old_peer(runner, topology, OLD_BIN, old, client_extra=["--route", f"{METADATA}/32"])
    import content
    size = 8 * content.MiB
    out = wd / "down.bin"
    r = h.curl(topology, ["-o", str(out), h.url(topology, "ipv4", f"/bytes/{size}")], max_time=30)
    assert r.ok, f"curl {r.returncode}: {r.stderr}"
    assert content.file_sha256(out) == content.sha256(size)
    outcome, took = tcp_outcome(topology, METADATA, 80)
    if old == "client":
        assert outcome == "refused" and took < 1, f"{outcome} after {took:.2f} s"
        assert "(built-in rule 169.254.0.0/16" in wait_log(relay, f"{METADATA}:80 refused")
    else:
        assert outcome == f"data:{SECRET.decode()}", "the old relay has no policy"
    time.sleep(6)  # a PING or two of the new side has been answered by the old one
    assert client.alive() and relay.alive()
    assert "protocol error" not in log_text(relay) + log_text(client)
