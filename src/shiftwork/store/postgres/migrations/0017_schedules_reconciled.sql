-- The start-up reconcile's fingerprint: the declared set of code schedules last
-- reconciled (store/reconcile.py). A worker start whose set has it reads this one row
-- and writes nothing. Any write to a schedule's definition, origin or removal mark, by
-- whoever makes it (a run-time add or remove, another set's reconcile, an older
-- shiftwork, a hand edit), deletes it, so the next start compares every schedule again.
-- Cursor moves and pauses do not: the reconcile does not look at them.
CREATE TABLE {schema}.schedules_reconciled (
    id            smallint    PRIMARY KEY CHECK (id = 1),
    fingerprint   text        NOT NULL,
    reconciled_at timestamptz NOT NULL
);

CREATE FUNCTION {schema}.shiftwork_schedules_declared_changed() RETURNS trigger AS $$
BEGIN
    DELETE FROM {schema}.schedules_reconciled;
    RETURN NULL;
END $$ LANGUAGE plpgsql;

-- Once per statement (a reconcile's batch of 10,000 rows runs it once).
CREATE TRIGGER schedules_declared_changed
    AFTER INSERT OR DELETE OR TRUNCATE OR UPDATE OF name, cron, tz, task, args, queue,
        priority, max_attempts, timeout, catchup, catchup_window, catchup_cap, overlap,
        starting_deadline, jitter, expect_success_within, pause_on_failure,
        definition_hash, removed_at, origin
    ON {schema}.schedules
    FOR EACH STATEMENT EXECUTE FUNCTION {schema}.shiftwork_schedules_declared_changed();
