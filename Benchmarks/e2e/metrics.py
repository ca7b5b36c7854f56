"""The figures the benchmark reports, their targets, and the table that compares Sluice with the ceiling.

A *figure* is one number a mode produced (`tcp1_up_gbps`: 2.1). A `Metric` says what the number is,
which way is better, the target from the throughput issue, and whether plain kernel forwarding has the
same figure (the *ceiling*: throughput and rates do; memory and CPU of the tunnel's processes do not).
Metrics without a target (the one-in-flight latencies) are there to explain the others.

The *floors* (bench.py's floor and floor-aead modes) are the same figures from two minimal forwarders in
a chain: what any proxy-style tunnel can reach here at best. They stand next to Sluice's figure, with
their own % of the ceiling, and get no verdict: the targets are Sluice's.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Metric:
    key: str
    label: str
    unit: str
    target: float | None
    higher_is_better: bool
    has_ceiling: bool
    digits: int = 2
    strict: bool = False  # the target itself fails ("lower than 3.3")
    # "four streams no worse": also at least this fraction of another figure of the same mode.
    at_least_fraction_of: tuple[str, float] | None = None

    def fmt(self, value: float | None) -> str:
        if value is None:
            return "–"
        return f"{value:,.{self.digits}f}"

    def target_text(self, figures: dict) -> str:
        if self.target is None:
            return "–"
        op = ("≥" if self.higher_is_better else "≤") if not self.strict else (">" if self.higher_is_better else "<")
        text = f"{op} {self.target:,g}"
        if self.at_least_fraction_of:
            other, frac = self.at_least_fraction_of
            ref = figures.get(other)
            text += f", ≥ {frac:.0%} of 1 stream" + (f" ({ref * frac:,.2f})" if ref is not None else "")
        return text

    def verdict(self, value: float | None, figures: dict) -> str:
        """'pass', 'FAIL' or '–' (not measured)."""
        if value is None or self.target is None:
            return "–"
        if self.higher_is_better:
            ok = value > self.target if self.strict else value >= self.target
        else:
            ok = value < self.target if self.strict else value <= self.target
        if ok and self.at_least_fraction_of:
            other, frac = self.at_least_fraction_of
            ref = figures.get(other)
            ok = ref is None or value >= ref * frac
        return "pass" if ok else "FAIL"


METRICS: list[Metric] = [
    Metric("tcp1_up_gbps", "TCP, 1 stream, up", "Gbit/s", 5.5, True, True),
    Metric("tcp1_down_gbps", "TCP, 1 stream, down", "Gbit/s", 5.5, True, True),
    Metric("tcp4_up_gbps", "TCP, 4 streams, up", "Gbit/s", 5.5, True, True,
           at_least_fraction_of=("tcp1_up_gbps", 0.95)),
    Metric("tcp4_down_gbps", "TCP, 4 streams, down", "Gbit/s", 5.5, True, True,
           at_least_fraction_of=("tcp1_down_gbps", 0.95)),
    Metric("tcp_cc_per_s", "new TCP connections", "/s", 11000, True, True, digits=0),
    Metric("udp_rr_per_s", "UDP req/resp, one socket", "/s", 48000, True, True, digits=0),
    Metric("udp_new_per_s", "UDP req/resp, new socket each", "/s", 22000, True, True, digits=0),
    Metric("idle_flow_kib", "client memory per idle TCP flow", "KiB", 2.0, False, False),
    Metric("rss_idle_mib", "client RSS, idle", "MiB", 10.0, False, False, digits=1),
    Metric("rss_udp_mib", "client RSS, peak during UDP tests", "MiB", 10.0, False, False, digits=1),
    Metric("cpu_up_s_per_gb", "CPU client+relay, 1 stream up", "s/GB", 3.3, False, False, strict=True),
    Metric("cpu_down_s_per_gb", "CPU client+relay, 1 stream down", "s/GB", 3.3, False, False, strict=True),
    Metric("tcp_cc_latency_us", "new TCP connection, 1 in flight", "µs", None, False, True, digits=0),
    Metric("udp_rr_latency_us", "UDP round trip, 1 in flight", "µs", None, False, True, digits=0),
    Metric("udp_new_latency_us", "UDP new socket + round trip, 1 in flight", "µs", None, False, True, digits=0),
]


def _pct(value: float | None, ceiling: float | None) -> float | None:
    return (100.0 * value / ceiling) if (value is not None and ceiling) else None


def compare(sluice: dict, ceiling: dict, floors: dict[str, dict] | None = None) -> list[dict]:
    """One row per metric: values, % of ceiling, target and verdict (JSON-ready). `floors` maps a floor
    mode ("floor", "floor-aead") to its figures; each adds `floors[mode] = {value, pct_of_ceiling}`."""
    rows = []
    for m in METRICS:
        s = sluice.get(m.key)
        c = ceiling.get(m.key) if m.has_ceiling else None
        rows.append({
            "key": m.key, "label": m.label, "unit": m.unit,
            "sluice": s, "ceiling": c,
            "pct_of_ceiling": _pct(s, c),
            "floors": {name: {"value": f.get(m.key), "pct_of_ceiling": _pct(f.get(m.key), c)}
                       for name, f in (floors or {}).items()},
            "target": m.target, "target_text": m.target_text(sluice),
            "higher_is_better": m.higher_is_better, "has_ceiling": m.has_ceiling,
            "verdict": m.verdict(s, sluice),
        })
    return rows


def pct_text(pct: float | None, higher_is_better: bool) -> str:
    if pct is None:
        return "–"
    if higher_is_better:
        return f"{pct:.1f}%"
    return f"{pct / 100:,.1f}×"  # a time: "how many times the ceiling's" reads better than 45265.6%


def table(rows: list[dict], floors: list[str] | None = None) -> str:
    """The rows as a plain-text table for stdout; one column per floor mode that ran ("5.10 (58%)")."""
    by_key = {m.key: m for m in METRICS}
    floors = floors or []
    head = ["metric", "unit", "Sluice", "ceiling", "of ceil.", *floors, "target", "verdict"]
    lines = [head]
    for r in rows:
        m = by_key[r["key"]]
        cells = []
        for name in floors:
            f = r["floors"].get(name, {})
            cell = m.fmt(f.get("value"))
            if f.get("pct_of_ceiling") is not None:
                cell += f" ({pct_text(f['pct_of_ceiling'], r['higher_is_better'])})"
            cells.append(cell)
        lines.append([r["label"], r["unit"], m.fmt(r["sluice"]), m.fmt(r["ceiling"]),
                      pct_text(r["pct_of_ceiling"], r["higher_is_better"]), *cells, r["target_text"], r["verdict"]])
    widths = [max(len(l[i]) for l in lines) for i in range(len(head))]
    right = set(range(2, 5 + len(floors)))
    out = []
    for n, l in enumerate(lines):
        out.append("  ".join(c.rjust(widths[i]) if i in right else c.ljust(widths[i]) for i, c in enumerate(l)).rstrip())
        if n == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)
