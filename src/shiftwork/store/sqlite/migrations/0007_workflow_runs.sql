-- Durable workflows, issue 13: each instance's status (the decision to compensate is a
-- row, not a memory), its code version; each step's place in the body and a digest of its
-- arguments (replay is checked); outcomes out of band; event dedupe keys.
CREATE TABLE workflow_runs (
    job_id       INTEGER PRIMARY KEY REFERENCES jobs (id) ON DELETE CASCADE,
    status       TEXT    NOT NULL CHECK (status IN ('running', 'compensating', 'succeeded',
                                                    'failed', 'compensated', 'cancelled')),
    version      TEXT    NOT NULL,
    cancelled    INTEGER NOT NULL DEFAULT 0,
    cause        TEXT,
    last_attempt INTEGER,
    created_at   REAL    NOT NULL,
    updated_at   REAL    NOT NULL
);

ALTER TABLE workflow_steps ADD COLUMN position INTEGER;
ALTER TABLE workflow_steps ADD COLUMN kind TEXT NOT NULL DEFAULT 'step';
ALTER TABLE workflow_steps ADD COLUMN digest TEXT;
ALTER TABLE workflow_steps ADD COLUMN outcome TEXT;
ALTER TABLE workflow_steps ADD COLUMN tries INTEGER NOT NULL DEFAULT 0;
ALTER TABLE workflow_steps ADD COLUMN started_at REAL;

ALTER TABLE workflow_events ADD COLUMN key TEXT;
CREATE UNIQUE INDEX workflow_events_key_idx ON workflow_events (job_id, name, key)
    WHERE key IS NOT NULL;
