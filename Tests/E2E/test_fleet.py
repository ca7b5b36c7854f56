"""A relay fleet behind HAProxy (Debian's, TCP mode, `send-proxy-v2`), configured as
docs/deployment.md shows: two relays sharing one key pair and allow-list take any carrier, see the
client's real address through the PROXY protocol, and one of them dying leaves new flows going
through the other.

The relays listen on 127.0.0.1:7010 and :7011 in the relay namespace with `--proxy-protocol`; HAProxy
listens on :7000 there; the client knows only 10.10.0.2:7000 and the fleet's one public key.
"""

import pytest

import content
import harness as h
import haproxy
import netns
import relays
from conftest import record_throughput

pytestmark = pytest.mark.sluice

SIZE = 64 * content.MiB


@pytest.mark.e2e_timeout(120)
def test_fleet_behind_haproxy(runner, topology, servers):
    client_key = h.make_keypair(runner.workdir, "client")
    fleet = relays.start_relays(runner, topology, [7010, 7011], client_key, shared_key=True, listen_address="127.0.0.1",
                                extra=["--proxy-protocol"])
    haproxy.start_haproxy(runner, topology)
    argv = h.client_argv(f"{netns.RELAY_CLIENT_SIDE_V4}:{haproxy.PORT}", fleet[0].key.public, client_key, carriers=4)
    relays.start_client(runner, topology, argv)
    h.wait_for(lambda: [r.carriers() for r in fleet] == [2, 2], 10, interval=0.2, what="HAProxy to spread the 4 carriers 2 and 2")

    # Every relay names the client by its own address, not HAProxy's 127.0.0.1, in status and log.
    for r in fleet:
        addresses = r.client()["addresses"]
        assert addresses and all(a.startswith(netns.CLIENT_V4 + ":") for a in addresses), f"{r.name}: {addresses}"
        assert f"from {netns.CLIENT_V4}:" in r.log(), f"{r.name}'s log does not show the client's address"
        stats = r.status()
        assert "proxy-header-invalid" not in stats["drops"] and "handshake-failed" not in stats["drops"], stats["drops"]
        h.wait_for(lambda: r.status()["events"].get("connections-without-data", 0) > 0, 5, interval=0.2,
                   what=f"{r.name} to count HAProxy's health checks as connections without data")

    # 64 MiB through carriers on both relays, intact.
    out = runner.workdir / "download.bin"
    r = h.curl(topology, ["-o", str(out), h.url(topology, "ipv4", f"/bytes/{SIZE}")], max_time=60)
    assert r.ok, f"curl {r.returncode}: {r.stderr}"
    assert content.file_sha256(out) == content.sha256(SIZE)
    record_throughput("download 64 MiB through HAProxy and a relay fleet", SIZE, r.info["time_total"])
    held = [relays.open_echo(topology, timeout=2) for _ in range(4)]
    assert all(held)
    assert all(r.streams() >= 1 for r in fleet), f"streams per relay: {[r.streams() for r in fleet]}"

    # One relay dies: its flows end, new ones go on through the other within a second.
    killed = fleet[0].kill()
    took = relays.first_flow_after(topology, killed, timeout=5)
    assert took <= 1.0, f"a new flow worked only {took:.2f} s after a relay died"
    print(f"a relay killed: a new flow worked after {took * 1000:.0f} ms")
    for s in held:
        s.close()
    h.wait_for(lambda: fleet[1].carriers() == 4, 15, interval=0.2, what="the carriers to come back, all on the surviving relay")
    assert relays.echo_roundtrip(topology)
