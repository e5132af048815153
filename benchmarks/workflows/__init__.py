"""Durable workflows against DBOS Transact, on the same Postgres, in the same run.

``python -m benchmarks.workflows --peer-python /path/to/venv/bin/python`` (a Python with
the ``bench`` extra, which holds ``dbos``). Each figure runs ours then DBOS's, alternately,
in separate processes: see ``__main__.py`` for the figures and ``ours.py`` /
``dbos_peer.py`` for each side.
"""
