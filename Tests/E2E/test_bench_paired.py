"""The bench's paired rounds (Benchmarks/e2e/paired.py): the modes a verdict compares, in mirrored
turns, and the medians that the verdicts judge.

Pure Python, no namespaces, but for the last test: a stand-in for measure.ModeRun records the turns and
hands back figures. The last runs a real latency turn of Sluice in namespaces.
"""

import dataclasses
import os
import sys
from pathlib import Path

import pytest

import netns

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "Benchmarks" / "e2e"))

import bench  # noqa: E402
import floor  # noqa: E402
import measure  # noqa: E402
import metrics  # noqa: E402
import paired  # noqa: E402
import polling  # noqa: E402

ALL_MODES = list(measure.MODES)


def test_turns_mirror_each_round():
    assert paired.order(paired.THROUGHPUT, 1) == ["floor-aead", "floor-aead-64k", "sluice"]
    assert paired.order(paired.THROUGHPUT, 2) == ["floor-aead", "floor-aead-64k", "sluice",
                                                  "sluice", "floor-aead-64k", "floor-aead"]
    assert paired.order(paired.THROUGHPUT, 0) == []
    assert paired.order(paired.LATENCY, 2) == ["kernel", "floor", "floor-poll", "openvpn", "sluice", "sluice-poll",
                                               "sluice-poll", "sluice", "openvpn", "floor-poll", "floor", "kernel"]


def test_the_polling_modes_run_in_the_latency_rounds_only_and_the_64k_floor_in_the_throughput_rounds():
    """floor-poll and sluice-poll (polling.py) take the latency turns, floor-aead-64k (floor.UNIT_MODE) the
    iperf3 turns, and none of them the main pass; named in a run without paired rounds, they run the main
    pass as any mode."""
    pairings = [p for p in (paired.within(p, ALL_MODES, measure.GROUPS) for p in paired.PAIRINGS) if p]
    assert {"floor-poll", "sluice-poll"} <= set(pairings[1].modes)
    assert not {"floor-poll", "sluice-poll"} & set(pairings[0].modes)
    assert floor.UNIT_MODE in pairings[0].modes and floor.UNIT_MODE not in pairings[1].modes
    assert bench.main_pass(ALL_MODES, pairings) == [m for m in ALL_MODES if m not in (*polling.MODES, floor.UNIT_MODE)]
    assert bench.main_pass(["kernel", "sluice-poll", floor.UNIT_MODE], []) == ["kernel", "sluice-poll", floor.UNIT_MODE]


def test_a_polling_mode_runs_its_base_mode_with_the_polling_options_in_place_of_the_runs(tmp_path):
    s = dataclasses.replace(measure.FULL, client_args=["--busy-poll", "50", "--mtu", "1400"],
                            relay_args=["--workers=2", "--log-level", "debug"], floor_args=["--spin-us", "7"])
    sluice = measure.ModeRun("sluice-poll", s, tmp_path, tmp_path / "loadgen")
    assert (sluice.mode, sluice.kind, sluice.workdir.name) == ("sluice-poll", "sluice", "sluice-poll")
    # `sluice` refuses an option given twice: the run's own --busy-poll and --workers give way.
    assert sluice.s.client_args == ["--mtu", "1400", "--busy-poll", "200"]
    assert sluice.s.relay_args == ["--log-level", "debug", "--busy-poll", "200", "--workers", "1"]
    fl = measure.ModeRun("floor-poll", s, tmp_path, tmp_path / "loadgen", forward=tmp_path / "forward")
    assert fl.kind == "floor" and fl.target == floor.ADDRESS and fl.s.floor_args == ["--spin-us", "200"]
    plain = measure.ModeRun("sluice", s, tmp_path, tmp_path / "loadgen")
    assert plain.s.client_args == ["--busy-poll", "50", "--mtu", "1400"], "other modes keep the run's arguments"
    with pytest.raises(ValueError, match="forward.c"):
        measure.ModeRun("floor-poll", s, tmp_path, tmp_path / "loadgen")


def test_the_64k_floor_runs_floor_aead_with_forward_c_moving_64_kib_at_most(tmp_path):
    s = dataclasses.replace(measure.FULL, floor_args=["--nodelay", "off"])
    unit = measure.ModeRun(floor.UNIT_MODE, s, tmp_path, tmp_path / "loadgen", forward=tmp_path / "forward")
    assert (unit.kind, unit.target, unit.workdir.name) == ("floor-aead", floor.ADDRESS, floor.UNIT_MODE)
    assert unit.s.floor_args == ["--nodelay", "off", "--unit", "65536"]
    assert measure.ModeRun("floor-aead", s, tmp_path, tmp_path / "loadgen", forward=tmp_path / "forward").s.floor_args == \
        ["--nodelay", "off"], "floor-aead itself keeps the run's arguments"


def test_a_pairing_runs_with_sluice_and_another_of_its_modes_and_one_of_its_groups():
    assert paired.within(paired.THROUGHPUT, ALL_MODES, ("udp", "iperf")) == paired.THROUGHPUT
    assert paired.within(paired.THROUGHPUT, ["kernel", "floor-aead", "sluice"], ("iperf",)).modes == ("floor-aead", "sluice")
    assert paired.within(paired.THROUGHPUT, ["kernel", "sluice"], ("iperf",)) is None
    assert paired.within(paired.THROUGHPUT, ["floor-aead", "sluice"], ("udp",)) is None
    # Without OpenVPN the latency turns still set Sluice against the kernel.
    assert paired.within(paired.LATENCY, ["kernel", "sluice"], ("tcp_cc",)).modes == ("kernel", "sluice")
    assert paired.within(paired.LATENCY, ["kernel", "openvpn"], ("udp",)) is None
    assert paired.within(paired.LATENCY, ALL_MODES, ("iperf", "idle_flows")) is None


def test_a_throughput_turn_runs_one_stream_each_way_and_no_longer_than_the_main_pass():
    ts = paired.turn_settings(paired.THROUGHPUT, measure.FULL)
    assert (ts.groups, ts.iperf_streams, ts.iperf_seconds) == (("iperf",), (1,), 5.0)
    assert paired.turn_settings(paired.THROUGHPUT, measure.QUICK).iperf_seconds == 2
    assert measure.FULL.iperf_streams == (1, 4) and measure.FULL.only is None, "the main pass is unchanged"


def test_a_latency_turn_runs_only_the_tests_its_targets_compare():
    ts = paired.turn_settings(paired.LATENCY, measure.FULL)
    assert ts.groups == ("udp", "tcp_cc") and ts.rate_seconds == 5.0
    assert set(ts.only) == {"udp_rr_latency_us", "udp_new_latency_us", "tcp_cc_latency_us", "udp_new_per_s"}
    # Every paired key is a metric of the table, with the verdict the main pass's figure no longer has.
    for pairing in paired.PAIRINGS:
        for key, paired_key in pairing.keys.items():
            assert paired_key in metrics.BY_KEY, paired_key
            if metrics.BY_KEY[key].of_the_tunnel and key.startswith(("udp", "tcp")):
                assert metrics.BY_KEY[key].target is None and metrics.BY_KEY[paired_key].target is not None, key


# The throughput pairing with floor-aead and Sluice only: the turns the stand-ins below hand figures to.
TWO = paired.within(paired.THROUGHPUT, ["floor-aead", "sluice"], ("iperf",))


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
    samples, errors = paired.run(TWO, 3, measure.FULL, tmp_path, tmp_path / "loadgen", lambda _: None, tmp_path / "forward")
    assert [t[0] for t in turns] == paired.order(TWO, 3)
    assert {t[1] for t in turns} == {(1,)} and len({t[2] for t in turns}) == 6, "each turn in a directory of its own"
    assert samples["sluice"]["tcp1_up_gbps"] == [4.0, 1.0, 4.2]
    assert errors == {"paired iperf3 turn 3 (sluice) tcp1_down": "iperf3 exited 1"}

    figures = paired.medians(TWO, samples)
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
    samples, errors = paired.run(TWO, 2, measure.FULL, tmp_path, tmp_path / "loadgen", lambda _: None, None)
    assert [t for t in turns] == [("floor-aead", "paired_rounds-1"), ("sluice", "paired_rounds-2"),
                                  ("sluice", "paired_rounds-2-again"), ("sluice", "paired_rounds-3"),
                                  ("sluice", "paired_rounds-3-again"), ("floor-aead", "paired_rounds-4")]
    assert samples["sluice"]["tcp1_up_gbps"] == [4.1, 3.0]
    assert samples["sluice"]["host_steal_pct"] == [2.0, 30.0]
    assert samples["sluice"][paired.REPLACED] == [36.0, 40.0]
    assert samples["floor-aead"][paired.REPLACED] == []
    figures = paired.medians(TWO, samples)
    assert figures["sluice"] == {"tcp1_up_paired_gbps": 3.55, "host_steal_paired_pct": 16.0}
    assert errors == {}


@pytest.mark.e2e_timeout(90)
@pytest.mark.parametrize("mode", ["sluice", "sluice-poll", "floor-poll"])
def test_a_real_latency_turn_measures_only_its_figures(workdir, mode):
    """A latency turn in namespaces, Sluice's and the polling modes' (their options taken by the real
    binaries): its three one-in-flight figures and the new-socket rate, and none of the other tests of
    its groups (no one-socket rate, no connection rate, no RSS)."""
    settings = dataclasses.replace(measure.QUICK, rate_seconds=0.5, latency_seconds=0.3, settle_seconds=0.2)
    loadgen = bench.compile_c(workdir, "loadgen")
    forward = bench.compile_c(workdir, "forward", ("-lgcrypt",)) if mode == "floor-poll" else None
    turn = paired.turn_settings(paired.LATENCY, settings)
    result = measure.ModeRun(mode, turn, workdir, loadgen, say=print, forward=forward).run()
    assert result["errors"] == {}, result["errors"]
    measured = {k for k in result["figures"] if not k.startswith(("rss_peak_", "host_steal"))}
    assert measured == set(turn.only), result["figures"]
    assert all(result["figures"][k] > 0 for k in turn.only), result["figures"]
    assert not [ns for ns in netns.list_namespaces() if ns.startswith(f"slbench-{os.getpid()}-")]
