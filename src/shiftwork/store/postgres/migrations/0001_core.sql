CREATE TABLE {schema}.jobs (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    queue            text        NOT NULL,
    task             text        NOT NULL,
    args             jsonb       NOT NULL,
    state            text        NOT NULL CHECK (state IN ('scheduled', 'available', 'running',
                                     'retrying', 'succeeded', 'dead', 'cancelled')),
    priority         smallint    NOT NULL DEFAULT 0,
    attempt          integer     NOT NULL DEFAULT 0,
    max_attempts     integer     NOT NULL,
    run_at           timestamptz NOT NULL,
    created_at       timestamptz NOT NULL,
    attempted_at     timestamptz,
    finished_at      timestamptz,
    lease_expires_at timestamptz,
    worker_id        text,
    unique_key       text,
    timeout          double precision,
    errors           jsonb       NOT NULL DEFAULT '[]',
    result           jsonb,
    progress         jsonb,
    checkpoint       jsonb,
    cancel_requested boolean     NOT NULL DEFAULT false,
    wake_requested   boolean     NOT NULL DEFAULT false,  -- an event arrived for a running workflow
    meta             jsonb       NOT NULL DEFAULT '{}'
) WITH (fillfactor = 80);

-- Claims walk this index in order; it only holds waiting jobs, so it stays small
-- however much history the table keeps.
CREATE INDEX jobs_claim_idx ON {schema}.jobs (queue, priority DESC, run_at, id)
    WHERE state IN ('available', 'scheduled', 'retrying');
-- Oldest waiting job per queue.
CREATE INDEX jobs_waiting_age_idx ON {schema}.jobs (queue, run_at)
    WHERE state IN ('available', 'scheduled', 'retrying');
-- At most one active job per unique key: enforced here, never by check-then-insert.
CREATE UNIQUE INDEX jobs_unique_key_idx ON {schema}.jobs (unique_key)
    WHERE unique_key IS NOT NULL AND state IN ('scheduled', 'available', 'running', 'retrying');
CREATE INDEX jobs_running_lease_idx ON {schema}.jobs (lease_expires_at) WHERE state = 'running';
CREATE INDEX jobs_running_worker_idx ON {schema}.jobs (worker_id, task) WHERE state = 'running';
CREATE INDEX jobs_finished_idx ON {schema}.jobs (finished_at)
    WHERE state IN ('succeeded', 'cancelled', 'dead');
CREATE INDEX jobs_dead_idx ON {schema}.jobs (queue) WHERE state = 'dead';

CREATE TABLE {schema}.workers (
    id           text PRIMARY KEY,
    host         text        NOT NULL,
    pid          integer     NOT NULL,
    queues       jsonb       NOT NULL,
    started_at   timestamptz NOT NULL,
    heartbeat_at timestamptz NOT NULL
);

CREATE TABLE {schema}.leaders (
    name       text PRIMARY KEY,
    owner      text        NOT NULL,
    term       bigint      NOT NULL,
    expires_at timestamptz NOT NULL
);
