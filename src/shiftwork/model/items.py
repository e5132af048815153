"""Items processed: what ``expect_items=`` accepts, and the verdict on one run.

A job reports what it processed with ``ctx.processed(n)``; a schedule expects each
succeeded run to report enough (``app.schedule(..., expect_items=)``, judged once per run
by the leader, as the dead-man switch judges lateness), a task expects enough over a
window (``@app.task(expect_items=)``, checked by ``shiftwork health``). docs/alerting.md.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from shiftwork.core.bounds import MAX_ITEMS, whole
from shiftwork.core.bounds import seconds as check_seconds
from shiftwork.core.errors import ConfigurationError


#: ``expect_items=``: at least N items per succeeded run, or a rule given the run's figures
#: (true: fine; false or an error: the run is empty).
@dataclass(frozen=True)
class RunFigures:
    """What a schedule's succeeded run did, as an ``expect_items`` rule is given it."""

    schedule: str
    fire_at: datetime
    job_id: int | None
    items: int | None  # what the run reported (ctx.processed); None: it did not say
    duration: float | None  # seconds its successful attempt ran; None: its job is pruned


ItemsExpectation = int | Callable[[RunFigures], bool]


class ItemsCheck(StrEnum):
    """An occurrence's items check (``expect_items``); None: not made yet."""

    OK = "ok"  # its run processed what the schedule expects
    EMPTY = "empty"  # it succeeded with fewer (or the rule said no, or raised): alerted once
    NONE = "none"  # not checked (the schedule expects nothing)


def items_expectation(value: Any, what: str) -> dict[str, Any]:
    """``expect_items=`` checked: a whole number of items >= 1, or a callable (kept by
    its name, so the stored definition says that a rule judges)."""
    if value is None:
        return {}
    if callable(value) and not isinstance(value, type):
        name = f"{getattr(value, '__module__', '?')}.{getattr(value, '__qualname__', repr(value))}"
        return {"expect_items_rule": name[:200], "items_rule": value}
    return {"expect_items": whole(value, what, 1, MAX_ITEMS)}


def task_items_expectation(expect_items: Any, within: Any, where: str
                           ) -> tuple[int | None, float]:
    """``@app.task(expect_items=, expect_items_within=)`` checked: a whole number of items
    >= 1 (a task has no run to give a rule: a number only), over 60 s to a day (the
    per-minute counts it is checked against are kept a day)."""
    window = check_seconds(within, f"{where}: expect_items_within", allow_zero=False,
                           maximum=24 * 3600.0)
    if window < 60:
        raise ConfigurationError(f"{where}: expect_items_within must be at least 60 seconds "
                                 f"(items are counted per minute), not {window:g}")
    if expect_items is None:
        return None, window
    if callable(expect_items):
        raise ConfigurationError(f"{where}: expect_items must be a whole number of items per "
                                 "expect_items_within; a rule (a callable) is for schedules, "
                                 "whose runs it judges one by one")
    return whole(expect_items, f"{where}: expect_items", 1, MAX_ITEMS), window


def judge_items(figures: RunFigures, expect_items: int | None, rule_name: str | None,
                rule: Callable[[RunFigures], bool] | None) -> tuple[ItemsCheck, str]:
    """The items check of one succeeded run, and why in words. A run that did not say
    what it processed counts as 0; a rule that raises makes the run empty (with the
    error), never silently fine; a rule this process's code does not declare (an older
    or newer deploy leads) leaves the run unchecked, saying so."""
    got = figures.items or 0
    said = "did not report its items (ctx.processed)" if figures.items is None \
        else f"processed {got} item(s)"
    if expect_items is not None:
        if got >= expect_items:
            return ItemsCheck.OK, f"{said}; expected at least {expect_items}"
        return ItemsCheck.EMPTY, f"succeeded but {said}; expected at least {expect_items}"
    if rule is None:
        return ItemsCheck.NONE, (f"not checked: the leader's code does not declare the "
                                 f"expect_items rule {rule_name}")
    try:
        fine = bool(rule(figures))
    except Exception as exc:
        return ItemsCheck.EMPTY, (f"succeeded and {said}, but its expect_items rule "
                                  f"{rule_name} raised {type(exc).__name__}: {exc}"[:2000])
    if fine:
        return ItemsCheck.OK, f"{said}; the rule {rule_name} accepted it"
    return ItemsCheck.EMPTY, f"succeeded but {said}; the rule {rule_name} refused it"
