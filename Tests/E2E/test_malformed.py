"""Malformed packets from the TUN are dropped and never take the client down.

rawpackets.py writes into the TUN's transmit path through a packet socket, so `sluice up` reads the
bytes exactly as built: IPv4 and IPv6 with bad lengths and checksums, unknown protocols, long
extension-header chains, truncated and mislabelled UDP, TCP and ICMP, overlapping and never-completed
fragments, garbage DNS to port 53 (the client runs with --dns), then seeded mutations of all of them.
Afterwards the relay and the client still run, and TCP and UDP still work.
"""

import hashlib
import json

import pytest

import content
import harness as h
import netns


@pytest.mark.sluice
@pytest.mark.e2e_timeout(90)
def test_malformed_packets_from_the_tun_are_dropped(make_tunnel, dns_server):
    t = make_tunnel(client_extra=["--dns", netns.SERVER_V4, "--max-udp-mappings", "64"])
    cp = t.topo.exec(t.topo.client, [h.PY, str(h.HERE / "rawpackets.py"), "inject", "--dev", h.TUN,
                                     "--seconds", "4"], timeout=30)
    assert cp.returncode == 0, f"rawpackets.py failed: {cp.stderr[-2000:]}"
    sent = json.loads(cp.stdout)
    print(f"injected: {sent}")  # the seed reproduces the mutations: rawpackets.py inject --seed N
    assert sent["sent"] > sent["corpus"], f"hardly anything was injected: {sent}"
    t.check_alive()

    out = t.runner.workdir / "after.bin"
    size = content.MiB + 3
    r = h.curl(t.topo, ["-o", str(out), h.url(t.topo, "ipv4", f"/bytes/{size}")], max_time=20)
    assert r.ok, f"a download after the malformed packets failed ({r.returncode}): {r.stderr}; seed {sent['seed']}"
    assert hashlib.sha256(out.read_bytes()).hexdigest() == content.sha256(size)
    for family in ("ipv4", "ipv6"):
        app = h.app_udp_socket(t.topo, family)
        try:
            assert h.udp_echo(app, (t.topo.server_addr(family), h.UDP_PORT))[0] == t.topo.expected_peer(family)
        finally:
            app.close()
    t.check_alive()
