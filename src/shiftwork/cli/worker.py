"""``shiftwork worker``: run a worker process for an app's tasks (``--processes N``: a
supervisor and N of them, worker/supervisor.py)."""

from __future__ import annotations

import re
import sys

import click

from shiftwork.cli.options import app_argument, code_target_options, log_level_option, open_app
from shiftwork.core.errors import ConfigurationError
from shiftwork.core.memory import parse_memory_limit


@click.command()
@app_argument
@code_target_options
@click.option("--queue", "-q", "queues", multiple=True,
              metavar="NAME=CONCURRENCY[:process[:CEILING]]",
              help="A queue and its pool size; repeat for more. Default: every task's queue=10. "
                   "':process' runs each of its jobs in a child process that a timeout or a "
                   "cancel can kill; ':process:512MB' also gives its jobs a memory ceiling "
                   "(a task's own memory_limit wins).")
@click.option("--grace", default=30.0, show_default=True,
              help="Seconds running jobs get to finish on SIGTERM before they are handed back.")
@click.option("--connect-timeout", default=60.0, show_default=True,
              help="Seconds to keep retrying an unreachable database at start.")
@click.option("--migrate", is_flag=True,
              help="Create or upgrade the schema at start (logged); without it a worker "
                   "refuses a database that `shiftwork migrate` has not prepared.")
@log_level_option("INFO")
@click.option("--log-format", type=click.Choice(["text", "json"]), default="text",
              show_default=True, help="json: one object per line with the job event's fields.")
@click.option("--log-jobs", is_flag=True,
              help="A line per job as it starts and ends (job.started, job.succeeded: DEBUG "
                   "events, shown without the rest of DEBUG); on with --log-format json.")
@click.option("--metrics-port", type=int, help="Serve Prometheus /metrics on this port.")
@click.option("--metrics-host", default="127.0.0.1", show_default=True,
              help="Address for --metrics-port (0.0.0.0 to let Prometheus reach it).")
@click.option("--processes", "-p", type=click.IntRange(min=1), default=1, show_default=True,
              help="Worker processes on this host, under one supervisor that restarts them "
                   "and holds the host's one wake-up listener.")
@click.option("--max-jobs-per-child", type=click.IntRange(min=1), metavar="N",
              help="Recycle a worker process after N jobs: it claims no more, finishes its "
                   "jobs and exits; a fresh one replaces it.")
@click.option("--max-memory-per-child", metavar="SIZE", callback=lambda c, p, v: parse_size(v),
              help="Recycle a worker process whose memory (RSS) passes SIZE after a job, "
                   "e.g. 512MB or 2GB.")
@click.option("--gc-tuning/--no-gc-tuning", default=True, show_default=True,
              help="Freeze what start-up allocated and collect young objects every 20,000 "
                   "allocations, not 700 (a draining worker: 5-9% more jobs/s).")
def worker(queues: tuple[str, ...], grace: float, connect_timeout: float, migrate: bool,
           log_level: str, log_format: str, log_jobs: bool, metrics_port: int | None,
           metrics_host: str, processes: int, max_jobs_per_child: int | None,
           max_memory_per_child: int | None, gc_tuning: bool) -> None:
    """Run a worker process for APP's tasks."""
    # Imported here: the worker machinery is not needed by the other commands' start-up.
    from shiftwork.observe.logging import configure_logging
    from shiftwork.worker import Worker

    configure_logging(log_level, log_format, job_events=True if log_jobs else None)
    pools, in_process, ceilings = parse_queues(queues)  # a bad -q is refused before the app
    app = open_app(need_app="a worker runs your tasks, so it needs your code")
    if not pools:
        pools = {t.options.queue: 10 for t in app.tasks.values()} or {"default": 10}
    if processes > 1 or max_jobs_per_child or max_memory_per_child:
        from shiftwork.worker.child import ChildSpec
        from shiftwork.worker.supervisor import Supervisor

        if not app.import_path:
            raise click.UsageError("--processes needs the app as MODULE:ATTR, which each "
                                   "worker process imports")
        spec = ChildSpec(app.import_path, pools, frozenset(in_process), grace=grace,
                         connect_timeout=connect_timeout, migrate=migrate,
                         metrics_port=metrics_port, metrics_host=metrics_host,
                         log_level=log_level, log_format=log_format,
                         max_jobs=max_jobs_per_child, max_memory=max_memory_per_child,
                         log_jobs=log_jobs, memory_limits=ceilings, gc_tuning=gc_tuning)
        sys.exit(Supervisor(app.runtime, spec, processes).run())
    Worker(app, pools, grace=grace, connect_timeout=connect_timeout,
           process_queues=in_process, metrics_port=metrics_port,
           metrics_host=metrics_host, migrate=migrate, memory_limits=ceilings,
           tune_gc=gc_tuning).run()


def parse_queues(items: tuple[str, ...]
                 ) -> tuple[dict[str, int], set[str], dict[str, int | str]]:
    """``-q NAME=CONCURRENCY[:process[:CEILING]]`` values -> (pool size per queue, process
    queues, memory ceiling per queue)."""
    pools: dict[str, int] = {}
    in_process: set[str] = set()
    ceilings: dict[str, int | str] = {}
    for item in items:
        name, _, size = item.partition("=")
        size, _, mode = size.partition(":")
        mode, _, ceiling = mode.partition(":")
        if ceiling and mode != "process":
            raise click.BadParameter(f"{item!r}: a memory ceiling needs the process executor, "
                                     f"e.g. {name}=2:process:512MB", param_hint="--queue")
        if ceiling:
            try:
                ceilings[name] = parse_memory_limit(ceiling, f"queue {name}") or ceiling
            except ConfigurationError as exc:
                raise click.BadParameter(f"{item!r}: {exc}", param_hint="--queue") from None
        if mode not in ("", "thread", "process"):
            raise click.BadParameter(f"{item!r}: executor must be 'thread' or 'process'",
                                     param_hint="--queue")
        try:
            pools[name] = int(size) if size else 10
        except ValueError:
            raise click.BadParameter(f"{item!r}: expected NAME=CONCURRENCY, e.g. emails=20",
                                     param_hint="--queue") from None
        if mode == "process":
            in_process.add(name)
    return pools, in_process, ceilings


_UNITS = {"": 1, "b": 1, "k": 2**10, "kb": 2**10, "kib": 2**10, "m": 2**20, "mb": 2**20,
          "mib": 2**20, "g": 2**30, "gb": 2**30, "gib": 2**30}


def parse_size(text: str | None) -> int | None:
    """``--max-memory-per-child`` values: ``512MB``, ``1.5GB``, ``800M`` -> bytes (a KB, MB
    or GB is 1024 of the one below, as RSS is counted)."""
    if text is None:
        return None
    found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", text)
    unit = found.group(2).lower() if found else ""
    if not found or unit not in _UNITS:
        raise click.BadParameter(f"{text!r}: expected a size such as 512MB or 2GB",
                                 param_hint="--max-memory-per-child")
    size = int(float(found.group(1)) * _UNITS[unit])
    if size < 2**20:
        raise click.BadParameter(f"{text!r}: less than 1MB; a Python process needs more "
                                 "than that (did you mean MB?)",
                                 param_hint="--max-memory-per-child")
    return size
