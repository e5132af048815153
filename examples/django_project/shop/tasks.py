"""The shop's tasks (imported at start-up by shiftwork's Django app): one declared on the
project's App, one with Django's own ``@task`` (settings.TASKS: shiftwork's backend)."""

try:
    from django.tasks import task  # Django 6
except ImportError:
    from django_tasks import task  # the backport, on Django 5.2

from shiftwork.contrib.django import app

SENT: list[int] = []  # what the example "sent" (a real one would email)


@app.task(queue="emails", max_attempts=5)
def send_receipt(order_id: int) -> None:
    """Email the order's receipt."""
    from shop.models import Order

    Order.objects.get(id=order_id)  # the order is there: it committed with this job
    SENT.append(order_id)


@task(queue_name="emails")
def invoice_total(order_id: int) -> str:
    """A Django task: its result is read back with Django's API (get_result)."""
    from shop.models import Order

    return f"invoice for {Order.objects.get(id=order_id).email}"
