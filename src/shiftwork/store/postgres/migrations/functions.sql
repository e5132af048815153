-- The PostgreSQL claim functions, one per claim kind that runs in one statement
-- (store/flow_claim.py, ClaimKind). Each named query that claims (jobs.sql: jobs_claim;
-- flow.sql: jobs_claim_queue_rate, jobs_claim_task_rates, jobs_claim_fair) is a one-line
-- call of its function here.
--
-- Why functions: a function can carry settings for the statement inside. As a prepared
-- statement a claim's LIMIT is a parameter, for which the generic plan guesses a tenth of
-- the backlog; that plan costs more than one made for the values, so Postgres planned the
-- claim afresh on every call (~0.15 ms of a ~0.6 ms claim of 10). Under plan_cache_mode =
-- force_generic_plan the statement is planned once per connection, and it walks the claim
-- index like a plan made for the values (tests/test_claim_plans.py). A generic plan is
-- kept until the table's statistics change: made while the jobs table was empty (a worker
-- started before the first enqueue) it scanned and sorted the whole table on every claim
-- once a flood came (a drain 3x slower), so the functions also turn sequential and bitmap
-- scans off (and hash joins, where a join could pick one): their only plan is then the
-- index walk, whatever the table held when it was made.
--
-- This file is the functions' one source. Migrations apply it whole (a line
-- "-- apply: functions.sql", store/sqlfile.py), so every statement here is CREATE OR
-- REPLACE. To change a function: edit it here and add a migration that applies this file
-- again. A function whose arguments or result columns change is a new function for
-- Postgres: that migration drops the old one first (as 0026 drops claim_jobs_task_rate).
-- Functions are late-bound (plpgsql reads tables when first called), so an early
-- migration applying this file on a new database is fine.
-- {schema} is the store's schema, quoted.

-- The plain claim: no limit but the worker's slots (jobs.sql, jobs_claim). Also the
-- step "any task" of the claims made in Python (store/flow_claim.py). The statement has no
-- filters on other columns: a filter lowers the row estimate until sorting every waiting
-- job looks cheaper than the index.
CREATE OR REPLACE FUNCTION {schema}.claim_jobs(p_queue text, p_limit integer, p_worker text,
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

-- A queue whose only limit is its own rate (flow.sql, jobs_claim_queue_rate): lock the
-- bucket (made beforehand: a missing bucket claims nothing), claim at most its whole
-- tokens, and spend one token per job claimed. use_column: the statement names columns
-- (id, task, queue...) that are also the function's result columns.
CREATE OR REPLACE FUNCTION {schema}.claim_jobs_queue_rate(
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

-- A queue whose only limits are task rate limits (flow.sql, jobs_claim_task_rates): lock
-- the tasks' buckets (made beforehand; tasks sorted, so claimers queue up the same way),
-- claim at most each task's whole tokens, then jobs of the other tasks for what is left of
-- the claim (the order of the Python loop in flow_claim.py), and spend one token per job
-- claimed of each limited task. A task out of tokens reads no job (LIMIT 0); its jobs stay
-- waiting, their attempt untouched. Jobs locked but not taken are only locked until the
-- claim commits.
CREATE OR REPLACE FUNCTION {schema}.claim_jobs_task_rates(
    p_queue text, p_limit integer, p_worker text, p_lease double precision,
    p_tasks text[], p_capacities double precision[], p_rates double precision[],
    p_now timestamptz)
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
    WITH b AS (  -- one primary-key probe per task, locked in the order given (sorted)
        SELECT l.task, least(l.capacity, r.tokens + greatest(0, extract(epoch FROM
                             coalesce(p_now, now()) - r.updated_at)) * l.rate) AS tokens
        FROM unnest(p_tasks::text[], p_capacities::float8[], p_rates::float8[])
             AS l(task, capacity, rate)
        CROSS JOIN LATERAL (SELECT tokens, updated_at FROM {schema}.rate_buckets
                            WHERE key = 'task:' || l.task FOR UPDATE) r
    ),
    limited AS (  -- each task by a join, not a value: the plan walks the claim index
        SELECT j.id, j.priority, j.run_at FROM b
        CROSS JOIN LATERAL (
            SELECT id, priority, run_at FROM {schema}.jobs
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
    rest AS (
        SELECT id, priority, run_at FROM {schema}.jobs
        WHERE queue = p_queue
          AND state IN ('available', 'scheduled', 'retrying')
          AND run_at <= coalesce(p_now, now())
          AND NOT (task = ANY(p_tasks::text[]))
          AND NOT EXISTS (SELECT 1 FROM {schema}.queue_settings s
                          WHERE s.queue = p_queue AND s.paused)
        ORDER BY priority DESC, run_at, id
        -- what the limited tasks left of the claim: none, and the rest is not read at all
        -- (else it would read through their backlog); evaluated first, so the buckets are
        -- locked before any job
        LIMIT greatest(0, p_limit - (SELECT count(*) FROM limited))
        FOR UPDATE SKIP LOCKED
    ),
    picked AS (  -- several tasks may together find more than the claim: its first ones
        SELECT id FROM (SELECT * FROM limited UNION ALL SELECT * FROM rest) c
        ORDER BY priority DESC, run_at, id
        LIMIT p_limit
    ),
    claimed AS (
        UPDATE {schema}.jobs j
        SET state = 'running', attempt = j.attempt + 1, worker_id = p_worker,
            attempted_at = coalesce(p_now, now()),
            lease_expires_at = coalesce(p_now, now()) + make_interval(secs => p_lease)
        -- by id through an array, as claim_jobs: a join on the generic LIMIT's guess of
        -- rows would be planned against a scan of the whole table
        WHERE j.id = ANY(ARRAY(SELECT p.id FROM picked p))
        RETURNING j.id, j.task, j.queue, j.args::text, j.attempt, j.max_attempts, j.timeout,
                  j.checkpoint::text, j.meta::text, j.priority, j.run_at, j.uncounted
    ),
    spent AS (  -- (each task's jobs counted among the few claimed: no sort, no join)
        UPDATE {schema}.rate_buckets r
        SET tokens = s.tokens - s.n, updated_at = greatest(r.updated_at, coalesce(p_now, now()))
        FROM (SELECT b.task, b.tokens,
                     (SELECT count(*) FROM claimed c WHERE c.task = b.task) AS n FROM b) s
        WHERE r.key = 'task:' || s.task AND s.n > 0
    )
    SELECT * FROM claimed;
END
$$;

-- A fair queue with no other limit (flow.sql, jobs_claim_fair; the Python loop in
-- flow_claim.py does the same, one step at a time, when caps, rates or weights apply): the
-- groups with waiting jobs after the cursor, then (past the end of the keys) jobs without
-- a group among the first 50 waiting, then the groups up to the cursor; each group's first
-- due jobs, dealt a turn at a time; the cursor moved to the last group served. The step to
-- a group lands on its first entry in the index, which is its head in claim order: when
-- each group gives one job (more groups than the claim) and that job is due, it is taken
-- from there, without a second probe of the group. Hash joins are off too: a generic plan
-- made on an empty table began to hash-join a scan of the whole jobs table once its rows
-- grew wider (an empty table's row estimate is a number of pages over the row width).
CREATE OR REPLACE FUNCTION {schema}.claim_jobs_fair(p_queue text, p_limit integer, p_worker text,
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

-- Enqueue from SQL (migration 0029; docs/integrations.md, "Enqueue from SQL"): one job,
-- inserted and announced as the Python enqueue does it (jobs.sql: jobs_insert_one and
-- jobs_insert), for a trigger or a client in another language. It checks what Python's
-- Task.build checks that SQL can: names (core/names.py), the arguments' shape, size,
-- depth and numbers (core/payload.py, at the default Settings.max_args_bytes and
-- max_json_depth: a function cannot read an App's settings), priority bounds
-- (jobs/task.py) and a finite run_at (core/bounds.py).
-- Options the call leaves out come from the task's row of task_defaults, which Apps and
-- workers write (store/task_defaults.py). Returns the job's id; for a unique key an
-- active job already holds, that job's id (no new job, no wake-up).
--
-- Errors: SQLSTATE SW001 unknown task (no row, no queue named), SW002 bad task or queue
-- name, SW003 bad arguments (not an array / an object, too large or deep, an integer
-- too long), SW004 bad priority,
-- run_at or unique key. plpgsql, not SQL: its body is read when first called, so an
-- early migration applying this file before task_defaults exists is fine.
CREATE OR REPLACE FUNCTION {schema}.enqueue(
    task text, args jsonb DEFAULT '[]', queue text DEFAULT NULL,
    run_at timestamptz DEFAULT NULL, priority integer DEFAULT NULL,
    unique_key text DEFAULT NULL, kwargs jsonb DEFAULT '{}'
) RETURNS bigint
LANGUAGE plpgsql
AS $$
-- The parameters are named as the columns (a caller writes queue => 'mail'); in the
-- statements below a bare name is the column.
#variable_conflict use_column
DECLARE
    -- A quoted schema name holds no quotes of its own (core/names.py check_schema): the
    -- channel is the store's, NOTIFY_CHANNEL_PREFIX and the bare name.
    channel constant text := 'shiftwork_jobs_' || btrim('{schema}', '"');
    max_args_bytes constant integer := 262144;  -- core/payload.py DEFAULT_MAX_PAYLOAD_BYTES
    max_key_bytes constant integer := 1024;     -- core/settings.py max_unique_key_bytes
    d_queue text;  -- the task's row of task_defaults (NULL: none)
    d_priority integer;
    d_max_attempts integer;
    d_timeout double precision;
    payload jsonb;
    size integer;
    key text;
    due boolean;
    job_id bigint;
BEGIN
    IF task IS NULL OR task !~ '^[A-Za-z_][A-Za-z0-9_.:<>-]{0,199}$' THEN
        RAISE EXCEPTION 'shiftwork.enqueue: bad task name %: use 1-200 characters, letters, '
            'digits, ''_'', ''.'', '':'', ''<'', ''>'' or ''-'', starting with a letter or ''_''',
            coalesce(to_json(left(task, 80))::text, 'NULL') USING ERRCODE = 'SW002';
    END IF;
    IF queue IS NOT NULL AND queue !~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$' THEN
        RAISE EXCEPTION 'shiftwork.enqueue: bad queue name %: use 1-63 characters, letters, '
            'digits, ''_'', ''-'' or ''.'', starting with a letter or digit',
            to_json(left(queue, 80))::text USING ERRCODE = 'SW002';
    END IF;
    SELECT t.queue, t.priority, t.max_attempts, t.timeout
    INTO d_queue, d_priority, d_max_attempts, d_timeout
    FROM {schema}.task_defaults t WHERE t.name = enqueue.task;
    IF NOT FOUND AND queue IS NULL THEN
        RAISE EXCEPTION 'shiftwork.enqueue: unknown task %: no worker or migrate has '
            'registered it%; known: %', to_json(task)::text,
            -- a bare function name finds its module.function (core/names.py did_you_mean)
            coalesce((SELECT '; did you mean ' || string_agg(t.name, ' or ' ORDER BY t.name)
                      || '?' FROM {schema}.task_defaults t
                      WHERE right(t.name, length(task) + 1) = '.' || task), ''),
            coalesce((SELECT string_agg(t.name, ', ' ORDER BY t.name)
                      FROM (SELECT t.name FROM {schema}.task_defaults t
                            ORDER BY t.name LIMIT 50) t)
                      || CASE WHEN (SELECT count(*) FROM {schema}.task_defaults) > 50
                              THEN ', ...' ELSE '' END, '(none)')
            USING ERRCODE = 'SW001',
                  HINT = 'start a worker or run migrate with the App that declares it, '
                         'or name the queue (the job then waits for a worker that knows it)';
    END IF;
    IF jsonb_typeof(args) IS DISTINCT FROM 'array' THEN
        RAISE EXCEPTION 'shiftwork.enqueue: args must be a JSON array, not %',
            coalesce(jsonb_typeof(args), 'NULL') USING ERRCODE = 'SW003';
    END IF;
    IF jsonb_typeof(kwargs) IS DISTINCT FROM 'object' THEN
        RAISE EXCEPTION 'shiftwork.enqueue: kwargs must be a JSON object, not %',
            coalesce(jsonb_typeof(kwargs), 'NULL') USING ERRCODE = 'SW003';
    END IF;
    payload := jsonb_build_object('args', args, 'kwargs', kwargs);
    size := octet_length(payload::text);
    IF size > max_args_bytes THEN
        RAISE EXCEPTION 'shiftwork.enqueue: %: arguments of % bytes, over the %-byte limit '
            '(the default Settings.max_args_bytes); store large data elsewhere and pass a '
            'reference', task, size, max_args_bytes USING ERRCODE = 'SW003';
    END IF;
    -- What Python refuses to store, and could not always read back (its parser's own
    -- limits: the job's claim would fail): containers nested past Settings.max_json_depth
    -- (64, counted from an argument as Python does; an argument is at level 2 of the
    -- payload), and integers over 14,000 bits (core/payload.py MAX_INT_BITS: 2^14000 is
    -- 2.62990...e4214). Each takes a walk of the payload, which a short one cannot need:
    -- 65 levels take 130 bytes of brackets, such a number 4,215 digits.
    IF size >= 130 AND jsonb_path_exists(payload, 'strict $.**{65} ? (@.type() == "array"
                                                                   || @.type() == "object")') THEN
        RAISE EXCEPTION 'shiftwork.enqueue: %: arguments nested more than 64 levels deep '
            '(the default Settings.max_json_depth)', task USING ERRCODE = 'SW003';
    END IF;
    IF size >= 4215 AND jsonb_path_exists(payload, 'strict $.** ? (@.type() == "number"
                                                     && @.abs() >= 2.6299e4214)') THEN
        RAISE EXCEPTION 'shiftwork.enqueue: %: a number over 14,000 bits (about 4,200 '
            'digits; at most 2.6299e4214); store it as a string', task
            USING ERRCODE = 'SW003';
    END IF;
    IF priority IS NOT NULL AND priority NOT BETWEEN -100 AND 100 THEN
        RAISE EXCEPTION 'shiftwork.enqueue: %: priority must be from -100 to 100, not %',
            task, priority USING ERRCODE = 'SW004';
    END IF;
    -- Python reads every run_at as a datetime: finite, from year 1 to before 9999.
    IF run_at IS NOT NULL AND (NOT isfinite(run_at) OR run_at < '0001-01-01 00:00+00'
                               OR run_at >= '9999-01-01 00:00+00') THEN
        RAISE EXCEPTION 'shiftwork.enqueue: %: run_at must be a finite instant from year 1 '
            'to before 9999-01-01, not %', task, run_at USING ERRCODE = 'SW004';
    END IF;
    IF unique_key IS NOT NULL THEN
        key := task || ':' || unique_key;  -- as Python's using(key=...): task:key
        IF octet_length(key) > max_key_bytes THEN
            RAISE EXCEPTION 'shiftwork.enqueue: %: unique key of % bytes, over the %-byte '
                'limit; use a shorter key or a digest of it', task, octet_length(key),
                max_key_bytes USING ERRCODE = 'SW004';
        END IF;
    END IF;
    due := run_at IS NULL OR run_at <= now();
    queue := coalesce(queue, d_queue);
    -- A key another transaction frees between the insert and the lookup: insert again
    -- (jobs_insert's caller settles keys the same way).
    FOR try IN 1..5 LOOP
        INSERT INTO {hot} AS j (queue, task, args, state, priority, max_attempts,
                                        run_at, created_at, unique_key, timeout)
        VALUES (queue, task, payload, CASE WHEN due THEN 'available' ELSE 'scheduled' END,
                coalesce(priority, d_priority, 0), coalesce(d_max_attempts, 20),
                coalesce(run_at, now()), now(), key, d_timeout)
        ON CONFLICT (unique_key)
            WHERE unique_key IS NOT NULL
              AND state IN ('scheduled', 'available', 'running', 'retrying', 'held')
            DO NOTHING
        RETURNING j.id INTO job_id;
        IF job_id IS NOT NULL THEN
            IF due THEN  -- the wake-up share of one job (store/wakeups.py shared_wakeups)
                PERFORM pg_notify(channel, queue || '|1|' || floor(random() * 2147483648)::bigint);
            END IF;
            RETURN job_id;
        END IF;
        SELECT j.id INTO job_id FROM {schema}.jobs j
        WHERE j.unique_key = key AND j.state IN ('scheduled', 'available', 'running', 'retrying', 'held');
        IF job_id IS NOT NULL THEN
            RETURN job_id;
        END IF;
    END LOOP;
    RAISE EXCEPTION 'shiftwork.enqueue: %: could not settle unique key % after 5 tries; '
        'the key is contended', task, to_json(key)::text USING ERRCODE = 'SW004';
END
$$;

-- Jobs whose unique key the unique_keys table holds (unique_for, unique_states,
-- debounce: migration 0031, jobs/dedup.py); one row per job, in order: the job's id and
-- whether it was inserted (false: the key's holder, returned instead).
--   1. Keys new to the table, each at its first job of the call: inserted, set-based
--      (ON CONFLICT DO NOTHING: a key another transaction is inserting waits for it),
--      and their jobs with them. Ordered by key, as is step 2: two calls that share
--      keys take them in the same order, so neither waits for the other in a circle.
--   2. Each other job, by key and then its place in the call:
--      a. the key read (a fresh snapshot): held (the usual duplicate) is the answer,
--         with no lock and so no write to commit. Held in a snapshot is held at that
--         instant: a key's row is pointed elsewhere only once it no longer holds.
--         Debounce first gives a holder that still waits the new arguments and run_at
--         (an UPDATE that names the waiting states: a job claimed meanwhile is not
--         touched, and the key passes to a new job).
--      b. free (or missing): INSERT the key's row, or lock it if it is there (ON
--         CONFLICT DO UPDATE ... WHERE false updates nothing but locks, waiting for a
--         transaction taking the same key to end). Never a check and then an insert.
--      c. a key that was there is read again, in a statement of its own: under READ
--         COMMITTED each statement of a function has a fresh snapshot, so a holder
--         committed while the lock was awaited is seen (read inside the upsert, in the
--         statement's snapshot, it could be missed and the key taken twice). Held: as
--         in a; free: its row is pointed at the new job, which is inserted.
-- The caller's transaction (conn=) is the function's: its keys are settled at its commit.
-- Wake-ups: one per queue for the jobs inserted due (store/wakeups.py shared_wakeups).
CREATE OR REPLACE FUNCTION {schema}.insert_dedup(
    p_tasks text[], p_queues text[], p_args jsonb[], p_priorities smallint[],
    p_max_attempts int[], p_run_ats timestamptz[], p_timeouts float8[], p_metas jsonb[],
    p_keys text[], p_hold_for float8[], p_states text[], p_debounce float8[],
    p_at timestamptz, p_channel text)
RETURNS TABLE (out_id bigint, out_created boolean)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    seq constant regclass := pg_get_serial_sequence('{schema}.jobs', 'id')::regclass;
    n constant int := coalesce(array_length(p_keys, 1), 0);
    ids bigint[] := array_fill(NULL::bigint, ARRAY[n]);
    made boolean[] := array_fill(false, ARRAY[n]);
    won_ords int[];
    won_ids bigint[];
    i int;
    new_id bigint;
    holder bigint;
    held boolean;
    v_states text[];
    v_expires timestamptz;
    v_run timestamptz;
    due_queues text[] := '{}';
BEGIN
    -- 1. new keys, at their first job
    WITH input AS (
        SELECT * FROM unnest(p_keys, p_hold_for, p_states) WITH ORDINALITY
            AS t(key, hold_for, states, ord)
    ), firsts AS (
        SELECT DISTINCT ON (key) key, hold_for, states, ord::int AS ord
        FROM input ORDER BY key, ord
    ), taken AS (
        INSERT INTO {schema}.unique_keys (key, job_id, states, expires_at)
        SELECT key, nextval(seq), string_to_array(states, ','),
               p_at + make_interval(secs => hold_for)
        FROM firsts ORDER BY key
        ON CONFLICT (key) DO NOTHING
        RETURNING key, job_id
    )
    SELECT array_agg(f.ord ORDER BY f.ord), array_agg(t.job_id ORDER BY f.ord)
    INTO won_ords, won_ids
    FROM taken t JOIN firsts f USING (key);
    IF won_ords IS NOT NULL THEN
        WITH w AS (
            SELECT o, id, CASE WHEN p_debounce[o] IS NOT NULL
                               THEN p_at + make_interval(secs => p_debounce[o])
                               ELSE coalesce(p_run_ats[o], p_at) END AS run
            FROM unnest(won_ords, won_ids) AS u(o, id)
        ), ins AS (
            INSERT INTO {schema}.jobs (id, queue, task, args, state, priority, max_attempts,
                                       run_at, created_at, timeout, meta)
            OVERRIDING SYSTEM VALUE  -- the id its key's row already names
            SELECT id, p_queues[o], p_tasks[o], p_args[o],
                   CASE WHEN run <= p_at THEN 'available' ELSE 'scheduled' END,
                   p_priorities[o], p_max_attempts[o], run, p_at, p_timeouts[o], p_metas[o]
            FROM w ORDER BY o
            RETURNING queue, run_at
        )
        SELECT due_queues || coalesce(array_agg(queue) FILTER (WHERE run_at <= p_at), '{}')
        INTO due_queues FROM ins;
        FOR k IN 1 .. array_length(won_ords, 1) LOOP
            ids[won_ords[k]] := won_ids[k];
            made[won_ords[k]] := true;
        END LOOP;
    END IF;
    -- 2. the others, by key, then place
    FOR i IN SELECT t.ord FROM unnest(p_keys) WITH ORDINALITY AS t(key, ord)
             WHERE ids[t.ord] IS NULL ORDER BY t.key, t.ord LOOP
        v_states := string_to_array(p_states[i], ',');
        v_expires := p_at + make_interval(secs => p_hold_for[i]);  -- NULL for NULL
        v_run := CASE WHEN p_debounce[i] IS NOT NULL
                      THEN p_at + make_interval(secs => p_debounce[i])
                      ELSE coalesce(p_run_ats[i], p_at) END;
        FOR step IN 1 .. 2 LOOP  -- a: read; c: read again, holding the row's lock
            holder := NULL;
            held := false;
            SELECT u.job_id,
                   (u.expires_at IS NULL OR u.expires_at > p_at)
                   AND (u.states IS NULL OR EXISTS (
                        SELECT 1 FROM {schema}.jobs j
                        WHERE j.id = u.job_id AND j.state = ANY(u.states)))
            INTO holder, held
            FROM {schema}.unique_keys u WHERE u.key = p_keys[i];
            IF held AND p_debounce[i] IS NOT NULL THEN
                UPDATE {schema}.jobs j SET args = p_args[i], run_at = v_run
                WHERE j.id = holder AND j.state IN ('scheduled', 'available', 'retrying', 'held');
                held := FOUND;
            END IF;
            EXIT WHEN held OR step = 2;
            -- b. free or missing: take the row, or lock it
            new_id := nextval(seq);
            INSERT INTO {schema}.unique_keys AS u (key, job_id, states, expires_at)
            VALUES (p_keys[i], new_id, v_states, v_expires)
            ON CONFLICT (key) DO UPDATE SET job_id = u.job_id WHERE false
            RETURNING u.job_id INTO holder;
            EXIT WHEN holder IS NOT NULL;  -- a new row: the key is the new job's
        END LOOP;
        IF held THEN
            ids[i] := holder;
            CONTINUE;
        END IF;
        IF holder IS NULL OR holder <> new_id THEN  -- the row was there, and is free
            UPDATE {schema}.unique_keys u SET job_id = new_id, states = v_states,
                                              expires_at = v_expires
            WHERE u.key = p_keys[i];
        END IF;
        INSERT INTO {schema}.jobs (id, queue, task, args, state, priority, max_attempts,
                                   run_at, created_at, timeout, meta)
        OVERRIDING SYSTEM VALUE
        VALUES (new_id, p_queues[i], p_tasks[i], p_args[i],
                CASE WHEN v_run <= p_at THEN 'available' ELSE 'scheduled' END,
                p_priorities[i], p_max_attempts[i], v_run, p_at, p_timeouts[i], p_metas[i]);
        IF v_run <= p_at THEN
            due_queues := due_queues || p_queues[i];
        END IF;
        ids[i] := new_id;
        made[i] := true;
    END LOOP;
    PERFORM pg_notify(p_channel, q || '|' || count(*) || '|'
                                 || floor(random() * 2147483648)::bigint)
    FROM unnest(due_queues) AS q GROUP BY q;
    RETURN QUERY SELECT ids[g], made[g] FROM generate_series(1, n) AS g ORDER BY g;
END
$$;
