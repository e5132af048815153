"""What visibility adds to a worker: the per-minute throughput recorder and /metrics."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from shiftwork.core.service import Lifecycle, Service
from shiftwork.model.records import QueueMinute, TaskMinute
from shiftwork.observe.http import Serving

if TYPE_CHECKING:
    from shiftwork.app import App
    from shiftwork.runtime import Runtime

log = logging.getLogger("shiftwork.observe")

_FIELD = {"job.succeeded": 0, "job.retried": 1, "job.dead": 2, "job.cancelled": 3}
_TASK_FIELD = (0, 2, 3, 4)  # where each outcome counts in a task's list (1 is items)


def worker_services(app: App, worker_id: str, in_flight: Callable[[], int],
                    metrics_port: int | None, metrics_host: str = "127.0.0.1"
                    ) -> list[Lifecycle]:
    """Services a worker starts beside its own (called once from ``Worker.start``);
    ``in_flight`` counts the jobs the worker holds now. The App, not only its Runtime:
    /metrics reads what the App shows people, and its collectors are given the App."""
    services: list[Lifecycle] = [ThroughputRecorder(app.runtime)]
    if metrics_port is not None:
        services.append(MetricsServer(app, metrics_port, metrics_host,
                                      in_flight=lambda: {worker_id: in_flight()}))
    return services


class ThroughputRecorder(Service):
    """Counts finished jobs per queue and minute from events; adds them to the database.

    One upsert per flush, whatever the throughput; ``queue_minutes`` then answers
    "how many per minute, lately" without counting the jobs table. Succeeded jobs and the
    items they reported are counted per task too, with its failures (``task_minutes``: the
    per-task history that ``@app.task(expect_items=...)`` is checked against and the
    history rollup reads).
    """

    name = "throughput"

    def __init__(self, rt: Runtime, interval: float = 5.0) -> None:
        super().__init__(interval)
        self.rt = rt
        self._counts: dict[tuple[str, int], list[int]] = {}  # (queue, epoch minute)
        # (task, minute): succeeded, items, retried, dead, cancelled
        self._tasks: dict[tuple[str, int], list[int]] = {}
        self._lock = threading.Lock()
        self._unsubscribe = rt.events.subscribe(self._on_event)

    def _on_event(self, name: str, fields: dict[str, Any]) -> None:
        index = _FIELD.get(name)
        queue = fields.get("queue")
        if index is None or not queue:
            return
        # The minute as an epoch number (a datetime per event cost ~1.5 us a job).
        key = (str(queue), int(self.rt.clock.now().timestamp() // 60))
        task = fields.get("task")
        with self._lock:
            self._counts.setdefault(key, [0, 0, 0, 0])[index] += 1
            if task:
                per_task = self._tasks.setdefault((str(task), key[1]), [0, 0, 0, 0, 0])
                per_task[_TASK_FIELD[index]] += 1
                if index == 0:
                    per_task[1] += int(fields.get("items") or 0)

    def flush(self) -> None:
        with self._lock:
            counts, self._counts = self._counts, {}
            tasks, self._tasks = self._tasks, {}
        if counts:
            rows = [QueueMinute(q, datetime.fromtimestamp(m * 60, UTC), *c)
                    for (q, m), c in sorted(counts.items())]
            try:
                self.rt.store.observe.queue_minutes_add(rows)
            except Exception:
                self._keep(self._counts, counts, 4)
                self._keep(self._tasks, tasks, 5)
                raise
        if tasks:
            task_rows = [TaskMinute(t, datetime.fromtimestamp(m * 60, UTC), *c)
                         for (t, m), c in sorted(tasks.items())]
            try:
                self.rt.store.observe.task_minutes_add(task_rows)
            except Exception:
                self._keep(self._tasks, tasks, 5)
                raise

    def _keep(self, into: dict[tuple[str, int], list[int]],
              counts: dict[tuple[str, int], list[int]], width: int) -> None:
        """Counts a flush could not write, kept for the next one."""
        with self._lock:
            for key, c in counts.items():
                mine = into.setdefault(key, [0] * width)
                for i, v in enumerate(c):
                    mine[i] += v

    def tick(self) -> None:
        self.flush()

    def stop(self, timeout: float = 5.0) -> None:
        super().stop(timeout)
        self._unsubscribe()
        try:
            self.flush()
        except Exception:
            log.warning("could not write the last throughput counts", exc_info=True)


class MetricsServer(Serving):
    """Serves the worker's Prometheus metrics over HTTP (``--metrics-port``)."""

    def __init__(self, app: App, port: int, host: str = "127.0.0.1",
                 in_flight: Any = None) -> None:
        from shiftwork.observe.metrics import Metrics

        super().__init__()
        self.metrics = Metrics(app, in_flight=in_flight)
        self.port = port
        self.host = host

    def start(self) -> None:
        from shiftwork.observe.http import metrics_server

        if self.server is None and not self.stopping:  # bound here: a taken port fails start
            self.server = metrics_server(self.metrics, self.host, self.port)
            self.port = self.server.server_address[1]
            log.info("metrics on http://%s:%d/metrics", self.host, self.port)
        super().start()

    def stop(self, timeout: float = 5.0) -> None:
        super().stop(timeout)
        self.metrics.close()
