"""A schedule's stored row and its definition, both ways (the store returns rows)."""

from __future__ import annotations

import json
from typing import Any

from shiftwork.model.items import ItemsCheck
from shiftwork.model.records import ScheduleRun
from shiftwork.model.schedule_values import DeadManCheck, RunKind, RunStatus
from shiftwork.schedules.definition import ScheduleDef

_DEF_COLUMNS = ("name", "cron", "tz", "task", "args", "queue", "priority", "max_attempts",
                "timeout", "catchup", "catchup_window", "catchup_cap", "overlap",
                "starting_deadline", "jitter", "expect_success_within", "pause_on_failure",
                "expect_items", "expect_items_rule")
#: Definitions read by the leader's passes, by their stored values: the same schedules
#: come due pass after pass, and building (and checking) a ScheduleDef is most of reading one.
_DEFS: dict[tuple[Any, ...], ScheduleDef] = {}
_DEFS_MAX = 20_000


def def_from_row(row: dict[str, Any]) -> ScheduleDef:
    if not isinstance(row["args"], str):  # decoded JSON (not hashable): not remembered
        return _def_from_row(row)
    key = tuple([row.get(k) for k in _DEF_COLUMNS])
    defn = _DEFS.get(key)
    if defn is None:
        if len(_DEFS) >= _DEFS_MAX:
            _DEFS.clear()
        defn = _DEFS[key] = _def_from_row(row)
    return defn


def _def_from_row(row: dict[str, Any]) -> ScheduleDef:
    args = row["args"]
    return ScheduleDef(
        name=row["name"], cron=row["cron"], tz=row["tz"], task=row["task"],
        args_json=args if isinstance(args, str) else json.dumps(args, separators=(",", ":")),
        queue=row["queue"], priority=row["priority"], max_attempts=row["max_attempts"],
        timeout=row["timeout"], catchup=row["catchup"], catchup_window=row["catchup_window"],
        catchup_cap=row["catchup_cap"], overlap=row["overlap"],
        starting_deadline=row["starting_deadline"], jitter=row["jitter"],
        expect_success_within=row["expect_success_within"],
        pause_on_failure=bool(row["pause_on_failure"]),
        expect_items=row.get("expect_items"), expect_items_rule=row.get("expect_items_rule"),
    )


def def_params(d: ScheduleDef) -> dict[str, Any]:
    return {
        "name": d.name, "cron": d.cron, "tz": d.tz, "task": d.task, "args": d.args_json,
        "queue": d.queue, "priority": d.priority, "max_attempts": d.max_attempts,
        "timeout": d.timeout, "catchup": d.catchup.value, "catchup_window": d.catchup_window,
        "catchup_cap": d.catchup_cap, "overlap": d.overlap.value,
        "starting_deadline": d.starting_deadline, "jitter": d.jitter,
        "expect_success_within": d.expect_success_within,
        "pause_on_failure": d.pause_on_failure, "definition_hash": d.definition_hash(),
        "expect_items": d.expect_items, "expect_items_rule": d.expect_items_rule,
    }


def run_from_row(r: dict[str, Any]) -> ScheduleRun:
    return ScheduleRun(schedule=r["schedule"], fire_at=r["fire_at"], kind=RunKind(r["kind"]),
                       status=RunStatus(r["status"]), reason=r["reason"], job_id=r["job_id"],
                       run_at=r["run_at"], recorded_at=r["recorded_at"],
                       finished_at=r["finished_at"],
                       dms=DeadManCheck(r["dms"]) if r["dms"] is not None else None,
                       items=r.get("items"),
                       items_check=ItemsCheck(r["items_check"]) if r.get("items_check") else None,
                       items_note=r.get("items_note"))
