-- Named queries of ingest (mambomeme/ingest.py, ocr.py, embed.py, vectors.py): files, items, previews,
-- vectors and the coarse index, OCR engines, embedding models, ingest runs and errors.
-- Each query starts with a `-- name: NAME` line and runs to the next. Parameters are apsw named
-- bindings (:name). Keep SQL here, not in Python strings. Every *.sql file of this folder is loaded
-- into one namespace (mambomeme/library.py): a name defined twice stops the program at import.

-- name: file_by_path
-- A known file, with the readings of its metadata that `add` compares with what its sidecars say.
SELECT f.file_id, f.item_id, f.size, f.mtime_ns, f.sidecar_sha256, i.sha256,
       f.metadata, f.safety, f.rights, f.private, f.stated
FROM files f JOIN items i ON i.item_id = f.item_id
WHERE f.root_id = :root_id AND f.rel_path = :rel_path;

-- name: item_by_sha
SELECT item_id, metadata_source FROM items WHERE sha256 = :sha256;

-- name: insert_item
INSERT INTO items(sha256, format, width, height, byte_size, phash, dhash, perceptual_group, template_group,
                  title, template, entities, tags, description, source_url, creator, licence,
                  safety, safety_source, rights, private, metadata_source, ocr_text, ocr_engine_id,
                  template_id, template_score, recognised_revision, ocr_boxes, stated)
VALUES (:sha256, :format, :width, :height, :byte_size, :phash, :dhash, :perceptual_group, :template_group,
        :title, :template, :entities, :tags, :description, :source_url, :creator, :licence,
        :safety, :safety_source, :rights, :private, :metadata_source, :ocr_text, :ocr_engine_id,
        :template_id, :template_score, :recognised_revision, :ocr_boxes, :stated)
RETURNING item_id;

-- name: item_metadata
SELECT title, template, entities, tags, description, source_url, creator, licence, safety, rights, private,
       metadata_source
FROM items WHERE item_id = :item_id;

-- name: insert_file
-- A file with its own metadata (state.py file_params); the item's state is computed after it.
INSERT INTO files(item_id, root_id, rel_path, size, mtime_ns, sidecar_sha256, metadata, safety, rights, private,
                  stated)
VALUES (:item_id, :root_id, :rel_path, :size, :mtime_ns, :sidecar_sha256, :metadata, :safety, :rights, :private,
        :stated)
ON CONFLICT (root_id, rel_path) DO UPDATE SET
    item_id = excluded.item_id, size = excluded.size, mtime_ns = excluded.mtime_ns,
    sidecar_sha256 = excluded.sidecar_sha256, metadata = excluded.metadata, safety = excluded.safety,
    rights = excluded.rights, private = excluded.private, stated = excluded.stated,
    seen_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now');

-- name: touch_file
UPDATE files SET size = :size, mtime_ns = :mtime_ns, sidecar_sha256 = :sidecar_sha256,
       seen_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
WHERE file_id = :file_id;

-- name: delete_orphan_items
-- Items left without any file (their only file changed content or was pruned).
DELETE FROM items WHERE NOT EXISTS (SELECT 1 FROM files f WHERE f.item_id = items.item_id);

-- name: insert_preview
INSERT OR REPLACE INTO previews(item_id, format, width, height, data)
VALUES (:item_id, :format, :width, :height, :data);

-- name: upsert_embedding
INSERT OR REPLACE INTO item_embeddings(item_id, model_id, text_sha256, vector_sha256)
VALUES (:item_id, :model_id, :text_sha256, :vector_sha256);

-- name: reattach_labels
-- Labels kept (kept_labels) when this content was last deleted, on the item that has it again; a
-- template-group label whose item has no template group yet applies to its perceptual group.
INSERT INTO labels(item_id, scope, group_id, field, value, created_at)
SELECT i.item_id,
       CASE WHEN k.scope = 'template' AND i.template_group IS NULL THEN 'perceptual' ELSE k.scope END,
       CASE WHEN k.scope = 'item' THEN NULL
            WHEN k.scope = 'template' AND i.template_group IS NOT NULL THEN i.template_group
            ELSE i.perceptual_group END,
       k.field, k.value, k.created_at
FROM kept_labels k JOIN items i ON i.sha256 = k.sha256
WHERE i.item_id = :item_id
ORDER BY k.kept_id
RETURNING scope, group_id;

-- name: forget_kept_labels
DELETE FROM kept_labels WHERE sha256 = :sha256;

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

-- name: insert_field_vector
-- One of an item's evidence vectors (migration 011: vector_id = item_id * 4 + kind), in the partition
-- of its nearest centroid like insert_vector.
INSERT INTO item_field_vectors(vector_id, cluster, embedding, servable)
VALUES (:item_id * 4 + :kind,
        coalesce((SELECT cluster FROM vector_centroids WHERE centroid MATCH :embedding ORDER BY distance LIMIT 1), 0),
        :embedding, EXISTS (SELECT 1 FROM servable_items WHERE item_id = :item_id));

-- name: insert_field_vector_in_cluster
INSERT INTO item_field_vectors(vector_id, cluster, embedding, servable)
VALUES (:vector_id, :cluster, :embedding, :servable);

-- name: field_vectors_for_clustering
SELECT vector_id, embedding, servable FROM item_field_vectors ORDER BY vector_id;

-- name: items_to_embed_again
-- Items with no vector of the current model and text recipe: computed under another text recipe
-- (embed.EMBED_TEXT_RECIPE; schema 11 added evidence vectors) or another model (schema 15 emptied
-- MiniLM's vectors for all-mpnet-base-v2's), or never: `mambo add` embeds them again.
SELECT i.item_id FROM items i
WHERE NOT EXISTS (SELECT 1 FROM item_embeddings e JOIN embedding_models m ON m.model_id = e.model_id
                  WHERE e.item_id = i.item_id AND m.name = :name AND m.weights_sha256 = :weights_sha256
                    AND m.text_recipe = :text_recipe)
ORDER BY i.item_id;

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

-- name: insert_vector_bit
INSERT INTO item_vectors_bit(item_id, embedding, servable)
VALUES (:item_id, vec_quantize_binary(:embedding),
        EXISTS (SELECT 1 FROM servable_items WHERE item_id = :item_id));

-- name: phashes
SELECT item_id, phash, perceptual_group, template_group FROM items;

-- name: ocr_text
SELECT ocr_text FROM items WHERE item_id = :item_id;

-- name: new_group
INSERT INTO image_groups(kind, label) VALUES (:kind, :label) RETURNING group_id;

-- name: set_groups
UPDATE items SET perceptual_group = :perceptual_group, template_group = :template_group
WHERE item_id = :item_id;

-- name: ocr_engine
SELECT engine_id FROM ocr_engines
WHERE name = :name AND version = :version AND models_sha256 = :models_sha256 AND params = :params;

-- name: insert_ocr_engine
INSERT INTO ocr_engines(name, version, models_sha256, params)
VALUES (:name, :version, :models_sha256, :params) RETURNING engine_id;

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

-- name: start_run
INSERT INTO ingest_runs(paths) VALUES (:paths) RETURNING run_id;

-- name: abandon_stale_runs
-- A run still marked running when a new one starts was killed (kill -9, power loss).
UPDATE ingest_runs SET status = 'interrupted' WHERE status = 'running';

-- name: finish_run
UPDATE ingest_runs SET status = :status, finished_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
       added = :added, updated = :updated, duplicates = :duplicates, skipped = :skipped,
       errors = :errors, seconds = :seconds
WHERE run_id = :run_id;

-- name: insert_error
-- One row per file and problem: meeting it again moves it to this run.
INSERT INTO ingest_errors(run_id, path, kind, message) VALUES (:run_id, :path, :kind, :message)
ON CONFLICT (path, kind, message) DO UPDATE SET run_id = excluded.run_id,
    at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now');

-- name: refresh_vocabulary
-- The words a search knows are those of the memes it may show: every indexed word, less the
-- documents of hidden items (unsafe, withdrawn, private), counted by a temporary FTS5 index over
-- their text with the word index's tokenizer. So typo correction never turns a query into a word
-- only a hidden meme holds, and a name only a hidden meme holds is unknown to "no match" as it is
-- to the user. Run after every change of content or of what may be shown (ingest, prune, safety).
DELETE FROM vocabulary;
INSERT INTO vocabulary(term, docs) SELECT term, doc FROM items_vocab;
CREATE VIRTUAL TABLE IF NOT EXISTS temp.hidden_fts USING fts5(
    title, template, entities, tags, ocr_text, description,
    tokenize = 'unicode61 remove_diacritics 2'
);
CREATE VIRTUAL TABLE IF NOT EXISTS temp.hidden_vocab USING fts5vocab('temp', 'hidden_fts', 'row');
DELETE FROM temp.hidden_fts;
INSERT INTO temp.hidden_fts(rowid, title, template, entities, tags, ocr_text, description)
SELECT * FROM item_search_text WHERE item_id IN (SELECT item_id FROM hidden_items);
UPDATE vocabulary SET docs = docs - h.doc FROM temp.hidden_vocab h WHERE h.term = vocabulary.term;
DELETE FROM vocabulary WHERE docs <= 0;
DELETE FROM temp.hidden_fts;
UPDATE vocabulary_size SET documents = (SELECT count(*) FROM servable_items);

-- name: indexed_snapshot
-- What a crash must never lose (`mambo bench soak` compares it before and after every kill):
-- each indexed file with its item's content hash, text, judgements (safety, rights) and vector.
SELECT r.name || '/' || f.rel_path AS path, i.sha256, i.title, i.ocr_text, i.safety, i.rights,
       hex(coalesce(v.embedding, (SELECT c.embedding FROM vector_codes c WHERE c.vector_id = i.item_id * 4)))
           AS vector
FROM files f
JOIN library_roots r ON r.root_id = f.root_id
JOIN items i ON i.item_id = f.item_id
LEFT JOIN item_vectors v ON v.item_id = i.item_id;

-- name: error_count
SELECT count(*) FROM ingest_errors;

-- name: running_runs
SELECT count(*) FROM ingest_runs WHERE status = 'running';

-- name: interrupted_runs
-- Killed runs that the run after them found still 'running' (abandon_stale_runs).
SELECT count(*) FROM ingest_runs WHERE status = 'interrupted';

-- name: template_name
SELECT name FROM templates WHERE template_id = :template_id;

-- name: items_to_recognise
-- Items not yet matched against every template (newer templates, or their template was removed).
SELECT item_id, recognised_revision, template_id, template_score, ocr_boxes, ocr_text, template FROM items
WHERE recognised_revision < :revision
ORDER BY item_id;

-- name: set_recognition
UPDATE items SET template_id = :template_id, template_score = :template_score,
       recognised_revision = :recognised_revision, ocr_boxes = coalesce(:ocr_boxes, ocr_boxes)
WHERE item_id = :item_id;

-- name: set_template_group
UPDATE items SET template_group = :template_group WHERE item_id = :item_id;

-- name: item_files
SELECT r.path AS root_path, f.rel_path FROM files f JOIN library_roots r ON r.root_id = f.root_id
WHERE f.item_id = :item_id ORDER BY f.file_id;

-- name: effective_text
SELECT title, template_text, entities, tags, description, ocr_text FROM item_effective WHERE item_id = :item_id;

-- name: item_groups
SELECT item_id, perceptual_group, template_group FROM items WHERE item_id = :item_id;

-- name: grouping_inputs
-- Every item, in the order ingest met them, for regrouping (ingest.regroup).
SELECT item_id, phash, ocr_text, perceptual_group FROM items ORDER BY item_id;

-- name: item_look
-- What near_identical's pixel check compares: the stored preview and the caption boxes.
SELECT p.data, i.width, i.height, i.ocr_boxes FROM items i JOIN previews p USING (item_id)
WHERE i.item_id = :item_id;

-- name: set_perceptual_group
UPDATE items SET perceptual_group = :perceptual_group WHERE item_id = :item_id;

-- name: relabel_perceptual
-- A label given to a perceptual group stays with the item it was given to: after regrouping it
-- names that item's (new) group, not the items it no longer shares a group with.
UPDATE labels SET group_id = (SELECT perceptual_group FROM items WHERE items.item_id = labels.item_id)
WHERE scope = 'perceptual'
  AND group_id IS NOT (SELECT perceptual_group FROM items WHERE items.item_id = labels.item_id);

-- name: delete_setting
DELETE FROM settings WHERE key = :key;
