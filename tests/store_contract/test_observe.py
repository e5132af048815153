"""Visibility: per-minute counts, search, discarding dead jobs."""

from __future__ import annotations

from datetime import timedelta

from shiftwork import FakeClock
from shiftwork.core.states import JobState
from shiftwork.model.records import HistoryBucket, QueueMinute, TaskMinute
from shiftwork.store.base import Store

from .helpers import claim, claim_one, done, insert, new_job


def test_queue_minutes_add_sums_and_list_reads_since(store: Store, clock: FakeClock) -> None:
    store.observe.queue_minutes_add([])
    minute = clock.now().replace(second=0)
    before = minute - timedelta(minutes=1)
    store.observe.queue_minutes_add([QueueMinute("q", minute, succeeded=2, retried=1),
                             QueueMinute("q", before, dead=1)])
    store.observe.queue_minutes_add([QueueMinute("q", minute, succeeded=3, cancelled=1),
                             QueueMinute("r", minute, dead=4)])
    assert store.observe.queue_minutes_list(minute) == [QueueMinute("q", minute, 5, 1, 0, 1),
                                                QueueMinute("r", minute, 0, 0, 4, 0)]
    assert store.observe.queue_minutes_list(before)[0] == QueueMinute("q", before, 0, 0, 1, 0)


def test_history_counts_sum_the_minutes_of_a_bucket_per_queue_and_task(
        store: Store, clock: FakeClock) -> None:
    start = clock.now().replace(second=0, microsecond=0)
    end = start + timedelta(minutes=5)
    store.observe.queue_minutes_add([QueueMinute("q", start, 2, 1, 1, 0),
                             QueueMinute("q", start + timedelta(minutes=4), 1, 0, 0, 1),
                             QueueMinute("q", end, 9, 9, 9, 9)])  # the next bucket's
    store.observe.task_minutes_add([TaskMinute("t", start, 2, 7, 1, 1, 0),
                            TaskMinute("t", start + timedelta(minutes=1), 1, 0, 0, 0, 1)])
    assert store.observe.history_counts(start, end) == ({"q": (3, 1, 1, 1)}, {"t": (3, 1, 1, 1)})
    assert store.observe.history_counts(end, end + timedelta(minutes=5))[1] == {}


def test_history_add_keeps_a_bucket_written_and_lists_by_kind(
        store: Store, clock: FakeClock) -> None:
    start = clock.now().replace(second=0, microsecond=0)
    first = [HistoryBucket("q", "", start, 3, 1, 0, 0, 3, 0.5, 2.0, 4.0),
             HistoryBucket("", "t", start, 3, 1, 0, 0, 3, 0.5, 2.0, None)]
    store.observe.history_add(first)
    store.observe.history_add([HistoryBucket("q", "", start, 99)])  # a second leader's: kept out
    assert store.observe.history_list(start) == sorted(first, key=lambda r: (r.queue, r.task))
    assert store.observe.history_list(start, queue="q", task="") == [first[0]]
    assert store.observe.history_list(start, queue="", task="t") == [first[1]]
    assert store.observe.history_last() == start
    clock.advance(7200)
    assert store.observe.history_prune(keep_seconds=3600) == 2
    assert store.observe.history_list(start) == []


def test_queue_minutes_prune_keeps_the_recent_ones(store: Store, clock: FakeClock) -> None:
    minute = clock.now().replace(second=0)
    store.observe.queue_minutes_add([QueueMinute("q", minute - timedelta(hours=2), 1),
                             QueueMinute("q", minute, 1)])
    assert store.observe.queue_minutes_prune(keep_seconds=3600) == 1
    since = minute - timedelta(days=1)
    assert [m.minute for m in store.observe.queue_minutes_list(since)] == [minute]


def test_task_minutes_add_sums_and_since_totals_per_task(store: Store, clock: FakeClock
                                                          ) -> None:
    """Per task, per minute: succeeded jobs and items (what @app.task(expect_items=) reads)."""
    store.observe.task_minutes_add([])
    minute = clock.now().replace(second=0, microsecond=0)
    old = minute - timedelta(hours=2)
    store.observe.task_minutes_add([TaskMinute("a", minute, 2, 10), TaskMinute("a", old, 1, 5)])
    store.observe.task_minutes_add([TaskMinute("a", minute, 1, 0), TaskMinute("b", minute, 3, 0)])
    assert store.observe.task_minutes_since(minute - timedelta(minutes=1)) == {"a": (3, 10),
                                                                       "b": (3, 0)}
    assert store.observe.task_minutes_since(old)["a"] == (4, 15)
    assert store.observe.task_minutes_prune(keep_seconds=3600) == 1
    assert store.observe.task_minutes_since(old)["a"] == (3, 10)


def test_search_by_id_task_or_key_newest_first(store: Store) -> None:
    [a] = insert(store, task="send")
    # A key no job id reaches: the Postgres template schema's ids run on across tests,
    # and a search for "42" also finds job 42 (seen when xdist ran this test later).
    [(b, _)] = store.jobs.insert([new_job("send", unique_key="send:987654321")])
    [c] = insert(store, task="other", queue="r")
    assert [j.id for j in store.observe.jobs_search()] == [c, b, a]
    assert [j.id for j in store.observe.jobs_search(str(a))] == [a]
    assert [j.id for j in store.observe.jobs_search("send")] == [b, a]
    assert [j.id for j in store.observe.jobs_search("send:987654321")] == [b]
    assert [j.id for j in store.observe.jobs_search("987654321")] == [b]  # the key after "task:"
    assert [j.id for j in store.observe.jobs_search(queue="r")] == [c]
    assert [j.id for j in store.observe.jobs_search(limit=1)] == [c]
    assert store.observe.jobs_search("nothing") == []
    claim_one(store)
    assert [j.id for j in store.observe.jobs_search(state=JobState.RUNNING)] == [a]


def test_discard_deletes_dead_jobs_only(store: Store) -> None:
    assert store.observe.jobs_discard([]) == []
    insert(store, 3)
    dead, ok, running = claim(store)
    store.jobs.complete_many([done(dead, JobState.DEAD), done(ok)])
    assert store.observe.jobs_discard([running.id, ok.id, dead.id, 9999]) == [dead.id]
    assert sorted(j.id for j in store.jobs.list()) == [ok.id, running.id]


def test_table_health_reads_the_engines_statistics(store: Store) -> None:
    health = store.table_health()
    partitioned = getattr(store, "partitioned", False)  # the engine postgres-partitioned
    assert health.engine == store.engine
    assert health.table == ("jobs_hot" if partitioned else "jobs")
    if store.engine == "postgres":
        assert health.dead_tuples is not None and health.live_tuples is not None
        assert "jobs_claim_idx" in {ix.name for ix in health.indexes}
        assert health.page_count is None
    else:
        assert health.page_count and health.page_size and health.free_pages is not None
        assert health.dead_tuples is None and "xmin horizon" in health.not_measured
