-- The peak resident size (bytes) of the last attempt of a job with a memory ceiling (as
-- in the Postgres migration of the same number); failed attempts' own peaks are in their
-- error records.
ALTER TABLE jobs ADD COLUMN peak_rss INTEGER;
