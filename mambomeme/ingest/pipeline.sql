-- Named queries of the ingest pipeline (mambomeme/ingest/pipeline.py): known files, ingest runs
-- and their errors.
-- Each query starts with a `-- name: NAME` line and runs to the next. Parameters are apsw named
-- bindings (:name). Keep SQL here, not in Python strings. Every *.sql file of mambomeme/, its lab and
-- its ingest package is loaded into one namespace (mambomeme/library.py): a name defined twice stops
-- the program at import.

-- name: file_by_path
-- A known file, with the readings of its metadata that `add` compares with what its sidecars say.
SELECT f.file_id, f.item_id, f.size, f.mtime_ns, f.sidecar_sha256, i.sha256,
       f.metadata, f.safety, f.rights, f.private, f.stated
FROM files f JOIN items i ON i.item_id = f.item_id
WHERE f.root_id = :root_id AND f.rel_path = :rel_path;

-- name: start_run
INSERT INTO ingest_runs(paths) VALUES (:paths) RETURNING run_id;

-- name: abandon_stale_runs
-- A run still marked running when a new one starts was killed (kill -9, power loss).
UPDATE ingest_runs SET status = 'interrupted' WHERE status = 'running';

-- name: finish_run
UPDATE ingest_runs SET status = :status, finished_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
       added = :added, updated = :updated, duplicates = :duplicates, skipped = :skipped,
       errors = :errors, seconds = :seconds
WHERE run_id = :run_id;

-- name: insert_error
-- One row per file and problem: meeting it again moves it to this run.
INSERT INTO ingest_errors(run_id, path, kind, message) VALUES (:run_id, :path, :kind, :message)
ON CONFLICT (path, kind, message) DO UPDATE SET run_id = excluded.run_id,
    at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now');
