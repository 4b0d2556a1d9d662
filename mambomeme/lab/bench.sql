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

-- name: indexed_snapshot
-- What a crash must never lose (`mambo bench soak` compares it before and after every kill):
-- each indexed file with its item's content hash, text, judgements (safety, rights) and vector.
SELECT r.name || '/' || f.rel_path AS path, i.sha256, i.title, i.ocr_text, i.safety, i.rights,
       hex(coalesce(v.embedding, (SELECT c.embedding FROM vector_codes c WHERE c.vector_id = i.item_id * 4)))
           AS vector
FROM files f
JOIN library_roots r ON r.root_id = f.root_id
JOIN items i ON i.item_id = f.item_id
LEFT JOIN item_vectors v ON v.item_id = i.item_id;

-- name: error_count
SELECT count(*) FROM ingest_errors;

-- name: running_runs
SELECT count(*) FROM ingest_runs WHERE status = 'running';

-- name: interrupted_runs
-- Killed runs that the run after them found still 'running' (abandon_stale_runs).
SELECT count(*) FROM ingest_runs WHERE status = 'interrupted';

-- name: soak_integrity
-- SQLite's own check after a crash ("ok", else the first problem).
PRAGMA integrity_check;

-- name: file_count
SELECT count(*) FROM files;
