-- The claim must walk jobs_claim_idx in claim order and stop at its LIMIT. With
-- jobs_waiting_age_idx present, a table without fresh statistics (right after a bulk
-- load) gets a plan that reads every waiting job through that index and sorts them on
-- every claim: 60 ms instead of 8 ms per claim at 100,000 waiting jobs. The oldest
-- waiting age is computed by queues_stats, which reads every waiting row anyway; so the
-- index only cost a write per enqueue and per claim.
DROP INDEX IF EXISTS {schema}.jobs_waiting_age_idx;
