"""What `sluice up` installs, and that it removes all of it: on SIGTERM, and when it fails to start."""

import json
import re

import pytest

import harness as h
import netns

pytestmark = pytest.mark.sluice


def installed_as_promised(state: dict) -> list[str]:
    """The pieces `sluice up` must have installed; returns the ones missing."""
    missing = []
    if h.TUN not in state["links"]:
        missing.append(f"link {h.TUN}")
    for a in h.CLIENT_ADDRESSES:
        if f"{h.TUN} {a}" not in state["addresses"]:
            missing.append(f"address {a} on {h.TUN}")
    for key in ("rules4", "rules6"):
        rules = [json.loads(r) for r in state[key]]
        if not any(r.get("table") == h.TABLE and "not" in r and r.get("fwmark", "").lower() == h.FWMARK
                   for r in rules):
            missing.append(f"{key}: not fwmark {h.FWMARK} lookup {h.TABLE}")
    for key, dst in (("routes4", h.CLIENT_ROUTES[0]), ("routes6", h.CLIENT_ROUTES[1])):
        routes = [json.loads(r) for r in state[key]]
        if not any(r.get("table") == h.TABLE and r.get("dst") == dst and r.get("dev") == h.TUN for r in routes):
            missing.append(f"route {dst} dev {h.TUN} table {h.TABLE}")
    return missing


def test_sigterm_removes_everything(make_tunnel, topology):
    before = h.net_state(topology, topology.client)
    assert h.sluice_footprint(before) == []
    t = make_tunnel()
    during = h.net_state(topology, topology.client)
    assert installed_as_promised(during) == [], "sluice up did not install what it promises (so the check " \
                                                "below would prove nothing)"
    code = t.client.stop(timeout=10)
    assert code == 0, f"sluice up exited {code} on SIGTERM"
    after = h.net_state(topology, topology.client)
    assert h.sluice_footprint(after) == [], "left behind after SIGTERM"
    assert h.state_diff(before, after) == [], "the client namespace is not as it was before sluice up"


def one_line_error(stderr: bytes) -> str:
    """The error line: the whole reason, on exactly one line."""
    lines = [l for l in stderr.decode(errors="replace").splitlines() if l.strip()]
    assert lines, "no error message on stderr"
    assert len(lines) == 1, f"expected a one-line error on stderr, got {len(lines)} lines: {lines}"
    return lines[0]


def test_up_without_cap_net_admin_fails_cleanly(runner, topology):
    """Root without CAP_NET_ADMIN cannot open the TUN: exit 1, a message saying why, nothing installed."""
    key, relay = h.make_keypair(runner.workdir, "client"), h.make_keypair(runner.workdir, "relay")
    before = h.net_state(topology, topology.client)
    argv = h.client_argv(f"{netns.RELAY_CLIENT_SIDE_V4}:{h.RELAY_PORT}", relay.public, key)
    cp = h.run_sluice(argv[1:], ns=topology.client, timeout=10,
                      prefix=["setpriv", "--bounding-set", "-net_admin", "--inh-caps", "-net_admin", "--"])
    assert cp.returncode == 1, f"exit code {cp.returncode}, expected 1 (runtime error); stderr: {cp.stderr!r}"
    line = one_line_error(cp.stderr)
    assert re.search(r"(?i)permi|CAP_NET_ADMIN|EPERM|denied", line), f"the message does not say why: {line!r}"
    after = h.net_state(topology, topology.client)
    assert h.sluice_footprint(after) == [] and h.state_diff(before, after) == [], "something was left installed"
