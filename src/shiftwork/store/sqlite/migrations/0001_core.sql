CREATE TABLE jobs (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    queue            TEXT    NOT NULL,
    task             TEXT    NOT NULL,
    args             TEXT    NOT NULL,
    state            TEXT    NOT NULL CHECK (state IN ('scheduled', 'available', 'running',
                                 'retrying', 'succeeded', 'dead', 'cancelled')),
    priority         INTEGER NOT NULL DEFAULT 0,
    attempt          INTEGER NOT NULL DEFAULT 0,
    max_attempts     INTEGER NOT NULL,
    run_at           REAL    NOT NULL,  -- Unix seconds, UTC
    created_at       REAL    NOT NULL,
    attempted_at     REAL,
    finished_at      REAL,
    lease_expires_at REAL,
    worker_id        TEXT,
    unique_key       TEXT,
    timeout          REAL,
    errors           TEXT    NOT NULL DEFAULT '[]',
    result           TEXT,
    progress         TEXT,
    checkpoint       TEXT,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    wake_requested   INTEGER NOT NULL DEFAULT 0,  -- an event arrived for a running workflow
    meta             TEXT    NOT NULL DEFAULT '{}'
);

CREATE INDEX jobs_claim_idx ON jobs (queue, priority DESC, run_at, id)
    WHERE state IN ('available', 'scheduled', 'retrying');
CREATE INDEX jobs_waiting_age_idx ON jobs (queue, run_at)
    WHERE state IN ('available', 'scheduled', 'retrying');
CREATE UNIQUE INDEX jobs_unique_key_idx ON jobs (unique_key)
    WHERE unique_key IS NOT NULL AND state IN ('scheduled', 'available', 'running', 'retrying');
CREATE INDEX jobs_running_lease_idx ON jobs (lease_expires_at) WHERE state = 'running';
CREATE INDEX jobs_running_worker_idx ON jobs (worker_id, task) WHERE state = 'running';
CREATE INDEX jobs_finished_idx ON jobs (finished_at)
    WHERE state IN ('succeeded', 'cancelled', 'dead');
CREATE INDEX jobs_dead_idx ON jobs (queue) WHERE state = 'dead';

CREATE TABLE workers (
    id           TEXT PRIMARY KEY,
    host         TEXT    NOT NULL,
    pid          INTEGER NOT NULL,
    queues       TEXT    NOT NULL,
    started_at   REAL    NOT NULL,
    heartbeat_at REAL    NOT NULL
);

CREATE TABLE leaders (
    name       TEXT PRIMARY KEY,
    owner      TEXT    NOT NULL,
    term       INTEGER NOT NULL,
    expires_at REAL    NOT NULL
);
