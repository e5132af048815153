-- Composition (docs/composition.md): results waited on, dependencies, groups.
-- deps_pending: how many jobs this one still waits for. A job with some waits as
-- 'scheduled' at a far-future run_at, so the claim (and its index) never sees it; the
-- completion of its last parent makes it available. watched: something cares when this
-- job finishes (a dependent, or a process waiting on its result).
ALTER TABLE jobs ADD COLUMN deps_pending INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN watched INTEGER NOT NULL DEFAULT 0;

CREATE TABLE job_deps (
    job_id     INTEGER NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    parent_id  INTEGER NOT NULL,  -- no foreign key: an edge outlives a pruned parent
    on_failure TEXT    NOT NULL CHECK (on_failure IN ('cancel', 'run')),
    resolved   INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (job_id, parent_id)
);
-- resolved is in no index: marking an edge resolved is a HOT update (Postgres).
CREATE INDEX job_deps_parent_idx ON job_deps (parent_id);

CREATE TABLE job_groups (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    total       INTEGER NOT NULL,
    callback_id INTEGER,
    created_at  REAL    NOT NULL
);
CREATE UNIQUE INDEX job_groups_callback_idx ON job_groups (callback_id)
    WHERE callback_id IS NOT NULL;
CREATE TABLE job_group_members (
    group_id INTEGER NOT NULL REFERENCES job_groups (id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    job_id   INTEGER NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    PRIMARY KEY (group_id, position)
);
CREATE INDEX job_group_members_job_idx ON job_group_members (job_id);
