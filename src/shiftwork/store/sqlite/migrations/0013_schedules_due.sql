-- Schedules at scale: the leader's pass reads only what is due. The cursor index is
-- kept with the cursor (every advance updates it); the two small partial indexes find
-- the rare schedules with nothing decided yet, a catch-up override, or buffered runs.
-- A schedule that is not due is not read at all, whatever their number.
CREATE INDEX IF NOT EXISTS schedules_due_idx ON schedules (next_fire_at, name)
    WHERE removed_at IS NULL AND NOT paused;
CREATE INDEX IF NOT EXISTS schedules_undecided_idx ON schedules (name)
    WHERE removed_at IS NULL AND NOT paused
      AND (next_fire_at IS NULL OR catchup_override IS NOT NULL);
CREATE INDEX IF NOT EXISTS schedule_runs_pending_idx ON schedule_runs (schedule)
    WHERE status = 'pending';
