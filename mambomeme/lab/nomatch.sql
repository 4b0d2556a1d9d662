-- Named queries of the "no match" model's fitting (mambomeme/lab/nomatch.py).
-- Each query starts with a `-- name: NAME` line and runs to the next. Parameters are apsw named
-- bindings (:name). Keep SQL here, not in Python strings. Every *.sql file of this folder is loaded
-- into one namespace (mambomeme/library.py): a name defined twice stops the program at import.

-- name: nomatch_files
-- Every file's path in its root and its item: how judgements (paths) name items.
SELECT rel_path, item_id FROM files;
