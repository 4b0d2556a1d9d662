-- Named queries of the calibration of the dense route (mambomeme/lab/calibrate.py).
-- Each query starts with a `-- name: NAME` line and runs to the next. Parameters are apsw named
-- bindings (:name). Keep SQL here, not in Python strings. Every *.sql file of this folder is loaded
-- into one namespace (mambomeme/library.py): a name defined twice stops the program at import.

-- name: calibrate_files
-- Every file's item by its path in its root: how judgements (paths) name items.
SELECT item_id, rel_path FROM files;

-- name: calibrate_servable_items
SELECT item_id FROM servable_items ORDER BY item_id;
