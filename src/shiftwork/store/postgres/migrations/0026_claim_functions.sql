-- The claim functions from their one source, functions.sql, each kind of claim that runs in
-- one statement one function: the claim for task rate limits is claim_jobs_task_rates, for
-- one limited task or several (it replaces claim_jobs_task_rate and the statement for
-- several tasks, planned for its values each time).
DROP FUNCTION IF EXISTS {schema}.claim_jobs_task_rate(text, integer, text, double precision,
                                                      text, double precision,
                                                      double precision, timestamptz);
-- apply: functions.sql
