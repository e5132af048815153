"""The shop's tasks, on the project's App (imported at start-up by shiftwork's Django app)."""

from shiftwork.contrib.django import app

SENT: list[int] = []  # what the example "sent" (a real one would email)


@app.task(queue="emails", max_attempts=5)
def send_receipt(order_id: int) -> None:
    """Email the order's receipt."""
    from shop.models import Order

    Order.objects.get(id=order_id)  # the order is there: it committed with this job
    SENT.append(order_id)
