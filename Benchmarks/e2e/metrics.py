"""The figures the benchmark reports, their targets, and the table that sets Sluice beside the other modes.

A *figure* is one number a mode produced (`tcp1_up_gbps`: 2.1). A `Metric` says what the number is,
which way is better, whether plain kernel forwarding has the same figure (the *ceiling*: throughput,
rates and latencies do; CPU and memory of a tunnel's processes do not), and Sluice's target (targets.py):
a ratio to a figure of the same run, or for memory an absolute bound.

Beside Sluice stand the *floors* (floor, floor-aead: two minimal forwarders in a chain, the most any
proxy-style tunnel reaches here; floor-aead-64k of the paired iperf3 rounds: floor-aead in a TUN
device's 64 KiB units), with their % of the ceiling, the *polling modes* of the latency rounds
(floor-poll, sluice-poll: the same with their loops polling before they sleep, polling.py), and the
*peers* (wireguard-go, openvpn: what a user would install instead), with Sluice / peer. Only Sluice gets
verdicts; a verdict says too which floors miss the same target and whether sluice-poll meets it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import floor
import polling
import socksmode
from peers import MODES as PEER_MODES
from targets import PEERS, Target

# Columns beside Sluice without a Sluice / x ratio: the floors, the polling modes, and Sluice through a
# SOCKS5 server.
FLOOR_MODES = (*floor.ALL_MODES, *polling.MODES, *socksmode.MODES)


@dataclass(frozen=True)
class Metric:
    key: str
    label: str
    unit: str
    target: Target | None
    higher_is_better: bool
    has_ceiling: bool
    digits: int = 2
    # False for a figure that is not the tunnel's own (the host's steal): no binary does it better.
    of_the_tunnel: bool = True

    def fmt(self, value: float | None) -> str:
        if value is None:
            return "–"
        return f"{value:,.{self.digits}f}"


# Issue 17: one stream each way at ≥ 95 % of floor-aead. Judged on the medians of the paired rounds
# (paired.py: the two in turns, under the same load), not on the main pass, where they ran minutes apart.
AT_FLOOR = Target(">=", 0.95, "floor-aead")
PAIRED_LABEL = "… median of paired rounds"
METRICS: list[Metric] = [
    Metric("tcp1_up_gbps", "TCP, 1 stream, up", "Gbit/s", None, True, True),
    Metric("tcp1_up_paired_gbps", PAIRED_LABEL, "Gbit/s", AT_FLOOR, True, False),
    Metric("tcp1_down_gbps", "TCP, 1 stream, down", "Gbit/s", None, True, True),
    Metric("tcp1_down_paired_gbps", PAIRED_LABEL, "Gbit/s", AT_FLOOR, True, False),
    # Four streams no worse than one, with room for noise.
    Metric("tcp4_up_gbps", "TCP, 4 streams, up", "Gbit/s", Target(">=", 0.95, "sluice", "tcp1_up_gbps"), True, True),
    Metric("tcp4_down_gbps", "TCP, 4 streams, down", "Gbit/s",
           Target(">=", 0.95, "sluice", "tcp1_down_gbps"), True, True),
    # Not lower than on 3b6ee0c: 14,017-15,607/s there against a ceiling of ~37,100 (38-42 %).
    Metric("tcp_cc_per_s", "new TCP connections", "/s", Target(">=", 0.38, "kernel"), True, True, digits=0),
    # No lower than what a user would install instead (a rate at N in flight is at most N / latency;
    # the latencies below carry the ceiling's targets).
    Metric("udp_rr_per_s", "UDP req/resp, one socket", "/s", Target(">=", 1.0, PEERS), True, True, digits=0),
    # The targets below that compare Sluice with one other mode judge the medians of paired rounds
    # (paired.LATENCY: kernel, floor, OpenVPN and Sluice in turns, each turn only these tests), in which
    # the kernel's, floor's and OpenVPN's figures are their own paired medians. A one-in-flight test is
    # the one the host's other guests move most: in the main pass the kernel's new TCP connection took
    # 137 µs in one run and 443 µs in the next.
    Metric("udp_new_per_s", "UDP req/resp, new socket each", "/s", None, True, True, digits=0),
    Metric("udp_new_paired_per_s", PAIRED_LABEL, "/s", Target(">=", 1.0, "openvpn"), True, True, digits=0),
    Metric("tcp_cc_latency_us", "new TCP connection, 1 in flight", "µs", None, False, True, digits=0),
    Metric("tcp_cc_latency_paired_us", PAIRED_LABEL, "µs", Target("<=", 1.6, "kernel"), False, True, digits=0),
    Metric("udp_rr_latency_us", "UDP round trip, 1 in flight", "µs", None, False, True, digits=0),
    Metric("udp_rr_latency_paired_us", PAIRED_LABEL, "µs", Target("<=", 1.5, "kernel"), False, True, digits=0),
    Metric("udp_new_latency_us", "UDP new socket + round trip, 1 in flight", "µs", None, False, True, digits=0),
    Metric("udp_new_latency_paired_us", PAIRED_LABEL, "µs", Target("<=", 2.0, "kernel"), False, True, digits=0),
    # The CPU side of "at the floor": with the CPUs full, Gbit/s goes as 1 / (s/GB), so ≥ 95 % of the
    # floor's throughput needs at most 1 / 0.95 ≈ 1.05 × its CPU per GB.
    Metric("cpu_up_s_per_gb", "CPU client+relay, 1 stream up", "s/GB", None, False, False),
    Metric("cpu_up_paired_s_per_gb", PAIRED_LABEL, "s/GB", Target("<=", 1.05, "floor-aead"), False, False),
    Metric("cpu_down_s_per_gb", "CPU client+relay, 1 stream down", "s/GB", None, False, False),
    Metric("cpu_down_paired_s_per_gb", PAIRED_LABEL, "s/GB", Target("<=", 1.05, "floor-aead"),
           False, False),
    Metric("cpu_up_client_s_per_gb", "… of which the client, up", "s/GB", None, False, False),
    Metric("cpu_up_relay_s_per_gb", "… of which the relay, up", "s/GB", None, False, False),
    Metric("cpu_down_client_s_per_gb", "… of which the client, down", "s/GB", None, False, False),
    Metric("cpu_down_relay_s_per_gb", "… of which the relay, down", "s/GB", None, False, False),
    # Packets the client wrote to its TUN per GB moved: on an upload nearly all are ACKs.
    Metric("tun_writes_up_per_gb", "client TUN writes per GB, 1 stream up (ACKs)", "/GB", None, False, False,
           digits=0),
    Metric("tun_writes_down_per_gb", "client TUN writes per GB, 1 stream down", "/GB", None, False, False, digits=0),
    # Memory: absolute, from issue 6.
    Metric("idle_flow_kib", "client memory per idle TCP flow", "KiB", Target("<=", 2.0), False, False),
    Metric("rss_idle_mib", "client RSS, idle", "MiB", Target("<=", 10.0), False, False, digits=1),
    Metric("rss_udp_mib", "client RSS, peak during UDP tests", "MiB", Target("<=", 10.0), False, False, digits=1),
    Metric("rss_peak_client_mib", "client RSS, peak (UDP, iperf3)", "MiB", None, False, False, digits=1),
    Metric("rss_peak_relay_mib", "relay RSS, peak (UDP, iperf3)", "MiB", None, False, False, digits=1),
    # Not the tunnel's: what the hypervisor took from this VM while the mode ran (hoststeal.py). A
    # mode whose figure is high ran slower for it, whatever it is.
    Metric("host_steal_pct", "CPU time the host took (steal), whole run", "%", None, False, False, digits=1,
           of_the_tunnel=False),
    Metric("host_steal_paired_pct", "… median of paired iperf3 rounds", "%", None, False, False, digits=1,
           of_the_tunnel=False),
    Metric("host_steal_latency_paired_pct", "… median of paired latency rounds", "%", None, False, False, digits=1,
           of_the_tunnel=False),
]
BY_KEY = {m.key: m for m in METRICS}
SHORT = {"wireguard-go": "wg-go"}  # the table's Sluice / peer column header


def _ratio(value: float | None, other: float | None) -> float | None:
    return value / other if (value is not None and other) else None


def floors_missing(m: Metric, figures: dict[str, dict]) -> list[str]:
    """The floor modes of this run that miss Sluice's target for `m` themselves: two minimal
    forwarders in a chain, the least any tunnel of this design can do, so a target they miss lies below
    the design, not below Sluice's implementation of it. A target set by a floor's own figure is not
    judged on that floor; one set by another figure of Sluice's (four streams against one) is judged on
    each floor against that floor's own figure: four of its streams against one of them, not against
    Sluice's one."""
    if m.target is None:
        return []
    missing = []
    for f in (*floor.ALL_MODES, *(polling.FLOORS if is_latency(m) else ())):
        if f == m.target.against:
            continue
        target = dataclasses.replace(m.target, against=f) if m.target.against == "sluice" else m.target
        if target.verdict(m.key, figures.get(f, {}).get(m.key), figures) == "FAIL":
            missing.append(f)
    return missing


def is_latency(m: Metric) -> bool:
    """A one-in-flight time: what the polling modes are there to judge. Their rates are lower by design
    (the polling loop holds a CPU the load would use), so a rate target says nothing of them."""
    return m.unit == "µs"


def polled_verdict(m: Metric, figures: dict[str, dict]) -> str | None:
    """sluice-poll's verdict on Sluice's target for a latency `m`; None for other figures and where it
    has no figure (it runs only in the latency rounds)."""
    value = figures.get(polling.SLUICE, {}).get(m.key)
    if m.target is None or value is None or not is_latency(m):
        return None
    return m.target.verdict(m.key, value, figures)


def verdict_text(row: dict) -> str:
    """The table's verdict cell: 'pass', 'FAIL', or 'FAIL, floor too' where a floor of the same run
    misses the target as well; after a FAIL, '; sluice-poll passes' where Sluice with --busy-poll
    meets it."""
    if row["verdict"] != "FAIL":
        return row["verdict"]
    missed = row.get("floors_missing") or []
    text = f"FAIL, {' and '.join(missed)} too" if missed else "FAIL"
    return text + ("; sluice-poll passes" if row.get("polled_verdict") == "pass" else "")


def compare(figures: dict[str, dict], notes: dict[str, list[dict]] | None = None) -> list[dict]:
    """One JSON-ready row per metric from a run's figures (mode → key → value): Sluice's value, the
    ceiling and Sluice's % of it, each floor (value, % of ceiling), each peer (value, % of ceiling,
    Sluice / peer), the target and its threshold in this run, the verdict, the floors that miss the
    same target (floors_missing()), sluice-poll's verdict on it (polled_verdict()), and the numbers of
    the `notes` (mode → [{key, text}], numbered from 1 in mode order) that concern the row."""
    numbered = [(mode, n) for mode, ns in (notes or {}).items() for n in ns]
    sluice = figures.get("sluice", {})
    rows = []
    for m in METRICS:
        s = sluice.get(m.key)
        # A figure that is not the tunnel's (the host's steal) shows the kernel mode's own beside it, as
        # no ceiling: nothing is a percentage of it.
        c = figures.get("kernel", {}).get(m.key) if m.has_ceiling or not m.of_the_tunnel else None
        pct = lambda v: None if not m.has_ceiling or _ratio(v, c) is None else 100 * _ratio(v, c)  # noqa: E731
        rows.append({
            "key": m.key, "label": m.label, "unit": m.unit,
            "higher_is_better": m.higher_is_better, "has_ceiling": m.has_ceiling, "of_the_tunnel": m.of_the_tunnel,
            "sluice": s, "ceiling": c, "pct_of_ceiling": pct(s),
            "floors": {f: {"value": figures[f].get(m.key), "pct_of_ceiling": pct(figures[f].get(m.key))}
                       for f in FLOOR_MODES if f in figures},
            "peers": {p: {"value": figures[p].get(m.key), "pct_of_ceiling": pct(figures[p].get(m.key)),
                          "sluice_over_peer": _ratio(s, figures[p].get(m.key)) if m.of_the_tunnel else None}
                      for p in PEER_MODES if p in figures},
            "target": None if m.target is None else dataclasses.asdict(m.target),
            "target_value": None if m.target is None else m.target.threshold(m.key, figures),
            "target_text": "–" if m.target is None else m.target.text(m.key, figures, m.fmt),
            "verdict": "–" if m.target is None else m.target.verdict(m.key, s, figures),
            "floors_missing": floors_missing(m, figures),
            "polled_verdict": polled_verdict(m, figures),
            "notes": [i + 1 for i, (_, n) in enumerate(numbered) if n.get("key") == m.key],
        })
    return rows


def footnotes(notes: dict[str, list[dict]]) -> list[str]:
    """'[1] openvpn: …' lines, numbered as compare() numbers them."""
    numbered = [(mode, n) for mode, ns in notes.items() for n in ns]
    return [f"[{i + 1}] {mode}: {n['text']}" for i, (mode, n) in enumerate(numbered)]


def pct_text(pct: float | None, higher_is_better: bool) -> str:
    if pct is None:
        return "–"
    if higher_is_better:
        return f"{pct:.1f}%"
    return f"{pct / 100:,.1f}×"  # a time: "how many times the ceiling's" reads better than 45265.6%


def table(rows: list[dict]) -> str:
    """The rows as a plain-text table for stdout: a column per floor ("5.10 (58%)": % of the
    ceiling), two per peer (its figure, and "S/peer": Sluice's figure ÷ the peer's), the verdict
    (verdict_text()), and the numbers of the notes (footnotes()) that concern each row."""
    floors = sorted({f for r in rows for f in r["floors"]}, key=FLOOR_MODES.index)
    peer_modes = sorted({p for r in rows for p in r["peers"]}, key=PEER_MODES.index)
    head = ["metric", "unit", "Sluice", "ceiling", "of ceil.", *floors]
    for p in peer_modes:
        head += [p, f"S/{SHORT.get(p, p)}"]
    head += ["target", "verdict", "notes"]
    lines = [head]
    for r in rows:
        m = BY_KEY[r["key"]]
        cells = [r["label"], r["unit"], m.fmt(r["sluice"]), m.fmt(r["ceiling"]),
                 pct_text(r["pct_of_ceiling"], r["higher_is_better"])]
        for name in floors:
            f = r["floors"][name]
            cell = m.fmt(f["value"])
            if f["pct_of_ceiling"] is not None:
                cell += f" ({pct_text(f['pct_of_ceiling'], r['higher_is_better'])})"
            cells.append(cell)
        for name in peer_modes:
            p = r["peers"][name]
            ratio = p["sluice_over_peer"]
            cells += [m.fmt(p["value"]), "–" if ratio is None else f"{ratio:,.2f}×"]
        cells += [r["target_text"], verdict_text(r), ",".join(map(str, r["notes"]))]
        lines.append(cells)
    widths = [max(len(l[i]) for l in lines) for i in range(len(head))]
    right = set(range(2, len(head) - 3))
    out = []
    for n, l in enumerate(lines):
        out.append("  ".join(c.rjust(widths[i]) if i in right else c.ljust(widths[i]) for i, c in enumerate(l)).rstrip())
        if n == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)
