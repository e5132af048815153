"""The worker: one process hosting a pool per queue, plus heartbeat and maintenance."""

from shiftwork.worker.worker import Worker

__all__ = ["Worker"]
