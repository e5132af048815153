-- Fair queues (app.queue(..., fair=True)): the waiting jobs of each group in claim order,
-- so a claim steps from one group with work to the next (a loose index scan) without
-- reading any group's backlog. Only jobs with a group are in it: other inserts pay nothing.
CREATE INDEX jobs_group_claim_idx
    ON jobs (queue, json_extract(meta, '$.group'), priority DESC, run_at, id)
    WHERE state IN ('available', 'scheduled', 'retrying')
      AND json_extract(meta, '$.group') IS NOT NULL;
-- Where each fair queue's round left off: the last group served.
CREATE TABLE fair_cursors (
    queue      TEXT PRIMARY KEY,
    last_group TEXT NOT NULL,
    served     INTEGER NOT NULL DEFAULT 0  -- jobs of last_group taken in its current turn
);
