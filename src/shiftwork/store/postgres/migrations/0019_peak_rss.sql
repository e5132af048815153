-- The peak resident size (bytes) of the last attempt of a job with a memory ceiling
-- (issue 35), written with its outcome; NULL for jobs without a ceiling. Each failed
-- attempt's own peak is in its error record (errors[].peak_rss), so every attempt's
-- peak is kept without a table of attempts.
ALTER TABLE {schema}.jobs ADD COLUMN peak_rss bigint;
