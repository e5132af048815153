"""Find the user's App from ``module:attribute`` (or a path to a .py file)."""

from __future__ import annotations

from shiftwork.app import App
from shiftwork.worker.importer import import_attribute


def load_app(spec: str) -> App:
    """The App at ``spec`` (``module:attribute`` or ``path.py:attribute``), its import path
    set."""
    app: App = import_attribute(spec, lambda value: isinstance(value, App))
    app.import_path = spec
    return app
