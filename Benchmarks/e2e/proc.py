"""What the benchmark reads from /proc about the tunnel's processes: resident memory and CPU time.

VmRSS (/proc/PID/status) is what a process holds in RAM now; utime and stime (/proc/PID/stat) are the
CPU seconds all its threads spent in its own code and in the kernel on its behalf. measure.py samples
RSS on a thread while a test runs (the peak is what a user's machine must have free) and takes CPU time
before and after a test.
"""

from __future__ import annotations

import os
import statistics
import threading
import time

CLK_TCK = os.sysconf("SC_CLK_TCK")


def rss_kib(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def cpu_seconds(pid: int) -> float:
    """cpu_user_system(pid), user and system together."""
    return sum(cpu_user_system(pid))


def cpu_user_system(pid: int) -> tuple[float, float]:
    """utime and stime of a process and all its descendants, in seconds: the live ones' own times plus
    what each has collected from children it waited for (cutime, cstime), so the difference of two
    readings counts a child that exited in between as well. A server that forks workers (danted moves
    the bytes in I/O children) is counted whole; a process without children, just itself."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    parents[int(entry)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                pass  # gone between the listing and the read
    tree, frontier = {pid}, [pid]
    while frontier:
        children = [c for c, p in parents.items() if p in frontier and c not in tree]
        tree.update(children)
        frontier = children
    user = system = 0.0
    for member in tree:
        try:
            with open(f"/proc/{member}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        # utime + cutime, stime + cstime: a live process's times are in no one's cutime yet, so nothing
        # is counted twice.
        user += (int(fields[11]) + int(fields[13])) / CLK_TCK
        system += (int(fields[12]) + int(fields[14])) / CLK_TCK
    return user, system


def steady_rss_kib(pid: int, seconds: float = 0.5, samples: int = 5) -> int | None:
    """The median of a few samples: RSS moves a little while timers run."""
    vals = []
    for _ in range(samples):
        v = rss_kib(pid)
        if v is not None:
            vals.append(v)
        time.sleep(seconds / samples)
    return int(statistics.median(vals)) if vals else None


class RssSampler:
    """Samples VmRSS of some processes (name → pid) every `interval` seconds on a thread; `peak` holds
    each one's largest, in KiB."""

    def __init__(self, pids: dict[str, int], interval: float = 0.02) -> None:
        self.pids, self.interval = pids, interval
        self.peak = {name: 0 for name in pids}
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)

    def __enter__(self) -> "RssSampler":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def _run(self) -> None:
        while not self._stop.is_set():
            for name, pid in self.pids.items():
                v = rss_kib(pid)
                if v is not None:
                    self.peak[name] = max(self.peak[name], v)
            self.samples += 1
            self._stop.wait(self.interval)

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
