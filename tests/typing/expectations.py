"""What a type checker must say about an app built on shiftwork (checked by
tests/test_typing.py: mypy --strict on this file). A line ending in ``# E: code`` must
have that error; every other line must have none."""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any, assert_type

from shiftwork import App, Batch, BatchItem, JobContext, JobHandle, Task, Workflow
from shiftwork.model.schedule_values import Catchup

app = App("sqlite:///typing.db")


@app.task
def send_welcome(user_id: int, template: str = "welcome") -> None: ...


@app.task(queue="reports", max_attempts=3)
def report(ctx: JobContext, account_id: int, month: str) -> str:
    return f"{account_id}-{month}"


@app.task(queue="io")
async def fetch(url: str) -> bytes:
    return b""


@app.task(queue="sync", rate_limit="10/s", group_by="account_id", group_concurrency=2)
def sync_account(account_id: int) -> None: ...


@app.task(queue="bulk", batch=Batch(size=100, timeout=1.0))
def send_many(items: list[BatchItem]) -> list[object]:
    return [None for _ in items]


@app.workflow
def place_order(wf: Workflow, order_id: int) -> None: ...


# The context (and the Workflow) is not one of the task's arguments.
welcome_task: Task[[int, str], None] = send_welcome
report_task: Task[[int, str], str] = report
fetch_task: Task[[str], Coroutine[Any, Any, bytes]] = fetch
order_task: Task[[int], None] = place_order
wrong_task: Task[[JobContext, int, str], str] = report  # E: assignment
assert_type(send_welcome.enqueue(42), JobHandle[None])
assert_type(report.enqueue(7, "2026-11").result(timeout=5), str)
assert_type(report.enqueue(7, "2026-11").id, int)
report.enqueue(7, "2026-11").result(timeout="soon")  # E: arg-type
fetch_call = assert_type(fetch("https://example.com"), Coroutine[Any, Any, bytes])
fetch_call.close()

send_welcome.enqueue(42, template="x")
send_welcome.using(delay=5).enqueue(43)
send_welcome.enqueue("not-an-int")  # E: arg-type
send_welcome.enqueue(42, templat="x")  # E: call-arg
report.enqueue(7, "2026-11")
report.enqueue(7)  # E: call-arg
place_order.enqueue("order-1")  # E: arg-type
fetch.call("https://example.com")
sync_account.enqueue(3)
sync_account.enqueue(account="3")  # E: call-arg

app.schedule("nightly", "0 2 * * *", report, (7, "2026-11"), catchup="all", overlap="buffer_one")
app.schedule("hourly", "0 * * * *", send_welcome, (1,), catchup=Catchup.SKIP)
app.schedule("typo", "0 * * * *", send_welcome, (1,), catchup="everything")  # E: arg-type
app.schedule("typo2", "0 * * * *", send_welcome, (1,), overlap="queue")  # E: arg-type
app.schedule("typo3", "0 * * * *", send_welcome, (1,), jitter="5s")  # E: arg-type

# A batch task's jobs take any arguments (each item's args and kwargs).
send_many.enqueue("a@example.com", subject="hi")
send_many.enqueue_many([("b@example.com",)])
app.task(queue="bulk2", batch=Batch(size=10), timeout=5)  # E: call-overload
