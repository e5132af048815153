-- The start-up reconcile's fingerprint: the declared set of code schedules last
-- reconciled (store/reconcile.py). A worker start whose set has it reads this one row
-- and writes nothing. Any write to a schedule's definition, origin or removal mark, by
-- whoever makes it (a run-time add or remove, another set's reconcile, an older
-- shiftwork, a hand edit), deletes it, so the next start compares every schedule again.
-- Cursor moves and pauses do not: the reconcile does not look at them.
CREATE TABLE schedules_reconciled (
    id            INTEGER PRIMARY KEY CHECK (id = 1),
    fingerprint   TEXT NOT NULL,
    reconciled_at REAL NOT NULL
);

CREATE TRIGGER schedules_declared_inserted AFTER INSERT ON schedules
BEGIN
    DELETE FROM schedules_reconciled;
END;

CREATE TRIGGER schedules_declared_deleted AFTER DELETE ON schedules
BEGIN
    DELETE FROM schedules_reconciled;
END;

CREATE TRIGGER schedules_declared_updated
    AFTER UPDATE OF name, cron, tz, task, args, queue, priority, max_attempts, timeout,
        catchup, catchup_window, catchup_cap, overlap, starting_deadline, jitter,
        expect_success_within, pause_on_failure, definition_hash, removed_at, origin
    ON schedules
BEGIN
    DELETE FROM schedules_reconciled;
END;
