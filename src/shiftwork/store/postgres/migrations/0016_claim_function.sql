-- The common claim as a function (store/postgres/jobs.sql, jobs_claim, calls it). Why a
-- function: as a prepared statement its LIMIT is a parameter, for which the generic plan
-- guesses a tenth of the backlog; that plan costs more than one made for the values, so
-- Postgres planned the claim afresh on every call (~0.15 ms of a ~0.6 ms claim of 10).
-- A function can carry plan_cache_mode, so its statement runs under the generic plan,
-- made once per connection, which walks jobs_claim_idx like the custom one
-- (tests/test_claim_plans.py). A generic plan is kept until the table's statistics
-- change: made while the jobs table was empty (a worker started before the first
-- enqueue) it scanned and sorted the whole table on every claim once a flood came (a
-- drain 3x slower), so the functions also turn sequential and bitmap scans off: their
-- only plan is then the index walk, whatever the table held when it was made. The statement has no filters on other columns: a filter
-- lowers the row estimate until sorting every waiting job looks cheaper than the index.
CREATE FUNCTION {schema}.claim_jobs(p_queue text, p_limit integer, p_worker text,
                                    p_lease double precision, p_now timestamptz)
RETURNS TABLE (id bigint, task text, queue text, args text, attempt integer,
               max_attempts integer, timeout double precision, checkpoint text, meta text,
               priority smallint, run_at timestamptz, uncounted integer)
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
SET enable_bitmapscan = off
AS $$
BEGIN
    RETURN QUERY
    WITH next AS (
        SELECT w.id FROM {schema}.jobs w
        WHERE w.queue = p_queue
          AND w.state IN ('available', 'scheduled', 'retrying')
          AND w.run_at <= coalesce(p_now, now())
          -- a paused queue is skipped (evaluated once: it names no jobs column)
          AND NOT EXISTS (SELECT 1 FROM {schema}.queue_settings s
                          WHERE s.queue = p_queue AND s.paused)
        ORDER BY w.priority DESC, w.run_at, w.id
        LIMIT p_limit
        FOR UPDATE SKIP LOCKED
    )
    UPDATE {schema}.jobs j
    SET state = 'running', attempt = j.attempt + 1, worker_id = p_worker,
        attempted_at = coalesce(p_now, now()),
        lease_expires_at = coalesce(p_now, now()) + make_interval(secs => p_lease)
    -- by id through an array: joining the generic LIMIT's guess of rows chose a hash join
    -- over a scan of the whole table
    WHERE j.id = ANY(ARRAY(SELECT n.id FROM next n))
    -- JSON as text: parsed once in Python, and an empty meta not at all
    RETURNING j.id, j.task, j.queue, j.args::text, j.attempt, j.max_attempts, j.timeout,
              j.checkpoint::text, j.meta::text, j.priority, j.run_at, j.uncounted;
END
$$;

-- The two rate-limited claims likewise (store/postgres/flow.sql names them): a queue whose
-- only limit is its rate, and one task's rate. use_column: their statements name columns
-- (id, task, queue...) that are also the functions' result columns.
CREATE FUNCTION {schema}.claim_jobs_queue_rate(
    p_queue text, p_limit integer, p_worker text, p_lease double precision, p_key text,
    p_capacity double precision, p_rate double precision, p_now timestamptz)
RETURNS TABLE (id bigint, task text, queue text, args text, attempt integer,
               max_attempts integer, timeout double precision, checkpoint text, meta text,
               priority smallint, run_at timestamptz, uncounted integer)
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
SET enable_bitmapscan = off
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH b AS (
        SELECT least(p_capacity, tokens + greatest(0, extract(epoch FROM coalesce(p_now, now()) - updated_at))
                                            * p_rate) AS tokens
        FROM {schema}.rate_buckets WHERE key = p_key
        FOR UPDATE
    ),
    next AS (
        SELECT id FROM {schema}.jobs
        WHERE queue = p_queue
          AND state IN ('available', 'scheduled', 'retrying')
          AND run_at <= coalesce(p_now, now())
          AND NOT EXISTS (SELECT 1 FROM {schema}.queue_settings s
                          WHERE s.queue = p_queue AND s.paused)
          AND EXISTS (SELECT 1 FROM b)  -- evaluated first: the bucket is locked before any job
        ORDER BY priority DESC, run_at, id
        -- a constant limit, so the plan walks the claim index; the tokens cut it below
        LIMIT p_limit
        FOR UPDATE SKIP LOCKED
    ),
    take AS (
        SELECT id FROM next LIMIT greatest(0, (SELECT floor(tokens) FROM b))::int
    ),
    claimed AS (
        UPDATE {schema}.jobs j
        SET state = 'running', attempt = j.attempt + 1, worker_id = p_worker,
            attempted_at = coalesce(p_now, now()), lease_expires_at = coalesce(p_now, now()) + make_interval(secs => p_lease)
        FROM take
        WHERE j.id = take.id
        RETURNING j.id, j.task, j.queue, j.args::text, j.attempt, j.max_attempts, j.timeout,
                  j.checkpoint::text, j.meta::text, j.priority, j.run_at, j.uncounted
    ),
    spent AS (
        UPDATE {schema}.rate_buckets
        SET tokens = (SELECT tokens FROM b) - (SELECT count(*) FROM claimed),
            updated_at = greatest(updated_at, coalesce(p_now, now()))
        WHERE key = p_key AND EXISTS (SELECT 1 FROM b)
    )
    SELECT * FROM claimed;
END
$$;

CREATE FUNCTION {schema}.claim_jobs_task_rate(
    p_queue text, p_limit integer, p_worker text, p_lease double precision, p_task text,
    p_capacity double precision, p_rate double precision, p_now timestamptz)
RETURNS TABLE (id bigint, task text, queue text, args text, attempt integer,
               max_attempts integer, timeout double precision, checkpoint text, meta text,
               priority smallint, run_at timestamptz, uncounted integer)
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
SET enable_bitmapscan = off
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH b AS (
        SELECT l.task, least(p_capacity, r.tokens + greatest(0, extract(epoch FROM
                             coalesce(p_now, now()) - r.updated_at)) * p_rate) AS tokens
        FROM unnest(ARRAY[p_task::text]) AS l(task)
        CROSS JOIN LATERAL (SELECT tokens, updated_at FROM {schema}.rate_buckets
                            WHERE key = 'task:' || l.task FOR UPDATE) r
    ),
    limited AS (  -- the task by a join, not a value: the plan walks the claim index
        SELECT j.id FROM b
        CROSS JOIN LATERAL (
            SELECT id FROM {schema}.jobs
            WHERE queue = p_queue AND task = b.task
              AND state IN ('available', 'scheduled', 'retrying')
              AND run_at <= coalesce(p_now, now())
              AND NOT EXISTS (SELECT 1 FROM {schema}.queue_settings s
                              WHERE s.queue = p_queue AND s.paused)
            ORDER BY priority DESC, run_at, id
            LIMIT least(p_limit, greatest(0, floor(b.tokens)))::int
            FOR UPDATE SKIP LOCKED
        ) j
    ),
    rest AS (  -- what the task left of the claim: none, and the rest is not read at all
        SELECT id FROM {schema}.jobs
        WHERE queue = p_queue AND task <> p_task
          AND state IN ('available', 'scheduled', 'retrying')
          AND run_at <= coalesce(p_now, now())
          AND NOT EXISTS (SELECT 1 FROM {schema}.queue_settings s
                          WHERE s.queue = p_queue AND s.paused)
          AND EXISTS (SELECT 1 FROM b)
        ORDER BY priority DESC, run_at, id
        LIMIT greatest(0, p_limit - (SELECT count(*) FROM limited))
        FOR UPDATE SKIP LOCKED
    ),
    claimed AS (
        UPDATE {schema}.jobs j
        SET state = 'running', attempt = j.attempt + 1, worker_id = p_worker,
            attempted_at = coalesce(p_now, now()), lease_expires_at = coalesce(p_now, now()) + make_interval(secs => p_lease)
        -- a constant limit (never reached): the planner expects few jobs and finds them by id
        FROM (SELECT id FROM limited UNION ALL SELECT id FROM rest LIMIT p_limit) p
        WHERE j.id = p.id
        RETURNING j.id, j.task, j.queue, j.args::text, j.attempt, j.max_attempts, j.timeout,
                  j.checkpoint::text, j.meta::text, j.priority, j.run_at, j.uncounted
    ),
    spent AS (
        UPDATE {schema}.rate_buckets
        SET tokens = (SELECT tokens FROM b) - (SELECT count(*) FROM limited),
            updated_at = greatest(updated_at, coalesce(p_now, now()))
        WHERE key = 'task:' || p_task::text AND EXISTS (SELECT 1 FROM b)
    )
    SELECT * FROM claimed;
END
$$;
