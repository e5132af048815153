"""The bottom layer: errors, states, the clock, settings, payload and name checks,
events, redaction, backoff and the service life cycle. Nothing here does I/O or imports
anything above it."""
