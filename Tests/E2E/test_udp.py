"""UDP through the tunnel (docs/protocol.md §5, UDP associations): request/response at volume,
endpoint-independent mapping ("full cone"), idle expiry and the mapping caps, datagrams up to 65,507
bytes, port-unreachable errors back to the application, and an iperf3 UDP run.

The application's sockets are made inside the client namespace (netns.socket_in); the server side is
servers.py's UDP echo (udpecho.py), bound to each server address so every reply leaves from the
address its request went to. The server namespace has a second address per family (10.20.0.3,
fd20::3), the "second sender" of the full-cone and expiry tests.

In kernel mode there is no mapping at all: the server sees the client's own address and port, which
a second sender reaches just as well, so the full-cone test holds there too; expiry and caps need
Sluice.
"""

import json
import socket
import time

import pytest

import content
import harness as h
import netns
import udpecho
from conftest import record_throughput

FAMILIES = {"ipv4": socket.AF_INET, "ipv6": socket.AF_INET6}


def app_socket(t, family: str, timeout: float = 3.0) -> socket.socket:
    return h.app_udp_socket(t.topo, family, timeout)


def second_sender(t, family: str) -> socket.socket:
    """A UDP socket in the server namespace on the server's second address."""
    s = t.topo.socket(t.topo.server, FAMILIES[family], socket.SOCK_DGRAM)
    s.bind((t.topo.server2_addr(family), 0))
    return s


echo = h.udp_echo


def receive_nothing(socks: list[socket.socket], seconds: float) -> list[str]:
    """Whatever arrives on any of `socks` within `seconds` (each as "socket i: data from src")."""
    got = []
    end = time.monotonic() + seconds
    for s in socks:
        s.setblocking(False)
    while time.monotonic() < end:
        for i, s in enumerate(socks):
            try:
                data, src = s.recvfrom(65535)
                got.append(f"socket {i}: {data[:20]!r} from {src[:2]}")
            except BlockingIOError:
                pass
        time.sleep(0.02)
    return got


def server_udp_events(t, **match) -> list[dict]:
    return [e for e in t.servers.events() if e.get("proto") == "udp" and all(e.get(k) == v for k, v in match.items())]


@pytest.mark.parametrize("family", FAMILIES)
def test_udp_echo_10000_pairs(make_tunnel, family):
    """10,000 request/response pairs, at most 50 in flight: none lost, each reply from the server's
    address and port, the server saw the relay (one relay-side endpoint: one socket, one mapping)."""
    t = make_tunnel()
    count = 10_000
    app = app_socket(t, family)
    try:
        echo(app, (t.topo.server_addr(family), h.UDP_PORT))  # a clear failure if UDP does not pass at all
    finally:
        app.close()
    cp = t.topo.exec(t.topo.client, [h.PY, str(h.HERE / "clients.py"), "udp-echo",
                                     "--host", t.topo.server_addr(family), "--port", str(h.UDP_PORT),
                                     "--count", str(count), "--window", "50", "--size", "200",
                                     "--expect-peer", t.topo.expected_peer(family), "--timeout", "60"], timeout=90)
    assert cp.returncode == 0, f"clients.py udp-echo crashed: {cp.stderr[-2000:]}"
    res = json.loads(cp.stdout)
    problems = {k: res[k] for k in ("lost", "late", "duplicates", "corrupt", "bad_source", "bad_peer", "send_errors")
                if res[k]}
    assert not problems, f"{problems}; examples: {res['examples']}"
    assert res["received"] == count
    assert len(res["peers"]) == 1, f"one socket should be one mapping, the server saw {res['peers']}"
    record_throughput(f"udp echo 10000 x 200 B {family} ({t.mode})", 2 * count * 200, res["seconds"],
                      rtt_p50_ms=round(res["rtt_ms_p50"], 3), rtt_p99_ms=round(res["rtt_ms_p99"], 3))


@pytest.mark.parametrize("family", FAMILIES)
def test_udp_full_cone(make_tunnel, family):
    """After the application sent from port p to server A, a second sender B that sends to the
    endpoint A saw (relay address, relay-side port) reaches the application, which receives the
    datagram from B's own address and port."""
    t = make_tunnel()
    app = app_socket(t, family)
    b = second_sender(t, family)
    try:
        peer, port = echo(app, (t.topo.server_addr(family), h.UDP_PORT))
        assert peer == t.topo.expected_peer(family)
        b.sendto(b"from B", (peer, port))
        data, src = app.recvfrom(65535)
        assert data == b"from B"
        assert (udpecho.plain(src[0]), src[1]) == (t.topo.server2_addr(family), b.getsockname()[1]), \
            f"B's datagram arrived from {src[:2]}, not from B's own address and port"
        # The mapping still serves A afterwards, from the same endpoint.
        assert echo(app, (t.topo.server_addr(family), h.UDP_PORT), b"again") == (peer, port)
    finally:
        app.close()
        b.close()


@pytest.mark.sluice
@pytest.mark.e2e_timeout(60)
def test_udp_mappings_expire_when_idle(make_tunnel):
    """With --udp-timeout 2 (client and relay), eight idle mappings (IPv4 and IPv6) expire: a second
    sender no longer reaches the application through the old relay-side endpoints, the relay closes
    their sockets, and a new datagram from each application socket works again."""
    timeout = 2
    t = make_tunnel(client_extra=["--udp-timeout", str(timeout)], relay_extra=["--udp-timeout", str(timeout)])
    time.sleep(0.5)  # let the readiness probe's connection close
    base_fds = h.fd_count(t.relay.pid)
    apps = [(family, app_socket(t, family)) for family in FAMILIES for _ in range(4)]
    senders = {family: second_sender(t, family) for family in FAMILIES}
    try:
        endpoints = [echo(s, (t.topo.server_addr(f), h.UDP_PORT)) for f, s in apps]
        assert len(set(endpoints)) == len(apps), f"two sockets share a relay-side endpoint: {endpoints}"
        assert h.fd_count(t.relay.pid) >= base_fds + len(apps), "the relay should hold a socket per mapping"
        # Positive control: while fresh, the first mapping of each family takes B's datagram.
        for i in (0, 4):
            family, s = apps[i]
            senders[family].sendto(b"fresh", endpoints[i])
            assert s.recvfrom(100)[0] == b"fresh"

        time.sleep(2.5 * timeout)  # nothing at all crosses the mappings meanwhile
        for (family, _), ep in zip(apps, endpoints):
            senders[family].sendto(b"stale", ep)
        arrived = receive_nothing([s for _, s in apps], 1.5)
        assert not arrived, f"expired mappings still reach the application: {arrived}"
        h.wait_for(lambda: h.fd_count(t.relay.pid) <= base_fds + 2, 5,
                   what=f"the relay to close the expired mappings' sockets (fds back to about {base_fds})")

        for family, s in apps:
            s.settimeout(3)
            assert echo(s, (t.topo.server_addr(family), h.UDP_PORT), b"new")[0] == t.topo.expected_peer(family)
    finally:
        for _, s in apps:
            s.close()
        for s in senders.values():
            s.close()


@pytest.mark.sluice
@pytest.mark.parametrize("side", ["client", "relay"])
def test_udp_mapping_cap(make_tunnel, side):
    """With --max-udp-mappings 4 on one side, eight sockets in turn all get their answers (old
    mappings are evicted to make room), at most four of the eight relay-side endpoints still reach
    their application, and every socket works again afterwards."""
    flag = ["--max-udp-mappings", "4"]
    t = make_tunnel(client_extra=flag if side == "client" else (), relay_extra=flag if side == "relay" else ())
    server = (netns.SERVER_V4, h.UDP_PORT)
    apps = [app_socket(t, "ipv4") for _ in range(8)]
    b = second_sender(t, "ipv4")
    try:
        endpoints = [echo(s, server, b"first %d" % i) for i, s in enumerate(apps)]
        for ep in endpoints:
            b.sendto(b"probe", ep)
        reached = receive_nothing(apps, 1.5)
        assert len(reached) <= 4, f"{len(reached)} mappings live with a cap of 4: {reached}"
        for i, s in enumerate(apps):
            s.settimeout(3)
            assert echo(s, server, b"second %d" % i)[0] == netns.RELAY_SERVER_SIDE_V4
        t.check_alive()
    finally:
        for s in apps:
            s.close()
        b.close()


SIZES = [0, 1, 1400, 1472, 1473, 8972, 65507]  # 1472/1473: the largest unfragmented IPv4 datagram, +1


@pytest.mark.parametrize("family", FAMILIES)
def test_udp_datagram_sizes(make_tunnel, family):
    """Datagrams from empty to 65,507 bytes round-trip intact over a TUN of MTU 1500 (the large ones
    travel fragmented), and the server received each whole, from the relay."""
    t = make_tunnel(client_extra=["--mtu", "1500"])
    app = app_socket(t, family, timeout=5)
    server = (t.topo.server_addr(family), h.UDP_PORT)
    try:
        for size in SIZES:
            payload = b"R" + content.stream_bytes(size, size - 1) if size else b""
            app.sendto(payload, server)
            data, src = app.recvfrom(65535)
            assert (udpecho.plain(src[0]), src[1]) == server
            assert len(data) == size, f"{size}-byte datagram came back as {len(data)} bytes"
            assert data == payload, f"{size}-byte datagram came back altered"
    finally:
        app.close()
    # The server logs after it replied: wait for the last record.
    seen = h.wait_for(lambda: len(server_udp_events(t)) >= len(SIZES) and server_udp_events(t), 5,
                      what="the server's record of every datagram")
    assert sorted(e["bytes"] for e in seen) == SIZES
    assert {e["peer"] for e in seen} == {t.topo.expected_peer(family)}


@pytest.mark.parametrize("family", FAMILIES)
def test_udp_closed_port_is_refused(make_tunnel, family):
    """A datagram to a port where nothing listens comes back as ECONNREFUSED on a connected socket:
    the port unreachable reaches the application (protocol §5, DATAGRAM_ERROR)."""
    t = make_tunnel()
    app = app_socket(t, family)
    try:
        app.connect((t.topo.server_addr(family), h.CLOSED_PORT))
        app.send(b"anyone?")
        with pytest.raises(ConnectionRefusedError):
            app.recv(100)
    finally:
        app.close()


@pytest.mark.e2e_timeout(60)
@pytest.mark.parametrize("family", FAMILIES)
def test_udp_iperf3(make_tunnel, family, runner):
    """iperf3 -u -b 200M -t 5 through the tunnel: the run completes and loses less than 20 %.
    Throughput and loss go to the summary table."""
    t = make_tunnel()
    server = t.topo.server_addr(family)
    h.start_iperf3_server(runner, t.topo, server)
    cp = t.topo.exec(t.topo.client, ["iperf3", "-c", server, "-p", str(h.IPERF_PORT), "-u", "-b", "200M",
                                     "-t", "5", "-J", "--connect-timeout", "5000"], timeout=40)
    try:
        res = json.loads(cp.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"iperf3 exited {cp.returncode} without JSON: {cp.stdout[-1000:]} {cp.stderr[-1000:]}")
    assert cp.returncode == 0 and "error" not in res, f"iperf3 failed: {res.get('error')}"
    total = res["end"]["sum"]
    print(json.dumps(total))
    assert total["packets"] > 0
    record_throughput(f"iperf3 udp -b 200M {family} ({t.mode})", total["bytes"], total["seconds"],
                      loss_percent=round(total["lost_percent"], 2), jitter_ms=round(total["jitter_ms"], 3))
    assert total["lost_percent"] < 20, f"iperf3 lost {total['lost_percent']:.1f} % of its datagrams"
