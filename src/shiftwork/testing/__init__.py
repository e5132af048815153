"""Tools for users' own tests: run jobs here and now, look at what was enqueued.

>>> from shiftwork.testing import drain, enqueued, inline
>>> signup(user_id=7)                       # your code enqueues a job
>>> assert [j.args for j in enqueued(app, send_welcome)] == [[7]]
>>> drain(app)                              # run everything due, here, now
>>> with inline(app):                       # or: run each job as it is enqueued
...     signup(user_id=8)

The pytest plugin (``shiftwork.pytest_plugin``, loaded by pytest on its own) has fixtures
for these.
"""

from .assertions import assert_enqueued
from .drain import DrainResult, drain, enqueued, job_states
from .inline import inline

__all__ = ["DrainResult", "assert_enqueued", "drain", "enqueued", "inline", "job_states"]
