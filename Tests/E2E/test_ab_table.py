"""Benchmarks/e2e/ab.py's comparison table: medians, B/A, and which binary is better per figure.

Pure Python, no namespaces: the A/B runs themselves are what `ab.py` is for, not a test.
"""

import json
import os
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "Benchmarks" / "e2e"))

import ab  # noqa: E402


def test_medians_ratio_and_direction():
    runs = {
        "A": [{"udp_rr_per_s": 50_000.0, "cpu_up_s_per_gb": 2.6}, {"udp_rr_per_s": 70_000.0, "cpu_up_s_per_gb": 2.4},
              {"udp_rr_per_s": 60_000.0, "cpu_up_s_per_gb": 2.5}],
        "B": [{"udp_rr_per_s": 30_000.0, "cpu_up_s_per_gb": 2.0}, {"udp_rr_per_s": 45_000.0, "cpu_up_s_per_gb": 2.1},
              {"udp_rr_per_s": 40_000.0, "cpu_up_s_per_gb": 1.9}],
    }
    text, rows = ab.table(runs)
    by_key = {r["key"]: r for r in rows}
    rr, cpu = by_key["udp_rr_per_s"], by_key["cpu_up_s_per_gb"]
    assert (rr["a_median"], rr["b_median"]) == (60_000.0, 40_000.0)
    assert abs(rr["b_over_a"] - 2 / 3) < 1e-9
    assert abs(cpu["b_over_a"] - 0.8) < 1e-9
    lines = {line.split("  ")[0]: line for line in text.splitlines()}
    assert lines["UDP req/resp, one socket"].rstrip().endswith("A"), "fewer requests per second: A is better"
    assert lines["CPU client+relay, 1 stream up"].rstrip().endswith("B"), "less CPU per GB: B is better"
    assert "50,000 70,000 60,000" in lines["UDP req/resp, one socket"], "every round is shown, in order"


def test_figures_one_side_lacks_are_left_out():
    text, rows = ab.table({"A": [{"udp_rr_per_s": 1.0, "tcp_cc_per_s": 5.0}], "B": [{"udp_rr_per_s": 2.0}]})
    assert [r["key"] for r in rows] == ["udp_rr_per_s"]
    assert "new TCP connections" not in text


def test_the_hosts_steal_is_shown_but_no_binary_is_better_for_it():
    text, rows = ab.table({"A": [{"host_steal_pct": 1.0}], "B": [{"host_steal_pct": 11.0}]})
    assert rows[0]["b_over_a"] == 11.0
    line = next(line for line in text.splitlines() if line.startswith("CPU time the host took"))
    assert line.rstrip().endswith("–"), line


def busy_children() -> int:
    """This process's children that are contention.py's busy loops."""
    count = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            cmdline = (entry / "cmdline").read_bytes()
        except (OSError, IndexError, ValueError):
            continue
        count += ppid == os.getpid() and b"while :; do :; done" in cmdline
    return count


def test_each_turn_runs_the_mode_asked_for_beside_the_busy_loops_asked_for(monkeypatch, tmp_path):
    """`--mode` picks what each turn runs, `--busy-loops` what shares the CPUs meanwhile; the JSON says both.
    The turns themselves are stood in for: what runs in them is measure.py's, tested with the bench."""
    turns = []

    class Turn:
        def __init__(self, mode, settings, workdir, loadgen, say):
            self.mode = mode

        def run(self):
            turns.append((self.mode, os.environ["SLUICE_BIN"], busy_children()))
            return {"figures": {"udp_rr_latency_us": 100.0}}

    monkeypatch.setattr(ab.measure, "ModeRun", Turn)
    monkeypatch.setattr(ab.bench, "compile_c", lambda workdir, name, *flags: workdir / name)
    true = str(Path(shutil.which("true")).resolve())
    assert ab.main([true, true, "--rounds", "2", "--tests", "udp", "--mode", "sluice-poll", "--busy-loops", "2",
                    "--out", str(tmp_path)]) == 0
    assert turns == [("sluice-poll", true, 2)] * 4
    assert busy_children() == 0, "the loops outlived the run"
    saved = json.loads(next(tmp_path.glob("ab-*.json")).read_text())
    assert (saved["mode"], saved["busy_loops"]) == ("sluice-poll", 2)
