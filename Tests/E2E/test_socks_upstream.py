"""`sluice up --upstream socks5://…`: the tunnel's flows go to a real SOCKS5 server from Debian in the
relay namespace (socksservers.py) instead of a Sluice relay — dante-server (TCP and UDP, with and
without RFC 1929 username/password) and microsocks (TCP only).

Checked through the TUN, as an application sees it: downloads and uploads with sha256 at both ends
and the server seeing the SOCKS server's address; a closed port refused (ECONNREFUSED) within 1 s;
`dig` through the DNS redirect; a UDP echo round trip through UDP ASSOCIATE; and with microsocks,
UDP dropped and counted once the server said it cannot carry it.
"""

import errno
import json
import socket
import threading
import time

import pytest

import content
import harness as h
import netns
import socksservers
from conftest import record_throughput

pytestmark = pytest.mark.sluice

SIZE = 16 * content.MiB



def start_up(runner, topology, auth: bool, extra=()) -> h.Proc:
    argv = [h.sluice_bin(), "up", "--upstream", socksservers.upstream_url(auth), "--tun", h.TUN]
    for a in h.CLIENT_ADDRESSES:
        argv += ["--address", a]
    for r in h.CLIENT_ROUTES:
        argv += ["--route", r]
    argv += ["--log-level", "debug", *extra]
    client = runner.start("client", argv, ns=topology.client)
    h.wait_client_up(topology, client)

    def works() -> bool:
        if not client.alive():
            raise RuntimeError(f"sluice up exited {client.popen.returncode}:\n{h.tail(client.log)}")
        return h.curl(topology, ["-o", "/dev/null", h.url(topology, "ipv4", "/bytes/1")], max_time=2, connect_timeout=2).ok

    h.wait_for(works, 15, interval=0.1, what="a first request through the SOCKS5 upstream")
    return client


def transfer_both_ways(runner, topology, servers, name: str) -> None:
    out = runner.workdir / "download.bin"
    r = h.curl(topology, ["-o", str(out), h.url(topology, "ipv4", f"/bytes/{SIZE}")], max_time=60)
    assert r.ok, f"download failed ({r.returncode}): {r.stderr}"
    assert content.file_sha256(out) == content.sha256(SIZE), "downloaded content differs from what the server sent"
    record_throughput(f"download 16 MiB via {name}", SIZE, r.info["time_total"])

    src = runner.workdir / "upload.bin"
    digest = content.write_file(str(src), SIZE)
    reply = runner.workdir / "reply.json"
    r = h.curl(topology, ["-T", str(src), "-o", str(reply), h.url(topology, "ipv4", "/upload")], max_time=60)
    assert r.ok, f"upload failed ({r.returncode}): {r.stderr}"
    answer = json.loads(reply.read_text())
    assert answer["bytes"] == SIZE and answer["sha256"] == digest, "the server received different content"
    assert answer["peer"] == netns.RELAY_SERVER_SIDE_V4, "the server saw the SOCKS server's address"
    record_throughput(f"upload 16 MiB via {name}", SIZE, r.info["time_total"])


def closed_port_is_refused(topology) -> None:
    s = topology.socket(topology.client)
    s.settimeout(5)
    t0 = time.monotonic()
    try:
        err = s.connect_ex((netns.SERVER_V4, h.CLOSED_PORT))
    finally:
        s.close()
    elapsed = time.monotonic() - t0
    assert err == errno.ECONNREFUSED, f"expected ECONNREFUSED, got {errno.errorcode.get(err, err)}"
    assert elapsed < 1.0, f"refusal took {elapsed:.2f} s"


def closing_server_is_seen_closing(topology, count: int = 20) -> None:
    """A server that accepts and closes at once: each connection through the tunnel sees its FIN
    (recv → b"") within 1 s. With danted the reply and the destination's EOF can arrive together."""
    listener = topology.socket(topology.server)
    listener.bind((netns.SERVER_V4, 0))
    listener.listen(count)
    port = listener.getsockname()[1]

    def serve() -> None:
        for _ in range(count):
            try:
                listener.accept()[0].close()
            except OSError:
                return

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        for i in range(count):
            s = topology.socket(topology.client)
            s.settimeout(1)
            try:
                s.connect((netns.SERVER_V4, port))
                assert s.recv(10) == b"", f"connection {i}: data instead of the server's close"
            except socket.timeout:
                pytest.fail(f"connection {i}: the server's close did not arrive within 1 s")
            finally:
                s.close()
    finally:
        listener.close()
        thread.join(2)


def status(topology) -> dict:
    cp = h.run_sluice(["status", "--tun", h.TUN, "--json"], ns=topology.client)
    assert cp.returncode == 0, cp.stderr.decode(errors="replace")
    return json.loads(cp.stdout)["tunnels"][0]["statistics"]


@pytest.mark.parametrize("auth", [False, True], ids=["no-auth", "username-password"])
def test_danted_tcp_udp_and_dns(runner, topology, servers, dns_server, auth):
    danted = socksservers.start_danted(runner, topology, auth)
    client = start_up(runner, topology, auth, extra=["--dns", netns.SERVER_V4])
    transfer_both_ways(runner, topology, servers, f"danted ({'password' if auth else 'no auth'})")
    closed_port_is_refused(topology)
    closing_server_is_seen_closing(topology)

    # DNS redirect: a query to an address with no host goes to the --dns resolver through danted
    # (UDP ASSOCIATE), and over TCP (CONNECT); dnsmasq saw both from the SOCKS server's address.
    for tcp in (False, True):
        name = f"socks-{'tcp' if tcp else 'udp'}-{'auth' if auth else 'open'}.{h.DNS_ZONE}"
        cp = h.dig(topology, "10.20.0.77", name, "A", *(["+tcp"] if tcp else []))
        assert cp.returncode == 0 and cp.stdout.split() == [h.DNS_A], f"dig {name}: {cp.stdout!r} {cp.stderr!r}\n{h.tail(client.log)}"
        assert dns_server.wait_query(name)[0]["source"] == netns.RELAY_SERVER_SIDE_V4

    # A UDP echo round trip: the reply comes from the server's address, which saw danted's.
    app = h.app_udp_socket(topology, "ipv4")
    try:
        for i in range(3):
            peer, _ = h.udp_echo(app, (netns.SERVER_V4, h.UDP_PORT), f"through danted {i}".encode())
            assert peer == netns.RELAY_SERVER_SIDE_V4
    finally:
        app.close()

    stats = status(topology)
    assert stats["relay"] == f"socks5://{socksservers.SOCKS_ADDRESS}:{socksservers.SOCKS_PORT}" and stats["relayPublicKey"] == ""
    assert [c["state"] for c in stats["carriers"]] == ["up"]
    assert stats["traffic"]["udpDatagramsDown"] >= 3
    assert "udp-upstream-unsupported" not in stats["drops"]
    assert danted.proc.alive() and client.alive()


def control_connections_in_time_wait(topology) -> set[str]:
    """The client namespace's TCP connections to the SOCKS server in TIME_WAIT, by local endpoint."""
    out = topology.exec(topology.client, ["ss", "-Htan", "state", "time-wait", "dst",
                                          f"{socksservers.SOCKS_ADDRESS}:{socksservers.SOCKS_PORT}"], timeout=5).stdout
    return {line.split()[2] for line in out.splitlines() if line.strip()}


def test_ended_udp_associations_leave_no_time_wait(runner, topology, servers):
    """Each UDP flow has a control connection to the server; when the mapping ends (here evicted at
    --max-udp-mappings 4) it closes with RST, so no TIME_WAIT holds an ephemeral port for 60 s. With
    FIN, a DNS-like load — a new source port per query — ran the ports to the server out."""
    socksservers.start_danted(runner, topology, auth=False)
    client = start_up(runner, topology, auth=False, extra=["--max-udp-mappings", "4"])
    before = control_connections_in_time_wait(topology)
    flows = 24
    for i in range(flows):
        app = h.app_udp_socket(topology, "ipv4")
        try:
            peer, _ = h.udp_echo(app, (netns.SERVER_V4, h.UDP_PORT), f"flow {i}".encode())
            assert peer == netns.RELAY_SERVER_SIDE_V4
        finally:
            app.close()
    h.wait_for(lambda: status(topology)["flows"]["udpMappings"] <= 4, 5, what="the mappings past the cap to be evicted")
    left = control_connections_in_time_wait(topology) - before
    assert not left, f"{len(left)} of {flows - 4} ended associations' control connections in TIME_WAIT: {sorted(left)[:5]}"
    assert client.alive()
    assert h.curl(topology, ["-o", "/dev/null", h.url(topology, "ipv4", "/bytes/1")], max_time=5).ok, "TCP through danted after the evictions"


@pytest.mark.parametrize("auth", [False, True], ids=["no-auth", "username-password"])
def test_microsocks_tcp_and_udp_refused(runner, topology, servers, auth):
    socksservers.start_microsocks(runner, topology, auth)
    client = start_up(runner, topology, auth)
    transfer_both_ways(runner, topology, servers, f"microsocks ({'password' if auth else 'no auth'})")
    closed_port_is_refused(topology)

    # microsocks has no UDP ASSOCIATE: said once in the log, and UDP dropped and counted.
    app = h.app_udp_socket(topology, "ipv4", timeout=0.5)
    try:
        for _ in range(5):
            app.sendto(b"Eno udp here", (netns.SERVER_V4, h.UDP_PORT))
            time.sleep(0.1)
        with pytest.raises(socket.timeout):
            app.recvfrom(100)
    finally:
        app.close()
    h.wait_for(lambda: status(topology)["drops"].get("udp-upstream-unsupported", 0) >= 4, 5,
               what="UDP drops counted as udp-upstream-unsupported")
    log = client.log.read_text(errors="replace")
    assert log.count("does not support UDP ASSOCIATE") == 1, "reported once"


def test_wrong_password_is_reported_and_flows_refused(runner, topology, servers):
    socksservers.start_microsocks(runner, topology, auth=True)
    argv = [h.sluice_bin(), "up", "--upstream", f"socks5://{socksservers.USER}:wrong@{socksservers.SOCKS_ADDRESS}:{socksservers.SOCKS_PORT}",
            "--tun", h.TUN, "--address", h.CLIENT_ADDRESSES[0], "--route", h.CLIENT_ROUTES[0]]
    client = runner.start("client", argv, ns=topology.client)
    h.wait_client_up(topology, client)
    h.wait_for(lambda: "rejected the username or password" in client.log.read_text(errors="replace"), 5,
               what="the log to say the credentials were rejected")
    closed_port_is_refused_fast = time.monotonic()
    s = topology.socket(topology.client)
    s.settimeout(5)
    try:
        err = s.connect_ex((netns.SERVER_V4, h.HTTP_PORT))
    finally:
        s.close()
    assert err == errno.ECONNREFUSED and time.monotonic() - closed_port_is_refused_fast < 1, "refused at once while the server refuses us"
    assert "wrong" not in client.log.read_text(errors="replace"), "the password is never logged"
