"""`sluice up --route-all`: all of the client's traffic, IPv4 and IPv6, and its DNS through the relay;
`--exclude`, `--no-ipv6`, `--kill-switch`; and that SIGTERM, or SIGKILL plus `sluice down`, leave
rules, routes, nftables and the resolver file exactly as they were.

Runs in the "router" layout (netns.py): the client's default route goes to a router namespace,
which reaches the relay's network but not the server's, so the server is reachable only through
Sluice, and every packet the client sends can be counted at the router. The client runs in a mount
jail (mountns.py): it rewrites a bind-mounted copy of /etc/resolv.conf, never the machine's own.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from dataclasses import dataclass

import pytest

import harness as h
import mountns
import netns
import resolvers

pytestmark = pytest.mark.sluice

RELAY = f"{netns.RELAY_ROUTED_V4}:{h.RELAY_PORT}"
DNS = [netns.SERVER_V4, netns.SERVER_V6]  # the fake resolver runs in the server namespace
DNS_NAME = "www.sluice.test"
# The resolver the client had before: the router, on its locally attached network. A query that
# went there would leave outside the tunnel.
ORIGINAL_RESOLV = f"# e2e original\nnameserver {netns.ROUTER_CLIENT_SIDE_V4}\nsearch e2e.test\noptions timeout:1 attempts:1\n"

COUNTERS = f"""
table inet e2ecount {{
    counter relay {{}}
    counter nd {{}}
    counter dns {{}}
    counter other {{}}
    counter ipv6 {{}}
    chain pre {{
        type filter hook prerouting priority -300; policy accept;
        iifname "to-client" ip daddr {netns.RELAY_ROUTED_V4} tcp dport {h.RELAY_PORT} counter name "relay" accept
        iifname "to-client" icmpv6 type {{ nd-router-solicit, nd-neighbor-solicit, nd-neighbor-advert }} counter name "nd" accept
        iifname "to-client" udp dport 53 counter name "dns"
        iifname "to-client" tcp dport 53 counter name "dns"
        iifname "to-client" meta nfproto ipv6 counter name "ipv6"
        iifname "to-client" counter name "other"
    }}
}}
"""


@dataclass
class Routed:
    topo: netns.Topology
    runner: h.Runner
    jail: mountns.MountJail
    relay_key: h.KeyPair
    client_key: h.KeyPair
    relay: h.Proc
    dns_log: object
    client: h.Proc | None = None

    def argv(self, extra=(), addresses=tuple(h.CLIENT_ADDRESSES), dns=tuple(DNS), relay=RELAY) -> list[str]:
        argv = [h.sluice_bin(), "up", "--relay", relay, "--relay-public-key", self.relay_key.public,
                "--private-key", str(self.client_key.path), "--tun", h.TUN, "--route-all"]
        for a in addresses:
            argv += ["--address", a]
        for d in dns:
            argv += ["--dns", d]
        return argv + ["--log-level", "debug", *extra]

    def up(self, extra=(), wait: bool = True, **kw) -> h.Proc:
        self.client = self.runner.start("client", self.jail.argv(self.argv(extra, **kw)))
        h.wait_client_up(self.topo, self.client)
        if wait:
            h.wait_for(lambda: self.peer(netns.SERVER_V4, timeout=2) is not None, 15, interval=0.2,
                       what="a first request through the tunnel")
        return self.client

    def peer(self, host: str, timeout: float = 3) -> str | None:
        """The address the HTTP server at `host` saw the client come from, or None if unreachable."""
        url = f"http://{self.topo.url_host(host)}:{h.HTTP_PORT}/peer"
        cp = self.topo.exec(self.topo.client, ["curl", "-sS", "-g", "--noproxy", "*", "--max-time", str(timeout),
                                               "--connect-timeout", str(timeout), url],
                            timeout=timeout + 10, env=h.clean_env())
        return h.peer_seen(cp)

    def down(self) -> subprocess.CompletedProcess:
        return self.jail.run([h.sluice_bin(), "down", "--tun", h.TUN], timeout=30)

    def snapshot(self) -> dict:
        state = h.net_state(self.topo, self.topo.client)
        state["nft"] = [self.topo.exec(self.topo.client, ["nft", "list", "ruleset"], check=True).stdout]
        state["resolv"] = [self.jail.resolv()]
        state["state_files"] = self.jail.state_files()
        return state

    def counters(self) -> dict:
        out = self.topo.exec(self.topo.router, ["nft", "-j", "list", "counters", "table", "inet", "e2ecount"],
                             check=True).stdout
        found = {}
        for item in json.loads(out)["nftables"]:
            c = item.get("counter")
            if c:
                found[c["name"]] = c["packets"]
        return found

    def reset_counters(self) -> None:
        self.topo.exec(self.topo.router, ["nft", "reset", "counters", "table", "inet", "e2ecount"], check=True)


@pytest.fixture
def routed(request, runner):
    host_resolv = mountns.host_resolv_fingerprint()
    topo = netns.Topology(mode="sluice", tag="e2e", layout="router")
    jail = None

    def finish() -> None:
        runner.close()
        if jail is not None:
            jail.close()
        topo.destroy()
        assert mountns.host_resolv_fingerprint() == host_resolv, "this machine's /etc/resolv.conf changed"

    request.addfinalizer(finish)
    topo.create()
    topo.exec(topo.router, ["nft", "-f", "-"], input=COUNTERS, check=True)
    h.start_servers(runner, topo)  # HTTP in the server namespace
    ready = runner.workdir / "router-servers-ready.json"
    router_http = runner.start("router-servers", [h.PY, str(h.HERE / "servers.py"), "--http-port", str(h.HTTP_PORT),
                                                  "--tcp-port", str(h.TCP_PORT), "--log", str(runner.workdir / "router-events.jsonl"),
                                                  "--ready-file", str(ready), "--pregen-mib", "1"], ns=topo.router)
    dns = resolvers.start_resolver(runner, topo.server, "resolver", netns.SERVER_V4, netns.SERVER_V6)
    h.wait_for(lambda: ready.exists() or not router_http.alive(), 30, what="the router's HTTP server")
    assert router_http.alive(), "the router's HTTP server did not start"
    relay_key = h.make_keypair(runner.workdir, "relay")
    client_key = h.make_keypair(runner.workdir, "client")
    relay = runner.start("relay", h.relay_argv(relay_key, [client_key.public]), ns=topo.relay)
    h.wait_relay_listening(topo, relay)
    try:
        jail = mountns.MountJail(topo.client, runner.workdir, ORIGINAL_RESOLV)
    except RuntimeError as e:
        pytest.skip(str(e))
    return Routed(topo, runner, jail, relay_key, client_key, relay, dns.log)


def dns_queries(r: Routed) -> list[dict]:
    try:
        return [json.loads(l) for l in r.dns_log.read_text().splitlines() if l.strip()]
    except FileNotFoundError:
        return []


def rules(r: Routed, family: str) -> list[str]:
    return [l.strip() for l in r.topo.exec(r.topo.client, ["ip", family, "rule"], check=True).stdout.splitlines()]


def test_route_all_carries_ipv4_ipv6_and_dns(routed):
    r = routed
    r.up()
    r.reset_counters()
    assert r.peer(netns.SERVER_V4) == netns.RELAY_SERVER_SIDE_V4, "IPv4 did not come from the relay"
    assert r.peer(netns.SERVER_V6) == netns.RELAY_SERVER_SIDE_V6, "IPv6 did not come from the relay"
    # The locally attached network keeps working, directly (wg-quick's suppress_prefixlength rule) ...
    assert r.peer(netns.ROUTER_CLIENT_SIDE_V4) == netns.CLIENT_V4
    assert r.peer(netns.ROUTER_CLIENT_SIDE_V6) == netns.CLIENT_V6
    # ... but everything beyond the router goes through the relay, which cannot reach "outside".
    assert r.peer(netns.OUTSIDE_V4, timeout=2) is None
    assert r.peer(netns.OUTSIDE_V6, timeout=2) is None

    resolv = r.jail.resolv()
    assert re.findall(r"(?m)^nameserver (\S+)$", resolv) == DNS, resolv
    for kind, expected in (("ahostsv4", netns.SERVER_V4), ("ahostsv6", netns.SERVER_V6)):
        cp = r.jail.run(["getent", kind, DNS_NAME])
        assert cp.returncode == 0 and expected in cp.stdout, f"getent {kind}: {cp.returncode} {cp.stdout!r} {cp.stderr!r}"
    queries = [q for q in dns_queries(r) if q["name"] == DNS_NAME]
    assert queries, "the resolver saw no query"
    assert {q["peer"] for q in queries} <= {netns.RELAY_SERVER_SIDE_V4, netns.RELAY_SERVER_SIDE_V6}, queries
    counts = r.counters()
    assert counts["dns"] == 0, f"{counts['dns']} DNS packets left through the physical interface"

    for family in ("-4", "-6"):
        have = rules(r, family)
        for expected in (f"21321:\tfrom all fwmark {h.FWMARK} lookup main",
                         "21323:\tfrom all lookup main suppress_prefixlength 0",
                         f"21324:\tnot from all fwmark {h.FWMARK} lookup {h.TABLE}"):
            assert expected in have, f"ip {family} rule lacks {expected!r}: {have}"


def test_exclude_bypasses_the_tunnel(routed):
    r = routed
    r.up(["--exclude", netns.OUTSIDE_NET_V4, "--exclude", netns.OUTSIDE_NET_V6])
    assert r.peer(netns.OUTSIDE_V4) == netns.CLIENT_V4, "the excluded IPv4 prefix should be reached directly"
    assert r.peer(netns.OUTSIDE_V6) == netns.CLIENT_V6, "the excluded IPv6 prefix should be reached directly"
    assert r.peer(netns.SERVER_V4) == netns.RELAY_SERVER_SIDE_V4, "everything else still goes through the relay"
    routes = r.topo.exec(r.topo.client, ["ip", "route", "show", "table", h.TABLE], check=True).stdout
    assert f"throw {netns.OUTSIDE_NET_V4}" in routes, routes


def test_no_ipv6_blocks_ipv6(routed):
    r = routed
    r.up(["--no-ipv6"], addresses=[h.CLIENT_ADDRESSES[0]], dns=[netns.SERVER_V4])
    r.reset_counters()
    t0 = time.monotonic()
    assert r.peer(netns.SERVER_V6, timeout=5) is None
    assert r.peer(netns.ROUTER_CLIENT_SIDE_V6, timeout=5) is None, "IPv6 on the local network is blocked too"
    assert time.monotonic() - t0 < 5, "blocked IPv6 should fail at once (rejected), not time out"
    assert r.peer(netns.SERVER_V4) == netns.RELAY_SERVER_SIDE_V4, "IPv4 still goes through the tunnel"
    counts = r.counters()
    assert counts["ipv6"] == 0, f"{counts['ipv6']} IPv6 packets reached the router"


def test_kill_switch_lets_nothing_out_while_the_relay_is_down(routed):
    r = routed
    r.up(["--kill-switch"])
    assert r.peer(netns.SERVER_V4) == netns.RELAY_SERVER_SIDE_V4, "the tunnel works with the kill switch on"
    assert r.peer(netns.ROUTER_CLIENT_SIDE_V4, timeout=2) is None, "the kill switch blocks the local network"
    r.relay.stop()
    time.sleep(0.5)
    r.reset_counters()
    # Try every way out: through the tunnel, the local network, the excluded-looking outside, DNS, ping.
    for host in (netns.SERVER_V4, netns.SERVER_V6, netns.ROUTER_CLIENT_SIDE_V4, netns.ROUTER_CLIENT_SIDE_V6,
                 netns.OUTSIDE_V4, netns.OUTSIDE_V6):
        assert r.peer(host, timeout=1) is None, f"{host} reachable with the relay down and the kill switch on"
    r.jail.run(["timeout", "3", "getent", "ahostsv4", DNS_NAME], timeout=15)
    r.topo.exec(r.topo.client, ["ping", "-c", "1", "-W", "1", netns.ROUTER_CLIENT_SIDE_V4])
    r.topo.exec(r.topo.client, ["ping", "-c", "1", "-W", "1", netns.ROUTER_CLIENT_SIDE_V6])
    time.sleep(1.5)  # the carriers keep redialling the relay meanwhile
    counts = r.counters()
    assert counts["other"] == 0 and counts["ipv6"] == 0 and counts["dns"] == 0, f"packets leaked to the router: {counts}"
    assert counts["relay"] > 0, f"the carriers should still redial the relay (and be let through): {counts}"
    assert r.client.alive()


def test_sigterm_restores_everything(routed):
    r = routed
    before = r.snapshot()
    r.up(["--kill-switch", "--exclude", netns.OUTSIDE_NET_V4])
    during = r.snapshot()
    assert "table inet sluice" in during["nft"][0]
    assert during["resolv"] != before["resolv"] and during["rules4"] != before["rules4"] and during["rules6"] != before["rules6"]
    # The crash record, the resolver backup and the control socket (sluice status).
    assert during["state_files"] == [f"{h.TUN}.json", f"{h.TUN}.resolv.conf", f"{h.TUN}.sock"], during["state_files"]
    assert r.client.stop(timeout=10) == 0
    after = r.snapshot()
    assert h.state_diff(before, after) == [], "not exactly as before sluice up"
    assert after["resolv"] == [ORIGINAL_RESOLV]


def test_sigkill_then_down_restores_everything(routed):
    r = routed
    before = r.snapshot()
    r.up(["--kill-switch", "--exclude", netns.OUTSIDE_NET_V4])
    r.client.kill()
    left = r.snapshot()
    assert "table inet sluice" in left["nft"][0], "the kill switch must outlive a crash"
    assert left["resolv"] != before["resolv"]
    assert r.peer(netns.ROUTER_CLIENT_SIDE_V4, timeout=2) is None, "still nothing gets out after the crash"
    cp = r.down()
    assert cp.returncode == 0, f"sluice down exited {cp.returncode}: {cp.stderr}"
    after = r.snapshot()
    assert h.state_diff(before, after) == [], "not exactly as before sluice up"
    assert r.peer(netns.ROUTER_CLIENT_SIDE_V4) == netns.CLIENT_V4
    cp = r.down()
    assert cp.returncode == 1 and "nothing to take down" in cp.stderr, "a second down has nothing to do"


def test_up_after_a_crash_cleans_up_first(routed):
    r = routed
    before = r.snapshot()
    r.up(["--exclude", netns.OUTSIDE_NET_V4])
    r.client.kill()
    r.up(["--exclude", netns.OUTSIDE_NET_V4])
    assert "did not stop normally" in h.tail(r.client.log, 200)
    assert r.client.stop(timeout=10) == 0
    assert h.state_diff(before, r.snapshot()) == []


def test_down_stops_a_running_up(routed):
    r = routed
    before = r.snapshot()
    r.up(wait=False)
    # `down` finds the tunnel through its state record, written just after the TUN appears: before
    # it, "no tunnel recorded" is the right answer, not the one this test is about.
    h.wait_for(lambda: f"{h.TUN}.json" in r.jail.state_files(), 10, interval=0.05, what="the state record")
    cp = r.down()
    assert cp.returncode == 0, f"sluice down exited {cp.returncode}: {cp.stderr}"
    r.client.popen.wait(10)
    assert r.client.popen.returncode == 0
    assert h.state_diff(before, r.snapshot()) == []


def test_relay_without_a_route_fails_cleanly(routed):
    r = routed
    r.topo.exec(r.topo.client, ["ip", "route", "add", "unreachable", "10.99.0.0/24"], check=True)
    before = r.snapshot()
    cp = r.jail.run(r.argv(relay=f"10.99.0.1:{h.RELAY_PORT}"), timeout=20)
    assert cp.returncode == 1, f"exit {cp.returncode}: {cp.stderr}"
    errors = [l for l in cp.stderr.splitlines() if l.startswith("sluice:")]
    assert len(errors) == 1 and "10.99.0.1" in errors[0] and "route" in errors[0], cp.stderr
    assert h.state_diff(before, r.snapshot()) == [], "something was left installed"
