"""Split DNS over the resolver file (`--dns-domain`, no systemd-resolved): names within the domains go
to the `--dns` resolver through the relay; every other name goes to the host's own resolver — here
one on the client's local network, which the relay cannot reach — straight from the client, and
/etc/resolv.conf is never touched. With and without `--route-all`. (test_resolved.py does the same
with systemd-resolved.)
"""

from __future__ import annotations

import pytest

import harness as h
import mountns
import netns
import resolvers

pytestmark = pytest.mark.sluice

# The host's resolver before the tunnel: the LAN one.
LAN_RESOLV = f"# e2e\nnameserver {resolvers.LAN_RESOLVER}\noptions timeout:2 attempts:1\n"


@pytest.fixture
def desk(request, runner):
    try:
        return resolvers.make_desk(request, runner, lambda topo: mountns.MountJail(topo.client, runner.workdir, LAN_RESOLV))
    except RuntimeError as e:
        if "regular file" in str(e):
            pytest.skip(str(e))
        raise


@pytest.mark.parametrize("routing", ["route-all", "routes"])
def test_split_dns_over_the_resolver_file(desk, routing):
    extra = ["--route-all", "--no-ipv6"] if routing == "route-all" else ["--route", netns.SERVER_NET_V4]
    desk.up(["--dns-domain", "corp.test", "--resolver", "file", *extra])
    assert "DNS follows --dns through the resolver file for corp.test" in h.tail(desk.client.log, 200)

    desk.assert_answered_through_tunnel("a.corp.test", desk.getent("a.corp.test"))
    desk.assert_answered_on_the_lan("www.lan.test", desk.getent("www.lan.test"))
    # Any resolver the application names: a corp.test query to the LAN resolver is taken to the
    # tunnel's (and answered as if from the LAN resolver); another name to it stays on the LAN.
    dig = desk.topo.exec(desk.topo.client, ["dig", f"@{resolvers.LAN_RESOLVER}", "b.corp.test", "+short", "+time=3", "+tries=1"])
    desk.assert_answered_through_tunnel("b.corp.test", dig)
    dig = desk.topo.exec(desk.topo.client, ["dig", f"@{resolvers.LAN_RESOLVER}", "mail.lan.test", "+short", "+time=3", "+tries=1"])
    desk.assert_answered_on_the_lan("mail.lan.test", dig)
    assert desk.jail.resolv() == LAN_RESOLV, "split DNS leaves /etc/resolv.conf alone"

    assert desk.client.stop(timeout=10) == 0
    assert desk.jail.state_files() == []


def test_resolver_resolved_needs_a_running_resolved(desk):
    """`--resolver resolved` where no systemd-resolved runs: exit 1, one line that says so, nothing
    installed."""
    before = h.net_state(desk.topo, desk.topo.client)
    cp = desk.jail.run(desk.argv(["--route-all", "--no-ipv6", "--resolver", "resolved"]), timeout=20)
    assert cp.returncode == 1, f"exit {cp.returncode}: {cp.stderr}"
    errors = [l for l in cp.stderr.splitlines() if l.startswith("sluice:")]
    assert len(errors) == 1 and "systemd-resolved is not running" in errors[0] and "--resolver file" in errors[0], cp.stderr
    assert h.state_diff(before, h.net_state(desk.topo, desk.topo.client)) == []
    assert desk.jail.state_files() == []
