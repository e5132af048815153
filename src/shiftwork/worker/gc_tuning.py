"""The cyclic garbage collector, set for a process that is a worker and nothing else.

Every job allocates a few dozen short-lived objects (its run, context, outcome, rows),
almost none in reference cycles: reference counting frees them. With the interpreter's
default threshold (a young collection every 700 net allocations) a worker draining
20,000 no-op jobs/s ran a collection every few jobs, each walking what is young, and
older collections walked the whole app (its imports, registry, pools) again and again.

Once the worker is up, :func:`tune_gc` collects once, moves everything alive into the
permanent generation (``gc.freeze``: never walked again, and pages a forked child
shares stay shared), and collects the young generation every 20,000 allocations. Only
``shiftwork worker`` processes (and a supervisor's children) do this: a worker embedded
in another process (``Worker(...).run()`` in a test or a web server) leaves that
process's collector alone. ``--no-gc-tuning`` turns it off.
"""

from __future__ import annotations

import gc

#: Net allocations between young collections (the interpreter's default is 700).
YOUNG_THRESHOLD = 20_000


def tune_gc() -> None:
    gc.collect()
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, max(older, 20), max(oldest, 20))
