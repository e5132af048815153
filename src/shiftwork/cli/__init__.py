"""The ``shiftwork`` command line, one module per command of its tree (see ``root``)."""

from shiftwork.cli.root import main

__all__ = ["main"]
