"""Integrations with other libraries, each importing its library only when used:
:mod:`shiftwork.contrib.sqlalchemy` (``task.using(session=...)``) and
:mod:`shiftwork.contrib.django`."""
