-- Named queries of `mambo eval`'s commands (mambomeme/lab/evaluation_commands.py).
-- Each query starts with a `-- name: NAME` line and runs to the next. Parameters are apsw named
-- bindings (:name). Keep SQL here, not in Python strings. Every *.sql file of this folder is loaded
-- into one namespace (mambomeme/library.py): a name defined twice stops the program at import.

-- name: partition_query_count
SELECT count(*) FROM bench_queries WHERE partition_id = :partition_id;
