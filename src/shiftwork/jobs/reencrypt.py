"""Key rotation: rewrite sealed payloads with the current key, a bounded batch at a time.

After ``Keys({"k2": new, "k1": old}, current="k2")`` new values are sealed with k2 and
old rows still open with k1; :func:`reencrypt` walks the jobs in id order and reseals
every value sealed with another key than the current one (and, with ``seal_clear``,
seals the clear values of tasks now declared encrypted), so that k1 can then be dropped.
Each batch is one read and one transaction; a value no key of the ring opens is counted
and left as it is. Safe beside running workers: a column is rewritten only while it
still holds what the batch read (store/sealed.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from shiftwork.core.bounds import whole
from shiftwork.core.crypt import Keys, is_sealed
from shiftwork.core.errors import ConfigurationError, EncryptionKeyError

if TYPE_CHECKING:
    from shiftwork.runtime import Runtime
    from shiftwork.store.sealed import SealedRow

_compact = json.JSONEncoder(separators=(",", ":")).encode
_ERROR_TEXTS = ("message", "traceback")


@dataclass
class Rotation:
    """How far a rotation got: jobs read, jobs and values rewritten, values left sealed
    with a key this ring does not hold (or that no key opens)."""

    scanned: int = 0
    rewritten: int = 0
    values: int = 0
    unreadable: int = 0
    last_id: int = 0

    def as_dict(self) -> dict[str, int]:
        return {"scanned": self.scanned, "rewritten": self.rewritten, "values": self.values,
                "unreadable": self.unreadable, "last_id": self.last_id}


class _Rekey:
    """One row's values resealed with the current key (counting into ``rotation``)."""

    def __init__(self, keys: Keys, rotation: Rotation, seal_clear: bool) -> None:
        self.keys = keys
        self.rotation = rotation
        self.seal_clear = seal_clear

    def value(self, value: Any, aad: str, clear: bool) -> tuple[Any, bool]:
        """``value`` (decoded JSON) resealed when it needs it, and sealed when it is
        ``clear`` and should not be; (value, changed)."""
        if is_sealed(value):
            if value["$enc"] == self.keys.current:
                return value, False
            try:
                text = self.keys.open(value, aad)
            except EncryptionKeyError:
                self.rotation.unreadable += 1
                return value, False
        elif clear and value is not None:
            text = _compact(value)
        else:
            return value, False
        self.rotation.values += 1
        return self.keys.seal(text, aad), True

    def row(self, row: SealedRow, encrypted: bool) -> dict[str, tuple[str | None, str]]:
        """The columns of ``row`` to rewrite, {column: (old text, new text)}."""
        clear = self.seal_clear and encrypted
        out: dict[str, tuple[str | None, str]] = {}
        for column, text in row.values.items():
            if text is None:
                continue
            value = json.loads(text)
            aad = f"args:{row.task}" if column == "args" else f"{column}:{row.id}"
            if column in ("args", "result", "checkpoint"):
                new, changed = self.value(value, aad, clear)
            elif column == "progress" and isinstance(value, dict) and "message" in value:
                message, changed = self.value(value["message"], aad, clear)
                new = {**value, "message": message}
            elif column == "errors" and isinstance(value, list):
                new, changed = self._errors(value, row.id, clear)
            else:
                continue
            if changed:
                out[column] = (text, _compact(new))
        return out

    def _errors(self, records: list[Any], job_id: int, clear: bool) -> tuple[list[Any], bool]:
        changed, out = False, []
        for record in records:
            if isinstance(record, dict):
                record = dict(record)
                for name in _ERROR_TEXTS:
                    if name in record:
                        record[name], one = self.value(record[name],
                                                       f"error.{name}:{job_id}", clear)
                        changed = changed or one
            out.append(record)
        return out, changed


def reencrypt(rt: Runtime, *, batch: int = 500, seal_clear: bool = True,
              on_batch: Callable[[Rotation], None] | None = None) -> Rotation:
    """Reseal every job's payloads with the current key of the App's ring, ``batch``
    jobs per transaction; ``on_batch`` hears the running totals after each one.

    ``seal_clear``: also seal the clear values of the tasks the App declares encrypted
    (written before they were). Their unique keys, computed at enqueue, stay as written.
    """
    keys = rt.keys
    if keys is None:
        raise ConfigurationError("a rotation needs the App's keys: App(..., "
                                 "encryption=Keys({...}, current=...))")
    whole(batch, "reencrypt: batch", 1, 10_000)
    rotation = Rotation()
    rekey = _Rekey(keys, rotation, seal_clear)
    tasks = rt.registry.tasks
    while True:
        rows = rt.store.sealed.page(rotation.last_id, batch)
        if not rows:
            return rotation
        changes = []
        for row in rows:
            task = tasks.get(row.task)
            columns = rekey.row(row, task is not None and task.options.encrypt)
            if columns:
                changes.append((row.id, columns))
        if changes:
            rotation.rewritten += rt.store.sealed.reseal(changes)
        rotation.scanned += len(rows)
        rotation.last_id = rows[-1].id
        if on_batch is not None:
            on_batch(rotation)
