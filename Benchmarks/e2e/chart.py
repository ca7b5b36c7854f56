"""The benchmark's chart, as a hand-written SVG (no plotting library).

Top panel — figures that plain kernel forwarding also has: per metric a grey bar for the ceiling (100 %)
and a coloured bar for Sluice as % of it; the dashed tick is the target, also as % of the ceiling.
Bottom panel — figures only the tunnel has (memory, CPU; lower is better): Sluice as % of its target,
with the target at 100 %. Green bars meet their target, red ones do not.
"""

from __future__ import annotations

from xml.sax.saxutils import escape

W = 960
LABEL_W = 250
BAR_X = LABEL_W + 10
BAR_W = 560
ROW_H = 40
GREEN, RED, GREY, INK, MUTED = "#2e8b57", "#c0392b", "#c8c8c8", "#222", "#666"


def _t(x: float, y: float, text: str, size: int = 12, anchor: str = "start", fill: str = INK,
       weight: str = "normal", halo: bool = False) -> str:
    """A text element; `halo` draws a white outline under it, so a label stays legible over a tick."""
    extra = ' stroke="white" stroke-width="3" paint-order="stroke"' if halo else ""
    return (f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" fill="{fill}" '
            f'font-weight="{weight}"{extra}>{escape(text)}</text>')


def _fmt(v: float, unit: str) -> str:
    if unit in ("/s",):
        return f"{v:,.0f}{unit}"
    return f"{v:,.2f} {unit}"


def _scale_max(values: list[float]) -> float:
    top = max([100.0, *values])
    return float(int((top + 24.999) // 25) * 25)


def _axis(y0: float, y1: float, top: float, label: str) -> list[str]:
    out = []
    step = 25 if top <= 200 else 50 if top <= 400 else 100
    v = 0
    while v <= top + 1e-9:
        x = BAR_X + BAR_W * v / top
        out.append(f'<line x1="{x:.1f}" y1="{y0:.1f}" x2="{x:.1f}" y2="{y1:.1f}" stroke="#e4e4e4"/>')
        out.append(_t(x, y1 + 14, f"{v:g}%", 10, "middle", MUTED))
        v += step
    out.append(_t(BAR_X + BAR_W / 2, y1 + 28, label, 11, "middle", MUTED))
    return out


def render(rows: list[dict], title: str, subtitle: str) -> str:
    """rows: metrics.compare() output."""
    rows = [r for r in rows if r["target"] is not None]  # the latencies explain; they have no target
    top_rows = [r for r in rows if r["has_ceiling"]]
    bottom_rows = [r for r in rows if not r["has_ceiling"]]
    parts: list[str] = []
    y = 30.0
    parts.append(_t(20, y, title, 16, weight="bold"))
    y += 18
    parts.append(_t(20, y, subtitle, 11, fill=MUTED))
    y += 16
    parts.append(_t(20, y, "Green bars meet their target, red ones miss it.", 11, fill=MUTED))
    y += 26

    # Top panel: % of the kernel-forwarding ceiling.
    parts.append(_t(20, y, "Sluice as % of plain kernel forwarding (grey = ceiling, tick = target)", 13,
                    weight="bold"))
    y += 12
    pcts = [r["pct_of_ceiling"] for r in top_rows if r["pct_of_ceiling"] is not None]
    tgt = [100 * r["target"] / r["ceiling"] for r in top_rows if r["ceiling"]]
    top = _scale_max(pcts + tgt)
    y0 = y
    parts += _axis(y0, y0 + ROW_H * len(top_rows), top, "% of ceiling")
    for r in top_rows:
        cy = y + 6
        parts.append(_t(LABEL_W, cy + 14, r["label"], 12, "end"))
        if r["ceiling"]:
            tx = BAR_X + BAR_W * min(100 * r["target"] / r["ceiling"], top) / top
            parts.append(f'<line x1="{tx:.1f}" y1="{cy - 2:.1f}" x2="{tx:.1f}" y2="{cy + 28:.1f}" stroke="{INK}" '
                         f'stroke-width="1.5" stroke-dasharray="3,2"/>')  # under the bars and labels
            parts.append(f'<rect x="{BAR_X}" y="{cy:.1f}" width="{BAR_W * 100 / top:.1f}" height="9" fill="{GREY}"/>')
            parts.append(_t(BAR_X + BAR_W * 100 / top + 4, cy + 8, f"ceiling {_fmt(r['ceiling'], r['unit'])}", 9,
                            fill=MUTED))
        if r["pct_of_ceiling"] is not None:
            w = BAR_W * r["pct_of_ceiling"] / top
            color = GREEN if r["verdict"] == "pass" else RED
            parts.append(f'<rect x="{BAR_X}" y="{cy + 11:.1f}" width="{max(w, 1):.1f}" height="14" fill="{color}"/>')
            parts.append(_t(BAR_X + max(w, 1) + 4, cy + 22,
                            f"{_fmt(r['sluice'], r['unit'])} ({r['pct_of_ceiling']:.1f}%)", 11, halo=True))
        else:
            parts.append(_t(BAR_X + 4, cy + 22, "not measured" if r["sluice"] is None else _fmt(r["sluice"], r["unit"]),
                            11, fill=RED))
        y += ROW_H
    y += 50

    # Bottom panel: % of target, lower is better.
    if bottom_rows:
        parts.append(_t(20, y, "Tunnel-only figures as % of their target (lower is better; line = target)", 13,
                        weight="bold"))
        y += 12
        vals = [100 * r["sluice"] / r["target"] for r in bottom_rows if r["sluice"] is not None]
        top = _scale_max(vals)
        y0 = y
        parts += _axis(y0, y0 + ROW_H * len(bottom_rows), top, "% of target")
        tx = BAR_X + BAR_W * 100 / top
        parts.append(f'<line x1="{tx:.1f}" y1="{y0:.1f}" x2="{tx:.1f}" y2="{y0 + ROW_H * len(bottom_rows):.1f}" '
                     f'stroke="{INK}" stroke-width="1.5" stroke-dasharray="3,2"/>')
        for r in bottom_rows:
            cy = y + 8
            parts.append(_t(LABEL_W, cy + 13, r["label"], 12, "end"))
            if r["sluice"] is None:
                parts.append(_t(BAR_X + 4, cy + 13, "not measured", 11, fill=RED))
            else:
                pct = 100 * r["sluice"] / r["target"]
                w = BAR_W * min(pct, top) / top
                color = GREEN if r["verdict"] == "pass" else RED
                parts.append(f'<rect x="{BAR_X}" y="{cy:.1f}" width="{max(w, 1):.1f}" height="18" fill="{color}"/>')
                parts.append(_t(BAR_X + max(w, 1) + 4, cy + 13,
                                f"{_fmt(r['sluice'], r['unit'])} (target {r['target_text']})", 11, halo=True))
            y += ROW_H
        y += 40

    h = int(y)
    head = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{h}" viewBox="0 0 {W} {h}" '
            f'font-family="DejaVu Sans, Helvetica, Arial, sans-serif">')
    return "\n".join([head, f'<rect width="{W}" height="{h}" fill="white"/>', *parts, "</svg>", ""])
