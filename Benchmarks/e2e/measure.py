"""One mode of the benchmark: the topology, the servers, the tunnel (in sluice mode) and every test.

The tests run in groups, each (in sluice mode) on a freshly started relay and client, so that one test's
left-overs — UDP mappings waiting for their timeout, lwIP connections in TIME_WAIT, memory the allocator
kept — do not colour the next one:

  udp         idle client RSS; UDP request/response on one socket, then with a new socket per request
              (client RSS sampled throughout)
  idle_flows  N idle TCP flows held open: client RSS before and after → KiB per flow
  tcp_cc      new TCP connections per second
  iperf       iperf3: 1 stream up, 1 stream down (client+relay CPU time per GB), 4 streams up and down

udp and tcp_cc start with the same tests at one request or connection in flight: their latency, which
explains a low rate (a rate at N in flight is at most N / latency).

In kernel mode the same tests run over plain forwarding: the ceiling. In the floor modes (floor.py) the
"tunnel" is two forward.c processes in a chain: the iperf, tcp_cc and udp groups run there (the udp
group's rates and latencies, not the client's RSS), the applications aiming at forwarder A
(`self.target`); idle_flows does not (it measures memory per flow, which only a TUN-based tunnel keeps). In the peer modes (peers.py) the tunnel is wireguard-go or OpenVPN,
whose client and relay processes are measured as Sluice's are, through every group. A failing test
records its error and the others still run. Processes are started through the E2E harness and stopped
by pid.

Each side's peak RSS (`rss_peak_client_mib`, `rss_peak_relay_mib`) is the largest VmRSS sampled while
the UDP and iperf3 tests ran (not the idle flows: they have their own figure).
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import subprocess
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

import floor
import harness as h
import hoststeal
import kstats
import netns
import peers
import polling
from proc import RssSampler, cpu_user_system, steady_rss_kib
import socksmode

CLOSE_PORT, HOLD_PORT, UDP_PORT, IPERF_PORT = 9100, 9101, 9102, 5201
ECHO_PORT = 9103  # loadgen's TCP echo: hops.py's connect-and-request test
MSS = 1448  # bytes per segment on a 1500-byte path, to put iperf3's retransmits in proportion
SERVER = netns.SERVER_V4
GROUPS = ("udp", "idle_flows", "tcp_cc", "iperf")  # the order they run in; see the module comment
MODES = ("kernel", *floor.ALL_MODES, *peers.MODES, "sluice", *socksmode.MODES, *polling.MODES)
FLOOR_GROUPS = ("udp", "tcp_cc", "iperf")  # what a chain of two forwarders can run


def kind_of(mode: str) -> str:
    """What runs for `mode`: itself, or the mode it runs with other arguments (floor-poll and sluice-poll:
    polling.py; floor-aead-64k: floor.UNIT_MODE)."""
    return floor.base(polling.base(mode))


def start_loadgen_server(runner: h.Runner, loadgen, workdir: Path, topo: netns.Topology) -> h.Proc:
    """The loadgen server every test here talks to, in the server namespace, on the tests' ports;
    returns once it listens (an exit before that is an error with its log)."""
    ready = workdir / "loadgen-ready.json"
    proc = runner.start("loadgen-server", [str(loadgen), "server", "--tcp-close", str(CLOSE_PORT),
                                           "--tcp-hold", str(HOLD_PORT), "--udp-echo", str(UDP_PORT),
                                           "--tcp-echo", str(ECHO_PORT), "--ready", str(ready)], ns=topo.server)
    h.wait_for(lambda: ready.exists() or not proc.alive(), 10, what="the loadgen server")
    if not proc.alive():
        raise RuntimeError(f"loadgen server exited:\n{h.tail(proc.log)}")
    return proc


@dataclass
class Settings:
    iperf_seconds: float
    rate_seconds: float
    flows: int
    tcp_cc_concurrency: int = 16
    udp_window: int = 16
    udp_concurrency: int = 16
    udp_size: int = 64
    hold_concurrency: int = 64
    latency_seconds: float = 3.0
    settle_seconds: float = 1.0
    groups: tuple = GROUPS
    iperf_streams: tuple = (1, 4)  # the iperf group's stream counts, each run up and down
    # The figures the udp and tcp_cc groups measure, by key; None: all of them. A paired turn
    # (paired.py) names the few its targets compare.
    only: tuple | None = None
    client_args: list = field(default_factory=list)
    relay_args: list = field(default_factory=list)
    openvpn_args: list = field(default_factory=list)  # extra arguments for both OpenVPN ends
    floor_args: list = field(default_factory=list)  # extra arguments for both forwarders of a floor mode


QUICK = Settings(iperf_seconds=2, rate_seconds=2, flows=2000, latency_seconds=1, settle_seconds=0.5)
FULL = Settings(iperf_seconds=10, rate_seconds=10, flows=10000)


# -- one mode ---------------------------------------------------------------------------------------

class ModeRun:
    """Runs every test of one mode (one of MODES); `run()` returns figures, details, errors.

    `client` and `relay` are the tunnel's two processes: `sluice up` and `sluice relay`, in the floor
    modes forwarders A and B, in the peer modes the VPN's two ends (their CPU time and RSS are measured
    the same way)."""

    def __init__(self, mode: str, settings: Settings, workdir: Path, loadgen: Path,
                 say: Callable[[str], None] = print, forward: Path | None = None) -> None:
        # `kind`: what runs (kind_of()); `mode`: the name the figures, the logs and the working directory go by.
        kind = kind_of(mode)
        if mode not in MODES or (kind in floor.MODES and forward is None):
            raise ValueError(f"mode {mode!r}: one of {MODES}; the floor modes need forward.c built")
        self.mode, self.kind, self.loadgen, self.say, self.forward = mode, kind, str(loadgen), say, forward
        self.s = floor.settings(mode, polling.settings(mode, settings))
        self.workdir = workdir / mode
        self.workdir.mkdir(parents=True, exist_ok=True)
        # The floor modes need what sluice mode has: no forwarding in the relay namespace, no route.
        self.topo = netns.Topology(mode="kernel" if kind == "kernel" else "sluice", tag="bench")
        # Where the client namespace's applications connect: the server, or forwarder A.
        self.target = floor.ADDRESS if kind in floor.MODES else SERVER
        self.runner = h.Runner(self.workdir)
        self.figures: dict[str, float] = {}
        self.details: dict[str, object] = {}
        self.errors: dict[str, str] = {}
        # Anomalies an average hides — stalls, timeouts, losses, retransmits — each with the figure it
        # concerns ("key") and what the kernel counted meanwhile (kstats).
        self.notes: list[dict] = []
        self.relay: h.Proc | None = None
        self.client: h.Proc | None = None
        self._keys: tuple[h.KeyPair, h.KeyPair] | None = None
        self.peer: peers.Peer | None = None
        self._rss_peak: dict[str, int] = {}  # side → KiB, across the groups' samplers

    # -- life cycle ----------------------------------------------------------------------------------
    def run(self) -> dict:
        steal0 = hoststeal.read()
        try:
            self.topo.create()
            for ns in (self.topo.client, self.topo.relay):
                # Room for the connection-rate test: ports are reused within seconds at ~16k/s.
                self.topo.sysctl(ns, "net.ipv4.ip_local_port_range", "1024 65535")
            self._start_servers()
            if self.mode in peers.MODES:
                self.peer = peers.create(self.mode, self.topo, self.workdir, self.s.openvpn_args)
            for key in GROUPS:
                if key not in self.s.groups:
                    continue
                if (self.kind in floor.MODES and key not in FLOOR_GROUPS) or (self.kind in socksmode.MODES and key not in socksmode.GROUPS):
                    self.details.setdefault("skipped", []).append(key)
                    continue
                self._group(key, getattr(self, f"test_{key}"))
            for side, kib in self._rss_peak.items():
                self.figures[f"rss_peak_{side}_mib"] = kib / 1024
            stolen = hoststeal.percent(steal0, hoststeal.read())
            if stolen is not None:
                self.figures["host_steal_pct"] = stolen
        finally:
            self.runner.close()
            self.topo.destroy()
            if self.peer is not None:
                self.peer.close()
        return {"figures": self.figures, "details": self.details, "errors": self.errors, "notes": self.notes}

    def _group(self, key: str, test: Callable[[], None]) -> None:
        """One group of tests on a tunnel of its own; an error is recorded, not raised."""
        try:
            self._tunnel_up()
            test()
            self._check_alive()
        except (KeyboardInterrupt, SystemExit):
            raise
        except Exception as e:
            self._error(key, f"{type(e).__name__}: {e}", traceback.format_exc())
        finally:
            self._tunnel_down()

    def _error(self, key: str, msg: str, tb: str = "") -> None:
        self.errors[key] = msg
        self.say(f"  [{self.mode}] {key}: ERROR {msg}")
        for p in (self.client, self.relay):
            if p is not None:
                self.say(f"  --- tail of {p.log.name}:\n{h.tail(p.log, 15)}")
        if tb and os.environ.get("SLUICE_BENCH_DEBUG"):
            self.say(tb)

    def _start_servers(self) -> None:
        start_loadgen_server(self.runner, self.loadgen, self.workdir, self.topo)

    # -- the tunnel ----------------------------------------------------------------------------------
    def _tunnel_up(self) -> None:
        if self.kind == "sluice":
            if self._keys is None:
                self._keys = (h.make_keypair(self.workdir, "relay"), h.make_keypair(self.workdir, "client"))
            relay_key, client_key = self._keys
            # Enough streams for the idle-flows test (the relay's default limit is 1,024 per client), and
            # no cap on the rate they open at (5,000/s per client by default): the benchmark measures
            # what the relay can do. Binaries from before the rate cap are still measured without it.
            rate = ["--max-stream-rate", "10000000"] if h.relay_takes("--max-stream-rate") else []
            self.relay = self.runner.start("relay", h.relay_argv(relay_key, [client_key.public], extra=[
                "--max-streams", "65536", *rate, *self.s.relay_args]), ns=self.topo.relay)
            h.wait_relay_listening(self.topo, self.relay)
            self.client = self.runner.start("client", h.client_argv(
                f"{netns.RELAY_CLIENT_SIDE_V4}:{h.RELAY_PORT}", relay_key.public, client_key,
                extra=self.s.client_args), ns=self.topo.client)
            h.wait_client_up(self.topo, self.client)
        elif self.mode in peers.MODES:
            self.client, self.relay = self.peer.start(self.runner)
        elif self.mode in socksmode.MODES:
            self.client, self.relay = socksmode.start(self.runner, self.topo, self.s.client_args)
        elif self.kind in floor.MODES:
            self.client, self.relay = floor.start(self.runner, self.topo, self.workdir, self.forward, self.kind,
                                                  [CLOSE_PORT, IPERF_PORT], [UDP_PORT], self.s.floor_args)
        h.wait_for(self._one_flow, 15, interval=0.1, what="a first connection to the server")
        if self.kind in floor.MODES:
            self.details.setdefault("byte_checks", []).append(floor.check(self.topo))
            self.details.setdefault("datagram_checks", []).append(floor.check_udp(self.topo))
            self._check_alive()

    def _one_flow(self) -> bool:
        self._check_alive()
        try:
            with netns.socket_in(self.topo.client) as s:
                s.settimeout(2)
                s.connect((self.target, CLOSE_PORT))
                return s.recv(1) == b""  # the close server's FIN: the whole path works
        except OSError:
            return False

    @contextlib.contextmanager
    def one_tunnel(self) -> Iterator[None]:
        """For tools that look at one running tunnel (smaps.py, codeorder.py): the topology, the servers
        and the tunnel up and settled; on leaving, the tunnel stopped and everything removed."""
        try:
            self.topo.create()
            self._start_servers()
            self._tunnel_up()
            time.sleep(self.s.settle_seconds)
            yield
            self._tunnel_down()
        finally:
            self.runner.close()
            self.topo.destroy()

    def _tunnel_down(self) -> None:
        for name in ("client", "relay"):
            p = getattr(self, name)
            if p is not None:
                code = p.stop(timeout=10)
                if code not in (0, None):
                    self.details.setdefault("exit_codes", []).append({name: code})
                setattr(self, name, None)

    def _check_alive(self) -> None:
        for p in (self.relay, self.client):
            if p is not None and not p.alive():
                what = {"relay": "sluice relay", "client": "sluice up"}.get(p.name, p.name)
                raise RuntimeError(f"{what} exited {p.popen.returncode}:\n{h.tail(p.log)}")

    def _loadgen(self, figure: str, *args: object, timeout: float) -> dict:
        """Runs one loadgen client test for `figure` (the figure key its result explains)."""
        with self._counted() as moved, self._stolen() as stolen:
            cp = self.topo.exec(self.topo.client, [self.loadgen, *map(str, args)], timeout=timeout)
        if cp.returncode != 0:
            raise RuntimeError(f"loadgen {args[0]} exited {cp.returncode}: {cp.stderr.strip()}")
        r = json.loads(cp.stdout.strip().splitlines()[-1])
        if moved:
            r["kernel_counters"] = moved
        self._note_anomalies(figure, r, moved)
        in_flight = r.get("concurrency", r.get("window"))
        self._note_steal(figure, f"{r.get('test', args[0])} ({in_flight} in flight)", stolen, r)
        return r

    @contextlib.contextmanager
    def _counted(self):
        """Yields a dict that, after the block, holds what the client and relay namespaces' kernel
        counters (kstats) moved by, side → counter → increase."""
        sides = {"client": self.topo.client, "relay": self.topo.relay}
        before = {side: kstats.snapshot(ns) for side, ns in sides.items()}
        moved: dict = {}
        yield moved
        moved.update(kstats.delta(before, {side: kstats.snapshot(ns) for side, ns in sides.items()}))

    @contextlib.contextmanager
    def _stolen(self):
        """Yields a dict that, after the block, holds the % of CPU time the host took meanwhile
        ("percent": hoststeal), when /proc/stat tells."""
        before = hoststeal.read()
        stolen: dict = {}
        yield stolen
        share = hoststeal.percent(before, hoststeal.read())
        if share is not None:
            stolen["percent"] = share

    def _note_steal(self, figure: str, what: str, stolen: dict, detail: dict) -> None:
        """Keeps a test's steal in its detail; a note when it reached hoststeal.NOTABLE."""
        share = stolen.get("percent")
        if share is None:
            return
        detail["host_steal_percent"] = round(share, 1)
        if share >= hoststeal.NOTABLE:
            self._note(figure, hoststeal.note(what, share))

    def _note(self, figure: str, text: str) -> None:
        self.notes.append({"key": figure, "text": text})
        self.say(f"  [{self.mode}] note: {text}")

    def _note_anomalies(self, figure: str, r: dict, moved: dict) -> None:
        """Seconds without a single completion, timeouts, losses and failures of one rate test, with
        the kernel's drops while it ran."""
        per = r.get("per_second", [])
        whole = per[:-1] if len(per) > 1 else per  # the last second is partial
        found = []
        idle = sum(1 for n in whole if n == 0)
        if idle:
            found.append(f"{idle} of {len(whole)} s without a single completion")
        for what in ("timeouts", "lost", "failed"):
            if r.get(what):
                found.append(f"{r[what]:,} {what if what != 'timeouts' else 'timed out'}")
        if found:
            in_flight = r.get("concurrency", r.get("window"))
            why = kstats.explain(moved)
            self._note(figure, f"{r['test']} ({in_flight} in flight): {', '.join(found)}; per second: {per}"
                               + (f"; meanwhile {why}" if why else ""))

    # -- the tests -----------------------------------------------------------------------------------
    def _wants(self, figure: str) -> bool:
        return self.s.only is None or figure in self.s.only

    def test_udp(self) -> None:
        s = self.s
        # A forwarder's RSS is no client's.
        rss = self.client is not None and self.kind not in floor.MODES and self._wants("rss_udp_mib")
        if rss:
            time.sleep(s.settle_seconds)
            idle = steady_rss_kib(self.client.pid)
            self.figures["rss_idle_mib"] = idle / 1024
            self.say(f"  [{self.mode}] client RSS idle {idle / 1024:.1f} MiB")
        with self._sampler(0.02) as sampler:
            # One in flight first: short, and a later test's trouble (a stall) cannot leak into it.
            for test, key in (("udp-rr", "udp_rr"), ("udp-new", "udp_new")):
                if self._wants(f"{key}_latency_us"):
                    self._latency(key, self._loadgen(f"{key}_latency_us", test, self.target, UDP_PORT, s.latency_seconds, 1,
                                                     s.udp_size, timeout=s.latency_seconds + 20))
            for test, key, in_flight, what in (("udp-rr", "udp_rr", s.udp_window, "one socket"),
                                               ("udp-new", "udp_new", s.udp_concurrency, "new socket each")):
                if self._wants(f"{key}_per_s"):
                    r = self._loadgen(f"{key}_per_s", test, self.target, UDP_PORT, s.rate_seconds, in_flight, s.udp_size,
                                      timeout=s.rate_seconds + 20)
                    self.figures[f"{key}_per_s"] = r["rate"]
                    self.details[key] = r
                    self.say(f"  [{self.mode}] UDP {what} {r['rate']:,.0f} req/s (lost {r['lost']})")
        if rss:
            self.figures["rss_udp_mib"] = sampler.peak["client"] / 1024
            self.details["rss_udp_samples"] = sampler.samples
            self.say(f"  [{self.mode}] client RSS peak during UDP {sampler.peak['client'] / 1024:.1f} MiB")

    def test_idle_flows(self) -> None:
        s = self.s
        client_pid = self.client.pid if self.client else None
        if client_pid:
            time.sleep(s.settle_seconds)
            before = steady_rss_kib(client_pid)
        max_hold = 120.0
        argv = ["ip", "netns", "exec", self.topo.client, self.loadgen, "tcp-hold", SERVER, str(HOLD_PORT),
                str(s.flows), str(s.hold_concurrency), str(max_hold)]
        p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        lines = LineReader(p)
        try:
            opened = json.loads(lines.next(60))
            self.details["idle_flows_open"] = opened
            self.say(f"  [{self.mode}] idle flows: {opened['opened']:,} of {s.flows:,} open in "
                     f"{opened['seconds']:.1f} s ({opened['failed']} failed)")
            held = self._server_established()
            self.details["idle_flows_server_established"] = held
            if client_pid:
                time.sleep(s.settle_seconds)
                after = steady_rss_kib(client_pid)
                per_flow = (after - before) / opened["opened"] if opened["opened"] else None
                self.details["idle_flows_rss_kib"] = {"before": before, "after": after}
                if per_flow is not None:
                    self.figures["idle_flow_kib"] = per_flow
                    self.say(f"  [{self.mode}] client RSS {before / 1024:.1f} → {after / 1024:.1f} MiB: "
                             f"{per_flow:.2f} KiB per flow (server holds {held:,})")
            if opened["opened"] < s.flows:
                raise RuntimeError(f"only {opened['opened']} of {s.flows} flows opened: {opened['errors']}")
            p.stdin.close()
            closed = json.loads(lines.next(30))
            self.details["idle_flows_close"] = closed
            if closed["dropped"]:
                raise RuntimeError(f"{closed['dropped']} idle flows were closed by the far end while held")
            p.wait(30)
            if client_pid:
                time.sleep(s.settle_seconds)
                rss = self.details["idle_flows_rss_kib"]
                rss["after_close"] = steady_rss_kib(client_pid)
                if self.mode in peers.MODES and rss["after"] > rss["before"]:
                    self._note("idle_flow_kib", f"a layer-3 VPN keeps no per-flow state in its process (the "
                               f"client's kernel does): its RSS grew with the bursts of packets that opened the "
                               f"flows, {rss['before'] / 1024:.1f} → {rss['after'] / 1024:.1f} MiB, and was "
                               f"{rss['after_close'] / 1024:.1f} MiB after they closed — buffers kept, not a "
                               "cost per flow")
        finally:
            if p.poll() is None:
                p.kill()
                p.wait(5)

    def _server_established(self) -> int:
        cp = self.topo.exec(self.topo.server, ["ss", "-Htn", "state", "established", f"( sport = :{HOLD_PORT} )"],
                            timeout=20)
        return len([l for l in cp.stdout.splitlines() if l.strip()])

    def test_tcp_cc(self) -> None:
        s = self.s
        if self._wants("tcp_cc_latency_us"):
            self._latency("tcp_cc", self._loadgen("tcp_cc_latency_us", "tcp-cc", self.target, CLOSE_PORT,
                                                  s.latency_seconds, 1, timeout=s.latency_seconds + 20))
        if not self._wants("tcp_cc_per_s"):
            return
        r = self._loadgen("tcp_cc_per_s", "tcp-cc", self.target, CLOSE_PORT, s.rate_seconds, s.tcp_cc_concurrency,
                          timeout=s.rate_seconds + 20)
        self.figures["tcp_cc_per_s"] = r["rate"]
        self.details["tcp_cc"] = r
        self.say(f"  [{self.mode}] new TCP connections {r['rate']:,.0f}/s "
                 f"(failed {r['failed']}, timeouts {r['timeouts']})")

    def _latency(self, key: str, r: dict) -> None:
        """One in flight: the mean time of one request (or connect-and-close) is the inverse of the rate."""
        self.details[f"{key}_1"] = r
        if r["rate"] > 0:
            self.figures[f"{key}_latency_us"] = 1e6 / r["rate"]
            self.say(f"  [{self.mode}] {key}, 1 in flight: {r['rate']:,.0f}/s = {1e6 / r['rate']:,.0f} µs each")

    def test_iperf(self) -> None:
        """iperf3 with each of `iperf_streams` (1 and 4), both ways; a failing run is recorded and the next still runs."""
        for streams in self.s.iperf_streams:
            for direction in ("up", "down"):
                key = f"tcp{streams}_{direction}"
                try:
                    self._iperf(key, streams, direction)
                    self._check_alive()
                except (KeyboardInterrupt, SystemExit):
                    raise
                except Exception as e:
                    self._error(key, f"{type(e).__name__}: {e}")

    def _iperf(self, key: str, streams: int, direction: str) -> None:
        s = self.s
        server = self.runner.start(f"iperf3-{key}", ["iperf3", "-s", "-1", "-p", str(IPERF_PORT)], ns=self.topo.server)
        try:
            self._wait_listen(server)
            argv = ["iperf3", "-c", self.target, "-p", str(IPERF_PORT), "-t", str(s.iperf_seconds), "-J",
                    "--connect-timeout", "5000"]
            if streams > 1:
                argv += ["-P", str(streams)]
            if direction == "down":
                argv.append("-R")
            procs = [p for p in (self.client, self.relay) if p is not None]
            cpu0 = [cpu_user_system(p.pid) for p in procs]
            writes0 = self._tun_writes()
            with self._sampler(0.1) as peak, self._counted() as moved, self._stolen() as stolen:
                cp = self.topo.exec(self.topo.client, argv, timeout=s.iperf_seconds + 30)
            # user: the process's own code (the cipher, lwIP); system: the kernel's work for it (syscalls,
            # and the TCP receive path of what it sends through a veth or loopback, run in its context).
            split = [tuple(a - b for a, b in zip(cpu_user_system(p.pid), c)) for p, c in zip(procs, cpu0)]
            writes = self._tun_writes() - writes0 if writes0 is not None else None
            cpu = [u + k for u, k in split]
            try:
                out = json.loads(cp.stdout)
            except json.JSONDecodeError:
                raise RuntimeError(f"iperf3 exited {cp.returncode}: {cp.stderr.strip() or cp.stdout[-300:]}")
            if "error" in out:
                raise RuntimeError(f"iperf3: {out['error']}")
            end = out["end"]
            received = end["sum_received"]
            gbps = received["bits_per_second"] / 1e9
            detail = {"gbps": gbps, "bytes": received["bytes"], "seconds": received["seconds"],
                      "retransmits": end.get("sum_sent", {}).get("retransmits"),
                      # The sender's Gbit/s in each second: a slow start or a stall that the average hides.
                      "gbps_per_second": [round(i["sum"]["bits_per_second"] / 1e9, 3) for i in out.get("intervals", [])]}
            # What iperf3 itself (client "host" + server "remote", % of one CPU over the run) used: with the
            # tunnel's CPU it shows how the two vCPUs were spent. In kernel mode it includes the forwarding,
            # which runs in the softirq context of whichever process is on the CPU.
            util = end.get("cpu_utilization_percent", {})
            if received["bytes"] and "host_total" in util and "remote_total" in util:
                endpoints_s = (util["host_total"] + util["remote_total"]) / 100 * received["seconds"]
                detail["iperf3_cpu_s_per_gb"] = endpoints_s / (received["bytes"] / 1e9)
            if procs:
                gb = received["bytes"] / 1e9
                detail.update({"cpu_client_s": cpu[0], "cpu_relay_s": cpu[1],
                               "cpu_client_user_s": split[0][0], "cpu_client_system_s": split[0][1],
                               "cpu_relay_user_s": split[1][0], "cpu_relay_system_s": split[1][1],
                               "cpu_s_per_gb": sum(cpu) / gb if gb else None,
                               "client_rss_peak_kib": peak.peak["client"], "relay_rss_peak_kib": peak.peak["relay"]})
                if streams == 1 and gb:
                    self.figures[f"cpu_{direction}_s_per_gb"] = sum(cpu) / gb
                    self.figures[f"cpu_{direction}_client_s_per_gb"] = cpu[0] / gb
                    self.figures[f"cpu_{direction}_relay_s_per_gb"] = cpu[1] / gb
            if writes is not None and received["bytes"]:
                detail["tun_writes"] = writes
                if streams == 1:
                    self.figures[f"tun_writes_{direction}_per_gb"] = writes / (received["bytes"] / 1e9)
            self.figures[f"{key}_gbps"] = gbps
            self.details[f"iperf3_{key}"] = detail
            if moved:
                detail["kernel_counters"] = moved
            self._note_retransmits(key, detail, moved)
            self._note_steal(f"{key}_gbps", f"iperf3 {key}", stolen, detail)
            extra = (f", CPU client {cpu[0]:.2f} s ({split[0][0]:.2f} user) + relay {cpu[1]:.2f} s "
                     f"({split[1][0]:.2f} user) = {sum(cpu) / (received['bytes'] / 1e9):.2f} s/GB" if procs else "")
            stolen_text = (f"; the host took {stolen['percent']:.0f} % (steal)"
                           if stolen.get("percent", 0) >= 1 else "")
            self.say(f"  [{self.mode}] iperf3 {streams} stream{'s' if streams > 1 else ''} {direction}: "
                     f"{gbps:.2f} Gbit/s{extra}{stolen_text}")
        finally:
            server.stop(timeout=5)

    def _note_retransmits(self, key: str, detail: dict, moved: dict) -> None:
        """A note when more than one segment in a thousand was sent again, with the kernel's count of
        where packets were dropped or cut meanwhile: the cause, not a figure to tune away."""
        retransmits, segments = detail.get("retransmits") or 0, detail["bytes"] / MSS
        if segments and retransmits / segments > 0.001:
            why = kstats.explain(moved) or "no drop counted in the client or relay namespace"
            self._note(f"{key}_gbps", f"iperf3 {key}: {retransmits:,} segments sent again "
                                      f"({retransmits / segments:.1%} of ~{segments:,.0f}); meanwhile {why}")

    @contextlib.contextmanager
    def _sampler(self, interval: float):
        """RSS of the tunnel's processes while the block runs; each side's peak also goes into the
        mode's `rss_peak_*` figures."""
        pids = {side: p.pid for side, p in (("client", self.client), ("relay", self.relay)) if p is not None}
        with RssSampler(pids, interval) as sampler:
            yield sampler
        for side, kib in sampler.peak.items():
            if kib:
                self._rss_peak[side] = max(self._rss_peak.get(side, 0), kib)

    def _tun_writes(self) -> int | None:
        """Packets the client has written to its TUN so far (the TUN's rx_packets: one per write, a GSO
        write included): on an upload nearly all are ACKs. None without a TUN (kernel, floor modes)."""
        if self.kind != "sluice":
            return None
        links = self.topo.ip_json(self.topo.client, "-s", "link", "show", "dev", h.TUN)
        return links[0]["stats64"]["rx"]["packets"] if links else None

    def _wait_listen(self, proc: h.Proc) -> None:
        def listening() -> bool:
            if not proc.alive():
                raise RuntimeError(f"iperf3 -s exited {proc.popen.returncode}:\n{h.tail(proc.log)}")
            out = self.topo.exec(self.topo.server, ["ss", "-Htln", f"sport = :{IPERF_PORT}"], timeout=5).stdout
            return bool(out.strip())

        h.wait_for(listening, 10, what="iperf3 -s to listen")


class LineReader:
    """The stdout lines of a child, read on a thread, so that waiting for one can time out."""

    def __init__(self, p: subprocess.Popen) -> None:
        self.p = p
        self.lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._run, name="line-reader", daemon=True).start()

    def _run(self) -> None:
        for line in self.p.stdout:
            self.lines.put(line)
        self.lines.put("")  # EOF

    def next(self, timeout: float) -> str:
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            line = ""
        if not line:
            if self.p.poll() is None:
                self.p.kill()
            self.p.wait(5)
            raise RuntimeError(f"loadgen gave no result within {timeout:.0f} s (exit {self.p.returncode}): "
                               f"{self.p.stderr.read().strip()}")
        return line
