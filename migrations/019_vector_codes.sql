-- 019: the coarse index of a large library scans int8 codes, not floats. sqlite-vec 0.1.9 reads a
-- float[768] vector for a cosine distance in ~0.7-1.3 us and an int8[768] one for an L2 distance in
-- about half that (no SIMD in its wheel). Over QUANTIZED_MIN_VECTORS vectors (mambomeme/vectors.py)
-- every vector, all-fields and evidence alike, also has a code here (its unit vector times
-- CODE_SCALE, rounded: L2 between codes ranks as cosine between the vectors), in the partition of
-- its nearest centroid; a search takes each probed partition's nearest codes and ranks them by
-- their float vectors' cosine (search.sql dense_candidates, 'ivf-int8'). The float vectors stay
-- the library's vectors.
CREATE VIRTUAL TABLE vector_codes USING vec0(
    vector_id INTEGER PRIMARY KEY,
    cluster integer partition key,
    embedding int8[768] distance_metric=l2,
    servable integer
);

-- Which items vector_codes holds, by their all-fields vector's checksum (item_embeddings): an item
-- embedded (again) since is quantized by the next maintain_vector_index.
CREATE TABLE vector_codes_items (
    item_id       INTEGER PRIMARY KEY REFERENCES items(item_id) ON DELETE CASCADE,
    vector_sha256 TEXT NOT NULL
);

CREATE TRIGGER vector_codes_servable AFTER UPDATE OF safety, rights, private ON items
WHEN EXISTS (SELECT 1 FROM vector_codes_items WHERE item_id = new.item_id) BEGIN
    UPDATE vector_codes SET servable = EXISTS (SELECT 1 FROM servable_items WHERE item_id = new.item_id)
    WHERE vector_id = new.item_id * 4;
    UPDATE vector_codes SET servable = EXISTS (SELECT 1 FROM servable_items WHERE item_id = new.item_id)
    WHERE vector_id = new.item_id * 4 + 1;
    UPDATE vector_codes SET servable = EXISTS (SELECT 1 FROM servable_items WHERE item_id = new.item_id)
    WHERE vector_id = new.item_id * 4 + 2;
END;

-- (no WHEN on vector_codes_items: deleting an item may cascade to that table first)
CREATE TRIGGER vector_codes_delete AFTER DELETE ON item_embeddings BEGIN
    DELETE FROM vector_codes WHERE vector_id = old.item_id * 4;
    DELETE FROM vector_codes WHERE vector_id = old.item_id * 4 + 1;
    DELETE FROM vector_codes WHERE vector_id = old.item_id * 4 + 2;
    DELETE FROM vector_codes_items WHERE item_id = old.item_id;
END;
