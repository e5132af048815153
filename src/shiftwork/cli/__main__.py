"""``python -m shiftwork.cli``: the command line (the tests and the demo spawn workers so)."""

from shiftwork.cli.root import main

main()
