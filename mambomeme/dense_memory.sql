-- Named queries of the dense route's vectors held in memory (mambomeme/dense_memory.py).
-- Each query starts with a `-- name: NAME` line and runs to the next. Parameters are apsw named
-- bindings (:name). Keep SQL here, not in Python strings. Every *.sql file of this folder is loaded
-- into one namespace (mambomeme/library.py): a name defined twice stops the program at import.

-- name: matrix_bounds
-- How many vectors each table holds, servable or not (an unfiltered count reads vec0's row index
-- only; filtered by `servable` it would read every vector), and whether the library is quantized
-- (it keeps no float vector of a quantized item: not for the matrix).
SELECT (SELECT count(*) FROM item_vectors), (SELECT count(*) FROM item_field_vectors),
       EXISTS (SELECT 1 FROM vector_codes_items);

-- name: matrix_vectors
-- The servable vectors a long-lived search holds in memory (dense_memory.py): all-fields ...
SELECT item_id, embedding FROM item_vectors WHERE servable = 1;

-- name: matrix_field_vectors
-- ... and evidence vectors (vector_id = item_id * 4 + kind).
SELECT vector_id, embedding FROM item_field_vectors WHERE servable = 1;

-- name: vector_fingerprint
-- What changes when the vectors or what may be shown change: items embedded (count, ids, the
-- recipe's manifest row) and hidden items (a partial index: costs what it holds). A held matrix
-- whose fingerprint differs is read again.
SELECT (SELECT count(*) FROM item_embeddings), (SELECT total(item_id) FROM item_embeddings),
       (SELECT total(model_id) FROM item_embeddings),
       (SELECT count(*) FROM hidden_items), (SELECT total(item_id) FROM hidden_items);
