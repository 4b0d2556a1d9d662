-- Named queries of the embedding room (mambomeme/embed.py): what each embedded item's text is now.
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
