"""Per-application routing: `sluice exec`, `sluice exec --bypass`, `sluice cgroup add|del`.

Runs in the "kernel" layout (netns.py): the relay namespace forwards and the client has a plain route
to the server network, so the server is reachable both directly (it sees the client's address,
10.10.0.1) and through Sluice (it sees the relay's, 10.20.0.1). Without --route-all only programs in
Sluice's cgroups take the tunnel; with --route-all --route-local everything does except them.

cgroups are not namespaced here, so the client runs in a mount jail entered with
`nsenter --net=/var/run/netns/NAME` (not `ip netns exec`, which remounts /sys and hides the cgroup
file system) with a private /run, where the tunnel's control socket and state file live. The TUN
name carries this process's pid, so the cgroup `sluice/<tun>` cannot meet another run's.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

import harness as h
import mountns
import netns
import udpecho

pytestmark = pytest.mark.sluice

TUN = f"sa{os.getpid() % 100000}"
NAME = "www.sluice.test"


def cgroup2_mount() -> str | None:
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        if right.split(" ")[0] == "cgroup2":
            return left.split(" ")[4]
    return None


class CgroupJail(mountns.NamespaceJail):
    """A private mount namespace (private /run) inside the client's network namespace, with the host's
    /sys (and so its cgroup v2 mount) still visible."""

    run_timeout = 30

    def __init__(self, ns: str) -> None:
        script = "set -e; mount -t tmpfs -o mode=0755 sluice-e2e-run /run; echo ready; exec sleep 100000"
        self.proc = subprocess.Popen(["nsenter", f"--net=/var/run/netns/{ns}", "unshare", "--mount", "--propagation",
                                      "private", "--", "sh", "-c", script],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self._await_ready("jail")


class PerApp:
    def __init__(self, topo, runner, jail, relay_key, client_key, dns_log, cgroot) -> None:
        self.topo, self.runner, self.jail = topo, runner, jail
        self.relay_key, self.client_key, self.dns_log, self.cgroot = relay_key, client_key, dns_log, cgroot
        self.client = None

    @property
    def group_dir(self) -> Path:
        return Path(self.cgroot) / "sluice" / TUN

    def up(self, route_all: bool = False, extra=()):
        argv = [h.sluice_bin(), "up", "--relay", f"{netns.RELAY_CLIENT_SIDE_V4}:{h.RELAY_PORT}",
                "--relay-public-key", self.relay_key.public, "--private-key", str(self.client_key.path),
                "--tun", TUN, "--log-level", "debug"]
        for a in h.CLIENT_ADDRESSES:
            argv += ["--address", a]
        if route_all:
            argv += ["--route-all", "--route-local", "--dns", netns.SERVER_V4]
        argv += list(extra)
        self.client = self.runner.start("client", self.jail.argv(argv))
        h.wait_for(lambda: self.jail.run(["test", "-S", f"/run/sluice/{TUN}.sock"]).returncode == 0
                   or not self.client.alive(), 20, what="the control socket")
        assert self.client.alive(), h.tail(self.client.log)
        # The first flow through the tunnel needs a carrier up.
        h.wait_for(lambda: self.peer(netns.SERVER_V4, exec_args=["--bypass"] if route_all else None, timeout=2)
                   is not None, 20, interval=0.3, what="a first request")
        return self.client

    def curl_argv(self, host: str, timeout: float) -> list[str]:
        return ["curl", "-sS", "-g", "--noproxy", "*", "--max-time", str(timeout), "--connect-timeout", str(timeout),
                f"http://{self.topo.url_host(host)}:{h.HTTP_PORT}/peer"]

    def peer(self, host: str, exec_args=None, timeout: float = 5, wrap=None) -> str | None:
        """Who the server saw: a plain curl, or one under `sluice exec [exec_args] --`."""
        argv = self.curl_argv(host, timeout)
        if wrap:
            argv = wrap(argv)
        if exec_args is not None:
            argv = [h.sluice_bin(), "exec", "--tun", TUN, *exec_args, "--", *argv]
        return h.peer_seen(self.jail.run(argv, timeout=timeout + 20))

    def stop(self) -> None:
        assert self.client.stop(timeout=15) == 0, h.tail(self.client.log)

    def leftovers(self) -> list[str]:
        found = []
        if self.group_dir.exists():
            found.append(f"cgroup {self.group_dir}")
        nft = self.topo.exec(self.topo.client, ["nft", "list", "tables"], check=True).stdout
        found += [l for l in nft.splitlines() if "sluice" in l]
        for fam in ("-4", "-6"):
            rules = self.topo.exec(self.topo.client, ["ip", fam, "rule"], check=True).stdout
            found += [l for l in rules.splitlines() if "0x534" in l or "21324" in l or "21326" in l]
        found += self.jail.state_files()
        return found


@pytest.fixture
def perapp(request, runner):
    cgroot = cgroup2_mount()
    if cgroot is None:
        pytest.skip("no cgroup v2 on this machine")
    topo = netns.Topology(mode="kernel", tag="e2e")
    state: dict = {}

    def finish() -> None:
        runner.close()
        if "jail" in state:
            state["jail"].close()
        topo.destroy()
        group = Path(cgroot) / "sluice" / TUN
        if group.exists():  # only after a failure: remove what a broken run left, deepest first
            for d in sorted((p for p in group.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)) + [group]:
                try:
                    d.rmdir()
                except OSError:
                    pass

    request.addfinalizer(finish)
    topo.create()
    h.start_servers(runner, topo, pregen_mib=1)
    dns_ready = runner.workdir / "dns-ready"
    dns_log = runner.workdir / "dns.jsonl"
    dns = runner.start("resolver", [h.PY, str(h.HERE / "fake_resolver.py"), "--log", str(dns_log), "--ready-file",
                                    str(dns_ready), "--a", netns.SERVER_V4, "--aaaa", netns.SERVER_V6], ns=topo.server)
    h.wait_for(lambda: dns_ready.exists() or not dns.alive(), 20, what="the resolver")
    relay_key = h.make_keypair(runner.workdir, "relay")
    client_key = h.make_keypair(runner.workdir, "client")
    relay = runner.start("relay", h.relay_argv(relay_key, [client_key.public]), ns=topo.relay)
    h.wait_relay_listening(topo, relay)
    state["jail"] = CgroupJail(topo.client)
    return PerApp(topo, runner, state["jail"], relay_key, client_key, dns_log, cgroot)


def dns_peers(p: PerApp) -> list[str]:
    try:
        return [json.loads(l)["peer"] for l in p.dns_log.read_text().splitlines() if l.strip()]
    except FileNotFoundError:
        return []


def udp_peer(p: PerApp, server: str, exec_args) -> str | None:
    """The address servers.py's UDP echo saw, asked by a python client (under `sluice exec` or not)."""
    family = "AF_INET6" if ":" in server else "AF_INET"
    code = (f"import socket; s = socket.socket(socket.{family}, socket.SOCK_DGRAM); s.settimeout(3); "
            f"s.sendto(b'Ehello', ('{server}', {h.UDP_PORT})); import sys; sys.stdout.buffer.write(s.recvfrom(65535)[0])")
    argv = [h.PY, "-c", code]
    if exec_args is not None:
        argv = [h.sluice_bin(), "exec", "--tun", TUN, *exec_args, "--", *argv]
    cp = subprocess.run(p.jail.argv(argv), capture_output=True, timeout=30, env=h.clean_env())
    if cp.returncode != 0:
        return None
    return udpecho.parse_echo_reply(cp.stdout)[0]


def test_exec_without_tunnel_fails_clearly(perapp):
    cp = perapp.jail.run([h.sluice_bin(), "exec", "--tun", TUN, "--", "true"])
    assert cp.returncode == 1, cp
    assert "no tunnel" in cp.stderr and "sluice up" in cp.stderr, cp.stderr


def test_include_mode_exec_goes_through_the_tunnel(perapp):
    p = perapp
    p.up()
    for v4, v6 in ((netns.SERVER_V4, netns.SERVER_V6),):
        assert p.peer(v4) == netns.CLIENT_V4, "plain curl should go direct"
        assert p.peer(v4, exec_args=[]) == netns.RELAY_SERVER_SIDE_V4, "sluice exec curl should use the relay"
        assert p.peer(v6) == netns.CLIENT_V6
        assert p.peer(v6, exec_args=[]) == netns.RELAY_SERVER_SIDE_V6
    # A grandchild inherits the group.
    grand = p.peer(netns.SERVER_V4, exec_args=[], wrap=lambda argv: ["sh", "-c", " ".join(f"'{a}'" for a in argv) + "; true"])
    assert grand == netns.RELAY_SERVER_SIDE_V4
    # UDP: dig (IPv4; the resolver answers IPv6 from whichever server address routing picks, so IPv6
    # UDP is checked with servers.py's echo, bound to each address), through exec and directly.
    before = len(dns_peers(p))
    cp = p.jail.run([h.sluice_bin(), "exec", "--tun", TUN, "--", "dig", "+short", "+tries=2", "+time=2",
                     f"@{netns.SERVER_V4}", NAME, "A"])
    assert cp.returncode == 0 and netns.SERVER_V4 in cp.stdout, cp
    assert dns_peers(p)[before:] and set(dns_peers(p)[before:]) == {netns.RELAY_SERVER_SIDE_V4}, dns_peers(p)
    before = len(dns_peers(p))
    cp = p.jail.run(["dig", "+short", "+tries=2", "+time=2", f"@{netns.SERVER_V4}", NAME, "A"])
    assert cp.returncode == 0 and set(dns_peers(p)[before:]) == {netns.CLIENT_V4}, (cp, dns_peers(p))
    for server, expected, exec_args in ((netns.SERVER_V6, netns.RELAY_SERVER_SIDE_V6, []), (netns.SERVER_V6, netns.CLIENT_V6, None),
                                        (netns.SERVER_V4, netns.RELAY_SERVER_SIDE_V4, [])):
        assert udp_peer(p, server, exec_args) == expected


    # The exit status comes through, and every exec's group is gone once it returned.
    assert p.jail.run([h.sluice_bin(), "exec", "--tun", TUN, "--", "sh", "-c", "exit 7"]).returncode == 7
    assert [d.name for d in p.group_dir.iterdir() if d.is_dir()] == []
    # --bypass needs --route-all.
    cp = p.jail.run([h.sluice_bin(), "exec", "--tun", TUN, "--bypass", "--", "true"])
    assert cp.returncode == 1 and "--route-all" in cp.stderr, cp
    p.stop()
    assert p.leftovers() == []


def test_exclude_mode_bypass(perapp):
    p = perapp
    p.up(route_all=True)
    assert p.peer(netns.SERVER_V4) == netns.RELAY_SERVER_SIDE_V4, "with --route-all plain curl uses the relay"
    assert p.peer(netns.SERVER_V4, exec_args=["--bypass"]) == netns.CLIENT_V4, "a bypassed program goes direct"
    assert p.peer(netns.SERVER_V6) == netns.RELAY_SERVER_SIDE_V6
    assert p.peer(netns.SERVER_V6, exec_args=["--bypass"]) == netns.CLIENT_V6
    p.stop()
    assert p.leftovers() == []


def test_cgroup_add_moves_a_running_process(perapp):
    p = perapp
    p.up()
    out = p.runner.workdir / "loop.out"
    curl = " ".join(p.curl_argv(netns.SERVER_V4, 2))
    loop = p.runner.start("loop", p.jail.argv(["sh", "-c", f"while true; do {curl} >> {out}; echo >> {out}; sleep 0.2; done"]))

    def last_peer() -> str | None:
        lines = [l for l in out.read_text().splitlines() if l.strip()] if out.exists() else []
        try:
            return json.loads(lines[-1])["peer"] if lines else None
        except ValueError:
            return None

    h.wait_for(lambda: last_peer() == netns.CLIENT_V4, 15, interval=0.2, what="direct requests from the loop")
    cp = p.jail.run([h.sluice_bin(), "cgroup", "add", str(loop.popen.pid), "--tun", TUN])
    assert cp.returncode == 0, cp
    h.wait_for(lambda: last_peer() == netns.RELAY_SERVER_SIDE_V4, 15, interval=0.2, what="the loop's requests via the relay")
    cp = p.jail.run([h.sluice_bin(), "cgroup", "del", str(loop.popen.pid), "--tun", TUN])
    assert cp.returncode == 0, cp
    h.wait_for(lambda: last_peer() == netns.CLIENT_V4, 15, interval=0.2, what="direct requests again")
    loop.kill()
    p.stop()
    assert p.leftovers() == []


def test_app_cgroup_routes_an_existing_group(perapp):
    p = perapp
    relative = f"sluice-e2e-{os.getpid()}"  # a group of someone else's, like a systemd unit
    group = Path(p.cgroot) / relative
    group.mkdir()
    try:
        p.up(extra=["--app-cgroup", relative])
        inside = ["sh", "-c", f"echo $$ > {group}/cgroup.procs && exec " + " ".join(p.curl_argv(netns.SERVER_V4, 5))]
        cp = p.jail.run(inside)
        assert cp.returncode == 0 and json.loads(cp.stdout)["peer"] == netns.RELAY_SERVER_SIDE_V4, cp
        assert p.peer(netns.SERVER_V4) == netns.CLIENT_V4
        p.stop()
        assert p.leftovers() == []
        assert group.is_dir(), "the group was not Sluice's to remove"
    finally:
        h.wait_for(lambda: not (group / "cgroup.procs").read_text().strip(), 10, what="the group to empty")
        group.rmdir()


def test_sluice_down_cleans_up_after_a_crash(perapp):
    p = perapp
    p.up()
    # A program still running in a group: `down` moves it out so the group can go.
    sleeper = p.runner.start("sleeper", p.jail.argv([h.sluice_bin(), "exec", "--tun", TUN, "--", "sleep", "60"]))
    h.wait_for(lambda: any(p.group_dir.glob("app-*")), 10, what="the sleeper's group")
    p.client.kill()  # SIGKILL: nothing is undone
    assert p.group_dir.exists()
    cp = p.jail.run([h.sluice_bin(), "down", "--tun", TUN])
    assert cp.returncode == 0, cp
    assert p.leftovers() == []
    assert sleeper.stop(timeout=10) == 128 + 15, "SIGTERM is passed on to the program"
