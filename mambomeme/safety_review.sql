-- Named queries of the safety review (mambomeme/safety_review.py): safety signals, a person's decisions,
-- the review list and its counts. Each query starts with a `-- name: NAME` line and runs to the next.

-- name: safety_engine
SELECT engine_id FROM safety_engines
WHERE kind = :kind AND name = :name AND version = :version AND weights_sha256 = :weights_sha256 AND params = :params;

-- name: insert_safety_engine
INSERT INTO safety_engines(kind, name, version, weights_sha256, params)
VALUES (:kind, :name, :version, :weights_sha256, :params) RETURNING engine_id;

-- name: upsert_safety_signal
INSERT INTO safety_signals(item_id, signal, engine_id, safety, rule, words, score)
VALUES (:item_id, :signal, :engine_id, :safety, :rule, :words, :score)
ON CONFLICT (item_id, signal) DO UPDATE SET
    engine_id = excluded.engine_id, safety = excluded.safety, rule = excluded.rule, words = excluded.words,
    score = excluded.score, at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now');

-- name: delete_safety_signal
DELETE FROM safety_signals WHERE item_id = :item_id AND signal = :signal;

-- name: caption_vectors
-- The stored caption vector of each named item embedded by the current model and text recipe: its
-- caption field vector, or the all-fields vector when the caption is the item's whole text (then
-- no field vector is stored: embed_items). Items with no caption have none.
-- A quantized item (a large library) has codes only: the code of the same vector (vectors.stored_vector).
SELECT i.item_id,
       coalesce((SELECT fv.embedding FROM item_field_vectors fv WHERE fv.vector_id = i.item_id * 4 + 1),
                (SELECT v.embedding FROM item_vectors v WHERE v.item_id = i.item_id)) AS embedding,
       coalesce((SELECT c.embedding FROM vector_codes c WHERE c.vector_id = i.item_id * 4 + 1),
                (SELECT c.embedding FROM vector_codes c WHERE c.vector_id = i.item_id * 4)) AS code
FROM items i
JOIN item_embeddings e ON e.item_id = i.item_id
JOIN embedding_models m ON m.model_id = e.model_id
WHERE i.item_id IN (SELECT value FROM json_each(:item_ids)) AND trim(i.ocr_text) <> ''
  AND m.name = :name AND m.weights_sha256 = :weights_sha256 AND m.text_recipe = :text_recipe;

-- name: all_item_ids
SELECT item_id FROM items ORDER BY item_id;

-- name: items_to_recheck
SELECT item_id, ocr_text FROM items;

-- name: item_classes
SELECT item_id, safety FROM items;

-- name: item_safety
SELECT i.item_id, i.sha256, i.safety, i.safety_source, i.metadata_source, d.safety AS decided,
       d.automatic_safety, d.automatic_source, d.decided_by
FROM items i LEFT JOIN safety_decisions d ON d.sha256 = i.sha256
WHERE i.item_id = :item_id;

-- name: decide_safety
INSERT INTO safety_decisions(sha256, safety, decided_by, note, automatic_safety, automatic_source)
VALUES (:sha256, :safety, :decided_by, :note, :automatic_safety, :automatic_source)
ON CONFLICT (sha256) DO UPDATE SET
    safety = excluded.safety, decided_by = excluded.decided_by, note = excluded.note, follows = NULL,
    decided_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now');

-- name: withdraw_safety_decision
-- The decision and every copy's row that follows it.
DELETE FROM safety_decisions WHERE sha256 = :origin OR follows = :origin;

-- name: safety_review_list
-- Items a signal marked (any class but safe) or a person decided, most severe first, with every
-- signal's class, rule and score (the caption meaning's score is shown even when it is below a bar).
SELECT i.item_id, r.name || '/' || f.rel_path AS path, i.safety, i.safety_source, i.ocr_text AS caption,
       t.safety AS text_safety, t.rule AS text_rule, t.words AS text_words,
       p.safety AS picture_safety, p.rule AS picture_rule, p.score AS picture_score,
       m.safety AS meaning_safety, m.rule AS meaning_rule, m.score AS meaning_score,
       d.decided_by, d.decided_at, d.note, d.automatic_safety
FROM items i
JOIN files f ON f.file_id = (SELECT min(file_id) FROM files WHERE item_id = i.item_id)
JOIN library_roots r ON r.root_id = f.root_id
LEFT JOIN safety_signals t ON t.item_id = i.item_id AND t.signal = 'text'
LEFT JOIN safety_signals p ON p.item_id = i.item_id AND p.signal = 'picture'
LEFT JOIN safety_signals m ON m.item_id = i.item_id AND m.signal = 'meaning'
LEFT JOIN safety_decisions d ON d.sha256 = i.sha256
WHERE (t.safety IS NOT NULL AND t.safety <> 'safe') OR (p.safety IS NOT NULL AND p.safety <> 'safe')
   OR (m.safety IS NOT NULL AND m.safety <> 'safe')
   OR d.sha256 IS NOT NULL OR i.safety_source LIKE 'detector:%' OR i.safety_source LIKE 'meaning:%'
ORDER BY CASE i.safety WHEN 'critical' THEN 0 WHEN 'unsafe' THEN 1 WHEN 'sensitive' THEN 2 ELSE 3 END, i.item_id;

-- name: safety_review_counts
SELECT (SELECT count(*) FROM items) AS items,
       (SELECT count(*) FROM safety_signals WHERE signal = 'text' AND safety <> 'safe') AS text_marked,
       (SELECT count(*) FROM safety_signals WHERE signal = 'text' AND safety IN ('unsafe', 'critical')) AS text_hidden,
       (SELECT count(*) FROM safety_signals WHERE signal = 'meaning') AS meaning_scored,
       (SELECT count(*) FROM safety_signals WHERE signal = 'meaning' AND safety <> 'safe') AS meaning_marked,
       (SELECT count(*) FROM safety_signals WHERE signal = 'meaning' AND safety IN ('unsafe', 'critical'))
           AS meaning_hidden,
       (SELECT count(*) FROM safety_signals WHERE signal = 'picture') AS picture_scored,
       (SELECT count(*) FROM safety_signals WHERE signal = 'picture' AND safety <> 'safe') AS picture_marked,
       (SELECT count(*) FROM items i JOIN safety_decisions d ON d.sha256 = i.sha256 WHERE d.follows IS NULL)
           AS decided,
       (SELECT count(*) FROM items WHERE safety IN ('unsafe', 'critical')) AS hidden;

-- name: safety_engines_in_use
SELECT e.kind, e.name, e.version, e.weights_sha256, count(s.item_id) AS items
FROM safety_engines e LEFT JOIN safety_signals s ON s.engine_id = e.engine_id
GROUP BY e.engine_id HAVING count(s.item_id) > 0 ORDER BY e.kind, e.engine_id;

-- name: withheld_matches
-- How many withheld memes (unsafe, critical, withdrawn or private) hold every word of a query
-- (:all_words, an FTS5 expression): what a "no match" answer may say of them, a count and no more.
SELECT count(*) FROM items_fts f
WHERE items_fts MATCH :all_words AND f.rowid IN (SELECT item_id FROM hidden_items);

-- name: any_withheld
SELECT EXISTS (SELECT 1 FROM hidden_items);
