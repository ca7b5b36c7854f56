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
"tunnel" is two forward.c processes in a chain: only the iperf group runs there (the others need a TUN,
or measure what only Sluice has). A failing test records its error and the others still run. Processes
are started through the E2E harness and stopped by pid.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import queue
import statistics
import subprocess
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import floor
import harness as h
import netns

CLOSE_PORT, HOLD_PORT, UDP_PORT, IPERF_PORT = 9100, 9101, 9102, 5201
SERVER = netns.SERVER_V4
CLK_TCK = os.sysconf("SC_CLK_TCK")
GROUPS = ("udp", "idle_flows", "tcp_cc", "iperf")  # the order they run in; see the module comment
MODES = ("kernel", *floor.MODES, "sluice")
FLOOR_GROUPS = ("iperf",)  # what a chain of two forwarders can run


@functools.lru_cache(maxsize=None)
def _relay_help(binary: str) -> str:
    return h.run_sluice(["relay", "--help"]).stdout.decode(errors="replace")


def relay_takes(flag: str) -> bool:
    """Whether the sluice binary under test (SLUICE_BIN) knows a relay flag."""
    return flag in _relay_help(h.sluice_bin())


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
    client_args: list = field(default_factory=list)
    relay_args: list = field(default_factory=list)


QUICK = Settings(iperf_seconds=2, rate_seconds=2, flows=2000, latency_seconds=1, settle_seconds=0.5)
FULL = Settings(iperf_seconds=10, rate_seconds=10, flows=10000)


# -- /proc ------------------------------------------------------------------------------------------

def rss_kib(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def cpu_user_system(pid: int) -> tuple[float, float]:
    """utime and stime of the whole process (all threads), in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) / CLK_TCK, int(fields[12]) / CLK_TCK


def steady_rss_kib(pid: int, seconds: float = 0.5, samples: int = 5) -> int | None:
    """The median of a few samples: RSS moves a little while timers run."""
    vals = []
    for _ in range(samples):
        v = rss_kib(pid)
        if v is not None:
            vals.append(v)
        time.sleep(seconds / samples)
    return int(statistics.median(vals)) if vals else None


class RssSampler:
    """Samples VmRSS of one process every `interval` seconds on a thread; `stop()` returns the peak."""

    def __init__(self, pid: int, interval: float = 0.02) -> None:
        self.pid, self.interval = pid, interval
        self.peak = 0
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)

    def __enter__(self) -> "RssSampler":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def _run(self) -> None:
        while not self._stop.is_set():
            v = rss_kib(self.pid)
            if v is not None:
                self.peak = max(self.peak, v)
                self.samples += 1
            self._stop.wait(self.interval)

    def stop(self) -> int:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        return self.peak


# -- one mode ---------------------------------------------------------------------------------------

class ModeRun:
    """Runs every test of one mode (one of MODES); `run()` returns figures, details, errors.

    `client` and `relay` are the tunnel's two processes: `sluice up` and `sluice relay`, or in the floor
    modes forwarders A and B (their CPU time is measured the same way)."""

    def __init__(self, mode: str, settings: Settings, workdir: Path, loadgen: Path,
                 say: Callable[[str], None] = print, forward: Path | None = None) -> None:
        if mode not in MODES or (mode in floor.MODES and forward is None):
            raise ValueError(f"mode {mode!r}: one of {MODES}; the floor modes need forward.c built")
        self.mode, self.s, self.loadgen, self.say, self.forward = mode, settings, str(loadgen), say, forward
        self.workdir = workdir / mode
        self.workdir.mkdir(parents=True, exist_ok=True)
        # The floor modes need what sluice mode has: no forwarding in the relay namespace, no route.
        self.topo = netns.Topology(mode="kernel" if mode == "kernel" else "sluice", tag="bench")
        # Where the client namespace's applications connect: the server, or forwarder A.
        self.target = floor.ADDRESS if mode in floor.MODES else SERVER
        self.runner = h.Runner(self.workdir)
        self.figures: dict[str, float] = {}
        self.details: dict[str, object] = {}
        self.errors: dict[str, str] = {}
        self.notes: list[str] = []  # anomalies an average hides: stalls, timeouts, losses
        self.relay: h.Proc | None = None
        self.client: h.Proc | None = None
        self._keys: tuple[h.KeyPair, h.KeyPair] | None = None

    # -- life cycle ----------------------------------------------------------------------------------
    def run(self) -> dict:
        try:
            self.topo.create()
            for ns in (self.topo.client, self.topo.relay):
                # Room for the connection-rate test: ports are reused within seconds at ~16k/s.
                self.topo.sysctl(ns, "net.ipv4.ip_local_port_range", "1024 65535")
            self._start_servers()
            for key in GROUPS:
                if key not in self.s.groups:
                    continue
                if self.mode in floor.MODES and key not in FLOOR_GROUPS:
                    self.details.setdefault("skipped", []).append(key)
                    continue
                self._group(key, getattr(self, f"test_{key}"))
        finally:
            self.runner.close()
            self.topo.destroy()
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
        ready = self.workdir / "loadgen-ready.json"
        proc = self.runner.start("loadgen-server", [self.loadgen, "server", "--tcp-close", str(CLOSE_PORT),
                                                    "--tcp-hold", str(HOLD_PORT), "--udp-echo", str(UDP_PORT),
                                                    "--ready", str(ready)], ns=self.topo.server)
        h.wait_for(lambda: ready.exists() or not proc.alive(), 10, what="the loadgen server")
        if not proc.alive():
            raise RuntimeError(f"loadgen server exited:\n{h.tail(proc.log)}")

    # -- the tunnel ----------------------------------------------------------------------------------
    def _tunnel_up(self) -> None:
        if self.mode == "sluice":
            if self._keys is None:
                self._keys = (h.make_keypair(self.workdir, "relay"), h.make_keypair(self.workdir, "client"))
            relay_key, client_key = self._keys
            # Enough streams for the idle-flows test (the relay's default limit is 1,024 per client), and
            # no cap on the rate they open at (5,000/s per client by default): the benchmark measures
            # what the relay can do. Binaries from before the rate cap are still measured without it.
            rate = ["--max-stream-rate", "10000000"] if relay_takes("--max-stream-rate") else []
            self.relay = self.runner.start("relay", h.relay_argv(relay_key, [client_key.public], extra=[
                "--max-streams", "65536", *rate, *self.s.relay_args]), ns=self.topo.relay)
            h.wait_relay_listening(self.topo, self.relay)
            self.client = self.runner.start("client", h.client_argv(
                f"{netns.RELAY_CLIENT_SIDE_V4}:{h.RELAY_PORT}", relay_key.public, client_key,
                extra=self.s.client_args), ns=self.topo.client)
            h.wait_client_up(self.topo, self.client)
        elif self.mode in floor.MODES:
            self.client, self.relay = floor.start(self.runner, self.topo, self.workdir, self.forward, self.mode,
                                                  [CLOSE_PORT, IPERF_PORT])
        h.wait_for(self._one_flow, 15, interval=0.1, what="a first connection to the server")
        if self.mode in floor.MODES:
            self.details.setdefault("byte_checks", []).append(floor.check(self.topo))
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

    def _loadgen(self, *args: object, timeout: float) -> dict:
        cp = self.topo.exec(self.topo.client, [self.loadgen, *map(str, args)], timeout=timeout)
        if cp.returncode != 0:
            raise RuntimeError(f"loadgen {args[0]} exited {cp.returncode}: {cp.stderr.strip()}")
        r = json.loads(cp.stdout.strip().splitlines()[-1])
        self._note_anomalies(r)
        return r

    def _note_anomalies(self, r: dict) -> None:
        """Seconds without a single completion, timeouts, losses and failures of one rate test."""
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
            note = f"{r['test']} ({in_flight} in flight): {', '.join(found)}; per second: {per}"
            self.notes.append(note)
            self.say(f"  [{self.mode}] note: {note}")

    # -- the tests -----------------------------------------------------------------------------------
    def test_udp(self) -> None:
        s = self.s
        if self.client:
            time.sleep(s.settle_seconds)
            idle = steady_rss_kib(self.client.pid)
            self.figures["rss_idle_mib"] = idle / 1024
            self.say(f"  [{self.mode}] client RSS idle {idle / 1024:.1f} MiB")
        with RssSampler(self.client.pid) if self.client else contextlib.nullcontext() as sampler:
            # One in flight first: short, and a later test's trouble (a stall) cannot leak into it.
            for test, key in (("udp-rr", "udp_rr"), ("udp-new", "udp_new")):
                self._latency(key, self._loadgen(test, SERVER, UDP_PORT, s.latency_seconds, 1, s.udp_size,
                                                 timeout=s.latency_seconds + 20))
            r = self._loadgen("udp-rr", SERVER, UDP_PORT, s.rate_seconds, s.udp_window, s.udp_size,
                              timeout=s.rate_seconds + 20)
            self.figures["udp_rr_per_s"] = r["rate"]
            self.details["udp_rr"] = r
            self.say(f"  [{self.mode}] UDP one socket {r['rate']:,.0f} req/s (lost {r['lost']})")
            r = self._loadgen("udp-new", SERVER, UDP_PORT, s.rate_seconds, s.udp_concurrency, s.udp_size,
                              timeout=s.rate_seconds + 20)
            self.figures["udp_new_per_s"] = r["rate"]
            self.details["udp_new"] = r
            self.say(f"  [{self.mode}] UDP new socket each {r['rate']:,.0f} req/s (lost {r['lost']})")
        if sampler:
            self.figures["rss_udp_mib"] = sampler.peak / 1024
            self.details["rss_udp_samples"] = sampler.samples
            self.say(f"  [{self.mode}] client RSS peak during UDP {sampler.peak / 1024:.1f} MiB")

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
                self.details["idle_flows_rss_kib"]["after_close"] = steady_rss_kib(client_pid)
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
        self._latency("tcp_cc", self._loadgen("tcp-cc", SERVER, CLOSE_PORT, s.latency_seconds, 1,
                                              timeout=s.latency_seconds + 20))
        r = self._loadgen("tcp-cc", SERVER, CLOSE_PORT, s.rate_seconds, s.tcp_cc_concurrency,
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
        """iperf3 1 and 4 streams, both ways; a failing run is recorded and the next still runs."""
        for streams in (1, 4):
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
            with RssSampler(self.client.pid, interval=0.1) if self.client else contextlib.nullcontext() as peak:
                cp = self.topo.exec(self.topo.client, argv, timeout=s.iperf_seconds + 30)
            rss_peak = peak.peak if peak else None
            # user: the process's own code (the cipher, lwIP); system: the kernel's work for it (syscalls,
            # and the TCP receive path of what it sends through a veth or loopback, run in its context).
            split = [tuple(a - b for a, b in zip(cpu_user_system(p.pid), c)) for p, c in zip(procs, cpu0)]
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
                      "retransmits": end.get("sum_sent", {}).get("retransmits")}
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
                               "cpu_s_per_gb": sum(cpu) / gb if gb else None, "client_rss_peak_kib": rss_peak})
                if streams == 1 and gb:
                    self.figures[f"cpu_{direction}_s_per_gb"] = sum(cpu) / gb
            self.figures[f"{key}_gbps"] = gbps
            self.details[f"iperf3_{key}"] = detail
            extra = (f", CPU client {cpu[0]:.2f} s ({split[0][0]:.2f} user) + relay {cpu[1]:.2f} s "
                     f"({split[1][0]:.2f} user) = {sum(cpu) / (received['bytes'] / 1e9):.2f} s/GB" if procs else "")
            self.say(f"  [{self.mode}] iperf3 {streams} stream{'s' if streams > 1 else ''} {direction}: "
                     f"{gbps:.2f} Gbit/s{extra}")
        finally:
            server.stop(timeout=5)

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
