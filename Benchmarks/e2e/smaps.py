#!/usr/bin/env python3
"""Where an idle `sluice up`'s resident memory is: /proc/PID/smaps summed per mapping, binaries side by side.

    sudo flock /tmp/sluice-e2e.lock python3 Benchmarks/e2e/smaps.py BIN [BIN …] [--rounds 2] [--udp] [--sections]

Each binary in turn runs as bench.py's "sluice" mode does (measure.py: the bench namespaces, a relay, the
loadgen servers, one connection through the tunnel), then after bench's settle time the client's smaps is
read: Rss in KiB per file (the binary, each .so), [heap], [stack], thread stacks (an anonymous mapping
just after a guard page) and other anonymous memory, with the thread count and VmRSS. With --udp the
smaps is read again after bench's UDP tests (quick settings), at the end of the load. The figure per row
is the median over the rounds. --sections prints, idle, which sections of the binary are resident
(binpages.py).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import statistics
import sys
import tempfile
import unittest.mock
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench  # noqa: E402  (also puts Tests/E2E on sys.path)
import binpages  # noqa: E402
import measure  # noqa: E402


def smaps_kib(pid: int, exe: str) -> dict[str, int]:
    """Rss per mapping group of one process (`exe` is "binary"), with "threads", VmRSS, RssAnon, RssFile."""
    out: dict[str, int] = defaultdict(int)
    name, previous_guard = "", False
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        fields = line.split()
        if "-" in fields[0] and len(fields) >= 5 and not fields[0].endswith(":"):
            path = fields[5] if len(fields) > 5 else ""
            perms = fields[1]
            if path.startswith("/"):
                name = "binary" if os.path.realpath(path) == os.path.realpath(exe) else Path(path).name
            elif path:
                name = path
            elif previous_guard:
                name = "thread stacks"
            else:
                name = "anonymous"
            previous_guard = perms.startswith("---") and not path
        elif fields[0] == "Rss:":
            out[name] += int(fields[1])
    out["threads"] = len(os.listdir(f"/proc/{pid}/task"))
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(("VmRSS:", "RssAnon:", "RssFile:")):
            out[line.split(":")[0]] = int(line.split()[1])
    return dict(out)


class SmapsRun(measure.ModeRun):
    """bench's sluice mode, reading the client's smaps idle (and after the UDP tests)."""

    def __init__(self, *args, udp: bool, sections: bool, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.udp, self.sections = udp, sections
        self.snapshots: dict[str, dict[str, int]] = {}

    def run(self) -> dict:
        with self.one_tunnel():
            self.snapshots["idle"] = smaps_kib(self.client.pid, os.environ["SLUICE_BIN"])
            if self.sections:
                print(binpages.report(self.client.pid, os.environ["SLUICE_BIN"]), flush=True)
            if self.udp:
                self.test_udp()
                self.snapshots["udp"] = smaps_kib(self.client.pid, os.environ["SLUICE_BIN"])
        return self.snapshots


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("binaries", nargs="+")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--udp", action="store_true", help="also after bench's quick UDP tests")
    ap.add_argument("--sections", action="store_true",
                    help="also print the binary's resident KiB per ELF section and per Swift module (binpages.py)")
    args = ap.parse_args(argv)
    if os.geteuid() != 0:
        bench.say("smaps: it makes network namespaces and a TUN device: run it as root")
        return 2
    s = dataclasses.replace(measure.QUICK, groups=("udp",), settle_seconds=1.0)
    bins = [str(Path(b).resolve()) for b in args.binaries]
    got: dict[str, dict[str, list[int]]] = {b: defaultdict(list) for b in bins}  # bin → "when row" → KiB
    workdir = Path(tempfile.mkdtemp(prefix="sluice-smaps-"))
    try:
        loadgen = bench.compile_c(workdir, "loadgen")
        for i in range(args.rounds):
            for n, b in enumerate(bins):
                with unittest.mock.patch.dict(os.environ, {"SLUICE_BIN": b}):  # the harness starts $SLUICE_BIN
                    snaps = SmapsRun("sluice", s, workdir / f"{n}-{i}", loadgen, bench.say, udp=args.udp,
                                     sections=args.sections).run()
                for when, rows in snaps.items():
                    for row, kib in rows.items():
                        got[b][f"{when} {row}"].append(kib)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    keys = sorted({k for g in got.values() for k in g}, key=lambda k: (k.split()[0] != "idle", -max(
        statistics.median(g.get(k, [0])) for g in got.values()), k))
    for i, b in enumerate(bins):
        print(f"[{i}] {b}")
    width = max(len(k) for k in keys)
    print(f"{'KiB (median of ' + str(args.rounds) + ')':<{width}}  " + "  ".join(f"{'[' + str(i) + ']':>7}" for i in range(len(bins))))
    for k in keys:
        print(f"{k:<{width}}  " + "  ".join(f"{statistics.median(got[b].get(k, [0])):>7.0f}" for b in bins))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
