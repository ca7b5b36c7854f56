"""Data through the tunnel: bulk transfers both ways over IPv4 and IPv6, many concurrent
connections, refused connections, and a relay/client configured from JSON files.

Content is checked by sha256 at both ends, and the server's record of the peer address shows that
traffic came out of the relay (sluice mode) rather than straight from the client.
"""

import errno
import json
import re
import signal
import socket
import time

import pytest

import content
import harness as h
import netns
from conftest import record_throughput

SIZE = 64 * content.MiB
FAMILIES = ["ipv4", "ipv6"]



def server_events(t, **match) -> list[dict]:
    return [e for e in t.servers.events() if all(e.get(k) == v for k, v in match.items())]


@pytest.mark.parametrize("family", FAMILIES)
def test_download_64mib(make_tunnel, family):
    t = make_tunnel()
    out = t.runner.workdir / "download.bin"
    path = f"/bytes/{SIZE}"
    r = h.curl(t.topo, ["-o", str(out), h.url(t.topo, family, path)], max_time=90)
    assert r.ok, f"curl failed ({r.returncode}): {r.stderr}"
    assert out.stat().st_size == SIZE
    assert content.file_sha256(out) == content.sha256(SIZE), "downloaded content differs from what the server sent"
    seen = server_events(t, method="GET", path=path)
    assert [e["peer"] for e in seen] == [t.topo.expected_peer(family)]
    assert seen[0]["bytes_out"] == SIZE
    record_throughput(f"download 64 MiB {family} ({t.mode})", SIZE, r.info["time_total"])


@pytest.mark.parametrize("family", FAMILIES)
def test_upload_64mib(make_tunnel, family):
    t = make_tunnel()
    src = t.runner.workdir / "upload.bin"
    digest = content.write_file(str(src), SIZE)
    reply = t.runner.workdir / "reply.json"
    r = h.curl(t.topo, ["-T", str(src), "-o", str(reply), h.url(t.topo, family, "/upload")], max_time=90)
    assert r.ok, f"curl failed ({r.returncode}): {r.stderr}"
    answer = json.loads(reply.read_text())
    assert answer["bytes"] == SIZE
    assert answer["sha256"] == digest, "the server received different content"
    assert answer["peer"] == t.topo.expected_peer(family)
    assert [e["peer"] for e in server_events(t, method="PUT", path="/upload")] == [t.topo.expected_peer(family)]
    record_throughput(f"upload 64 MiB {family} ({t.mode})", SIZE, r.info["time_total"])


@pytest.mark.e2e_timeout(150)
def test_200_concurrent_connections(make_tunnel):
    t = make_tunnel()
    procs = [p for p in (t.relay, t.client) if p is not None]
    time.sleep(0.5)  # let the readiness probe's connection close
    baseline = {p.name: (h.fd_count(p.pid), h.thread_count(p.pid)) for p in procs}
    conns, size = 200, 256 * 1024
    cp = t.topo.exec(t.topo.client, [h.PY, str(h.HERE / "clients.py"), "concurrent", "--host", netns.SERVER_V4,
                                     "--port", str(h.TCP_PORT), "--conns", str(conns), "--size", str(size),
                                     "--timeout", "60"], timeout=120)
    assert cp.returncode == 0, f"client crashed: {cp.stderr[-2000:]}"
    res = json.loads(cp.stdout)
    if res["failed"]:
        t.servers.proc.signal(signal.SIGUSR1)  # the server's side of the story: what it received and echoed
        time.sleep(1)
        failed_seeds = {int(m) for f in res["failures"] for m in re.findall(r"seed (\d+)", f)}
        view = [e for e in server_events(t, proto="tcp") if e.get("seed") in failed_seeds or "error" in e]
        pytest.fail(f"{res['failed']} of {conns} connections failed: {res['failures']}; "
                    f"the server's log of these and of any unfinished one: {view[:20]}")
    assert res["ok"] == conns
    seen = server_events(t, proto="tcp", mode="E")
    assert len(seen) == conns
    assert all(e["ok"] and e["bytes"] == size for e in seen), "the server saw corrupted uploads"
    assert {e["peer"] for e in seen} == {t.topo.expected_peer("ipv4")}
    record_throughput(f"200 conns x 256 KiB both ways ({t.mode})", 2 * conns * size, res["seconds"])
    # Nothing may leak: the relay's and the client's descriptors and threads return to where they were.
    for p in procs:
        fds, threads = baseline[p.name]
        h.wait_for(lambda: h.fd_count(p.pid) <= fds + 2, 10,
                   what=f"sluice {p.name}'s open files to return to {fds}")
        assert h.thread_count(p.pid) <= threads, f"sluice {p.name} has more threads than before: leaked"


@pytest.mark.parametrize("family", FAMILIES)
def test_closed_port_is_refused_within_1s(make_tunnel, family):
    t = make_tunnel()
    fam = socket.AF_INET6 if family == "ipv6" else socket.AF_INET
    s = t.topo.socket(t.topo.client, fam)
    s.settimeout(5)
    t0 = time.monotonic()
    try:
        err = s.connect_ex((t.topo.server_addr(family), h.CLOSED_PORT))
    finally:
        s.close()
    elapsed = time.monotonic() - t0
    assert err == errno.ECONNREFUSED, f"expected ECONNREFUSED, got {errno.errorcode.get(err, err)}"
    assert elapsed < 1.0, f"refusal took {elapsed:.2f} s"


@pytest.mark.sluice
def test_json_configs_and_ipv6_carrier(runner, topology, servers):
    """Relay and client configured only by JSON files; relay on [::]:7000, carrier over IPv6."""
    wd = runner.workdir
    relay_key, client_key = h.make_keypair(wd, "relay"), h.make_keypair(wd, "client")
    (wd / "relay.json").write_text(json.dumps({
        "listen": f"[::]:{h.RELAY_PORT}", "privateKey": str(relay_key.path), "allowClient": [client_key.public]}))
    (wd / "client.json").write_text(json.dumps({
        "relay": f"[{netns.RELAY_CLIENT_SIDE_V6}]:{h.RELAY_PORT}", "relayPublicKey": relay_key.public,
        "privateKey": str(client_key.path), "tun": h.TUN, "address": h.CLIENT_ADDRESSES, "route": h.CLIENT_ROUTES}))
    relay = runner.start("relay", [h.sluice_bin(), "relay", "--config", str(wd / "relay.json")], ns=topology.relay)
    h.wait_relay_listening(topology, relay)
    client = runner.start("client", [h.sluice_bin(), "up", "--config", str(wd / "client.json")], ns=topology.client)
    h.wait_client_up(topology, client)
    for family in FAMILIES:
        out = wd / f"{family}.bin"
        size = content.MiB + 17
        deadline = time.monotonic() + 15
        while True:  # the first request may race the carrier's handshake
            r = h.curl(topology, ["-o", str(out), h.url(topology, family, f"/bytes/{size}")], max_time=5)
            if r.ok or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert r.ok, f"{family}: curl failed ({r.returncode}): {r.stderr}"
        assert content.file_sha256(out) == content.sha256(size)
    peers = {e["peer"] for e in servers.events() if e.get("method") == "GET"}
    assert peers == {netns.RELAY_SERVER_SIDE_V4, netns.RELAY_SERVER_SIDE_V6}
