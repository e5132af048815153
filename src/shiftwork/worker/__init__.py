"""The worker: one process hosting a pool per queue, plus heartbeat and maintenance."""

from .worker import Worker

__all__ = ["Worker"]
