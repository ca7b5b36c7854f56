"""Debian's HAProxy in front of a relay fleet, with the configuration docs/deployment.md shows: the
test reads it from that page (its first ```haproxy block), so the page and the test cannot drift.

    proxy = start_haproxy(runner, topo)    # in the relay namespace, on :7000, in the foreground
"""

from __future__ import annotations

import re
from pathlib import Path

import harness as h
import netns

DEPLOYMENT = h.REPO / "docs" / "deployment.md"
PORT = 7000


def config_from_docs(path: Path = DEPLOYMENT) -> str:
    """The first ```haproxy block of docs/deployment.md."""
    found = re.search(r"```haproxy\n(.*?)```", path.read_text(), re.S)
    assert found, f"{path} has no ```haproxy block"
    return found.group(1)


def start_haproxy(runner: h.Runner, topo: netns.Topology, config: str | None = None) -> h.Proc:
    """HAProxy in the relay namespace with `config` (default: the page's), checked first with
    `haproxy -c`, run in the foreground (`-db`) and logging to its own log; returns once it listens."""
    path = runner.workdir / "haproxy.cfg"
    path.write_text(config if config is not None else config_from_docs())
    check = topo.exec(topo.relay, ["haproxy", "-c", "-f", str(path)], timeout=20)
    assert check.returncode == 0, f"haproxy -c refused the configuration:\n{check.stdout}{check.stderr}"
    proc = runner.start("haproxy", ["haproxy", "-db", "-f", str(path)], ns=topo.relay)

    def listening() -> bool:
        if not proc.alive():
            raise RuntimeError(f"haproxy exited {proc.popen.returncode}:\n{h.tail(proc.log)}")
        return bool(topo.exec(topo.relay, ["ss", "-Htln", f"sport = :{PORT}"], timeout=5).stdout.strip())

    h.wait_for(listening, 10, what=f"haproxy to listen on port {PORT}")
    return proc
