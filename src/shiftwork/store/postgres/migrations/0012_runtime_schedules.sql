-- Who owns a schedule: 'code' (declared with app.schedule / @app.periodic, reconciled from
-- code at every worker start) or 'runtime' (app.schedules.add, shiftwork schedules add,
-- the dashboard; the start-up reconcile leaves these alone).
ALTER TABLE {schema}.schedules ADD COLUMN origin text NOT NULL DEFAULT 'code'
    CHECK (origin IN ('code', 'runtime'));
