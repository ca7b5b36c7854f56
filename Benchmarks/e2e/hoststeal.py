"""CPU time the hypervisor ran other guests on this VM's virtual CPUs while a test ran ("steal").

The bench runs on shared VMs. When the host is busy, a guest's vCPU waits while another guest runs,
and every process in the guest — iperf3, the tunnel, the servers — loses that time without any
counter of its own showing it: throughput falls and latencies rise for a reason outside the tunnel.
The kernel counts it: the eighth number of /proc/stat's `cpu` line, in clock ticks (proc(5)). On
this VM an ab.py run over which the host took 11 % (read before and after) had rounds at a third
of its best round's Gbit/s.

measure.py takes a reading before and after each test and each mode's whole run: the JSON keeps the
share, the table has a row for each mode's run, and a test that lost at least NOTABLE % gets a note.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

STAT = Path("/proc/stat")
NOTABLE = 5.0  # % of the CPU time: a test that lost this much gets a note


@dataclass(frozen=True)
class Reading:
    steal: int  # clock ticks, all CPUs
    total: int  # user + nice + system + idle + iowait + irq + softirq + steal


def parse(text: str) -> Reading | None:
    """The reading of /proc/stat's text; None where its `cpu` line lacks the steal field (kernels
    before 2.6.11) or is not there."""
    for line in text.splitlines():
        fields = line.split()
        if fields and fields[0] == "cpu":
            try:
                ticks = [int(x) for x in fields[1:9]]
            except ValueError:
                return None
            # guest and guest_nice (fields 9 and 10) are already counted in user and nice.
            return Reading(steal=ticks[7], total=sum(ticks)) if len(ticks) == 8 else None
    return None


def read() -> Reading | None:
    try:
        return parse(STAT.read_text())
    except OSError:
        return None


def percent(before: Reading | None, after: Reading | None) -> float | None:
    """The share of the CPU time between two readings that the host took, in %; None without both
    readings or when no tick passed."""
    if before is None or after is None or after.total <= before.total:
        return None
    return 100 * (after.steal - before.steal) / (after.total - before.total)


def note(what: str, share: float) -> str:
    """The note for a test that lost `share` % (≥ NOTABLE) of the CPU time to the host."""
    return (f"{what}: the host took {share:.0f} % of this VM's CPU time while it ran (steal, /proc/stat); "
            f"the test's processes waited that long for a CPU, which lowers a rate and lengthens a latency "
            f"whatever is measured")
