"""core/service.py: the one life cycle of a worker's background parts."""

from __future__ import annotations

import threading

from shiftwork.core.service import Service, ThreadService, jittered


class Body(ThreadService):
    name = "body"

    def __init__(self) -> None:
        super().__init__()
        self.runs = 0
        self.interrupts = 0

    def run(self) -> None:
        self.runs += 1
        self._stop.wait(10)

    def interrupt(self) -> None:
        self.interrupts += 1


def threads_named(name: str) -> int:
    return sum(t.name == name for t in threading.enumerate())


def test_start_twice_runs_one_thread_and_the_started_signal_is_set() -> None:
    body = Body()
    assert not body.started.is_set()
    body.start()
    body.start()
    assert body.started.wait(5)
    assert threads_named("shiftwork-body") == 1
    body.stop(5)
    assert body.runs == 1 and threads_named("shiftwork-body") == 0


def test_stop_twice_interrupts_once() -> None:
    body = Body()
    body.start()
    body.stop(5)
    body.stop(5)
    assert body.stopping and body.interrupts == 1


def test_stop_before_start_never_runs() -> None:
    body = Body()
    body.stop(0.1)  # no thread to wait for: no error, no wait
    body.start()
    assert body.stopping and body.runs == 0 and not body.started.is_set()
    body.stop()


def test_request_stop_then_join_stops_several_at_once() -> None:
    bodies = [Body() for _ in range(3)]
    for b in bodies:
        b.start()
    for b in bodies:
        assert b.started.wait(5)
        b.request_stop()
    for b in bodies:
        b.join(5)
    assert threads_named("shiftwork-body") == 0


def test_a_ticking_service_has_the_same_life_cycle() -> None:
    ticked = threading.Event()

    class Ticker(Service):
        name = "ticker"

        def tick(self) -> None:
            ticked.set()

    ticker = Ticker(0.01)
    ticker.start()
    ticker.start()
    assert ticker.started.wait(5) and ticked.wait(5)
    assert threads_named("shiftwork-ticker") == 1
    ticker.stop(5)
    ticker.stop(5)
    assert threads_named("shiftwork-ticker") == 0


def test_a_tick_waits_up_to_its_interval_less_a_tenth_drawn_each_time() -> None:
    """Services of one process started together on equal or multiple intervals would tick
    in lockstep (each holding a pooled connection at the same moment); drawn waits drift
    apart, and never pass the interval (a heartbeat or a lease renewal keeps its bound)."""
    draws = [jittered(5.0) for _ in range(2000)]
    assert all(4.5 <= d <= 5.0 for d in draws)
    assert max(draws) - min(draws) > 0.4  # spread over the tenth, not one fixed offset
    assert len(set(draws)) > 1900
