"""Ships what running jobs logged to the store every second, so a follower sees it live
(the capture itself, and the write at an attempt's end: job_logs.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from shiftwork.core.service import Service
from shiftwork.worker.job_logs import write_logs

if TYPE_CHECKING:
    from shiftwork.runtime import Runtime
    from shiftwork.worker.run import Run


class LogShipper(Service):
    """Writes what running jobs logged, every second, so a follower sees it live."""

    name = "log-shipper"

    def __init__(self, rt: Runtime, runs: Callable[[], list[Run]],
                 interval: float = 1.0) -> None:
        super().__init__(interval)
        self.rt = rt
        self.runs = runs

    def tick(self) -> None:
        for run in self.runs():
            if run.logs is not None and run.begun and not run.finished:
                write_logs(self.rt, run.logs)
