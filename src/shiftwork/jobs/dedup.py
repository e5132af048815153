"""Dedup windows: ``unique_for``, ``debounce`` and ``unique_states``, checked once into a
rule, and the rule with a job's key into the :class:`~shiftwork.model.new_job.Dedup` the
store writes (docs/concepts.md, "Unique jobs", says what each mode means).

A key under one of these modes is held by a row of the ``unique_keys`` table, not by the
jobs' partial unique index: the index can only say "while the job is in one of these four
states", and a job that left a holding state and came back to it (a retry after a run,
when running does not hold) would then break the index in the middle of a worker's write.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

from shiftwork.core.bounds import seconds
from shiftwork.core.errors import ConfigurationError
from shiftwork.core.states import ACTIVE, JobState
from shiftwork.model.new_job import Dedup

#: The states a debounced key is held in: its job still waits (or is held), so it can take
#: new arguments.
DEBOUNCE_STATES = ("scheduled", "available", "retrying", "held")
_ORDER = [s.value for s in JobState]


class DedupRule(NamedTuple):
    """How a key is held, without the key (a task's or a call's options)."""

    hold_for: float | None = None
    states: tuple[str, ...] | None = None
    debounce: float | None = None

    def for_key(self, key: str) -> Dedup:
        return Dedup(key, self.hold_for, self.states, self.debounce)


def _states(value: Any, what: str) -> tuple[str, ...]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise ConfigurationError(f"{what}: unique_states must be a list of state names "
                                 f"(such as ['scheduled', 'available', 'retrying']), "
                                 f"not {value!r}")
    names = [s.value if isinstance(s, JobState) else s for s in value]
    unknown = [n for n in names if n not in _ORDER]
    if unknown:
        raise ConfigurationError(f"{what}: unique_states names unknown states {unknown!r} "
                                 f"(the states: {', '.join(_ORDER)})")
    if not names:
        raise ConfigurationError(f"{what}: unique_states is empty: no state would hold the "
                                 "key (leave the key out instead)")
    return tuple(sorted(set(names), key=_ORDER.index))


def dedup_rule(unique_for: Any, debounce: Any, unique_states: Any, what: str
               ) -> DedupRule | None:
    """The rule these options ask for; None: none of them, or exactly the default (the
    key held while the job is active, by the partial unique index). Raises
    :class:`ConfigurationError` naming what is wrong."""
    if unique_for is None and debounce is None and unique_states is None:
        return None
    hold_for = None if unique_for is None else seconds(
        unique_for, f"{what}: unique_for", allow_zero=False)
    wait = None if debounce is None else seconds(debounce, f"{what}: debounce",
                                                 allow_zero=False)
    states = None if unique_states is None else _states(unique_states, what)
    if wait is not None and hold_for is not None:
        raise ConfigurationError(
            f"{what}: debounce cannot be combined with unique_for: a debounced key is held "
            "while its job waits, and each enqueue moves the job; unique_for holds a key "
            "for a time from its enqueue")
    if wait is not None and states is not None:
        raise ConfigurationError(
            f"{what}: debounce cannot be combined with unique_states: a debounced key is "
            f"held while its job waits ({', '.join(DEBOUNCE_STATES)}), the only states in "
            "which its arguments can still be replaced")
    if wait is not None:
        return DedupRule(None, DEBOUNCE_STATES, wait)
    if hold_for is None and states is not None and set(states) == {s.value for s in ACTIVE}:
        return None  # the default: the partial unique index holds it, one statement less
    return DedupRule(hold_for, states, None)
