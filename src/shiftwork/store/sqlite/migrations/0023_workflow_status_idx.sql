-- The dashboard's workflows list filtered by a workflow status (issue 29): a page of the
-- newest instances of that status. Without it, a status few instances have walked every
-- one (433 ms a page at 100,000 workflows on PostgreSQL).
CREATE INDEX workflow_runs_status_idx ON workflow_runs (status, job_id);
