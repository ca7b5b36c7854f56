"""Benchmarks/e2e/reqcpu.py: CPU per request of each side, from a real tunnel of the bench's sluice
mode and a real loadgen run; and a clear refusal of a binary that is not one."""

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
def test_each_side_pays_something_per_answered_request(test, tmp_path):
    out = tmp_path / "rows.json"
    assert reqcpu.main(["--test", test, "--seconds", "1", "--in-flight", "4", "--json", str(out), h.sluice_bin()]) == 0
    rows = json.loads(out.read_text())["rows"]
    assert len(rows) == 1
    row = rows[0]
    assert row["test"] == test and row["answered"] > 100 and row["rate"] > 100, row
    for side in ("client", "relay"):
        # Every request crosses both processes: each spends CPU on it, and not more than a millisecond.
        assert 0 < row[f"{side}_us"] < 1000, row
        assert row[f"{side}_us"] == pytest.approx(row[f"{side}_user_us"] + row[f"{side}_sys_us"])
    assert not row["perf"]


def test_refuses_what_is_not_an_executable(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit:
        reqcpu.main([str(tmp_path / "missing")])
    assert exit.value.code == 2
    assert "is not an executable file" in capsys.readouterr().err
