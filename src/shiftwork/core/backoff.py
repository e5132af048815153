"""Retry policy: exponential backoff with full jitter, decided apart from any write."""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from shiftwork.core.bounds import seconds
from shiftwork.core.control import RetryIn
from shiftwork.core.errors import ConfigurationError, StorageError


@dataclass(frozen=True)
class Backoff:
    """Exponential backoff with full jitter.

    The delay before attempt ``n + 1`` (after ``n`` failures) is drawn uniformly
    from ``[0, min(maximum, initial * coefficient ** (n - 1))]``; ``jitter=False``
    uses the upper bound itself. Exception types in ``non_retryable`` go straight
    to ``dead``. A task may raise :class:`~shiftwork.RetryIn` to pick its own delay.
    """

    initial: float = 1.0
    coefficient: float = 2.0
    maximum: float = 3600.0
    jitter: bool = True
    non_retryable: tuple[type[BaseException], ...] = field(default=())

    def __post_init__(self) -> None:
        # (frozen: the checked values, timedeltas as seconds, are set in place)
        object.__setattr__(self, "initial", seconds(self.initial, "Backoff: initial"))
        object.__setattr__(self, "maximum", seconds(self.maximum, "Backoff: maximum"))
        if isinstance(self.coefficient, bool) or not isinstance(self.coefficient, (int, float)) \
                or not 1 <= self.coefficient < math.inf:
            raise ConfigurationError(f"Backoff: coefficient must be a finite number >= 1, "
                                     f"not {self.coefficient!r}")

    def cap(self, failures: int) -> float:
        """The longest delay after ``failures`` failures (before jitter)."""
        exponent = max(failures - 1, 0)
        # Guard against float overflow for large attempt counts.
        if exponent > 200:
            return self.maximum
        return float(min(self.maximum, self.initial * self.coefficient**exponent))

    def delay(
        self, failures: int, error: BaseException | None = None,
        rand: Callable[[], float] = random.random,
    ) -> float:
        """Seconds to wait after ``failures`` failures (a ``RetryIn`` error says its own)."""
        if isinstance(error, RetryIn):
            return error.seconds
        cap = self.cap(failures)
        return cap * rand() if self.jitter else cap

    def retryable(self, error: BaseException) -> bool:
        """False for the ``non_retryable`` exception types: the job goes dead at once."""
        return not (self.non_retryable and isinstance(error, self.non_retryable))


DEFAULT_BACKOFF = Backoff()


class Retrying:
    """Pauses between tries of a storage call that keeps failing (a claim, a batch of
    outcomes, opening a listener, reaching the database at start).

    The n-th pause (counted from the last :meth:`reset`) is drawn from
    ``[cap / 2, cap]`` with ``cap = min(most, first * 2 ** (n - 1))``: exponential from
    ``first`` to ``most``, with "equal" jitter. Jitter, because every worker of a fleet
    meets the same outage at the same moment and, without it, retries in step when the
    database comes back; only half the pause, not all of it (as :class:`Backoff` draws for
    jobs), because a pause near zero would hammer a database that is still down.
    Not thread-safe: one per loop.
    """

    def __init__(self, first: float, most: float,
                 rand: Callable[[], float] = random.random) -> None:
        if not 0 < first <= most:
            raise ConfigurationError(f"Retrying: need 0 < first <= most, not {first}, {most}")
        self.first = first
        self.most = most
        self._rand = rand
        self.failures = 0  # pauses handed out since the last reset

    def cap(self) -> float:
        """The longest pause :meth:`next_delay` can give next (before jitter)."""
        # (the exponent is bounded: past ~60 doublings every cap is ``most`` anyway)
        return min(self.most, self.first * 2.0 ** min(self.failures, 64))

    def next_delay(self) -> float:
        """Seconds to wait before the next try; each call counts one more failure."""
        cap = self.cap()
        self.failures += 1
        return cap / 2 + cap / 2 * self._rand()

    def reset(self) -> None:
        """A try worked: the next failure starts again from ``first``."""
        self.failures = 0


T = TypeVar("T")

#: Tries of a write that is safe to repeat, after the first, and their pauses: from
#: 0.2 s doubling (with Retrying's jitter, 1.5-3 s in all: a database restart's length).
REPEATS = 4
REPEAT_FIRST, REPEAT_MOST = 0.2, 2.0


def repeat_on_storage_error(write: Callable[[], T], repeats: int = REPEATS,
                            sleep: Callable[[float], object] = time.sleep) -> T:
    """Call ``write`` again after a :class:`StorageError`, a few times, then give up.

    Only for writes that are safe to repeat (fenced by attempt, writing the same values):
    a failure may be a lost reply after a commit, and a brief outage should not cost a
    long job its attempt. The pauses are :class:`Retrying`'s (jittered, so the threads
    of a fleet that met the same outage do not repeat in step).
    """
    pauses = Retrying(REPEAT_FIRST, REPEAT_MOST)
    for _ in range(repeats):
        try:
            return write()
        except StorageError:
            sleep(pauses.next_delay())
    return write()
