"""A plain shiftwork task whose name a Django task would take."""

from shiftwork.contrib.django import app


@app.task(name="dtasks.clash.taken")
def plain() -> None:
    return None


def taken() -> None:
    """A module-level function whose module path is the shiftwork task's name."""
