"""Failures and pressure: the relay dies and comes back; one stream's reader stops reading."""

import signal
import struct
import time

import pytest

import content
import harness as h
import netns
from conftest import record_throughput
from relays import echo_roundtrip


@pytest.mark.sluice
def test_relay_restart(make_tunnel):
    t = make_tunnel()
    flow = t.topo.socket(t.topo.client)
    flow.settimeout(5)
    try:
        flow.connect((netns.SERVER_V4, h.TCP_PORT))
        flow.sendall(b"Ihello")
        assert flow.recv(16) == b"hello"

        t.relay.signal(signal.SIGKILL)
        t_kill = time.monotonic()
        t.relay.popen.wait(5)
        outcome, failed_after = h.await_failure(flow, t_kill, timeout=10)
    finally:
        flow.close()
    assert outcome in ("EOF", "reset"), f"the open flow did not fail when the relay died: {outcome}"
    assert failed_after <= 2.5, f"the open flow failed only after {failed_after:.2f} s"

    t.start_relay()
    t_restart = time.monotonic()
    ok = False
    while time.monotonic() - t_restart < 5.0 and not ok:
        ok = echo_roundtrip(t.topo, timeout=1.0)
        if not ok:
            time.sleep(0.1)
    took = time.monotonic() - t_restart
    assert t.client.alive(), "sluice up died when the relay went away"
    assert ok, "no new flow worked within 5 s of the relay's restart"
    print(f"open flow failed {failed_after:.2f} s after the kill; new flow worked {took:.2f} s after the restart")


@pytest.mark.e2e_timeout(150)
def test_stalled_reader_does_not_block_the_carrier(make_tunnel):
    """With one carrier, a stream whose application never reads must not stop a parallel transfer."""
    t = make_tunnel(carriers=1)
    stalled = t.topo.socket(t.topo.client)
    stalled.settimeout(5)
    try:
        stalled.connect((netns.SERVER_V4, h.TCP_PORT))
        stalled.sendall(b"F" + struct.pack("!Q", 1 << 30))  # the server sends up to 1 GiB; we read nothing
        time.sleep(1.5)  # let every buffer and window on the way fill up

        size = 64 * content.MiB
        out = t.runner.workdir / "download.bin"
        r = h.curl(t.topo, ["-o", str(out), h.url(t.topo, "ipv4", f"/bytes/{size}")], max_time=60)
        assert r.ok, f"the parallel transfer did not complete: curl {r.returncode}: {r.stderr}"
        assert content.file_sha256(out) == content.sha256(size)
        record_throughput(f"download 64 MiB beside a stalled stream ({t.mode})", size, r.info["time_total"])

        # The stalled stream was only paused: it delivers, in order, once its reader reads again.
        want = content.MiB
        got = bytearray()
        stalled.settimeout(10)
        while len(got) < want:
            b = stalled.recv(want - len(got))
            assert b, "the stalled stream was closed"
            got += b
        assert bytes(got) == content.block(0), "the stalled stream's data arrived corrupted"
    finally:
        stalled.close()
