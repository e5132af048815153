"""The shiftwork app the benchmark's worker processes run (``benchmarks.app:app``)."""

from __future__ import annotations

import os
import time

from shiftwork import App, JobContext, Settings

from .recorder import record, started


def noop(ctx: JobContext) -> None:
    """Drain, mixed flood and memory runs: note that this job started, and nothing else
    (the same recorder call every peer's job makes)."""
    started(ctx.job_id, ctx.attempt)


async def noop_async(ctx: JobContext) -> None:
    """The drain's job written as a coroutine (BENCH_ASYNC=1): run on the worker's event
    loop instead of its thread pool, as the asyncio peers' jobs are."""
    started(ctx.job_id, ctx.attempt)


def stamp(ctx: JobContext, sent: float) -> None:
    """Latency runs: enqueue-to-start in ms, against the enqueue time the job carries (and
    that send time, so a run can keep the sends of one window)."""
    if sent:  # 0: the sender's warm-up
        record("l", ctx.job_id, (time.time() - sent) * 1000.0, sent, now=True)


def make_app(dsn: str, schema: str) -> App:
    a = App(dsn, schema=schema, settings=Settings(), auto_migrate=False)
    a.task(name="bench.noop", queue="bench", max_attempts=1)(
        noop_async if os.environ.get("BENCH_ASYNC") == "1" else noop)
    a.task(name="bench.stamp", queue="urgent", max_attempts=1)(stamp)
    return a


app = make_app(os.environ.get("BENCH_DSN", "sqlite:///bench.db"),
               os.environ.get("BENCH_SCHEMA", "shiftwork"))


def _trace_store(a: App) -> None:
    """BENCH_TRACE=1: count and time every claim and completion (written at exit)."""
    import atexit
    import threading

    from .recorder import DIR

    jobs = a.store.jobs
    stats: dict[str, list[float]] = {}
    lock = threading.Lock()

    def wrap(name: str) -> None:
        inner = getattr(jobs, name)

        def timed(*args: object, **kwargs: object) -> object:
            t0 = time.perf_counter()
            out = inner(*args, **kwargs)
            dt = time.perf_counter() - t0
            rows = len(args[0]) if name == "complete_many" else len(out)  # type: ignore[arg-type]
            with lock:
                s = stats.setdefault(name, [0, 0, 0.0])
                s[0] += 1
                s[1] += rows
                s[2] += dt
            return out

        setattr(jobs, name, timed)

    for n in ("claim", "complete_many"):
        wrap(n)

    def dump() -> None:
        with open(os.path.join(DIR, f"trace-{os.getpid()}.txt"), "w") as f:
            for n, (calls, rows, secs) in stats.items():
                f.write(f"{n}: {calls} calls, {rows} rows, {rows / max(calls, 1):.1f} rows/call, "
                        f"{secs / max(calls, 1) * 1000:.2f} ms/call, {secs:.2f}s total\n")

    atexit.register(dump)


if os.environ.get("BENCH_TRACE") and os.environ.get("BENCH_RECORD_DIR"):
    _trace_store(app)
