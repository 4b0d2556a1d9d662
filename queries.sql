-- Named queries used by mambo.py. Each starts with a `-- name: NAME` line and runs to the next.
-- Parameters are apsw named bindings (:name). Keep SQL here, not in Python strings.

-- name: root_by_name
SELECT root_id, name, path FROM library_roots WHERE name = :name;

-- name: roots
SELECT r.root_id, r.name, r.path,
       (SELECT count(*) FROM files f WHERE f.root_id = r.root_id) AS files
FROM library_roots r ORDER BY r.name;

-- name: insert_root
INSERT INTO library_roots(name, path) VALUES (:name, :path) RETURNING root_id;

-- name: move_root
UPDATE library_roots SET path = :path WHERE name = :name;

-- name: file_by_path
SELECT f.file_id, f.item_id, f.size, f.mtime_ns, f.sidecar_sha256, i.sha256
FROM files f JOIN items i ON i.item_id = f.item_id
WHERE f.root_id = :root_id AND f.rel_path = :rel_path;

-- name: item_by_sha
SELECT item_id, metadata_source FROM items WHERE sha256 = :sha256;

-- name: insert_item
INSERT INTO items(sha256, format, width, height, byte_size, phash, dhash, perceptual_group, template_group,
                  title, template, entities, tags, description, source_url, creator, licence,
                  safety, rights, private, metadata_source, ocr_text, ocr_engine_id)
VALUES (:sha256, :format, :width, :height, :byte_size, :phash, :dhash, :perceptual_group, :template_group,
        :title, :template, :entities, :tags, :description, :source_url, :creator, :licence,
        :safety, :rights, :private, :metadata_source, :ocr_text, :ocr_engine_id)
RETURNING item_id;

-- name: update_item_metadata
UPDATE items SET title = :title, template = :template, entities = :entities, tags = :tags,
       description = :description, source_url = :source_url, creator = :creator, licence = :licence,
       safety = :safety, rights = :rights, private = :private, metadata_source = :metadata_source,
       template_group = coalesce(:template_group, template_group),
       updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
WHERE item_id = :item_id;

-- name: item_metadata
SELECT title, template, entities, tags, description, source_url, creator, licence, safety, rights, private,
       metadata_source
FROM items WHERE item_id = :item_id;

-- name: item_text
SELECT title, template, entities, tags, description, ocr_text FROM items WHERE item_id = :item_id;

-- name: insert_file
INSERT INTO files(item_id, root_id, rel_path, size, mtime_ns, sidecar_sha256)
VALUES (:item_id, :root_id, :rel_path, :size, :mtime_ns, :sidecar_sha256)
ON CONFLICT (root_id, rel_path) DO UPDATE SET
    item_id = excluded.item_id, size = excluded.size, mtime_ns = excluded.mtime_ns,
    sidecar_sha256 = excluded.sidecar_sha256, seen_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now');

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

-- name: preview
SELECT format, width, height, data FROM previews WHERE item_id = :item_id;

-- name: upsert_embedding
INSERT OR REPLACE INTO item_embeddings(item_id, model_id, text_sha256)
VALUES (:item_id, :model_id, :text_sha256);

-- name: delete_vector
DELETE FROM item_vectors WHERE item_id = :item_id;

-- name: insert_vector
INSERT INTO item_vectors(item_id, embedding) VALUES (:item_id, :embedding);

-- name: phashes
SELECT item_id, phash, perceptual_group, template_group FROM items;

-- name: ocr_text
SELECT ocr_text FROM items WHERE item_id = :item_id;

-- name: new_group
INSERT INTO image_groups(kind, label) VALUES (:kind, :label) RETURNING group_id;

-- name: template_group
SELECT group_id FROM image_groups WHERE kind = 'template' AND label = :label;

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
INSERT INTO embedding_models(name, revision, weights_sha256, dim, text_recipe)
VALUES (:name, :revision, :weights_sha256, :dim, :text_recipe) RETURNING model_id;

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
INSERT INTO ingest_errors(run_id, path, kind, message) VALUES (:run_id, :path, :kind, :message);

-- name: status_counts
SELECT (SELECT count(*) FROM items) AS items,
       (SELECT count(*) FROM files) AS files,
       (SELECT count(*) FROM duplicate_files) AS duplicate_files,
       (SELECT count(*) FROM library_roots) AS roots,
       (SELECT count(*) FROM previews) AS previews,
       (SELECT coalesce(sum(length(data)), 0) FROM previews) AS preview_bytes,
       (SELECT count(*) FROM item_embeddings) AS embedded,
       (SELECT count(DISTINCT perceptual_group) FROM items) AS perceptual_groups,
       (SELECT count(DISTINCT template_group) FROM items) AS template_groups,
       (SELECT count(*) FROM ingest_errors) AS errors;

-- name: safety_counts
SELECT safety, count(*) AS n FROM items GROUP BY safety ORDER BY safety;

-- name: models_in_use
SELECT m.name, m.revision, m.weights_sha256, m.dim, m.text_recipe, count(e.item_id) AS items
FROM embedding_models m LEFT JOIN item_embeddings e ON e.model_id = m.model_id
GROUP BY m.model_id ORDER BY m.model_id;

-- name: ocr_engines_in_use
SELECT o.name, o.version, o.models_sha256, count(i.item_id) AS items
FROM ocr_engines o LEFT JOIN items i ON i.ocr_engine_id = o.engine_id
GROUP BY o.engine_id ORDER BY o.engine_id;

-- name: recent_errors
SELECT at, path, kind, message FROM recent_errors LIMIT :limit;

-- name: all_files
SELECT f.file_id, f.item_id, r.name AS root, r.path AS root_path, f.rel_path, i.sha256
FROM files f JOIN library_roots r ON r.root_id = f.root_id JOIN items i ON i.item_id = f.item_id
ORDER BY f.file_id;

-- name: delete_file
DELETE FROM files WHERE file_id = :file_id;

-- name: consistency
-- Every item must be searchable in every route or in none: these counts must be zero.
SELECT (SELECT count(*) FROM items i WHERE NOT EXISTS (SELECT 1 FROM items_fts f WHERE f.rowid = i.item_id))
           AS items_without_fts,
       (SELECT count(*) FROM items i WHERE NOT EXISTS (SELECT 1 FROM item_vectors v WHERE v.item_id = i.item_id))
           AS items_without_vector,
       (SELECT count(*) FROM item_vectors v WHERE NOT EXISTS (SELECT 1 FROM items i WHERE i.item_id = v.item_id))
           AS vectors_without_item,
       (SELECT count(*) FROM items i WHERE NOT EXISTS (SELECT 1 FROM previews p WHERE p.item_id = i.item_id))
           AS items_without_preview,
       (SELECT count(*) FROM items i WHERE NOT EXISTS (SELECT 1 FROM files f WHERE f.item_id = i.item_id))
           AS items_without_file;

-- name: system_by_name
SELECT system_id, name, version, config, config_sha256, notes FROM current_systems WHERE name = :name;

-- name: system_by_sha
SELECT system_id, version FROM systems WHERE name = :name AND config_sha256 = :config_sha256;

-- name: insert_system
INSERT INTO systems(name, version, config, config_sha256, notes)
VALUES (:name, (SELECT coalesce(max(version), 0) + 1 FROM systems WHERE name = :name),
        :config, :config_sha256, :notes);

-- name: list_systems
SELECT name, version, config_sha256, created_at, notes, config FROM systems ORDER BY name, version;

-- name: hidden_count
SELECT count(*) FROM items WHERE NOT (safety IN ('safe', 'sensitive') AND rights <> 'withdrawn' AND private = 0);

-- name: search_bm25
-- Lexical route: FTS5 BM25 with per-field weights (title, template, entities, tags, ocr_text,
-- description). Only servable items (safety policy, rights, privacy) can match. bm25() cannot
-- sit inside a window function, hence the inner query.
SELECT item_id, row_number() OVER (ORDER BY score DESC) AS rank, score
FROM (
    SELECT f.rowid AS item_id,
           -bm25(items_fts, :w_title, :w_template, :w_entities, :w_tags, :w_ocr, :w_description) AS score
    FROM items_fts f JOIN servable_items s ON s.item_id = f.rowid
    WHERE items_fts MATCH :match
    ORDER BY score DESC LIMIT :depth
)
ORDER BY rank;

-- name: search_dense
-- Dense route: exact KNN over the float32 vectors; unservable items are dropped after the KNN,
-- so :k is the wanted depth plus the number of unservable items.
SELECT v.item_id, row_number() OVER (ORDER BY v.distance) AS rank, 1.0 - v.distance AS score
FROM item_vectors v JOIN servable_items s ON s.item_id = v.item_id
WHERE v.embedding MATCH :qvec AND k = :k
ORDER BY v.distance LIMIT :depth;

-- name: search_hybrid
-- Reciprocal rank fusion of both routes in one statement:
-- score = sum over routes of weight / (rrf_k + rank); ties broken by the lexical rank.
WITH lex AS (
    SELECT item_id, row_number() OVER (ORDER BY score DESC) AS rank
    FROM (
        SELECT f.rowid AS item_id,
               -bm25(items_fts, :w_title, :w_template, :w_entities, :w_tags, :w_ocr, :w_description) AS score
        FROM items_fts f JOIN servable_items s ON s.item_id = f.rowid
        WHERE items_fts MATCH :match
        ORDER BY score DESC LIMIT :depth
    )
), vec AS (
    SELECT v.item_id, row_number() OVER (ORDER BY v.distance) AS rank, 1.0 - v.distance AS sim
    FROM item_vectors v JOIN servable_items s ON s.item_id = v.item_id
    WHERE v.embedding MATCH :qvec AND k = :k
    ORDER BY v.distance LIMIT :depth
)
SELECT item_id,
       sum(score) AS score,
       max(lex_rank) AS lex_rank,
       max(vec_rank) AS vec_rank,
       max(sim) AS sim
FROM (
    SELECT item_id, :w_lex / (:rrf_k + rank) AS score, rank AS lex_rank, NULL AS vec_rank, NULL AS sim
    FROM lex
    UNION ALL
    SELECT item_id, :w_vec / (:rrf_k + rank), NULL, rank, sim FROM vec
)
GROUP BY item_id
ORDER BY score DESC, coalesce(max(lex_rank), 1e9), item_id
LIMIT :limit;

-- name: result_details
SELECT i.item_id, i.sha256, i.title, i.template, i.entities, i.tags, i.description, i.ocr_text,
       i.safety, i.creator, i.licence, i.perceptual_group, i.template_group,
       r.path AS root_path, r.name AS root, f.rel_path,
       (SELECT count(*) - 1 FROM files d WHERE d.item_id = i.item_id) AS duplicate_count,
       EXISTS (SELECT 1 FROM previews p WHERE p.item_id = i.item_id) AS has_preview
FROM items i
JOIN files f ON f.file_id = (SELECT min(file_id) FROM files WHERE item_id = i.item_id)
JOIN library_roots r ON r.root_id = f.root_id
WHERE i.item_id = :item_id;
