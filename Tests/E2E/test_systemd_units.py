"""The systemd units in contrib/systemd pass `systemd-analyze verify` without a warning, with
ExecStart pointing at the binary under test (the units name /usr/local/bin/sluice, where the README
installs it)."""

import shutil
import subprocess

import pytest

import harness as h

UNITS = h.REPO / "contrib" / "systemd"


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed (scripts/deps.sh installs it)")
def test_units_verify_cleanly(tmp_path):
    names = []
    for unit in ("sluice-relay.service", "sluice@.service"):
        text = (UNITS / unit).read_text()
        assert "/usr/local/bin/sluice " in text
        (tmp_path / unit).write_text(text.replace("/usr/local/bin/sluice", h.sluice_bin()))
    # A template is verified through an instance of it.
    shutil.copy(tmp_path / "sluice@.service", tmp_path / "sluice@sluice0.service")
    for unit in ("sluice-relay.service", "sluice@sluice0.service"):
        names.append(str(tmp_path / unit))
    cp = subprocess.run(["systemd-analyze", "verify", *names], capture_output=True, text=True, timeout=60)
    assert cp.returncode == 0 and cp.stderr.strip() == "", cp.stderr


def test_units_grant_only_what_each_needs():
    relay = (UNITS / "sluice-relay.service").read_text()
    client = (UNITS / "sluice@.service").read_text()
    assert "CapabilityBoundingSet=CAP_NET_BIND_SERVICE\n" in relay, "the relay needs no CAP_NET_ADMIN"
    assert "CapabilityBoundingSet=CAP_NET_ADMIN\n" in client
    assert "ExecStart=/usr/local/bin/sluice up --config /etc/sluice/%i.json" in client
    assert "ExecStopPost=-/usr/local/bin/sluice down --tun %i" in client
    for unit in (relay, client):
        assert "NoNewPrivileges=yes" in unit and "ProtectHome=yes" in unit
