"""The benchmark's chart, as a hand-written SVG (no plotting library).

Upper panels — figures that plain kernel forwarding also has, each as % of it (the ceiling): throughput
and rates (higher is better), then the one-in-flight latencies (lower is better). Per metric a grey bar
for the ceiling (100 %), thin bars for the floors (blue; floor-aead-64k darkest), the polling modes (teal: floor-poll, light
green: sluice-poll; latency rows only) and peers (orange: wireguard-go, purple: openvpn, labelled with
Sluice / peer), then Sluice's bar, green when its target is met, red when not;
the dashed tick is the target's value in this run, as % of the ceiling. Bars past the scale's end are
cut and say their value.
Lower panel — figures only a tunnel has (CPU per GB, memory; lower is better): each row scaled to its
own largest value, every mode that has the figure as a bar, the dashed tick at the target.
"""

from __future__ import annotations

from xml.sax.saxutils import escape

W = 1200  # room right of the bars for the peers' labels
LABEL_W = 250
BAR_X = LABEL_W + 10
BAR_W = 520
ROW_H = 40
THIN = 9  # a floor's or peer's bar; a row grows by THIN + 2 for each
GREEN, RED, GREY, INK, MUTED = "#2e8b57", "#c0392b", "#c8c8c8", "#222", "#666"
NEUTRAL = "#555"  # Sluice's bar where the figure has no target
COLORS = {"floor": "#9cbbe0", "floor-aead": "#3d6da8", "floor-aead-64k": "#1f3a5f",
          "floor-poll": "#5bb8c4", "sluice-poll": "#9acd7a", "wireguard-go": "#e08a2c", "openvpn": "#8e5ea2",
          "sluice-socks": "#5f9e6e"}  # one per mode of measure.MODES but kernel (the ceiling) and sluice
MAX_PCT = 400.0  # the % panels end here at most: a peer at 15× the ceiling's latency must not flatten the rest


def _t(x: float, y: float, text: str, size: int = 12, anchor: str = "start", fill: str = INK,
       weight: str = "normal", halo: bool = False) -> str:
    """A text element; `halo` draws a white outline under it, so a label stays legible over a tick."""
    extra = ' stroke="white" stroke-width="3" paint-order="stroke"' if halo else ""
    return (f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" fill="{fill}" '
            f'font-weight="{weight}"{extra}>{escape(text)}</text>')


def _label(end: float, y: float, text: str, size: int, fill: str = INK) -> str:
    """A bar's label just past its end, or pulled left over the bar (white halo) where it would leave
    the picture; the width is estimated (DejaVu Sans averages ~0.55 em per character)."""
    x = min(end + 4, W - 10 - 0.55 * size * len(text))
    return _t(x, y, text, size, fill=fill, halo=True)


def _rect(x: float, y: float, w: float, h: float, fill: str) -> str:
    return f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(w, 1):.1f}" height="{h}" fill="{fill}"/>'


def _tick(x: float, y0: float, y1: float) -> str:
    return (f'<line x1="{x:.1f}" y1="{y0:.1f}" x2="{x:.1f}" y2="{y1:.1f}" stroke="{INK}" stroke-width="1.5" '
            f'stroke-dasharray="3,2"/>')


def _fmt(v: float, unit: str) -> str:
    if unit == "/s":
        return f"{v:,.0f}{unit}"
    if unit == "µs":
        return f"{v:,.0f} {unit}"
    return f"{v:,.2f} {unit}"


def _scale_max(values: list[float]) -> float:
    top = min(max([100.0, *values]), MAX_PCT)
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


def _others(r: dict) -> list[tuple[str, dict]]:
    """(mode, {value, pct_of_ceiling, sluice_over_peer?}) for each floor and peer with a figure in the
    row, in order (the polling modes have figures only in the latency rows: no empty slot elsewhere)."""
    return [(n, o) for n, o in (*r.get("floors", {}).items(), *r.get("peers", {}).items()) if o["value"] is not None]


def _other_label(name: str, o: dict, unit: str, pct: float | None) -> str:
    text = f"{name} {_fmt(o['value'], unit)}" + (f" ({pct:.1f}%)" if pct is not None else "")
    if o.get("sluice_over_peer") is not None:
        text += f" · Sluice / {name} {o['sluice_over_peer']:,.2f}×"
    return text


def _pct_panel(rows: list[dict], title: str, axis: str, y: float) -> tuple[list[str], float]:
    """Rows with a ceiling, each bar as % of it."""
    parts = [_t(20, y, title, 13, weight="bold")]
    y += 12
    vals = [r["pct_of_ceiling"] for r in rows if r["pct_of_ceiling"] is not None]
    vals += [o["pct_of_ceiling"] for r in rows for _, o in _others(r) if o["pct_of_ceiling"] is not None]
    vals += [100 * r["target_value"] / r["ceiling"] for r in rows if r["ceiling"] and r["target_value"] is not None]
    top = _scale_max(vals)
    scale = lambda p: BAR_W * min(p, top) / top  # noqa: E731
    heights = [ROW_H + (THIN + 2) * len(_others(r)) for r in rows]
    parts += _axis(y, y + sum(heights), top, axis)
    for r, row_h in zip(rows, heights):
        cy = y + 6
        parts.append(_t(LABEL_W, cy + 14, r["label"], 12, "end"))
        if r["ceiling"]:
            if r["target_value"] is not None:
                parts.append(_tick(BAR_X + scale(100 * r["target_value"] / r["ceiling"]), cy - 2, cy + row_h - 12))
            parts.append(_rect(BAR_X, cy, scale(100), 9, GREY))
            parts.append(_t(BAR_X + scale(100) + 4, cy + 8, f"ceiling {_fmt(r['ceiling'], r['unit'])}", 9, fill=MUTED))
        cy += 11
        for name, o in _others(r):
            if o["pct_of_ceiling"] is not None:
                w = scale(o["pct_of_ceiling"])
                parts.append(_rect(BAR_X, cy, w, THIN, COLORS[name]))
                parts.append(_label(BAR_X + w, cy + 8, _other_label(name, o, r["unit"], o["pct_of_ceiling"]), 9, MUTED))
            cy += THIN + 2
        if r["pct_of_ceiling"] is not None:
            w = scale(r["pct_of_ceiling"])
            parts.append(_rect(BAR_X, cy, w, 14, GREEN if r["verdict"] == "pass" else RED))
            parts.append(_label(BAR_X + w, cy + 11, f"Sluice {_fmt(r['sluice'], r['unit'])} ({r['pct_of_ceiling']:.1f}%)",
                                11))
        else:
            parts.append(_t(BAR_X + 4, cy + 11, "Sluice: not measured" if r["sluice"] is None
                            else f"Sluice {_fmt(r['sluice'], r['unit'])}", 11, fill=RED))
        y += row_h
    return parts, y + 50


def _own_scale_panel(rows: list[dict], y: float) -> tuple[list[str], float]:
    """Rows without a ceiling: every mode's bar, the row scaled to its largest value, tick at the target."""
    parts = [_t(20, y, "Tunnel processes only: CPU per GB and memory (lower is better; each row scaled to its "
                       "largest value; tick = target)", 13, weight="bold")]
    y += 14
    for r in rows:
        bars = [(n, o["value"]) for n, o in _others(r)]
        bars.append(("Sluice", r["sluice"]))
        top = max([v for _, v in bars if v is not None] + [r["target_value"] or 0]) or 1.0
        row_h = 8 + (THIN + 2) * (len(bars) - 1) + 18 + 8
        cy = y + 4
        parts.append(_t(LABEL_W, cy + 12, r["label"], 12, "end"))
        if r["target_value"] is not None:
            parts.append(_tick(BAR_X + BAR_W * r["target_value"] / top, cy - 2, y + row_h - 4))
        for name, v in bars:
            if name == "Sluice":
                if v is None:
                    parts.append(_t(BAR_X + 4, cy + 13, "Sluice: not measured", 11, fill=RED))
                else:
                    color = GREEN if r["verdict"] == "pass" else RED if r["verdict"] == "FAIL" else NEUTRAL
                    parts.append(_rect(BAR_X, cy, BAR_W * v / top, 16, color))
                    text = f"Sluice {_fmt(v, r['unit'])}" + (f" (target {r['target_text']})"
                                                              if r["target_value"] is not None else "")
                    parts.append(_label(BAR_X + BAR_W * v / top, cy + 12, text, 11))
            else:
                o = dict(_others(r))[name]
                parts.append(_rect(BAR_X, cy, BAR_W * v / top, THIN, COLORS[name]))
                parts.append(_label(BAR_X + BAR_W * v / top, cy + 8, _other_label(name, o, r["unit"], None), 9, MUTED))
                cy += THIN + 2
        y += row_h
    return parts, y + 30


def render(rows: list[dict], title: str, subtitle: str) -> str:
    """rows: metrics.compare() output."""
    modes = [n for n in COLORS if any(n in r.get("floors", {}) or n in r.get("peers", {}) for r in rows)]
    parts: list[str] = []
    y = 30.0
    parts.append(_t(20, y, title, 16, weight="bold"))
    y += 18
    parts.append(_t(20, y, subtitle, 11, fill=MUTED))
    y += 16
    parts.append(_t(20, y, "Sluice's bar is green when it meets its target (the dashed tick, a ratio to this run's "
                           "ceiling, floor or peer), red when not.", 11, fill=MUTED))
    if modes:
        y += 16
        x = 20.0
        for n in modes:
            parts.append(_rect(x, y - 8, 14, 9, COLORS[n]))
            parts.append(_t(x + 18, y, n, 11, fill=MUTED))
            x += 30 + 7 * len(n)
        y += 15  # the legend of eight modes leaves no room on its line
        parts.append(_t(20, y, "floors: two minimal C forwarders in a chain · -64k: 64 KiB a read or write at most, as "
                               "through a TUN device (paired rounds only) · -poll: the loops poll before they sleep "
                               "(latency rounds only)", 11, fill=MUTED))
        y += 15
        parts.append(_t(20, y, "peers: what a user would install instead", 11, fill=MUTED))
    y += 30
    with_ceiling = [r for r in rows if r["has_ceiling"]]
    for higher, title, axis in ((True, "Throughput and rates as % of plain kernel forwarding (grey = ceiling)",
                                 "% of ceiling (higher is better)"),
                                (False, "Latency, 1 in flight, as % of plain kernel forwarding's (grey = ceiling)",
                                 "% of ceiling's latency (lower is better)")):
        panel = [r for r in with_ceiling if r["higher_is_better"] == higher]
        if panel:
            more, y = _pct_panel(panel, title, axis, y)
            parts += more
    # The host's steal is the table's and the JSON's, not a bar beside the tunnel's processes.
    own = [r for r in rows if not r["has_ceiling"] and r.get("of_the_tunnel", True) and (r["sluice"] is not None or _others(r))]
    if own:
        more, y = _own_scale_panel(own, y)
        parts += more
    h = int(y)
    head = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{h}" viewBox="0 0 {W} {h}" '
            f'font-family="DejaVu Sans, Helvetica, Arial, sans-serif">')
    return "\n".join([head, f'<rect width="{W}" height="{h}" fill="white"/>', *parts, "</svg>", ""])
