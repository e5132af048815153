"""Find the user's App from ``module:attribute`` (or a path to a .py file)."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import traceback
from typing import TYPE_CHECKING

from shiftwork.core.callsite import user_traceback
from shiftwork.core.errors import ConfigurationError, DatabaseMissingError, NotMigratedError
from shiftwork.core.names import did_you_mean

if TYPE_CHECKING:
    from shiftwork.app import App


def load_app(spec: str) -> App:
    """The App at ``spec`` (``module:attribute`` or ``path.py:attribute``), its import path
    set."""
    from shiftwork.app import App  # what this loader looks for (imported late: it is above)

    if ":" not in spec:
        raise ConfigurationError(f"app {spec!r}: expected module:attribute, e.g. myapp.jobs:app")
    module_name, attr = spec.rsplit(":", 1)
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        if module_name.endswith(".py"):
            path = os.path.abspath(module_name)
            name = os.path.splitext(os.path.basename(path))[0]
            loader_spec = importlib.util.spec_from_file_location(name, path)
            if loader_spec is None or loader_spec.loader is None:
                raise ConfigurationError(f"app {spec!r}: cannot load {path}")
            module = importlib.util.module_from_spec(loader_spec)
            sys.modules[name] = module
            loader_spec.loader.exec_module(module)
        else:
            module = importlib.import_module(module_name)
    except (NotMigratedError, DatabaseMissingError) as exc:
        # The module read or wrote the store at import time, so no command that imports
        # it (migrate included) can get past it: say so, and how to migrate without it.
        what = str(exc).split(": run ", 1)[0]  # its own advice, to migrate, loops here
        raise ConfigurationError(
            f"app {spec!r}: importing {module_name} used the database before it was "
            f"migrated ({what}).\n  Migrate it without importing the module: "
            f"{exc.migrate_command}\n  or do not touch the database at import time (no "
            "queries or enqueues at the module's top level)") from exc
    except ConfigurationError:
        raise
    except ModuleNotFoundError as exc:
        if exc.name and module_name.startswith(exc.name):
            raise ConfigurationError(f"app {spec!r}: no module named {exc.name!r} "
                                     f"(is it on PYTHONPATH? cwd is {os.getcwd()})") from exc
        raise ConfigurationError(f"app {spec!r}: importing {module_name} failed:\n"
                                 + traceback.format_exc(limit=-3)) from exc
    except Exception as exc:
        # The user's frames (a declaration shiftwork refused ends inside the library).
        raise ConfigurationError(f"app {spec!r}: importing {module_name} failed:\n"
                                 + user_traceback(exc)) from exc
    if not hasattr(module, attr):
        apps = sorted(name for name, value in vars(module).items()
                      if isinstance(value, App))
        raise ConfigurationError(
            f"app {spec!r}: module {module_name} has no attribute {attr!r}"
            f"{did_you_mean(attr, apps)} (Apps in it: {', '.join(apps) or 'none'})")
    app = getattr(module, attr)
    if not isinstance(app, App):
        raise ConfigurationError(f"app {spec!r}: {module_name}.{attr} is not a shiftwork App "
                                 f"(got {type(app).__name__})")
    app.import_path = spec
    return app
