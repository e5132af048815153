-- Key rotation (store/sealed.py): the payload columns a page at a time, and their rewrite.

-- name: jobs_sealed_page
SELECT id, task, args::text, result::text, checkpoint::text, progress::text, errors::text
FROM {schema}.jobs
WHERE id > %(after)s ORDER BY id LIMIT %(limit)s

-- name: jobs_reseal
-- Each column changes only while it holds what the page read (old_x); NULL new_x: kept.
UPDATE {schema}.jobs
SET args = CASE WHEN %(new_args)s::jsonb IS NOT NULL AND args = %(old_args)s::jsonb
                THEN %(new_args)s::jsonb ELSE args END,
    result = CASE WHEN %(new_result)s::jsonb IS NOT NULL AND result = %(old_result)s::jsonb
                  THEN %(new_result)s::jsonb ELSE result END,
    checkpoint = CASE WHEN %(new_checkpoint)s::jsonb IS NOT NULL
                           AND checkpoint = %(old_checkpoint)s::jsonb
                      THEN %(new_checkpoint)s::jsonb ELSE checkpoint END,
    progress = CASE WHEN %(new_progress)s::jsonb IS NOT NULL
                         AND progress = %(old_progress)s::jsonb
                    THEN %(new_progress)s::jsonb ELSE progress END,
    errors = CASE WHEN %(new_errors)s::jsonb IS NOT NULL AND errors = %(old_errors)s::jsonb
                  THEN %(new_errors)s::jsonb ELSE errors END
WHERE id = %(id)s
  AND ((%(new_args)s::jsonb IS NOT NULL AND args = %(old_args)s::jsonb)
       OR (%(new_result)s::jsonb IS NOT NULL AND result = %(old_result)s::jsonb)
       OR (%(new_checkpoint)s::jsonb IS NOT NULL AND checkpoint = %(old_checkpoint)s::jsonb)
       OR (%(new_progress)s::jsonb IS NOT NULL AND progress = %(old_progress)s::jsonb)
       OR (%(new_errors)s::jsonb IS NOT NULL AND errors = %(old_errors)s::jsonb))
RETURNING id
