-- Named queries of the library room (mambomeme/library.py): opening the file, roots and settings.
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

-- name: setting
SELECT value FROM settings WHERE key = :key;

-- name: set_setting
INSERT INTO settings(key, value) VALUES (:key, :value) ON CONFLICT (key) DO UPDATE SET value = excluded.value;

-- name: first_read
-- The first read of a connection: where a file that is not a database, or not readable, shows.
-- Also how a new library is told from one to migrate (no object in its schema yet).
SELECT count(*) FROM sqlite_schema;

-- name: temp_in_memory
PRAGMA temp_store = MEMORY;

-- name: version_and_schema_names
-- The schema version and every object's name, read in one statement (DB._refuse_foreign says why).
SELECT (SELECT user_version FROM pragma_user_version), name FROM sqlite_schema;

-- name: user_version
PRAGMA user_version;

-- name: foreign_keys_on
PRAGMA foreign_keys = ON;

-- name: journal_mode_wal
PRAGMA journal_mode = WAL;

-- name: synchronous_normal
PRAGMA synchronous = NORMAL;

-- name: fold_wal
-- Fold the WAL back into the main file and empty it: the library is one file again.
PRAGMA wal_checkpoint(TRUNCATE);

-- name: map_whole_file
-- Memory-map up to 1 GiB of the file (the vector scans' reader, DB.reader says why).
PRAGMA mmap_size = 1073741824;

-- name: data_version
PRAGMA data_version;

-- name: item_count
SELECT count(*) FROM items;
