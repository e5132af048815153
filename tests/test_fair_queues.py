"""Fair queues: claims go round-robin across groups, on both engines."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from shiftwork import App, ConfigurationError, FakeClock, JobState
from shiftwork.outcome import Outcome

T0 = datetime(2030, 1, 1, tzinfo=UTC)


@pytest.fixture
def fair_app(make_app: Callable[..., App]) -> App:
    app = make_app(clock=FakeClock(T0))
    app.queue("emails", fair=True, weights={"vip": 2})
    return app


def _claim(app: App, n: int) -> list[str]:
    jobs = app.store.jobs_claim("emails", n, "w", 30, None, app.claim_flow("emails"))
    return sorted(str(j.meta.get("group")) for j in jobs)  # one claim's jobs: as a set


def test_a_flood_does_not_starve_a_small_group(fair_app: App) -> None:
    @fair_app.task(queue="emails", group_by="account")
    def send(account: str) -> None: ...

    send.enqueue_many([("a",)] * 500)
    send.enqueue_many([("b",)] * 3)
    got = [g for _ in range(8) for g in _claim(fair_app, 1)]
    assert got[:6] == ["a", "b", "a", "b", "a", "b"] or got[:6] == ["b", "a", "b", "a", "b", "a"]
    assert got[6:] == ["a", "a"]


def test_one_claim_takes_one_job_of_each_group_in_turn(fair_app: App) -> None:
    @fair_app.task(queue="emails", group_by="account")
    def send(account: str) -> None: ...

    for account in ["c"] * 50 + ["a"] * 50 + ["b"] * 2:
        send.enqueue(account)
    assert _claim(fair_app, 4) == ["a", "a", "b", "c"]  # a round, then a again
    assert _claim(fair_app, 4) == ["a", "b", "c", "c"]  # on from where it left off: b, c, a, c
    assert _claim(fair_app, 2) == ["a", "c"]  # b is done


def test_priority_wins_within_a_group_and_weights_give_more_turns(fair_app: App) -> None:
    @fair_app.task(queue="emails", group_by="account")
    def send(account: str, n: int) -> None: ...

    send.enqueue_many([("vip", i) for i in range(10)] + [("z", i) for i in range(5)])
    urgent = send.using(priority=10).enqueue("z", 99)
    jobs = fair_app.store.jobs_claim("emails", 3, "w", 30, None, fair_app.claim_flow("emails"))
    assert sorted(j.meta["group"] for j in jobs) == ["vip", "vip", "z"]
    assert urgent.id in {j.id for j in jobs}
    # A weight is kept across claims of one job each.
    assert [g for _ in range(6) for g in _claim(fair_app, 1)] == ["vip", "vip", "z", "vip",
                                                                  "vip", "z"]


def test_jobs_without_a_group_take_one_turn_per_round(fair_app: App) -> None:
    @fair_app.task(queue="emails", group_by="account")
    def send(account: str) -> None: ...

    @fair_app.task(queue="emails")
    def plain() -> None: ...

    send.enqueue_many([("a",)] * 20 + [("b",)] * 20)
    plain.enqueue_many([()] * 5)
    assert _claim(fair_app, 7) == ["None", "None", "a", "a", "a", "b", "b"]


def test_a_rescued_job_returns_to_its_groups_turn(fair_app: App) -> None:
    @fair_app.task(queue="emails", group_by="account")
    def send(account: str) -> None: ...

    send.enqueue_many([("a",)] * 20)
    [b] = [send.enqueue("b")]
    jobs = fair_app.store.jobs_claim("emails", 2, "w", 30, None, fair_app.claim_flow("emails"))
    assert sorted(j.meta["group"] for j in jobs) == ["a", "b"]
    held = next(j for j in jobs if j.id == b.id)
    # It fails (as a rescue would send it back): it waits again, and b gets its turn.
    fair_app.store.jobs_complete_many([Outcome(held.id, held.attempt, JobState.RETRYING,
                                               run_at=None)])
    assert _claim(fair_app, 2) == ["a", "b"]


def test_group_caps_and_rates_still_hold_on_a_fair_queue(fair_app: App) -> None:
    @fair_app.task(queue="emails", group_by="account", group_concurrency=1)
    def send(account: str) -> None: ...

    send.enqueue_many([("a",)] * 20 + [("b",)] * 20)
    assert sorted(_claim(fair_app, 10)) == ["a", "b"]
    assert _claim(fair_app, 10) == []


def test_bad_fair_options_are_refused(fair_app: App) -> None:
    with pytest.raises(ConfigurationError, match="weights need fair=True"):
        fair_app.queue("x", weights={"a": 2})
    with pytest.raises(ConfigurationError, match="weight of group 'a'"):
        fair_app.queue("x", fair=True, weights={"a": 0})
    with pytest.raises(ConfigurationError, match="fair must be True or False"):
        fair_app.queue("x", fair="yes")  # type: ignore[arg-type]
