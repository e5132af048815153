-- The tasks each worker registers, so `shiftwork health` can name a task whose jobs wait
-- with no live worker able to run them (a rolling deploy's new task before the new
-- workers are up, or a task removed from the code). NULL: a worker of an older release,
-- which did not say (it may know any task).
ALTER TABLE {schema}.workers ADD COLUMN tasks jsonb;
