-- Key rotation (store/sealed.py): the payload columns a page at a time, and their rewrite.

-- name: jobs_sealed_page
SELECT id, task, args, result, checkpoint, progress, errors FROM jobs
WHERE id > :after ORDER BY id LIMIT :limit

-- name: jobs_reseal
-- Each column changes only while it holds what the page read (:old_x); NULL :new_x: kept.
UPDATE jobs
SET args = CASE WHEN :new_args IS NOT NULL AND args = :old_args THEN :new_args ELSE args END,
    result = CASE WHEN :new_result IS NOT NULL AND result = :old_result
                  THEN :new_result ELSE result END,
    checkpoint = CASE WHEN :new_checkpoint IS NOT NULL AND checkpoint = :old_checkpoint
                      THEN :new_checkpoint ELSE checkpoint END,
    progress = CASE WHEN :new_progress IS NOT NULL AND progress = :old_progress
                    THEN :new_progress ELSE progress END,
    errors = CASE WHEN :new_errors IS NOT NULL AND errors = :old_errors
                  THEN :new_errors ELSE errors END
WHERE id = :id
  AND ((:new_args IS NOT NULL AND args = :old_args)
       OR (:new_result IS NOT NULL AND result = :old_result)
       OR (:new_checkpoint IS NOT NULL AND checkpoint = :old_checkpoint)
       OR (:new_progress IS NOT NULL AND progress = :old_progress)
       OR (:new_errors IS NOT NULL AND errors = :old_errors))
RETURNING id
