"""``python -m shiftwork.cli``: the command line (the tests and the demo spawn workers so)."""

from .root import main

main()
