#!/usr/bin/env python3
"""Where the microseconds of one new TCP connection or one UDP round trip go, hop by hop.

    sudo flock /tmp/sluice-e2e.lock python3 Benchmarks/e2e/hops.py [--samples 1000] [--modes kernel,sluice]
        [--tests tcp,udp_rr,udp_new] [--gap-ms 1] [--no-capture] [--keep DIR] [--json FILE]
        [--guest-halt-poll-ns NS]

In the three namespaces of `make bench` (measure.ModeRun: the same topology, loadgen server and tunnel),
with kernel forwarding and then through Sluice, one transaction at a time:

  tcp      connect to loadgen's TCP echo, send 64 bytes, read the 64 back, close
  udp_rr   64 bytes out and back on one connected UDP socket
  udp_new  the same with a new socket each time (socket, connect, send, receive, close)

while tcpdump captures, with nanosecond timestamps, on every interface on the way: the client's TUN
(Sluice only), the client's veth, the relay's veth on both sides and the server's veth. All namespaces
share one clock. Each transaction's packets lie between the client's clock readings before and after
it; a packet is followed across a veth by its headers (addresses, ports, IP id, TCP sequence), and
through a tunnel end — where it changes form — by the first packet of the right kind, long enough to hold
it, that leaves after it came in. The table gives medians over the transactions, in µs:

  client↑  the client's tunnel: the packet on the TUN → the carrier segment (or UDP path datagram) out
  wire↑    both veth crossings on the way out (capture on send → capture on receive)
  relay↑   the relay: the tunnel's packet in → the real packet out to the server (kernel: forwarding)
  server   the server's packet in → its answer out
  relay↓, wire↓, client↓   the same on the way back
  total    first capture of the request to the answer on the client's first interface (TUN or veth)
  app      what the client program saw around the same calls (Python: adds its own tens of µs)

The tcp test has three rows: the handshake (the SYN on the client's interface until the SYN-ACK on
it; through Sluice the relay's own connect to the server lies in between), the request (the data
segment until the answer) and the whole (SYN until the answer; the difference is the client's kernel
completing the handshake and the program sending). A hop's medians do not add up to the total's.
Packet capture adds work to every packet on every interface (--no-capture shows how much, in the app
column). A "wire" figure is only the veth hand-over: the receive softirq's work counts in the next hop.

A second table says, per transaction, how much CPU time the tunnel's two processes and the server
used (all threads' se.sum_exec_runtime in /proc/PID/task/*/sched, which is exact where utime is in
ticks) and how often each was switched out voluntarily (≈ how often it slept and was woken): a hop much
longer than its process's CPU time was spent waiting to be woken or to get a CPU.

How long a wake-up takes depends on how the machine's idle CPUs wait (idlepolicy.py), which the header
names. On a KVM guest with the haltpoll driver, --guest-halt-poll-ns NS has idle vCPUs poll up to NS
before they halt while hops.py runs, and puts back the setting it found, also on failure or a signal.

Progress and the load average go to stderr, the table (Markdown) to stdout; --json keeps every
transaction's points, --keep the pcap files. Needs tcpdump and tshark (Debian packages of the same
names). Everything it starts is stopped by pid and the namespaces removed, also on failure or a signal.
Exit status: 0 when every test ran, 1 when one could not, 2 for bad usage.
"""

from __future__ import annotations

import argparse
import bisect
import contextlib
import dataclasses
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, NamedTuple

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench  # noqa: E402  (also puts Tests/E2E on sys.path)
import harness as h  # noqa: E402
import idlepolicy  # noqa: E402
import measure  # noqa: E402
import netns  # noqa: E402

TESTS = ("tcp", "udp_rr", "udp_new")
MODES = ("kernel", "sluice")
SIZE = 64  # bytes per request and answer, as the bench's UDP tests
SERVER, CLIENT, RELAY = netns.SERVER_V4, netns.CLIENT_V4, netns.RELAY_CLIENT_SIDE_V4
PORTS = {"tcp": measure.ECHO_PORT, "udp_rr": measure.UDP_PORT, "udp_new": measure.UDP_PORT}
HOPS = ("client↑", "wire↑", "relay↑", "server", "relay↓", "wire↓", "client↓", "total")
FIELDS = ("frame.time_epoch", "ip.src", "ip.dst", "ip.proto", "ip.id", "tcp.srcport", "tcp.dstport",
          "tcp.seq_raw", "tcp.flags", "tcp.len", "udp.srcport", "udp.dstport", "udp.length")


class Packet(NamedTuple):
    ts: int  # ns, CLOCK_REALTIME as the capture took it
    src: str
    dst: str
    proto: int
    sport: int
    dport: int
    key: tuple  # what stays the same across a veth and through forwarding
    syn: bool
    ack: bool
    payload: int  # TCP or UDP payload bytes


# -- capture -----------------------------------------------------------------------------------------

def interfaces(mr: measure.ModeRun) -> dict[str, tuple[str, str]]:
    """Capture point → (namespace, device), in path order."""
    t = mr.topo
    points = {"tun": (t.client, h.TUN)} if mr.kind == "sluice" else {}
    points.update({"client": (t.client, "to-relay"), "relay-in": (t.relay, "to-client"),
                   "relay-out": (t.relay, "to-server"), "server": (t.server, "to-relay")})
    return points


class Captures:
    """tcpdump on every capture point while the block runs; `packets()` decodes them with tshark."""

    def __init__(self, mr: measure.ModeRun, name: str, enabled: bool = True) -> None:
        self.mr, self.name, self.enabled, self.procs, self.files = mr, name, enabled, {}, {}

    def __enter__(self) -> "Captures":
        if not self.enabled:
            return self
        for point, (ns, dev) in interfaces(self.mr).items():
            f = self.mr.workdir / f"{self.name}-{point}.pcap"
            # -Z root: Debian's tcpdump otherwise drops to the tcpdump user, who cannot write here.
            self.procs[point] = self.mr.runner.start(f"tcpdump-{self.name}-{point}", [
                "tcpdump", "-i", dev, "-n", "-s", "160", "-B", "8192", "--time-stamp-precision=nano",
                "-Z", "root", "-w", str(f)], ns=ns)
            self.files[point] = f
        for point, p in self.procs.items():
            h.wait_for(lambda: "listening on" in p.log.read_text() or not p.alive(), 10, what=f"tcpdump on {point}")
            if not p.alive():
                raise RuntimeError(f"tcpdump on {point} exited:\n{h.tail(p.log)}")
        return self

    def __exit__(self, *exc) -> None:
        if not self.procs:
            return
        # Without --immediate-mode (which would wake tcpdump for every packet, on the CPUs being measured)
        # packets wait in the kernel's ring until its block times out (1 s); a stop before that loses them.
        time.sleep(1.5)
        for p in self.procs.values():
            p.stop(timeout=5)

    def dropped(self) -> dict[str, str]:
        """Capture points whose tcpdump said the kernel dropped packets."""
        out = {}
        for point, p in self.procs.items():
            for line in p.log.read_text().splitlines():
                if "dropped by kernel" in line and not line.startswith("0 "):
                    out[point] = line.strip()
        return out

    def packets(self) -> dict[str, list[Packet]]:
        if not self.enabled:
            return {point: [] for point in interfaces(self.mr)}
        return {point: decode(f) for point, f in self.files.items()}


def decode(pcap: Path) -> list[Packet]:
    argv = ["tshark", "-r", str(pcap), "-n", "-T", "fields", "-E", "separator=\t", "-E", "occurrence=f"]
    for f in FIELDS:
        argv += ["-e", f]
    cp = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    if cp.returncode != 0:
        raise RuntimeError(f"tshark could not read {pcap.name}: {cp.stderr.strip()}")
    out = []
    for line in cp.stdout.splitlines():
        v = line.split("\t")
        if len(v) != len(FIELDS) or not v[1] or v[3] not in ("6", "17"):
            continue  # IPv6, ARP, ICMP: not what the tests send
        sec, _, frac = v[0].partition(".")
        ts = int(sec) * 1_000_000_000 + int(frac.ljust(9, "0")[:9])
        proto, ipid = int(v[3]), int(v[4], 0)
        if proto == 6:
            sport, dport, flags, payload = int(v[5]), int(v[6]), int(v[8], 16), int(v[9] or 0)
            key = (v[1], v[2], sport, dport, ipid, int(v[7]), payload)
        else:
            sport, dport, flags, payload = int(v[10]), int(v[11]), 0, int(v[12]) - 8
            key = (v[1], v[2], sport, dport, ipid, payload)
        out.append(Packet(ts, v[1], v[2], proto, sport, dport, key, bool(flags & 0x02), bool(flags & 0x10), payload))
    out.sort(key=lambda p: p.ts)
    return out


def sched_totals(pid: int) -> tuple[float, int]:
    """A process's CPU time (µs) and voluntary context switches, all threads, from /proc/PID/task/*/sched."""
    cpu, switches = 0.0, 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            for line in (task / "sched").read_text().splitlines():
                name, _, value = line.partition(":")
                if name.strip() == "se.sum_exec_runtime":
                    cpu += float(value) * 1000  # ms → µs
                elif name.strip() == "nr_voluntary_switches":
                    switches += int(value)
        except OSError:
            pass  # a thread that ended
    return cpu, switches


# -- the client's transactions ------------------------------------------------------------------------

def run_client(mr: measure.ModeRun, test: str, samples: int, gap: float) -> list[dict]:
    """`samples` transactions one at a time; each: its clock readings (ns) and whether it completed."""
    ns, port = mr.topo.client, PORTS[test]
    kind = socket.SOCK_STREAM if test == "tcp" else socket.SOCK_DGRAM
    out = []
    keep = netns.socket_in(ns, socket.AF_INET, kind) if test == "udp_rr" else None
    if keep is not None:
        keep.settimeout(1)
        keep.connect((SERVER, port))
    try:
        for i in range(samples):
            request = i.to_bytes(4, "big") * (SIZE // 4)
            s = keep or netns.socket_in(ns, socket.AF_INET, kind)
            r: dict = {"ok": False}
            try:
                s.settimeout(1)
                if test == "tcp":
                    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                r["t0"] = time.time_ns()
                if keep is None:
                    s.connect((SERVER, port))
                r["connected"] = time.time_ns()
                s.send(request)
                got = b""
                while len(got) < SIZE:
                    b = s.recv(SIZE)
                    if not b:
                        break
                    got += b
                r["t1"] = time.time_ns()
                r["ok"] = got == request
            except OSError as e:
                r["error"] = str(e)
            finally:
                if keep is None:
                    s.close()
            out.append(r)
            time.sleep(gap)
    finally:
        if keep is not None:
            keep.close()
    return out


# -- following packets --------------------------------------------------------------------------------

class Window:
    """One transaction's packets at every capture point, between its clock readings."""

    def __init__(self, caps: dict[str, list[Packet]], index: dict[str, list[int]], lo: int, hi: int) -> None:
        self.caps, self.index, self.lo, self.hi = caps, index, lo, hi

    def first(self, point: str, pred: Callable[[Packet], bool], after: int) -> Packet | None:
        pkts, ts = self.caps[point], self.index[point]
        for i in range(bisect.bisect_left(ts, max(after, self.lo)), len(pkts)):
            p = pkts[i]
            if p.ts > self.hi:
                return None
            if pred(p):
                return p
        return None

    def same(self, point: str, q: Packet | None) -> Packet | None:
        """The packet q at the far end of a veth (or forwarded unchanged): same headers, not earlier."""
        return None if q is None else self.first(point, lambda p: p.key == q.key, q.ts - 1000)


def app(up: bool, kind: str, port: int) -> Callable[[Packet], bool]:
    """The test's own packets one way: "syn", "synack" or "data"."""
    def pred(p: Packet) -> bool:
        if (p.dst == SERVER) != up or (p.src == SERVER) == up or port not in (p.sport, p.dport):
            return False
        if kind == "syn":
            return p.syn and not p.ack
        if kind == "synack":
            return p.syn and p.ack
        return p.payload > 0 and not p.syn
    return pred


def tunnel(up: bool, carrying: Packet) -> Callable[[Packet], bool]:
    """Sluice's own packets one way that can hold `carrying`'s payload: carrier segments, or UDP path
    datagrams, at least as long (so a new association's OPEN_OK alone is not taken for its answer)."""
    a, b = (CLIENT, RELAY) if up else (RELAY, CLIENT)
    return lambda p: (p.src == a and p.dst == b and h.RELAY_PORT in (p.sport, p.dport)
                      and p.payload >= max(carrying.payload, 1))


def chain(w: Window, sluice: bool, up_kind: str, down_kind: str, port: int) -> list[int] | None:
    """The ten points of one request and its answer (ns), or None where one is missing:
    first interface, client veth out, relay in, relay out, server in, server out, relay in, relay out,
    client veth in, first interface."""
    first = "tun" if sluice else "client"
    a = w.first(first, app(True, up_kind, port), w.lo)
    if a is None:
        return None
    b = w.first("client", tunnel(True, a), a.ts) if sluice else a
    c = w.same("relay-in", b)
    d = c and (w.first("relay-out", app(True, up_kind, port), c.ts) if sluice else w.same("relay-out", c))
    e = w.same("server", d)
    f = e and w.first("server", app(False, down_kind, port), e.ts)
    g = w.same("relay-out", f)
    k = g and (w.first("relay-in", tunnel(False, g), g.ts) if sluice else w.same("relay-in", g))
    i = w.same("client", k)
    j = i and (w.first("tun", app(False, down_kind, port), i.ts) if sluice else i)
    points = [a, b, c, d, e, f, g, k, i, j]
    return None if any(p is None for p in points) else [p.ts for p in points]


def hops(p: list[int]) -> dict[str, float]:
    """A chain's points as the table's hops, in µs."""
    a, b, c, d, e, f, g, k, i, j = p
    us = lambda ns: ns / 1000  # noqa: E731
    return {"client↑": us(b - a), "wire↑": us(c - b + e - d), "relay↑": us(d - c), "server": us(f - e),
            "relay↓": us(k - g), "wire↓": us(g - f + i - k), "client↓": us(j - i), "total": us(j - a)}


def analyse(test: str, mode: str, runs: list[dict], caps: dict[str, list[Packet]], warmup: int) -> list[dict]:
    """The table's rows for one test in one mode, each with its per-transaction figures."""
    index = {point: [p.ts for p in pkts] for point, pkts in caps.items()}
    sluice, port = mode == "sluice", PORTS[test]
    phases = [("handshake", "syn", "synack"), ("request", "data", "data")] if test == "tcp" else [("round trip", "data", "data")]
    per: dict[str, list[dict]] = {name: [] for name, _, _ in phases}
    whole: list[float] = []
    apps: dict[str, list[float]] = {name: [] for name, _, _ in phases}
    for r in runs[warmup:]:
        if not r["ok"]:
            continue
        w = Window(caps, index, r["t0"], r["t1"])
        points = {}
        for name, up, down in phases:
            p = chain(w, sluice, up, down, port)
            if p is not None:
                points[name] = p
                per[name].append(hops(p))
        if test == "tcp":
            apps["handshake"].append((r["connected"] - r["t0"]) / 1000)
            apps["request"].append((r["t1"] - r["connected"]) / 1000)
            if len(points) == 2:
                whole.append((points["request"][9] - points["handshake"][0]) / 1000)
        else:
            apps["round trip"].append((r["t1"] - r["t0"]) / 1000)
    done = [r for r in runs[warmup:] if r["ok"]]
    rows = []
    for name, _, _ in phases:
        figures = per[name]
        rows.append({"test": test, "phase": name, "mode": mode, "n": len(figures), "of": len(done),
                     "median": {k: statistics.median(x[k] for x in figures) for k in HOPS} if figures else {},
                     "app": statistics.median(apps[name]) if apps[name] else None, "samples": figures})
    if test == "tcp":
        app_whole = [(r["t1"] - r["t0"]) / 1000 for r in done]
        rows.append({"test": test, "phase": "whole", "mode": mode, "n": len(whole), "of": len(done),
                     "median": {"total": statistics.median(whole)} if whole else {},
                     "app": statistics.median(app_whole) if app_whole else None, "samples": whole})
    return rows


def table(rows: list[dict]) -> str:
    head = ["test", "phase", "mode", *HOPS, "app", "n"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        m = r["median"]
        cells = [r["test"], r["phase"], r["mode"]]
        for k in HOPS:
            skip = r["mode"] == "kernel" and k in ("client↑", "client↓")
            cells.append("–" if skip or k not in m else f"{m[k]:.0f}")
        cells += ["–" if r["app"] is None else f"{r['app']:.0f}", f"{r['n']}/{r['of']}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def usage_table(usage: list[dict]) -> str:
    sides = ("client", "relay", "server")
    lines = ["| test | mode | " + " | ".join(f"{s} CPU µs | {s} wake-ups" for s in sides) + " |",
             "|" + "---|" * (2 + 2 * len(sides))]
    for u in usage:
        cells = [u["test"], u["mode"]]
        for side in sides:
            cells += [f"{u[side]['cpu_us']:.0f}", f"{u[side]['wakeups']:.1f}"] if side in u else ["–", "–"]
        lines.append("| " + " | ".join(cells) + " |")
    return "per transaction (warm-up included; the tunnel's own timers too):\n\n" + "\n".join(lines)


# -- one mode -----------------------------------------------------------------------------------------

def run_mode(mode: str, tests: list[str], args, workdir: Path, loadgen: Path,
             usage: list[dict]) -> tuple[list[dict], list[str]]:
    s = dataclasses.replace(measure.QUICK, client_args=args.client_arg, relay_args=args.relay_arg)
    mr = measure.ModeRun(mode, s, workdir, loadgen, bench.say)
    rows, errors = [], []
    with mr.one_tunnel():
        for test in tests:
            try:
                procs = {"client": mr.client, "relay": mr.relay,
                         "server": next(p for p in mr.runner.procs if p.name == "loadgen-server")}
                procs = {side: p.pid for side, p in procs.items() if p is not None}
                with Captures(mr, test, enabled=not args.no_capture) as cap:
                    before = {side: sched_totals(pid) for side, pid in procs.items()}
                    runs = run_client(mr, test, args.samples + args.warmup, args.gap_ms / 1000)
                    after = {side: sched_totals(pid) for side, pid in procs.items()}
                    mr._check_alive()
                n = len(runs)
                usage.append({"test": test, "mode": mode, **{
                    side: {"cpu_us": (after[side][0] - before[side][0]) / n, "wakeups": (after[side][1] - before[side][1]) / n}
                    for side in procs}})
                failed = [r for r in runs if not r["ok"]]
                if failed:
                    bench.say(f"hops: [{mode}] {test}: {len(failed)} of {len(runs)} did not complete "
                              f"({failed[0].get('error', 'wrong answer')})")
                for point, line in cap.dropped().items():
                    bench.say(f"hops: [{mode}] {test}: tcpdump on {point}: {line}")
                got = analyse(test, mode, runs, cap.packets(), args.warmup)
                for r in got:
                    bench.say(f"hops: [{mode}] {test} {r['phase']}: total {r['median'].get('total', float('nan')):.0f} µs "
                              f"({r['n']} of {r['of']} followed)")
                rows += got
                if args.keep:
                    dest = Path(args.keep) / mode
                    dest.mkdir(parents=True, exist_ok=True)
                    for f in cap.files.values():
                        shutil.copyfile(f, dest / f.name)
            except (KeyboardInterrupt, SystemExit):
                raise
            except Exception as e:
                errors.append(f"{mode}/{test}: {type(e).__name__}: {e}")
                bench.say(f"hops: [{mode}] {test}: ERROR {e}")
    return rows, errors


def _interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--samples", type=int, default=1000, help="transactions per test and mode, counted (default 1000)")
    ap.add_argument("--warmup", type=int, default=20, help="transactions first, not counted (default 20)")
    ap.add_argument("--gap-ms", type=float, default=1.0, help="pause between transactions (default 1 ms)")
    ap.add_argument("--modes", default=",".join(MODES), help=f"comma-separated of {','.join(MODES)}")
    ap.add_argument("--tests", default=",".join(TESTS), help=f"comma-separated of {','.join(TESTS)}")
    ap.add_argument("--client-arg", action="append", default=[], help="extra argument for `sluice up` (repeatable)")
    ap.add_argument("--relay-arg", action="append", default=[], help="extra argument for `sluice relay` (repeatable)")
    ap.add_argument("--no-capture", action="store_true",
                    help="no tcpdump: only the app column and the CPU table, to see what capturing costs")
    ap.add_argument("--keep", help="copy the pcap files into this directory")
    ap.add_argument("--json", help="write the rows with every transaction's hops to this file")
    ap.add_argument("--guest-halt-poll-ns", type=int, metavar="NS",
                    help="on a KVM guest with the haltpoll cpuidle driver: let idle vCPUs poll up to NS before "
                         "they halt while it runs, and put back the setting it found (idlepolicy.py)")
    args = ap.parse_args(argv)
    modes = [m for m in args.modes.split(",") if m]
    tests = [t for t in args.tests.split(",") if t]
    if not modes or any(m not in MODES for m in modes) or not tests or any(t not in TESTS for t in tests):
        ap.error(f"--modes takes some of {','.join(MODES)}, --tests some of {','.join(TESTS)}")
    if args.samples < 1 or args.warmup < 0:
        ap.error("--samples must be at least 1, --warmup at least 0")
    if args.guest_halt_poll_ns is not None and args.guest_halt_poll_ns < 0:
        ap.error("--guest-halt-poll-ns must be 0 or more")
    if os.geteuid() != 0:
        bench.say("hops: it makes network namespaces and a TUN device: run it as root")
        return 2
    missing = [t for t in ("ip", "tcpdump", "tshark", "gcc") if shutil.which(t) is None]
    if missing:
        bench.say(f"hops: missing {', '.join(missing)} (apt-get install tcpdump tshark)")
        return 2
    if "sluice" in modes and not os.access(h.sluice_bin(), os.X_OK):
        bench.say(f"hops: {h.sluice_bin()} not found; run make build")
        return 2

    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, _interrupt)
    for ns in netns.gc("bench"):
        bench.say(f"hops: removed leftover namespace {ns} (its creator is gone)")
    load_before = os.getloadavg()
    bench.say(f"hops: load average {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f} before")
    setting = contextlib.ExitStack()  # the idle setting asked for, put back when the runs end
    if args.guest_halt_poll_ns is not None:
        try:
            setting.enter_context(idlepolicy.guest_halt_polling(args.guest_halt_poll_ns))
        except RuntimeError as e:
            bench.say(f"hops: --guest-halt-poll-ns: {e}")
            return 2
    with setting:  # from here on, whatever ends the runs puts the setting back
        rows, errors, usage = [], [], []
        workdir = Path(tempfile.mkdtemp(prefix="sluice-hops-"))
        try:
            idle = idlepolicy.read()
            loadgen = bench.compile_c(workdir, "loadgen")
            for mode in modes:
                bench.say(f"hops: {mode} mode")
                got, errs = run_mode(mode, tests, args, workdir, loadgen, usage)
                rows += got
                errors += errs
        except KeyboardInterrupt as e:
            bench.say(f"hops: stopped ({e}); everything it made is removed")
            return 1
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
    load_after = os.getloadavg()
    order = {t: i for i, t in enumerate(TESTS)}
    rows.sort(key=lambda r: (order[r["test"]], ["handshake", "request", "whole", "round trip"].index(r["phase"]),
                             MODES.index(r["mode"])))
    git = bench.git_info()
    print(f"hops.py — commit {git['describe'] or git['commit']}, {h.sluice_bin()} — {args.samples} transactions "
          f"per row, {args.gap_ms:g} ms apart — load average {load_before[0]:.2f} before, {load_after[0]:.2f} after")
    print(f"{idlepolicy.describe(idle)}\n")
    print(table(rows))
    print("\nmedians in µs; n: transactions followed through every capture point / completed\n")
    print(usage_table(usage))
    for e in errors:
        print(f"error: {e}")
    if args.json:
        Path(args.json).write_text(json.dumps({"git": git, "samples": args.samples, "gap_ms": args.gap_ms,
                                               "loadavg": [load_before, load_after], "idle": idle, "rows": rows,
                                               "usage": usage}, indent=1) + "\n")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
