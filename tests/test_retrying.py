"""core/backoff.py's Retrying: the one backoff of storage retries (pure, no sleeping)."""

from __future__ import annotations

import pytest

from shiftwork.core.backoff import Retrying
from shiftwork.core.errors import ConfigurationError


def test_doubles_from_first_to_most_without_jitter_at_the_top() -> None:
    r = Retrying(0.5, 5.0, rand=lambda: 1.0)
    assert [r.next_delay() for _ in range(6)] == [0.5, 1.0, 2.0, 4.0, 5.0, 5.0]


def test_jitter_keeps_at_least_half_of_each_pause() -> None:
    r = Retrying(0.5, 5.0, rand=lambda: 0.0)
    assert [r.next_delay() for _ in range(5)] == [0.25, 0.5, 1.0, 2.0, 2.5]


def test_pauses_spread_between_half_and_the_cap() -> None:
    import random
    rng = random.Random(7)
    delays = []
    for _ in range(200):
        r = Retrying(0.4, 10.0, rand=rng.random)
        delays.append(r.next_delay())
    assert min(delays) >= 0.2 and max(delays) <= 0.4
    assert len({round(d, 3) for d in delays}) > 50  # a fleet does not retry in step


def test_reset_starts_again_from_first() -> None:
    r = Retrying(0.1, 5.0, rand=lambda: 1.0)
    for _ in range(10):
        r.next_delay()
    assert r.failures == 10 and r.cap() == 5.0
    r.reset()
    assert r.failures == 0 and r.next_delay() == 0.1


def test_many_failures_stay_at_most() -> None:
    r = Retrying(0.1, 5.0, rand=lambda: 1.0)
    for _ in range(10_000):
        delay = r.next_delay()
    assert delay == 5.0


@pytest.mark.parametrize("first, most", [(0, 1), (-1, 1), (2, 1)])
def test_bad_bounds_are_refused(first: float, most: float) -> None:
    with pytest.raises(ConfigurationError):
        Retrying(first, most)


def test_a_repeatable_write_rides_out_a_short_outage() -> None:
    """repeat_on_storage_error pauses by Retrying (jittered), then gives up with the error."""
    from shiftwork.core import backoff
    from shiftwork.core.errors import StorageError

    pauses: list[float] = []
    calls = iter([StorageError("down"), StorageError("down"), "written"])

    def write() -> str:
        value = next(calls)
        if isinstance(value, Exception):
            raise value
        return value

    assert backoff.repeat_on_storage_error(write, sleep=pauses.append) == "written"
    assert len(pauses) == 2 and 0.1 <= pauses[0] <= 0.2 and 0.2 <= pauses[1] <= 0.4

    pauses.clear()

    def down() -> str:
        raise StorageError("still down")

    with pytest.raises(StorageError, match="still down"):
        backoff.repeat_on_storage_error(down, sleep=pauses.append)
    assert len(pauses) == backoff.REPEATS and 1.5 <= sum(pauses) <= 3.0
