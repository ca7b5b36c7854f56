"""Benchmarks/e2e/reqcpu.py: CPU per request (loadgen) or per GB (iperf3) of each side, from a real
tunnel of the bench's sluice mode; and a clear refusal of a binary that is not one."""

import json
import sys
from pathlib import Path

import pytest

import harness as h

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "Benchmarks" / "e2e"))

import reqcpu  # noqa: E402

pytestmark = pytest.mark.sluice


@pytest.mark.e2e_timeout(90)
@pytest.mark.parametrize("test", reqcpu.TESTS)
def test_each_side_pays_something_per_unit_of_work(test, tmp_path):
    out = tmp_path / "rows.json"
    assert reqcpu.main(["--test", test, "--seconds", "1", "--in-flight", "4", "--json", str(out), h.sluice_bin()]) == 0
    rows = json.loads(out.read_text())["rows"]
    assert len(rows) == 1
    row = rows[0]
    iperf = test.startswith("iperf")
    assert row["test"] == test and row["unit"] == ("s/GB" if iperf else "µs/req"), row
    assert row["answered"] > (10 << 20 if iperf else 100) and row["rate"] > (0.05 if iperf else 100), row
    for side in ("client", "relay"):
        # Everything crosses both processes: each spends CPU on it, and not more than a millisecond
        # a request or 100 s a GB.
        assert 0 < row[side] < (100 if iperf else 1000), row
        assert row[side] == pytest.approx(row[f"{side}_user"] + row[f"{side}_sys"])
    assert not row["perf"]
    assert 0 <= row["host_steal_percent"] <= 100, "what the host took meanwhile (hoststeal.py)"


def test_refuses_what_is_not_an_executable(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit:
        reqcpu.main([str(tmp_path / "missing")])
    assert exit.value.code == 2
    assert "is not an executable file" in capsys.readouterr().err


@pytest.mark.e2e_timeout(90)
def test_a_floor_mode_and_the_system_calls_each_side_makes(tmp_path):
    """floor-aead in place of a binary, two streams down, with --syscalls: both forwarders read and
    write for every GB (a forwarder that moved bytes without a read and a write per side would be no
    forwarder), and each side's context switches and page faults are counted."""
    out = tmp_path / "rows.json"
    assert reqcpu.main(["--test", "iperf-down", "--streams", "2", "--seconds", "1", "--syscalls", "--json", str(out),
                        "floor-aead"]) == 0
    row = json.loads(out.read_text())["rows"][0]
    assert row["binary"] == "floor-aead" and row["streams"] == 2 and row["answered"] > 10 << 20, row
    for side in ("client", "relay"):
        calls = row[f"{side}_syscalls"]
        assert calls["read"] > 0 and calls["write"] > 0, row
        assert calls["all"] >= sum(n for k, n in calls.items() if k != "all"), row
        switches = row[f"{side}_switches"]
        assert set(switches) == {"voluntary", "involuntary"} and all(n >= 0 for n in switches.values()), row
        assert switches["voluntary"] + switches["involuntary"] > 0, row
        assert row[f"{side}_faults"] >= 0, row


def test_extra_arguments_reach_the_relay(tmp_path):
    """`--relay-arg` goes to `sluice relay`: one it refuses stops the run with the relay's own words."""
    with pytest.raises(RuntimeError, match="--max-udp-mappings 0 is out of range"):
        reqcpu.main(["--test", "udp-rr", "--seconds", "1", "--relay-arg=--max-udp-mappings", "--relay-arg=0", h.sluice_bin()])
