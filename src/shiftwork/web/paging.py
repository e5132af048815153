"""One page of a long list on a dashboard page (a job's dependants, a workflow's steps),
so that no page renders more than ``PAGE_SIZE`` rows of it whatever the data holds."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

T = TypeVar("T")
PAGE_SIZE = 100


@dataclass(frozen=True)
class Page(Generic[T]):
    items: Sequence[T]
    param: str  # the query parameter holding this list's offset
    start: int
    total: int
    size: int = PAGE_SIZE

    @property
    def previous(self) -> int | None:
        return max(0, self.start - self.size) if self.start > 0 else None

    @property
    def next(self) -> int | None:
        return self.start + self.size if self.start + self.size < self.total else None


def page_of(items: Sequence[T], query: Any, param: str, size: int = PAGE_SIZE) -> Page[T]:
    """The page of ``items`` starting at ``query[param]`` (0 when absent or not a number)."""
    given = query.get(param) or ""
    start = int(given) if given.isascii() and given.isdigit() and len(given) < 10 else 0
    start = min(start, max(0, len(items) - 1))
    return Page(items[start:start + size], param, start, len(items), size)
