-- Named queries of the library room (mambomeme/library.py and the command line): roots and settings.
-- Each query starts with a `-- name: NAME` line and runs to the next. Parameters are apsw named
-- bindings (:name). Keep SQL here, not in Python strings. Every *.sql file of this folder is loaded
-- into one namespace (mambomeme/library.py): a name defined twice stops the program at import.

-- name: root_by_name
SELECT root_id, name, path FROM library_roots WHERE name = :name;

-- name: roots
SELECT r.root_id, r.name, r.path,
       (SELECT count(*) FROM files f WHERE f.root_id = r.root_id) AS files
FROM library_roots r ORDER BY r.name;

-- name: insert_root
INSERT INTO library_roots(name, path) VALUES (:name, :path) RETURNING root_id;

-- name: move_root
UPDATE library_roots SET path = :path WHERE name = :name;

-- name: setting
SELECT value FROM settings WHERE key = :key;

-- name: set_setting
INSERT INTO settings(key, value) VALUES (:key, :value) ON CONFLICT (key) DO UPDATE SET value = excluded.value;

-- name: first_read
-- The first read of a connection: where a file that is not a database, or not readable, shows.
SELECT count(*) FROM sqlite_schema;

-- name: temp_in_memory
PRAGMA temp_store = MEMORY;
