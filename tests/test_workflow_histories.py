"""Exported workflow histories replayed against changed code, before deploy: the change
that would raise NonDeterminismError in production is caught in a test, with no database
and no step run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from shiftwork import App, ConfigurationError, FakeClock, Workflow
from shiftwork.testing import assert_replays, drain, replay
from shiftwork.workflow.histories import export, load, read_history

from .test_cli import cli

CALLS: list[str] = []


def charge(order: int) -> str:
    CALLS.append("charge")
    return f"ch_{order}"


def ship(order: int) -> str:
    CALLS.append("ship")
    return f"sh_{order}"


def tax(order: int) -> int:
    CALLS.append("tax")
    return 7


def v1(wf: Workflow, order: int) -> dict[str, Any]:
    charged = wf.step("charge", charge, order)
    wf.sleep("cool-off", 60)
    shipped = wf.step("ship", ship, order)
    return {"charge": charged, "ship": shipped}


def export_of(wapp: App, clock: FakeClock) -> tuple[str, int, int]:
    place = wapp.workflow(name="shop.place")(v1)
    done = place.enqueue(1)
    drain(wapp)  # to its sleep
    clock.advance(61)
    drain(wapp)  # woken: ships, succeeds
    asleep = place.enqueue(2)
    drain(wapp)  # recorded up to its sleep, and no further
    text = json.dumps(export(read_history(wapp.runtime, i) for i in (done.id, asleep.id)))
    return text, done.id, asleep.id


def code_now(tmp_path: Path, body: Any) -> App:
    """The workflow's code as a new deploy has it, on a database that does not exist."""
    app = App(f"sqlite:///{tmp_path / 'never.db'}")
    app.workflow(name="shop.place")(body)
    return app


def test_unchanged_code_replays_every_history_without_running_a_step(
        wapp: App, clock: FakeClock, tmp_path: Path) -> None:
    text, done, asleep = export_of(wapp, clock)
    CALLS.clear()
    report = assert_replays(code_now(tmp_path, v1), text)
    outcomes = {r.history.workflow_id: r.outcome for r in report.results}
    assert outcomes == {done: "completed", asleep: "frontier"}
    assert "'cool-off'" in next(r.detail for r in report.results if r.outcome == "frontier")
    assert CALLS == [], "a replay returns recorded results: no step runs"
    assert not (tmp_path / "never.db").exists(), "a replay opens no database"


def test_an_inserted_step_is_reported_with_its_place(wapp: App, clock: FakeClock,
                                                     tmp_path: Path) -> None:
    text, done, asleep = export_of(wapp, clock)

    def v2(wf: Workflow, order: int) -> dict[str, Any]:
        charged = wf.step("charge", charge, order)
        wf.step("tax", tax, order)  # new, unguarded: old histories diverge here
        wf.sleep("cool-off", 60)
        return {"charge": charged, "ship": wf.step("ship", ship, order)}

    report = replay(code_now(tmp_path, v2), text)
    assert not report.ok
    assert {r.history.workflow_id for r in report.problems} == {done, asleep}
    message = str(report)
    assert "step 'tax'" in message and "position 1" in message and "sleep 'cool-off'" in message
    with pytest.raises(AssertionError, match="2 diverged or raised"):
        assert_replays(code_now(tmp_path, v2), text)

    def v2_patched(wf: Workflow, order: int) -> dict[str, Any]:
        charged = wf.step("charge", charge, order)
        if wf.patched("tax"):
            wf.step("tax", tax, order)
        wf.sleep("cool-off", 60)
        return {"charge": charged, "ship": wf.step("ship", ship, order)}

    CALLS.clear()
    assert replay(code_now(tmp_path, v2_patched), text).ok  # the change, guarded
    assert CALLS == []


def test_a_removed_step_and_changed_arguments_diverge(wapp: App, clock: FakeClock,
                                                     tmp_path: Path) -> None:
    text, done, _ = export_of(wapp, clock)

    def no_ship(wf: Workflow, order: int) -> dict[str, Any]:
        charged = wf.step("charge", charge, order)
        wf.sleep("cool-off", 60)
        return {"charge": charged}

    (removed,) = [r for r in replay(code_now(tmp_path, no_ship), text).problems]
    assert removed.history.workflow_id == done
    assert "returned without calling it" in removed.detail

    def other_order(wf: Workflow, order: int) -> dict[str, Any]:
        charged = wf.step("charge", charge, order + 1)  # another argument: another call
        wf.sleep("cool-off", 60)
        return {"charge": charged, "ship": wf.step("ship", ship, order)}

    assert len(replay(code_now(tmp_path, other_order), text).problems) == 2


def test_a_malformed_export_is_refused_with_what_is_wrong(tmp_path: Path) -> None:
    app = code_now(tmp_path, v1)
    with pytest.raises(ConfigurationError, match="not a workflow history export"):
        replay(app, '{"workflows": []}')
    bad = {"format": "shiftwork.workflow-histories/1", "workflows": [{"id": 1}]}
    with pytest.raises(ConfigurationError, match="history 0 of the export is malformed"):
        load(bad)
    unknown = {"format": "shiftwork.workflow-histories/1", "workflows": [
        {"id": 1, "task": "shop.plac", "steps": []}]}
    with pytest.raises(Exception, match="did you mean"):
        replay(app, unknown)


def test_the_commands_export_and_replay(rec_app: Any, db: dict[str, str],
                                        tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                        ) -> None:
    """`shiftwork workflows export` then `replay`: exit status 0 while the code replays,
    1 with the divergence when it does not."""
    from .conftest import running_worker, wait_for

    app = rec_app.app
    monkeypatch.setenv("SHIFTWORK_TEST_FAST_STEPS", "1")
    job = rec_app.pipeline.enqueue(0.0)
    with running_worker(app, {"work": 2}):
        wait_for(lambda: app.get_job(job.id).state.value == "succeeded", timeout=30,
                 what="the pipeline workflow finished")
    target = ("--app", "tests.apps.recording:app")
    out = cli(db, "workflows", "export", str(job.id), *target)
    assert out.returncode == 0, out.stderr
    path = tmp_path / "histories.json"
    path.write_text(out.stdout)
    assert [h.workflow_id for h in load(path.read_text())] == [job.id]
    ok = cli(db, "workflows", "replay", str(path), *target)
    assert ok.returncode == 0 and "completed" in ok.stdout, ok.stdout + ok.stderr
    changed = json.loads(path.read_text())
    changed["workflows"][0]["steps"][0]["name"] = "zero"  # as if the code renamed step one
    path.write_text(json.dumps(changed))
    bad = cli(db, "workflows", "replay", str(path), *target)
    assert bad.returncode == 1 and "diverged" in bad.stdout, bad.stdout + bad.stderr
