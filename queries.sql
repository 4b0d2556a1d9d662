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
                  safety, safety_source, rights, private, metadata_source, ocr_text, ocr_engine_id,
                  template_id, template_score, recognised_revision, ocr_boxes)
VALUES (:sha256, :format, :width, :height, :byte_size, :phash, :dhash, :perceptual_group, :template_group,
        :title, :template, :entities, :tags, :description, :source_url, :creator, :licence,
        :safety, :safety_source, :rights, :private, :metadata_source, :ocr_text, :ocr_engine_id,
        :template_id, :template_score, :recognised_revision, :ocr_boxes)
RETURNING item_id;

-- name: update_item_metadata
UPDATE items SET title = :title, template = :template, entities = :entities, tags = :tags,
       description = :description, source_url = :source_url, creator = :creator, licence = :licence,
       safety = CASE WHEN safety_source LIKE 'detector:%' AND :safety_rank < (
                         CASE safety WHEN 'safe' THEN 0 WHEN 'sensitive' THEN 1 WHEN 'unsafe' THEN 2 ELSE 3 END)
                     THEN safety ELSE :safety END,
       safety_source = CASE WHEN safety_source LIKE 'detector:%' AND :safety_rank < (
                         CASE safety WHEN 'safe' THEN 0 WHEN 'sensitive' THEN 1 WHEN 'unsafe' THEN 2 ELSE 3 END)
                     THEN safety_source ELSE :safety_source END,
       rights = :rights, private = :private, metadata_source = :metadata_source,
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

-- name: insert_centroid
INSERT INTO vector_centroids(cluster, centroid) VALUES (:cluster, :centroid);

-- name: record_vector_index
INSERT INTO vector_index(index_id, clusters, trained_vectors, training_sample, iterations, seed, seconds)
VALUES (1, :clusters, :trained_vectors, :training_sample, :iterations, :seed, :seconds);

-- name: vector_count
SELECT count(*) FROM item_vectors;

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
       (SELECT count(*) FROM items i WHERE NOT EXISTS (SELECT 1 FROM items_trigram t WHERE t.rowid = i.item_id))
           AS items_without_trigrams,
       (SELECT count(*) FROM items i WHERE NOT EXISTS (SELECT 1 FROM item_vectors_bit b WHERE b.item_id = i.item_id))
           AS items_without_bit_vector,
       (SELECT count(*) FROM items i WHERE NOT EXISTS (SELECT 1 FROM previews p WHERE p.item_id = i.item_id))
           AS items_without_preview,
       (SELECT count(*) FROM items i WHERE NOT EXISTS (SELECT 1 FROM files f WHERE f.item_id = i.item_id))
           AS items_without_file,
       -- ...and nothing in any route may outlive its item (a half-deleted item).
       (SELECT count(*) FROM items_fts f WHERE NOT EXISTS (SELECT 1 FROM items i WHERE i.item_id = f.rowid))
           AS fts_without_item,
       (SELECT count(*) FROM items_trigram t WHERE NOT EXISTS (SELECT 1 FROM items i WHERE i.item_id = t.rowid))
           AS trigrams_without_item,
       (SELECT count(*) FROM item_vectors_bit b WHERE NOT EXISTS (SELECT 1 FROM items i WHERE i.item_id = b.item_id))
           AS bit_vectors_without_item,
       (SELECT count(*) FROM previews p WHERE NOT EXISTS (SELECT 1 FROM items i WHERE i.item_id = p.item_id))
           AS previews_without_item,
       (SELECT count(*) FROM items i WHERE NOT EXISTS (SELECT 1 FROM item_embeddings e WHERE e.item_id = i.item_id))
           AS items_without_embedding_record,
       -- the vector indexes' `servable` flag must say what servable_items says (KNN filters on it)
       (SELECT count(*) FROM item_vectors v
        WHERE v.servable IS NOT (v.item_id IN (SELECT item_id FROM servable_items))) AS vectors_with_wrong_servable,
       (SELECT count(*) FROM item_vectors_bit b
        WHERE b.servable IS NOT (b.item_id IN (SELECT item_id FROM servable_items))) AS bit_vectors_with_wrong_servable,
       -- the coarse index: every vector in the partition of a centroid (0 when there are none)
       (SELECT count(*) FROM item_vectors v
        WHERE v.cluster IS NOT coalesce((SELECT c.cluster FROM vector_centroids c WHERE c.cluster = v.cluster),
                                        CASE WHEN EXISTS (SELECT 1 FROM vector_index) THEN -1 ELSE 0 END))
           AS vectors_outside_the_coarse_index;

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

-- name: search
-- Every system in one statement: up to three routes, each gated by a parameter (a false gate is
-- evaluated once and skips its scan), then reciprocal rank fusion:
--   score = sum over routes of route_weight / (rrf_k + rank in that route).
-- Routes: lexical = FTS5 BM25 over words with per-field weights; fuzzy = the same over trigrams
-- (typos, slang, OCR noise); dense = KNN over MiniLM vectors: exact float32, the partitions of the
-- coarse index's nearest centroids (IVF), or bit-quantized candidates rescored by float cosine.
-- Only servable items (safety, rights, privacy) take part: the vector indexes filter on their
-- `servable` column during the scan, every route joins the view.
-- :lexical, when not NULL, is the lexical route already run (a JSON array of item ids, best
-- first): hybrid's evidence check needs its ranking before fusion, and FTS5 BM25 over common
-- words is the costliest part of a query at 100k items, so it is not run twice.
-- :dense, when not NULL, is the dense route already run ([[item id, similarity], ...], best
-- first): a search runs it on the library's reader connection (its own thread, the one that maps
-- the file) while the lexical route runs on this one.
WITH lex AS (
    SELECT value AS item_id, key + 1 AS rank FROM json_each(:lexical)
    WHERE :use_lexical AND :lexical IS NOT NULL
    UNION ALL
    -- FTS5 ranks first; the servable view is joined to the top depth + (number of hidden items)
    -- only, so the join costs a few rows, not every match (migration 006).
    SELECT item_id, rank FROM (
        SELECT m.item_id, row_number() OVER (ORDER BY m.score DESC) AS rank
        FROM (
            SELECT f.rowid AS item_id,
                   -bm25(items_fts, :w_title, :w_template, :w_entities, :w_tags, :w_ocr, :w_description) AS score
            FROM items_fts f
            WHERE :use_lexical AND :lexical IS NULL AND items_fts MATCH :word_match
            ORDER BY score DESC LIMIT :depth + (SELECT count(*) FROM hidden_items)
        ) m JOIN servable_items s ON s.item_id = m.item_id
    ) WHERE rank <= :depth
), fuzzy AS (
    SELECT item_id, rank FROM (
        SELECT m.item_id, row_number() OVER (ORDER BY m.score DESC) AS rank
        FROM (
            SELECT t.rowid AS item_id,
                   -bm25(items_trigram, :w_title, :w_template, :w_entities, :w_tags, :w_ocr, :w_description) AS score
            FROM items_trigram t
            WHERE :use_fuzzy AND items_trigram MATCH :trigram_match
            ORDER BY score DESC LIMIT :depth + (SELECT count(*) FROM hidden_items)
        ) m JOIN servable_items s ON s.item_id = m.item_id
    ) WHERE rank <= :depth
), dense_candidates AS (
    -- exact: every vector
    SELECT v.item_id, 1.0 - v.distance AS sim
    FROM item_vectors v
    WHERE :use_dense AND :dense IS NULL AND :dense_index = 'float'
      AND v.embedding MATCH :qvec AND k = :k AND v.servable = 1
    UNION ALL
    -- coarse index: the partitions of the :probe centroids nearest the query, and partition 0
    -- (a library without clusters); each partition gives its own k nearest
    SELECT v.item_id, 1.0 - v.distance
    FROM item_vectors v
    WHERE :use_dense AND :dense IS NULL AND :dense_index = 'ivf'
      AND v.embedding MATCH :qvec AND k = :k AND v.servable = 1
      AND v.cluster IN (SELECT cluster FROM vector_centroids WHERE centroid MATCH :qvec AND k = :probe
                        UNION ALL SELECT 0)
    UNION ALL
    -- sign bits: a Hamming KNN, its candidates rescored by float cosine
    SELECT c.item_id, 1.0 - vec_distance_cosine(v.embedding, :qvec)
    FROM (SELECT item_id FROM item_vectors_bit
          WHERE :use_dense AND :dense IS NULL AND :dense_index = 'bit-rescore'
            AND embedding MATCH vec_quantize_binary(:qvec) AND k = :k AND servable = 1) c
    JOIN item_vectors v ON v.item_id = c.item_id
), dense AS (
    SELECT value ->> 0 AS item_id, value ->> 1 AS sim, key + 1 AS rank FROM json_each(:dense)
    WHERE :use_dense AND :dense IS NOT NULL
    UNION ALL
    SELECT item_id, sim, row_number() OVER (ORDER BY sim DESC) AS rank
    FROM (SELECT d.item_id, d.sim FROM dense_candidates d JOIN servable_items s ON s.item_id = d.item_id
          ORDER BY d.sim DESC LIMIT :depth)
)
SELECT item_id,
       sum(score) AS score,
       max(lex_rank) AS lex_rank,
       max(fuzzy_rank) AS fuzzy_rank,
       max(dense_rank) AS dense_rank,
       max(sim) AS sim
FROM (
    SELECT item_id, :w_lexical / (:rrf_k + rank) AS score,
           rank AS lex_rank, NULL AS fuzzy_rank, NULL AS dense_rank, NULL AS sim FROM lex
    UNION ALL
    SELECT item_id, :w_fuzzy / (:rrf_k + rank), NULL, rank, NULL, NULL FROM fuzzy
    UNION ALL
    SELECT item_id, :w_dense / (:rrf_k + rank), NULL, NULL, rank, sim FROM dense
)
GROUP BY item_id
ORDER BY score DESC, coalesce(max(lex_rank), max(fuzzy_rank), 1e9), item_id
LIMIT :pool;

-- name: known_word
SELECT 1 FROM vocabulary WHERE term = :term;

-- name: words_with_prefix
-- Candidates for correcting a misspelt word: known words sharing its first letters.
SELECT term, docs FROM vocabulary WHERE term >= :prefix AND term < :prefix || char(1114111);

-- name: refresh_vocabulary
DELETE FROM vocabulary;
INSERT INTO vocabulary(term, docs) SELECT term, doc FROM items_vocab;
UPDATE vocabulary_size SET documents = (SELECT count(*) FROM items);

-- name: common_words
-- Query words in more than half of the library's documents: BM25 gives them no weight (FTS5
-- clamps a negative IDF to 1e-6), yet matching them makes FTS5 score most of the library.
SELECT v.term FROM vocabulary v, vocabulary_size z
WHERE v.term IN (SELECT value FROM json_each(:terms)) AND v.docs * 2 > z.documents;

-- name: aliases
SELECT expansion FROM query_aliases WHERE term = :term;

-- name: results_details
-- What a result shows, for the items in :ids (a JSON array): effective fields (sidecar, else
-- derived: item_effective in schema.sql) with where each came from. One statement per search, not
-- one per shown result (per-statement overhead was ~0.1-0.3 ms, 1-2 ms of a 10-result query).
SELECT i.item_id, i.sha256, i.title, e.template, e.template_text, e.template_source, e.entities, e.entities_source, e.tags,
       e.tags_source, e.description, e.description_source, i.ocr_text, i.derived,
       i.safety, i.creator, i.licence, i.perceptual_group, i.template_group,
       r.path AS root_path, r.name AS root, f.rel_path,
       (SELECT count(*) - 1 FROM files d WHERE d.item_id = i.item_id) AS duplicate_count,
       EXISTS (SELECT 1 FROM previews p WHERE p.item_id = i.item_id) AS has_preview
FROM json_each(:ids) j
JOIN items i ON i.item_id = j.value
JOIN item_effective e ON e.item_id = i.item_id
JOIN files f ON f.file_id = (SELECT min(file_id) FROM files WHERE item_id = i.item_id)
JOIN library_roots r ON r.root_id = f.root_id;

-- name: setting
SELECT value FROM settings WHERE key = :key;

-- name: set_setting
INSERT INTO settings(key, value) VALUES (:key, :value) ON CONFLICT (key) DO UPDATE SET value = excluded.value;

-- name: insert_interaction_event
INSERT INTO interaction_events(session, kind, query, item_id, rank, ms_since_render, system, system_version,
                               interface_version)
VALUES (:session, :kind, :query, :item_id, :rank, :ms_since_render, :system, :system_version, :interface_version);

-- name: indexed_snapshot
-- What a crash must never lose (`mambo bench soak` compares it before and after every kill):
-- each indexed file with its item's content hash, text, judgements (safety, rights) and vector.
SELECT r.name || '/' || f.rel_path AS path, i.sha256, i.title, i.ocr_text, i.safety, i.rights,
       hex(v.embedding) AS vector
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

-- ── Templates, recognition, derived fields and group labels ──────────────────

-- name: templates_brief
SELECT template_id, slug, source, entry_sha256 FROM templates;

-- name: insert_template
INSERT INTO templates(slug, name, aliases, description, source, source_url, entry_sha256, revision)
VALUES (:slug, :name, :aliases, :description, :source, :source_url, :entry_sha256, :revision)
RETURNING template_id;

-- name: insert_template_view
INSERT INTO template_views(template_id, fingerprint_version, width, height, phash64, dhash64, band_phash64,
                           band_dhash64, color_layout, orb_xy, orb_desc, origin)
VALUES (:template_id, :fingerprint_version, :width, :height, :phash64, :dhash64, :band_phash64,
        :band_dhash64, :color_layout, :orb_xy, :orb_desc, :origin);

-- name: reset_items_of_template
-- Items recognised as a template that is going away: recognised again against every template.
UPDATE items SET template_id = NULL, template_score = NULL, recognised_revision = 0
WHERE template_id = :template_id;

-- name: delete_template
DELETE FROM templates WHERE template_id = :template_id;

-- name: template_index
-- The views of templates added or changed after a revision (0: all), for recognition.
SELECT v.view_id, v.template_id, v.orb_xy, v.orb_desc, v.origin ->> '$.h' AS orb_h
FROM template_views v JOIN templates t ON t.template_id = v.template_id
WHERE t.revision > :after_revision AND length(v.orb_desc) >= 64
ORDER BY v.view_id;

-- name: template_by_slug
SELECT template_id, slug, name, source FROM templates WHERE slug = :slug;

-- name: template_by_name
-- A template a user names: by name, slug or alias (the user's own first).
SELECT template_id, slug, name, aliases, description FROM templates
WHERE lower(name) = lower(:name) OR slug = lower(:name)
   OR EXISTS (SELECT 1 FROM json_each(templates.aliases) a WHERE a.value = lower(:name))
ORDER BY source = 'user' DESC, lower(name) = lower(:name) DESC, template_id
LIMIT 1;

-- name: template_name
SELECT name FROM templates WHERE template_id = :template_id;

-- name: list_templates
SELECT t.template_id, t.slug, t.name, t.source, t.aliases, t.description, t.revision,
       (SELECT count(*) FROM template_views v WHERE v.template_id = t.template_id) AS views,
       (SELECT count(*) FROM items i WHERE i.template_id = t.template_id) AS items
FROM templates t
WHERE :source IS NULL OR t.source = :source
ORDER BY t.source DESC, t.slug;

-- name: template_counts
SELECT source, count(*) AS n FROM templates GROUP BY source ORDER BY source;

-- name: recognised_counts
SELECT (SELECT count(*) FROM items WHERE template_id IS NOT NULL) AS recognised,
       (SELECT count(*) FROM items WHERE derived <> '{}') AS with_derived_fields;

-- name: items_to_recognise
-- Items not yet matched against every template (newer templates, or their template was removed).
SELECT item_id, recognised_revision, template_id, template_score, ocr_boxes, template FROM items
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

-- name: derive_inputs
SELECT i.template_id, i.template_score, i.perceptual_group, i.template_group, i.derived,
       t.name AS t_name, t.aliases AS t_aliases, t.description AS t_description, t.source AS t_source,
       t.slug AS t_slug
FROM items i LEFT JOIN templates t ON t.template_id = i.template_id
WHERE i.item_id = :item_id;

-- name: labels_for_item
SELECT label_id, item_id, scope, field, value FROM labels
WHERE (scope = 'item' AND item_id = :item_id)
   OR (scope = 'perceptual' AND group_id = :perceptual_group)
   OR (scope = 'template' AND group_id = :template_group);

-- name: set_derived
UPDATE items SET derived = :derived, updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
WHERE item_id = :item_id;

-- name: effective_text
SELECT title, template_text, entities, tags, description, ocr_text FROM item_effective WHERE item_id = :item_id;

-- name: insert_label
INSERT INTO labels(item_id, scope, group_id, field, value) VALUES (:item_id, :scope, :group_id, :field, :value)
RETURNING label_id;

-- name: delete_labels_of_item
DELETE FROM labels WHERE item_id = :item_id RETURNING scope, group_id;

-- name: items_in_scope
SELECT item_id FROM items
WHERE (:scope = 'item' AND item_id = :item_id)
   OR (:scope = 'perceptual' AND perceptual_group = :group_id)
   OR (:scope = 'template' AND template_group = :group_id)
ORDER BY item_id;

-- name: item_groups
SELECT item_id, perceptual_group, template_group FROM items WHERE item_id = :item_id;

-- name: item_by_file
SELECT f.item_id FROM files f JOIN library_roots r ON r.root_id = f.root_id
WHERE r.path = :root_path AND f.rel_path = :rel_path;
