"""The peer modes: what a user would install instead of Sluice, in the same namespaces and tests.

    client ns                          relay ns                                      server ns
    app ── VPN device ══ UDP over to-relay ══ VPN device ── forward + masquerade ── to-server ── servers
           10.99.x.2                10.10.0.2   10.99.x.1        (nftables)          10.20.0.1    10.20.0.2

- "wireguard-go": Debian's userspace WireGuard (wireguard.py). This kernel has no WireGuard module, and
  a user without one gets this.
- "openvpn": Debian's OpenVPN 2.6 over UDP, data channel AES-256-GCM in user space (openvpn.py; no DCO
  module on this kernel, and `--disable-dco` says so rather than leaving it to a probe).

Both are layer-3 VPNs: the client's kernel speaks TCP and UDP end to end, the VPN process only seals and
opens packets, and the relay's kernel forwards what comes out of the VPN device. The relay namespace
forwards only between that device and the server side and masquerades there, so the server sees the
relay's address, as through Sluice; nothing else is forwarded (the forward chain's policy is drop).

Each peer's client and relay process take the places of `sluice up` and `sluice relay` in measure.py:
their CPU time and RSS are measured the same way (the whole process, all threads). What the relay's
kernel spends forwarding and on conntrack runs in softirq context and is not in those figures — the
same holds for the kernel mode's forwarding, and for what Sluice's sockets cost in the kernel.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Protocol

import harness as h
import netns

MODES = ("wireguard-go", "openvpn")
# What each peer needs on PATH, and the Debian package that has it (scripts/deps.sh installs them).
TOOLS = {"wireguard-go": {"wireguard-go": "wireguard-go", "wg": "wireguard-tools", "nft": "nftables"},
         "openvpn": {"openvpn": "openvpn", "openssl": "openssl", "nft": "nftables"}}
NFT_TABLE = "slbench_peer"


class Peer(Protocol):
    """One peer VPN: keys made once per mode run, both ends started afresh for each group of tests."""

    relay_device: str  # the VPN device in the relay namespace, which the forward rules name

    def start(self, runner: h.Runner) -> tuple[h.Proc, h.Proc]:
        """Starts the relay end, then the client end; returns (client, relay) once the client's route
        to the server network goes through the VPN device. The first packet may still be handshaking."""
        ...

    def close(self) -> None:
        """Removes what the peer left outside the namespaces (after its processes are gone)."""
        ...


def missing_tools(modes: list[str]) -> dict[str, str]:
    """Tool → Debian package, for every tool a chosen peer mode needs that is not on PATH."""
    return {tool: pkg for m in modes for tool, pkg in TOOLS.get(m, {}).items() if shutil.which(tool) is None}


def _first_line(argv: list[str]) -> str:
    try:
        cp = subprocess.run(argv, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    lines = (cp.stdout or cp.stderr).strip().splitlines()
    return lines[0].strip() if lines else ""


def versions() -> dict[str, str]:
    """The peers' own words: `wireguard-go --version`, `wg --version`, `openvpn --version` (its first
    line and the libraries line)."""
    out = {"wireguard-go": _first_line(["wireguard-go", "--version"]),
           "wireguard-tools": _first_line(["wg", "--version"]).split(" - ")[0]}
    try:
        cp = subprocess.run(["openvpn", "--version"], capture_output=True, text=True, timeout=10)
        lines = cp.stdout.splitlines()
        out["openvpn"] = lines[0].strip() if lines else ""
        out["openvpn_libraries"] = next((l.split(":", 1)[1].strip() for l in lines if l.startswith("library versions")), "")
    except (OSError, subprocess.TimeoutExpired):
        out["openvpn"] = ""
    return out


def create(mode: str, topo: netns.Topology, workdir: Path, openvpn_args: list[str] = ()) -> Peer:
    """Keys (and OpenVPN's throwaway CA) for one mode run, and the relay's forwarding rules.
    `openvpn_args` go to both OpenVPN ends after the bench's own (bench.py --openvpn-arg)."""
    import openvpn
    import wireguard
    peer: Peer
    if mode == "wireguard-go":
        peer = wireguard.WireGuard(topo, workdir)
    elif mode == "openvpn":
        peer = openvpn.OpenVPN(topo, workdir, list(openvpn_args))
    else:
        raise ValueError(f"peer mode {mode!r}: one of {MODES}")
    forward_only(topo, peer.relay_device)
    return peer


def forward_only(topo: netns.Topology, device: str) -> None:
    """The relay namespace forwards IPv4 between `device` and the server side only, masquerading there.

    The device need not exist yet: nftables matches interface names as strings, and the VPN process
    makes its device anew for each group of tests."""
    ruleset = f"""
table inet {NFT_TABLE} {{
    chain forward {{
        type filter hook forward priority filter; policy drop;
        iifname "{device}" oifname "to-server" accept
        iifname "to-server" oifname "{device}" ct state established,related accept
    }}
    chain postrouting {{
        type nat hook postrouting priority srcnat; policy accept;
        oifname "to-server" masquerade
    }}
}}
"""
    cp = subprocess.run(["ip", "netns", "exec", topo.relay, "nft", "-f", "-"], input=ruleset, capture_output=True,
                        text=True, timeout=20)
    if cp.returncode != 0:
        raise RuntimeError(f"nft in the relay namespace: {cp.stderr.strip()}")
    topo.sysctl(topo.relay, "net.ipv4.ip_forward", "1")


def wait_route(topo: netns.Topology, device: str, proc: h.Proc, timeout: float = 15) -> None:
    """Waits until the client namespace routes the server network through `device`."""
    def routed() -> bool:
        if not proc.alive():
            raise RuntimeError(f"{proc.name} exited {proc.popen.returncode}:\n{h.tail(proc.log)}")
        cp = topo.exec(topo.client, ["ip", "-4", "route", "get", netns.SERVER_V4], timeout=5)
        return cp.returncode == 0 and f" dev {device} " in cp.stdout + " "

    h.wait_for(routed, timeout, interval=0.05, what=f"the client's route to the server through {device}")
