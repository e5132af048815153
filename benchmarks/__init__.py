"""Benchmarks for shiftwork and its Python peers: ``python -m benchmarks run --help``."""
