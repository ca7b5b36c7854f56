#!/usr/bin/env python3
"""CPU time per unit of work of the tunnel's client and relay — per request for loadgen's UDP request
tests, per new connection for its TCP one, per GB for iperf3 — and optionally where it goes (perf
record), for one or more sluice binaries in turns.

    sudo flock /tmp/sluice-e2e.lock python3 Benchmarks/e2e/reqcpu.py [--test udp-rr] [--seconds 8] \\
        [--in-flight 16] [--streams 1] [--rounds 1] [--perf DIR] [--syscalls] [--busy-loops N] \\
        [--client-arg ARG] [--relay-arg ARG] BIN|floor|floor-aead|floor-aead-64k [BIN …]

A rate says how much got through; when it moves, this says which side paid for it. For each binary
(SLUICE_BIN) it brings up the bench's sluice mode (measure.py: the same three namespaces, servers and
flags as `make bench`), runs the test for `--seconds` — `loadgen udp-rr|udp-new` with `--in-flight`
requests outstanding, `loadgen tcp-cc` with `--in-flight` connections outstanding (each a connect to
the server's closing port and the wait for its close, as the bench's tcp_cc group), or iperf3 with
`--streams` streams (one by default) up (`iperf-up`) or down (`iperf-down`) — and divides each side's
user and system CPU seconds (/proc, proc.cpu_user_system) by the requests answered or the connections
completed (µs per request) or the GB received (s per GB). A system-wide load lowers the rate but moves
CPU per unit much less, which is why this is the figure to compare builds by when the rates are noisy.
With `--perf DIR`, `perf record -g` samples each side meanwhile (DIR/BIN-TEST-SIDE.data); perf's
sampling costs a few per cent, so figures from such a round are marked.

In place of a binary, `floor`, `floor-aead` or `floor-aead-64k` measures that floor mode's two
forwarders (forward.c, floor.py) the same way: what the chain every proxy-style tunnel has costs,
beside what Sluice costs.
With `--syscalls`, `perf stat` counts each side's system calls meanwhile (all of them, and the reads,
writes, epoll waits and batched datagram calls among them), and /proc its context switches and minor
page faults, per request or per GB: whether a side pays for more trips into the kernel, or for more
work in each. With `--busy-loops N`, N busy loops share the CPUs meanwhile (contention.py): a slower,
contended host, made alike for every turn. `--client-arg ARG` and `--relay-arg ARG` (repeatable) go to
`sluice up` and `sluice relay` after the bench's own options, in every turn of a binary: the same build
with another setting (a relay cap, `--busy-poll`), as `bench.py` and `hops.py` take them.

Prints a line per round and binary and, with `--json FILE`, writes them all.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench  # noqa: E402  (also puts Tests/E2E on sys.path)
import contention  # noqa: E402
import floor  # noqa: E402
import harness as h  # noqa: E402
import hoststeal  # noqa: E402
import measure  # noqa: E402
from proc import cpu_user_system  # noqa: E402

TESTS = ("udp-rr", "udp-new", "tcp-cc", "iperf-up", "iperf-down")
# What --syscalls counts: every entry, and these among them (a name per tracepoint, read with perf stat).
# The socket lifecycle calls are what a new connection or association costs a side beyond its data.
SYSCALLS = ("read", "write", "readv", "writev", "recvfrom", "sendto", "recvmsg", "sendmsg", "recvmmsg", "sendmmsg",
            "epoll_wait", "epoll_ctl", "socket", "connect", "accept4", "setsockopt", "close")


def start_counting(pid: int, out: Path) -> subprocess.Popen:
    """perf stat over `pid`'s threads until SIGINT, each count a CSV line in `out`."""
    events = ["raw_syscalls:sys_enter", *(f"syscalls:sys_enter_{name}" for name in SYSCALLS)]
    return subprocess.Popen(["perf", "stat", "-x", ",", "-o", str(out), "-p", str(pid), *(a for e in events for a in ("-e", e))],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def switches_and_faults(pid: int) -> tuple[int, int, int]:
    """Voluntary (it waited: epoll_wait, a blocking call) and involuntary (preempted) context switches
    of all of `pid`'s threads so far (/proc/PID/task/*/status), and its minor page faults (/proc/PID/stat:
    memory the allocator gave back to the system and touched again)."""
    with open(f"/proc/{pid}/stat") as f:
        faults = int(f.read().rsplit(")", 1)[1].split()[7])
    voluntary = involuntary = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            for line in (task / "status").read_text().splitlines():
                if line.startswith("voluntary_ctxt_switches:"):
                    voluntary += int(line.split()[1])
                elif line.startswith("nonvoluntary_ctxt_switches:"):
                    involuntary += int(line.split()[1])
        except OSError:
            pass  # a thread that ended meanwhile
    return voluntary, involuntary, faults


def counted(out: Path) -> dict[str, int]:
    """perf stat's CSV (count,unit,event,…) as {"all": n, "read": n, …}; events it could not count are left out."""
    counts = {}
    for line in out.read_text().splitlines():
        fields = line.split(",")
        if len(fields) < 3 or not fields[0].strip().isdigit():
            continue
        event = fields[2]
        name = "all" if event == "raw_syscalls:sys_enter" else event.removeprefix("syscalls:sys_enter_")
        counts[name] = int(fields[0])
    return counts


def one_round(binary: str, test: str, seconds: float, in_flight: int, workdir: Path, loadgen: Path,
              perf_dir: Path | None, forward: Path | None = None, syscalls: bool = False, streams: int = 1,
              client_args: list[str] = (), relay_args: list[str] = ()) -> dict:
    """One tunnel up with `binary` (or the floor mode it names), one test, each side's CPU per unit.
    `client_args` and `relay_args` go to `sluice up` and `sluice relay` after the bench's own."""
    mode = binary if binary in floor.ALL_MODES else "sluice"
    if mode == "sluice":
        os.environ["SLUICE_BIN"] = binary
    settings = dataclasses.replace(measure.FULL, client_args=list(client_args), relay_args=list(relay_args))
    run = measure.ModeRun(mode, settings, workdir, loadgen, bench.say, forward)
    name = Path(binary).name
    with run.one_tunnel():
        sides = {"client": run.client.pid, "relay": run.relay.pid}
        recorders, counters = [], {}
        if perf_dir is not None:
            for side, pid in sides.items():
                out = perf_dir / f"{name}-{test}-{side}.data"
                recorders.append(subprocess.Popen(["perf", "record", "-F", "2000", "-g", "-p", str(pid), "-o", str(out)],
                                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        if syscalls:
            counters = {side: run.workdir / f"{side}-syscalls.csv" for side in sides}
            recorders += [start_counting(pid, counters[side]) for side, pid in sides.items()]
        iperf = test.startswith("iperf")
        try:
            if recorders:
                time.sleep(0.5)  # perf attached before the load starts
            if iperf:
                server = h.start_iperf3_server(run.runner, run.topo, measure.SERVER)
                argv = ["iperf3", "-c", run.target, "-p", str(h.IPERF_PORT), "-t", str(seconds), "-J", "-P", str(streams),
                        *(["-R"] if test == "iperf-down" else [])]
            elif test == "tcp-cc":
                argv = [str(loadgen), test, run.target, str(measure.CLOSE_PORT), str(seconds), str(in_flight)]
            else:
                argv = [str(loadgen), test, run.target, str(measure.UDP_PORT), str(seconds), str(in_flight),
                        str(run.s.udp_size)]
            before = {side: cpu_user_system(pid) for side, pid in sides.items()}
            switched = {side: switches_and_faults(pid) for side, pid in sides.items()} if syscalls else {}
            steal0 = hoststeal.read()
            cp = run.topo.exec(run.topo.client, argv, timeout=seconds + 30)
            stolen = hoststeal.percent(steal0, hoststeal.read())
            after = {side: cpu_user_system(pid) for side, pid in sides.items()}
            switched = {side: tuple(b - a for a, b in zip(switched[side], switches_and_faults(pid)))
                        for side, pid in sides.items()} if syscalls else {}
        finally:
            # Stopped also when the test failed: perf writes its file on SIGINT and exits.
            for p in recorders:
                p.send_signal(signal.SIGINT)
                p.wait(timeout=30)
        if iperf:
            server.stop()
    if cp.returncode != 0:
        raise RuntimeError(f"{argv[0]} {test} exited {cp.returncode}: {cp.stderr.strip() or cp.stdout[-500:]}")
    row = {"binary": binary, "test": test, "perf": perf_dir is not None, **({"streams": streams} if iperf else {}),
           "host_steal_percent": stolen}
    if iperf:
        received = json.loads(cp.stdout)["end"]["sum_received"]
        row.update(unit="s/GB", rate=received["bits_per_second"] / 1e9, rate_unit="Gbit/s", answered=received["bytes"])
        per, scale = received["bytes"] / 1e9, 1.0
    else:
        result = json.loads(cp.stdout.strip().splitlines()[-1])
        if test == "tcp-cc":  # a request is a connection the server accepted and closed
            answered, lost = result["completed"], result["failed"] + result["timeouts"]
        else:  # a datagram answered
            answered, lost = result["received"], result.get("lost", 0)
        row.update(unit="µs/req", rate=result["rate"], rate_unit="/s", answered=answered, in_flight=in_flight, lost=lost)
        per, scale = answered, 1e6
    if row["answered"] <= 0:
        raise RuntimeError(f"{test}: nothing got through")
    for side in sides:
        user = after[side][0] - before[side][0]
        system = after[side][1] - before[side][1]
        row[f"{side}_user"] = scale * user / per
        row[f"{side}_sys"] = scale * system / per
        row[f"{side}"] = scale * (user + system) / per
        if syscalls:
            # Per request, or per GB: how many times each side crossed into the kernel for the work.
            row[f"{side}_syscalls"] = {k: n / per for k, n in counted(counters[side]).items()}
            row[f"{side}_switches"] = {"voluntary": switched[side][0] / per, "involuntary": switched[side][1] / per}
            row[f"{side}_faults"] = switched[side][2] / per
    return row


def line(row: dict) -> str:
    what = (f"{row['test']} ×{row['in_flight']} {row['rate']:,.0f}/s" if "in_flight" in row
            else f"{row['test']} ×{row.get('streams', 1)} {row['rate']:.2f} Gbit/s")
    return (f"{Path(row['binary']).name}: {what}"
            f"  client {row['client']:.2f} {row['unit']} (user {row['client_user']:.2f}, sys {row['client_sys']:.2f})"
            f"  relay {row['relay']:.2f} (user {row['relay_user']:.2f}, sys {row['relay_sys']:.2f})"
            + (f"  host steal {row['host_steal_percent']:.0f} %" if row.get("host_steal_percent") is not None else "")
            + ("  [under perf]" if row["perf"] else "")
            + "".join(f"\n  {side} per {row['unit'].split('/')[1]}: "
                      + syscall_summary(row[f"{side}_syscalls"], row[f"{side}_switches"], row[f"{side}_faults"])
                      for side in ("client", "relay") if f"{side}_syscalls" in row))


def syscall_summary(counts: dict[str, float], switches: dict[str, float], faults: float) -> str:
    """"syscalls 12,345 (read 1,234, write …); context switches 2,345 voluntary, 12 involuntary; page
    faults 3": the calls a side made at all, most first."""
    rest = sorted(((k, n) for k, n in counts.items() if k != "all" and n > 0), key=lambda kn: -kn[1])
    return (f"syscalls {counts.get('all', 0):,.1f} (" + ", ".join(f"{k} {n:,.1f}" for k, n in rest) + "); "
            f"context switches {switches['voluntary']:,.1f} voluntary, {switches['involuntary']:,.1f} involuntary; "
            f"page faults {faults:,.1f}")


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("binaries", nargs="+", help="sluice binaries (or floor, floor-aead, floor-aead-64k), measured in turns")
    ap.add_argument("--test", choices=TESTS, default="udp-rr",
                    help="loadgen's UDP or new-TCP-connection test, or iperf3 one way (default udp-rr)")
    ap.add_argument("--seconds", type=float, default=8, help="length of each test run (default 8)")
    ap.add_argument("--in-flight", type=int, default=16,
                    help="requests or connections outstanding in loadgen's tests (default 16, as make bench)")
    ap.add_argument("--rounds", type=int, default=1, help="turns of each binary (default 1)")
    ap.add_argument("--streams", type=int, default=1, help="TCP streams of the iperf tests (iperf3 -P; default 1)")
    ap.add_argument("--perf", metavar="DIR", help="also perf record each side into DIR")
    ap.add_argument("--syscalls", action="store_true",
                    help="also count each side's system calls (perf stat), context switches and page faults")
    ap.add_argument("--client-arg", action="append", default=[], help="extra argument for `sluice up` (repeatable)")
    ap.add_argument("--relay-arg", action="append", default=[], help="extra argument for `sluice relay` (repeatable)")
    contention.add_option(ap)
    ap.add_argument("--json", metavar="FILE", help="write every row here")
    args = ap.parse_args(argv)
    for b in args.binaries:
        if b not in floor.ALL_MODES and not os.access(b, os.X_OK):
            ap.error(f"{b} is not an executable file")
    if os.geteuid() != 0:
        bench.say("reqcpu: it makes network namespaces and a TUN device: run it as root")
        return 2
    perf_dir = Path(args.perf) if args.perf else None
    if perf_dir is not None:
        perf_dir.mkdir(parents=True, exist_ok=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="sluice-reqcpu-") as tmp:
        workdir = Path(tmp)
        loadgen = bench.compile_c(workdir, "loadgen")
        wants_forward = bool(set(args.binaries) & set(floor.ALL_MODES))
        forward = bench.compile_c(workdir, "forward", ("-lgcrypt",)) if wants_forward else None
        with contention.busy_loops(args.busy_loops):
            for i in range(args.rounds):
                for b in args.binaries:
                    row = one_round(b if b in floor.ALL_MODES else str(Path(b).resolve()), args.test, args.seconds,
                                    args.in_flight, workdir / f"{i}-{len(rows)}", loadgen, perf_dir, forward,
                                    args.syscalls, args.streams, args.client_arg, args.relay_arg)
                    rows.append(row)
                    print(line(row), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"schema": 1, "git": bench.git_info(), "busy_loops": args.busy_loops,
                                               "client_args": args.client_arg, "relay_args": args.relay_arg,
                                               "rows": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
