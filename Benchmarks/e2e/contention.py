"""A contended host on demand: busy loops that take CPU time from everything a measurement runs.

    with contention.busy_loops(2):
        ...  # the tunnel's processes now share each CPU with a loop of the same priority

Some `make bench` runs meet a slower VM: the same binaries, floor-aead's one-stream download at 5.3 Gbit/s
instead of 7 (issue 17's note of 2026-12-04). What suffers on such a host is not always what suffers on
a fast one, and it cannot be had when wanted. One loop per CPU, each pinned to its CPU (`taskset`) at the
default priority, gives every process of the test about half the CPU it would have had, every run alike:
`reqcpu.py --busy-loops 2` and `ab.py --busy-loops 2` measure under it.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
from typing import Iterator


def add_option(ap: argparse.ArgumentParser) -> None:
    """`--busy-loops N` (default 0), for a tool that measures under `busy_loops(args.busy_loops)`."""
    def count(text: str) -> int:
        n = int(text)
        if n < 0:
            raise argparse.ArgumentTypeError("must be 0 or more")
        return n
    ap.add_argument("--busy-loops", type=count, default=0, metavar="N",
                    help="run N busy loops, one per CPU, meanwhile: a contended host (contention.py; default 0)")


@contextlib.contextmanager
def busy_loops(count: int) -> Iterator[list[int]]:
    """Runs `count` busy loops (none for 0), the n-th pinned to the n-th online CPU round the list, for the
    duration of the block; yields their PIDs once every loop is spinning on its CPU, so the block's first
    measurement is contended from its start. They are killed by PID and reaped when the block ends, also
    when it raises."""
    cpus = sorted(os.sched_getaffinity(0))
    loops: list[subprocess.Popen] = []
    try:
        for n in range(count):
            # The shell says it is running before it loops: until then the process may still be taskset, or
            # between taskset and the shell, not yet pinned or not yet spinning.
            loops.append(subprocess.Popen(["taskset", "-c", str(cpus[n % len(cpus)]), "sh", "-c",
                                           "echo spinning; while :; do :; done"],
                                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE))
        for p in loops:
            said = p.stdout.readline()
            p.stdout.close()
            if not said:
                raise RuntimeError(f"a busy loop did not start: `{' '.join(p.args)}` exited with {p.wait()}; "
                                   "is taskset (util-linux) installed?")
        yield [p.pid for p in loops]
    finally:
        for p in loops:
            p.kill()
        for p in loops:
            p.wait()
