-- Storage parameters for the tables a queue rewrites all day (issue 31; docs/deploy.md,
-- "Tuning the queue table"). Each job row is inserted, rewritten by its claim, its
-- completion and often its checkpoints, then deleted by the pruner: several dead tuples
-- per job, while the rows retained (finished history) can be millions. Postgres's
-- defaults wait for a fifth of a table to be dead before vacuuming it: with ten million
-- rows retained, two million dead versions, whose entries the claim index walks over.
-- Setting these takes a SHARE UPDATE EXCLUSIVE lock, which claims and inserts do not
-- wait on; the fillfactor applies to pages written from now on (nothing is rewritten).
ALTER TABLE {schema}.jobs SET (
    -- Vacuum once 1% of the rows plus 1000 have died, not 20%: dead versions are
    -- removed while they are few, so claims keep walking a small claim index.
    autovacuum_vacuum_scale_factor = 0.01,
    autovacuum_vacuum_threshold = 1000,
    -- Analyse once 2% of the rows plus 1000 have changed, not 10%: the claim variants
    -- with task limits are planned at each call, and a backlog loaded in bulk must
    -- reach the statistics before a plan that sorts every waiting job looks cheaper
    -- than the claim index's walk (docs/architecture.md, "Claiming").
    autovacuum_analyze_scale_factor = 0.02,
    autovacuum_analyze_threshold = 1000,
    -- A job is updated in place several times: a tenth of each page kept free lets the
    -- new version stay on its page (a HOT update, no index entry, when no indexed
    -- column changes: checkpoints, progress; a same-page version otherwise).
    fillfactor = 90
);

-- The small tables rewritten on every heartbeat, claim or lease renewal: no column
-- their updates change is indexed, so with half of each page free every update can be
-- HOT and cleaned by page pruning between vacuums. They stay a few pages either way.
ALTER TABLE {schema}.workers SET (fillfactor = 50);
ALTER TABLE {schema}.leaders SET (fillfactor = 50);
ALTER TABLE {schema}.rate_buckets SET (fillfactor = 50);
ALTER TABLE {schema}.fair_cursors SET (fillfactor = 50);
