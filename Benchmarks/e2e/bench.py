#!/usr/bin/env python3
"""Sluice's end-to-end benchmark: the same tests through Sluice, through the VPNs a user would pick
instead, and through plain kernel forwarding.

    sudo python3 Benchmarks/e2e/bench.py [--quick] [--out DIR]     (or: make bench / make bench-quick)

For each mode — "kernel" (the relay namespace forwards: the ceiling), "floor" and "floor-aead" (two
minimal C forwarders in a chain, plain or sealing ChaCha20-Poly1305 records: the most any proxy-style
tunnel can do here; the udp, tcp_cc and iperf groups), the peers "wireguard-go" and "openvpn" (Debian's userspace WireGuard
and OpenVPN 2.6 with AES-256-GCM, the relay namespace forwarding from the VPN device and masquerading;
peers.py), then "sluice" (relay and client processes, encrypted carriers), in the paired iperf3 rounds
only "floor-aead-64k" (floor-aead moving at most 64 KiB a read or write, as a tunnel behind a TUN device
does: floor.py), and in the latency rounds only "floor-poll" and "sluice-poll" (floor and Sluice polling
before they sleep, polling.py) — it builds the three
namespaces of Tests/E2E/netns.py, starts a C load server and iperf3 in the server namespace, runs the
tests of measure.py, and removes everything again.
Then it prints a table (Sluice, ceiling, % of ceiling, the floors, each peer and Sluice / peer, target,
verdict, notes) on stdout, and writes DIR/bench-<timestamp>.json (every figure, the commit, the machine,
the peers' versions) and DIR/bench-<timestamp>.svg. Targets are ratios to figures of the same run
(targets.py), so a slow day does not fail what a fast one passes. Progress goes to stderr. Exit status:
0 when every test ran (whatever the verdicts; with --strict, 3 when a target is missed), 1 when a test
could not run, 2 for bad usage.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import platform
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(REPO / "Tests" / "E2E"))
sys.path.insert(0, str(HERE))

import chart  # noqa: E402
import floor  # noqa: E402
import harness as h  # noqa: E402
import idlepolicy  # noqa: E402
import measure  # noqa: E402
import metrics  # noqa: E402
import netns  # noqa: E402
import paired  # noqa: E402
import peers  # noqa: E402
import polling  # noqa: E402
import socksmode  # noqa: E402


def say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _out(argv: list[str]) -> str:
    try:
        cp = subprocess.run(argv, capture_output=True, text=True, timeout=10)
        return (cp.stdout or cp.stderr).strip() if cp.returncode == 0 else ""
    except (OSError, subprocess.TimeoutExpired):
        return ""


def git_info() -> dict:
    g = ["git", "-c", f"safe.directory={REPO}", "-C", str(REPO)]
    return {
        "commit": _out([*g, "rev-parse", "HEAD"]) or "unknown",
        "describe": _out([*g, "describe", "--always", "--dirty"]),
        "branch": _out([*g, "rev-parse", "--abbrev-ref", "HEAD"]),
        "subject": _out([*g, "log", "-1", "--format=%s"]),
    }


def machine_info() -> dict:
    model = ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
        mem_kib = next(int(l.split()[1]) for l in open("/proc/meminfo") if l.startswith("MemTotal:"))
    except (OSError, StopIteration):
        mem_kib = 0
    os_name = ""
    try:
        os_name = next(l.split("=", 1)[1].strip().strip('"') for l in open("/etc/os-release")
                       if l.startswith("PRETTY_NAME="))
    except (OSError, StopIteration):
        pass
    return {
        "nproc": len(os.sched_getaffinity(0)),
        "cpu_model": model,
        "kernel": platform.release(),
        "os": os_name,
        "memory_mib": mem_kib // 1024,
        "hostname": platform.node(),
        "iperf3": _out(["iperf3", "--version"]).splitlines()[0] if _out(["iperf3", "--version"]) else "",
        "gcc": _out(["gcc", "-dumpfullversion"]),
        "python": platform.python_version(),
        "sluice": _out([h.sluice_bin(), "--version"]),
        "libgcrypt": _out(["pkg-config", "--modversion", "libgcrypt"]),  # the records' AEAD, Sluice's and forward.c's
        "idle": idlepolicy.read(),  # what a wake-up costs: the one-in-flight latencies depend on it
    }


def peer_versions(v: dict, modes: list[str], openvpn_args: list[str]) -> str:
    """One line naming the peers as they ran: versions, and the settings a reader needs."""
    said = {"wireguard-go": f"{v.get('wireguard-go') or 'wireguard-go (version unknown)'} "
                            f"({v.get('wireguard-tools', '')}), MTU 1420",
            "openvpn": f"{v.get('openvpn', 'OpenVPN').split(' [')[0]} ({v.get('openvpn_libraries', '')}), UDP, "
                       "AES-256-GCM, user-space data channel (--disable-dco)"
                       + (f", NOT its defaults: {' '.join(openvpn_args)}" if openvpn_args else "")}
    return "peers: " + "; ".join(said[m] for m in modes)


def compile_c(workdir: Path, name: str, libs: tuple[str, ...] = ()) -> Path:
    """Builds Benchmarks/e2e/NAME.c into the temporary directory (loadgen: libc only; forward: -lgcrypt)."""
    out = workdir / name
    cp = subprocess.run(["gcc", "-O2", "-Wall", "-o", str(out), str(HERE / f"{name}.c"), *libs],
                        capture_output=True, text=True, timeout=60)
    if cp.returncode != 0:
        raise RuntimeError(f"gcc could not build {name}.c:\n{cp.stderr}")
    return out


def raise_nofile(need: int) -> None:
    """Every child inherits this: the relay, the server and the hold client each keep `need` sockets."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = max(need, soft)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(want, soft), max(want, hard)))
    except (ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def keep_logs(workdir: Path, dest: Path) -> None:
    """Copies what the relay, client and servers logged (small: lifecycle lines) next to the results."""
    for log in workdir.glob("*/*.log"):
        target = dest / log.parent.name / log.name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(log, target)


def main_pass(modes: list[str], pairings: list[paired.Pairing]) -> list[str]:
    """The modes the main pass runs: all of `modes` but those there for a pairing's turns that a pairing
    runs (paired.ROUNDS_ONLY: the polling modes, floor-aead-64k; named with --pairs 0, they run the main
    pass as any mode does)."""
    in_rounds = {m for p in pairings for m in p.modes}
    return [m for m in modes if not (m in paired.ROUNDS_ONLY and m in in_rounds)]


def _interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def _expired(signum, frame):
    raise TimeoutError("the benchmark ran past its time limit")


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="2 s per test, 2,000 idle flows: fits in three minutes")
    ap.add_argument("--out", default=str(REPO / "bench-results"), help="where the JSON and SVG go")
    ap.add_argument("--modes", default=",".join(measure.MODES),
                    help=f"comma-separated, in order, of {','.join(measure.MODES)} (default all)")
    ap.add_argument("--iperf-seconds", type=float, help="duration of each iperf3 run (full 10, quick 2)")
    ap.add_argument("--rate-seconds", type=float, help="duration of each rate test (full 10, quick 2)")
    ap.add_argument("--flows", type=int, help="idle TCP flows to hold (full 10000, quick 2000)")
    ap.add_argument("--tcp-cc-concurrency", type=int, help="connects in flight in the connection-rate test")
    ap.add_argument("--udp-window", type=int, help="requests in flight on the one UDP socket")
    ap.add_argument("--udp-concurrency", type=int, help="sockets in flight in the new-socket UDP test")
    ap.add_argument("--tests", default=",".join(measure.GROUPS),
                    help=f"comma-separated subset of {','.join(measure.GROUPS)} (default all)")
    ap.add_argument("--client-arg", action="append", default=[], help="extra argument for `sluice up` (repeatable)")
    ap.add_argument("--relay-arg", action="append", default=[], help="extra argument for `sluice relay` (repeatable)")
    ap.add_argument("--openvpn-arg", action="append", default=[],
                    help="extra argument for both OpenVPN ends (repeatable; --openvpn-arg=--rcvbuf --openvpn-arg=4194304)")
    ap.add_argument("--floor-arg", action="append", default=[],
                    help="extra argument for both forwarders of the floor modes (repeatable; "
                         "--floor-arg=--spin-us --floor-arg=200)")
    ap.add_argument("--pairs", type=int,
                    help="paired rounds that the verdicts comparing two modes judge: one-stream iperf3 through "
                         "floor-aead and Sluice in turns, the one-in-flight tests and the new-socket rate through "
                         "kernel, floor, floor-poll, openvpn, Sluice and sluice-poll in turns (full 3, quick 1; 0: none)")
    ap.add_argument("--time-limit", type=float, help="hard limit for the whole run in seconds (full 1500, quick 420)")
    ap.add_argument("--strict", action="store_true", help="exit 3 when a target is missed")
    args = ap.parse_args(argv)

    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if not modes or any(m not in measure.MODES for m in modes):
        ap.error(f"--modes takes some of {','.join(measure.MODES)}")
    groups = tuple(t.strip() for t in args.tests.split(",") if t.strip())
    if not groups or any(t not in measure.GROUPS for t in groups):
        ap.error(f"--tests takes some of {','.join(measure.GROUPS)}")
    if os.geteuid() != 0:
        say("bench: it makes network namespaces and a TUN device: run it as root")
        return 2
    missing = [t for t in ("ip", "ss", "iperf3", "gcc") if shutil.which(t) is None]
    missing += [f"{tool} (Debian package {pkg})" for tool, pkg in peers.missing_tools(modes).items()]
    if missing:
        say(f"bench: missing {', '.join(missing)}; run scripts/deps.sh")
        return 2
    kinds = {measure.kind_of(m) for m in modes}  # what runs: floor-poll is a floor, sluice-poll Sluice
    if "sluice" in kinds and not os.access(h.sluice_bin(), os.X_OK):
        say(f"bench: {h.sluice_bin()} not found; run 'swift build -c release --product sluice' (make build)")
        return 2

    s = dataclasses.replace(measure.QUICK if args.quick else measure.FULL)
    for name in ("iperf_seconds", "rate_seconds", "flows", "tcp_cc_concurrency", "udp_window", "udp_concurrency"):
        if getattr(args, name) is not None:
            setattr(s, name, getattr(args, name))
    s.client_args, s.relay_args, s.groups = args.client_arg, args.relay_arg, groups
    s.openvpn_args, s.floor_args = args.openvpn_arg, args.floor_arg
    limit = args.time_limit or (420 if args.quick else 1500)
    pairs = args.pairs if args.pairs is not None else (1 if args.quick else 3)
    # Each pairing cut to the modes and groups this run has; none at all with --pairs 0.
    pairings = [c for c in (paired.within(p, modes, groups) for p in paired.PAIRINGS) if c] if pairs else []

    raise_nofile(s.flows + 4096)
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, _interrupt)
    signal.signal(signal.SIGALRM, _expired)
    signal.setitimer(signal.ITIMER_REAL, limit)
    for ns in netns.gc("bench"):
        say(f"bench: removed leftover namespace {ns} (its creator is gone)")

    load_before = os.getloadavg()
    if load_before[0] >= 0.5:
        say(f"bench: warning: load average {load_before[0]:.2f} before the start — other work shares the CPUs "
            "and will lower the figures")
    started = datetime.datetime.now(datetime.timezone.utc)
    stamp = started.strftime("%Y%m%dT%H%M%SZ")
    out = Path(args.out)
    t0 = time.monotonic()
    results: dict[str, dict] = {}
    workdir = Path(tempfile.mkdtemp(prefix="sluice-bench-"))
    try:
        loadgen = compile_c(workdir, "loadgen")
        forward = compile_c(workdir, "forward", ("-lgcrypt",)) if kinds & set(floor.MODES) else None
        for mode in main_pass(modes, pairings):
            say(f"bench: {mode} mode ({'quick' if args.quick else 'full'})")
            results[mode] = measure.ModeRun(mode, s, workdir, loadgen, say, forward).run()
        for pairing in pairings:
            samples, errors = paired.run(pairing, pairs, s, workdir, loadgen, say, forward)
            for mode, figures in paired.medians(pairing, samples).items():
                results.setdefault(mode, {"figures": {}, "details": {}, "errors": {}, "notes": []})
                results[mode]["figures"].update(figures)
                results[mode]["details"][pairing.name] = samples[mode]
            results["sluice"]["errors"].update(errors)  # each names its turn and mode
    except (KeyboardInterrupt, TimeoutError) as e:
        say(f"bench: stopped ({e}); everything it made is removed")
        return 1
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        keep_logs(workdir, out / f"bench-{stamp}-logs")
        shutil.rmtree(workdir, ignore_errors=True)
    elapsed = time.monotonic() - t0

    notes = {m: r.get("notes", []) for m, r in results.items()}
    rows = metrics.compare({m: r.get("figures", {}) for m, r in results.items()}, notes)
    git, machine = git_info(), machine_info()
    if set(modes) & set(peers.MODES):
        machine["peers"] = peers.versions()
    machine["loadavg_before"] = [round(x, 2) for x in load_before]
    machine["loadavg_after"] = [round(x, 2) for x in os.getloadavg()]
    report = {
        "schema": 2,  # 2: peer modes, ratio targets, notes as {key, text}
        "started": started.isoformat(timespec="seconds"),
        "seconds": round(elapsed, 1),
        "quick": args.quick,
        "git": git,
        "machine": machine,
        "settings": {**vars(s), "pairs": pairs, "pairings": [p.name for p in pairings]},
        "modes": results,
        "metrics": rows,
    }
    out.mkdir(parents=True, exist_ok=True)
    json_path, svg_path = out / f"bench-{stamp}.json", out / f"bench-{stamp}.svg"
    json_path.write_text(json.dumps(report, indent=2) + "\n")
    title = f"Sluice end-to-end benchmark{' (quick)' if args.quick else ''} — {git['describe'] or git['commit'][:12]}"
    subtitle = (f"{started:%Y-%m-%d %H:%M} UTC · {machine['nproc']} CPUs, {machine['cpu_model']} · "
                f"kernel {machine['kernel']} · iperf3 {s.iperf_seconds:g} s, rate tests {s.rate_seconds:g} s, "
                f"{s.flows:,} idle flows")
    svg_path.write_text(chart.render(rows, title, subtitle))

    print(f"Sluice benchmark{' (quick)' if args.quick else ''} — commit {git['describe'] or git['commit']} — "
          f"{machine['nproc']} CPUs, {machine['cpu_model']}, kernel {machine['kernel']}")
    print(idlepolicy.describe(machine["idle"]))
    if "peers" in machine:
        print(peer_versions(machine["peers"], [m for m in modes if m in peers.MODES], s.openvpn_args))
    if s.floor_args and kinds & set(floor.MODES):
        print(f"floors: forward.c NOT its defaults: {' '.join(s.floor_args)}")
    if floor.UNIT_MODE in results:
        print(f"{floor.UNIT_MODE} = floor-aead with forward.c --unit {floor.UNIT_BYTES}: at most 64 KiB a read or "
              "write of plain bytes, a TUN device's most (paired iperf3 rounds only)")
    if set(results) & set(polling.MODES):
        print(f"polling modes: floor-poll = floor with --spin-us {polling.POLL_US}, sluice-poll = Sluice with "
              f"--busy-poll {polling.POLL_US} and the relay on one worker (latency rounds only)")
    print(metrics.table(rows))
    for line in metrics.footnotes(notes):
        print(line)
    errors = {f"{m}/{k}": v for m, r in results.items() for k, v in r.get("errors", {}).items()}
    for k, v in errors.items():
        print(f"error: {k}: {v.splitlines()[0]}")
    if load_before[0] >= 0.5:
        print(f"note: load average was {load_before[0]:.2f} before the start: other work shared the CPUs")
    print(f"({elapsed:.0f} s) results: {json_path}  chart: {svg_path}  logs: {out / f'bench-{stamp}-logs'}")
    if errors:
        return 1
    if args.strict and any(r["verdict"] == "FAIL" for r in rows):
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
