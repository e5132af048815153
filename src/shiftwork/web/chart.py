"""A small inline-SVG bar chart of finished jobs per minute over the last hour."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from ..records import QueueMinute

MINUTES = 60


@dataclass(frozen=True)
class Bar:
    x: float
    ok_y: float
    ok_h: float
    bad_y: float
    bad_h: float
    label: str


@dataclass(frozen=True)
class Chart:
    width: int
    height: int
    bars: list[Bar]
    peak: int
    total: int
    failed: int


def minute_chart(rows: list[QueueMinute], now: datetime, width: int = 240,
                 height: int = 40) -> Chart:
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
    step = width / MINUTES
    bars = []
    for i in range(MINUTES):
        scale = (height - 2) / peak if peak else 0.0
        ok_h, bad_h = ok[i] * scale, bad[i] * scale
        minute = start + timedelta(minutes=i)
        bars.append(Bar(x=round(i * step, 2), ok_y=round(height - ok_h, 2), ok_h=round(ok_h, 2),
                        bad_y=round(height - ok_h - bad_h, 2), bad_h=round(bad_h, 2),
                        label=f"{minute:%H:%M} UTC: {ok[i]} done, {bad[i]} failed"))
    return Chart(width, height, bars, peak, sum(ok), sum(bad))
