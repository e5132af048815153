"""The outage log's story on a fake clock: one line when the database is lost, one when it
has stayed back (worker/outage.py). The real outage, with a server stopped and started, is
tests/test_quiet_outages.py."""

from __future__ import annotations

import logging

import pytest

from shiftwork.worker.outage import SETTLED, OutageLog


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "shiftwork.worker"]


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def outage(clock: Clock, caplog: pytest.LogCaptureFixture) -> OutageLog:
    caplog.set_level(logging.WARNING, logger="shiftwork.worker")
    return OutageLog(clock, every=30.0)


def test_a_call_that_works_during_a_shutdown_does_not_end_the_outage(
        outage: OutageLog, clock: Clock, caplog: pytest.LogCaptureFixture) -> None:
    # A fast shutdown closes connections one by one: the listener fails, a call on a
    # connection not closed yet works 4 ms later, then the rescuer fails.
    outage.failed(OSError("server closed the connection"), "wake-up listener")
    clock.t += 0.004
    outage.ok()
    clock.t += 0.010
    outage.failed(OSError("connection refused"), "rescue", started=outage.now())
    clock.t += 5.0  # the server is down for 5 s
    outage.failed(OSError("connection refused"), "claim", started=outage.now() - 0.1)
    clock.t += 0.5
    outage.ok()  # back: working from here on
    clock.t += SETTLED / 2
    outage.ok()
    assert outage.down  # not said yet: it has not stayed back for SETTLED seconds
    clock.t += SETTLED
    outage.ok()
    said = lines(caplog)
    assert [s.split(" (")[0] for s in said] == ["database unreachable", "database back after 5.5s"]
    assert "3 failed calls" in said[1]
    assert not outage.down and outage.outages == 1


def test_a_call_begun_before_the_recovery_that_fails_after_it_is_part_of_the_outage(
        outage: OutageLog, clock: Clock, caplog: pytest.LogCaptureFixture) -> None:
    outage.failed(OSError("down"), "claim")
    clock.t += 2.0
    began = outage.now()  # a call that waits out a connection through the restart
    clock.t += 1.0
    outage.ok()  # another call works: the server is back
    clock.t += 0.2
    outage.failed(OSError("timed out"), "heartbeat", started=began)  # the waiting call's end
    clock.t += SETTLED
    outage.ok()
    assert [s.split(" (")[0] for s in lines(caplog)] == [
        "database unreachable", "database back after 3.0s"]
    # ...and once it is said to be over, such a late failure is not a new outage either
    outage.failed(OSError("timed out"), "completion", started=began)
    assert not outage.down and outage.outages == 1


def test_a_new_failure_after_the_outage_was_said_over_is_a_new_outage(
        outage: OutageLog, clock: Clock, caplog: pytest.LogCaptureFixture) -> None:
    outage.failed(OSError("down"), "claim")
    clock.t += 1.0
    outage.ok()
    clock.t += SETTLED
    outage.ok()
    clock.t += 10.0
    outage.failed(OSError("down again"), "claim", started=outage.now())
    assert outage.down and outage.outages == 2
    assert [s.split(" (")[0] for s in lines(caplog)] == [
        "database unreachable", "database back after 1.0s", "database unreachable"]


def test_reminders_while_it_stays_down(outage: OutageLog, clock: Clock,
                                       caplog: pytest.LogCaptureFixture) -> None:
    for _ in range(100):  # a failed call every second for 100 s
        outage.failed(OSError("down"), "claim", started=outage.now())
        clock.t += 1.0
    said = lines(caplog)
    assert said[0].startswith("database unreachable")
    assert [s.split(" after")[0] for s in said[1:]] == ["database still unreachable"] * 3
