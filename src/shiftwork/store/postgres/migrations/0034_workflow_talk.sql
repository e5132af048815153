-- Talking to a running workflow (issue 32): the state it publishes (queries) and the
-- requests it is sent (updates). Both are deleted with their job (the pruner's).
--
-- workflow_state: one row per published key; stamp orders the writes by their place in
-- the body (position of the next durable call, then the count of set_state calls since
-- the last one), so a replay, which makes the same calls again, never moves it back.
CREATE TABLE {schema}.workflow_state (
    job_id     bigint      NOT NULL REFERENCES {schema}.jobs (id) ON DELETE CASCADE,
    key        text        NOT NULL,
    value      jsonb       NOT NULL,
    stamp      bigint      NOT NULL,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (job_id, key)
);

-- workflow_updates: a request, pending until the workflow resolves it: accepted (its
-- result, recorded as the step named in step, in the same transaction) or rejected.
CREATE TABLE {schema}.workflow_updates (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id      bigint      NOT NULL REFERENCES {schema}.jobs (id) ON DELETE CASCADE,
    name        text        NOT NULL,
    payload     jsonb,
    status      text        NOT NULL DEFAULT 'pending'
                CHECK (status IN ('pending', 'accepted', 'rejected')),
    result      jsonb,
    error       jsonb,
    step        text,
    created_at  timestamptz NOT NULL,
    resolved_at timestamptz
);
CREATE INDEX workflow_updates_pending_idx ON {schema}.workflow_updates (job_id, name, id)
    WHERE status = 'pending';
CREATE INDEX workflow_updates_job_idx ON {schema}.workflow_updates (job_id, id);
