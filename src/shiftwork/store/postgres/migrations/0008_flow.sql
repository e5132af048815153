-- Flow control: one token bucket per rate limit (queue:<name>, task:<name>).
-- updated_at may lie in the future after a push-back (ctx.rate_limited): no refill till then.
CREATE TABLE {schema}.rate_buckets (
    key        text PRIMARY KEY,
    tokens     double precision NOT NULL,
    updated_at timestamptz NOT NULL
);
