"""Fixtures of the end-to-end suite. Run as root: `make test`, or directly

    python3 -m pytest Tests/E2E                       # against the sluice binary (SLUICE_BIN)
    SLUICE_E2E_MODE=kernel python3 -m pytest Tests/E2E  # harness check: plain kernel forwarding

Each test gets its own namespaces, processes and temporary directory, all removed in finalizers even
when the test fails. In kernel mode, tests marked `sluice` (they need the binary) are skipped: that
mode validates the servers, clients, topology and cleanup, and is the benchmark ceiling.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402
import netns  # noqa: E402

DEFAULT_TEST_TIMEOUT = 150  # seconds for one test's body; setup and teardown have their own limits
RESULTS: list[dict] = []  # throughput figures, printed at the end


def pytest_addoption(parser):
    parser.addoption("--e2e-mode", choices=["sluice", "kernel"], default=os.environ.get("SLUICE_E2E_MODE", "sluice"),
                     help="sluice: test the binary; kernel: plain forwarding through the relay namespace "
                          "(validates the harness). Default: $SLUICE_E2E_MODE or sluice")


def _terminate(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")  # so pytest still runs every finalizer


def pytest_configure(config):
    signal.signal(signal.SIGTERM, _terminate)
    config.addinivalue_line("markers", "sluice: needs the sluice binary (skipped in kernel mode)")
    config.addinivalue_line("markers", "e2e_timeout(seconds): limit for this test's body")
    config.addinivalue_line("markers", "layout(name): the `topology` fixture's layout (netns.Topology), default direct")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--e2e-mode") == "kernel":
        skip = pytest.mark.skip(reason="kernel-forwarding mode checks the harness only; this test needs sluice")
        for item in items:
            if "sluice" in item.keywords:
                item.add_marker(skip)


def pytest_sessionstart(session):
    if os.geteuid() != 0:
        raise pytest.UsageError("the end-to-end tests make network namespaces: run them as root")
    for ns in netns.gc("e2e"):
        print(f"removed leftover namespace {ns} (its creator is gone)")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    """A hard limit per test body, so nothing can hang CI (setup/teardown use their own timeouts)."""
    marker = item.get_closest_marker("e2e_timeout")
    limit = marker.args[0] if marker else DEFAULT_TEST_TIMEOUT

    def expire(signum, frame):
        raise TimeoutError(f"test exceeded its {limit} s limit")

    old = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """On failure, attach the tail of every log the test's processes wrote."""
    outcome = yield
    rep = outcome.get_result()
    runner = getattr(item, "_e2e_runner", None)
    if rep.failed and runner is not None:
        for name, path in runner.logs.items():
            rep.sections.append((f"log: {name} ({rep.when})", h.tail(path)))


def pytest_sessionfinish(session, exitstatus):
    """Leak check: no namespace of this run, no child process may survive the suite."""
    mine = f"sle2e-{os.getpid()}-"
    leaked = [ns for ns in netns.list_namespaces() if ns.startswith(mine)]
    children = _children(os.getpid())
    for ns in leaked:
        netns.delete_namespace(ns)
    for pid in children:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    if leaked or children:
        session.config._e2e_leaks = f"leaked namespaces {leaked}, leaked child processes {children} (removed now)"
        session.exitstatus = 1


def _children(ppid: int) -> list[int]:
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                if int(fields[1]) == ppid and fields[0] != "Z":
                    out.append(int(d))
            except (OSError, IndexError, ValueError):
                pass
    return out


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    mode = config.getoption("--e2e-mode")
    if RESULTS:
        terminalreporter.section(f"throughput ({mode} mode)")
        for r in RESULTS:
            more = "".join(f"  {k} {v}" for k, v in r.get("extra", {}).items())
            if "latency_us" in r:
                terminalreporter.write_line(f"{r['name']:<52} {r['latency_us']:12,.0f} µs{more}")
                continue
            terminalreporter.write_line(
                f"{r['name']:<52} {r['bytes'] / 2**20:8.1f} MiB {r['seconds']:7.2f} s {r['gbps']:7.3f} Gbit/s{more}")
        path = os.environ.get("SLUICE_E2E_RESULTS")
        if path:
            with open(path, "w") as f:
                json.dump({"mode": mode, "results": RESULTS}, f, indent=2)
    leaks = getattr(config, "_e2e_leaks", None)
    if leaks:
        terminalreporter.section("LEAK CHECK FAILED")
        terminalreporter.write_line(leaks)


def record_throughput(name: str, nbytes: int, seconds: float, **extra) -> float:
    """Records a figure for the summary table (and SLUICE_E2E_RESULTS); `extra` (e.g. loss_percent)
    is shown after it."""
    gbps = nbytes * 8 / seconds / 1e9 if seconds > 0 else float("inf")
    entry = {"name": name, "bytes": nbytes, "seconds": seconds, "gbps": gbps}
    if extra:
        entry["extra"] = extra
    RESULTS.append(entry)
    more = "".join(f", {k} {v}" for k, v in extra.items())
    print(f"{name}: {nbytes} bytes in {seconds:.3f} s = {gbps:.3f} Gbit/s{more}")
    return gbps


def record_latency(name: str, seconds: float, **extra) -> None:
    """Records a latency (a median round trip, a transfer's wall time) for the summary table."""
    entry = {"name": name, "latency_us": seconds * 1e6}
    if extra:
        entry["extra"] = extra
    RESULTS.append(entry)
    more = "".join(f", {k} {v}" for k, v in extra.items())
    print(f"{name}: {seconds * 1e6:,.0f} µs{more}")


# -- fixtures -------------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def mode(pytestconfig) -> str:
    return pytestconfig.getoption("--e2e-mode")


@pytest.fixture
def workdir():
    d = Path(tempfile.mkdtemp(prefix="sluice-e2e-"))
    d.chmod(0o755)  # readable by the unprivileged user of the capability test
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(autouse=True)
def no_orphaned_tunnel_record():
    """After each test: no crash record of a `sluice up` whose process is gone may stay in this host's
    /run/sluice. A test whose `up` did not clean up after itself fails here, and the record goes, so
    the next tests are not refused ("state file … was written in another mount namespace": every
    `ip netns exec` has a mount namespace of its own)."""
    yield
    orphans = []
    for record in Path("/run/sluice").glob("*.json"):
        try:
            pid = json.loads(record.read_text())["pid"]
            os.kill(pid, 0)
            continue
        except ProcessLookupError:
            pass
        except (OSError, ValueError, KeyError, TypeError):
            continue
        orphans.append(record.name)
        for leftover in Path("/run/sluice").glob(record.stem + ".*"):
            leftover.unlink(missing_ok=True)
    assert not orphans, f"sluice up left {orphans} in /run/sluice with its process gone: its shutdown did not clean up"


@pytest.fixture
def runner(request, workdir):
    r = h.Runner(workdir)
    request.node._e2e_runner = r
    yield r
    r.close()


@pytest.fixture
def topology(request, mode, runner):
    """Fresh client/relay/server namespaces (relay not forwarding in sluice mode), in the layout a
    `layout(...)` mark names."""
    marker = request.node.get_closest_marker("layout")
    topo = netns.Topology(mode=mode, tag="e2e", layout=marker.args[0] if marker else "direct")

    def finish() -> None:
        runner.close()  # stop our processes gracefully first (idempotent; the runner fixture repeats it)
        topo.destroy()  # then kill anything still inside, by pid, and delete the namespaces

    request.addfinalizer(finish)
    topo.create()
    return topo


@pytest.fixture
def direct_topology(request, runner):
    """A second set of namespaces beside `topology`, with plain kernel forwarding: tests that time a
    pattern through Sluice time it here too, in the same run, so both figures share the machine's
    load of the moment."""
    topo = netns.Topology(mode="kernel", tag="e2e")

    def finish() -> None:
        runner.close()
        topo.destroy()

    request.addfinalizer(finish)
    topo.create()
    return topo


@pytest.fixture
def servers(runner, topology) -> h.Servers:
    return h.start_servers(runner, topology)


@pytest.fixture
def dns_server(runner, topology) -> h.DnsServer:
    """dnsmasq on the server's addresses (harness.start_dns), stopped with the test's processes."""
    return h.start_dns(runner, topology)


@dataclass
class Tunnel:
    """One tunnel: topology, servers and (in sluice mode) relay and client processes."""

    mode: str
    topo: netns.Topology
    runner: h.Runner
    servers: h.Servers
    relay_key: h.KeyPair | None = None
    client_key: h.KeyPair | None = None
    relay: h.Proc | None = None
    client: h.Proc | None = None
    proxy: h.CountingProxy | None = None
    faults: h.FaultProxy | None = None
    relay_argv: list = field(default_factory=list)

    def start_relay(self) -> h.Proc:
        self.relay = self.runner.start("relay", self.relay_argv, ns=self.topo.relay)
        return self.relay

    def check_alive(self) -> None:
        """Raises, with the log's tail, if the relay or the client has exited."""
        for name, p in (("sluice relay", self.relay), ("sluice up", self.client)):
            if p is not None and not p.alive():
                raise RuntimeError(f"{name} exited {p.popen.returncode}:\n{h.tail(p.log)}")

    def wait_flow(self, timeout: float = 15) -> float:
        """Waits until a small HTTP request through the tunnel succeeds; returns the seconds it took."""
        t0 = time.monotonic()

        def works() -> bool:
            self.check_alive()
            return h.curl(self.topo, ["-o", "/dev/null", h.url(self.topo, "ipv4", "/bytes/1")],
                          max_time=2, connect_timeout=2).ok

        h.wait_for(works, timeout, interval=0.1, what="a first request through the tunnel")
        return time.monotonic() - t0


@pytest.fixture
def make_tunnel(mode, runner, topology, servers):
    """Factory: make_tunnel(carriers=None, authorized=True, via_proxy=False, via_fault_proxy=False,
    relay_psk=None, client_psk=None, relay_extra=(), client_extra=(), listen=None, relay_addr=None,
    wait=True)."""

    def make(carriers: int | None = None, authorized: bool = True, via_proxy: bool = False,
             via_fault_proxy: bool = False, relay_psk=None, client_psk=None, relay_extra=(), client_extra=(),
             listen: str | None = None, relay_addr: str | None = None, wait: bool = True) -> Tunnel:
        t = Tunnel(mode, topology, runner, servers)
        if mode == "kernel":
            return t
        t.relay_key = h.make_keypair(runner.workdir, "relay")
        t.client_key = h.make_keypair(runner.workdir, "client")
        allowed = t.client_key.public if authorized else h.make_keypair(runner.workdir, "other").public
        t.relay_argv = h.relay_argv(t.relay_key, [allowed], listen=listen or f"0.0.0.0:{h.RELAY_PORT}",
                                    psk=relay_psk, extra=relay_extra)
        t.start_relay()
        h.wait_relay_listening(topology, t.relay)
        target = relay_addr or f"{netns.RELAY_CLIENT_SIDE_V4}:{h.RELAY_PORT}"
        if via_proxy:
            t.proxy = h.start_proxy(runner, topology, f"{netns.RELAY_CLIENT_SIDE_V4}:{h.PROXY_PORT}",
                                    f"127.0.0.1:{h.RELAY_PORT}")
            target = f"{netns.RELAY_CLIENT_SIDE_V4}:{h.PROXY_PORT}"
        elif via_fault_proxy:
            t.faults = h.start_fault_proxy(runner, topology, f"{netns.RELAY_CLIENT_SIDE_V4}:{h.PROXY_PORT}",
                                           f"127.0.0.1:{h.RELAY_PORT}")
            target = f"{netns.RELAY_CLIENT_SIDE_V4}:{h.PROXY_PORT}"
        t.client = runner.start("client", h.client_argv(target, t.relay_key.public, t.client_key, psk=client_psk,
                                                        carriers=carriers, extra=client_extra), ns=topology.client)
        h.wait_client_up(topology, t.client)
        if wait:
            t.wait_flow()
        return t

    return make
