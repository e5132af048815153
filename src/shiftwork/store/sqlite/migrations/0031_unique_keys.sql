-- Dedup windows (issue 30): see the PostgreSQL migration of the same number. states is
-- the holding states joined by commas (NULL: any state); expires_at Unix seconds.
CREATE TABLE unique_keys (
    key        TEXT    PRIMARY KEY,
    job_id     INTEGER NOT NULL,
    states     TEXT,
    expires_at REAL
);
CREATE INDEX unique_keys_expires_idx ON unique_keys (expires_at) WHERE expires_at IS NOT NULL;
