-- Named queries for the jobs table's own health (observe/table_health.py). Each reads
-- catalog and statistics views only, never the table: a health probe or a metrics
-- scrape must stay cheap on a table a vacuum cannot clean.

-- name: table_health_table
-- The statistics collector's counts (as of the last flush by each backend, within a
-- second or so) and the vacuum times; the heap's size is a stat() of its files.
SELECT s.n_live_tup, s.n_dead_tup, s.last_autovacuum, s.last_autoanalyze, s.last_vacuum,
       pg_relation_size(c.oid)
FROM pg_class c LEFT JOIN pg_stat_all_tables s ON s.relid = c.oid
WHERE c.oid = '{hot}'::regclass

-- name: table_health_indexes
-- Each index of the jobs table: its size, and its wasted space estimated from the
-- catalog alone (pgstattuple would measure it, but it is an extension not always
-- installed, and it reads the whole index). The estimate: the leaf pages the index's
-- rows would fill packed at its fillfactor (the row count and pages of the last VACUUM
-- or ANALYZE, from pg_class; key widths from pg_stats; 8 bytes of tuple header, a 4-byte
-- line pointer, 8-byte alignment, 24 bytes of page header and 16 of b-tree special
-- space) against the pages it held then, the share scaled to its size now. B-tree only;
-- inner pages are left out (about one page in a hundred). NULL when it cannot tell: never
-- analysed, an expression key, not a b-tree.
WITH ix AS (
    SELECT c.oid, c.relname, c.relpages, c.reltuples, am.amname, i.indkey::int2[] AS keys,
           i.indrelid,
           coalesce((SELECT split_part(o, '=', 2)::numeric FROM unnest(c.reloptions) AS o
                     WHERE o ~ '^fillfactor='), 90) AS fillfactor,
           current_setting('block_size')::numeric AS block
    FROM pg_index i
    JOIN pg_class c ON c.oid = i.indexrelid
    JOIN pg_am am ON am.oid = c.relam
    WHERE i.indrelid = '{hot}'::regclass
), widths AS (
    SELECT ix.oid, sum(st.avg_width * (1 - st.null_frac)) AS width,
           count(*) FILTER (WHERE st.avg_width IS NULL) AS unknown
    FROM ix
    JOIN pg_class t ON t.oid = ix.indrelid
    JOIN pg_namespace n ON n.oid = t.relnamespace
    CROSS JOIN LATERAL unnest(ix.keys) AS k(attnum)
    LEFT JOIN pg_attribute a ON a.attrelid = ix.indrelid AND a.attnum = k.attnum
    LEFT JOIN pg_stats st ON st.schemaname = n.nspname AND st.tablename = t.relname
                         AND st.attname = a.attname AND NOT st.inherited
    GROUP BY ix.oid
), packed AS (
    SELECT ix.*, ceil(ix.reltuples * (ceil((8 + w.width) / 8) * 8 + 4)
                      / ((ix.block - 24 - 16) * ix.fillfactor / 100)) + 1 AS pages_packed,
           w.unknown
    FROM ix JOIN widths w ON w.oid = ix.oid
)
SELECT relname, pg_relation_size(oid),
       CASE WHEN amname = 'btree' AND unknown = 0 AND reltuples >= 0 AND relpages > 0
            THEN (greatest(0, relpages - pages_packed) / relpages
                  * pg_relation_size(oid))::bigint END
FROM packed
ORDER BY relname

-- name: table_health_holders
-- What holds the xmin horizon back, the oldest first: this database's open transactions
-- (their snapshot's xmin, or their own xid once they wrote), its prepared transactions,
-- and every replication slot (a physical slot's xmin, with hot_standby_feedback, holds
-- back every table; a logical slot's catalog_xmin only the system catalogs). Backends of
-- other databases do not hold back this database's tables; a walsender's xmin (a standby
-- with hot_standby_feedback and no slot) holds back every database's.
SELECT kind, xid_age, age_seconds, pid, application_name, name, state, query_start, query,
       catalog_only
FROM (
    SELECT 'transaction' AS kind, greatest(age(backend_xid), age(backend_xmin)) AS xid_age,
           extract(epoch FROM now() - xact_start)::float8 AS age_seconds, pid,
           application_name, NULL::text AS name, state, query_start,
           left(query, 200) AS query, false AS catalog_only
    FROM pg_stat_activity
    WHERE (datname = current_database() OR datname IS NULL)  -- NULL: a walsender, whose
      AND pid <> pg_backend_pid()                -- standby's feedback holds every database
      AND (backend_xid IS NOT NULL OR backend_xmin IS NOT NULL)
    UNION ALL
    SELECT 'prepared', age(transaction), extract(epoch FROM now() - prepared)::float8, NULL,
           NULL, gid, NULL, prepared, NULL, false
    FROM pg_prepared_xacts
    WHERE database = current_database()
    UNION ALL
    SELECT 'replication_slot', age(coalesce(xmin, catalog_xmin)), NULL, active_pid, NULL,
           slot_name::text, CASE WHEN active THEN 'active' ELSE 'inactive' END, NULL, NULL,
           xmin IS NULL
    FROM pg_replication_slots
    WHERE xmin IS NOT NULL OR catalog_xmin IS NOT NULL
) AS held
ORDER BY xid_age DESC, age_seconds DESC NULLS LAST
LIMIT 5
