-- Durable workflows: each step's recorded result, and the events a workflow waits for.
CREATE TABLE {schema}.workflow_steps (
    job_id     bigint      NOT NULL REFERENCES {schema}.jobs (id) ON DELETE CASCADE,
    name       text        NOT NULL,
    status     text        NOT NULL CHECK (status IN ('done', 'sleeping', 'waiting')),
    result     jsonb,
    wake_at    timestamptz,
    attempt    integer     NOT NULL,
    updated_at timestamptz NOT NULL,
    seq        bigint      GENERATED ALWAYS AS IDENTITY,
    PRIMARY KEY (job_id, name)
);

CREATE TABLE {schema}.workflow_events (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id        bigint      NOT NULL REFERENCES {schema}.jobs (id) ON DELETE CASCADE,
    name          text        NOT NULL,
    payload       jsonb,
    created_at    timestamptz NOT NULL,
    consumed_step text
);
CREATE INDEX workflow_events_pending_idx ON {schema}.workflow_events (job_id, name, id)
    WHERE consumed_step IS NULL;
