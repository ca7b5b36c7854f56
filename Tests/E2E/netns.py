"""Three network namespaces — client, relay, server — wired the way Sluice is deployed.

    client ns                  relay ns                          server ns
    to-relay 10.10.0.1/24  ── to-client 10.10.0.2/24
             fd10::1/64                 fd10::2/64
                               to-server 10.20.0.1/24  ──  to-relay 10.20.0.2/24, 10.20.0.3/24
                                         fd20::1/64                 fd20::2/64, fd20::3/64

The server's second address (10.20.0.3 / fd20::3) is a second sender for the UDP tests: a datagram
from it to the relay-side endpoint that a first server saw shows endpoint-independent mapping.

Two modes:
- "sluice": the relay namespace does NOT forward (ip_forward 0) and the client has no route to
  10.20.0.0/24 or fd20::/64, so the client reaches the server only through a Sluice tunnel, and the
  server sees the relay's address (10.20.0.1 / fd20::1) as the source.
- "kernel": the relay namespace forwards and the client and server have plain routes through it.
  This validates the harness without Sluice and is the ceiling a benchmark compares against. Without
  NAT the server then sees the client's address (10.10.0.1 / fd10::1).

A third layout, "router" (`Topology(layout="router")`, sluice mode only), is a host whose default
route goes to a router, as `--route-all` expects:

    client ns                    router ns (forwards)               relay ns                  server ns
    to-router 10.10.0.1/24  ──  to-client 10.10.0.254/24
              fd10::1/64                  fd10::254/64
    default via 10.10.0.254     to-relay 10.30.0.254/24  ──  to-router 10.30.0.2/24
                fd10::254                 fd30::254/64                 fd30::2/64
                                lo 10.40.0.1/32 fd40::1/128   to-server 10.20.0.1/24  ──  10.20.0.2/24 ...

The router forwards between the client and the relay's network only, and holds an "outside"
address (10.40.0.1, fd40::1) that the relay cannot reach; the relay does not forward. So with
`--route-all` the client reaches the server only through Sluice, the outside address only around it
(`--exclude`), and every packet the client sends passes the router, where a test can count it.

A fourth layout, "uplinks" (`Topology(layout="uplinks")`, sluice mode only), is a laptop with two
ways to the relay, for network changes (Wi-Fi to Ethernet, a new DHCP address):

    client ns                       relay ns (does not forward)                  server ns
    to-relay 10.10.0.1/24      ──  to-client  10.10.0.2/24
             fd10::1/64                       fd10::2/64
    uplink2  10.50.0.1/24      ──  to-client2 10.50.0.2/24
             fd50::1/64                       fd50::2/64
    default via 10.10.0.2          lo 10.60.0.1/32 (the relay's service address)
                                   to-server 10.20.0.1/24  ──  10.20.0.2/24 ...

The relay listens on 10.60.0.1, which the client reaches only through its default route: moving
that route to `uplink2` (and replacing the client's address on `to-relay`) changes the path to the
relay under a running tunnel.

Used by the pytest suite, by scripts/demo.sh (through the command line at the bottom) and by benchmarks.
Every name carries a tag and the creating pid, so parallel or leftover runs never collide, and
`gc` can remove namespaces whose creator is gone. Only processes inside our own namespaces are killed,
by pid.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Sequence

CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)

CLIENT_V4, CLIENT_V6 = "10.10.0.1", "fd10::1"
RELAY_CLIENT_SIDE_V4, RELAY_CLIENT_SIDE_V6 = "10.10.0.2", "fd10::2"
RELAY_SERVER_SIDE_V4, RELAY_SERVER_SIDE_V6 = "10.20.0.1", "fd20::1"
SERVER_V4, SERVER_V6 = "10.20.0.2", "fd20::2"
SERVER2_V4, SERVER2_V6 = "10.20.0.3", "fd20::3"  # a second sender in the server namespace
SERVER_NET_V4, SERVER_NET_V6 = "10.20.0.0/24", "fd20::/64"
CLIENT_NET_V4, CLIENT_NET_V6 = "10.10.0.0/24", "fd10::/64"
# The "router" layout.
ROUTER_CLIENT_SIDE_V4, ROUTER_CLIENT_SIDE_V6 = "10.10.0.254", "fd10::254"
ROUTER_RELAY_SIDE_V4, ROUTER_RELAY_SIDE_V6 = "10.30.0.254", "fd30::254"
RELAY_ROUTED_V4, RELAY_ROUTED_V6 = "10.30.0.2", "fd30::2"
OUTSIDE_V4, OUTSIDE_V6 = "10.40.0.1", "fd40::1"
OUTSIDE_NET_V4, OUTSIDE_NET_V6 = "10.40.0.0/24", "fd40::/64"
# The "uplinks" layout.
UPLINK2_CLIENT_V4, UPLINK2_CLIENT_V6 = "10.50.0.1", "fd50::1"
UPLINK2_RELAY_V4, UPLINK2_RELAY_V6 = "10.50.0.2", "fd50::2"
RELAY_SERVICE_V4 = "10.60.0.1"

_counter = 0
_counter_lock = threading.Lock()


def run(argv: Sequence[str], timeout: float = 20, check: bool = True, **kw) -> subprocess.CompletedProcess:
    """Runs a short command with a timeout; raises with its stderr if it fails and check is set."""
    cp = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, **kw)
    if check and cp.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {cp.returncode}: {cp.stderr.strip()}")
    return cp


def list_namespaces() -> list[str]:
    out = run(["ip", "-j", "netns", "list"], check=False).stdout.strip()
    return [n["name"] for n in json.loads(out)] if out else []


def namespace_pids(ns: str) -> list[int]:
    cp = run(["ip", "netns", "pids", ns], check=False)
    return [int(p) for p in cp.stdout.split()] if cp.returncode == 0 else []


def kill_namespace_processes(ns: str, grace: float = 2.0) -> list[int]:
    """SIGTERM, then SIGKILL, every process living in one of OUR namespaces (by pid)."""
    pids = namespace_pids(ns)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and namespace_pids(ns):
            time.sleep(0.05)
        if not namespace_pids(ns):
            break
    return pids


def delete_namespace(ns: str) -> None:
    if ns in list_namespaces():
        kill_namespace_processes(ns)
        run(["ip", "netns", "delete", ns], check=False)


def gc(tag: str) -> list[str]:
    """Deletes namespaces named by `Topology` with this tag whose creating process is gone."""
    removed = []
    pattern = re.compile(rf"^sl{re.escape(tag)}-(\d+)-")
    for ns in list_namespaces():
        m = pattern.match(ns)
        if m and not os.path.exists(f"/proc/{m.group(1)}"):
            delete_namespace(ns)
            removed.append(ns)
    return removed


def socket_in(ns: str, family: int = socket.AF_INET, kind: int = socket.SOCK_STREAM) -> socket.socket:
    """A socket created inside namespace `ns`; it stays there, usable from this (any) thread.

    setns(CLONE_NEWNET) changes only the calling thread, so a short-lived thread enters the
    namespace, makes the socket and ends.
    """
    out: dict = {}

    def work() -> None:
        try:
            fd = os.open(f"/run/netns/{ns}", os.O_RDONLY)
            try:
                if _libc.setns(fd, CLONE_NEWNET) != 0:
                    err = ctypes.get_errno()
                    raise OSError(err, f"setns({ns}): {os.strerror(err)}")
            finally:
                os.close(fd)
            out["sock"] = socket.socket(family, kind)
        except BaseException as e:  # handed to the caller below
            out["err"] = e

    t = threading.Thread(target=work, name=f"setns-{ns}")
    t.start()
    t.join()
    if "err" in out:
        raise out["err"]
    return out["sock"]


def family_of(addr: str) -> int:
    return socket.AF_INET6 if ":" in addr else socket.AF_INET


@dataclass
class Topology:
    """The three namespaces. `create()` builds them; `destroy()` (idempotent) removes them."""

    mode: str = "sluice"  # "sluice" or "kernel"
    tag: str = "e2e"
    layout: str = "direct"  # "direct" (client ── relay ── server), "router" or "uplinks" (see the module doc)
    prefix: str = ""
    created: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.mode not in ("sluice", "kernel"):
            raise ValueError(f"mode must be sluice or kernel, not {self.mode!r}")
        if self.layout not in ("direct", "router", "uplinks") or (self.layout != "direct" and self.mode != "sluice"):
            raise ValueError(f"layout must be direct, or router or uplinks in sluice mode, not {self.layout!r} in {self.mode} mode")
        if not self.prefix:
            global _counter
            with _counter_lock:
                _counter += 1
                n = _counter
            self.prefix = f"sl{self.tag}-{os.getpid()}-{n}"

    @property
    def client(self) -> str:
        return f"{self.prefix}-client"

    @property
    def relay(self) -> str:
        return f"{self.prefix}-relay"

    @property
    def server(self) -> str:
        return f"{self.prefix}-server"

    @property
    def router(self) -> str:
        return f"{self.prefix}-router"

    @property
    def namespaces(self) -> list[str]:
        if self.layout == "router":
            return [self.client, self.router, self.relay, self.server]
        return [self.client, self.relay, self.server]

    # -- addresses -------------------------------------------------------------------------------
    def server_addr(self, family: str = "ipv4") -> str:
        return SERVER_V6 if family == "ipv6" else SERVER_V4

    def server2_addr(self, family: str = "ipv4") -> str:
        return SERVER2_V6 if family == "ipv6" else SERVER2_V4

    def expected_peer(self, family: str = "ipv4") -> str:
        """The source address the server sees for the client's traffic."""
        if self.mode == "sluice":
            return RELAY_SERVER_SIDE_V6 if family == "ipv6" else RELAY_SERVER_SIDE_V4
        return CLIENT_V6 if family == "ipv6" else CLIENT_V4

    @staticmethod
    def url_host(addr: str) -> str:
        return f"[{addr}]" if ":" in addr else addr

    # -- life cycle ------------------------------------------------------------------------------
    def create(self) -> "Topology":
        try:
            self._create()
        except BaseException:
            for ns in reversed(self.created):  # only what we made: a name clash must not delete another's
                delete_namespace(ns)
            self.created.clear()
            raise
        return self

    def _create(self) -> None:
        for ns in self.namespaces:
            run(["ip", "netns", "add", ns])
            self.created.append(ns)
            run(["ip", "-n", ns, "link", "set", "lo", "up"])
            # No duplicate address detection at all, so link-local addresses are usable at once
            # (a tentative fe80:: address delays neighbour discovery by a second or more).
            self.sysctl(ns, "net.ipv6.conf.default.accept_dad", "0")
            self.sysctl(ns, "net.ipv6.conf.all.accept_dad", "0")
        if self.layout == "router":
            self._create_routed()
            return
        if self.layout == "uplinks":
            self._create_uplinks()
            return
        # veths are made directly inside the namespaces: nothing ever appears in the root namespace.
        run(["ip", "-n", self.client, "link", "add", "to-relay", "type", "veth",
             "peer", "name", "to-client", "netns", self.relay])
        run(["ip", "-n", self.relay, "link", "add", "to-server", "type", "veth",
             "peer", "name", "to-relay", "netns", self.server])
        for ns, dev, v4, v6 in (
            (self.client, "to-relay", CLIENT_V4, CLIENT_V6),
            (self.relay, "to-client", RELAY_CLIENT_SIDE_V4, RELAY_CLIENT_SIDE_V6),
            (self.relay, "to-server", RELAY_SERVER_SIDE_V4, RELAY_SERVER_SIDE_V6),
            (self.server, "to-relay", SERVER_V4, SERVER_V6),
        ):
            run(["ip", "-n", ns, "addr", "add", f"{v4}/24", "dev", dev])
            run(["ip", "-n", ns, "addr", "add", f"{v6}/64", "dev", dev, "nodad"])
            run(["ip", "-n", ns, "link", "set", dev, "up"])
        run(["ip", "-n", self.server, "addr", "add", f"{SERVER2_V4}/24", "dev", "to-relay"])
        run(["ip", "-n", self.server, "addr", "add", f"{SERVER2_V6}/64", "dev", "to-relay", "nodad"])
        self._wait_links_ready()
        forward = "1" if self.mode == "kernel" else "0"
        self.sysctl(self.relay, "net.ipv4.ip_forward", forward)
        self.sysctl(self.relay, "net.ipv6.conf.all.forwarding", forward)
        if self.mode == "kernel":
            run(["ip", "-n", self.client, "route", "add", SERVER_NET_V4, "via", RELAY_CLIENT_SIDE_V4])
            run(["ip", "-n", self.client, "-6", "route", "add", SERVER_NET_V6, "via", RELAY_CLIENT_SIDE_V6])
            run(["ip", "-n", self.server, "route", "add", CLIENT_NET_V4, "via", RELAY_SERVER_SIDE_V4])
            run(["ip", "-n", self.server, "-6", "route", "add", CLIENT_NET_V6, "via", RELAY_SERVER_SIDE_V6])

    def _create_routed(self) -> None:
        run(["ip", "-n", self.client, "link", "add", "to-router", "type", "veth",
             "peer", "name", "to-client", "netns", self.router])
        run(["ip", "-n", self.router, "link", "add", "to-relay", "type", "veth",
             "peer", "name", "to-router", "netns", self.relay])
        run(["ip", "-n", self.relay, "link", "add", "to-server", "type", "veth",
             "peer", "name", "to-relay", "netns", self.server])
        for ns, dev, v4, v6 in (
            (self.client, "to-router", CLIENT_V4, CLIENT_V6),
            (self.router, "to-client", ROUTER_CLIENT_SIDE_V4, ROUTER_CLIENT_SIDE_V6),
            (self.router, "to-relay", ROUTER_RELAY_SIDE_V4, ROUTER_RELAY_SIDE_V6),
            (self.relay, "to-router", RELAY_ROUTED_V4, RELAY_ROUTED_V6),
            (self.relay, "to-server", RELAY_SERVER_SIDE_V4, RELAY_SERVER_SIDE_V6),
            (self.server, "to-relay", SERVER_V4, SERVER_V6),
        ):
            run(["ip", "-n", ns, "addr", "add", f"{v4}/24", "dev", dev])
            run(["ip", "-n", ns, "addr", "add", f"{v6}/64", "dev", dev, "nodad"])
            run(["ip", "-n", ns, "link", "set", dev, "up"])
        run(["ip", "-n", self.router, "addr", "add", f"{OUTSIDE_V4}/32", "dev", "lo"])
        run(["ip", "-n", self.router, "addr", "add", f"{OUTSIDE_V6}/128", "dev", "lo"])
        self._wait_links_ready()
        self.sysctl(self.router, "net.ipv4.ip_forward", "1")
        self.sysctl(self.router, "net.ipv6.conf.all.forwarding", "1")
        self.sysctl(self.relay, "net.ipv4.ip_forward", "0")
        self.sysctl(self.relay, "net.ipv6.conf.all.forwarding", "0")
        run(["ip", "-n", self.client, "route", "add", "default", "via", ROUTER_CLIENT_SIDE_V4])
        run(["ip", "-n", self.client, "-6", "route", "add", "default", "via", ROUTER_CLIENT_SIDE_V6])
        run(["ip", "-n", self.relay, "route", "add", CLIENT_NET_V4, "via", ROUTER_RELAY_SIDE_V4])
        run(["ip", "-n", self.relay, "-6", "route", "add", CLIENT_NET_V6, "via", ROUTER_RELAY_SIDE_V6])

    def _create_uplinks(self) -> None:
        for dev, peer in (("to-relay", "to-client"), ("uplink2", "to-client2")):
            run(["ip", "-n", self.client, "link", "add", dev, "type", "veth", "peer", "name", peer, "netns", self.relay])
        run(["ip", "-n", self.relay, "link", "add", "to-server", "type", "veth",
             "peer", "name", "to-relay", "netns", self.server])
        for ns, dev, v4, v6 in (
            (self.client, "to-relay", CLIENT_V4, CLIENT_V6),
            (self.client, "uplink2", UPLINK2_CLIENT_V4, UPLINK2_CLIENT_V6),
            (self.relay, "to-client", RELAY_CLIENT_SIDE_V4, RELAY_CLIENT_SIDE_V6),
            (self.relay, "to-client2", UPLINK2_RELAY_V4, UPLINK2_RELAY_V6),
            (self.relay, "to-server", RELAY_SERVER_SIDE_V4, RELAY_SERVER_SIDE_V6),
            (self.server, "to-relay", SERVER_V4, SERVER_V6),
        ):
            run(["ip", "-n", ns, "addr", "add", f"{v4}/24", "dev", dev])
            run(["ip", "-n", ns, "addr", "add", f"{v6}/64", "dev", dev, "nodad"])
            run(["ip", "-n", ns, "link", "set", dev, "up"])
        run(["ip", "-n", self.relay, "addr", "add", f"{RELAY_SERVICE_V4}/32", "dev", "lo"])
        self._wait_links_ready()
        self.sysctl(self.relay, "net.ipv4.ip_forward", "0")
        self.sysctl(self.relay, "net.ipv6.conf.all.forwarding", "0")
        run(["ip", "-n", self.client, "route", "add", "default", "via", RELAY_CLIENT_SIDE_V4])

    def _wait_links_ready(self, timeout: float = 10.0) -> None:
        """Waits until every veth is UP with its IPv6 link-local address: the kernel turns a new
        veth's carrier on up to a second later (linkwatch), and IPv6 is not usable before that."""
        deadline = time.monotonic() + timeout
        while True:
            pending = []
            for ns in self.namespaces:
                for link in self.ip_json(ns, "addr"):
                    if link["ifname"] == "lo":
                        continue
                    lladdr = [a for a in link.get("addr_info", [])
                              if a.get("family") == "inet6" and a.get("scope") == "link" and not a.get("tentative")]
                    if link.get("operstate") != "UP" or not lladdr:
                        pending.append(f"{ns}/{link['ifname']}")
            if not pending:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"links not ready after {timeout} s: {', '.join(pending)}")
            time.sleep(0.05)

    def destroy(self) -> None:
        for ns in reversed(self.namespaces):
            delete_namespace(ns)
        self.created.clear()

    def __enter__(self) -> "Topology":
        return self.create()

    def __exit__(self, *exc) -> None:
        self.destroy()

    # -- running things inside ---------------------------------------------------------------
    def sysctl(self, ns: str, key: str, value: str) -> None:
        path = "/proc/sys/" + key.replace(".", "/")
        run(["ip", "netns", "exec", ns, "sh", "-c", f"echo {value} > {path}"])

    def exec(self, ns: str, argv: Sequence[str], timeout: float = 60, check: bool = False,
             **kw) -> subprocess.CompletedProcess:
        """Runs a command inside `ns` to completion (killed at `timeout`)."""
        return run(["ip", "netns", "exec", ns, *argv], timeout=timeout, check=check, **kw)

    def popen(self, ns: str, argv: Sequence[str], **kw) -> subprocess.Popen:
        """Starts a command inside `ns`. `ip netns exec` execs it, so the pid is the command's own."""
        return subprocess.Popen(["ip", "netns", "exec", ns, *argv], **kw)

    def socket(self, ns: str, family: int = socket.AF_INET, kind: int = socket.SOCK_STREAM) -> socket.socket:
        return socket_in(ns, family, kind)

    def ip_json(self, ns: str, *args: str) -> list:
        out = run(["ip", "-n", ns, "-j", *args]).stdout.strip()
        return json.loads(out) if out else []


def _main(argv: Sequence[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("create", help="create the namespaces; prints CLIENT_NS=… RELAY_NS=… SERVER_NS=…")
    c.add_argument("--mode", choices=["sluice", "kernel"], default="sluice")
    c.add_argument("--tag", default="demo", help="name tag (letters/digits)")
    c.add_argument("--owner-pid", type=int, default=os.getppid(),
                   help="pid put into the names (default: the calling shell), for gc")
    d = sub.add_parser("destroy", help="kill what runs inside and delete the namespaces")
    d.add_argument("--prefix", required=True)
    g = sub.add_parser("gc", help="delete leftover namespaces of this tag whose creator is gone")
    g.add_argument("--tag", default="demo")
    args = ap.parse_args(argv)

    if args.cmd == "create":
        topo = Topology(mode=args.mode, tag=args.tag, prefix=f"sl{args.tag}-{args.owner_pid}-1")
        topo.create()
        print(f"PREFIX={topo.prefix} CLIENT_NS={topo.client} RELAY_NS={topo.relay} SERVER_NS={topo.server}")
    elif args.cmd == "destroy":
        Topology(prefix=args.prefix).destroy()
    elif args.cmd == "gc":
        for ns in gc(args.tag):
            print(f"removed leftover namespace {ns}")
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
