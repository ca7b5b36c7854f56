"""`sluice up` on a host that runs systemd-resolved: a real resolved and a real D-Bus system bus run in
the test's client namespace and a private mount namespace (resolvedns.py), set up as NetworkManager
leaves a laptop: the uplink `to-router` has the local network's resolver (10.10.0.254, in the router
namespace, which the relay cannot reach). Sluice gives the TUN link the `--dns` servers over D-Bus;
resolvectl, glibc through resolved's stub (/etc/resolv.conf names 127.0.0.53) and nss-resolve then
resolve through the tunnel, and the local resolver sees nothing. SIGTERM, and SIGKILL + `sluice
down`, leave `resolvectl status` as it was. With `--dns-domain`, only those names take the tunnel.
"""

from __future__ import annotations

import re

import pytest

import harness as h
import netns
import resolvedns
import resolvers

pytestmark = pytest.mark.sluice

STUB_RESOLV = "# e2e: resolved's stub\nnameserver 127.0.0.53\noptions edns0 trust-ad timeout:2 attempts:1\n"


@pytest.fixture
def desk(request, runner):
    try:
        root = resolvedns.debian_packages()
    except (RuntimeError, OSError) as e:
        pytest.skip(f"no systemd-resolved package to run: {e}")

    def make_jail(topo):
        jail = resolvedns.ResolvedJail(topo.client, runner.workdir, STUB_RESOLV, root)
        runner.logs.update(jail.logs)
        return jail

    d = resolvers.make_desk(request, runner, make_jail)
    # What NetworkManager would do: the uplink's DNS server is the local network's resolver. The
    # premise: resolved answers from it before Sluice is up.
    assert d.jail.resolvectl("dns", "to-router", resolvers.LAN_RESOLVER).returncode == 0
    d.assert_answered_on_the_lan("before.lan.test", d.jail.resolvectl("query", "before.lan.test"))
    return d


def link_status(d, link: str) -> str:
    return d.jail.resolvectl("status", link, "--no-pager").stdout


def test_route_all_sends_every_resolver_path_through_the_tunnel(desk):
    d = desk
    before = d.jail.status()
    lan_queries = len(d.lan.queries())
    d.up(["--route-all", "--no-ipv6"])  # --resolver auto: resolved runs, so it is used
    log = h.tail(d.client.log, 200)
    assert "DNS follows --dns through systemd-resolved" in log, log
    status = link_status(d, h.TUN)
    assert re.search(r"DNS Servers: 10\.20\.0\.2\b", status) and "DNS Domain: ~." in status and "+DefaultRoute" in status, status

    d.assert_answered_through_tunnel("resolvectl.tunnel.test", d.jail.resolvectl("query", "resolvectl.tunnel.test"))
    d.assert_answered_through_tunnel("stub.tunnel.test", d.getent("stub.tunnel.test"))
    d.assert_answered_through_tunnel("nss.tunnel.test", d.jail.getent_nss_resolve("hosts", "nss.tunnel.test"))
    # A local-network name no longer resolves: nothing goes to the local resolver any more.
    assert d.jail.resolvectl("query", "after.lan.test").returncode != 0
    assert len(d.lan.queries()) == lan_queries, f"the local resolver was asked: {d.lan.queries()[lan_queries:]}"
    assert d.jail.resolv() == STUB_RESOLV, "/etc/resolv.conf is left alone with resolved"

    assert d.client.stop(timeout=10) == 0
    assert "undid: set DNS of link sluice0" in h.tail(d.client.log, 200), "RevertLink was not called"
    assert d.jail.status() == before
    assert d.jail.state_files() == []
    d.assert_answered_on_the_lan("again.lan.test", d.jail.resolvectl("query", "again.lan.test"))


def test_sigkill_then_down_leaves_resolved_as_before(desk):
    d = desk
    before = d.jail.status()
    d.up(["--route-all", "--no-ipv6"])
    assert "~." in link_status(d, h.TUN)
    d.client.kill()
    cp = d.down()
    assert cp.returncode == 0, f"sluice down exited {cp.returncode}: {cp.stderr}"
    assert d.jail.status() == before
    assert d.jail.state_files() == []
    d.assert_answered_on_the_lan("after-crash.lan.test", d.jail.resolvectl("query", "after-crash.lan.test"))


@pytest.mark.parametrize("routing", ["routes", "route-all"])
def test_split_dns_with_resolved(desk, routing):
    d = desk
    extra = ["--route-all", "--no-ipv6"] if routing == "route-all" else ["--route", netns.SERVER_NET_V4]
    d.up(["--dns-domain", "corp.test", *extra])
    status = link_status(d, h.TUN)
    assert "DNS Domain: ~corp.test" in status and "-DefaultRoute" in status, status

    d.assert_answered_through_tunnel("a.corp.test", d.jail.resolvectl("query", "a.corp.test"))
    d.assert_answered_through_tunnel("b.corp.test", d.getent("b.corp.test"))
    d.assert_answered_on_the_lan("www.lan.test", d.jail.resolvectl("query", "www.lan.test"))
    d.assert_answered_on_the_lan("mail.lan.test", d.getent("mail.lan.test"))
    assert d.client.stop(timeout=10) == 0
