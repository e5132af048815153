"""An app whose database is not there (port 1), for start-up error tests."""

from shiftwork import App

app = App("postgresql://postgres@127.0.0.1:1/nowhere")


@app.task
def noop() -> None: ...
