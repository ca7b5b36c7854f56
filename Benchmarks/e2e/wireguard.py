"""The wireguard-go peer mode: Debian's userspace WireGuard (packages wireguard-go, wireguard-tools).

    client ns                                        relay ns
    wgc<pid> 10.99.0.2/24, route 10.20.0.0/24 ══ UDP 10.10.0.1 → 10.10.0.2:51820 ══ wgr<pid> 10.99.0.1/24

wireguard-go runs in the foreground in each namespace (WG_PROCESS_FOREGROUND=1, which also skips its
banner) and makes its TUN device; `wg set` gives it the private key and the one peer over its UAPI
socket, /var/run/wireguard/NAME.sock. That directory is shared by every namespace, so the device names
carry this process's pid: two runs never talk to each other's daemon.

Settings are WireGuard's defaults, as `wg-quick` would leave them: MTU 1420 (1500 less 80 bytes for an
outer IPv6 + UDP + WireGuard header; wireguard-go's own default too), no persistent keepalive, one peer
whose allowed IPs are the server network (client) or the client's tunnel address (relay). Keys are made
with `wg genkey` for each mode run and live in the run's temporary directory.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import harness as h
import netns
import peers

PORT = 51820
MTU = 1420
CLIENT_ADDR, RELAY_ADDR = "10.99.0.2", "10.99.0.1"


def _wg(*args: str, input: str | None = None, ns: str | None = None) -> str:
    argv = ["ip", "netns", "exec", ns, "wg", *args] if ns else ["wg", *args]
    cp = subprocess.run(argv, input=input, capture_output=True, text=True, timeout=10)
    if cp.returncode != 0:
        raise RuntimeError(f"wg {' '.join(args)}: {cp.stderr.strip()}")
    return cp.stdout.strip()


class WireGuard:
    """Two wireguard-go daemons, client and relay, with a key pair each."""

    def __init__(self, topo: netns.Topology, workdir: Path) -> None:
        self.topo, self.workdir = topo, workdir
        pid = os.getpid()
        self.client_device, self.relay_device = f"wgc{pid}", f"wgr{pid}"  # ≤ 15 characters: pid ≤ 2^22
        self.keys: dict[str, tuple[Path, str]] = {}
        for side in ("client", "relay"):
            private = _wg("genkey")
            path = workdir / f"wg-{side}.key"
            path.write_text(private + "\n")
            path.chmod(0o600)
            self.keys[side] = (path, _wg("pubkey", input=private + "\n"))

    def _daemon(self, runner: h.Runner, side: str, ns: str, device: str) -> h.Proc:
        proc = runner.start(f"wireguard-go-{side}", ["env", "WG_PROCESS_FOREGROUND=1", "wireguard-go", device], ns=ns)
        sock = Path(f"/var/run/wireguard/{device}.sock")

        def ready() -> bool:
            if not proc.alive():
                raise RuntimeError(f"wireguard-go ({side}) exited {proc.popen.returncode}:\n{h.tail(proc.log)}")
            return sock.exists() and subprocess.run(["ip", "-n", ns, "link", "show", device],
                                                    capture_output=True).returncode == 0

        h.wait_for(ready, 10, what=f"wireguard-go ({side}) to make {device}")
        return proc

    def close(self) -> None:
        """The UAPI sockets, if a daemon could not remove its own (killed rather than stopped)."""
        for device in (self.client_device, self.relay_device):
            Path(f"/var/run/wireguard/{device}.sock").unlink(missing_ok=True)

    def _address(self, ns: str, device: str, addr: str) -> None:
        netns.run(["ip", "-n", ns, "addr", "add", f"{addr}/24", "dev", device])
        netns.run(["ip", "-n", ns, "link", "set", device, "mtu", str(MTU), "up"])

    def start(self, runner: h.Runner) -> tuple[h.Proc, h.Proc]:
        t = self.topo
        relay = self._daemon(runner, "relay", t.relay, self.relay_device)
        _wg("set", self.relay_device, "listen-port", str(PORT), "private-key", str(self.keys["relay"][0]),
            "peer", self.keys["client"][1], "allowed-ips", f"{CLIENT_ADDR}/32", ns=t.relay)
        self._address(t.relay, self.relay_device, RELAY_ADDR)
        client = self._daemon(runner, "client", t.client, self.client_device)
        _wg("set", self.client_device, "private-key", str(self.keys["client"][0]),
            "peer", self.keys["relay"][1], "endpoint", f"{netns.RELAY_CLIENT_SIDE_V4}:{PORT}",
            "allowed-ips", netns.SERVER_NET_V4, ns=t.client)
        self._address(t.client, self.client_device, CLIENT_ADDR)
        netns.run(["ip", "-n", t.client, "route", "add", netns.SERVER_NET_V4, "dev", self.client_device])
        peers.wait_route(t, self.client_device, client)
        return client, relay
