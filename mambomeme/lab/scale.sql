-- Named queries of the scale benchmark (mambomeme/lab/scale.py).
-- Each query starts with a `-- name: NAME` line and runs to the next. Parameters are apsw named
-- bindings (:name). Keep SQL here, not in Python strings. Every *.sql file of this folder is loaded
-- into one namespace (mambomeme/library.py): a name defined twice stops the program at import.

-- name: scale_float_vectors
-- The float vectors of the fixture's library: the real vectors a synthetic library is grown from.
SELECT embedding FROM item_vectors;

-- name: free_bytes
-- The bytes in the file's free pages, which later writes reuse.
SELECT (SELECT freelist_count FROM pragma_freelist_count) * (SELECT page_size FROM pragma_page_size);
