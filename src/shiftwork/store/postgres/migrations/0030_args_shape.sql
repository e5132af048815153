-- A job's arguments are the object every worker reads: {"args": [...], "kwargs": {...}}.
-- Python and the enqueue function always write it so; a raw INSERT (the row contract,
-- docs/integrations.md) that wrote anything else made the job unreadable, and the claim
-- that took it failed every time, stalling its queue. Now such an insert is refused when
-- it is made, naming this constraint. NOT VALID: rows already stored are not scanned
-- (no long lock on a large table); every row written from now on is checked.
ALTER TABLE {schema}.jobs ADD CONSTRAINT jobs_args_shape CHECK (
    jsonb_typeof(args) = 'object'
    AND jsonb_typeof(coalesce(args -> 'args', '[]'::jsonb)) = 'array'
    AND jsonb_typeof(coalesce(args -> 'kwargs', '{}'::jsonb)) = 'object') NOT VALID;
