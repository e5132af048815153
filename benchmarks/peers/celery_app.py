"""Celery's side of the benchmark: Redis broker, no result backend, threads pool."""

from __future__ import annotations

import os
import time

from celery import Celery

from ..recorder import record, started

app = Celery("bench", broker=os.environ.get("SHIFTWORK_BENCH_REDIS", "redis://127.0.0.1:6379/9"))
app.conf.update(task_ignore_result=True, worker_hijack_root_logger=False,
                broker_connection_retry_on_startup=True)


@app.task(name="noop", bind=True)
def noop(self) -> None:  # type: ignore[no-untyped-def]
    started(self.request.id)


@app.task(name="stamp", bind=True)
def stamp(self, sent: float) -> None:  # type: ignore[no-untyped-def]
    record("l", self.request.id, (time.time() - sent) * 1000.0, now=True)
