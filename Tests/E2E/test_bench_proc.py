"""The benchmark's CPU accounting (Benchmarks/e2e/proc.py): a process's CPU time includes the children
it forks, live or already exited, so a server that moves bytes in forked workers (danted) is not
measured as nearly free. Pure Python, no namespaces."""

import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "Benchmarks" / "e2e"))

from proc import CLK_TCK, cpu_user_system  # noqa: E402

BURN = "import time\nend = time.process_time() + 0.3\nwhile time.process_time() < end: pass\n"


def own_cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def test_cpu_time_counts_live_and_exited_children():
    # A parent that forks two children burning 0.3 s each: one it has waited for, one still running.
    parent = subprocess.Popen([sys.executable, "-c", (
        "import subprocess, sys, time\n"
        f"subprocess.run([sys.executable, '-c', {BURN!r}])\n"
        f"live = subprocess.Popen([sys.executable, '-c', {BURN!r} + 'time.sleep(30)'])\n"
        "print(live.pid, flush=True)\n"
        "time.sleep(30)\n")], stdout=subprocess.PIPE, text=True)
    live = int(parent.stdout.readline())
    try:
        time.sleep(0.6)  # the live child burns its 0.3 s
        user, system = cpu_user_system(parent.pid)
        assert own_cpu_seconds(parent.pid) < 0.25
        assert user + system >= 0.55, f"{user + system:.2f} s: both children's 0.3 s should be in it"
    finally:
        os.kill(live, 9)
        parent.kill()
        parent.wait()
