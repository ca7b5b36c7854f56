"""The benchmark's chart, as a hand-written SVG (no plotting library).

Top panel — figures that plain kernel forwarding also has: per metric a grey bar for the ceiling (100 %)
and a coloured bar for Sluice as % of it; the dashed tick is the target, also as % of the ceiling.
Bottom panel — figures only the tunnel has (memory, CPU; lower is better): Sluice as % of its target,
with the target at 100 %. Green bars meet their target, red ones do not.
When the floor modes ran, thin blue bars between the grey and the coloured one show them (light: floor,
dark: floor-aead), in both panels: what any proxy-style tunnel reaches here at best.
"""

from __future__ import annotations

from typing import Callable
from xml.sax.saxutils import escape

W = 960
LABEL_W = 250
BAR_X = LABEL_W + 10
BAR_W = 560
ROW_H = 40
GREEN, RED, GREY, INK, MUTED = "#2e8b57", "#c0392b", "#c8c8c8", "#222", "#666"
FLOOR_COLORS = {"floor": "#9cbbe0", "floor-aead": "#3d6da8"}
FLOOR_H = 9  # each floor bar's height; a row grows by FLOOR_H + 2 per floor mode


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


def _floor_bars(r: dict, floors: list[str], x0: float, y: float, scale: Callable[[float], float],
                pct_of: Callable[[dict], float | None]) -> list[str]:
    """One thin bar per floor mode from y down, each labelled with its value and percentage."""
    out = []
    for name in floors:
        f = r["floors"].get(name, {})
        pct = pct_of(f)
        if f.get("value") is not None and pct is not None:
            w = max(scale(pct), 1)
            out.append(f'<rect x="{x0}" y="{y:.1f}" width="{w:.1f}" height="{FLOOR_H}" fill="{FLOOR_COLORS[name]}"/>')
            out.append(_t(x0 + w + 4, y + 8, f"{name} {_fmt(f['value'], r['unit'])} ({pct:.1f}%)", 9, fill=MUTED,
                          halo=True))
        y += FLOOR_H + 2
    return out


def render(rows: list[dict], title: str, subtitle: str) -> str:
    """rows: metrics.compare() output."""
    rows = [r for r in rows if r["target"] is not None]  # the latencies explain; they have no target
    top_rows = [r for r in rows if r["has_ceiling"]]
    bottom_rows = [r for r in rows if not r["has_ceiling"]]
    floors = [n for n in FLOOR_COLORS if any(n in r.get("floors", {}) for r in rows)]
    fh = (FLOOR_H + 2) * len(floors)  # the extra height of a row
    parts: list[str] = []
    y = 30.0
    parts.append(_t(20, y, title, 16, weight="bold"))
    y += 18
    parts.append(_t(20, y, subtitle, 11, fill=MUTED))
    y += 16
    parts.append(_t(20, y, "Green bars meet their target, red ones miss it.", 11, fill=MUTED))
    if floors:
        y += 16
        parts.append(_t(20, y, "Blue bars: the floor of any proxy-style tunnel here — two minimal C forwarders in a "
                        "chain (light: copying; dark: sealing ChaCha20-Poly1305 records).", 11, fill=MUTED))
    y += 26

    # Top panel: % of the kernel-forwarding ceiling.
    parts.append(_t(20, y, "Sluice as % of plain kernel forwarding (grey = ceiling, tick = target)", 13,
                    weight="bold"))
    y += 12
    pcts = [r["pct_of_ceiling"] for r in top_rows if r["pct_of_ceiling"] is not None]
    tgt = [100 * r["target"] / r["ceiling"] for r in top_rows if r["ceiling"]]
    pcts += [f["pct_of_ceiling"] for r in top_rows for f in r.get("floors", {}).values()
             if f.get("pct_of_ceiling") is not None]
    top = _scale_max(pcts + tgt)
    y0 = y
    parts += _axis(y0, y0 + (ROW_H + fh) * len(top_rows), top, "% of ceiling")
    for r in top_rows:
        cy = y + 6
        parts.append(_t(LABEL_W, cy + 14, r["label"], 12, "end"))
        if r["ceiling"]:
            tx = BAR_X + BAR_W * min(100 * r["target"] / r["ceiling"], top) / top
            parts.append(f'<line x1="{tx:.1f}" y1="{cy - 2:.1f}" x2="{tx:.1f}" y2="{cy + 28 + fh:.1f}" stroke="{INK}" '
                         f'stroke-width="1.5" stroke-dasharray="3,2"/>')  # under the bars and labels
            parts.append(f'<rect x="{BAR_X}" y="{cy:.1f}" width="{BAR_W * 100 / top:.1f}" height="9" fill="{GREY}"/>')
            parts.append(_t(BAR_X + BAR_W * 100 / top + 4, cy + 8, f"ceiling {_fmt(r['ceiling'], r['unit'])}", 9,
                            fill=MUTED))
        parts += _floor_bars(r, floors, BAR_X, cy + 11, lambda p: BAR_W * min(p, top) / top,
                             lambda f: f.get("pct_of_ceiling"))
        cy += fh
        if r["pct_of_ceiling"] is not None:
            w = BAR_W * r["pct_of_ceiling"] / top
            color = GREEN if r["verdict"] == "pass" else RED
            parts.append(f'<rect x="{BAR_X}" y="{cy + 11:.1f}" width="{max(w, 1):.1f}" height="14" fill="{color}"/>')
            parts.append(_t(BAR_X + max(w, 1) + 4, cy + 22,
                            f"{_fmt(r['sluice'], r['unit'])} ({r['pct_of_ceiling']:.1f}%)", 11, halo=True))
        else:
            parts.append(_t(BAR_X + 4, cy + 22, "not measured" if r["sluice"] is None else _fmt(r["sluice"], r["unit"]),
                            11, fill=RED))
        y += ROW_H + fh
    y += 50

    # Bottom panel: % of target, lower is better.
    if bottom_rows:
        parts.append(_t(20, y, "Tunnel-only figures as % of their target (lower is better; line = target)", 13,
                        weight="bold"))
        y += 12
        vals = [100 * r["sluice"] / r["target"] for r in bottom_rows if r["sluice"] is not None]
        vals += [100 * f["value"] / r["target"] for r in bottom_rows for f in r.get("floors", {}).values()
                 if f.get("value") is not None]
        top = _scale_max(vals)
        heights = [ROW_H + (fh if any(f.get("value") is not None for f in r.get("floors", {}).values()) else 0)
                   for r in bottom_rows]
        y0 = y
        parts += _axis(y0, y0 + sum(heights), top, "% of target")
        tx = BAR_X + BAR_W * 100 / top
        parts.append(f'<line x1="{tx:.1f}" y1="{y0:.1f}" x2="{tx:.1f}" y2="{y0 + sum(heights):.1f}" '
                     f'stroke="{INK}" stroke-width="1.5" stroke-dasharray="3,2"/>')
        for r, row_h in zip(bottom_rows, heights):
            cy = y + 8
            parts.append(_t(LABEL_W, cy + 13, r["label"], 12, "end"))
            if row_h > ROW_H:
                parts += _floor_bars(r, floors, BAR_X, cy, lambda p: BAR_W * min(p, top) / top,
                                     lambda f, t=r["target"]: None if f.get("value") is None else 100 * f["value"] / t)
                cy += fh
            if r["sluice"] is None:
                parts.append(_t(BAR_X + 4, cy + 13, "not measured", 11, fill=RED))
            else:
                pct = 100 * r["sluice"] / r["target"]
                w = BAR_W * min(pct, top) / top
                color = GREEN if r["verdict"] == "pass" else RED
                parts.append(f'<rect x="{BAR_X}" y="{cy:.1f}" width="{max(w, 1):.1f}" height="18" fill="{color}"/>')
                parts.append(_t(BAR_X + max(w, 1) + 4, cy + 13,
                                f"{_fmt(r['sluice'], r['unit'])} (target {r['target_text']})", 11, halo=True))
            y += row_h
        y += 40

    h = int(y)
    head = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{h}" viewBox="0 0 {W} {h}" '
            f'font-family="DejaVu Sans, Helvetica, Arial, sans-serif">')
    return "\n".join([head, f'<rect width="{W}" height="{h}" fill="white"/>', *parts, "</svg>", ""])
