-- Named queries of the evaluation's scoring (mambomeme/lab/scoring.py).
-- Each query starts with a `-- name: NAME` line and runs to the next. Parameters are apsw named
-- bindings (:name). Keep SQL here, not in Python strings. Every *.sql file of this folder is loaded
-- into one namespace (mambomeme/library.py): a name defined twice stops the program at import.

-- name: rescore_run_ids
SELECT run_id FROM runs_needing_rescore;

-- name: insert_selftest_partition
-- The scratch partition the publication self-test publishes to and rolls back.
INSERT INTO bench_partitions(benchmark, version, partition, meta, source_sha256)
VALUES ('selftest', '0', 'dev', '{}', '') RETURNING partition_id;
