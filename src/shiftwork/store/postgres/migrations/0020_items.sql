-- Quiet failures (issue 36): what a run processed, and the expectation that it was not
-- nothing. jobs.items: what the attempt reported (ctx.processed), NULL when it did not
-- say. schedule_runs.items: copied from the job with its outcome (the job may be pruned
-- first); items_check: the leader's verdict on it, once (ok | empty | none), NULL not made
-- yet; items_note: why, in words (the counts, or the rule's error).
ALTER TABLE {schema}.jobs ADD COLUMN items bigint;
ALTER TABLE {schema}.schedules ADD COLUMN expect_items bigint;
ALTER TABLE {schema}.schedules ADD COLUMN expect_items_rule text;
ALTER TABLE {schema}.schedule_runs ADD COLUMN items bigint;
ALTER TABLE {schema}.schedule_runs ADD COLUMN items_check text;
ALTER TABLE {schema}.schedule_runs ADD COLUMN items_note text;
-- The leader's check walks only succeeded runs not judged yet.
CREATE INDEX schedule_runs_items_due_idx ON {schema}.schedule_runs (schedule, fire_at)
    WHERE items_check IS NULL AND status = 'succeeded';
-- Per task, per minute: jobs that succeeded and the items they reported, added by every
-- worker's throughput recorder (one upsert per flush), kept for a day like queue_minutes:
-- the task-level expectation (@app.task(expect_items=...)) and per-task history read it.
CREATE TABLE {schema}.task_minutes (
    task      text        NOT NULL,
    minute    timestamptz NOT NULL,
    succeeded bigint      NOT NULL DEFAULT 0,
    items     bigint      NOT NULL DEFAULT 0,
    PRIMARY KEY (minute, task)
);
