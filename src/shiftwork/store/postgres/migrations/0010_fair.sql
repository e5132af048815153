-- Fair queues (app.queue(..., fair=True)): the waiting jobs of each group in claim order,
-- so a claim steps from one group with work to the next (a loose index scan) without
-- reading any group's backlog. Only jobs with a group are in it: other inserts pay nothing.
CREATE INDEX jobs_group_claim_idx
    ON {schema}.jobs (queue, (meta->>'group'), priority DESC, run_at, id)
    WHERE state IN ('available', 'scheduled', 'retrying') AND meta ? 'group';
-- Where each fair queue's round left off: the last group served. Claims lock the row,
-- so claimers of one fair queue take turns and the round is never served twice.
CREATE TABLE {schema}.fair_cursors (
    queue      text PRIMARY KEY,
    last_group text NOT NULL,
    served     integer NOT NULL DEFAULT 0  -- jobs of last_group taken in its current turn
);
