-- Groups counted, not linked (docs/composition.md): a member names its group on its own
-- row, and the group keeps how many members have not finished. The callback waits for
-- the group (one dependency), not for an edge per member: a group of 10,000 wrote 20,000
-- rows of edges and memberships and an edge update per member's finish; now a member's
-- finish is counted by the statement that finishes it.
--
-- group_mark: 0 not a member; 1 a member whose finish its group has not counted yet;
-- 2 counted by the completion that finished it (the completion returns new values only,
-- so "2" is how it tells its own count from an earlier one; it turns into 3 the next time
-- the row is completed); 3 counted.
ALTER TABLE {schema}.jobs ADD COLUMN group_id bigint;
ALTER TABLE {schema}.jobs ADD COLUMN group_mark smallint NOT NULL DEFAULT 0;
-- Members in order (ids are given in the order of the group's requests).
CREATE INDEX jobs_group_members_idx ON {schema}.jobs (group_id, id) WHERE group_id IS NOT NULL;
-- Members finished but not counted (a rescue to dead or a cancel between its statements,
-- a crash): the sweep's, and only those rows are in it (a member's completion counts it
-- in the same update, so it never enters).
CREATE INDEX jobs_group_uncounted_idx ON {schema}.jobs (id)
    WHERE group_mark = 1 AND state IN ('succeeded', 'dead', 'cancelled');

-- pending: members not finished; failed: members finished without success. on_failure:
-- the callback's ("cancel": cancelled as soon as a member fails).
ALTER TABLE {schema}.job_groups ADD COLUMN pending integer NOT NULL DEFAULT 0;
ALTER TABLE {schema}.job_groups ADD COLUMN failed integer NOT NULL DEFAULT 0;
ALTER TABLE {schema}.job_groups ADD COLUMN on_failure text NOT NULL DEFAULT 'run'
    CHECK (on_failure IN ('cancel', 'run'));
-- settled_at: when the callback was made available or cancelled. The open groups with a
-- callback are few (the sweep reads them here, not the groups' history).
ALTER TABLE {schema}.job_groups ADD COLUMN settled_at timestamptz;
CREATE INDEX job_groups_open_idx ON {schema}.job_groups (id)
    WHERE settled_at IS NULL AND callback_id IS NOT NULL;

-- The groups already there: their members onto their rows, their counts, and each
-- callback waiting on its group instead of on its edges.
UPDATE {schema}.jobs j
SET group_id = m.group_id,
    group_mark = CASE WHEN j.state IN ('succeeded', 'dead', 'cancelled') THEN 3 ELSE 1 END
FROM {schema}.job_group_members m WHERE m.job_id = j.id;
UPDATE {schema}.job_groups g
SET pending = c.pending, failed = c.failed
FROM (SELECT m.group_id,
             count(*) FILTER (WHERE j.state NOT IN ('succeeded', 'dead', 'cancelled')) AS pending,
             count(*) FILTER (WHERE j.state IN ('dead', 'cancelled')) AS failed
      FROM {schema}.job_group_members m JOIN {schema}.jobs j ON j.id = m.job_id
      GROUP BY m.group_id) c
WHERE g.id = c.group_id;
UPDATE {schema}.job_groups g SET on_failure = d.on_failure
FROM (SELECT DISTINCT job_id, on_failure FROM {schema}.job_deps) d
WHERE d.job_id = g.callback_id;
DELETE FROM {schema}.job_deps d USING {schema}.job_groups g WHERE d.job_id = g.callback_id;
UPDATE {schema}.jobs c SET deps_pending = 1
FROM {schema}.job_groups g
WHERE c.id = g.callback_id AND c.state = 'scheduled' AND c.deps_pending > 0;
UPDATE {schema}.job_groups g SET settled_at = g.created_at
WHERE g.callback_id IS NOT NULL AND NOT EXISTS (
    SELECT 1 FROM {schema}.jobs c
    WHERE c.id = g.callback_id AND c.state = 'scheduled' AND c.deps_pending > 0);
DROP TABLE {schema}.job_group_members;
