"""Relay workers (issue 17, part 2): `sluice relay --workers 2` uses more than one core, and what is
per relay stays per relay across its workers.

- two clients pushing at once (`sluice bench --direction up`, one carrier each) both progress, the
  front places their carriers on different workers (`sluice status --relay`: `workers` [1, 1]), and
  two of the relay's threads each burn CPU (utime + stime in /proc/PID/task/*/stat); both uploads'
  windows grow from the one pool of all workers (`windowGrowth`; each client's share on its line) and
  give it back when they end;
- a handshake message 1 replayed after its carrier went to worker 1 is refused (the replay rule is
  the relay's: every handshake is checked on the front);
- one client's `--max-streams` and `--max-udp-mappings` hold over its carriers on two workers: a
  stream past the cap is reset with reason `limit` on the other worker, and a UDP association past
  the cap evicts the longest-idle one on the worker that holds it; a new association on a worker that
  so evicted its last one still times out when idle;
- the UDP path (docs/protocol.md §8) of two clients whose carriers are on two workers: each is
  offered an index of its worker's class (index % 2 == worker), its PROBE is answered and its
  datagrams go both ways on the path, not the carrier, with no packet landing on the other worker
  (which would count it as an unknown index and stay silent).

Carriers here are spoken by hand (sluiceproto.py) so that each one's worker is known: the front
places a carrier on the worker with the fewest, worker 0 first.
"""

from __future__ import annotations

import json
import os
import socket
import struct
import threading
import time

import pytest

import harness as h
import netns
import sluiceproto as sp
from test_udp_path import _carrier as path_carrier, _frames_until

pytestmark = pytest.mark.sluice

RELAY = (netns.RELAY_CLIENT_SIDE_V4, h.RELAY_PORT)
LIMIT = 4  # RESET reason: the relay's per-client cap


def start_relay(runner, topo, clients: list[h.KeyPair], extra=()):
    key = h.make_keypair(runner.workdir, "relay")
    control = runner.workdir / "relay-workers.sock"
    argv = h.relay_argv(key, [c.public for c in clients], extra=["--workers", "2", "--control", str(control), *extra])
    relay = runner.start("relay", argv, ns=topo.relay)
    h.wait_relay_listening(topo, relay)
    return relay, key, control


def relay_status(topo, control) -> dict:
    cp = topo.exec(topo.relay, [h.sluice_bin(), "status", "--relay", "--control", str(control), "--json"], timeout=20)
    assert cp.returncode == 0, f"sluice status --relay: {cp.stderr}"
    return json.loads(cp.stdout)["relays"][0]["statistics"]


def thread_cpu(pid: int) -> dict[str, float]:
    """CPU seconds (user + system) of each thread of `pid`, by thread id and name."""
    tick = os.sysconf("SC_CLK_TCK")
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            stat = open(f"/proc/{pid}/task/{tid}/stat").read()
        except FileNotFoundError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        out[f"{tid} {name}"] = (int(fields[11]) + int(fields[12])) / tick  # utime, stime
    return out


def carrier(topo, relay_key: h.KeyPair, client: h.KeyPair) -> sp.Carrier:
    s = topo.socket(topo.client)
    s.settimeout(5)
    s.connect(RELAY)
    return sp.Carrier.connect(None, sp.private_key_bytes(relay_key.public), sp.private_key_bytes(client.private), sock=s)


def wait_workers(topo, control, expected: list[int]) -> dict:
    return h.wait_for(lambda: (lambda s: s if s["workers"] == expected else None)(relay_status(topo, control)), 5,
                      what=f"the relay's workers to hold {expected} carriers")


@pytest.mark.e2e_timeout(60)
def test_two_clients_push_at_once_on_two_cores(runner, topology):
    clients = [h.make_keypair(runner.workdir, f"client{i}") for i in (1, 2)]
    relay, relay_key, control = start_relay(runner, topology, clients)
    results: dict[int, float] = {}

    def push(i: int, key: h.KeyPair) -> None:
        cp = h.run_sluice(["bench", "--relay", f"{RELAY[0]}:{RELAY[1]}", "--relay-public-key", relay_key.public,
                           "--private-key", str(key.path), "--direction", "up", "--seconds", "3", "--carriers", "1",
                           "--json"], ns=topology.client, timeout=30)
        assert cp.returncode == 0, f"sluice bench {i}: {cp.stderr.decode(errors='replace')}"
        results[i] = json.loads(cp.stdout)["up"]["gbps"]

    before = thread_cpu(relay.pid)
    pushers = [threading.Thread(target=push, args=(i, k)) for i, k in enumerate(clients)]
    for p in pushers:
        p.start()
    time.sleep(1.5)
    during = relay_status(topology, control)
    text = topology.exec(topology.relay, [h.sluice_bin(), "status", "--relay", "--control", str(control)], timeout=20).stdout
    for p in pushers:
        p.join(40)
    after = thread_cpu(relay.pid)
    used = {t: after[t] - before.get(t, 0) for t in after}
    busy = sorted(used.values(), reverse=True)
    print(f"two clients pushing: {', '.join(f'{results.get(i, 0):.2f}' for i in range(2))} Gbit/s; relay CPU seconds "
          f"by thread: {', '.join(f'{t}: {s:.2f}' for t, s in sorted(used.items()))}; status workers {during['workers']}")
    assert len(results) == 2 and min(results.values()) > 0.05, f"a client made no progress: {results}"
    assert during["carriers"] == 2 and during["workers"] == [1, 1], f"the carriers were not spread: {during}"
    assert len(during["clients"]) == 2 and all(c["carriers"] == 1 for c in during["clients"])
    assert len(busy) >= 2 and busy[1] >= 0.2, f"only one relay thread worked: {used}"
    assert any("sluice-worker-1" in t for t, s in used.items() if s >= 0.2), f"worker 1 did not work: {used}"
    # Both uploads' windows grew, from the one pool of the relay's workers, and gave it back at the end.
    assert during["windowGrowthPool"] == 64 << 20 and 0 < during["windowGrowth"] <= 2 * (8 << 20), during
    # Each client's share, at most one carrier's 8 MiB, as its line in the text says.
    shares = [c["windowGrowth"] for c in during["clients"]]
    assert all(0 <= g <= 8 << 20 for g in shares) and sum(shares) > 0, during["clients"]
    assert "upload windows grown by" in text.split("\n  client ", 1)[1], text
    h.wait_for(lambda: relay_status(topology, control)["windowGrowth"] == 0, 5,
               what="the uploads' window growth to go back to the relay's pool")
    assert relay.alive()


def test_replay_refused_across_workers(runner, topology):
    client = h.make_keypair(runner.workdir, "client")
    relay, relay_key, control = start_relay(runner, topology, [client], extra=["--handshake-timeout", "1"])
    first = carrier(topology, relay_key, client)  # worker 0
    # The second carrier by hand, keeping its message 1: the front places it on worker 1.
    s = topology.socket(topology.client)
    s.settimeout(5)
    s.connect(RELAY)
    msg1, state = sp.handshake_message1(sp.X25519PrivateKey.from_private_bytes(sp.private_key_bytes(client.private)),
                                        sp.private_key_bytes(relay_key.public), None)
    s.sendall(msg1)
    assert len(sp._recv_exactly(s, 64)) == 64
    wait_workers(topology, control, [1, 1])

    replay = topology.socket(topology.client)
    replay.settimeout(4)
    replay.connect(RELAY)
    replay.sendall(msg1)
    try:
        got = replay.recv(64)
    except (ConnectionResetError, socket.timeout):
        got = b""
    replay.close()
    assert got == b"", "the relay answered a replayed message 1"
    h.wait_for(lambda: "replay" in relay.log.read_text(errors="replace"), 5, what="the relay to log the replay")
    stats = relay_status(topology, control)
    assert stats["drops"].get("handshake-failed") == 1 and stats["workers"] == [1, 1], stats
    first.close()
    s.close()
    assert relay.alive()


def test_client_caps_hold_across_workers(runner, topology):
    client = h.make_keypair(runner.workdir, "client")
    relay, relay_key, control = start_relay(runner, topology, [client],
                                            extra=["--max-streams", "3", "--max-udp-mappings", "2"])
    on0, on1 = carrier(topology, relay_key, client), carrier(topology, relay_key, client)
    wait_workers(topology, control, [1, 1])

    # Streams: two on worker 0, then the third and fourth on worker 1, where the fourth is over the cap.
    for _ in range(2):
        assert on0.wait_stream(on0.open(("domain", "bench.sluice.invalid"), 9))[0] == "OPEN_OK"
    assert on1.wait_stream(on1.open(("domain", "bench.sluice.invalid"), 9))[0] == "OPEN_OK"
    refused = on1.wait_stream(on1.open(("domain", "bench.sluice.invalid"), 9))
    assert refused[:2] == ("RESET", LIMIT), f"a fourth stream over two workers was not refused at the cap of 3: {refused}"

    # UDP mappings: two on worker 0, then one on worker 1, which asks worker 0 to evict its oldest.
    oldest = on0.open(netns.SERVER_V4, 0, proto=17)
    assert on0.wait_stream(oldest)[0] == "OPEN_OK"
    time.sleep(0.05)
    assert on0.wait_stream(on0.open(netns.SERVER_V4, 0, proto=17))[0] == "OPEN_OK"
    assert on1.wait_stream(on1.open(netns.SERVER_V4, 0, proto=17))[0] == "OPEN_OK"
    evicted = on0.wait_stream(oldest)
    assert evicted[0] == "RESET" and "evicted" in evicted[2], f"worker 0's oldest mapping stayed: {evicted}"
    stats = relay_status(topology, control)
    (entry,) = stats["clients"]
    assert entry["streams"] == 3 and entry["udpMappings"] == 2 and entry["carriers"] == 2, entry
    assert stats["drops"].get("stream-refused-limit") == 1, stats
    on0.close()
    on1.close()
    assert relay.alive()


@pytest.mark.e2e_timeout(60)
def test_a_worker_that_evicts_its_last_mapping_still_times_out_the_new_one(runner, topology):
    """At the cap, a new UDP association on a worker whose only other one is the longest idle there
    evicts it, which leaves that worker's idle list for the client empty; the new association must
    still be on the worker's list, so that the idle timeout closes it (and a later eviction finds it)."""
    client = h.make_keypair(runner.workdir, "client")
    relay, relay_key, control = start_relay(runner, topology, [client],
                                            extra=["--max-udp-mappings", "2", "--udp-timeout", "1"])
    on0, on1 = carrier(topology, relay_key, client), carrier(topology, relay_key, client)
    wait_workers(topology, control, [1, 1])
    first = on0.open(netns.SERVER_V4, 0, proto=17)
    assert on0.wait_stream(first)[0] == "OPEN_OK"
    assert on1.wait_stream(on1.open(netns.SERVER_V4, 0, proto=17))[0] == "OPEN_OK"
    newest = on0.open(netns.SERVER_V4, 0, proto=17)  # worker 0 holds two of three: it evicts its own
    assert on0.wait_stream(newest)[0] == "OPEN_OK"
    evicted = on0.wait_stream(first)
    assert evicted[0] == "RESET" and "evicted" in evicted[2], evicted
    timed_out = on0.wait_stream(newest, timeout=5)
    assert timed_out[0] == "RESET" and "idle" in timed_out[2], f"the new association never timed out: {timed_out}"
    h.wait_for(lambda: relay_status(topology, control)["clients"][0]["udpMappings"] == 0, 5,
               what="the relay to close both workers' idle mappings")
    on0.close()
    on1.close()
    assert relay.alive()


@pytest.mark.e2e_timeout(60)
def test_udp_path_of_two_clients_on_two_workers(runner, topology, servers):
    clients = [h.make_keypair(runner.workdir, f"client{i}") for i in (1, 2)]
    relay, relay_key, control = start_relay(runner, topology, clients)
    carriers, sockets = [], []
    for worker, client in enumerate(clients):  # the front places the first on worker 0, the second on worker 1
        c = path_carrier(topology, relay_key, client, hello=sp.FEATURE_POLICY_REFUSALS | sp.FEATURE_UDP_PATH)
        carriers.append(c)
        wait_workers(topology, control, [1, 0] if worker == 0 else [1, 1])
        offers = [p for t, _, p in _frames_until(c, sp.UDP_PATH, 3.0) if t == sp.UDP_PATH]
        assert offers, f"client {worker + 1}: no UDP_PATH offered"
        path = sp.UDPPath(c, struct.unpack(">I", offers[0])[0])
        assert path.index % 2 == worker, f"worker {worker} gave index {path.index:#x}, of the other worker's class"
        u = topology.socket(topology.client, socket.AF_INET, socket.SOCK_DGRAM)
        sockets.append(u)
        u.connect(RELAY)
        u.settimeout(2)
        u.send(path.probe(worker, padding=200))
        kind, _, plaintext = path.open(u.recv(65535))
        assert kind == sp.PATH_PROBE_REPLY and plaintext[:8] == struct.pack(">Q", worker), "the PROBE went unanswered"
        sid = c.open(netns.SERVER_V4, h.UDP_PORT, window=0, proto=17)
        assert c.wait_stream(sid)[0] == "OPEN_OK"
        c.send_frames([sp.frame(sp.UDP_PATH_USE, 0, b"\x01")])
        for n in range(3):
            data = f"client {worker + 1} datagram {n}".encode()
            u.send(path.datagram(sid, netns.SERVER_V4, h.UDP_PORT, b"E" + data))
            kind, _, plaintext = path.open(u.recv(65535))
            assert kind == sp.PATH_DATAGRAM and struct.unpack(">I", plaintext[:4])[0] == sid
            assert plaintext[11:].endswith(data), plaintext
        on_carrier = [t for t, _, _ in _frames_until(c, sp.DATAGRAM, 0.3) if t == sp.DATAGRAM]
        assert not on_carrier, f"client {worker + 1}: answers came on the carrier too"

    stats = relay_status(topology, control)
    assert stats["workers"] == [1, 1], stats
    assert sorted(c["udpPaths"] for c in stats["clients"]) == [1, 1], stats["clients"]
    events, drops = stats["events"], stats["drops"]
    assert events.get("udp-paths-offered") == 2 and events.get("udp-path-probes-answered") == 2, events
    assert events.get("udp-path-datagrams-in") == 6 and events.get("udp-path-datagrams-out") == 6, events
    assert not any(k.startswith("udp-path") for k in drops), f"path packets dropped: {drops}"
    for s in sockets + carriers:
        s.close()
    assert relay.alive()
