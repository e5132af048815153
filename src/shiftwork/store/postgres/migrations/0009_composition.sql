-- Composition (docs/composition.md): results waited on, dependencies, groups.
-- deps_pending: how many jobs this one still waits for. A job with some waits as
-- 'scheduled' at a far-future run_at, so the claim (and its index) never sees it; the
-- completion of its last parent makes it available. watched: something cares when this
-- job finishes (a dependent, or a process waiting on its result): only then does its
-- completion resolve dependencies and notify waiters, so plain jobs pay nothing.
ALTER TABLE {schema}.jobs ADD COLUMN deps_pending integer NOT NULL DEFAULT 0;
ALTER TABLE {schema}.jobs ADD COLUMN watched boolean NOT NULL DEFAULT false;

-- One row per edge "job_id runs after parent_id"; resolved once the parent finished and
-- the dependent's count was taken down (so no edge is counted twice).
CREATE TABLE {schema}.job_deps (
    job_id     bigint  NOT NULL REFERENCES {schema}.jobs (id) ON DELETE CASCADE,
    parent_id  bigint  NOT NULL,  -- no foreign key: an edge outlives a pruned parent
    on_failure text    NOT NULL CHECK (on_failure IN ('cancel', 'run')),
    resolved   boolean NOT NULL DEFAULT false,
    PRIMARY KEY (job_id, parent_id)
) WITH (fillfactor = 80);
-- resolved is in no index: marking an edge resolved is a HOT update (Postgres).
CREATE INDEX job_deps_parent_idx ON {schema}.job_deps (parent_id);

-- A group: its members (in order) and at most one callback, a job that runs after all
-- of them (its edges are in job_deps like any other dependency).
CREATE TABLE {schema}.job_groups (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    total       integer     NOT NULL,
    callback_id bigint,
    created_at  timestamptz NOT NULL
);
CREATE UNIQUE INDEX job_groups_callback_idx ON {schema}.job_groups (callback_id)
    WHERE callback_id IS NOT NULL;
CREATE TABLE {schema}.job_group_members (
    group_id bigint  NOT NULL REFERENCES {schema}.job_groups (id) ON DELETE CASCADE,
    position integer NOT NULL,
    job_id   bigint  NOT NULL REFERENCES {schema}.jobs (id) ON DELETE CASCADE,
    PRIMARY KEY (group_id, position)
);
CREATE INDEX job_group_members_job_idx ON {schema}.job_group_members (job_id);
