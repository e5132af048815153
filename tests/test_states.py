"""The state machine: one table of legal moves, enforced in the database during tests."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from shiftwork import App, JobState
from shiftwork.core.states import ACTIVE, FINAL, TRANSITIONS, WAITING, is_legal

SRC = Path(__file__).resolve().parents[1] / "src" / "shiftwork"


def test_every_state_has_a_row_and_is_reachable() -> None:
    assert set(TRANSITIONS) == set(JobState)
    reachable = {JobState.SCHEDULED, JobState.AVAILABLE}
    frontier = list(reachable)
    while frontier:
        for nxt in TRANSITIONS[frontier.pop()]:
            if nxt not in reachable:
                reachable.add(nxt)
                frontier.append(nxt)
    assert reachable == set(JobState)
    assert TRANSITIONS[JobState.SUCCEEDED] == frozenset()
    assert WAITING < ACTIVE and not (ACTIVE & FINAL)


def test_is_legal() -> None:
    assert is_legal(JobState.RUNNING, JobState.SUCCEEDED)
    assert not is_legal(JobState.SUCCEEDED, JobState.RUNNING)


def test_every_state_the_sql_writes_is_a_known_state() -> None:
    """Each `SET state = '...'` literal in the engines' SQL names a real state."""
    names = {s.value for s in JobState}
    for sql_file in SRC.glob("store/*/*.sql"):
        for literal in re.findall(r"state\s*=\s*'([a-z_]+)'", sql_file.read_text()):
            assert literal in names, (sql_file.name, literal)


def test_database_rejects_an_illegal_transition(app: App) -> None:
    """The guard the fixtures install (generated from TRANSITIONS) is live on both engines."""

    @app.task
    def t() -> None: ...

    job = t.enqueue()
    store = app.store
    with pytest.raises(Exception, match="illegal"):
        if store.engine == "sqlite":
            with store._tx() as c:  # type: ignore[attr-defined]
                c.execute("UPDATE jobs SET state = 'succeeded' WHERE id = ?", (job.id,))
        else:
            with store._conn() as c:  # type: ignore[attr-defined]
                c.execute(f'UPDATE "{store.schema}".jobs SET state = %s WHERE id = %s',  # type: ignore[attr-defined]
                          ("succeeded", job.id))
    assert app.get_job(job.id).state is JobState.AVAILABLE
