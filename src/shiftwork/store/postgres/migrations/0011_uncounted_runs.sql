-- Runs that did not count as attempts (a snooze or workflow suspension, a hand-back at
-- shutdown, a claim whose reply was lost, a pause at a checkpoint). attempt still rises
-- on every run (it fences writes); attempt - uncounted is what max_attempts bounds.
ALTER TABLE {schema}.jobs ADD COLUMN uncounted integer NOT NULL DEFAULT 0;

-- The run (jobs.attempt) that last began the workflow's body: the lease rescue tells a run
-- that died before it began (claimed ahead; not an attempt) from one that died in the body.
ALTER TABLE {schema}.workflow_runs ADD COLUMN began_attempt integer;
