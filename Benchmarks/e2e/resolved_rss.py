#!/usr/bin/env python3
"""Resident memory of an idle `sluice up` with systemd-resolved against the resolver file.

    sudo flock /tmp/sluice-e2e.lock python3 Benchmarks/e2e/resolved_rss.py [--rounds 2]

Both in the namespaces of Tests/E2E/test_resolved.py (a real systemd-resolved and system bus in the
client namespace, resolvedns.py): `up --route-all --no-ipv6 --dns 10.20.0.2`, once with `--resolver
resolved`, once with `--resolver file`, in turns; after one lookup through the tunnel and 2 s idle,
prints VmRSS, RssAnon and RssFile of the client and whether libsystemd is still mapped. The binary is
$SLUICE_BIN (default .build/release/sluice).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent / "Tests" / "E2E"))
import harness as h  # noqa: E402
import resolvedns  # noqa: E402
import resolvers  # noqa: E402


class Finalizers:
    """What make_desk expects of pytest's `request`."""

    def __init__(self) -> None:
        self.done: list = []

    def addfinalizer(self, f) -> None:
        self.done.append(f)


def measure(mode: str, root: Path) -> str:
    work = Path(tempfile.mkdtemp(prefix="sluice-rss-"))
    work.chmod(0o755)
    runner = h.Runner(work)
    finalizers = Finalizers()
    try:
        desk = resolvers.make_desk(finalizers, runner, lambda topo: resolvedns.ResolvedJail(
            topo.client, work, "nameserver 127.0.0.53\n", root))
        desk.up(["--route-all", "--no-ipv6", "--resolver", mode])
        desk.getent("rss.tunnel.test")
        time.sleep(2)
        status = Path(f"/proc/{desk.client.pid}/status").read_text().splitlines()
        fields = {l.split(":")[0]: l.split(":")[1].strip() for l in status if l.startswith(("VmRSS", "RssAnon", "RssFile"))}
        mapped = "libsystemd" in Path(f"/proc/{desk.client.pid}/maps").read_text()
        return f"{mode:<9} VmRSS {fields['VmRSS']:>10}  RssAnon {fields['RssAnon']:>9}  RssFile {fields['RssFile']:>9}  libsystemd mapped: {mapped}"
    finally:
        for f in finalizers.done:
            f()
        shutil.rmtree(work, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    root = resolvedns.debian_packages()
    for _ in range(args.rounds):
        for mode in ("file", "resolved"):
            print(measure(mode, root), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
