"""``shiftwork demo``: a small shop's background work, on a throwaway SQLite file.

Three queues by latency class (urgent one-time codes, bulk thumbnails, slow
reports), and a CRM sync that keeps failing so you can see retries end in
``dead``. This module is the demo's App and tasks (workers load ``shiftwork.cli.demo_app:app``);
``cli/demo.py`` runs it: two worker processes drain a burst while the table updates live.
"""

from __future__ import annotations

import os
import random
import tempfile
import time

from shiftwork.app import App
from shiftwork.core.backoff import Backoff
from shiftwork.core.settings import Settings

DEFAULT_DB = os.path.join(tempfile.gettempdir(), "shiftwork-demo.db")
# Read once, when this module makes its App: `shiftwork demo` sets it before importing this
# module, and passes it to the worker processes it starts.
DB = os.environ.get("SHIFTWORK_DEMO_DB") or DEFAULT_DB

app = App(f"sqlite:///{DB}", settings=Settings(heartbeat_interval=1.0, lease_seconds=5.0,
                                               poll_interval=0.2))


@app.task(queue="urgent", priority=10, max_attempts=5)
def send_login_code(user_id: int, channel: str = "sms") -> dict[str, object]:
    time.sleep(0.005)  # a call to the SMS gateway
    return {"user_id": user_id, "channel": channel}


@app.task(queue="bulk", max_attempts=5, retry=Backoff(initial=0.2, maximum=1.0))
def make_thumbnail(image_id: int, width: int = 320) -> None:
    time.sleep(random.uniform(0.01, 0.04))
    if random.random() < 0.03:  # a flaky storage read, fixed by a retry
        raise OSError(f"image {image_id}: storage read timed out")


@app.task(queue="slow", concurrency=2, timeout=30)
def monthly_report(account_id: int, month: str) -> None:
    time.sleep(random.uniform(0.3, 0.8))


class CRMUnavailable(Exception):
    pass


@app.task(queue="bulk", max_attempts=3, retry=Backoff(initial=0.3, maximum=1.0, jitter=False))
def sync_to_crm(contact_id: int) -> None:
    raise CRMUnavailable(f"CRM API answered 503 for contact {contact_id}")


def enqueue_burst(n_jobs: int) -> None:
    """Enqueue about ``n_jobs`` jobs over the three queues, three of them doomed."""
    n_reports = max(n_jobs // 30, 4)
    n_codes = max(n_jobs // 6, 10)
    n_thumbs = max(n_jobs - n_reports - n_codes - 3, 10)
    app.enqueue_many([make_thumbnail.call(i) for i in range(n_thumbs)])
    app.enqueue_many([monthly_report.call(a, "2026-10") for a in range(n_reports)])
    app.enqueue_many([sync_to_crm.call(c) for c in range(3)])
    for u in range(n_codes):  # one at a time, as a web app would
        send_login_code.enqueue(u)
