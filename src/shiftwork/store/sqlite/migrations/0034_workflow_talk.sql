-- Talking to a running workflow (issue 32): see the PostgreSQL migration of the same number.
CREATE TABLE workflow_state (
    job_id     INTEGER NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    key        TEXT    NOT NULL,
    value      TEXT    NOT NULL,
    stamp      INTEGER NOT NULL,
    updated_at REAL    NOT NULL,
    PRIMARY KEY (job_id, key)
);

CREATE TABLE workflow_updates (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id      INTEGER NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    name        TEXT    NOT NULL,
    payload     TEXT,
    status      TEXT    NOT NULL DEFAULT 'pending'
                CHECK (status IN ('pending', 'accepted', 'rejected')),
    result      TEXT,
    error       TEXT,
    step        TEXT,
    created_at  REAL    NOT NULL,
    resolved_at REAL
);
CREATE INDEX workflow_updates_pending_idx ON workflow_updates (job_id, name, id)
    WHERE status = 'pending';
CREATE INDEX workflow_updates_job_idx ON workflow_updates (job_id, id);
