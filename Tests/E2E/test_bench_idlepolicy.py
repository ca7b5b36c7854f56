"""Benchmarks/e2e/idlepolicy.py: the idle policy bench.py and hops.py report, and hops.py's
--guest-halt-poll-ns. On a sysfs tree made here: this machine's own setting is never touched."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "Benchmarks" / "e2e"))

import hops  # noqa: E402
import idlepolicy  # noqa: E402


def sysfs(root: Path, driver: str | None = "haltpoll", governor: str = "haltpoll", poll: str | None = "0") -> Path:
    if driver is not None:
        d = root / idlepolicy.CPUIDLE
        d.mkdir(parents=True)
        (d / "current_driver").write_text(driver + "\n")
        (d / "current_governor_ro").write_text(governor + "\n")
    if poll is not None:
        p = root / idlepolicy.HALT_POLL
        p.parent.mkdir(parents=True)
        p.write_text(poll + "\n")
    return root


def test_a_kvm_guest_that_halts_at_once(tmp_path):
    policy = idlepolicy.read(sysfs(tmp_path))
    assert policy == {"driver": "haltpoll", "governor": "haltpoll", "guest_halt_poll_ns": 0}
    assert idlepolicy.describe(policy).endswith("guest halt polling off (guest_halt_poll_ns 0): an idle vCPU halts at once")


def test_a_kvm_guest_that_polls_first(tmp_path):
    policy = idlepolicy.read(sysfs(tmp_path, poll="200000"))
    assert policy["guest_halt_poll_ns"] == 200000
    assert "polls up to 200 µs before it halts" in idlepolicy.describe(policy)


def test_bare_metal_and_no_driver(tmp_path):
    metal = idlepolicy.read(sysfs(tmp_path / "metal", driver="intel_idle", governor="menu", poll=None))
    assert metal == {"driver": "intel_idle", "governor": "menu", "guest_halt_poll_ns": None}
    assert idlepolicy.describe(metal) == "idle CPUs: cpuidle driver intel_idle, governor menu"
    none = idlepolicy.read(tmp_path / "empty")
    assert none["driver"] is None and idlepolicy.describe(none).startswith("idle CPUs: no cpuidle driver")


def test_a_guest_without_a_cpuidle_driver_does_not_poll_whatever_the_parameter_says(tmp_path):
    # A Firecracker guest: haltpoll built in, so its parameter is in sysfs, but no driver registered.
    policy = idlepolicy.read(sysfs(tmp_path, driver="none", governor="menu", poll="200000"))
    assert policy == {"driver": None, "governor": "menu", "guest_halt_poll_ns": 200000}
    line = idlepolicy.describe(policy)
    assert line.startswith("idle CPUs: no cpuidle driver") and "poll" not in line


def test_a_driver_other_than_haltpoll_is_named_without_the_parameter(tmp_path):
    policy = idlepolicy.read(sysfs(tmp_path, driver="acpi_idle", governor="menu", poll="200000"))
    assert idlepolicy.describe(policy) == "idle CPUs: cpuidle driver acpi_idle, governor menu"


def test_halt_polling_is_set_for_the_block_and_put_back_also_when_it_raises(tmp_path):
    root = sysfs(tmp_path)
    param = root / idlepolicy.HALT_POLL
    with idlepolicy.guest_halt_polling(200000, root) as found:
        assert found == 0
        assert param.read_text().strip() == "200000"
    assert param.read_text().strip() == "0"
    with pytest.raises(KeyboardInterrupt):
        with idlepolicy.guest_halt_polling(50000, root):
            assert param.read_text().strip() == "50000"
            raise KeyboardInterrupt("signal 15")
    assert param.read_text().strip() == "0"


def test_halt_polling_without_the_driver_says_so(tmp_path):
    with pytest.raises(RuntimeError, match="haltpoll cpuidle driver"):
        with idlepolicy.guest_halt_polling(200000, sysfs(tmp_path, poll=None)):
            pass


def test_halt_polling_is_refused_where_the_driver_would_not_read_it(tmp_path):
    root = sysfs(tmp_path, driver="none", governor="menu", poll="200000")
    with pytest.raises(RuntimeError, match="not in use here .cpuidle driver: none.*change nothing"):
        with idlepolicy.guest_halt_polling(0, root):
            pass
    assert (root / idlepolicy.HALT_POLL).read_text().strip() == "200000"


def test_hops_refuses_a_negative_setting():
    with pytest.raises(SystemExit) as e:
        hops.main(["--guest-halt-poll-ns", "-1"])
    assert e.value.code == 2
