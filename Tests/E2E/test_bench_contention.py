"""Benchmarks/e2e/contention.py: the busy loops `reqcpu.py --busy-loops` and `ab.py --busy-loops` measure
beside. No namespaces: the loops are processes of this test's own, killed by PID."""

import argparse
import os
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "Benchmarks" / "e2e"))

import contention  # noqa: E402
from proc import cpu_seconds  # noqa: E402


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_each_loop_burns_its_own_cpu_and_is_gone_after_the_block():
    cpus = sorted(os.sched_getaffinity(0))
    with contention.busy_loops(len(cpus)) as pids:
        assert len(pids) == len(cpus)
        assert [Path(f"/proc/{p}/comm").read_text().strip() for p in pids] == ["sh"] * len(cpus), \
            "every loop is the shell's, not taskset still starting it, when the block begins"
        assert [sorted(os.sched_getaffinity(p)) for p in pids] == [[c] for c in cpus], "one loop pinned per CPU"
        time.sleep(0.5)
        burnt = [cpu_seconds(p) for p in pids]
        assert all(b > 0.1 for b in burnt), f"CPU seconds of each loop after 0.5 s: {burnt}"
    assert not any(alive(p) for p in pids)


def test_the_loops_end_when_the_block_raises():
    with pytest.raises(RuntimeError):
        with contention.busy_loops(1) as pids:
            assert alive(pids[0])
            raise RuntimeError("the measurement failed")
    assert not alive(pids[0])


def test_none_asked_none_run():
    with contention.busy_loops(0) as pids:
        assert pids == []


def test_the_option_takes_a_count_and_refuses_a_negative_one():
    ap = argparse.ArgumentParser()
    contention.add_option(ap)
    assert ap.parse_args([]).busy_loops == 0
    assert ap.parse_args(["--busy-loops", "2"]).busy_loops == 2
    with pytest.raises(SystemExit):
        ap.parse_args(["--busy-loops", "-1"])
