"""Faults between client and relay (faultproxy.py in the relay namespace, in front of the relay):
a slow link, a thin one, a stall, a cut, a reset and a flipped byte, each under a running download
and a running echo whose every byte is checked (checked.py).

For each fault: no application ever receives a corrupted byte — a stream completes intact or ends
with what it delivered intact; no flow hangs past its timeouts; a carrier the fault broke is torn
down and dialled again (a stall is found by the keepalive: `--ping-interval 0.5 --ping-misses 3`,
so within 1.5 s); new flows work afterwards; and client and relay hold as many descriptors as
before, and as much memory (RssAnon, /proc/PID/status) within MEMORY_SLACK_KIB. One carrier, so the
fault always hits the carrier the transfers use.

Memory: sluice fixes glibc's mmap threshold (Sources/sluice/main.swift), so a broken carrier's
buffers go back to the system: every fault here ends within about 1.5 MiB of the baseline. With
glibc's default the relay kept 1.9 MiB after the first fault, and with the client's stream windows
growing (docs/protocol.md §4.3) client and relay kept 2–3 MiB more per fault. A stall holds
the stalled carrier's queues until the stall ends while the new one already carries the transfers. Each breaking
fault runs twice: both times descriptors must be back to the baseline (a leaked carrier keeps its
socket) and memory within MEMORY_SLACK_KIB of it, and the second time within SECOND_FAULT_KIB of the
first (a carrier's buffers leaked per fault would add up).
"""

from __future__ import annotations

import re
import time

import pytest

import content
import harness as h
from checked import Download, Echo

pytestmark = pytest.mark.sluice

PING = ["--ping-interval", "0.5", "--ping-misses", "3"]
STALL_FOUND_WITHIN = 1.5  # --ping-interval × --ping-misses
MEMORY_SLACK_KIB = 4096  # room for a stall's held queues (module doc); faults end within ~1.5 MiB of the baseline
# The client's RssAnon moves between cycles on its own: it keeps up to 2 MiB of freed heap untrimmed
# (keepFreedHeapForLwIP, Sources/sluice/main.swift), which one cycle may end with and another not, and
# the flows of the check after each fault allocate anew. 2,232 and 2,572 KiB above the first fault's
# figure were seen in one full-suite CI run (cut, flip-s2c), where alone it stays within 1.6 MiB.
SECOND_FAULT_KIB = 3072
# A stall holds the stalled carrier's queues beside the new carrier's until it ends (module doc), so
# the relay may keep a little more after the second: 2,056 KiB more was seen once in a full-suite run.
STALL_EXTRA_KIB = 1024
ENDLESS = 1 << 34  # a firehose that outlasts any fault


def both_ways(t, label: str, seed: int) -> None:
    """A checked download and echo at once, as under the fault, run to completion: before the
    fault it fills the allocator's pools as the fault's transfers will, so the baseline is fair;
    after it, it shows new flows work."""
    d = Download(t.topo, 32 * content.MiB).start()
    e = Echo(t.topo, 32 * content.MiB, seed=seed).start()
    for x in (d, e):
        x.join(30)
        assert x.outcome == "complete", f"{label}: {type(x).__name__} {x.outcome} at {x.received}"


def warm_up(t) -> None:
    both_ways(t, "warm-up", 1)


def new_flows_work(t) -> None:
    both_ways(t, "after the fault, a new flow", 99)


def memory(t) -> dict[str, dict[str, int]]:
    return {"client": h.memory_kib(t.client.pid) | {"fds": h.fd_count(t.client.pid)},
            "relay": h.memory_kib(t.relay.pid) | {"fds": h.fd_count(t.relay.pid)}}


def settle_memory(t, baseline) -> dict:
    """Memory after the fault, once it stops shrinking (carriers torn down, buffers freed), at most 5 s."""
    last = memory(t)
    for _ in range(10):
        time.sleep(0.5)
        now = memory(t)
        if all(now[p]["RssAnon"] <= baseline[p]["RssAnon"] + MEMORY_SLACK_KIB and now[p]["fds"] <= baseline[p]["fds"]
               for p in now) or now == last:
            return now
        last = now
    return last


def carrier_downs(t) -> list[str]:
    return re.findall(r"carrier #1 to \S+ down: (.*?); reconnecting", t.client.log.read_text(errors="replace"))


BREAKING = {
    "stall": dict(fault="stall"),
    "cut": dict(fault="cut", direction="s2c", after=300_000),
    "rst": dict(fault="rst", direction="c2s", after=50_000),
    "flip-s2c": dict(fault="flip", direction="s2c", after=200_000),
    "flip-c2s": dict(fault="flip", direction="c2s", after=100_000),
}


@pytest.mark.e2e_timeout(120)
@pytest.mark.parametrize("name", BREAKING)
def test_fault_breaks_the_carrier(make_tunnel, name):
    t = make_tunnel(carriers=1, via_fault_proxy=True, client_extra=PING)
    warm_up(t)
    baseline = memory(t)
    first = None
    for cycle in (1, 2):
        break_and_recover(t, name, cycle)
        after = settle_memory(t, baseline)
        report_memory(f"{name} #{cycle}", baseline, after)
        if first is None:
            first = after
        slack = SECOND_FAULT_KIB + (STALL_EXTRA_KIB if name == "stall" else 0)
        for proc in ("client", "relay"):
            # From the higher of the baseline and the first fault's figure: the first fault may free
            # buffers the warm-up had in use and end below the baseline (the client's RssAnon went
            # 3,800 -> 2,712 KiB after a first flip-c2s in one CI run and 4,996 after the second,
            # 1.2 MiB above the baseline), which says nothing of a leak.
            reference = max(first[proc]["RssAnon"], baseline[proc]["RssAnon"])
            assert after[proc]["RssAnon"] <= reference + slack, \
                f"{proc} RssAnon grew from {reference} to {after[proc]['RssAnon']} KiB between two {name} faults"
    assert t.client.alive() and t.relay.alive()


def break_and_recover(t, name: str, cycle: int) -> None:
    downs_before = len(carrier_downs(t))
    dials_before = len(t.faults.connections())

    d = Download(t.topo, ENDLESS, timeout=20).start()
    e = Echo(t.topo, 64 * content.MiB, seed=7, timeout=20).start()
    d.wait_received(2 * content.MiB)
    e.wait_received(content.MiB)
    t0 = time.monotonic()
    t.faults.inject(**BREAKING[name])

    # The transfers end (neither completes: the fault came first), with everything they got intact.
    for x in (d, e):
        x.join(20)
        assert x.outcome in ("reset", "eof"), \
            f"{type(x).__name__} under {name}: {x.outcome} after {x.received} bytes (corrupt at {x.corrupt_at})"
    ended = max(x.ended_at for x in (d, e)) - t0

    # The carrier was torn down and dialled again.
    downs = h.wait_for(lambda: carrier_downs(t)[downs_before:], 10, what="the client to drop the carrier")
    found = time.monotonic() - t0
    h.wait_for(lambda: len(t.faults.connections()) > dials_before, 15, what="the client to dial a new carrier")
    print(f"{name} #{cycle}: transfers ended {ended:.2f} s after the fault; carrier down: {downs[0]!r} "
          f"(seen by {found:.2f} s); download got {d.received} bytes, echo {e.received}")
    if name == "stall":
        assert "no answer to PING" in downs[0]
        assert ended <= STALL_FOUND_WITHIN + 0.5, f"a stall took {ended:.2f} s to notice (keepalive: {STALL_FOUND_WITHIN} s)"
    t.faults.inject(fault="clear")  # a stalled connection ends, as the NAT mapping would
    new_flows_work(t)


@pytest.mark.e2e_timeout(90)
@pytest.mark.parametrize("name,command,size", [
    ("delay", dict(fault="delay", ms=40), 6 * content.MiB),
    ("throttle", dict(fault="throttle", bytes_per_second=4_000_000), 12 * content.MiB),
])
def test_slow_link_keeps_the_carrier(make_tunnel, name, command, size):
    """A slow or thin link delays, but breaks nothing: the transfers complete intact and the carrier
    stays — its PONGs wait behind megabytes of data on a thin link, but data keeps arriving, and
    that is proof enough of life (docs/protocol.md §5)."""
    t = make_tunnel(carriers=1, via_fault_proxy=True, client_extra=PING)
    warm_up(t)
    baseline = memory(t)
    dials = len(t.faults.connections())
    t.faults.inject(**command)
    t0 = time.monotonic()
    d = Download(t.topo, size, timeout=30).start()
    e = Echo(t.topo, size // 4, seed=3, timeout=30).start()
    for x in (d, e):
        x.join(40)
        assert x.outcome == "complete", f"{type(x).__name__} under {name}: {x.outcome} after {x.received} bytes"
    took = time.monotonic() - t0
    print(f"{name}: {size / content.MiB:.0f} MiB down and {size / 4 / content.MiB:.0f} MiB echoed in {took:.2f} s")
    assert len(t.faults.connections()) == dials, f"the carrier was redialled under {name}: {carrier_downs(t)}"
    t.faults.inject(fault="clear")
    new_flows_work(t)
    report_memory(name, baseline, settle_memory(t, baseline))


def report_memory(name: str, baseline: dict, after: dict) -> None:
    for proc in ("client", "relay"):
        b, a = baseline[proc], after[proc]
        print(f"{name}: {proc} VmRSS {b['VmRSS']} -> {a['VmRSS']} KiB, RssAnon {b['RssAnon']} -> {a['RssAnon']} KiB, "
              f"fds {b['fds']} -> {a['fds']}")
        assert a["RssAnon"] <= b["RssAnon"] + MEMORY_SLACK_KIB, \
            f"{proc} RssAnon grew from {b['RssAnon']} to {a['RssAnon']} KiB after {name}"
        assert a["fds"] <= b["fds"], f"{proc} holds {a['fds']} descriptors after {name}, {b['fds']} before"
