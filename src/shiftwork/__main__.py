"""`python -m shiftwork`: the command line."""

from .cli import main

main()
