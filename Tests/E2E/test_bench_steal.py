"""The bench's reading of CPU time the host took from this VM (Benchmarks/e2e/hoststeal.py), and where
it shows: a note on a test that lost much, a row per mode, a median over the paired rounds.

Pure Python, no namespaces: /proc/stat texts written here, and a stand-in ModeRun for the paired turns.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "Benchmarks" / "e2e"))

import hoststeal  # noqa: E402
import measure  # noqa: E402
import metrics  # noqa: E402
import paired  # noqa: E402

# /proc/stat of a Linux 6.x guest: user nice system idle iowait irq softirq steal guest guest_nice.
BEFORE = "cpu  1000 0 500 8000 0 0 100 0 50 0\ncpu0 500 0 250 4000 0 0 50 0 25 0\nintr 1 2 3\n"
AFTER = "cpu  1400 0 700 8900 0 0 200 400 90 0\ncpu0 700 0 350 4450 0 0 100 200 45 0\nintr 4 5 6\n"


def test_parse_sums_the_eight_times_without_the_guest_times_counted_in_user():
    r = hoststeal.parse(BEFORE)
    assert r == hoststeal.Reading(steal=0, total=1000 + 500 + 8000 + 100)
    assert hoststeal.parse(AFTER).steal == 400


def test_percent_is_the_stolen_share_of_the_ticks_between_readings():
    share = hoststeal.percent(hoststeal.parse(BEFORE), hoststeal.parse(AFTER))
    # 2,000 ticks passed (400 user, 200 system, 900 idle, 100 softirq, 400 steal): 400 of them stolen.
    assert share == 20.0


def test_no_figure_without_two_readings_or_without_time_passing():
    r = hoststeal.parse(BEFORE)
    assert hoststeal.percent(None, r) is None
    assert hoststeal.percent(r, None) is None
    assert hoststeal.percent(r, r) is None


def test_a_stat_without_the_steal_field_or_the_cpu_line_gives_no_reading():
    assert hoststeal.parse("cpu  1000 0 500 8000 0 0 100\n") is None  # before Linux 2.6.11
    assert hoststeal.parse("intr 1 2 3\n") is None
    assert hoststeal.parse("cpu  a b c d e f g h\n") is None


def test_this_machine_reads():
    r = hoststeal.read()
    assert r is not None and r.total > 0 and 0 <= r.steal <= r.total


class Recorder:
    """The parts of ModeRun that _note_steal uses."""

    def __init__(self):
        self.notes = []

    def _note(self, figure, text):
        self.notes.append({"key": figure, "text": text})


def test_a_test_that_lost_much_gets_a_note_and_every_test_keeps_its_share():
    run = Recorder()
    quiet, busy = {}, {}
    measure.ModeRun._note_steal(run, "tcp1_up_gbps", "iperf3 tcp1_up", {"percent": 1.24}, quiet)
    measure.ModeRun._note_steal(run, "tcp1_down_gbps", "iperf3 tcp1_down", {"percent": 11.0}, busy)
    measure.ModeRun._note_steal(run, "udp_rr_per_s", "udp-rr", {}, {})
    assert quiet == {"host_steal_percent": 1.2} and busy == {"host_steal_percent": 11.0}
    assert [n["key"] for n in run.notes] == ["tcp1_down_gbps"]
    assert "the host took 11 % of this VM's CPU time" in run.notes[0]["text"]


def test_each_mode_has_a_row_and_the_paired_rounds_a_median():
    rows = {r["key"]: r for r in metrics.compare({"sluice": {"host_steal_pct": 3.0},
                                                  "floor-aead": {"host_steal_pct": 9.5},
                                                  "openvpn": {"host_steal_pct": 1.5}})}
    row = rows["host_steal_pct"]
    assert (row["sluice"], row["floors"]["floor-aead"]["value"], row["verdict"]) == (3.0, 9.5, "–")
    assert row["peers"]["openvpn"] == {"value": 1.5, "pct_of_ceiling": None, "sluice_over_peer": None}, \
        "no Sluice / peer ratio of what the host took"
    assert "host_steal_paired_pct" in rows and "host_steal_latency_paired_pct" in rows
    figures = paired.medians(paired.THROUGHPUT, {"sluice": {"host_steal_pct": [1.0, 12.0, 2.0]},
                                                 "floor-aead": {"host_steal_pct": []}})
    assert figures == {"sluice": {"host_steal_paired_pct": 2.0}, "floor-aead": {}}
    figures = paired.medians(paired.LATENCY, {"kernel": {"host_steal_pct": [4.0]}})
    assert figures == {"kernel": {"host_steal_latency_paired_pct": 4.0}}


def test_the_kernel_modes_steal_sits_in_the_ceiling_column_as_no_ceiling_and_the_chart_leaves_it_out():
    import chart
    figures = {"kernel": {"host_steal_pct": 20.0, "cpu_up_s_per_gb": None}, "sluice": {"host_steal_pct": 2.0}}
    row = {r["key"]: r for r in metrics.compare(figures)}["host_steal_pct"]
    assert (row["ceiling"], row["pct_of_ceiling"], row["of_the_tunnel"]) == (20.0, None, False)
    svg = chart.render(metrics.compare(figures), "t", "s")
    assert "CPU time the host took" not in svg
