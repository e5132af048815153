-- Durable workflows: each step's recorded result, and the events a workflow waits for.
CREATE TABLE workflow_steps (
    job_id     INTEGER NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    name       TEXT    NOT NULL,
    status     TEXT    NOT NULL CHECK (status IN ('done', 'sleeping', 'waiting')),
    result     TEXT,
    wake_at    REAL,
    attempt    INTEGER NOT NULL,
    updated_at REAL    NOT NULL,
    seq        INTEGER NOT NULL,
    PRIMARY KEY (job_id, name)
);

CREATE TABLE workflow_events (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id        INTEGER NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    name          TEXT    NOT NULL,
    payload       TEXT,
    created_at    REAL    NOT NULL,
    consumed_step TEXT
);
CREATE INDEX workflow_events_pending_idx ON workflow_events (job_id, name, id)
    WHERE consumed_step IS NULL;
