"""Kernel counters of the client and relay namespaces that say where a test lost or cut packets.

A figure that looks wrong — iperf3 retransmitting thousands of segments, a rate test losing requests —
usually has a plain cause the kernel counted: a UDP socket whose receive buffer was full when a
datagram came (`Udp: RcvbufErrors` in /proc/net/snmp: the process reading it fell behind), a device
queue that overflowed (a TUN device's tx drops: the tunnel process did not read it in time), or
packets cut into fragments (`Ip: FragCreates`, `ReasmReqds`: an MTU too large for the path).
measure.py takes a snapshot of each namespace before and after a test, keeps the difference in the
JSON and, when the test shows trouble, writes a note that names the cause.
"""

from __future__ import annotations

import json
import subprocess

# (/proc/net/snmp section, field) → our name
SNMP = {("Udp", "RcvbufErrors"): "udp_rcvbuf_errors", ("Udp", "SndbufErrors"): "udp_sndbuf_errors",
        ("Ip", "FragCreates"): "ip_frag_creates", ("Ip", "ReasmReqds"): "ip_reasm_reqds"}
WHAT = {"udp_rcvbuf_errors": "datagrams dropped for a full UDP receive buffer (Udp RcvbufErrors)",
        "udp_sndbuf_errors": "datagrams dropped for a full UDP send buffer (Udp SndbufErrors)",
        "ip_frag_creates": "IP fragments made (Ip FragCreates: a packet larger than the path's MTU)",
        "ip_reasm_reqds": "IP fragments to reassemble (Ip ReasmReqds)"}
DROPPED = "dropped by "  # + a device's name: its rx + tx drops (a TUN device's tx: the process read too late)


def _run(ns: str, argv: list[str]) -> str:
    cp = subprocess.run(["ip", "netns", "exec", ns, *argv], capture_output=True, text=True, timeout=10)
    return cp.stdout if cp.returncode == 0 else ""


def parse_snmp(text: str) -> dict[str, int]:
    """The SNMP fields we name, from /proc/net/snmp's pairs of header and value lines."""
    out: dict[str, int] = {}
    lines = text.splitlines()
    for head, vals in zip(lines[::2], lines[1::2]):
        section, names = head.split(":", 1)
        _, values = vals.split(":", 1)
        for name, value in zip(names.split(), values.split()):
            if (section, name) in SNMP:
                out[SNMP[(section, name)]] = int(value)
    return out


def snapshot(ns: str) -> dict[str, int]:
    """The counters of one namespace now (/proc/net is the reading process's namespace's)."""
    counters = {name: 0 for name in WHAT}
    counters.update(parse_snmp(_run(ns, ["cat", "/proc/net/snmp"])))
    try:
        links = json.loads(_run(ns, ["ip", "-s", "-j", "link", "show"]) or "[]")
    except json.JSONDecodeError:
        links = []
    for link in links:
        stats = link.get("stats64", {})
        counters[DROPPED + link["ifname"]] = sum(stats.get(way, {}).get("dropped", 0) for way in ("rx", "tx"))
    return counters


def delta(before: dict[str, dict[str, int]], after: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    """side → counter → increase, leaving out what did not move."""
    return {side: {k: v - before[side].get(k, 0) for k, v in counts.items() if v != before[side].get(k, 0)}
            for side, counts in after.items() if side in before}


def explain(moved: dict[str, dict[str, int]]) -> str:
    """'the relay: 8,540 datagrams dropped for a full UDP receive buffer (…); the client: 335 packets
    dropped by ovpn-c (its queue was full)', or '' when nothing moved."""
    parts = [f"the {side}: {n:,} " + (WHAT[k] if k in WHAT else f"packets {k} (its queue was full)")
             for side, counts in moved.items() for k, n in counts.items() if n > 0]
    return "; ".join(parts)
