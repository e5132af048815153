"""The soak run drawn as an SVG (written by hand: the benchmarks depend on no plotting
library): stacked panels sharing the time axis, the long transaction's span shaded, and
a band of the health status under them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

WIDTH, LEFT, RIGHT = 820, 70, 140
PANEL_H, GAP, TOP = 120, 34, 40
COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"]
STATUS = {"ok": "#4caf50", "warning": "#ff9800", "unhealthy": "#d32f2f"}


@dataclass
class Panel:
    title: str
    series: list[tuple[str, list[float | None]]]  # legend label, one value per sample


def _nice_max(value: float) -> float:
    if value <= 0:
        return 1.0
    step = 10.0 ** (len(str(int(value))) - 1)
    for m in (1, 2, 2.5, 5, 10):
        if value <= m * step:
            return m * step
    return 10 * step


def _number(v: float) -> str:
    if v >= 1_000_000:
        return f"{v / 1_000_000:g}M"
    if v >= 1_000:
        return f"{v / 1_000:g}k"
    return f"{v:g}"


def render(title: str, times: Sequence[float], panels: list[Panel],
           hold: tuple[float, float], statuses: Sequence[str]) -> str:
    """``times``: elapsed seconds of each sample; ``hold``: the transaction's start and end
    (elapsed seconds); ``statuses``: ``shiftwork health``'s status at each sample."""
    plot_w = WIDTH - LEFT - RIGHT
    t_end = max(max(times, default=1.0), hold[1], 1.0)

    def x(t: float) -> float:
        return LEFT + plot_w * t / t_end

    height = TOP + len(panels) * (PANEL_H + GAP) + 60
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
           f'font-family="sans-serif" font-size="11">',
           f'<rect width="{WIDTH}" height="{height}" fill="white"/>',
           f'<text x="{LEFT}" y="22" font-size="14" font-weight="bold">{escape(title)}</text>']
    for i, panel in enumerate(panels):
        y0 = TOP + i * (PANEL_H + GAP) + 14
        values = [v for _, s in panel.series for v in s if v is not None]
        top = _nice_max(max(values, default=0.0))

        def y(v: float, y0: float = y0, top: float = top) -> float:
            return y0 + PANEL_H - PANEL_H * min(v, top) / top

        out.append(f'<text x="{LEFT}" y="{y0 - 4}" font-weight="bold">'
                   f'{escape(panel.title)}</text>')
        out.append(f'<rect x="{x(hold[0]):.1f}" y="{y0}" width="{x(hold[1]) - x(hold[0]):.1f}" '
                   f'height="{PANEL_H}" fill="#eeeeee"/>')
        out.append(f'<rect x="{LEFT}" y="{y0}" width="{plot_w}" height="{PANEL_H}" '
                   'fill="none" stroke="#999"/>')
        for frac in (0.0, 0.5, 1.0):
            out.append(f'<text x="{LEFT - 6}" y="{y(top * frac) + 4:.1f}" '
                       f'text-anchor="end">{_number(top * frac)}</text>')
        for k, (label, series) in enumerate(panel.series):
            colour = COLOURS[k % len(COLOURS)]
            points = " ".join(f"{x(t):.1f},{y(v):.1f}" for t, v in zip(times, series, strict=True)
                              if v is not None)
            if points:
                out.append(f'<polyline points="{points}" fill="none" stroke="{colour}" '
                           'stroke-width="1.5"/>')
            out.append(f'<text x="{WIDTH - RIGHT + 8}" y="{y0 + 14 + 14 * k}" '
                       f'fill="{colour}">{escape(label)}</text>')
    band = TOP + len(panels) * (PANEL_H + GAP) + 4
    out.append(f'<text x="{LEFT}" y="{band - 4}" font-weight="bold">shiftwork health</text>')
    previous = 0.0
    for t, status in zip(times, statuses, strict=True):
        out.append(f'<rect x="{x(previous):.1f}" y="{band}" width="{x(t) - x(previous):.1f}" '
                   f'height="12" fill="{STATUS.get(status, "#9e9e9e")}"/>')
        previous = t
    for k, (status, colour) in enumerate(STATUS.items()):
        out.append(f'<text x="{WIDTH - RIGHT + 8}" y="{band + 10 + 13 * k}" '
                   f'fill="{colour}">{status}</text>')
    axis = band + 30
    step = 60 if t_end <= 900 else 300
    t = 0.0
    while t <= t_end + 1e-6:
        out.append(f'<text x="{x(t):.1f}" y="{axis}" text-anchor="middle">'
                   f'{int(t // 60)} min</text>')
        t += step
    out.append(f'<text x="{x(hold[0]):.1f}" y="{axis + 14}" fill="#555">'
               'long transaction held (shaded)</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"
