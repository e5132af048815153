-- Named queries for the database file's own health (observe/table_health.py): pragmas
-- that read the file's header, never a table.

-- name: table_health_pages
SELECT page_count, freelist_count, page_size
FROM pragma_page_count(), pragma_freelist_count(), pragma_page_size()
