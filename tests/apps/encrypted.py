"""An app with encrypted tasks, its keys from SHIFTWORK_KEYS (the encryption tests)."""

import os

from shiftwork import App, Keys

app = App(os.environ["SHIFTWORK_TEST_DSN"],
          schema=os.environ.get("SHIFTWORK_TEST_SCHEMA", "shiftwork"),
          encryption=Keys.from_env(), encrypt_all=True)


@app.task(name="charge")
def charge(card: str) -> dict[str, str]:
    return {"charged": card}
