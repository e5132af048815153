"""pytest fixtures for apps built on shiftwork (loaded by the ``pytest11`` entry point)."""
