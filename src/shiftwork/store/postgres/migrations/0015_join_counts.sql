-- A join's reports counted (store/joins.py): one row per (parent, key, prefix), bumped by
-- each member's report under the parent's lock, so the last report knows it is last
-- without counting the others (that count made a join of N members cost O(N^2) row
-- visits). A join already under way at the upgrade is counted once, at its next report.
CREATE TABLE {schema}.workflow_joins (
    job_id   bigint NOT NULL REFERENCES {schema}.jobs (id) ON DELETE CASCADE,
    key      text NOT NULL,
    prefix   text NOT NULL,
    reported integer NOT NULL,
    PRIMARY KEY (job_id, key, prefix)
);
