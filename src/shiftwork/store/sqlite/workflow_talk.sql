-- Named queries for talking to a running workflow: its published state (queries) and the
-- requests sent to it (updates). SQLite; see the PostgreSQL file of the same name.

-- name: workflow_state_set
INSERT INTO workflow_state (job_id, key, value, stamp, updated_at)
SELECT :job, :key, :value, :stamp, :now
WHERE EXISTS (SELECT 1 FROM jobs WHERE id = :job AND attempt = :attempt AND state = 'running')
ON CONFLICT (job_id, key) DO UPDATE
SET value = excluded.value, stamp = excluded.stamp, updated_at = excluded.updated_at
WHERE excluded.stamp >= workflow_state.stamp

-- name: workflow_state_get
SELECT key, value, updated_at FROM workflow_state WHERE job_id = :job ORDER BY key

-- name: workflow_update_insert
INSERT INTO workflow_updates (job_id, name, payload, created_at)
SELECT id, :name, :payload, :now FROM jobs
WHERE id = :job AND state IN ('scheduled', 'available', 'running', 'retrying', 'held')
RETURNING id

-- name: workflow_update_next
SELECT id, payload FROM workflow_updates
WHERE job_id = :job AND name = :name AND status = 'pending'
ORDER BY id LIMIT 1

-- name: workflow_update_resolve
UPDATE workflow_updates
SET status = :status, result = :result, error = :error, step = :step, resolved_at = :now
WHERE id = :id AND job_id = :job AND status = 'pending'
RETURNING id

-- name: workflow_update_read
SELECT u.status, u.result, u.error, j.state
FROM workflow_updates u JOIN jobs j ON j.id = u.job_id
WHERE u.id = :id

-- name: workflow_updates_list
SELECT id, name, payload, status, result, error, step, created_at, resolved_at
FROM workflow_updates WHERE job_id = :job ORDER BY id DESC LIMIT :limit
