"""`python -m shiftwork`: the command line."""

from shiftwork.cli import main

main()
