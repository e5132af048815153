-- The tasks each worker registers (as in the Postgres migration of the same number):
-- NULL for a worker of an older release, which did not say.
ALTER TABLE workers ADD COLUMN tasks TEXT;
