-- 005: the vector indexes know which items may be served.
-- Until now a dense KNN fetched k = depth + (number of hidden items) neighbours and dropped the
-- hidden ones afterwards: correct, but sqlite-vec's KNN cost grows with k (at 100k items a bit
-- KNN took 4 ms at k=10 and 110 ms at k=400), so a library with 5,000 unsafe items paid for
-- k = 5,050 on every query. A vec0 metadata column is filtered DURING the scan, so k stays the
-- candidate depth. `servable` is kept equal to membership of the servable_items view (the one
-- definition of what may be shown) by the trigger below; search still joins the view as well.
CREATE TEMP TABLE vectors_005 AS SELECT item_id, embedding FROM item_vectors;

DROP TABLE item_vectors;
DROP TABLE item_vectors_bit;

CREATE VIRTUAL TABLE item_vectors USING vec0(
    item_id INTEGER PRIMARY KEY,
    embedding float[384] distance_metric=cosine,
    servable integer
);

CREATE VIRTUAL TABLE item_vectors_bit USING vec0(
    item_id INTEGER PRIMARY KEY,
    embedding bit[384],
    servable integer
);

INSERT INTO item_vectors(item_id, embedding, servable)
SELECT item_id, embedding, item_id IN (SELECT item_id FROM servable_items) FROM vectors_005;

INSERT INTO item_vectors_bit(item_id, embedding, servable)
SELECT item_id, vec_quantize_binary(embedding), item_id IN (SELECT item_id FROM servable_items) FROM vectors_005;

DROP TABLE vectors_005;

CREATE TRIGGER item_vectors_servable AFTER UPDATE OF safety, rights, private ON items BEGIN
    UPDATE item_vectors SET servable = EXISTS (SELECT 1 FROM servable_items WHERE item_id = new.item_id)
    WHERE item_id = new.item_id;
    UPDATE item_vectors_bit SET servable = EXISTS (SELECT 1 FROM servable_items WHERE item_id = new.item_id)
    WHERE item_id = new.item_id;
END;
