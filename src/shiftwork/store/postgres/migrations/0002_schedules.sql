-- Schedules declared in code, reconciled at worker start; the cursor is the next fire
-- instant not yet decided on.
CREATE TABLE {schema}.schedules (
    name                  text PRIMARY KEY,
    cron                  text        NOT NULL,
    tz                    text        NOT NULL,
    task                  text        NOT NULL,
    args                  jsonb       NOT NULL,
    queue                 text        NOT NULL,
    priority              smallint    NOT NULL DEFAULT 0,
    max_attempts          integer     NOT NULL,
    timeout               double precision,
    catchup               text        NOT NULL,
    catchup_window        double precision,
    catchup_cap           integer     NOT NULL,
    overlap               text        NOT NULL,
    starting_deadline     double precision,
    jitter                double precision NOT NULL DEFAULT 0,
    expect_success_within double precision,
    pause_on_failure      boolean     NOT NULL DEFAULT false,
    definition_hash       text        NOT NULL,
    next_fire_at          timestamptz,
    paused                boolean     NOT NULL DEFAULT false,
    paused_reason         text,
    catchup_override      text,
    missed_unrecorded     bigint      NOT NULL DEFAULT 0,
    created_at            timestamptz NOT NULL,
    updated_at            timestamptz NOT NULL,
    removed_at            timestamptz
);

-- One row per occurrence, ever: the primary key is what makes an occurrence fire once,
-- even after its job has finished and left the jobs table's unique index.
CREATE TABLE {schema}.schedule_runs (
    schedule    text        NOT NULL,
    fire_at     timestamptz NOT NULL,
    kind        text        NOT NULL,
    status      text        NOT NULL CHECK (status IN ('pending', 'enqueued', 'succeeded',
                                'failed', 'cancelled', 'missed', 'skipped')),
    reason      text,
    job_id      bigint,
    run_at      timestamptz,
    recorded_at timestamptz NOT NULL,
    finished_at timestamptz,
    term        bigint,
    dms         text,  -- dead-man check: NULL (not yet), 'ok', 'late', 'none' (not checked)
    dms_at      timestamptz,
    PRIMARY KEY (schedule, fire_at)
);
CREATE INDEX schedule_runs_open_idx ON {schema}.schedule_runs (schedule, fire_at)
    WHERE status IN ('pending', 'enqueued');
CREATE INDEX schedule_runs_job_idx ON {schema}.schedule_runs (job_id) WHERE job_id IS NOT NULL;
CREATE INDEX schedule_runs_dms_idx ON {schema}.schedule_runs (fire_at) WHERE dms IS NULL;
CREATE INDEX schedule_runs_recorded_idx ON {schema}.schedule_runs (recorded_at);
