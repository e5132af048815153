"""Replay exported workflow histories against the current code, in a test (CI).

>>> from shiftwork.testing import assert_replays
>>> assert_replays(app, Path("tests/histories.json"))   # from `shiftwork workflows export`
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from shiftwork.workflow.histories import History, ReplayReport, load, replay_all

if TYPE_CHECKING:
    from shiftwork.app import App

Histories = Path | str | bytes | dict[str, Any] | list[History]


def replay(app: App, histories: Histories) -> ReplayReport:
    """Replay each history (an export's path, text or document, or loaded histories) with
    ``app``'s current workflow code; no database is used and no step runs."""
    if isinstance(histories, Path):
        histories = histories.read_text()
    loaded = histories if isinstance(histories, list) else load(histories)
    return replay_all(app.runtime, loaded)


def assert_replays(app: App, histories: Histories) -> ReplayReport:
    """:func:`replay`, failing the test with every divergence (call and place) if any."""
    report = replay(app, histories)
    if not report.ok:
        raise AssertionError(str(report))
    return report
