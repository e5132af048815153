-- The audit of bulk actions by filter (issue 29): who retried, cancelled or deleted
-- what, when, and how many. Small: the leader's pruner keeps the newest rows only.
CREATE TABLE {schema}.bulk_actions (
    id      bigserial   PRIMARY KEY,
    at      timestamptz NOT NULL,
    who     text        NOT NULL,
    action  text        NOT NULL,
    filter  text        NOT NULL,
    matched bigint      NOT NULL,
    done    bigint      NOT NULL
);
