"""`sluice up --upstream socks5://… --route-all --kill-switch`: with a SOCKS5 server (danted) as the
upstream, all traffic and DNS still go through the tunnel, the SOCKS sockets (TCP and the UDP
association's) carry the fwmark and pass the kill switch, nothing else leaves, and SIGTERM leaves
the host exactly as before. The router layout and its fixture come from test_route_all.
"""

import re

import pytest

import harness as h
import netns
import socksservers
from test_route_all import DNS_NAME, ORIGINAL_RESOLV, dns_queries, routed  # noqa: F401  (routed is a fixture)

pytestmark = pytest.mark.sluice


def test_route_all_and_kill_switch_through_danted(routed):
    r = routed
    r.relay.stop()  # the relay's port stays unused: the SOCKS5 server is the way out here
    socksservers.start_danted(r.runner, r.topo, auth=False, address=netns.RELAY_ROUTED_V4)
    before = r.snapshot()
    argv = [h.sluice_bin(), "up", "--upstream", f"socks5://{netns.RELAY_ROUTED_V4}:{socksservers.SOCKS_PORT}", "--tun", h.TUN,
            "--route-all", "--kill-switch", "--dns", netns.SERVER_V4, "--log-level", "debug"]
    for a in h.CLIENT_ADDRESSES:
        argv += ["--address", a]
    r.client = r.runner.start("client", r.jail.argv(argv))
    h.wait_client_up(r.topo, r.client)
    h.wait_for(lambda: r.peer(netns.SERVER_V4, timeout=2) is not None, 15, interval=0.2, what="a first request through danted")
    r.reset_counters()
    assert r.peer(netns.SERVER_V4) == netns.RELAY_SERVER_SIDE_V4, "IPv4 went through danted"
    assert r.peer(netns.SERVER_V6) == netns.RELAY_SERVER_SIDE_V6, "IPv6 went through danted"
    # DNS: the resolver file names --dns, and the query travels as a datagram of a UDP association
    # (marked, past the kill switch) to danted, which sends it on to the resolver.
    assert re.findall(r"(?m)^nameserver (\S+)$", r.jail.resolv()) == [netns.SERVER_V4]
    cp = r.jail.run(["getent", "ahostsv4", DNS_NAME])
    assert cp.returncode == 0 and netns.SERVER_V4 in cp.stdout, f"getent: {cp.returncode} {cp.stdout!r} {cp.stderr!r}\n{h.tail(r.client.log)}"
    queries = [q for q in dns_queries(r) if q["name"] == DNS_NAME]
    assert queries and {q["peer"] for q in queries} == {netns.RELAY_SERVER_SIDE_V4}, queries
    # The kill switch holds: the local network is blocked, and no DNS packet went past the tunnel.
    assert r.peer(netns.ROUTER_CLIENT_SIDE_V4, timeout=2) is None, "the kill switch blocks the local network"
    counts = r.counters()
    assert counts["dns"] == 0, f"DNS left outside the tunnel: {counts}"
    assert r.client.stop(timeout=10) == 0
    after = r.snapshot()
    assert h.state_diff(before, after) == [], "not exactly as before sluice up"
    assert after["resolv"] == [ORIGINAL_RESOLV]
