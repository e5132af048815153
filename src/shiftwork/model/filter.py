"""Which jobs a person means: the filter the jobs list, the CLI and bulk actions share.

One ``JobFilter``, read from a URL's query, a CLI's options or the API's keywords by
``parse_filter``, which names every bad value; each engine turns it into the same named
query (``jobs_console.sql``). Every field is optional and they combine with AND.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from typing import Any

from shiftwork.core.bounds import MAX_ID
from shiftwork.core.errors import ConfigurationError
from shiftwork.core.names import check_queue
from shiftwork.core.states import JobState
from shiftwork.model.tags import check_tag

#: How jobs can be ordered, newest first: by creation (the id), due time, finish time.
SORTS = ("created", "run_at", "finished")
#: States a bulk "delete" may touch: deleting is for history, never for live work.
FINISHED_STATES = (JobState.SUCCEEDED, JobState.DEAD, JobState.CANCELLED)
#: What `queues`, `top` and the dashboard count as "waiting": due and not yet claimed.
WAITING = "waiting"
_MAX_TEXT = 200


class FilterError(ConfigurationError):
    """A filter value that cannot mean anything (a bad state, time or id)."""


@dataclass(frozen=True)
class JobFilter:
    states: tuple[JobState, ...] = ()
    queue: str | None = None
    task: str | None = None  # a substring of the task name, any case
    error: str | None = None  # a substring of the last error ("type: message"), any case
    created_from: datetime | None = None  # inclusive
    created_to: datetime | None = None  # exclusive
    finished_from: datetime | None = None
    finished_to: datetime | None = None
    unique_key: str | None = None
    id: int | None = None
    tag: str | None = None  # one of the job's tags, whole (tags.py)

    @property
    def empty(self) -> bool:
        return all(not getattr(self, f.name) for f in fields(self))

    def describe(self) -> str:
        """``state=dead queue=billing error~timeout``: for the audit log and notices."""
        parts = []
        if self.states:
            parts.append("state=" + ",".join(s.value for s in self.states))
        for name in ("queue", "tag", "unique_key", "id"):
            if getattr(self, name) is not None:
                parts.append(f"{name}={getattr(self, name)}")
        for name in ("task", "error"):
            if getattr(self, name) is not None:
                parts.append(f"{name}~{getattr(self, name)}")
        for name in ("created_from", "created_to", "finished_from", "finished_to"):
            value = getattr(self, name)
            if value is not None:
                parts.append(f"{name}={value.isoformat()}")
        return " ".join(parts) or "every job"

    def query(self) -> dict[str, str]:
        """The filter as URL query parameters (what ``parse_filter`` reads back)."""
        out: dict[str, str] = {}
        if self.states:
            out["state"] = ",".join(s.value for s in self.states)
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "states" or value is None:
                continue
            out[f.name] = value.isoformat() if isinstance(value, datetime) else str(value)
        return out


def parse_filter(given: Mapping[str, Any]) -> JobFilter:
    """A ``JobFilter`` from strings (empty ones ignored); a ``FilterError`` names the bad
    one. ``state`` may list several, comma-separated; ``waiting`` is ``available``."""
    def text(name: str) -> str | None:
        value = given.get(name)
        if value is None:
            return None
        value = str(value).strip()
        if len(value) > _MAX_TEXT:
            raise FilterError(f"filter {name} is too long (at most {_MAX_TEXT} characters)")
        return value or None

    states: list[JobState] = []
    for word in (text("state") or "").split(","):
        word = word.strip()
        if not word:
            continue
        if word == WAITING:
            word = JobState.AVAILABLE.value
        if word in JobState.__members__.values():
            if JobState(word) not in states:
                states.append(JobState(word))
        else:
            raise FilterError(f"unknown state {word!r}: use one of "
                              f"{', '.join([s.value for s in JobState] + [WAITING])}")
    queue = text("queue")
    if queue is not None:
        try:
            check_queue(queue)
        except ConfigurationError as exc:
            raise FilterError(str(exc)) from None
    tag = text("tag")
    if tag is not None:
        try:
            check_tag(tag, "filter tag")
        except ConfigurationError as exc:
            raise FilterError(str(exc)) from None
    job_id = text("id")
    if job_id is not None and not (job_id.isascii() and job_id.isdigit()
                                   and 0 < int(job_id) <= MAX_ID):
        raise FilterError(f"filter id must be a job number, got {job_id!r}")
    return JobFilter(states=tuple(states), queue=queue, task=text("task"),
                     error=text("error"), created_from=_time(text("created_from"),
                                                             "created_from"),
                     created_to=_time(text("created_to"), "created_to"),
                     finished_from=_time(text("finished_from"), "finished_from"),
                     finished_to=_time(text("finished_to"), "finished_to"),
                     unique_key=text("unique_key"), tag=tag,
                     id=int(job_id) if job_id is not None else None)


def filter_of(given: Mapping[str, Any]) -> JobFilter:
    """``parse_filter`` for keyword arguments (the API): an unknown name is an error, not
    a filter silently left out; ``state`` may be a ``JobState`` or a list of them."""
    known = {f.name for f in fields(JobFilter)} - {"states"} | {"state"}
    unknown = sorted(set(given) - known)
    if unknown:
        raise FilterError(f"unknown filter {', '.join(unknown)}: use "
                          f"{', '.join(sorted(known))}")
    state = given.get("state")
    if isinstance(state, (list, tuple, set, frozenset)):
        state = ",".join(str(getattr(s, "value", s)) for s in state)
    elif isinstance(state, JobState):
        state = state.value
    values = {k: (v.isoformat() if isinstance(v, datetime) else v) for k, v in given.items()}
    return parse_filter({**values, "state": state})


def check_sort(sort: str | None) -> str:
    if not sort:
        return SORTS[0]
    if sort not in SORTS:
        raise FilterError(f"unknown sort {sort!r}: use one of {', '.join(SORTS)}")
    return sort


def _time(value: str | None, name: str) -> datetime | None:
    """ISO 8601 (``2026-11-30`` or ``2026-11-30T22:00:00``); without a zone, UTC."""
    if value is None:
        return None
    try:
        when = datetime.fromisoformat(value)
        return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
    except (ValueError, OverflowError):  # overflow: 0001-01-01T00:00+01:00 in UTC
        raise FilterError(f"filter {name} must be an ISO 8601 time such as "
                          f"2026-11-30T22:00:00, got {value!r}") from None


def task_hint(task: str, known: Iterable[str]) -> str:
    """What to say when no job's task name contains ``task``: ``""`` if a known name does
    (its jobs were just pruned, or are elsewhere), else which known names are close."""
    import difflib

    names = sorted(set(known))
    if any(task.lower() in name.lower() for name in names):
        return ""
    # A typo in the function part of module.function: compare that part too.
    close = difflib.get_close_matches(task, names, n=3, cutoff=0.6)
    close += [n for n in names if n not in close and difflib.get_close_matches(
        task.lower(), [n.rsplit(".", 1)[-1].lower()], n=1, cutoff=0.75)]
    tail = f"; did you mean {' or '.join(close[:3])}?" if close else ""
    return f"no task name contains {task!r}{tail}"


def like_pattern(value: str | None) -> str | None:
    """``value`` as a LIKE pattern matching it anywhere (its own ``%`` and ``_`` literal;
    the queries say ``ESCAPE '\\'``)."""
    if value is None:
        return None
    escaped = value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"
