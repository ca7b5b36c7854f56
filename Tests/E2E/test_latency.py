"""Latency an application sees through the tunnel, against plain kernel forwarding in the same run.

Both paths exist side by side (`topology` with Sluice, `direct_topology` with kernel forwarding),
each with latency.py's server, and the probe runs the same patterns through each in turns, so both
figures share whatever load the machine has at that moment.
"""

import statistics

import pytest

import harness as h
import netns
import sshd
from conftest import record_latency


@pytest.mark.sluice
@pytest.mark.e2e_timeout(120)
def test_small_writes_and_round_trips_cost_what_they_cost_direct(make_tunnel, direct_topology, runner):
    """Write 100 B, write 100 B, read a 2-byte answer (Nagle on): the application's kernel holds the
    second write until the first is acknowledged, so a stack that delays that ACK past the
    application's retransmission timeout stalls every exchange by ~200 ms. A paused upload (the
    server reads nothing for a second) finishes as soon after the pause as direct: the window update
    after the pause is not left to the application's zero-window probes. The 1-byte round trip
    (TCP_NODELAY) is reported in the table."""
    t = make_tunnel()
    for topo in (direct_topology, t.topo):
        h.start_latency_server(runner, topo)
    runs = {"direct": [], "sluice": []}
    for _ in range(2):
        runs["direct"].append(h.latency_probe(direct_topology))
        runs["sluice"].append(h.latency_probe(t.topo))
    # Per-exchange figures are medians already (of their runs' medians here); the upload is one
    # transfer per run, whose best shows what the path does when no other work takes the CPUs.
    fig = {mode: {"write_write_read": statistics.median(r["write_write_read"] for r in rs),
                  "rtt_1byte": statistics.median(r["rtt_1byte"] for r in rs),
                  "paused_upload": min(r["paused_upload"] for r in rs)} for mode, rs in runs.items()}
    for mode in ("direct", "sluice"):
        record_latency(f"write 100 + write 100 + read 2, median ({mode})", fig[mode]["write_write_read"])
        record_latency(f"1-byte round trip, TCP_NODELAY, median ({mode})", fig[mode]["rtt_1byte"])
        record_latency(f"16 MiB upload, server pauses 1 s ({mode})", fig[mode]["paused_upload"])
    d, s = fig["direct"], fig["sluice"]
    assert s["write_write_read"] <= 1.3 * d["write_write_read"] + 0.005, \
        f"write-write-read: {s['write_write_read'] * 1e3:.1f} ms through Sluice, {d['write_write_read'] * 1e3:.1f} ms direct"
    assert s["paused_upload"] <= 1.1 * d["paused_upload"], \
        f"paused upload: {s['paused_upload'] * 1e3:.0f} ms through Sluice, {d['paused_upload'] * 1e3:.0f} ms direct"


@pytest.mark.sluice
@pytest.mark.e2e_timeout(120)
def test_ssh_session_costs_what_it_costs_direct(make_tunnel, direct_topology, runner, workdir):
    """`ssh host true` with Debian's OpenSSH, key login: a real application that writes its requests
    in pieces with Nagle on (non-interactive sessions keep it). Timed through Sluice and direct in
    turns; through Sluice it must stay within 10 % of direct."""
    t = make_tunnel()
    keys = sshd.make_keys(workdir)
    for topo in (direct_topology, t.topo):
        sshd.start_sshd(runner, topo, keys)
        sshd.timed_ssh(topo, keys, netns.SERVER_V4, "true")  # the first login warms caches at both ends
    times = {"direct": [], "sluice": []}
    for _ in range(5):
        times["direct"].append(sshd.timed_ssh(direct_topology, keys, netns.SERVER_V4, "true"))
        times["sluice"].append(sshd.timed_ssh(t.topo, keys, netns.SERVER_V4, "true"))
    d, s = statistics.median(times["direct"]), statistics.median(times["sluice"])
    record_latency("ssh host true, median of 5 (direct)", d)
    record_latency("ssh host true, median of 5 (sluice)", s)
    assert s <= 1.1 * d, f"ssh host true: {s * 1e3:.0f} ms through Sluice, {d * 1e3:.0f} ms direct " \
                         f"(runs: sluice {[round(x * 1e3) for x in times['sluice']]}, " \
                         f"direct {[round(x * 1e3) for x in times['direct']]})"
