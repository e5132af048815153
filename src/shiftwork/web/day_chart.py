"""Charts of a day of five-minute buckets (observe/history.py), drawn as inline SVG with
axes and units: bars for counts (throughput, failures), lines for times (p50/p95 run
time, the oldest waiting job's age). Geometry only; _macros.html's ``day_chart`` draws it.

Drawn 720 wide and scaled by CSS to the page (``width: 100%``), so a chart never makes
a page scroll sideways, at 400 px or wide.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from shiftwork.observe.rollup import BUCKET
from shiftwork.observe.text import format_seconds
from shiftwork.web.chart import Tick

WIDTH, HEIGHT = 720, 170
LEFT, BOTTOM, TOP = 64, 24, 12  # room for value labels, time labels, the top label


@dataclass(frozen=True)
class Mark:
    """One bar (``h`` > 0) with its tooltip."""

    x: float
    y: float
    h: float
    label: str


@dataclass(frozen=True)
class Line:
    """One series as an SVG path (``M``/``L``; a gap where a slot has no value)."""

    name: str
    color: str
    path: str
    dots: list[tuple[float, float]]


@dataclass(frozen=True)
class DayChart:
    title: str
    unit: str  # what the values are, in words: the axis caption
    bars: list[Mark]
    lines: list[Line]
    bar_color: str
    bar_width: float
    time_ticks: list[Tick]
    value_ticks: list[Tick]
    empty: bool  # nothing to draw: the chart says so
    hover: list[Mark] = field(default_factory=list)  # a time chart's tooltips (invisible)
    width: int = WIDTH
    height: int = HEIGHT
    left: float = LEFT
    base: float = HEIGHT - BOTTOM


def _nice(peak: float) -> float:
    """The smallest 1, 2 or 5 times a power of ten at or above ``peak`` (> 0)."""
    power = 10 ** math.floor(math.log10(peak))
    for step in (1, 2, 5, 10):
        if step * power >= peak:
            return float(step * power)
    return float(10 * power)


def _axes(start: datetime, slots: int, top: float, label: object
          ) -> tuple[float, list[Tick], list[Tick]]:
    """The slot step, time ticks every six hours ("now" at the right) and value ticks."""
    step = (WIDTH - LEFT) / slots
    times = []
    for i in range(0, slots, max(slots // 4, 1)):
        times.append(Tick(round(LEFT + i * step, 2),
                          f"{start + timedelta(seconds=i * BUCKET):%H:%M}"))
    times.append(Tick(float(WIDTH - 1), "now"))
    base = HEIGHT - BOTTOM
    fmt = label if callable(label) else str
    values = [Tick(float(base), fmt(0)),
              Tick(round(base - (base - TOP) / 2, 2), fmt(top / 2)),
              Tick(float(TOP), fmt(top))]
    return step, times, values


def count_chart(title: str, values: list[int], start: datetime, color: str,
                what: str) -> DayChart:
    """Bars: ``values`` per five minutes (e.g. jobs finished)."""
    slots = len(values)
    peak = max(values, default=0)
    top = _nice(peak) if peak else 1.0
    step, times, ticks = _axes(start, slots, top, _count)
    base = HEIGHT - BOTTOM
    scale = (base - TOP) / top
    bars = []
    for i, v in enumerate(values):
        if v:
            h = round(v * scale, 2)
            at = start + timedelta(seconds=i * BUCKET)
            bars.append(Mark(round(LEFT + i * step, 2), round(base - h, 2), h,
                             f"{at:%H:%M} UTC: {v} {what}"))
    return DayChart(title, f"{what} per 5 minutes", bars, [], color,
                    round(max(step - 0.5, 0.5), 2), times, ticks, empty=not peak)


def time_chart(title: str, series: list[tuple[str, str, list[float | None]]],
               start: datetime, unit: str) -> DayChart:
    """Lines: seconds per five minutes, one per (name, color, values); a gap where None."""
    slots = len(series[0][2]) if series else 1
    peak = max((v for _, _, vs in series for v in vs if v is not None), default=0.0)
    top = _time_top(peak) if peak > 0 else 1.0
    step, times, ticks = _axes(start, slots, top, _time_label)
    base = HEIGHT - BOTTOM
    scale = (base - TOP) / top
    lines = []
    for name, color, values in series:
        runs: list[list[tuple[float, float]]] = [[]]
        for i, v in enumerate(values):
            if v is None:
                if runs[-1]:
                    runs.append([])
                continue
            runs[-1].append((round(LEFT + (i + 0.5) * step, 1),
                             round(base - min(v, top) * scale, 1)))
        path = " ".join("M" + " L".join(f"{x},{y}" for x, y in run) for run in runs if run)
        dots = [run[0] for run in runs if len(run) == 1]  # a path of one point draws nothing
        lines.append(Line(name, color, path, dots))
    # Hover areas, one a slot with a value: its time and every series' value in words.
    hover = []
    for i in range(slots):
        said = [f"{name} {format_seconds(vs[i])}" for name, _, vs in series
                if vs[i] is not None]
        if said:
            at = start + timedelta(seconds=i * BUCKET)
            hover.append(Mark(round(LEFT + i * step, 2), float(TOP), round(base - TOP, 2),
                              f"{at:%H:%M} UTC: " + ", ".join(said)))
    has_points = any(line.path for line in lines)
    return DayChart(title, unit, [], lines, "", round(step, 2), times, ticks,
                    empty=not has_points, hover=hover)


def _count(value: float) -> str:
    """A tick of a count axis, short enough for its margin: ``500``, ``20k``, ``1.5M``."""
    for unit, size in (("M", 1_000_000), ("k", 10_000)):
        if value >= size:
            return f"{round(value / (size if unit == 'M' else 1000), 1):g}" + unit
    return f"{value:g}"


#: Tops of a time axis: round numbers of milliseconds, seconds, minutes, hours, days.
_TIME_TOPS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 30,
              60, 120, 300, 600, 1200, 1800, 3600, 7200, 4 * 3600, 6 * 3600, 12 * 3600,
              86400, 2 * 86400, 4 * 86400, 7 * 86400, 14 * 86400, 28 * 86400)


def _time_top(peak: float) -> float:
    return float(next((t for t in _TIME_TOPS if t >= peak), _nice(peak)))


def _time_label(seconds: float) -> str:
    """A tick of a time axis, short: ``0``, ``250ms``, ``2.5s``, ``30m``, ``1h``, ``2d``."""
    if seconds <= 0:
        return "0"
    if seconds < 1:
        return f"{seconds * 1000:g}ms"
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{round(seconds / size, 1):g}{unit}"
    return f"{round(seconds, 1):g}s"
