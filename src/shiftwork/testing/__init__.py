"""Tools for users' own tests: run jobs here and now, look at what was enqueued.

>>> from shiftwork.testing import drain, enqueued, inline
>>> signup(user_id=7)                       # your code enqueues a job
>>> assert [j.args for j in enqueued(app, send_welcome)] == [[7]]
>>> drain(app)                              # run everything due, here, now
>>> with inline(app):                       # or: run each job as it is enqueued
...     signup(user_id=8)
>>> assert_replays(app, Path("histories.json"))  # recorded workflows vs the code now

The pytest plugin (``shiftwork.testing.pytest_plugin``, loaded by pytest on its own) has fixtures
for these.
"""

from shiftwork.testing.assertions import assert_enqueued
from shiftwork.testing.drain import DrainResult, drain, enqueued, job_states
from shiftwork.testing.inline import inline
from shiftwork.testing.replay import assert_replays, replay

__all__ = ["DrainResult", "assert_enqueued", "assert_replays", "drain", "enqueued", "inline",
           "job_states", "replay"]
