"""The job page's edit form (priority, queue, run at) read into ``app.update_job``'s
arguments; a bad field is a ``ConfigurationError`` shown as the page's notice."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from shiftwork.core.errors import ConfigurationError


def edit_fields(form: Any) -> dict[str, Any]:
    """The fields given (blank ones are left as they are): ``priority`` a whole number,
    ``queue`` a name, ``run_at`` ISO 8601 with a zone; checked again by ``update_job``."""
    out: dict[str, Any] = {}
    priority = str(form.get("priority") or "").strip()
    if priority:
        try:
            out["priority"] = int(priority)
        except ValueError:
            raise ConfigurationError(f"priority must be a whole number, not {priority!r}"
                                     ) from None
    queue = str(form.get("queue") or "").strip()
    if queue:
        out["queue"] = queue
    run_at = str(form.get("run_at") or "").strip()
    if run_at:
        try:
            out["run_at"] = datetime.fromisoformat(run_at.replace("Z", "+00:00"))
        except ValueError:
            raise ConfigurationError(f"run at must be an ISO 8601 instant such as "
                                     f"2026-12-01T09:00:00Z, not {run_at!r}") from None
    return out
