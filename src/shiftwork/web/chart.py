"""Bar charts of finished jobs per minute over the last hour, drawn as inline SVG.

The overview's big chart has axes: time along the bottom (every 15 minutes, the whole
hour, so a quiet start of the hour shows as empty space, not as bars crowded at the
right edge) and counts up the left side (0 and the peak). Per-queue charts are
sparklines with the same bars and no axes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from shiftwork.model.records import QueueMinute

MINUTES = 60
LEFT = 44  # room for the count labels (axes only)
BOTTOM = 24  # room for the time labels (axes only)


@dataclass(frozen=True)
class Bar:
    x: float
    ok_y: float
    ok_h: float
    bad_y: float
    bad_h: float
    label: str


@dataclass(frozen=True)
class Tick:
    """A labelled position on an axis (SVG coordinates)."""

    at: float
    label: str


@dataclass(frozen=True)
class Chart:
    width: int
    height: int
    bars: list[Bar]
    peak: int
    total: int
    failed: int
    bar_width: float = 0.0
    #: The plot area inside the axes: left edge, bottom edge (SVG coordinates).
    left: float = 0.0
    base: float = 0.0
    time_ticks: list[Tick] = field(default_factory=list)
    count_ticks: list[Tick] = field(default_factory=list)

    @property
    def axes(self) -> bool:
        return bool(self.time_ticks)


def minute_chart(rows: list[QueueMinute], now: datetime, width: int = 240,
                 height: int = 40, axes: bool = False) -> Chart:
    """Bars for the last hour, oldest left: succeeded (and cancelled) over failed."""
    start = now.replace(second=0, microsecond=0) - timedelta(minutes=MINUTES - 1)
    ok = [0] * MINUTES
    bad = [0] * MINUTES
    for r in rows:
        i = int((r.minute - start).total_seconds() // 60)
        if 0 <= i < MINUTES:
            ok[i] += r.succeeded + r.cancelled
            bad[i] += r.dead + r.retried
    peak = max((a + b for a, b in zip(ok, bad, strict=True)), default=0)
    left, base = (LEFT, height - BOTTOM) if axes else (0, height)
    step = (width - left) / MINUTES
    top = 12 if axes else 2  # head room: the peak's label sits at the top
    scale = (base - top) / peak if peak else 0.0
    bars = []
    for i in range(MINUTES):
        ok_h, bad_h = ok[i] * scale, bad[i] * scale
        minute = start + timedelta(minutes=i)
        bars.append(Bar(x=round(left + i * step, 2), ok_y=round(base - ok_h, 2),
                        ok_h=round(ok_h, 2), bad_y=round(base - ok_h - bad_h, 2),
                        bad_h=round(bad_h, 2),
                        label=f"{minute:%H:%M} UTC: {ok[i]} done, {bad[i]} failed"))
    chart = Chart(width, height, bars, peak, sum(ok), sum(bad), round(max(step - 1, 1), 2),
                  left, base)
    if not axes:
        return chart
    times = [Tick(round(left + i * step, 2), f"{start + timedelta(minutes=i):%H:%M}")
             for i in (0, 15, 30, 45)] + [Tick(round(width - 1, 2), "now")]
    counts = [Tick(base, "0")] + ([Tick(round(base - peak * scale, 2), str(peak))]
                                  if peak else [])
    return Chart(width, height, bars, peak, sum(ok), sum(bad), chart.bar_width, left, base,
                 times, counts)
