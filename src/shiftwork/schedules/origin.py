"""Schedules added and removed at run time (``app.schedules.add`` / ``.remove``), stored
beside the ones declared in code and told apart by the ``origin`` column.

Code owns what it declares: the start-up reconcile inserts, updates and removes only
``origin = 'code'`` rows. A run-time row is left alone by it, so it survives every worker
start; a name declared in code cannot be added at run time (nor removed that way).
The names and the error live here; the two writes are ``Declarations.add`` and
``Declarations.remove`` (schedules/reconcile.py), on the store's schedule statements.
"""

from __future__ import annotations

from shiftwork.core.errors import ConfigurationError

RUNTIME = "runtime"
CODE = "code"


class ScheduleNameTaken(ConfigurationError):
    """A run-time schedule's name is already used (by code, or by another run-time one)."""
