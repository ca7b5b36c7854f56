"""The benchmark's floor modes (Benchmarks/e2e/floor.py, forward.c): two C forwarders in the client and
relay namespaces, as `make bench` runs them, carrying TCP and UDP.

Each mode's chain must pass the checks the benchmark makes before it takes a figure (bytes both ways,
datagrams of every size from new sockets), carry loadgen's new-connection and new-socket tests with
nothing failed or lost, and afterwards hold no more descriptors than before: a forwarder that leaked a
socket per connection would run out of them in the benchmark's rate test. A chain whose forwarders do
not agree (A seals, B copies) must fail both checks. With --spin-us both forwarders poll for the spin
window after traffic and then sleep again. With --unit (floor-aead-64k) no read or write of plain bytes
moves more than the unit. No sluice binary needed.
"""

import json
import os
import socket
import sys
import time
from pathlib import Path

import pytest

import harness as h
import netns

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "Benchmarks" / "e2e"))
import bench  # noqa: E402
import floor  # noqa: E402
import measure  # noqa: E402
import proc  # noqa: E402


@pytest.fixture
def plain(request, runner):
    """The bench's namespaces with the relay forwarding nothing (as in the floor modes), and the loadgen
    server in the server namespace."""
    topo = netns.Topology(mode="sluice", tag="e2e")

    def finish() -> None:
        runner.close()
        topo.destroy()

    request.addfinalizer(finish)
    topo.create()
    loadgen = bench.compile_c(runner.workdir, "loadgen")
    measure.start_loadgen_server(runner, loadgen, runner.workdir, topo)
    return topo, loadgen


@pytest.fixture
def forward(workdir):
    return bench.compile_c(workdir, "forward", ("-lgcrypt",))


def _fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def _loadgen(topo, loadgen, *args) -> dict:
    cp = topo.exec(topo.client, [str(loadgen), *map(str, args)], timeout=20)
    assert cp.returncode == 0, cp.stderr
    return json.loads(cp.stdout.strip().splitlines()[-1])


@pytest.mark.e2e_timeout(60)
@pytest.mark.parametrize("mode", floor.MODES)
def test_floor_chain_forwards_tcp_and_udp(mode, plain, runner, forward):
    topo, loadgen = plain
    a, b = floor.start(runner, topo, runner.workdir, forward, mode, [measure.CLOSE_PORT], [measure.UDP_PORT])
    floor.check(topo, size=1 << 20)
    checked = floor.check_udp(topo)
    assert checked["datagrams_each_way"] == len(floor.CHECK_SIZES) * floor.CHECK_SOCKETS
    time.sleep(0.2)  # the check's connection closing in both forwarders
    before = {p.name: _fds(p.pid) for p in (a, b)}

    r = _loadgen(topo, loadgen, "tcp-cc", floor.ADDRESS, measure.CLOSE_PORT, 0.5, 16)
    assert r["completed"] > 100 and r["failed"] == 0 and r["timeouts"] == 0, r
    # Every connection closed both of its sockets.
    h.wait_for(lambda: all(_fds(p.pid) <= before[p.name] for p in (a, b)), 5,
               what=f"the forwarders to close the sockets of {r['completed']:,} connections: {before} before")

    r = _loadgen(topo, loadgen, "udp-rr", floor.ADDRESS, measure.UDP_PORT, 0.3, 4, 64)
    assert r["received"] > 100 and r["lost"] == 0, r
    # At thousands per second this opens more sockets than A keeps associations (1,024): the oldest are
    # closed to make room, and none may be lost meanwhile.
    r = _loadgen(topo, loadgen, "udp-new", floor.ADDRESS, measure.UDP_PORT, 0.5, 16, 64)
    assert r["received"] > 100 and r["lost"] == 0 and r["failed"] == 0, r
    for p in (a, b):
        assert _fds(p.pid) <= before[p.name] + 1024, f"{p.name} holds more than 1,024 associations"
    assert a.alive() and b.alive(), h.tail(a.log) + h.tail(b.log)


@pytest.mark.e2e_timeout(30)
@pytest.mark.parametrize("protocol", ("tcp", "udp"))
def test_floor_checks_fail_when_the_forwarders_disagree(protocol, plain, runner, forward):
    """A seals, B copies: the server gets sealed bytes, and A cannot open what comes back. Both checks
    must refuse such a chain a figure."""
    topo, _ = plain
    ports = [floor.CHECK_PORT]
    for name, ns, side, cipher in (("forward-relay", topo.relay, "relay", floor.cipher_args("floor", "relay")),
                                   ("forward-client", topo.client, "client", floor.cipher_args("floor-aead", "client"))):
        ready = runner.workdir / f"{name}.ready"
        p = runner.start(name, [str(forward), *cipher, "--ready", str(ready), *floor.pairs(side, ports, ports)], ns=ns)
        h.wait_for(lambda: ready.exists() or not p.alive(), 10, what=f"{name} to listen")
    with pytest.raises(RuntimeError, match="the chain is broken|failed"):
        if protocol == "tcp":
            floor.check(topo, size=1 << 16, timeout=3)
        else:
            floor.check_udp(topo, timeout=1)


SPIN_S = 0.3  # long enough for the CPU it takes to show in /proc's 10 ms ticks


@pytest.mark.e2e_timeout(30)
def test_spin_us_polls_after_traffic_then_sleeps(plain, runner, forward):
    """forward.c --spin-us: after traffic each forwarder keeps polling (a CPU busy) until the spin window
    has passed since the last datagram, then sleeps; the UDP sweep's wake-up a second later brings no
    events and must not start another spin."""
    topo, _ = plain
    a, b = floor.start(runner, topo, runner.workdir, forward, "floor", [], [measure.UDP_PORT],
                       ["--spin-us", str(int(SPIN_S * 1e6))])
    with netns.socket_in(topo.client, kind=socket.SOCK_DGRAM) as s:
        s.settimeout(2)
        s.connect((floor.ADDRESS, measure.UDP_PORT))
        for i in range(20):
            s.send(b"spin %d" % i)
            assert s.recv(64) == b"spin %d" % i
    after_traffic = {p.name: proc.cpu_seconds(p.pid) for p in (a, b)}
    time.sleep(SPIN_S + 0.2)
    after_spin = {p.name: proc.cpu_seconds(p.pid) for p in (a, b)}
    # The sweep's 1 s timeout starts when the spin ends, so its wake-up falls inside this wait, and so
    # would a spin it started.
    time.sleep(1.3)
    quiet_end = {p.name: proc.cpu_seconds(p.pid) for p in (a, b)}
    assert a.alive() and b.alive(), h.tail(a.log) + h.tail(b.log)
    for p in (a, b):
        spun, quiet = after_spin[p.name] - after_traffic[p.name], quiet_end[p.name] - after_spin[p.name]
        # A forwarder that sleeps after each datagram uses next to nothing here; one that polls uses most
        # of a CPU, less what other processes take from it (0.14-0.30 s of the 0.3 s in trial runs).
        assert spun >= 0.2 * SPIN_S, (f"{p.name} used {spun:.2f} s of CPU in the {SPIN_S + 0.2:.1f} s after "
                                      f"traffic: it slept instead of polling for {SPIN_S} s")
        assert quiet <= 0.03, (f"{p.name} used {quiet:.2f} s of CPU in 1.3 s without traffic after its spin "
                               "ended: it kept polling, or the sweep's wake-up started a spin")


def _io_calls(pid: int) -> tuple[int, int]:
    """read- and write-like system calls `pid` made so far (/proc/PID/io syscr, syscw)."""
    fields = dict(line.split(": ") for line in Path(f"/proc/{pid}/io").read_text().splitlines())
    return int(fields["syscr"]), int(fields["syscw"])


@pytest.mark.e2e_timeout(30)
def test_unit_caps_every_read_and_write_of_plain_bytes(plain, runner, forward):
    """forward.c --unit N (floor.UNIT_MODE runs floor-aead with 65,536): A reads the application's bytes
    and writes the server's answer to it, B reads the server's bytes and writes the client's to it, each
    at most N bytes a call, so 1 MiB each way takes at least 1 MiB / N reads and as many writes at each
    forwarder. Uncapped, A took 20-23 reads and 16-20 writes for it (three trial runs)."""
    topo, _ = plain
    unit, size = 4096, 1 << 20
    a, b = floor.start(runner, topo, runner.workdir, forward, "floor-aead", [], [], ["--unit", str(unit)])
    before = {p.name: _io_calls(p.pid) for p in (a, b)}
    floor.check(topo, size=size)
    for p in (a, b):
        (r0, w0), (r1, w1) = before[p.name], _io_calls(p.pid)
        assert r1 - r0 >= size // unit and w1 - w0 >= size // unit, (
            f"{p.name} moved 1 MiB each way in {r1 - r0} reads and {w1 - w0} writes: more than {unit} bytes a call")
    assert a.alive() and b.alive(), h.tail(a.log) + h.tail(b.log)
