#!/usr/bin/env python3
"""A/B: two sluice binaries through the same end-to-end tests, in turns, in one run.

    sudo python3 Benchmarks/e2e/ab.py A_BIN B_BIN [--rounds 3] [--tests udp,iperf] [--quick] [--mode sluice-poll|sluice-socks]
        [--busy-loops 2]

This machine's figures swing by a third between runs of `make bench`, so a change is judged by running
the old and the new binary in turns — A, B, A, B … — under the same load, and comparing the medians
of each figure. Each turn is bench.py's "sluice" mode (measure.py), with SLUICE_BIN set to A or B;
with `--mode sluice-poll`, that mode (polling.py: both ends busy polling), for a change to the polling loop;
with `--mode sluice-socks`, Sluice to danted (socksmode.py), for a change to the SOCKS5 upstream;
with `--busy-loops N`, every turn shares the CPUs with N busy loops (contention.py), as on a slower host.
Prints every round, the medians and B/A, marking which way is better, and writes
DIR/ab-<timestamp>.json. Exit status: 0 when every turn ran, 1 when one could not, 2 for bad usage.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench  # noqa: E402  (also puts Tests/E2E on sys.path)
import contention  # noqa: E402
import measure  # noqa: E402
import metrics  # noqa: E402
import netns  # noqa: E402
import polling  # noqa: E402
import socksmode  # noqa: E402


def table(runs: dict[str, list[dict]]) -> tuple[str, list[dict]]:
    """Rows of every figure both binaries produced: rounds, medians, B/A and which is better."""
    rows, cells = [], []
    for m in metrics.METRICS:
        a = [r[m.key] for r in runs["A"] if m.key in r]
        b = [r[m.key] for r in runs["B"] if m.key in r]
        if not a or not b:
            continue
        ma, mb = statistics.median(a), statistics.median(b)
        ratio = mb / ma if ma else None
        better = ("–" if ratio is None or ratio == 1 or not m.of_the_tunnel
                  else ("B" if (ratio > 1) == m.higher_is_better else "A"))
        rows.append({"key": m.key, "unit": m.unit, "a": a, "b": b, "a_median": ma, "b_median": mb, "b_over_a": ratio,
                     "higher_is_better": m.higher_is_better})
        cells.append([m.label, m.unit, " ".join(m.fmt(x) for x in a), " ".join(m.fmt(x) for x in b), m.fmt(ma),
                      m.fmt(mb), "–" if ratio is None else f"{ratio:.3f}", better])
    header = ["metric", "unit", "A rounds", "B rounds", "A median", "B median", "B/A", "better"]
    widths = [max(len(row[i]) for row in [header, *cells]) for i in range(len(header))]
    right = {4, 5, 6}  # numbers that stand alone align right
    line = lambda row: "  ".join(c.rjust(w) if i in right else c.ljust(w)  # noqa: E731
                                 for i, (c, w) in enumerate(zip(row, widths))).rstrip()
    lines = [line(header), "  ".join("-" * w for w in widths), *(line(row) for row in cells)]
    return "\n".join(lines), rows


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("a", help="the baseline sluice binary (A)")
    ap.add_argument("b", help="the binary under test (B)")
    ap.add_argument("--rounds", type=int, default=3, help="turns of each binary (default 3)")
    ap.add_argument("--tests", default="udp,tcp_cc,iperf",
                    help=f"comma-separated subset of {','.join(measure.GROUPS)} (default udp,tcp_cc,iperf)")
    ap.add_argument("--quick", action="store_true", help="bench.py's quick settings (2 s per test)")
    ap.add_argument("--iperf-seconds", type=float, help="duration of each iperf3 run (default 5)")
    ap.add_argument("--rate-seconds", type=float, help="duration of each rate test (default 5)")
    ap.add_argument("--mode", choices=("sluice", polling.SLUICE, *socksmode.MODES), default="sluice",
                    help="the bench mode each turn runs (default sluice)")
    contention.add_option(ap)
    ap.add_argument("--out", default=str(bench.REPO / "bench-results"), help="where the JSON goes")
    args = ap.parse_args(argv)

    groups = tuple(t.strip() for t in args.tests.split(",") if t.strip())
    if not groups or any(t not in measure.GROUPS for t in groups):
        ap.error(f"--tests takes some of {','.join(measure.GROUPS)}")
    if args.rounds < 1:
        ap.error("--rounds must be at least 1")
    binaries = {"A": str(Path(args.a).resolve()), "B": str(Path(args.b).resolve())}
    for name, path in binaries.items():
        if not os.access(path, os.X_OK):
            ap.error(f"{name}: {path} is not an executable file")
    if os.geteuid() != 0:
        bench.say("ab: it makes network namespaces and a TUN device: run it as root")
        return 2

    s = dataclasses.replace(measure.QUICK if args.quick else measure.FULL)
    s.iperf_seconds = args.iperf_seconds or (s.iperf_seconds if args.quick else 5)
    s.rate_seconds = args.rate_seconds or (s.rate_seconds if args.quick else 5)
    s.groups = groups
    bench.raise_nofile(s.flows + 4096)
    for ns in netns.gc("bench"):
        bench.say(f"ab: removed leftover namespace {ns} (its creator is gone)")

    started = datetime.datetime.now(datetime.timezone.utc)
    runs: dict[str, list[dict]] = {"A": [], "B": []}
    errors: list[str] = []
    workdir = Path(tempfile.mkdtemp(prefix="sluice-ab-"))
    previous = os.environ.get("SLUICE_BIN")
    try:
        loadgen = bench.compile_c(workdir, "loadgen")
        with contention.busy_loops(args.busy_loops):
            for i in range(args.rounds):
                for name in ("A", "B"):
                    bench.say(f"ab: round {i + 1}/{args.rounds}, {name} = {binaries[name]}")
                    os.environ["SLUICE_BIN"] = binaries[name]
                    turn = workdir / f"{name}{i}"
                    result = measure.ModeRun(args.mode, s, turn, loadgen, bench.say).run()
                    runs[name].append(result.get("figures", {}))
                    errors += [f"{name} round {i + 1}: {k}: {v.splitlines()[0]}" for k, v in result.get("errors", {}).items()]
    except KeyboardInterrupt:
        bench.say("ab: interrupted; everything it made is removed")
        return 1
    finally:
        if previous is None:
            os.environ.pop("SLUICE_BIN", None)
        else:
            os.environ["SLUICE_BIN"] = previous
        shutil.rmtree(workdir, ignore_errors=True)

    text, rows = table(runs)
    loops = f", {args.busy_loops} busy loops beside them" if args.busy_loops else ""
    print(f"A = {binaries['A']}\nB = {binaries['B']}\n{args.rounds} rounds of mode {args.mode}, turns alternating A, B{loops}\n")
    print(text)
    for e in errors:
        print(f"error: {e}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"ab-{started:%Y%m%dT%H%M%SZ}.json"
    path.write_text(json.dumps({"schema": 1, "started": started.isoformat(timespec="seconds"), "binaries": binaries,
                                "git": bench.git_info(), "machine": bench.machine_info(),
                                "mode": args.mode, "busy_loops": args.busy_loops, "settings": {k: v for k, v in vars(s).items()}, "runs": runs, "rows": rows,
                                "errors": errors}, indent=2) + "\n")
    print(f"results: {path}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
