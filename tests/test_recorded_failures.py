"""The failures shiftwork's SQL records by name name importable classes (a tool such as
Django's TaskError imports a record's type)."""

from __future__ import annotations

import importlib
import re

from shiftwork.core import errors
from shiftwork.core.errors import RECORDED_FAILURES, ShiftworkError

from .conftest import ROOT


def test_every_type_the_sql_records_is_a_class_of_core_errors() -> None:
    sql = "\n".join(p.read_text() for p in (ROOT / "src" / "shiftwork" / "store").rglob("*.sql"))
    recorded = set(re.findall(r"'type', '([A-Za-z]+)'", sql))
    assert recorded == RECORDED_FAILURES
    for name in recorded:
        assert issubclass(getattr(errors, name), ShiftworkError), name


def test_the_django_backend_names_an_importable_class_for_each() -> None:
    from shiftwork.contrib.django.tasks_results import exception_path

    for name in [*RECORDED_FAILURES, "ValueError", "myapp.errors.Declined"]:
        path = exception_path(name)
        module, _, attr = path.rpartition(".")
        if name.startswith("myapp."):
            assert path == name  # the user's own, recorded with its module
            continue
        assert issubclass(getattr(importlib.import_module(module), attr), BaseException)
