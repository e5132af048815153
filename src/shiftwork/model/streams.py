"""The values of workflow streams that cross the storage seam (store.streams)."""

from __future__ import annotations

from typing import Any, NamedTuple

from shiftwork.core.states import JobState


class StreamAppend(NamedTuple):
    """What an append found: the seq it wrote (None: nothing written, the stream being
    closed or full), the stream's length before it, and the job's cancel flag."""

    seq: int | None
    length: int
    closed: bool
    cancel_requested: bool


class StreamItem(NamedTuple):
    seq: int
    value: Any
    closed: bool  # the closing row (its value is None)


class StreamPage(NamedTuple):
    """Values from an offset, and the job's state read before them (None: no such job):
    a finished job's page holds everything its stream will ever hold."""

    items: list[StreamItem]
    state: JobState | None


class StreamKey(NamedTuple):
    key: str
    values: int
    closed: bool
