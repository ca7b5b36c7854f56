#!/usr/bin/env python3
"""Writes scripts/release-order.txt: the functions a running `sluice up` executes, in the order the release
link lays them out (lld --symbol-ordering-file, Makefile RELEASE_FLAGS).

    sudo flock /tmp/sluice-e2e.lock python3 Benchmarks/e2e/codeorder.py [BIN] [--out scripts/release-order.txt]

Why: a client's resident memory is mostly the binary's .text (Benchmarks/e2e/smaps.py --sections). The
kernel maps file pages 64 KiB around every page fault (fault-around), and the linker otherwise lays
functions out in object-file order, so the few hundred KiB of code a tunnel runs were spread over most of
the 7 MB of .text and most of it stayed resident. Laid out together, they share fewer pages. Only code
in a section of its own can move: Sluice's modules and C shims (the Makefile asks for -function-sections),
libswiftCore's runtime and its generic specialisations; the Swift standard library's other code
(libswiftCore.a's Swift.o, 1.6 MB), _StringProcessing (0.4 MB), _RegexParser (0.5 MB) and libdispatch are
each one .text section as shipped and stay where they are, whatever the list says.

How: BIN (a release build, default .build/release/sluice) runs as bench.py's "sluice" mode does
(measure.py: the bench namespaces, a relay, the loadgen servers), the client under valgrind's callgrind
(a copy without DWARF: valgrind 3.19 cannot read Swift's DWARF 5). callgrind dumps its counts at the end of
each phase:
  setup    start-up until the tunnel is up and one TCP connection went through it;
  traffic  bench's quick UDP tests (request/response, a new socket each), iperf3 one stream each way;
  idle     the tunnel left alone (keepalives, timers);
  exit     SIGTERM and teardown.
The list holds every function of the binary that ran: those of traffic first, the most executed first
(the hot data path: TUN read/write, lwIP glue, mux, records, the UDP path), then those only idle ran, then
set-up's, then exit's. Names are the symbols' (mangled); a name the binary no longer has is skipped at link
time (--no-warn-symbol-ordering), so a stale list costs only layout, never a failed build. Rerun after
changes to the data path and commit the list.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE))

import bench  # noqa: E402  (also puts Tests/E2E on sys.path)
import measure  # noqa: E402

PHASES = ("setup", "traffic", "idle", "exit")
WAIT_FACTOR = 4
IDLE_SECONDS = 25  # five of the carriers' PINGs (--ping-interval 5 s), so the idle timers' code runs too

# A wrapper in SLUICE_BIN's place: `up` runs under callgrind, everything else (the relay) as it is.
WRAPPER = """#!/bin/sh
if [ "$1" = up ]; then
    exec valgrind --tool=callgrind --demangle=no --dump-instr=no --collect-jumps=no \\
        --callgrind-out-file={out} {exe} "$@"
fi
exec {exe} "$@"
"""


HEADER = """# The functions a running `sluice up` executes, in the order `make build` lays them out at the start of
# .text (lld --symbol-ordering-file; lld ignores what follows a '#'). Written by
# Benchmarks/e2e/codeorder.py (see its docstring); regenerate after changes to the data path.
"""


class ProfiledRun(measure.ModeRun):
    """bench's sluice mode with the client under callgrind, dumping its counts after each phase."""

    def __init__(self, *args, iperf: bool, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.iperf = iperf

    def dump(self, phase: str) -> None:
        subprocess.run(["callgrind_control", f"--dump={phase}", str(self.client.pid)], check=True,
                       capture_output=True, timeout=60)

    def run(self) -> dict:
        with self.one_tunnel():
            self.dump("setup")
            self.test_udp()
            if self.iperf:
                for direction in ("up", "down"):
                    self._iperf(f"tcp1_{direction}", 1, direction)
            self.dump("traffic")
            time.sleep(IDLE_SECONDS)
            self.dump("idle")
        return self.figures


def self_costs(path: Path, binary: str) -> dict[str, int]:
    """Instructions executed per function of `binary` in one callgrind dump (self cost, not inclusive)."""
    names: dict[str, dict[str, str]] = defaultdict(dict)  # "ob"/"fn" → id → name

    def name(kind: str, value: str) -> str:
        m = re.match(r"\((\d+)\)(?: (.*))?", value)
        if not m:
            return value
        if m.group(2) is not None:
            # callgrind marks a recursive call's frames name'2, name'3…: the symbol is name.
            names[kind][m.group(1)] = re.sub(r"'\d+$", "", m.group(2))
        return names[kind].get(m.group(1), "")

    costs: dict[str, int] = defaultdict(int)
    ob = fn = ""
    skip_next = False
    for line in path.read_text(errors="replace").splitlines():
        if not line:
            continue
        key, _, value = line.partition("=")
        if line[0].isdigit() or line[0] in "+-*":
            if skip_next:  # the cost line after calls= is the call's inclusive cost
                skip_next = False
            elif ob == binary and fn:
                fields = line.split()
                if len(fields) > 1:
                    costs[fn] += int(fields[1])
        elif key == "ob":
            ob = name("ob", value)
        elif key == "fn":
            fn = name("fn", value)
        elif key in ("cob", "cfn", "cfi", "cfl"):
            name("ob" if key == "cob" else "fn" if key == "cfn" else "fl", value)
        elif key == "calls":
            skip_next = True
        elif key in ("fl", "fi", "fe"):
            name("fl", value)
    return costs


def order(dumps: dict[str, Path], binary: str) -> list[str]:
    """The functions that ran, phase by phase (PHASES), each phase's most executed first, each name once."""
    seen: set[str] = set()
    out: list[str] = []
    for phase in ("traffic", "idle", "setup", "exit"):
        costs = self_costs(dumps[phase], binary)
        for fn, ir in sorted(costs.items(), key=lambda kv: (-kv[1], kv[0])):
            if ir > 0 and fn not in seen and not fn.startswith("0x"):
                seen.add(fn)
                out.append(fn)
    return out


def find_dumps(prefix: Path) -> dict[str, Path]:
    """callgrind's files: one per --dump=PHASE (its trigger line names the phase), the last one at exit."""
    dumps: dict[str, Path] = {}
    for f in sorted(prefix.parent.glob(prefix.name + "*")):
        m = re.search(r"^desc: Trigger: (.*)$", f.read_text(errors="replace")[:4000], re.M)
        trigger = m.group(1) if m else ""
        phase = next((p for p in PHASES if trigger.endswith(p)), "exit" if "Program termination" in trigger else None)
        if phase:
            dumps[phase] = f
    return dumps


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("binary", nargs="?", default=str(REPO / ".build/release/sluice"))
    ap.add_argument("--out", default=str(REPO / "scripts/release-order.txt"))
    ap.add_argument("--no-iperf", action="store_true", help="skip the iperf3 runs (the UDP tests only)")
    args = ap.parse_args(argv)
    if os.geteuid() != 0:
        bench.say("codeorder: it makes network namespaces and a TUN device: run it as root")
        return 2
    for tool in ("valgrind", "callgrind_control", "objcopy"):
        if shutil.which(tool) is None:
            bench.say(f"codeorder: {tool} not found: apt-get install valgrind binutils")
            return 2
    workdir = Path(tempfile.mkdtemp(prefix="sluice-codeorder-"))
    workdir.chmod(0o755)
    previous = os.environ.get("SLUICE_BIN")
    try:
        exe = workdir / "sluice"
        subprocess.run(["objcopy", "--strip-debug", args.binary, str(exe)], check=True)
        out = workdir / "callgrind.out"
        wrapper = workdir / "sluice-wrapper"
        wrapper.write_text(WRAPPER.format(out=out, exe=exe))
        wrapper.chmod(0o755)
        os.environ["SLUICE_BIN"] = str(wrapper)
        loadgen = bench.compile_c(workdir, "loadgen")
        s = dataclasses.replace(measure.QUICK, groups=("udp",), settle_seconds=2.0)
        # Under callgrind the client starts several times slower: harness's waits (the TUN made, the
        # first connection through) get WAIT_FACTOR times their usual time.
        wait_for = measure.h.wait_for
        measure.h.wait_for = lambda pred, timeout, *a, **k: wait_for(pred, timeout * WAIT_FACTOR, *a, **k)
        try:
            ProfiledRun("sluice", s, workdir / "run", loadgen, bench.say, iperf=not args.no_iperf).run()
        finally:
            measure.h.wait_for = wait_for
        dumps = find_dumps(out)
        missing = [p for p in PHASES if p not in dumps]
        if missing:
            bench.say(f"codeorder: no callgrind dump for {', '.join(missing)} in {workdir}")
            return 1
        names = order(dumps, str(exe))
        Path(args.out).write_text(HEADER + "".join(n + "\n" for n in names))
        bench.say(f"codeorder: {len(names)} functions → {args.out}")
    finally:
        if previous is None:
            os.environ.pop("SLUICE_BIN", None)
        else:
            os.environ["SLUICE_BIN"] = previous
        if os.environ.get("SLUICE_CODEORDER_KEEP"):
            bench.say(f"codeorder: kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
