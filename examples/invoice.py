"""An invoice job keyed on (customer, period) that cannot charge twice.

    shiftwork migrate --app examples.invoice:app   # creates invoice-example.db
    shiftwork worker examples.invoice:app -q billing=4
    python examples/invoice.py acme 2026-10      # run it as often as you like

Two guards, for the two kinds of effect:

* the charge goes to a payment API, outside our database: ``ctx.once`` records its result
  under the key ``charge:acme:2026-10`` and the same key is sent to the API as its
  idempotency key, so even a worker killed between the charge and the record (the one
  gap ``ctx.once`` cannot close) does not charge twice;
* the invoice row is written in our database: ``tx.once`` inside ``ctx.transaction()``
  commits the row, its key and the job's fenced state together, exactly once.

The enqueue is also keyed (``key=``), so a second request while one is active is a no-op.
"""

from __future__ import annotations

import os
import sys
import uuid
from typing import Any

from shiftwork import App, JobContext

DSN = os.environ.get("SHIFTWORK_DSN", "sqlite:///invoice-example.db")
app = App(DSN)
SQLITE = DSN.startswith("sqlite")  # not app.store: importing must not touch the database
INVOICES = "invoices" if SQLITE else f'"{app.schema}".invoices'


class PaymentAPI:
    """Stands in for a payment provider that honours idempotency keys."""

    def __init__(self) -> None:
        self.charges: dict[str, dict[str, Any]] = {}

    def charge(self, customer: str, cents: int, idempotency_key: str) -> dict[str, Any]:
        if idempotency_key not in self.charges:  # the provider's own de-duplication
            self.charges[idempotency_key] = {"id": f"ch_{uuid.uuid4().hex[:12]}",
                                             "customer": customer, "amount": cents}
        return self.charges[idempotency_key]


payments = PaymentAPI()


@app.task(name="examples.invoice", queue="billing", max_attempts=10)
def invoice(ctx: JobContext, customer: str, period: str) -> dict[str, Any]:
    cents = 4200  # look up usage for (customer, period) here
    key = f"charge:{customer}:{period}"
    charge = ctx.once(key, lambda: payments.charge(customer, cents, idempotency_key=key))
    mark = "?" if SQLITE else "%s"
    with ctx.transaction() as tx:
        tx.execute(f"CREATE TABLE IF NOT EXISTS {INVOICES} "
                   "(customer text, period text, charge_id text, cents integer)")
        tx.once(f"invoice-row:{customer}:{period}", lambda: tx.execute(
            f"INSERT INTO {INVOICES} VALUES ({mark}, {mark}, {mark}, {mark})",
            (customer, period, charge["id"], cents)) and None)
    return {"charge": charge["id"], "cents": cents}


if __name__ == "__main__":
    customer, period = (sys.argv[1:3] + ["acme", "2026-10"][len(sys.argv[1:3]):])[:2]
    result = invoice.using(key=f"{customer}:{period}").enqueue(customer, period)
    print(f"job {result.id} {'enqueued' if result.created else 'already waiting or running'}")
