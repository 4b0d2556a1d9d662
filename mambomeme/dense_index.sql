-- The coarse index's int8 codes (migration 019, mambomeme/dense_index.py maintain_vector_index).

-- name: holds_vector_codes
-- Whether the library's coarse index scans int8 codes (a large library: QUANTIZED_MIN_VECTORS).
SELECT EXISTS (SELECT 1 FROM vector_codes_items);

-- name: clear_vector_codes
DELETE FROM vector_codes;
DELETE FROM vector_codes_items;

-- name: insert_vector_code
INSERT INTO vector_codes(vector_id, cluster, embedding, servable)
VALUES (:vector_id, :cluster, vec_int8(:code), :servable);

-- name: record_vector_codes_item
-- An item whose all-fields vector is in vector_codes, with its float vector's checksum ('' for an
-- item with no embedding record: the benchmarks' synthetic items) and its code's.
INSERT OR REPLACE INTO vector_codes_items(item_id, vector_sha256, codes_sha256)
VALUES (:item_id, coalesce((SELECT e.vector_sha256 FROM item_embeddings e WHERE e.item_id = :item_id), ''),
        :codes_sha256);

-- name: codes_for_clustering
-- Every code of a quantized library (vector_id = item_id * 4 + kind), for re-clustering.
SELECT vector_id, embedding, servable FROM vector_codes;

-- name: drop_item_floats
-- A quantized item keeps its codes only (migration 020).
DELETE FROM item_vectors WHERE item_id = :item_id;
DELETE FROM item_field_vectors WHERE vector_id = :item_id * 4 + 1;
DELETE FROM item_field_vectors WHERE vector_id = :item_id * 4 + 2;
DELETE FROM item_field_vectors WHERE vector_id = :item_id * 4 + 3;

-- name: items_to_quantize
-- Items embedded (again) since vector_codes was written: their codes are written again.
SELECT e.item_id FROM item_embeddings e
LEFT JOIN vector_codes_items q ON q.item_id = e.item_id
WHERE q.vector_sha256 IS NOT e.vector_sha256
ORDER BY e.item_id;

-- name: item_vectors_to_quantize
-- One item's float vectors and the partitions ingest gave them (insert_vector: the nearest centroid).
SELECT item_id * 4, cluster, embedding, servable FROM item_vectors WHERE item_id = :item_id
UNION ALL
SELECT vector_id, cluster, embedding, servable FROM item_field_vectors WHERE vector_id = :item_id * 4 + 1
UNION ALL
SELECT vector_id, cluster, embedding, servable FROM item_field_vectors WHERE vector_id = :item_id * 4 + 2
UNION ALL
SELECT vector_id, cluster, embedding, servable FROM item_field_vectors WHERE vector_id = :item_id * 4 + 3;

-- name: forget_item_codes
DELETE FROM vector_codes WHERE vector_id = :item_id * 4;
DELETE FROM vector_codes WHERE vector_id = :item_id * 4 + 1;
DELETE FROM vector_codes WHERE vector_id = :item_id * 4 + 2;
DELETE FROM vector_codes WHERE vector_id = :item_id * 4 + 3;

-- name: insert_field_vector_in_cluster
INSERT INTO item_field_vectors(vector_id, cluster, embedding, servable)
VALUES (:vector_id, :cluster, :embedding, :servable);

-- name: field_vectors_for_clustering
SELECT vector_id, embedding, servable FROM item_field_vectors ORDER BY vector_id;

-- name: insert_vector_in_cluster
-- Re-clustering (maintain_vector_index): the cluster was computed for every vector at once.
INSERT INTO item_vectors(item_id, cluster, embedding, servable)
VALUES (:item_id, :cluster, :embedding, :servable);

-- name: vector_index
SELECT clusters, trained_vectors, training_sample, iterations, seed, seconds, trained_at FROM vector_index;

-- name: vectors_for_clustering
SELECT item_id, embedding, servable FROM item_vectors ORDER BY item_id;

-- name: clear_vector_index
DELETE FROM vector_centroids;
DELETE FROM vector_index;
DELETE FROM item_vectors;
DELETE FROM item_field_vectors;

-- name: insert_centroid
INSERT INTO vector_centroids(cluster, centroid) VALUES (:cluster, :centroid);

-- name: record_vector_index
INSERT INTO vector_index(index_id, clusters, trained_vectors, training_sample, iterations, seed, seconds)
VALUES (1, :clusters, :trained_vectors, :training_sample, :iterations, :seed, :seconds);

-- name: vector_count
-- Every vector a dense scan reads: all-fields and evidence vectors (IVF_MIN_VECTORS counts these),
-- float or int8 code (a quantized item keeps its codes only; one embedded again since it was
-- quantized is counted twice until the end of its `mambo add`).
SELECT (SELECT count(*) FROM item_vectors) + (SELECT count(*) FROM item_field_vectors)
       + (SELECT count(*) FROM vector_codes);
