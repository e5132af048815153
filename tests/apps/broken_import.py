"""A task module that fails to import, for the worker's error message test."""

import definitely_not_a_real_module  # noqa: F401

from shiftwork import App

app = App("sqlite:///unused.db")
