-- The `held` state (issue 30): a job a person put on hold is never claimed until it is
-- released. `hold_requested`: a hold asked of a running job; its attempt finishes, and if
-- it would run again (a retry, a snooze, a workflow's sleep) it goes to held instead.
ALTER TABLE jobs ADD COLUMN hold_requested INTEGER NOT NULL DEFAULT 0;

-- The states CHECK gains `held`. SQLite cannot alter a constraint; loosening a CHECK is
-- the one change its documentation allows by editing the stored schema text (no row is
-- rewritten, none can fail the looser test), instead of rebuilding the table with all
-- its indexes. The store bumps schema_version after a migration that does this, so every
-- connection reads the new text (store/sqlite/store.py).
PRAGMA writable_schema = ON;
UPDATE sqlite_master
SET sql = replace(sql, '''retrying'', ''succeeded''', '''retrying'', ''held'', ''succeeded''')
WHERE type = 'table' AND name = 'jobs';
PRAGMA writable_schema = OFF;

-- A held job keeps its unique key (it will run once released): a unique index of the
-- active keys with `held` among them, which this release's inserts name. The index of
-- 0001 stays beside it: SQLite matches an upsert's ON CONFLICT to a partial index only
-- by the same condition, so the previous release's inserts (a rolling deploy migrates
-- first) still need it. A later migration may drop it.
CREATE UNIQUE INDEX jobs_unique_key_held_idx ON jobs (unique_key)
    WHERE unique_key IS NOT NULL
      AND state IN ('scheduled', 'available', 'running', 'retrying', 'held');

-- Held jobs per queue (queues_stats), without reading the history.
CREATE INDEX jobs_held_idx ON jobs (queue) WHERE state = 'held';
