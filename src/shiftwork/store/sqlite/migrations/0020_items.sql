-- Quiet failures (issue 36): see the PostgreSQL migration of the same number.
ALTER TABLE jobs ADD COLUMN items INTEGER;
ALTER TABLE schedules ADD COLUMN expect_items INTEGER;
ALTER TABLE schedules ADD COLUMN expect_items_rule TEXT;
ALTER TABLE schedule_runs ADD COLUMN items INTEGER;
ALTER TABLE schedule_runs ADD COLUMN items_check TEXT;
ALTER TABLE schedule_runs ADD COLUMN items_note TEXT;
CREATE INDEX schedule_runs_items_due_idx ON schedule_runs (schedule, fire_at)
    WHERE items_check IS NULL AND status = 'succeeded';
CREATE TABLE task_minutes (
    task      TEXT    NOT NULL,
    minute    REAL    NOT NULL,  -- Unix seconds, UTC, a whole minute
    succeeded INTEGER NOT NULL DEFAULT 0,
    items     INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (minute, task)
);
