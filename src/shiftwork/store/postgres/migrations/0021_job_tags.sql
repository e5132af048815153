-- Job tags (issue 29) live in meta->'tags' (a JSON array of strings), so every insert path
-- carries them with the rest of meta. Only tagged jobs are indexed: an untagged job's
-- insert costs nothing more, and a tag filter finds its jobs among millions at once.
CREATE INDEX jobs_tags_idx ON {schema}.jobs USING gin ((meta -> 'tags')) WHERE meta ? 'tags';
