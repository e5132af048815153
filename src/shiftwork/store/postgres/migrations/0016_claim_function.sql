-- The common claim as a function (store/postgres/jobs.sql, jobs_claim, calls it). Why a
-- function: as a prepared statement its LIMIT is a parameter, for which the generic plan
-- guesses a tenth of the backlog; that plan costs more than one made for the values, so
-- Postgres planned the claim afresh on every call (~0.15 ms of a ~0.6 ms claim of 10).
-- A function can carry plan_cache_mode, so its statement runs under the generic plan,
-- made once per connection, which walks jobs_claim_idx like the custom one
-- (tests/test_claim_plans.py). The statement has no filters on other columns: a filter
-- lowers the row estimate until sorting every waiting job looks cheaper than the index.
CREATE FUNCTION {schema}.claim_jobs(p_queue text, p_limit integer, p_worker text,
                                    p_lease double precision, p_now timestamptz)
RETURNS TABLE (id bigint, task text, queue text, args text, attempt integer,
               max_attempts integer, timeout double precision, checkpoint text, meta text,
               priority smallint, run_at timestamptz, uncounted integer)
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
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
