-- See the PostgreSQL migration of the same number: claims must walk jobs_claim_idx in
-- order (jobs_claim also says INDEXED BY), and this index cost a write per enqueue and
-- per claim for a query (queues_stats) that reads every waiting row anyway.
DROP INDEX IF EXISTS jobs_waiting_age_idx;
