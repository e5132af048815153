-- Long jobs: paused queues and the records of effects that must happen once.

-- One row per queue that was ever paused; the claim skips a queue whose row says paused.
CREATE TABLE queue_settings (
    queue      TEXT PRIMARY KEY,
    paused     INTEGER NOT NULL DEFAULT 0,
    updated_at REAL    NOT NULL
);

-- ctx.once(key, ...) / tx.once(key, ...): the first run's result, kept until expires_at.
CREATE TABLE effect_keys (
    key        TEXT PRIMARY KEY,
    job_id     INTEGER,
    attempt    INTEGER,
    result     TEXT,
    created_at REAL NOT NULL,
    expires_at REAL NOT NULL
);
CREATE INDEX effect_keys_expires_idx ON effect_keys (expires_at);
