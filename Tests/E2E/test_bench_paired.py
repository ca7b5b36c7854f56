"""The bench's paired rounds (Benchmarks/e2e/paired.py): floor-aead and Sluice in ABBA turns, and the
medians that the floor-aead verdicts judge.

Pure Python, no namespaces: a stand-in for measure.ModeRun records the turns and hands back figures.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "Benchmarks" / "e2e"))

import measure  # noqa: E402
import metrics  # noqa: E402
import paired  # noqa: E402


def test_turns_alternate_abba():
    assert paired.order(1) == ["floor-aead", "sluice"]
    assert paired.order(3) == ["floor-aead", "sluice", "sluice", "floor-aead", "floor-aead", "sluice"]
    assert paired.order(0) == []


def test_pairs_need_both_modes_and_the_iperf_group():
    assert paired.wanted(["kernel", "floor-aead", "sluice"], ("udp", "iperf"))
    assert not paired.wanted(["kernel", "sluice"], ("iperf",))
    assert not paired.wanted(["floor-aead", "sluice"], ("udp",))


def test_a_turn_runs_one_stream_each_way_and_no_longer_than_the_main_pass():
    ts = paired.turn_settings(measure.FULL)
    assert (ts.groups, ts.iperf_streams, ts.iperf_seconds) == (("iperf",), (1,), 5.0)
    assert paired.turn_settings(measure.QUICK).iperf_seconds == 2
    assert measure.FULL.iperf_streams == (1, 4), "the main pass is unchanged"


def test_run_collects_each_turn_and_medians_pick_the_middle(monkeypatch, tmp_path):
    turns = []
    # Sluice's Gbit/s by its turn: one turn hit by other work (1.0) is what the median drops.
    sluice_up = iter([4.0, 1.0, 4.2])

    class FakeRun:
        def __init__(self, mode, settings, workdir, loadgen, say, forward):
            self.mode, self.settings = mode, settings
            turns.append((mode, settings.iperf_streams, workdir.name))

        def run(self):
            if self.mode == "floor-aead":
                return {"figures": {"tcp1_up_gbps": 4.4, "cpu_up_s_per_gb": 2.0}, "errors": {}}
            up = next(sluice_up)
            errors = {"tcp1_down": "iperf3 exited 1"} if up == 1.0 else {}
            return {"figures": {"tcp1_up_gbps": up, "cpu_up_s_per_gb": 2.05}, "errors": errors}

    monkeypatch.setattr(measure, "ModeRun", FakeRun)
    samples, errors = paired.run(3, measure.FULL, tmp_path, tmp_path / "loadgen", lambda _: None, tmp_path / "forward")
    assert [t[0] for t in turns] == paired.order(3)
    assert {t[1] for t in turns} == {(1,)} and len({t[2] for t in turns}) == 6, "each turn in a directory of its own"
    assert samples["sluice"]["tcp1_up_gbps"] == [4.0, 1.0, 4.2]
    assert errors == {"paired turn 3 (sluice) tcp1_down": "iperf3 exited 1"}

    figures = paired.medians(samples)
    assert figures["sluice"] == {"tcp1_up_paired_gbps": 4.0, "cpu_up_paired_s_per_gb": 2.05}
    assert figures["floor-aead"]["tcp1_up_paired_gbps"] == 4.4
    rows = {r["key"]: r for r in metrics.compare(figures)}
    assert rows["tcp1_up_paired_gbps"]["verdict"] == "FAIL"  # 4.0 < 0.95 × 4.4 = 4.18
    assert rows["cpu_up_paired_s_per_gb"]["verdict"] == "pass"  # 2.05 ≤ 1.05 × 2.0


def test_a_turn_the_host_took_much_of_runs_once_more_and_the_turn_that_lost_less_is_kept(monkeypatch, tmp_path):
    turns = []
    # Steal and Gbit/s of each ModeRun in the order they run: floor-aead's first turn is clean; Sluice's
    # first loses 36 % and its repeat 2 % (kept); the third turn (Sluice) loses 30 % and its repeat
    # 40 % (the first stays); the rest are clean.
    runs = iter([(0.5, 4.4), (36.0, 0.8), (2.0, 4.1), (30.0, 3.0), (40.0, 1.0), (1.0, 4.3)])

    class FakeRun:
        def __init__(self, mode, settings, workdir, loadgen, say, forward):
            self.mode = mode
            turns.append((mode, workdir.name))

        def run(self):
            steal, gbps = next(runs)
            return {"figures": {"tcp1_up_gbps": gbps, "host_steal_pct": steal}, "errors": {}}

    monkeypatch.setattr(measure, "ModeRun", FakeRun)
    samples, errors = paired.run(2, measure.FULL, tmp_path, tmp_path / "loadgen", lambda _: None, None)
    assert [t for t in turns] == [("floor-aead", "paired-1"), ("sluice", "paired-2"), ("sluice", "paired-2-again"),
                                  ("sluice", "paired-3"), ("sluice", "paired-3-again"), ("floor-aead", "paired-4")]
    assert samples["sluice"]["tcp1_up_gbps"] == [4.1, 3.0]
    assert samples["sluice"]["host_steal_pct"] == [2.0, 30.0]
    assert samples["sluice"][paired.REPLACED] == [36.0, 40.0]
    assert samples["floor-aead"][paired.REPLACED] == []
    figures = paired.medians(samples)
    assert figures["sluice"] == {"tcp1_up_paired_gbps": 3.55, "host_steal_paired_pct": 16.0}
    assert errors == {}
