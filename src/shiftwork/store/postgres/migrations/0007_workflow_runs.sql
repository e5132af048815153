-- Durable workflows, issue 13: each instance's status (the decision to compensate is a
-- row, not a memory), its code version; each step's place in the body and a digest of its
-- arguments (replay is checked); outcomes out of band; event dedupe keys.
CREATE TABLE {schema}.workflow_runs (
    job_id       bigint      PRIMARY KEY REFERENCES {schema}.jobs (id) ON DELETE CASCADE,
    status       text        NOT NULL CHECK (status IN ('running', 'compensating', 'succeeded',
                                                        'failed', 'compensated', 'cancelled')),
    version      text        NOT NULL,
    cancelled    boolean     NOT NULL DEFAULT false,  -- compensating because of a cancel
    cause        text,                                -- why it compensates or failed
    last_attempt integer,     -- the attempt that was the last of the budget (see runner.py)
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL
);

ALTER TABLE {schema}.workflow_steps
    ADD COLUMN position   integer,
    ADD COLUMN kind       text    NOT NULL DEFAULT 'step',
    ADD COLUMN digest     text,
    ADD COLUMN outcome    text,    -- NULL: its result; 'timed_out', 'failed': out of band
    ADD COLUMN tries      integer NOT NULL DEFAULT 0,
    ADD COLUMN started_at timestamptz;

ALTER TABLE {schema}.workflow_events ADD COLUMN key text;
CREATE UNIQUE INDEX workflow_events_key_idx ON {schema}.workflow_events (job_id, name, key)
    WHERE key IS NOT NULL;
