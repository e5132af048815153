-- The `held` state (issue 30): a job a person put on hold is never claimed until it is
-- released. `hold_requested`: a hold asked of a running job; its attempt finishes, and if
-- it would run again (a retry, a snooze, a workflow's sleep) it goes to held instead.
ALTER TABLE {schema}.jobs ADD COLUMN hold_requested boolean NOT NULL DEFAULT false;

-- The states CHECK with `held` among them: added NOT VALID (no scan under the lock of the
-- ALTER), validated after (a scan that takes no lock blocking writes), the old one dropped.
ALTER TABLE {schema}.jobs ADD CONSTRAINT jobs_state_held_check CHECK (
    state IN ('scheduled', 'available', 'running', 'retrying', 'held', 'succeeded', 'dead',
              'cancelled')) NOT VALID;
ALTER TABLE {schema}.jobs VALIDATE CONSTRAINT jobs_state_held_check;
ALTER TABLE {schema}.jobs DROP CONSTRAINT IF EXISTS jobs_state_check;

-- A held job keeps its unique key (it will run once released): the index of active keys
-- names `held` too, so an enqueue with the key finds the held job, and a release never
-- meets a second job holding it. The previous release's inserts (a rolling deploy
-- migrates first) still find this index: their ON CONFLICT condition, the four other
-- states, implies its condition.
DROP INDEX {schema}.jobs_unique_key_idx;
CREATE UNIQUE INDEX jobs_unique_key_idx ON {schema}.jobs (unique_key)
    WHERE unique_key IS NOT NULL
      AND state IN ('scheduled', 'available', 'running', 'retrying', 'held');

-- Held jobs per queue (queues_stats), without reading the history.
CREATE INDEX jobs_held_idx ON {schema}.jobs (queue) WHERE state = 'held';

-- apply: functions.sql
