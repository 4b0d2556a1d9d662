-- Named queries of `mambo sql` (mambomeme/sqlshell.py): recognising a library, listing its views, closing it.
-- Each query starts with a `-- name: NAME` line and runs to the next (see library.sql).

-- name: sql_library_marks
-- The tables every MamboMeme library has had since schema 1, with the schema version: a file
-- without all of them is not a library, whatever its user_version says.
SELECT (SELECT user_version FROM pragma_user_version) AS user_version,
       (SELECT count(*) FROM sqlite_schema
        WHERE type = 'table' AND name IN ('items', 'files', 'library_roots', 'item_vectors', 'items_fts'))
           AS marks;

-- name: sql_foreign_keys_on
PRAGMA foreign_keys = ON;

-- name: sql_checkpoint
PRAGMA wal_checkpoint(TRUNCATE);

-- name: sql_views
SELECT name FROM sqlite_schema WHERE type = 'view';

-- name: sql_tables_and_views
SELECT count(*) FROM sqlite_schema WHERE type IN ('table', 'view');
