"""The network under a running tunnel changes: the client's address on its uplink is replaced and the
default route moves to a second uplink (netns.py's "uplinks" layout: two veth pairs to the relay host,
the relay reached at 10.60.0.1 only through the default route). Sluice notices from the kernel's
announcements, closes the carriers that cannot survive (their flows are reset at once) and redials
over the new path at once, while the TUN, its routes and rules stay.
"""

from __future__ import annotations

import json
import time

import pytest

import harness as h
import netns

pytestmark = [pytest.mark.sluice, pytest.mark.layout("uplinks")]

RELAY = f"{netns.RELAY_SERVICE_V4}:{h.RELAY_PORT}"


def tun_index(topo: netns.Topology) -> int:
    return json.loads(topo.exec(topo.client, ["ip", "-j", "link", "show", "dev", h.TUN], check=True).stdout)[0]["ifindex"]


def test_network_change_redials_at_once(make_tunnel):
    t = make_tunnel(relay_addr=RELAY, client_extra=["--log-level", "debug"])
    topo = t.topo
    index = tun_index(topo)
    rules = topo.exec(topo.client, ["ip", "rule"], check=True).stdout
    old = topo.socket(topo.client)
    old.settimeout(5)
    try:
        old.connect((netns.SERVER_V4, h.TCP_PORT))
        old.sendall(b"Ihello")
        assert old.recv(16) == b"hello", "the old flow works before the change"

        # The change, as a laptop sees it moving from one network to another: default route to the
        # second uplink, the first uplink's address replaced (its connected route goes with it).
        changed = time.monotonic()
        topo.exec(topo.client, ["ip", "route", "replace", "default", "via", netns.UPLINK2_RELAY_V4, "dev", "uplink2"], check=True)
        topo.exec(topo.client, ["ip", "addr", "del", f"{netns.CLIENT_V4}/24", "dev", "to-relay"], check=True)
        topo.exec(topo.client, ["ip", "addr", "add", "10.10.0.11/24", "dev", "to-relay"], check=True)

        # The old flow's carrier cannot survive: the flow fails at once instead of hanging.
        outcome, failed_after = h.await_failure(old, changed, timeout=5)
    finally:
        old.close()
    assert outcome in ("reset", "EOF"), f"the old flow did not fail after the change: {outcome}"
    assert failed_after < 1.0, f"the old flow failed only {failed_after:.2f} s after the change"

    # A new flow works within 1 s of the change.
    new_ok = None
    while time.monotonic() - changed < 3.0:
        if h.curl(topo, ["-o", "/dev/null", h.url(topo, "ipv4", "/bytes/1")], max_time=0.5, connect_timeout=0.5).ok:
            new_ok = time.monotonic() - changed
            break
    assert new_ok is not None, "no new flow worked within 3 s of the change"
    assert new_ok < 1.0, f"a new flow worked only {new_ok:.2f} s after the change"
    print(f"old flow failed {failed_after:.3f} s after the change ({outcome}); a new flow worked after {new_ok:.3f} s")

    # The TUN, its routes and rules stayed; the carriers now come from the second uplink.
    assert t.client.alive()
    assert tun_index(topo) == index, "the TUN was removed and made again"
    assert topo.exec(topo.client, ["ip", "rule"], check=True).stdout == rules
    log = h.tail(t.client.log, 400)
    changes = [l for l in log.splitlines() if "network changed" in l and " info " in l]
    assert len(changes) == 1, f"expected one log line for the change: {changes}"
    assert "dev uplink2 via 10.50.0.2 src 10.50.0.1" in changes[0] and "reconnecting: network changed" in changes[0], changes[0]
    assert "tunnel sluice0 down" not in log
    peers = {e["peer"] for e in t.servers.events() if e.get("proto") == "http"}
    assert peers <= {netns.RELAY_SERVER_SIDE_V4}, peers
    relay_side = topo.exec(topo.relay, ["ss", "-Htn", "state", "established", f"sport = :{h.RELAY_PORT}"], check=True).stdout
    assert netns.UPLINK2_CLIENT_V4 in relay_side, f"no carrier from the second uplink at the relay: {relay_side}"
