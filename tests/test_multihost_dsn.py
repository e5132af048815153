"""Multi-host DSNs (a primary and its standbys, for a failover: docs/deploy.md, "High
availability"): messages name each server with its own port, and never the password."""

from __future__ import annotations

import pytest

from shiftwork import App, StorageError
from shiftwork.core.redact import describe_dsn, redact

from .faults.pgcluster import _free_port


@pytest.mark.parametrize(("dsn", "described"), [
    ("postgresql://u:pw@db1:5432,db2:5433/jobs?target_session_attrs=read-write",
     "db1:5432,db2:5433/jobs"),
    ("postgresql://u@db1,db2/jobs", "db1:5432,db2:5432/jobs"),
    ("host=db1,db2 port=5432,5433 dbname=jobs target_session_attrs=read-write",
     "db1:5432,db2:5433/jobs"),
    ("host=db1,db2 port=6432 dbname=jobs", "db1:6432,db2:6432/jobs"),  # one port for all
    ("postgresql://[::1]:5432,db2:5433/jobs", "[::1]:5432,db2:5433/jobs"),
    ("hostaddr=10.0.0.1,10.0.0.2 port=5432,5433 dbname=jobs",
     "10.0.0.1:5432,10.0.0.2:5433/jobs"),
    ("postgresql://db1:5432/jobs", "db1:5432/jobs"),  # one host: as before
])
def test_a_multi_host_dsn_is_described_server_by_server(dsn: str, described: str) -> None:
    """The host list and the port list were printed side by side (``db1,db2:5432,5433``),
    which reads as one host with a strange port."""
    assert describe_dsn(dsn) == described


@pytest.mark.parametrize("shape", ["url", "keywords"])
def test_an_unreachable_multi_host_dsn_names_both_servers_and_no_password(shape: str) -> None:
    one, two = _free_port(), _free_port()  # nothing listens on either
    dsn = (f"postgresql://admin:hunter2@127.0.0.1:{one},127.0.0.1:{two}/db"
           "?target_session_attrs=read-write&connect_timeout=1" if shape == "url" else
           f"host=127.0.0.1,127.0.0.1 port={one},{two} dbname=db user=admin "
           "password=hunter2 target_session_attrs=read-write connect_timeout=1")
    assert "hunter2" not in redact(dsn)
    app = App(dsn)
    try:
        with pytest.raises(StorageError) as caught:
            app.queue_stats()
    finally:
        app.close()
    message = str(caught.value)
    assert f"127.0.0.1:{one},127.0.0.1:{two}/db" in message, message
    assert "hunter2" not in message
