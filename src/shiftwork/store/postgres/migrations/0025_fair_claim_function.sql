-- The fair queue's claim as a function, as the common and the rate-limited claims are
-- (migration 0016), for the same reason: its statement must keep the plan that walks the
-- group index and looks the picked jobs up by id whatever the table held when the plan was
-- made. As a prepared statement, a generic plan made while the table was empty (a worker
-- started before the first enqueue) began to hash-join a scan of the whole jobs table once
-- its rows grew wider (migrations 0019 and 0020 added columns: an empty table's row
-- estimate is a number of pages over the row width); here sequential, bitmap and hash
-- plans are off, so its only plan is the index walk. The statement is
-- store/postgres/flow.sql's former fair_claim, unchanged but for its parameters.
CREATE FUNCTION {schema}.claim_jobs_fair(p_queue text, p_limit integer, p_worker text,
                                         p_lease double precision, p_now timestamptz)
RETURNS TABLE (id bigint, task text, queue text, args text, attempt integer,
               max_attempts integer, timeout double precision, checkpoint text, meta text,
               priority smallint, run_at timestamptz, uncounted integer)
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
SET enable_bitmapscan = off
SET enable_hashjoin = off
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH RECURSIVE
    cur AS (
        SELECT coalesce((SELECT last_group FROM {schema}.fair_cursors
                         WHERE queue = p_queue FOR UPDATE), '') AS last_group
    ),
    win AS (  -- the next waiting jobs after the cursor in group order: one walk of the index
        SELECT meta->>'group' AS grp, id, run_at <= coalesce(p_now, now()) AS due, priority, run_at
        FROM {schema}.jobs
        WHERE queue = p_queue AND state IN ('available', 'scheduled', 'retrying')
          AND meta ? 'group' AND meta->>'group' > (SELECT last_group FROM cur)
        ORDER BY meta->>'group', priority DESC, run_at, id
        -- (a subquery: planned for its values or not, the plan guesses the same, and the
        -- statement keeps its generic plan, made once per connection)
        LIMIT (SELECT p_limit::int)
    ),
    win_g AS (  -- its groups, each at its first job there, which is its head in claim order
        SELECT DISTINCT ON (grp) grp, id, due FROM win ORDER BY grp, priority DESC, run_at, id
    ),
    after_g(grp, id, due, n, nd) AS (
        -- the groups in the window, then (when it did not reach the end of the keys) a step
        -- of the index per group, past the groups with a long backlog: until as many groups
        -- as the claim wants have a due first job (nd counts them), or 256 groups (a group
        -- whose jobs are all due later must not hold up the others)
        (SELECT grp, id, due, n, nd FROM (
             SELECT grp, id, due, row_number() OVER w AS n,
                    count(*) FILTER (WHERE due) OVER w AS nd
             FROM win_g WINDOW w AS (ORDER BY grp)) g
         WHERE nd - due::int < p_limit AND n <= 256
         ORDER BY grp)
        UNION ALL
        SELECT x.grp, x.id, x.due, a.n + 1, a.nd + x.due::int FROM after_g a
        CROSS JOIN LATERAL (
            SELECT j.meta->>'group' AS grp, j.id, j.run_at <= coalesce(p_now, now()) AS due FROM {schema}.jobs j
            WHERE j.queue = p_queue AND j.state IN ('available', 'scheduled', 'retrying')
              AND j.meta ? 'group' AND j.meta->>'group' > a.grp
            ORDER BY j.meta->>'group', j.priority DESC, j.run_at, j.id LIMIT 1) x
        WHERE a.nd < p_limit AND a.n < 256 AND a.n >= (SELECT count(*) FROM win_g)
          AND (SELECT count(*) FROM win) = (SELECT p_limit::int)
    ),
    before_g(grp, id, due, n, nd) AS (  -- only when the keys after the cursor ran out
        (SELECT meta->>'group', id, run_at <= coalesce(p_now, now()), 1, (run_at <= coalesce(p_now, now()))::int
         FROM {schema}.jobs
         WHERE queue = p_queue AND state IN ('available', 'scheduled', 'retrying')
           AND meta ? 'group' AND meta->>'group' > ''
           AND (SELECT max(nd) FROM after_g) IS DISTINCT FROM p_limit
           AND (SELECT count(*) FROM after_g) < 256
         ORDER BY meta->>'group', priority DESC, run_at, id LIMIT 1)
        UNION ALL
        SELECT x.grp, x.id, x.due, b.n + 1, b.nd + x.due::int FROM before_g b
        CROSS JOIN LATERAL (
            SELECT j.meta->>'group' AS grp, j.id, j.run_at <= coalesce(p_now, now()) AS due FROM {schema}.jobs j
            WHERE j.queue = p_queue AND j.state IN ('available', 'scheduled', 'retrying')
              AND j.meta ? 'group' AND j.meta->>'group' > b.grp
            ORDER BY j.meta->>'group', j.priority DESC, j.run_at, j.id LIMIT 1) x
        WHERE b.grp < (SELECT last_group FROM cur)
          AND b.nd + coalesce((SELECT max(nd) FROM after_g), 0) < p_limit
          AND b.n + (SELECT count(*) FROM after_g) < 256
    ),
    turns AS (
        SELECT grp, id, due, ord FROM (
            SELECT grp, id, due, n AS ord FROM after_g
            UNION ALL SELECT NULL, NULL, false, 500000
            UNION ALL SELECT grp, id, due, 1000000 + n FROM before_g
            WHERE grp <= (SELECT last_group FROM cur)
        ) t
    ),
    share AS (  -- few groups: each takes an even share of the claim
        SELECT greatest(1, ceil(p_limit::numeric / greatest(1, count(grp))))::int AS n
        FROM turns
    ),
    heads AS (
        SELECT t.id, t.grp, t.ord, 1::bigint AS k FROM turns t  -- found by the step
        WHERE t.due AND (SELECT n FROM share) = 1
        UNION ALL
        SELECT h.id, t.grp, t.ord, h.k
        FROM (SELECT * FROM turns
              WHERE grp IS NOT NULL AND NOT (due AND (SELECT n FROM share) = 1)) t
        CROSS JOIN LATERAL (
            SELECT j.id, row_number() OVER (ORDER BY j.priority DESC, j.run_at, j.id) AS k
            FROM {schema}.jobs j
            WHERE j.queue = p_queue
              AND j.state IN ('available', 'scheduled', 'retrying')
              AND j.meta ? 'group' AND j.meta->>'group' = t.grp AND j.run_at <= coalesce(p_now, now())
            ORDER BY j.priority DESC, j.run_at, j.id
            LIMIT (SELECT n FROM share)
        ) h
        UNION ALL
        (SELECT w.id, NULL, 500000, row_number() OVER (ORDER BY w.priority DESC, w.run_at, w.id)
         FROM (SELECT id, meta, priority, run_at FROM {schema}.jobs
               WHERE queue = p_queue AND state IN ('available', 'scheduled', 'retrying')
                 AND run_at <= coalesce(p_now, now())
               ORDER BY priority DESC, run_at, id
               LIMIT 50) w
         WHERE NOT w.meta ? 'group'
           -- not looked at when the groups' heads found by the steps fill the claim
           AND ((SELECT n FROM share) > 1 OR (SELECT count(*) FROM after_g WHERE due) < p_limit)
         ORDER BY w.priority DESC, w.run_at, w.id
         LIMIT (SELECT n FROM share))
    ),
    picked AS (
        SELECT id, grp, ord, k FROM heads
        WHERE NOT EXISTS (SELECT 1 FROM {schema}.queue_settings s
                          WHERE s.queue = p_queue AND s.paused)
        ORDER BY k, ord LIMIT p_limit
    ),
    claimed AS (
        UPDATE {schema}.jobs j
        SET state = 'running', attempt = j.attempt + 1, worker_id = p_worker,
            attempted_at = coalesce(p_now, now()), lease_expires_at = coalesce(p_now, now()) + make_interval(secs => p_lease)
        FROM picked p
        -- The state as an IS TRUE test: written plainly it is the claim index's partial
        -- condition, and a plan made while the table was empty looked each picked job up by
        -- walking that whole index instead of by its id (once per job, through a flood).
        WHERE j.id = p.id AND (j.state IN ('available', 'scheduled', 'retrying')) IS TRUE
        RETURNING j.id, j.task, j.queue, j.args::text, j.attempt, j.max_attempts, j.timeout,
                  j.checkpoint::text, j.meta::text, j.priority, j.run_at, j.uncounted, p.grp, p.ord, p.k
    ),
    moved AS (
        INSERT INTO {schema}.fair_cursors AS f (queue, last_group, served)
        SELECT p_queue, coalesce(grp, ''), 1 FROM claimed ORDER BY k DESC, ord DESC LIMIT 1
        ON CONFLICT (queue) DO UPDATE SET last_group = excluded.last_group, served = 1
    )
    SELECT id, task, queue, args, attempt, max_attempts, timeout, checkpoint, meta, priority,
           run_at, uncounted FROM claimed;
END
$$;
