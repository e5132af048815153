"""A small app whose tests (test_shop.py) use shiftwork's pytest plugin."""

from __future__ import annotations

from shiftwork import App, Backoff

app = App("sqlite:///shop-production.db", auto_migrate=False)  # the tests swap the database
sent: list[int] = []


@app.task(queue="emails", max_attempts=3, retry=Backoff(initial=60, jitter=False))
def send_welcome(user_id: int) -> None:
    if user_id < 0:
        raise ValueError("no such user")
    sent.append(user_id)


def signup(user_id: int) -> None:
    send_welcome.enqueue(user_id)
