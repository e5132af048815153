-- Long jobs: paused queues and the records of effects that must happen once.

-- One row per queue that was ever paused; the claim skips a queue whose row says paused.
CREATE TABLE {schema}.queue_settings (
    queue      text PRIMARY KEY,
    paused     boolean     NOT NULL DEFAULT false,
    updated_at timestamptz NOT NULL
);

-- ctx.once(key, ...) / tx.once(key, ...): the first run's result, kept until expires_at.
CREATE TABLE {schema}.effect_keys (
    key        text PRIMARY KEY,
    job_id     bigint,
    attempt    integer,
    result     jsonb,
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL
);
CREATE INDEX effect_keys_expires_idx ON {schema}.effect_keys (expires_at);
