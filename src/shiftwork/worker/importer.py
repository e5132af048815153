"""Import the object a ``module:attribute`` spec (or ``path.py:attribute``) names, with
errors that say what went wrong in the user's module."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import traceback
from collections.abc import Callable
from typing import Any

from shiftwork.core.callsite import user_traceback
from shiftwork.core.errors import ConfigurationError, DatabaseMissingError, NotMigratedError
from shiftwork.core.names import did_you_mean


def import_attribute(spec: str, wanted: Callable[[object], bool], what: str = "App"
                     ) -> Any:
    """The object at ``spec`` (``module:attribute`` or ``path.py:attribute``), refused
    unless ``wanted(obj)``; errors name the ``what`` objects the module holds.

    Below the App: the loader (worker/loader.py) looks for an App, a job's child process
    (worker/process.py) for what has a Runtime."""
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
        apps = sorted(name for name, value in vars(module).items() if wanted(value))
        raise ConfigurationError(
            f"app {spec!r}: module {module_name} has no attribute {attr!r}"
            f"{did_you_mean(attr, apps)} ({what}s in it: {', '.join(apps) or 'none'})")
    found = getattr(module, attr)
    if not wanted(found):
        raise ConfigurationError(f"app {spec!r}: {module_name}.{attr} is not a shiftwork "
                                 f"{what} (got {type(found).__name__})")
    return found
