-- Flow control: one token bucket per rate limit (queue:<name>, task:<name>).
-- updated_at (Unix seconds) may lie in the future after a push-back: no refill till then.
CREATE TABLE rate_buckets (
    key        TEXT PRIMARY KEY,
    tokens     REAL NOT NULL,
    updated_at REAL NOT NULL
);
