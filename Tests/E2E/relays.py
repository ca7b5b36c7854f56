"""Several relays for one client (`up --relays`, failover and spread) and relay fleets behind a load
balancer: relays started side by side in the relay namespace on ports of their own, each with its
control socket in the test's directory; `sluice up` with a list of relays; what `sluice status` says
on either side; new flows to servers.py's echo, kept open or tried until one works.

    fleet = start_relays(runner, topo, [7000, 7002], client_key)       # a key each (or one for all)
    client = start_client(runner, topo, [fleet[0].target, fleet[1].target], client_key, "failover")
    fleet[0].kill(); fleet[0].restart(); fleet[0].streams()            # the client's open streams there
"""

from __future__ import annotations

import json
import signal
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import harness as h
import netns


@dataclass
class Relay:
    """One `sluice relay` we started, and how to reach it."""

    runner: h.Runner
    topo: netns.Topology
    name: str
    port: int
    key: h.KeyPair
    argv: list
    control: Path
    proc: h.Proc | None = None
    address: str = netns.RELAY_CLIENT_SIDE_V4

    @property
    def target(self) -> str:
        """`--relays ENDPOINT,KEY` for the client."""
        return f"{self.address}:{self.port},{self.key.public}"

    @property
    def endpoint(self) -> str:
        return f"{self.address}:{self.port}"

    def start(self) -> "Relay":
        self.proc = self.runner.start(self.name, self.argv, ns=self.topo.relay)
        h.wait_relay_listening(self.topo, self.proc, port=self.port)
        return self

    def restart(self) -> "Relay":
        """Starts it again with the same command line, after `kill()`."""
        assert self.proc is None or not self.proc.alive(), f"{self.name} still runs"
        return self.start()

    def kill(self) -> float:
        """SIGKILL; returns when (time.monotonic()) it was sent."""
        t = time.monotonic()
        self.proc.signal(signal.SIGKILL)
        self.proc.popen.wait(5)
        return t

    def status(self) -> dict:
        """`sluice status --relay --control … --json`: the relay's statistics."""
        cp = self.topo.exec(self.topo.relay, [h.sluice_bin(), "status", "--relay", "--control", str(self.control), "--json"], timeout=20)
        assert cp.returncode == 0, f"sluice status of {self.name}: {cp.stderr}"
        return json.loads(cp.stdout)["relays"][0]["statistics"]

    def client(self) -> dict | None:
        """The one client's entry in `status()`, or None when it has no carrier here."""
        clients = self.status()["clients"]
        return clients[0] if clients else None

    def streams(self) -> int:
        c = self.client()
        return c["streams"] if c else 0

    def carriers(self) -> int:
        c = self.client()
        return c["carriers"] if c else 0

    def log(self) -> str:
        return self.proc.log.read_text(errors="replace") if self.proc else ""


def start_relays(runner: h.Runner, topo: netns.Topology, ports: Sequence[int], client: h.KeyPair, shared_key: bool = False,
                 listen_address: str = "0.0.0.0", extra: Sequence[str] = ()) -> list[Relay]:
    """Relays on `ports` in the relay namespace allowing `client`: a key pair each, or with
    `shared_key` one for all (a fleet behind a balancer)."""
    relays = []
    shared = h.make_keypair(runner.workdir, "fleet") if shared_key else None
    for i, port in enumerate(ports):
        name = f"relay-{chr(ord('a') + i)}"
        key = shared or h.make_keypair(runner.workdir, name)
        control = runner.workdir / f"{name}.sock"
        argv = h.relay_argv(key, [client.public], listen=f"{listen_address}:{port}", extra=["--control", str(control), *extra])
        relays.append(Relay(runner, topo, name, port, key, argv, control).start())
    return relays


def client_argv(targets: Sequence[str], key: h.KeyPair, policy: str | None = None, carriers: int | None = None,
                extra: Sequence[str] = ()) -> list[str]:
    """`sluice up` with `--relays` for each of `targets` (ENDPOINT,KEY), the harness's TUN, addresses
    and routes."""
    argv = [h.sluice_bin(), "up", "--private-key", str(key.path), "--tun", h.TUN]
    for target in targets:
        argv += ["--relays", target]
    if policy:
        argv += ["--relay-policy", policy]
    for a in h.CLIENT_ADDRESSES:
        argv += ["--address", a]
    for r in h.CLIENT_ROUTES:
        argv += ["--route", r]
    if carriers is not None:
        argv += ["--carriers", str(carriers)]
    return argv + list(extra)


def start_client(runner: h.Runner, topo: netns.Topology, argv: Sequence[str]) -> h.Proc:
    """`sluice up` in the client namespace; returns once a small request got through."""
    client = runner.start("client", argv, ns=topo.client)
    h.wait_client_up(topo, client)

    def works() -> bool:
        if not client.alive():
            raise RuntimeError(f"sluice up exited {client.popen.returncode}:\n{h.tail(client.log)}")
        return echo_roundtrip(topo)

    h.wait_for(works, 15, interval=0.1, what="a first flow through the tunnel")
    return client


def client_status(topo: netns.Topology) -> dict:
    """`sluice status --tun … --json` in the client namespace: the tunnel's statistics."""
    cp = topo.exec(topo.client, [h.sluice_bin(), "status", "--tun", h.TUN, "--json"], timeout=20)
    assert cp.returncode == 0, f"sluice status: {cp.stderr}"
    return json.loads(cp.stdout)["tunnels"][0]["statistics"]


def echo_roundtrip(topo: netns.Topology, timeout: float = 1.0) -> bool:
    """One interactive-echo exchange on a new flow; False on any failure or timeout."""
    s = open_echo(topo, timeout)
    if s is None:
        return False
    s.close()
    return True


def open_echo(topo: netns.Topology, timeout: float = 1.0) -> socket.socket | None:
    """A new flow to servers.py's interactive echo that answered once, left open; None if it failed."""
    s = topo.socket(topo.client)
    s.settimeout(timeout)
    try:
        s.connect((netns.SERVER_V4, h.TCP_PORT))
        s.sendall(b"Iping")
        got = b""
        while len(got) < 4:
            b = s.recv(16)
            if not b:
                raise ConnectionError("EOF")
            got += b
        if got == b"ping":
            return s
    except OSError:
        pass
    s.close()
    return None


def first_flow_after(topo: netns.Topology, since: float, timeout: float) -> float:
    """Tries new flows until one works; returns the seconds from `since` (a time.monotonic())."""
    h.wait_for(lambda: echo_roundtrip(topo, timeout=0.5), timeout, interval=0.02, what="a new flow through the tunnel")
    return time.monotonic() - since
