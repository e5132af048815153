-- What deleting jobs must also delete elsewhere. Here, nothing: the foreign keys to the
-- jobs table cascade. Partitioned history (store/postgres/partitions.py) drops those keys,
-- as a partitioned table cannot be referenced, and replaces this body with the deletes
-- they did. The statements that delete jobs call it either way.
CREATE OR REPLACE FUNCTION {schema}.jobs_forget(ids bigint[]) RETURNS void
    LANGUAGE sql AS $$ SELECT $$;
