"""The app the fleet benchmark's worker processes run (``benchmarks.fleet_app:app``).

Env: BENCH_DSN, BENCH_SCHEMA, BENCH_PGBOUNCER=1, BENCH_LISTEN_DSN, BENCH_POOL_SIZE,
BENCH_RECORD_DIR (each process writes its claim counts there at exit)."""

from __future__ import annotations

import atexit
import json
import os
import threading
import time

from shiftwork import App, Settings

app = App(os.environ["BENCH_DSN"], schema=os.environ.get("BENCH_SCHEMA", "shiftwork"),
          settings=Settings(), pool_size=int(os.environ.get("BENCH_POOL_SIZE", "3")),
          pgbouncer=os.environ.get("BENCH_PGBOUNCER") == "1",
          listen_dsn=os.environ.get("BENCH_LISTEN_DSN") or None)


@app.task(name="fleet.noop", queue="bench", max_attempts=1)
def noop() -> None:
    return None


def _count_claims() -> None:
    """Count this process's claims, and the empty ones (written at exit): the fleet's are
    plain, one statement each (``store.claims.claim``)."""
    claims = app.store.claims
    inner = claims.claim
    counts = {"claims": 0, "empty": 0, "jobs": 0}
    lock = threading.Lock()

    def counted(*args: object, **kwargs: object) -> object:
        out = inner(*args, **kwargs)  # type: ignore[arg-type]
        with lock:
            counts["claims"] += 1
            counts["empty"] += not out
            counts["jobs"] += len(out)
        return out

    claims.claim = counted  # type: ignore[method-assign,assignment]

    def dump() -> None:
        path = os.path.join(os.environ["BENCH_RECORD_DIR"], f"claims-{os.getpid()}.json")
        with lock:
            text = json.dumps(counts)
        with open(path + ".tmp", "w") as f:
            f.write(text)
        os.replace(path + ".tmp", path)

    atexit.register(dump)

    def keep_dumping() -> None:  # a process killed with SIGKILL still leaves its counts
        while True:
            time.sleep(1.0)
            dump()

    threading.Thread(target=keep_dumping, daemon=True).start()


if os.environ.get("BENCH_RECORD_DIR"):
    _count_claims()
