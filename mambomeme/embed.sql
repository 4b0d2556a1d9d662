-- Named queries of the embedding room (mambomeme/embed.py): embedding models, each item's vectors and
-- the text they were computed from.
-- Each query starts with a `-- name: NAME` line and runs to the next (see library.sql).

-- name: embedded_texts
-- Every item embedded by the current model and text recipe, with the SHA-256 of the text its
-- vectors were computed from and its effective fields now (embed.embed_text joins them).
SELECT e.item_id, e.text_sha256, x.title, x.template_text, x.entities, x.tags, x.description, x.ocr_text
FROM item_embeddings e
JOIN embedding_models m ON m.model_id = e.model_id
JOIN item_effective x ON x.item_id = e.item_id
WHERE m.name = :name AND m.weights_sha256 = :weights_sha256 AND m.text_recipe = :text_recipe
ORDER BY e.item_id;

-- name: effective_text
SELECT title, template_text, entities, tags, description, ocr_text FROM item_effective WHERE item_id = :item_id;

-- name: upsert_embedding
INSERT OR REPLACE INTO item_embeddings(item_id, model_id, text_sha256, vector_sha256)
VALUES (:item_id, :model_id, :text_sha256, :vector_sha256);

-- name: delete_vector
DELETE FROM item_vectors WHERE item_id = :item_id;

-- name: delete_vector_bit
DELETE FROM item_vectors_bit WHERE item_id = :item_id;

-- name: insert_vector
-- (the item row is written first: whether it may be served is known, see item_vectors_servable)
-- The vector joins the partition of its nearest centroid; 0 when the library has no coarse index.
-- (LIMIT, not k = 1: a scalar subquery carries an implicit LIMIT, and vec0 refuses both.)
INSERT INTO item_vectors(item_id, cluster, embedding, servable)
VALUES (:item_id,
        coalesce((SELECT cluster FROM vector_centroids WHERE centroid MATCH :embedding ORDER BY distance LIMIT 1), 0),
        :embedding, EXISTS (SELECT 1 FROM servable_items WHERE item_id = :item_id));

-- name: delete_field_vectors
DELETE FROM item_field_vectors WHERE vector_id = :item_id * 4 + 1;
DELETE FROM item_field_vectors WHERE vector_id = :item_id * 4 + 2;
DELETE FROM item_field_vectors WHERE vector_id = :item_id * 4 + 3;

-- name: insert_field_vector
-- One of an item's evidence vectors (migration 011: vector_id = item_id * 4 + kind), in the partition
-- of its nearest centroid like insert_vector.
INSERT INTO item_field_vectors(vector_id, cluster, embedding, servable)
VALUES (:item_id * 4 + :kind,
        coalesce((SELECT cluster FROM vector_centroids WHERE centroid MATCH :embedding ORDER BY distance LIMIT 1), 0),
        :embedding, EXISTS (SELECT 1 FROM servable_items WHERE item_id = :item_id));

-- name: insert_vector_bit
INSERT INTO item_vectors_bit(item_id, embedding, servable)
VALUES (:item_id, vec_quantize_binary(:embedding),
        EXISTS (SELECT 1 FROM servable_items WHERE item_id = :item_id));

-- name: embedding_model
SELECT model_id FROM embedding_models
WHERE name = :name AND revision = :revision AND weights_sha256 = :weights_sha256
  AND text_recipe = :text_recipe;

-- name: insert_embedding_model
INSERT INTO embedding_models(name, revision, weights_sha256, dim, text_recipe, runtime)
VALUES (:name, :revision, :weights_sha256, :dim, :text_recipe, :runtime) RETURNING model_id;

-- name: note_embedding_runtime
-- A runtime that computes vectors of an existing model joins its list (once).
UPDATE embedding_models SET runtime = runtime || '; ' || :runtime
WHERE model_id = :model_id AND instr('; ' || runtime || '; ', '; ' || :runtime || '; ') = 0;

-- name: items_to_embed_again
-- Items with no vector of the current model and text recipe: computed under another text recipe
-- (embed.EMBED_TEXT_RECIPE; schema 11 added evidence vectors) or another model (schema 15 emptied
-- MiniLM's vectors for all-mpnet-base-v2's), or never: `mambo add` embeds them again.
SELECT i.item_id FROM items i
WHERE NOT EXISTS (SELECT 1 FROM item_embeddings e JOIN embedding_models m ON m.model_id = e.model_id
                  WHERE e.item_id = i.item_id AND m.name = :name AND m.weights_sha256 = :weights_sha256
                    AND m.text_recipe = :text_recipe)
ORDER BY i.item_id;
