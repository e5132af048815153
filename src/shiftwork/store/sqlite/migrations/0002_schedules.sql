-- Schedules declared in code, reconciled at worker start; the cursor is the next fire
-- instant not yet decided on.
CREATE TABLE schedules (
    name                  TEXT PRIMARY KEY,
    cron                  TEXT        NOT NULL,
    tz                    TEXT        NOT NULL,
    task                  TEXT        NOT NULL,
    args                  TEXT        NOT NULL,
    queue                 TEXT        NOT NULL,
    priority              INTEGER    NOT NULL DEFAULT 0,
    max_attempts          integer     NOT NULL,
    timeout               REAL,
    catchup               TEXT        NOT NULL,
    catchup_window        REAL,
    catchup_cap           integer     NOT NULL,
    overlap               TEXT        NOT NULL,
    starting_deadline     REAL,
    jitter                REAL NOT NULL DEFAULT 0,
    expect_success_within REAL,
    pause_on_failure      INTEGER     NOT NULL DEFAULT 0,
    definition_hash       TEXT        NOT NULL,
    next_fire_at          REAL,
    paused                INTEGER     NOT NULL DEFAULT 0,
    paused_reason         TEXT,
    catchup_override      TEXT,
    missed_unrecorded     INTEGER      NOT NULL DEFAULT 0,
    created_at            REAL NOT NULL,
    updated_at            REAL NOT NULL,
    removed_at            REAL
);

-- One row per occurrence, ever: the primary key is what makes an occurrence fire once,
-- even after its job has finished and left the jobs table's unique index.
CREATE TABLE schedule_runs (
    schedule    TEXT        NOT NULL,
    fire_at     REAL NOT NULL,
    kind        TEXT        NOT NULL,
    status      TEXT        NOT NULL CHECK (status IN ('pending', 'enqueued', 'succeeded',
                                'failed', 'cancelled', 'missed', 'skipped')),
    reason      TEXT,
    job_id      INTEGER,
    run_at      REAL,
    recorded_at REAL NOT NULL,
    finished_at REAL,
    term        INTEGER,
    dms         TEXT,  -- dead-man check: NULL (not yet), 'ok', 'late', 'none' (not checked)
    dms_at      REAL,
    PRIMARY KEY (schedule, fire_at)
);
CREATE INDEX schedule_runs_open_idx ON schedule_runs (schedule, fire_at)
    WHERE status IN ('pending', 'enqueued');
CREATE INDEX schedule_runs_job_idx ON schedule_runs (job_id) WHERE job_id IS NOT NULL;
CREATE INDEX schedule_runs_dms_idx ON schedule_runs (fire_at) WHERE dms IS NULL;
CREATE INDEX schedule_runs_recorded_idx ON schedule_runs (recorded_at);
