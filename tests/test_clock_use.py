"""Decisions read time through the runtime's clock (core/clock.py), which tests move; the
code that reads real time directly is this list, each for a reason that is not a
decision a test must steer. A new direct read fails here until it is given one."""

from __future__ import annotations

import re

from .conftest import ROOT

SRC = ROOT / "src" / "shiftwork"
DIRECT = re.compile(r"\btime\.(?:monotonic|time)\(\)|\bdatetime\.now\(")

#: module -> why it reads real time
REAL_TIME = {
    "core/clock.py": "the clock itself (SystemClock)",
    "core/bounds.py": "an error message's example, not a call",
    "cli/cron.py": "`shiftwork cron` previews from now by default",
    "cli/demo.py": "the demo's progress on screen",
    "jobs/context.py": "pacing progress writes (at most one per interval of real time)",
    "jobs/waiting.py": "a caller's real wait for a result (timeout)",
    "jobs/stream_reader.py": "a reader's real wait for the next stream value (timeout)",
    "observe/http.py": "socket timeouts of the metrics server",
    "schedules/scheduler.py": "the length of its own query, taken off a real wait",
    "store/sqlite/store.py": "the busy timeout of a real lock wait",
    "store/sqlite/wakeups.py": "polling the file's data_version in real time",
    "testing/pytest_plugin.py": "the fake clock's starting instant",
    "worker/completer.py": "flush: a real wait for outcomes to be written",
    "worker/decide.py": "an attempt's measured duration",
    "worker/heartbeat.py": "measuring how long a beat took",
    "worker/job_logs.py": "a log line's wall time",
    "worker/maintenance/maintainer.py": "pacing the leader's duties (their thread's cadence)",
    "worker/process.py": "deadlines of a real child process",
    "worker/producer.py": "measuring claims, and a real wait for in-flight jobs",
    "worker/run.py": "when an attempt began, for its measured duration",
    "worker/supervisor.py": "pacing restarts of real processes",
    "workflow/talk.py": "a caller's real wait for an update's result (timeout)",
    "worker/worker.py": "real waits: reaching the database at start, the grace at shutdown, "
                        "the watchdog",
}


def test_real_time_is_read_only_where_listed() -> None:
    found = {str(p.relative_to(SRC)) for p in SRC.rglob("*.py") if DIRECT.search(p.read_text())}
    unlisted = sorted(found - set(REAL_TIME))
    assert not unlisted, (f"{unlisted} read real time directly: use the runtime's clock "
                          "(rt.clock.now() / .monotonic()), or add the module to REAL_TIME "
                          "with the reason")
    stale = sorted(set(REAL_TIME) - found)
    assert not stale, f"{stale} no longer read real time: take them off REAL_TIME"
