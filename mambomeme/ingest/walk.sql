-- Named queries of ingest's walk (mambomeme/ingest/walk.py): the library root a folder belongs to.
-- Each query starts with a `-- name: NAME` line and runs to the next. Parameters are apsw named
-- bindings (:name). Keep SQL here, not in Python strings. Every *.sql file of mambomeme/, its lab and
-- its ingest package is loaded into one namespace (mambomeme/library.py): a name defined twice stops
-- the program at import.

-- name: insert_root
INSERT INTO library_roots(name, path) VALUES (:name, :path) RETURNING root_id;
