-- Named queries for partitioned history (store/postgres/partitions.py, issue 31). The
-- DDL below names relations that change (a partition, a leaf): those are psycopg
-- sql.SQL placeholders ({part}, {leaf}, {bound}...), filled with quoted identifiers and
-- literals by partitions.py. {schema} and {hot} are filled when the store loads.

-- name: history_layout_get
-- One row once the jobs table is partitioned: the partitions' width, and the instant
-- from which finished jobs go to partitions (before it they stayed in jobs_hot).
SELECT interval_seconds, since FROM {schema}.history_layout

-- name: history_foreign_keys
-- The foreign keys that point at the jobs table (every one cascades a job's deletion to
-- its rows): a partitioned table cannot be referenced, so the conversion drops them and
-- jobs_forget deletes those rows instead.
SELECT c.conrelid::regclass::text, c.conname, a.attname
FROM pg_constraint c
JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1]
WHERE c.confrelid = '{schema}.jobs'::regclass AND c.contype = 'f'
ORDER BY 1

-- name: history_bound_add
-- Every finished job so far, or finishing before the first partition starts, stays in
-- the table that becomes jobs_hot: this constraint says so, and lets each partition be
-- created without scanning jobs_hot for rows that would belong to it. NOT VALID: added
-- under a moment's lock; validated by the next statement without blocking writes.
ALTER TABLE {schema}.jobs ADD CONSTRAINT jobs_hot_bound
    CHECK (finished_at IS NULL OR finished_at < {bound}) NOT VALID

-- name: history_bound_validate
-- A full scan under SHARE UPDATE EXCLUSIVE: claims, inserts and completions go on.
ALTER TABLE {schema}.jobs VALIDATE CONSTRAINT jobs_hot_bound

-- name: history_events_index
-- The rows jobs_forget deletes by job: workflow_events had no index leading with it.
CREATE INDEX CONCURRENTLY IF NOT EXISTS workflow_events_job_idx
    ON {schema}.workflow_events (job_id)

-- name: history_swap
-- The one short transaction under the table's lock: the identity becomes a sequence the
-- partitioned parent owns (a partition cannot be an identity's table), the table is
-- renamed jobs_hot, and a parent named jobs, with the same columns, takes it as its
-- DEFAULT partition (no scan: there is no other partition yet).
CREATE SEQUENCE {schema}.jobs_id_history_seq AS bigint;
SELECT setval('{schema}.jobs_id_history_seq',
              nextval(pg_get_serial_sequence('{schema}.jobs', 'id')));
ALTER TABLE {schema}.jobs ALTER COLUMN id DROP IDENTITY;
ALTER TABLE {schema}.jobs ALTER COLUMN id SET DEFAULT nextval('{schema}.jobs_id_history_seq');
ALTER TABLE {schema}.jobs RENAME TO jobs_hot;
CREATE TABLE {schema}.jobs (LIKE {schema}.jobs_hot INCLUDING DEFAULTS)
    PARTITION BY RANGE (finished_at);
ALTER SEQUENCE {schema}.jobs_id_history_seq OWNED BY {schema}.jobs.id;
ALTER TABLE {schema}.jobs ATTACH PARTITION {schema}.jobs_hot DEFAULT;
CREATE TABLE {schema}.history_layout (
    one              boolean PRIMARY KEY DEFAULT true CHECK (one),
    interval_seconds integer     NOT NULL,
    since            timestamptz NOT NULL,
    converted_at     timestamptz NOT NULL DEFAULT now()
)

-- name: history_layout_add
INSERT INTO {schema}.history_layout (interval_seconds, since) VALUES ({seconds}, {bound})

-- name: history_part_create
-- A range of finish times, split by state: succeeded and cancelled jobs in one leaf,
-- dead ones in another, each dropped at its own retention. The claim path never meets
-- them: its statements name waiting or running states, which no leaf holds.
CREATE TABLE {part} PARTITION OF {schema}.jobs FOR VALUES FROM ({start}) TO ({end})
    PARTITION BY LIST (state);
CREATE TABLE {done} PARTITION OF {part} FOR VALUES IN ('succeeded', 'cancelled');
CREATE TABLE {dead} PARTITION OF {part} FOR VALUES IN ('dead')

-- name: history_later_create
-- Jobs finishing past the last range made (a clock far ahead, maintenance stopped for
-- days) land here rather than failing; the next maintenance moves them into the ranges
-- it makes. Its CHECK names the finished states, so that plans for waiting or running
-- jobs exclude it as they exclude the ranges' leaves.
CREATE TABLE {later} PARTITION OF {schema}.jobs FOR VALUES FROM ({start}) TO (MAXVALUE);
ALTER TABLE {later} ADD CONSTRAINT jobs_history_later_finished
    CHECK (state IN ('succeeded', 'cancelled', 'dead'))

-- name: history_later_detach
ALTER TABLE {schema}.jobs DETACH PARTITION {later}

-- name: history_later_move
-- What landed past the ranges and now has a range: routed into it, with its id.
WITH moved AS (DELETE FROM {later} WHERE finished_at < {end} RETURNING *)
INSERT INTO {schema}.jobs SELECT * FROM moved

-- name: history_later_attach
-- A scan of the catch-all alone, which holds nothing in the normal run.
ALTER TABLE {schema}.jobs ATTACH PARTITION {later} FOR VALUES FROM ({start}) TO (MAXVALUE)

-- name: history_hot_indexes
-- jobs_hot's indexes that can hold a finished job (no predicate, or one naming a
-- finished state), copied onto each leaf: lookups by id, group and tags, the finished
-- and dead pages. The claim and lease indexes name only live states.
SELECT pg_get_indexdef(i.indexrelid), c.relname
FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
WHERE i.indrelid = '{schema}.jobs_hot'::regclass
  AND (i.indpred IS NULL
       OR pg_get_expr(i.indpred, i.indrelid) ~ '''(succeeded|cancelled|dead)''')
ORDER BY c.relname

-- name: history_parts
-- The ranges and their leaves, with each leaf's size on disk.
SELECT p.relname, l.relname, pg_total_relation_size(l.oid)
FROM pg_inherits pi
JOIN pg_class p ON p.oid = pi.inhrelid
JOIN pg_namespace n ON n.oid = p.relnamespace
LEFT JOIN pg_inherits li ON li.inhparent = p.oid
LEFT JOIN pg_class l ON l.oid = li.inhrelid
WHERE pi.inhparent = '{schema}.jobs'::regclass AND p.relname ~ '^jobs_h[0-9]{10}$'
ORDER BY p.relname, l.relname

-- name: history_leaf_forget
-- The rows of other tables that belonged to a leaf's jobs (the foreign keys' cascade,
-- done by hand before the leaf is dropped): one statement per table, {child} and {col}.
DELETE FROM {child} c USING {leaf} j WHERE c.{col} = j.id

-- name: history_drop
DROP TABLE {rel}
