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
ALTER TABLE jobs ADD COLUMN group_id INTEGER;
ALTER TABLE jobs ADD COLUMN group_mark INTEGER NOT NULL DEFAULT 0;
-- Members in order (ids are given in the order of the group's requests).
CREATE INDEX jobs_group_members_idx ON jobs (group_id, id) WHERE group_id IS NOT NULL;
-- Members finished but not counted (a rescue to dead or a cancel between its statements,
-- a crash): the sweep's, and only those rows are in it (a member's completion counts it
-- in the same update, so it never enters).
CREATE INDEX jobs_group_uncounted_idx ON jobs (id)
    WHERE group_mark = 1 AND state IN ('succeeded', 'dead', 'cancelled');

-- pending: members not finished; failed: members finished without success. on_failure:
-- the callback's ("cancel": cancelled as soon as a member fails).
ALTER TABLE job_groups ADD COLUMN pending INTEGER NOT NULL DEFAULT 0;
ALTER TABLE job_groups ADD COLUMN failed INTEGER NOT NULL DEFAULT 0;
ALTER TABLE job_groups ADD COLUMN on_failure TEXT NOT NULL DEFAULT 'run'
    CHECK (on_failure IN ('cancel', 'run'));
-- settled_at: when the callback was made available or cancelled. The open groups with a
-- callback are few (the sweep reads them here, not the groups' history).
ALTER TABLE job_groups ADD COLUMN settled_at REAL;
CREATE INDEX job_groups_open_idx ON job_groups (id)
    WHERE settled_at IS NULL AND callback_id IS NOT NULL;

-- The groups already there: their members onto their rows, their counts, and each
-- callback waiting on its group instead of on its edges.
UPDATE jobs
SET group_id = m.group_id,
    group_mark = CASE WHEN jobs.state IN ('succeeded', 'dead', 'cancelled') THEN 3 ELSE 1 END
FROM job_group_members m WHERE m.job_id = jobs.id;
UPDATE job_groups
SET pending = c.pending, failed = c.failed
FROM (SELECT m.group_id,
             count(*) FILTER (WHERE j.state NOT IN ('succeeded', 'dead', 'cancelled')) AS pending,
             count(*) FILTER (WHERE j.state IN ('dead', 'cancelled')) AS failed
      FROM job_group_members m JOIN jobs j ON j.id = m.job_id
      GROUP BY m.group_id) c
WHERE job_groups.id = c.group_id;
UPDATE job_groups SET on_failure = d.on_failure
FROM (SELECT DISTINCT job_id, on_failure FROM job_deps) d
WHERE d.job_id = job_groups.callback_id;
DELETE FROM job_deps WHERE job_id IN (SELECT callback_id FROM job_groups);
UPDATE jobs SET deps_pending = 1
WHERE id IN (SELECT callback_id FROM job_groups) AND state = 'scheduled' AND deps_pending > 0;
UPDATE job_groups SET settled_at = created_at
WHERE callback_id IS NOT NULL AND NOT EXISTS (
    SELECT 1 FROM jobs c
    WHERE c.id = job_groups.callback_id AND c.state = 'scheduled' AND c.deps_pending > 0);
DROP TABLE job_group_members;
