"""A small app for command-line tests."""

import os

from shiftwork import App

app = App(os.environ["SHIFTWORK_TEST_DSN"], schema=os.environ.get("SHIFTWORK_TEST_SCHEMA",
                                                                  "shiftwork"))


@app.task(name="greet", max_attempts=1)
def greet(name: str) -> str:
    if name == "fail":
        raise RuntimeError("cannot greet fail")
    return f"hello {name}"
