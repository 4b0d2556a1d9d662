-- 025: a third evidence vector, what the meme looks like: its picture description alone
-- (embed.FIELD_KINDS "looks", vector_id = item_id * 4 + 3). The picture vector reads the template's
-- name and aliases before the description, and a query describing the picture ("old man with a
-- forced smile holding a mug") finds the description nearer alone. The triggers that keep the
-- evidence vectors' `servable` and delete them with their item cover the new kind.
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
    UPDATE item_field_vectors SET servable = EXISTS (SELECT 1 FROM servable_items WHERE item_id = new.item_id)
    WHERE vector_id = new.item_id * 4 + 3;
END;

DROP TRIGGER item_vectors_bit_delete;
CREATE TRIGGER item_vectors_bit_delete AFTER DELETE ON item_embeddings BEGIN
    DELETE FROM item_vectors_bit WHERE item_id = old.item_id;
    DELETE FROM item_field_vectors WHERE vector_id = old.item_id * 4 + 1;
    DELETE FROM item_field_vectors WHERE vector_id = old.item_id * 4 + 2;
    DELETE FROM item_field_vectors WHERE vector_id = old.item_id * 4 + 3;
END;

DROP TRIGGER items_delete;
CREATE TRIGGER items_delete AFTER DELETE ON items BEGIN
    DELETE FROM items_fts WHERE rowid = old.item_id;
    DELETE FROM items_trigram WHERE rowid = old.item_id;
    DELETE FROM item_vectors WHERE item_id = old.item_id;
    DELETE FROM item_vectors_bit WHERE item_id = old.item_id;
    DELETE FROM item_field_vectors WHERE vector_id = old.item_id * 4 + 1;
    DELETE FROM item_field_vectors WHERE vector_id = old.item_id * 4 + 2;
    DELETE FROM item_field_vectors WHERE vector_id = old.item_id * 4 + 3;
END;

DROP TRIGGER vector_codes_servable;
CREATE TRIGGER vector_codes_servable AFTER UPDATE OF safety, rights, private ON items
WHEN EXISTS (SELECT 1 FROM vector_codes_items WHERE item_id = new.item_id) BEGIN
    UPDATE vector_codes SET servable = EXISTS (SELECT 1 FROM servable_items WHERE item_id = new.item_id)
    WHERE vector_id = new.item_id * 4;
    UPDATE vector_codes SET servable = EXISTS (SELECT 1 FROM servable_items WHERE item_id = new.item_id)
    WHERE vector_id = new.item_id * 4 + 1;
    UPDATE vector_codes SET servable = EXISTS (SELECT 1 FROM servable_items WHERE item_id = new.item_id)
    WHERE vector_id = new.item_id * 4 + 2;
    UPDATE vector_codes SET servable = EXISTS (SELECT 1 FROM servable_items WHERE item_id = new.item_id)
    WHERE vector_id = new.item_id * 4 + 3;
END;

-- (no WHEN on vector_codes_items: deleting an item may cascade to that table first)
DROP TRIGGER vector_codes_delete;
CREATE TRIGGER vector_codes_delete AFTER DELETE ON item_embeddings BEGIN
    DELETE FROM vector_codes WHERE vector_id = old.item_id * 4;
    DELETE FROM vector_codes WHERE vector_id = old.item_id * 4 + 1;
    DELETE FROM vector_codes WHERE vector_id = old.item_id * 4 + 2;
    DELETE FROM vector_codes WHERE vector_id = old.item_id * 4 + 3;
    DELETE FROM vector_codes_items WHERE item_id = old.item_id;
END;

PRAGMA user_version = 25;
