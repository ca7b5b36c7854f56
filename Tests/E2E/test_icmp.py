"""ICMP echo through the TUN, with the real ping.

Sluice does not carry ICMP to the destination: `sluice up` answers echo requests for the routed
prefixes itself. So a ping through the tunnel proves that the TUN path works, not that the host is
up — an address with no host at all inside a routed prefix answers too (the second test documents
that). In kernel mode the server answers, and an address with no host does not.
"""

import pytest

import harness as h

FAMILIES = {"ipv4": "-4", "ipv6": "-6"}


def ping(t, family: str, addr: str):
    return t.topo.exec(t.topo.client, ["ping", FAMILIES[family], "-c", "3", "-i", "0.2", "-W", "2", "-w", "10",
                                       addr], timeout=20)


def tun_packets(t) -> tuple[int, int]:
    stats = t.topo.ip_json(t.topo.client, "-s", "link", "show", "dev", h.TUN)[0]["stats64"]
    return stats["rx"]["packets"], stats["tx"]["packets"]


@pytest.mark.parametrize("family", FAMILIES)
def test_ping_the_server(make_tunnel, family):
    """ping -c 3 to the server's address succeeds; in sluice mode the requests and replies crossed
    the TUN (its counters moved by at least three each way)."""
    t = make_tunnel()
    before = tun_packets(t) if t.mode == "sluice" else None
    cp = ping(t, family, t.topo.server_addr(family))
    assert cp.returncode == 0, f"ping exited {cp.returncode}: {cp.stdout[-800:]} {cp.stderr}"
    assert "3 received" in cp.stdout, cp.stdout
    if before is not None:
        rx, tx = tun_packets(t)
        assert rx - before[0] >= 3 and tx - before[1] >= 3, "the pings did not cross the TUN"


@pytest.mark.sluice
@pytest.mark.parametrize("family", FAMILIES)
def test_ping_an_address_without_a_host_is_answered_locally(make_tunnel, family):
    """10.20.0.99 and fd20::99 exist nowhere, but lie inside routed prefixes: the client answers the
    echo requests itself, so ping succeeds (in kernel mode it would fail)."""
    t = make_tunnel()
    cp = ping(t, family, "fd20::99" if family == "ipv6" else "10.20.0.99")
    assert cp.returncode == 0, f"ping exited {cp.returncode}: {cp.stdout[-800:]} {cp.stderr}"
    assert "3 received" in cp.stdout, cp.stdout
