"""`--busy-poll` (docs/configuration.md, "Busy polling"): after traffic, `sluice up`'s and `sluice relay`'s
event loops keep polling for the window instead of sleeping; without the flag they sleep at once.

A UDP round trip every 5 ms for half a second, with the longest window (10 ms) on both ends, keeps
both loops polling throughout; each side's CPU time over that half second (/proc/PID/stat) tells the
two apart: a polling loop uses most of a CPU, a sleeping one a few ms for a hundred round trips. That
a loop sleeps again after its window is the unit test's to check (Tests/SluiceLoopTests/BusyPollTests.swift).
"""

import sys
import time
from pathlib import Path

import pytest

import harness as h
import netns

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "Benchmarks" / "e2e"))
from proc import cpu_seconds  # noqa: E402

WINDOW_US = 10_000  # the most --busy-poll takes
SECONDS = 0.5
GAP_S = 0.005


@pytest.mark.sluice
@pytest.mark.parametrize("busy_poll", [True, False], ids=["on", "off"])
def test_busy_poll_polls_after_traffic(make_tunnel, busy_poll):
    flag = ["--busy-poll", str(WINDOW_US)] if busy_poll else []
    t = make_tunnel(client_extra=flag, relay_extra=[*flag, "--workers", "1"])
    s = h.app_udp_socket(t.topo, "ipv4")
    try:
        h.udp_echo(s, (netns.SERVER_V4, h.UDP_PORT), b"first")
        before = {p.name: cpu_seconds(p.pid) for p in (t.client, t.relay)}
        end, i = time.monotonic() + SECONDS, 0
        while time.monotonic() < end:
            h.udp_echo(s, (netns.SERVER_V4, h.UDP_PORT), b"poll %d" % i)
            i += 1
            time.sleep(GAP_S)
        used = {p.name: cpu_seconds(p.pid) - before[p.name] for p in (t.client, t.relay)}
    finally:
        s.close()
    t.check_alive()
    for name, seconds in used.items():
        if busy_poll:
            # Most of a CPU, less what the other polling side and the test take from two.
            assert seconds >= 0.3 * SECONDS, f"{name} used {seconds:.2f} s of CPU in {SECONDS} s of traffic: it slept"
        else:
            assert seconds <= 0.15 * SECONDS, f"{name} used {seconds:.2f} s of CPU in {SECONDS} s without --busy-poll"
