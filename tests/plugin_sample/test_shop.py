"""The sample: tests of shop.py written with the plugin's fixtures (pytest.ini beside it
names the app). Run by tests/test_pytest_plugin.py in a pytest of its own."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from shop import app, send_welcome, sent, signup

from shiftwork import App, FakeClock, JobState
from shiftwork.testing import DrainResult, job_states


def test_signup_enqueues_a_welcome(shiftwork_app: App, assert_enqueued: Any) -> None:
    assert shiftwork_app is app and app.dsn != "sqlite:///shop-production.db"  # swapped
    signup(7)
    assert_enqueued(send_welcome, args=[7], count=1)


def test_drain_and_the_fake_clock(shiftwork_drain: Callable[..., DrainResult],
                                  shiftwork_clock: FakeClock) -> None:
    sent.clear()
    signup(1)
    signup(-1)
    assert shiftwork_drain().retrying == 1  # the bad one waits out its 60 s backoff
    shiftwork_clock.advance(61)
    assert shiftwork_drain().retrying == 1
    shiftwork_clock.advance(121)  # the backoff doubles
    assert shiftwork_drain().dead == 1
    assert sent == [1]


def test_inline(shiftwork_inline: DrainResult) -> None:
    sent.clear()
    signup(8)
    signup(-8)  # its three attempts run at once
    assert sent == [8] and (shiftwork_inline.succeeded, shiftwork_inline.dead) == (1, 1)
    assert job_states(app) == {JobState.SUCCEEDED: 1, JobState.DEAD: 1}


def test_each_test_has_a_fresh_database(shiftwork_app: App) -> None:
    assert job_states(shiftwork_app) == {}
