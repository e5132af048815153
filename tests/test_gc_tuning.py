"""A `shiftwork worker` process sets the collector for a process that only runs jobs; a
worker embedded in another process leaves that process's collector alone."""

from __future__ import annotations

import gc
import subprocess
import sys
import textwrap

import pytest

from shiftwork import App
from shiftwork.worker.gc_tuning import YOUNG_THRESHOLD

from .conftest import running_worker


def _in_fresh_interpreter(code: str) -> str:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, check=True, timeout=60).stdout.strip()


def test_tune_gc_freezes_start_up_and_raises_the_young_threshold() -> None:
    out = _in_fresh_interpreter("""
        import gc
        from shiftwork.worker.gc_tuning import tune_gc
        before = gc.get_threshold()
        tune_gc()
        print(before[0], gc.get_threshold()[0], gc.get_freeze_count() > 0)
    """)
    default, tuned, frozen = out.split()
    assert int(default) < YOUNG_THRESHOLD and int(tuned) == YOUNG_THRESHOLD
    assert frozen == "True"


@pytest.mark.parametrize("engine", ["sqlite"], indirect=True)
def test_an_embedded_worker_leaves_the_collector_alone(app: App) -> None:
    threshold = gc.get_threshold()

    @app.task(queue="default")
    def noop() -> None:
        pass

    handle = noop.enqueue()
    with running_worker(app, {"default": 1}):
        assert handle.result(timeout=30) is None
    assert gc.get_threshold() == threshold


def test_the_worker_command_offers_the_opt_out() -> None:
    from click.testing import CliRunner

    from shiftwork.cli import main

    out = CliRunner().invoke(main, ["worker", "--help"]).output
    assert "--no-gc-tuning" in out
