"""The DNS world of the resolver tests, in the "router" layout (netns.py): a resolver on the client's
local network (in the router namespace, at 10.10.0.254, where the relay cannot reach it) and a
resolver only the tunnel reaches (in the server namespace, 10.20.0.2). Both are fake_resolver.py: each
knows only its own zones, answers NXDOMAIN for every other name, and logs every query with its peer,
so a test sees which resolver answered and whether a query came from the relay or straight from the
client.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import harness as h
import mountns
import netns

LAN_RESOLVER = netns.ROUTER_CLIENT_SIDE_V4
LAN_ZONE = "lan.test"
LAN_ANSWER = netns.OUTSIDE_V4
TUNNEL_RESOLVER = netns.SERVER_V4
TUNNEL_ZONES = ("tunnel.test", "corp.test")
TUNNEL_ANSWER = netns.SERVER_V4


@dataclass
class FakeResolver:
    proc: h.Proc
    log: Path

    def queries(self, name: str | None = None) -> list[dict]:
        """Every query logged ({"peer", "name", "type", "transport"}), or those for `name`."""
        try:
            found = [json.loads(l) for l in self.log.read_text().splitlines() if l.strip()]
        except FileNotFoundError:
            return []
        return [q for q in found if name is None or q["name"] == name]

    def wait(self, name: str, timeout: float = 5) -> list[dict]:
        return h.wait_for(lambda: self.queries(name), timeout, what=f"a query for {name}")


def start_resolver(runner: h.Runner, ns: str, name: str, a: str, aaaa: str = "", zones=()) -> FakeResolver:
    """fake_resolver.py in `ns` on port 53, answering A with `a` (AAAA with `aaaa`) for names in
    `zones` (every name without zones)."""
    ready = runner.workdir / f"{name}-ready"
    log = runner.workdir / f"{name}.jsonl"
    argv = [h.PY, str(h.HERE / "fake_resolver.py"), "--log", str(log), "--ready-file", str(ready), "--a", a, "--aaaa", aaaa]
    for zone in zones:
        argv += ["--zone", zone]
    proc = runner.start(name, argv, ns=ns)
    h.wait_for(lambda: ready.exists() or not proc.alive(), 30, what=f"the {name} resolver")
    if not proc.alive():
        raise RuntimeError(f"fake_resolver.py ({name}) exited:\n{h.tail(proc.log)}")
    return FakeResolver(proc, log)


def start_lan_and_tunnel_resolvers(runner: h.Runner, topo: netns.Topology) -> tuple[FakeResolver, FakeResolver]:
    lan = start_resolver(runner, topo.router, "lan-resolver", LAN_ANSWER, zones=[LAN_ZONE])
    tunnel = start_resolver(runner, topo.server, "tunnel-resolver", TUNNEL_ANSWER, zones=TUNNEL_ZONES)
    return lan, tunnel


@dataclass
class Desk:
    """A client host in the router layout with both resolvers, a relay and a jail for `sluice up`
    (mountns.MountJail with a resolv.conf naming the LAN resolver, or resolvedns.ResolvedJail)."""

    topo: netns.Topology
    runner: h.Runner
    jail: object
    relay_key: h.KeyPair
    client_key: h.KeyPair
    lan: FakeResolver
    tunnel: FakeResolver
    client: h.Proc | None = None

    def argv(self, extra=()) -> list[str]:
        return [h.sluice_bin(), "up", "--relay", f"{netns.RELAY_ROUTED_V4}:{h.RELAY_PORT}", "--relay-public-key",
                self.relay_key.public, "--private-key", str(self.client_key.path), "--tun", h.TUN,
                "--address", h.CLIENT_ADDRESSES[0], "--dns", TUNNEL_RESOLVER, "--log-level", "debug", *extra]

    def up(self, extra=()) -> h.Proc:
        """Starts `sluice up` inside the jail and waits for a first request through the tunnel."""
        self.client = self.runner.start("client", self.jail.argv(self.argv(extra)))
        h.wait_client_up(self.topo, self.client)
        url = f"http://{netns.SERVER_V4}:{h.HTTP_PORT}/bytes/1"
        h.wait_for(lambda: self.topo.exec(self.topo.client, ["curl", "-sS", "--noproxy", "*", "--max-time", "2", "-o", "/dev/null", url],
                                          env=h.clean_env()).returncode == 0 or not self.client.alive(),
                   15, interval=0.2, what="a first request through the tunnel")
        assert self.client.alive(), f"sluice up exited:\n{h.tail(self.client.log)}"
        return self.client

    def down(self):
        return self.jail.run([h.sluice_bin(), "down", "--tun", h.TUN], timeout=30)

    def getent(self, name: str):
        """`getent hosts NAME` inside the jail: glibc through /etc/resolv.conf."""
        return self.jail.run(["getent", "hosts", name])

    def assert_answered_through_tunnel(self, name: str, answer) -> None:
        """`answer` (a CompletedProcess) carries the tunnel resolver's address for `name`, and the
        tunnel resolver saw the query come from the relay, never the LAN resolver."""
        assert answer.returncode == 0 and TUNNEL_ANSWER in answer.stdout, f"{name}: {answer.returncode} {answer.stdout!r} {answer.stderr!r}"
        assert {q["peer"] for q in self.tunnel.wait(name)} == {netns.RELAY_SERVER_SIDE_V4}, self.tunnel.queries(name)
        assert self.lan.queries(name) == [], f"the LAN resolver saw {name}"

    def assert_answered_on_the_lan(self, name: str, answer) -> None:
        """`answer` carries the LAN resolver's address for `name`, which the LAN resolver got straight
        from the client (not through the relay); the tunnel resolver never saw it."""
        assert answer.returncode == 0 and LAN_ANSWER in answer.stdout, f"{name}: {answer.returncode} {answer.stdout!r} {answer.stderr!r}"
        assert {q["peer"] for q in self.lan.wait(name)} == {netns.CLIENT_V4}, self.lan.queries(name)
        assert self.tunnel.queries(name) == [], f"the tunnel resolver saw {name}"


def make_desk(request, runner: h.Runner, make_jail) -> Desk:
    """The desk of the module doc; `make_jail(topo)` makes the jail. Everything goes in finalizers,
    which also check that this machine's own /etc/resolv.conf never changed."""
    host_resolv = mountns.host_resolv_fingerprint()
    topo = netns.Topology(mode="sluice", tag="e2e", layout="router")
    jails = []

    def finish() -> None:
        runner.close()
        for jail in jails:
            jail.close()
        topo.destroy()
        assert mountns.host_resolv_fingerprint() == host_resolv, "this machine's /etc/resolv.conf changed"

    request.addfinalizer(finish)
    topo.create()
    h.start_servers(runner, topo, pregen_mib=1)
    lan, tunnel = start_lan_and_tunnel_resolvers(runner, topo)
    relay_key = h.make_keypair(runner.workdir, "relay")
    client_key = h.make_keypair(runner.workdir, "client")
    relay = runner.start("relay", h.relay_argv(relay_key, [client_key.public]), ns=topo.relay)
    h.wait_relay_listening(topo, relay)
    jails.append(make_jail(topo))
    return Desk(topo, runner, jails[0], relay_key, client_key, lan, tunnel)
