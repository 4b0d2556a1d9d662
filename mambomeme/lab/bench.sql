-- Named queries of `mambo bench` (mambomeme/lab/bench.py).
-- Each query starts with a `-- name: NAME` line and runs to the next. Parameters are apsw named
-- bindings (:name). Keep SQL here, not in Python strings. Every *.sql file of this folder is loaded
-- into one namespace (mambomeme/library.py): a name defined twice stops the program at import.

-- name: group_bench_items
-- Every file of the library with its item, as ingest met them: the stored groups and what the
-- near-identity rule reads (mambo bench groups).
SELECT f.item_id, f.rel_path, i.phash, i.ocr_text, i.perceptual_group
FROM files f JOIN items i ON i.item_id = f.item_id
ORDER BY f.item_id, f.file_id;

-- name: soak_integrity
-- SQLite's own check after a crash ("ok", else the first problem).
PRAGMA integrity_check;

-- name: file_count
SELECT count(*) FROM files;
