-- 011: one vector per kind of evidence. Beside an item's vector of all its fields
-- (item_vectors), the caption (its OCR text) and the picture (template name and aliases, picture
-- description, labels) each get a vector of their own, so a paraphrase of the caption is not
-- drowned by the template's words, nor a picture description by a long caption. The dense route
-- scores an item by its best vector (mambomeme/search.sql `search`).
-- vector_id = item_id * 4 + kind (kind 1 caption, 2 picture; 0 is item_vectors' all-fields vector):
-- sqlite-vec's vec0 has one integer key, and this keeps an item's vectors beside each other.
-- An empty field has no vector. `cluster` and `servable` mean what they mean in item_vectors.
-- Existing libraries have no field vectors until their items are embedded again: the embedding
-- text recipe changed (a new embedding_models row), and `mambo add` re-embeds every item embedded
-- under another row of the same model; search works meanwhile from item_vectors alone.
CREATE VIRTUAL TABLE item_field_vectors USING vec0(
    vector_id INTEGER PRIMARY KEY,
    cluster integer partition key,
    embedding float[384] distance_metric=cosine,
    servable integer,
    chunk_size=128
);

DROP TRIGGER item_vectors_servable;
CREATE TRIGGER item_vectors_servable AFTER UPDATE OF safety, rights, private ON items BEGIN
    UPDATE item_vectors SET servable = EXISTS (SELECT 1 FROM servable_items WHERE item_id = new.item_id)
    WHERE item_id = new.item_id;
    UPDATE item_vectors_bit SET servable = EXISTS (SELECT 1 FROM servable_items WHERE item_id = new.item_id)
    WHERE item_id = new.item_id;
    UPDATE item_field_vectors SET servable = EXISTS (SELECT 1 FROM servable_items WHERE item_id = new.item_id)
    WHERE vector_id = new.item_id * 4 + 1;
    UPDATE item_field_vectors SET servable = EXISTS (SELECT 1 FROM servable_items WHERE item_id = new.item_id)
    WHERE vector_id = new.item_id * 4 + 2;
END;

DROP TRIGGER item_vectors_bit_delete;
CREATE TRIGGER item_vectors_bit_delete AFTER DELETE ON item_embeddings BEGIN
    DELETE FROM item_vectors_bit WHERE item_id = old.item_id;
    DELETE FROM item_field_vectors WHERE vector_id = old.item_id * 4 + 1;
    DELETE FROM item_field_vectors WHERE vector_id = old.item_id * 4 + 2;
END;

DROP TRIGGER items_delete;
CREATE TRIGGER items_delete AFTER DELETE ON items BEGIN
    DELETE FROM items_fts WHERE rowid = old.item_id;
    DELETE FROM items_trigram WHERE rowid = old.item_id;
    DELETE FROM item_vectors WHERE item_id = old.item_id;
    DELETE FROM item_vectors_bit WHERE item_id = old.item_id;
    DELETE FROM item_field_vectors WHERE vector_id = old.item_id * 4 + 1;
    DELETE FROM item_field_vectors WHERE vector_id = old.item_id * 4 + 2;
END;
