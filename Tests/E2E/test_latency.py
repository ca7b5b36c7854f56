"""Latency an application sees through the tunnel, against plain kernel forwarding in the same run.

Both paths exist side by side (`topology` with Sluice, `direct_topology` with kernel forwarding),
each with latency.py's server, and the probe runs the same patterns through each in turns, so both
figures share whatever load the machine has at that moment.
"""

import statistics

import pytest

import harness as h
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
