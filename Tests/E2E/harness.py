"""Processes of a test: the sluice binary (relay, client, CLI), the servers and the counting proxy.

Every long-running process is a `Proc`: started by us, logged to a file, stopped by its own pid
(SIGTERM, then SIGKILL). Nothing here kills by name. The binary's path comes from one place:
`sluice_bin()` (env SLUICE_BIN, default .build/release/sluice in the repository).
"""

from __future__ import annotations

import base64
import contextlib
import functools
import hashlib
import itertools
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import netns
import udpecho
from netns import Topology

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
PY = sys.executable

TUN = "sluice0"
TABLE = "21324"
FWMARK = "0x534c"
RELAY_PORT = 7000
PROXY_PORT = 7001
HTTP_PORT = 8080
TCP_PORT = 9000
UDP_PORT = 9001  # servers.py's UDP echo, on each server address
IPERF_PORT = 5201
CLOSED_PORT = 9  # nothing listens there in the server namespace
CLIENT_ADDRESSES = ["198.18.0.1/30", "fd53::1/126"]
CLIENT_ROUTES = ["10.20.0.0/24", "fd20::/64"]


def sluice_bin() -> str:
    p = os.environ.get("SLUICE_BIN", ".build/release/sluice")
    return str(p if os.path.isabs(p) else REPO / p)


def clean_env() -> dict:
    """The environment for child processes: no proxy variables that could divert curl."""
    return {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}


def wait_for(pred: Callable[[], object], timeout: float, interval: float = 0.05, what: str = "condition"):
    """Polls pred until it returns something truthy; raises TimeoutError naming `what`."""
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.1f} s waiting for {what}")
        time.sleep(interval)


def peer_seen(cp: subprocess.CompletedProcess) -> str | None:
    """The address the HTTP server's /peer page reported, from a curl run; None if curl failed."""
    if cp.returncode != 0:
        return None
    try:
        return json.loads(cp.stdout)["peer"]
    except (ValueError, KeyError):
        return None


def await_failure(sock: socket.socket, since: float, timeout: float) -> tuple[str, float]:
    """Reads once from an open flow that should fail: "reset", "EOF", "hang" (nothing within `timeout`)
    or the unexpected data; and the seconds from `since` (a time.monotonic()) until it was known."""
    sock.settimeout(timeout)
    try:
        b = sock.recv(16)
        outcome = "EOF" if not b else f"unexpected data {b!r}"
    except ConnectionResetError:
        outcome = "reset"
    except socket.timeout:
        outcome = "hang"
    return outcome, time.monotonic() - since


def tail(path: Path | str, lines: int = 40) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 16384))
            return "\n".join(f.read().decode(errors="replace").splitlines()[-lines:])
    except OSError as e:
        return f"({e})"


@dataclass
class Proc:
    """A process we started (in a namespace or not), with its log file."""

    name: str
    popen: subprocess.Popen
    log: Path

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def signal(self, sig: int) -> None:
        if self.alive():
            self.popen.send_signal(sig)

    def stop(self, timeout: float = 10.0) -> int:
        """SIGTERM, wait up to `timeout`, then SIGKILL. Returns the exit code (negative = signal)."""
        if self.alive():
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(5)
        return self.popen.returncode

    def kill(self) -> None:
        if self.alive():
            self.popen.kill()
            self.popen.wait(5)


class Runner:
    """Starts processes for one test and guarantees they are stopped (call `close()` in a finalizer)."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.procs: list[Proc] = []
        self.logs: dict[str, Path] = {}

    def start(self, name: str, argv: Sequence[str], topo: Topology | None = None, ns: str | None = None) -> Proc:
        log = self.workdir / f"{name}.log"
        n = 2
        while log.exists():
            log = self.workdir / f"{name}-{n}.log"
            n += 1
        f = open(log, "wb")
        full = ["ip", "netns", "exec", ns, *argv] if ns else list(argv)
        try:
            p = subprocess.Popen(full, stdin=subprocess.DEVNULL, stdout=f, stderr=subprocess.STDOUT,
                                 env=clean_env(), cwd=self.workdir)
        finally:
            f.close()
        proc = Proc(name, p, log)
        self.procs.append(proc)
        self.logs[log.stem] = log
        return proc

    def close(self) -> None:
        for p in reversed(self.procs):
            try:
                p.stop(timeout=5)
            except Exception:
                p.kill()


def memory_kib(pid: int) -> dict[str, int]:
    """VmRSS and RssAnon of a process, in KiB (/proc/PID/status)."""
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "RssAnon", "VmHWM"):
                out[key] = int(value.split()[0])
    return out


def fd_count(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def bound_udp_sockets(pid: int, except_port: int = RELAY_PORT) -> int:
    """UDP sockets `pid` holds that have a local port other than `except_port` (the relay's UDP path
    sockets): a relay's association sockets, which bind at their first send. A socket made and not yet
    used (the relay's `UDPSocketReserve`, one per worker) has no port and is not counted."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(OSError):
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
            if target.startswith("socket:["):
                inodes.add(target[len("socket:["):-1])
    count = 0
    for table in ("udp", "udp6"):
        with open(f"/proc/{pid}/net/{table}") as f:
            next(f)
            for line in f:
                fields = line.split()
                port = int(fields[1].rsplit(":", 1)[1], 16)
                if fields[9] in inodes and port not in (0, except_port):
                    count += 1
    return count


def thread_count(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/task"))


# -- keys ---------------------------------------------------------------------------------------

def run_sluice(args: Sequence[str], input: bytes | None = None, timeout: float = 10,
               ns: str | None = None, prefix: Sequence[str] = ()) -> subprocess.CompletedProcess:
    """Runs the binary to completion (killed at `timeout`; a hang is reported as exit code None)."""
    argv = [*prefix, sluice_bin(), *args]
    if ns:
        argv = ["ip", "netns", "exec", ns, *argv]
    try:
        return subprocess.run(argv, input=input, capture_output=True, timeout=timeout, env=clean_env())
    except subprocess.TimeoutExpired as e:
        return subprocess.CompletedProcess(argv, None, e.stdout or b"", (e.stderr or b"") + b"\n(killed: timeout)")


def x25519_public(private_b64: str) -> str | None:
    """The public key computed independently of sluice (python cryptography), or None without it."""
    try:
        from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
        from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
    except ImportError:
        return None
    priv = X25519PrivateKey.from_private_bytes(base64.b64decode(private_b64))
    return base64.b64encode(priv.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)).decode()


@dataclass
class KeyPair:
    private: str
    public: str
    path: Path  # file holding the private key


def make_keypair(workdir: Path, name: str) -> KeyPair:
    """A key pair in a file. Made with python cryptography when present (independent of
    `sluice keygen`, which has its own test), else with `sluice keygen`/`pubkey`."""
    path = workdir / f"{name}.key"
    private = base64.b64encode(os.urandom(32)).decode()
    public = x25519_public(private)
    if public is None:
        cp = run_sluice(["keygen"])
        assert cp.returncode == 0, f"sluice keygen failed: {cp.stderr.decode(errors='replace')}"
        private = cp.stdout.decode().strip()
        cp = run_sluice(["pubkey"], input=(private + "\n").encode())
        assert cp.returncode == 0, f"sluice pubkey failed: {cp.stderr.decode(errors='replace')}"
        public = cp.stdout.decode().strip()
    path.write_text(private + "\n")
    path.chmod(0o600)
    return KeyPair(private, public, path)


def make_psk(workdir: Path, name: str) -> Path:
    path = workdir / f"{name}.psk"
    path.write_text(base64.b64encode(os.urandom(32)).decode() + "\n")
    path.chmod(0o600)
    return path


# -- the pieces of a tunnel ---------------------------------------------------------------------

@dataclass
class Servers:
    proc: Proc
    log: Path
    http_port: int = HTTP_PORT
    tcp_port: int = TCP_PORT
    udp_port: int = UDP_PORT

    def events(self) -> list[dict]:
        try:
            return [json.loads(l) for l in self.log.read_text().splitlines() if l.strip()]
        except FileNotFoundError:
            return []


def start_servers(runner: Runner, topo: Topology, pregen_mib: int = 64) -> Servers:
    log = runner.workdir / "server-events.jsonl"
    ready = runner.workdir / "servers-ready.json"
    proc = runner.start("servers", [PY, str(HERE / "servers.py"), "--http-port", str(HTTP_PORT),
                                    "--tcp-port", str(TCP_PORT), "--udp-port", str(UDP_PORT),
                                    "--udp-bind", netns.SERVER_V4, "--udp-bind", netns.SERVER_V6,
                                    "--log", str(log), "--ready-file", str(ready),
                                    "--pregen-mib", str(pregen_mib)], ns=topo.server)
    wait_for(lambda: ready.exists() or not proc.alive(), 30, what="the test servers to listen")
    if not proc.alive():
        raise RuntimeError(f"servers.py exited {proc.popen.returncode}:\n{tail(proc.log)}")
    return Servers(proc, log)


LATENCY_PORT = 9300  # latency.py's server


def start_latency_server(runner: Runner, topo: Topology, port: int = LATENCY_PORT) -> Proc:
    """latency.py's blocking server in the server namespace (the patterns are in its docstring)."""
    ready = runner.workdir / f"latency-ready-{topo.prefix}.json"
    proc = runner.start("latency-server", [PY, str(HERE / "latency.py"), "serve", "--port", str(port),
                                           "--ready-file", str(ready)], ns=topo.server)
    wait_for(lambda: ready.exists() or not proc.alive(), 15, what="latency.py to listen")
    if not proc.alive():
        raise RuntimeError(f"latency.py exited {proc.popen.returncode}:\n{tail(proc.log)}")
    return proc


def latency_probe(topo: Topology, *args: str, timeout: float = 60) -> dict:
    """latency.py's probe in the client namespace against the server's IPv4 address: its figures."""
    cp = topo.exec(topo.client, [PY, str(HERE / "latency.py"), "probe", "--host", netns.SERVER_V4,
                                 "--port", str(LATENCY_PORT), *args], timeout=timeout)
    if cp.returncode != 0:
        raise RuntimeError(f"latency.py probe exited {cp.returncode}: {cp.stderr.strip()}")
    return json.loads(cp.stdout)


# -- UDP: an application's socket and one echo exchange ---------------------------------------------

def app_udp_socket(topo: Topology, family: str, timeout: float = 3.0) -> socket.socket:
    """An application's UDP socket in the client namespace, bound to an ephemeral port."""
    s = topo.socket(topo.client, socket.AF_INET6 if family == "ipv6" else socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("::" if family == "ipv6" else "0.0.0.0", 0))
    s.settimeout(timeout)
    return s


def udp_echo(s: socket.socket, server: tuple, payload: bytes = b"hello") -> tuple[str, int]:
    """One "E" exchange with servers.py's UDP echo; checks the reply's source and payload and returns
    the endpoint (address, port) the server saw."""
    s.sendto(b"E" + payload, server)
    data, src = s.recvfrom(65535)
    assert (udpecho.plain(src[0]), src[1]) == server, f"reply came from {src[:2]}, not from {server}"
    peer, port, echoed = udpecho.parse_echo_reply(data)
    assert echoed == payload, "the echo differs from the request"
    return peer, port


# -- DNS: dnsmasq in the server namespace, dig in the client namespace --------------------------------

DNS_ZONE = "any.sluice.test"  # every name under it has the two addresses below (names can be unique)
DNS_A, DNS_AAAA = "10.20.0.42", "fd20::42"
DNS_BIG = "big.sluice.test"  # a TXT record too large for one UDP answer (dnsmasq's limit: 1232 bytes)


def dns_big_txt() -> list[str]:
    """The strings of DNS_BIG's TXT record: 12 × 250 characters, about 3 KB in all."""
    return [f"{i:02d}" + (hashlib.sha256(f"sluice {i}".encode()).hexdigest() * 4)[:248] for i in range(12)]


@dataclass
class DnsServer:
    proc: Proc
    log: Path

    def queries(self) -> list[dict]:
        """Each query dnsmasq logged: {"type", "name", "source"} (the source address it came from)."""
        pat = re.compile(r"query\[(\w+)\] (\S+) from (\S+)")
        try:
            text = self.log.read_text(errors="replace")
        except FileNotFoundError:
            return []
        return [{"type": m[1], "name": m[2], "source": m[3]} for m in pat.finditer(text)]

    def wait_query(self, name: str, count: int = 1, timeout: float = 5) -> list[dict]:
        """The logged queries for `name`, once there are at least `count`."""
        def logged():
            found = [q for q in self.queries() if q["name"] == name]
            return found if len(found) >= count else None

        return wait_for(logged, timeout, what=f"dnsmasq to log {count} query(s) for {name}")


def start_dns(runner: Runner, topo: Topology) -> DnsServer:
    """dnsmasq on the server's two addresses, port 53 UDP and TCP, with no upstream and no hosts
    file: it knows only DNS_ZONE (A and AAAA for every name in it) and DNS_BIG (TXT), and logs every
    query with its source to its log (stderr)."""
    argv = ["dnsmasq", "--keep-in-foreground", "--log-facility=-", "--log-queries", "--no-resolv",
            "--no-hosts", "--conf-file=/dev/null", "--bind-interfaces", "--user=root",
            f"--pid-file={runner.workdir / 'dnsmasq.pid'}",
            f"--listen-address={netns.SERVER_V4}", f"--listen-address={netns.SERVER_V6}",
            f"--address=/{DNS_ZONE}/{DNS_A}", f"--address=/{DNS_ZONE}/{DNS_AAAA}",
            f"--txt-record={DNS_BIG}," + ",".join(dns_big_txt())]
    proc = runner.start("dnsmasq", argv, ns=topo.server)

    def listening() -> bool:
        if not proc.alive():
            raise RuntimeError(f"dnsmasq exited {proc.popen.returncode}:\n{tail(proc.log)}")
        out = topo.exec(topo.server, ["ss", "-Htuln", "sport = :53"], timeout=5).stdout
        return len(out.strip().splitlines()) >= 4  # UDP and TCP, on both addresses

    wait_for(listening, 10, what="dnsmasq to listen on port 53")
    return DnsServer(proc, proc.log)


def dig(topo: Topology, server: str, name: str, qtype: str = "A", *opts: str,
        timeout: float = 20) -> subprocess.CompletedProcess:
    """dig in the client namespace: one try (so a lost datagram shows), `+short` answers one per line."""
    argv = ["dig", f"@{server}", name, qtype, "+short", "+time=3", "+tries=1", *opts]
    try:
        return topo.exec(topo.client, argv, timeout=timeout)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(argv, None, "", "dig did not finish (killed)")


# -- iperf3 ----------------------------------------------------------------------------------------

def start_iperf3_server(runner: Runner, topo: Topology, bind: str, port: int = IPERF_PORT) -> Proc:
    """A one-shot iperf3 server bound to `bind`: bound, so its UDP replies leave from that address."""
    proc = runner.start("iperf3-server", ["iperf3", "-s", "-1", "-B", bind, "-p", str(port)], ns=topo.server)

    def listening() -> bool:
        if not proc.alive():
            raise RuntimeError(f"iperf3 -s exited {proc.popen.returncode}:\n{tail(proc.log)}")
        return bool(topo.exec(topo.server, ["ss", "-Htln", f"sport = :{port}"], timeout=5).stdout.strip())

    wait_for(listening, 10, what="iperf3 to listen")
    return proc


@dataclass
class CountingProxy:
    proc: Proc
    status_path: Path

    def connections(self) -> list[dict]:
        try:
            return json.loads(self.status_path.read_text())["connections"]
        except (FileNotFoundError, json.JSONDecodeError, KeyError):
            return []


def start_proxy(runner: Runner, topo: Topology, listen: str, target: str) -> CountingProxy:
    status = runner.workdir / "proxy-status.json"
    ready = runner.workdir / "proxy-ready.json"
    proc = runner.start("proxy", [PY, str(HERE / "proxy.py"), "--listen", listen, "--target", target,
                                  "--status", str(status), "--ready-file", str(ready)], ns=topo.relay)
    wait_for(lambda: ready.exists() or not proc.alive(), 15, what="the counting proxy to listen")
    if not proc.alive():
        raise RuntimeError(f"proxy.py exited {proc.popen.returncode}:\n{tail(proc.log)}")
    return CountingProxy(proc, status)


@dataclass
class FaultProxy:
    """faultproxy.py in front of the relay; `inject(fault=..., ...)` arms one fault."""

    proc: Proc
    status_path: Path
    control_path: Path

    def status(self) -> dict:
        try:
            return json.loads(self.status_path.read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return {"connections": [], "commands": 0}

    def connections(self) -> list[dict]:
        return self.status()["connections"]

    def inject(self, **command) -> None:
        """Sends one command (faultproxy.py's doc lists them) and waits until the proxy took it."""
        before = self.status()["commands"]
        self.control_path.write_text(json.dumps(command))
        self.proc.signal(signal.SIGUSR1)
        wait_for(lambda: self.status()["commands"] > before, 5, what=f"the fault proxy to take {command}")


def start_fault_proxy(runner: Runner, topo: Topology, listen: str, target: str) -> FaultProxy:
    status, control = runner.workdir / "faultproxy-status.json", runner.workdir / "faultproxy-command.json"
    ready = runner.workdir / "faultproxy-ready.json"
    proc = runner.start("faultproxy", [PY, str(HERE / "faultproxy.py"), "--listen", listen, "--target", target,
                                       "--status", str(status), "--ready-file", str(ready),
                                       "--control", str(control)], ns=topo.relay)
    wait_for(lambda: ready.exists() or not proc.alive(), 15, what="the fault proxy to listen")
    if not proc.alive():
        raise RuntimeError(f"faultproxy.py exited {proc.popen.returncode}:\n{tail(proc.log)}")
    return FaultProxy(proc, status, control)


def relay_argv(key: KeyPair, allow: Sequence[str], listen: str = f"0.0.0.0:{RELAY_PORT}",
               psk: Path | None = None, extra: Sequence[str] = ()) -> list[str]:
    argv = [sluice_bin(), "relay", "--listen", listen, "--private-key", str(key.path)]
    for pub in allow:
        argv += ["--allow-client", pub]
    if psk:
        argv += ["--psk", str(psk)]
    level = os.environ.get("SLUICE_E2E_LOG_LEVEL")
    if level:
        argv += ["--log-level", level]
    workers = os.environ.get("SLUICE_E2E_RELAY_WORKERS")
    if workers and "--workers" not in extra and relay_takes("--workers"):
        # The whole suite with a chosen number of relay workers (default: the relay's, online CPUs).
        argv += ["--workers", workers]
    if "--control" not in extra and relay_takes("--control"):
        # The relay's control socket in the test's own directory, never in this host's /run/sluice.
        # (ab.py also runs binaries from before the control socket.)
        argv += ["--control", str(key.path.parent / f"relay-{next(_relay_sockets)}.sock")]
    return argv + list(extra)


_relay_sockets = itertools.count(1)


@functools.lru_cache(maxsize=None)
def _relay_help(binary: str) -> str:
    return run_sluice(["relay", "--help"]).stdout.decode(errors="replace")


def relay_takes(flag: str) -> bool:
    """Whether the sluice binary under test (SLUICE_BIN) knows a relay flag."""
    return flag in _relay_help(sluice_bin())


def client_argv(relay: str, relay_public: str, key: KeyPair, psk: Path | None = None,
                carriers: int | None = None, extra: Sequence[str] = ()) -> list[str]:
    argv = [sluice_bin(), "up", "--relay", relay, "--relay-public-key", relay_public,
            "--private-key", str(key.path), "--tun", TUN]
    for a in CLIENT_ADDRESSES:
        argv += ["--address", a]
    for r in CLIENT_ROUTES:
        argv += ["--route", r]
    if psk:
        argv += ["--psk", str(psk)]
    if carriers is not None:
        argv += ["--carriers", str(carriers)]
    level = os.environ.get("SLUICE_E2E_LOG_LEVEL")
    if level:
        argv += ["--log-level", level]
    return argv + list(extra)


def tun_present(topo: Topology) -> bool:
    cp = topo.exec(topo.client, ["ip", "-j", "link", "show", "dev", TUN], timeout=5)
    return cp.returncode == 0


def wait_relay_listening(topo: Topology, proc: Proc, port: int = RELAY_PORT, timeout: float = 10) -> None:
    def listening() -> bool:
        if not proc.alive():
            raise RuntimeError(f"sluice relay exited {proc.popen.returncode}:\n{tail(proc.log)}")
        out = topo.exec(topo.relay, ["ss", "-Htln", f"sport = :{port}"], timeout=5).stdout
        return bool(out.strip())

    wait_for(listening, timeout, what=f"sluice relay to listen on port {port}")


def wait_client_up(topo: Topology, proc: Proc, timeout: float = 15) -> None:
    """Waits until `sluice up` has made its TUN device (it does not prove a carrier is up)."""

    def up() -> bool:
        if not proc.alive():
            raise RuntimeError(f"sluice up exited {proc.popen.returncode}:\n{tail(proc.log)}")
        return tun_present(topo)

    wait_for(up, timeout, what=f"sluice up to create {TUN}")


def start_with_old_peer(runner: Runner, topo: Topology, old_bin: str, old: str, relay_extra: Sequence[str] = (),
                        client_extra: Sequence[str] = ()) -> tuple[Proc, Proc]:
    """A relay and `sluice up` in `topo`, one of them (`old` = "client" or "relay") run from `old_bin`, a
    binary from before some protocol feature; returns (relay, client) once a first request went
    through. The compatibility tests of each feature start their pair here."""
    relay_key, client_key = make_keypair(runner.workdir, "relay"), make_keypair(runner.workdir, "client")
    r_argv = relay_argv(relay_key, [client_key.public], extra=relay_extra)
    c_argv = client_argv(f"{netns.RELAY_CLIENT_SIDE_V4}:{RELAY_PORT}", relay_key.public, client_key, extra=client_extra)
    (r_argv if old == "relay" else c_argv)[0] = old_bin
    relay = runner.start("relay", r_argv, ns=topo.relay)
    wait_relay_listening(topo, relay)
    client = runner.start("client", c_argv, ns=topo.client)
    wait_client_up(topo, client)
    wait_for(lambda: curl(topo, ["-o", "/dev/null", url(topo, "ipv4", "/bytes/1")], max_time=2).ok, 15,
             interval=0.2, what="a first request")
    return relay, client


# -- curl -----------------------------------------------------------------------------------------

@dataclass
class CurlResult:
    returncode: int | None
    info: dict = field(default_factory=dict)
    stderr: str = ""

    @property
    def ok(self) -> bool:
        return self.returncode == 0


def curl(topo: Topology, args: Sequence[str], max_time: float = 60, connect_timeout: float = 5) -> CurlResult:
    """curl in the client namespace; `info` is curl's --write-out %{json} (speeds, times, sizes)."""
    argv = ["curl", "-sS", "-g", "--noproxy", "*", "--max-time", str(max_time),
            "--connect-timeout", str(connect_timeout), "-w", "%{json}", *args]
    try:
        cp = topo.exec(topo.client, argv, timeout=max_time + 15, env=clean_env())
    except subprocess.TimeoutExpired:
        return CurlResult(None, {}, "curl did not finish (killed)")
    try:
        info = json.loads(cp.stdout) if cp.stdout.strip() else {}
    except json.JSONDecodeError:
        info = {}
    return CurlResult(cp.returncode, info, cp.stderr.strip())


def url(topo: Topology, family: str, path: str, port: int = HTTP_PORT) -> str:
    return f"http://{topo.url_host(topo.server_addr(family))}:{port}{path}"


# -- what `sluice up` installs ---------------------------------------------------------------------

def _canon(items) -> list[str]:
    return sorted(json.dumps(i, sort_keys=True) for i in items)


def net_state(topo: Topology, ns: str) -> dict:
    """Links, addresses, rules and routes of every table, v4 and v6, in comparable form."""
    addrs = [(l["ifname"], a.get("local"), a.get("prefixlen")) for l in topo.ip_json(ns, "addr")
             for a in l.get("addr_info", [])]
    return {
        "links": sorted(l["ifname"] for l in topo.ip_json(ns, "link")),
        "addresses": sorted(f"{i} {a}/{p}" for i, a, p in addrs),
        "rules4": _canon(topo.ip_json(ns, "-4", "rule")),
        "rules6": _canon(topo.ip_json(ns, "-6", "rule")),
        "routes4": _canon(topo.ip_json(ns, "-4", "route", "show", "table", "all")),
        "routes6": _canon(topo.ip_json(ns, "-6", "route", "show", "table", "all")),
    }


def sluice_footprint(state: dict) -> list[str]:
    """What of Sluice's is present in a net_state: its TUN, its table, its rules."""
    found = []
    if TUN in state["links"]:
        found.append(f"link {TUN}")
    found += [f"address {a}" for a in state["addresses"] if a.split()[0] == TUN]
    for key in ("rules4", "rules6", "routes4", "routes6"):
        found += [f"{key}: {r}" for r in state[key] if f'"table": "{TABLE}"' in r or f'"dev": "{TUN}"' in r]
    return found


def state_diff(before: dict, after: dict) -> list[str]:
    out = []
    for key in before:
        b, a = set(before[key]), set(after[key])
        out += [f"{key} + {x}" for x in sorted(a - b)] + [f"{key} - {x}" for x in sorted(b - a)]
    return out
