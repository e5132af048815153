"""An app with encrypted tasks, its keys from SHIFTWORK_KEYS (the encryption tests)."""

import os

from shiftwork import App, JobContext, Keys

app = App(os.environ["SHIFTWORK_TEST_DSN"],
          schema=os.environ.get("SHIFTWORK_TEST_SCHEMA", "shiftwork"),
          encryption=Keys.from_env(), encrypt_all=True)


@app.task(name="charge")
def charge(card: str) -> dict[str, str]:
    return {"charged": card}


@app.task(name="long_charge", queue="children", max_attempts=1)
def long_charge(ctx: JobContext, card: str) -> str:
    ctx.progress(1, 1, f"charging {card}")
    ctx.checkpoint({"card": card})
    if card == "fail":
        raise ValueError(f"declined in the child: {card}")
    return f"charged {card}"
