"""`sluice bench` against a real relay in its namespace (docs/protocol.md §7): no TUN, no `up`, and
run as the unprivileged user nobody, since it needs no root. Checks the figures against the relay's
own count, the live progress lines, and the errors for a relay with --no-bench, a wrong relay key and
no relay at all.
"""

import json
import os
import re
import shutil
import time

import pytest

import harness as h
import netns
from conftest import record_throughput

pytestmark = pytest.mark.sluice

NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"]
RELAY = f"{netns.RELAY_CLIENT_SIDE_V4}:{h.RELAY_PORT}"
# "[  1.0 s] up      2.31 Gbit/s"
PROGRESS = re.compile(r"^\[\s*\d+\.\d s\] (up|down)\s+\d+\.\d+ [GM]bit/s$", re.M)
DEBUG = os.environ.get("SLUICE_E2E_LOG_LEVEL") in (None, "debug", "trace")


def start_relay(runner, topology, extra=()):
    """A relay allowing one client, at debug level (it logs each bench stream's bytes)."""
    relay_key = h.make_keypair(runner.workdir, "relay")
    client_key = h.make_keypair(runner.workdir, "client")
    level = [] if os.environ.get("SLUICE_E2E_LOG_LEVEL") else ["--log-level", "debug"]
    relay = runner.start("relay", h.relay_argv(relay_key, [client_key.public], extra=[*level, *extra]), ns=topology.relay)
    h.wait_relay_listening(topology, relay)
    return relay, relay_key, client_key


def key_for_nobody(runner, key: h.KeyPair):
    """A copy of the client's key file that the user nobody owns (mode 0600, in the test's directory)."""
    path = runner.workdir / "client-nobody.key"
    shutil.copyfile(key.path, path)
    path.chmod(0o600)
    os.chown(path, 65534, 65534)
    return path


def bench(topology, relay_public: str, key_path, *args: str, timeout: float = 30):
    started = time.monotonic()
    cp = h.run_sluice(["bench", "--relay", RELAY, "--relay-public-key", relay_public, "--private-key", str(key_path), *args],
                      ns=topology.client, timeout=timeout, prefix=NOBODY)
    return cp, cp.stdout.decode(errors="replace"), cp.stderr.decode(errors="replace"), time.monotonic() - started


def test_bench_measures_both_directions(runner, topology):
    relay, relay_key, client_key = start_relay(runner, topology)
    cp, out, err, took = bench(topology, relay_key.public, key_for_nobody(runner, client_key),
                               "--seconds", "2", "--direction", "both", "--json")
    assert cp.returncode == 0, f"sluice bench exited {cp.returncode}:\n{err}\nrelay log:\n{h.tail(relay.log)}"
    assert took < 15, f"a 2 s bench per direction took {took:.1f} s"

    lines = out.strip().splitlines()
    assert len(lines) == 1, f"--json prints exactly one line on stdout, got: {out!r}"
    result = json.loads(lines[0])
    assert result["relay"] == RELAY and result["carriers"] == 1 and result["streams"] == 1
    assert result["handshake_ms"] > 0 and result["open_ms"] > 0
    for direction in ("up", "down"):
        figures = result[direction]
        assert figures["bytes"] > 0, f"{direction}: no bytes moved: {result}"
        assert 1.9 <= figures["seconds"] < 12, f"{direction}: ran {figures['seconds']} s, not about 2"
        assert abs(figures["gbps"] - figures["bytes"] * 8 / figures["seconds"] / 1e9) < 0.01
        record_throughput(f"sluice bench {direction}, 1 stream", figures["bytes"], figures["seconds"])

    progress = PROGRESS.findall(err)
    assert "up" in progress and "down" in progress, f"no live progress for both directions on stderr:\n{err}"
    assert progress.index("down") > progress.index("up"), "both means upload first, then download"
    assert progress.count("up") >= 2, f"expected a line per second (2 s): {progress}"

    if DEBUG:  # the relay's own count agrees exactly: upload counts only bytes the relay consumed
        log = relay.log.read_text(errors="replace")
        sink = re.search(r"bench\.sluice\.invalid:9 \(discard\) closed: (\d+) bytes in, 0 bytes out", log)
        source = re.search(r"bench\.sluice\.invalid:19 \(chargen\) closed: 0 bytes in, (\d+) bytes out", log)
        assert sink and source, f"the relay did not log both bench streams:\n{h.tail(relay.log)}"
        assert int(sink[1]) == result["up"]["bytes"]
        assert int(source[1]) == result["down"]["bytes"]
    assert relay.alive()


def test_bench_several_streams_and_carriers(runner, topology):
    relay, relay_key, client_key = start_relay(runner, topology)
    cp, out, err, _ = bench(topology, relay_key.public, key_for_nobody(runner, client_key),
                            "--seconds", "1", "--direction", "down", "--streams", "3", "--carriers", "2")
    assert cp.returncode == 0, f"sluice bench exited {cp.returncode}:\n{err}"
    assert "relay 10.10.0.2:7000, 2 carriers, 3 streams per direction" in out, out
    assert re.search(r"^down\s+\d+\.\d{3} GB\s+\d+\.\d{2} s\s+\d+\.\d+ [GM]bit/s$", out, re.M), out
    assert not re.search(r"^up\s", out, re.M), "--direction down measures no upload"
    assert relay.log.read_text().count("carrier #") >= 2, "two carriers reached the relay"


def test_bench_refused_by_no_bench(runner, topology):
    relay, relay_key, client_key = start_relay(runner, topology, extra=["--no-bench"])
    cp, out, err, took = bench(topology, relay_key.public, key_for_nobody(runner, client_key), "--seconds", "1")
    assert cp.returncode == 1, f"expected exit 1, got {cp.returncode}:\n{err}"
    assert out == "", "nothing on stdout when there is no result"
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("sluice: the relay refused the bench stream"), err
    assert "--no-bench" in lines[0], err
    assert took < 5, f"a refusal is answered at once, it took {took:.1f} s"
    assert "refused: this relay does not offer bench endpoints" in relay.log.read_text()
    assert relay.alive()


def test_bench_wrong_relay_key_times_out_clearly(runner, topology):
    # The relay waits longer than the client (20 s against 5 s), so the client's own timeout speaks.
    relay, _, client_key = start_relay(runner, topology, extra=["--handshake-timeout", "20"])
    wrong = h.make_keypair(runner.workdir, "not-the-relay")
    cp, out, err, took = bench(topology, wrong.public, key_for_nobody(runner, client_key), "--seconds", "1")
    assert cp.returncode == 1, f"expected exit 1, got {cp.returncode}:\n{err}"
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    for fragment in ("no handshake response within 5 s", "relay public key", "--allow-client", "--psk"):
        assert fragment in lines[0], f"the message lacks {fragment!r}: {lines[0]}"
    assert 4.5 <= took < 10, f"expected the 5 s handshake timeout, took {took:.1f} s"
    assert relay.alive()


def test_bench_without_relay_fails_at_once(runner, topology):
    key = h.make_keypair(runner.workdir, "client")
    cp, out, err, took = bench(topology, h.make_keypair(runner.workdir, "relay").public, key_for_nobody(runner, key),
                               "--seconds", "1")
    assert cp.returncode == 1, err
    assert err.strip().splitlines() == [f"sluice: cannot set up a carrier to {RELAY}: connect to {RELAY}: "
                                        "Connection refused (ECONNREFUSED)"], err
    assert took < 3
