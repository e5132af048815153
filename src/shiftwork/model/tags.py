"""Job tags (``customer:42``, ``import:2026-11``): labels to find jobs by.

Kept in the job's meta under ``TAGS_META_KEY`` (so every insert path carries them as it
carries the rest of meta), validated here: at most ``MAX_TAGS`` per job, each 1 to
``MAX_TAG_LENGTH`` characters, no control characters and no commas (the URL and the CLI
list several tags with commas).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from shiftwork.core.errors import ConfigurationError

TAGS_META_KEY = "tags"
MAX_TAGS = 20
MAX_TAG_LENGTH = 100


def check_tag(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise ConfigurationError(f"{what}: a tag must be a string, got {type(value).__name__}")
    if not value or len(value) > MAX_TAG_LENGTH or value != value.strip() or "," in value \
            or any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise ConfigurationError(f"{what}: a tag must be 1-{MAX_TAG_LENGTH} characters, "
                                 f"no comma, control character or surrounding space; "
                                 f"got {value[:40]!r}")
    return value


def check_tags(values: Any, what: str) -> tuple[str, ...]:
    """``values`` (a list or tuple of strings) as stored: checked, duplicates dropped."""
    if isinstance(values, str) or not isinstance(values, Iterable):
        raise ConfigurationError(f"{what}: tags must be a list of strings, e.g. "
                                 f"['customer:42'], got {values!r:.60}")
    tags = tuple(dict.fromkeys(check_tag(v, what) for v in values))
    if len(tags) > MAX_TAGS:
        raise ConfigurationError(f"{what}: at most {MAX_TAGS} tags per job, got {len(tags)}")
    return tags


def merged_tags(task_tags: tuple[str, ...], given: Any, what: str) -> tuple[str, ...]:
    """The task's tags, then those of one enqueue (``using(tags=...)``), checked."""
    if given is None:
        return task_tags
    return check_tags((*task_tags, *check_tags(given, what)), what)
