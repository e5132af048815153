"""The event metrics (job counters and the run-time histogram) through the OpenTelemetry
metrics API, for a process that ships metrics by OTLP rather than being scraped.

The instruments are observe/metric_defs.py's, the ones the Prometheus exporter counts,
fed by the same events (``metric_defs.event_samples``): one list, two exporters. The
database gauges (queue depth, oldest waiting age, workers) stay on the Prometheus scrape:
they are the same on every target, read from the database, not counted by a process.

    >>> from shiftwork.observe.otel_metrics import OtelMetrics
    >>> otel = OtelMetrics(app)        # the global MeterProvider, or meter_provider=
    >>> otel.close()                   # stop counting
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from shiftwork.core.errors import ConfigurationError
from shiftwork.observe.metric_defs import (
    DURATION_BUCKETS,
    EVENT_METRICS,
    MetricDef,
    event_samples,
)

if TYPE_CHECKING:
    from shiftwork.app import App

try:
    from opentelemetry import metrics as otel_metrics
except ImportError:  # the optional extra is not installed
    otel_metrics = None  # type: ignore[assignment]

_SCOPE = "shiftwork"


class OtelMetrics:
    """Counts ``app``'s job events into OpenTelemetry instruments until :meth:`close`."""

    def __init__(self, app: App, meter_provider: Any = None) -> None:
        if otel_metrics is None:
            raise ConfigurationError("OpenTelemetry metrics need the otel extra: "
                                     "pip install 'shiftwork[otel]'")
        meter = (otel_metrics.get_meter(_SCOPE) if meter_provider is None
                 else meter_provider.get_meter(_SCOPE))
        self.instruments: dict[str, Any] = {d.name: _instrument(meter, d) for d in EVENT_METRICS}
        self._unsubscribe = app.events.subscribe(self._on_event)

    def close(self) -> None:
        self._unsubscribe()

    def _on_event(self, name: str, fields: dict[str, Any]) -> None:
        for metric, labels, amount in event_samples(name, fields):
            attributes = dict(zip(metric.labels, labels, strict=True))
            instrument = self.instruments[metric.name]
            if metric.kind == "histogram":
                instrument.record(amount, attributes)
            else:
                instrument.add(amount, attributes)


def _instrument(meter: Any, d: MetricDef) -> Any:
    if d.kind == "counter":
        return meter.create_counter(d.name, unit=d.unit, description=d.help)
    if d.kind != "histogram":
        raise ConfigurationError(f"metric {d.name}: a {d.kind} is not counted from events")
    try:  # the Prometheus buckets, as advice (API 1.23+; older ones take the SDK's)
        return meter.create_histogram(d.name, unit=d.unit, description=d.help,
                                      explicit_bucket_boundaries_advisory=list(DURATION_BUCKETS))
    except TypeError:
        return meter.create_histogram(d.name, unit=d.unit, description=d.help)
