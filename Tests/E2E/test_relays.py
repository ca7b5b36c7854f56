"""Several relays for one client (`up --relays`): failover — the relay in use killed, stopped and
restarted — and spread.

Both relays run in the relay namespace on ports of their own (7000 and 7002), each with its own key.
A short `--ping-interval 0.5 --ping-misses 2` lets a relay that goes silent (SIGSTOP: no RST, no FIN)
be found down within a second.
"""

import signal
import time

import pytest

import checked
import content
import harness as h
import relays

pytestmark = pytest.mark.sluice

PINGS = ["--ping-interval", "0.5", "--ping-misses", "2"]
SILENCE = 0.5 * 2  # --ping-interval × --ping-misses


def relay_health(topo) -> list[tuple[str, bool]]:
    """(health, takes new flows) of each configured relay, as the client's status shows it."""
    return [(r["health"], r["takesNewFlows"]) for r in relays.client_status(topo)["relays"]]


@pytest.mark.e2e_timeout(150)
def test_failover_kill_restart_and_stop(runner, topology, servers):
    client_key = h.make_keypair(runner.workdir, "client")
    a, b = relays.start_relays(runner, topology, [7000, 7002], client_key)
    relays.start_client(runner, topology, relays.client_argv([a.target, b.target], client_key, "failover", carriers=2, extra=PINGS))
    status = relays.client_status(topology)
    assert {c["relay"] for c in status["carriers"]} == {a.endpoint}, status["carriers"]
    assert relay_health(topology) == [("up", True), ("unknown", False)]
    assert (a.carriers(), b.carriers()) == (2, 0), "every carrier to the first relay, none to the second"

    # SIGKILL the relay in use under a 64 MiB transfer: the flow fails at once, a new one goes through
    # the second relay within a second.
    download = checked.Download(topology, size=64 * content.MiB, pause=0.01).start()
    download.wait_received(4 * content.MiB)
    assert a.streams() == 1
    killed = a.kill()
    download.join(10)
    assert download.outcome in ("reset", "eof"), f"the transfer on the killed relay: {download.outcome}"
    failed_after = download.ended_at - killed
    assert failed_after <= 1.0, f"the transfer failed {failed_after:.2f} s after the kill"
    took = relays.first_flow_after(topology, killed, timeout=5)
    assert took <= 1.0, f"the first new flow worked {took:.2f} s after the kill"
    held = relays.open_echo(topology, timeout=2)
    assert held is not None
    assert b.streams() == 1 and b.carriers() == 2, "the second relay took the carriers and the flow"
    assert relay_health(topology) == [("down", False), ("up", True)]
    print(f"SIGKILL: transfer failed after {failed_after * 1000:.0f} ms, a new flow worked after {took * 1000:.0f} ms")

    # The first relay comes back: its probe finds it, new flows return to it, the flow held on the
    # second stays there and keeps working.
    a.restart()
    h.wait_for(lambda: relay_health(topology)[0] == ("up", True), 15, interval=0.2, what="the first relay to be up again")
    back = relays.open_echo(topology, timeout=2)
    assert back is not None and a.streams() == 1, "a new flow went back to the first relay"
    held.sendall(b"held")
    assert held.recv(16) == b"held", "the flow on the second relay still works"
    states = {(c["relay"], c["state"]) for c in relays.client_status(topology)["carriers"]}
    assert (b.endpoint, "draining") in states, states
    held.close()
    back.close()
    h.wait_for(lambda: b.carriers() == 0, 5, interval=0.2, what="the second relay's carriers to close after their last flow")

    # SIGSTOP the first relay: it says nothing at all. Its flow is reset within the ping interval ×
    # misses, and new flows go to the second relay.
    on_a = relays.open_echo(topology, timeout=2)
    assert on_a is not None and a.streams() == 1
    a.proc.signal(signal.SIGSTOP)
    stopped = time.monotonic()
    try:
        outcome, detected = h.await_failure(on_a, stopped, timeout=10)
        on_a.close()
        assert outcome in ("reset", "EOF"), f"the flow on the stopped relay: {outcome}"
        assert detected <= SILENCE + 0.5, f"the stopped relay was found {detected:.2f} s after SIGSTOP (pings say {SILENCE} s)"
        took = relays.first_flow_after(topology, stopped, timeout=5)
        assert took <= detected + 1.0, f"a new flow worked only {took - detected:.2f} s after the relay was found down"
        assert relay_health(topology)[0][0] == "down"
        assert b.streams() == 0 and b.carriers() == 2
        print(f"SIGSTOP: found down after {detected * 1000:.0f} ms (--ping-interval 0.5 × --ping-misses 2), "
              f"a new flow worked after {took * 1000:.0f} ms")
    finally:
        a.proc.signal(signal.SIGCONT)
    assert "down: no answer to PING" in open(runner.logs["client"]).read(), "the client's log says why"


@pytest.mark.e2e_timeout(60)
def test_spread_uses_both_relays(runner, topology, servers):
    client_key = h.make_keypair(runner.workdir, "client")
    a, b = relays.start_relays(runner, topology, [7000, 7002], client_key)
    relays.start_client(runner, topology, relays.client_argv([a.target, b.target], client_key, "spread", carriers=1, extra=PINGS))
    h.wait_for(lambda: a.carriers() == 1 and b.carriers() == 1, 10, interval=0.1, what="a carrier to each relay")

    flows = [relays.open_echo(topology, timeout=2) for _ in range(8)]
    try:
        assert all(flows), "a flow did not open"
        for i, s in enumerate(flows):  # all eight open at once, each answering
            s.sendall(str(i).encode())
        assert [s.recv(16) for s in flows] == [str(i).encode() for i in range(8)]
        counts = (a.streams(), b.streams())
        assert sum(counts) == 8 and min(counts) >= 3, f"streams per relay: {counts}"
        print(f"8 concurrent flows: {counts[0]} on the first relay, {counts[1]} on the second")
        assert relay_health(topology) == [("up", True), ("up", True)]
        # What a person reads: each relay's line with its health and load, each carrier's relay.
        table = topology.exec(topology.client, [h.sluice_bin(), "status", "--tun", h.TUN], timeout=20).stdout
        for r, n in zip((a, b), counts):
            assert f"    {r.endpoint}, key {r.key.public}: up, takes new flows, 1 carrier, {n} streams" in table, table
            assert f"  carrier #1 to {r.endpoint}: up" in table, table
        # Each carrier's UDP path goes to its own relay: a line for each relay's, under the relay's.
        lines = table.splitlines()
        for r in (a, b):
            at = next(i for i, line in enumerate(lines) if line.startswith(f"    {r.endpoint}, key "))
            assert lines[at + 1].startswith("      UDP path: "), table
    finally:
        for s in flows:
            if s:
                s.close()
    for r in (a, b):
        assert "carrier #1 client" in r.log(), f"{r.name} saw no carrier"
