-- Named queries of search (mambomeme/search.py): systems, the one-statement search, vocabulary.
-- Each query starts with a `-- name: NAME` line and runs to the next. Parameters are apsw named
-- bindings (:name). Keep SQL here, not in Python strings. Every *.sql file of this folder is loaded
-- into one namespace (mambomeme/library.py): a name defined twice stops the program at import.

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
-- (typos, slang, OCR noise); dense = KNN over all-mpnet-base-v2 vectors: exact float32, the partitions of the
-- coarse index's nearest centroids (IVF; in a large library their int8 codes first, 'ivf-int8'), or
-- bit-quantized candidates rescored by float cosine.
-- With :field_vectors, an item's caption, picture and looks vectors join its all-fields one (float
-- and IVF; the bit index holds all-fields vectors only) and the item scores its best similarity.
-- Only servable items (safety, rights, privacy) take part: the vector indexes filter on their
-- `servable` column during the scan, every route joins the view.
-- :lexical, when not NULL, is the lexical route already run (a JSON array of [item id, weight],
-- best first): hybrid's evidence check needs its ranking before fusion, and FTS5 BM25 over common
-- words is the costliest part of a query at 100k items, so it is not run twice. The weight (share
-- of the query the item holds: LEXICAL_EVIDENCE "partial") multiplies that item's lexical term.
-- :dense, when not NULL, is the dense route already run ([[item id, similarity, all-fields similarity], ...], best
-- first): a search runs it on the library's reader connection (its own thread, the one that maps
-- the file) while the lexical route runs on this one.
WITH lex AS (
    SELECT value ->> 0 AS item_id, key + 1 AS rank, value ->> 1 AS weight FROM json_each(:lexical)
    WHERE :use_lexical AND :lexical IS NOT NULL
    UNION ALL
    -- FTS5 ranks first; the servable view is joined to the top depth + (number of hidden items)
    -- only, so the join costs a few rows, not every match (migration 006).
    SELECT item_id, rank, 1.0 FROM (
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
    -- exact: every vector (kind 0: the all-fields vector; 1-3: evidence vectors)
    SELECT v.item_id, 1.0 - v.distance AS sim, 0 AS kind
    FROM item_vectors v
    WHERE :use_dense AND :dense IS NULL AND :dense_index = 'float'
      AND v.embedding MATCH :qvec AND k = :k AND v.servable = 1
    UNION ALL
    -- the evidence vectors (caption, picture: migration 011; looks: 025), item_id = vector_id / 4
    SELECT v.vector_id >> 2, 1.0 - v.distance, v.vector_id & 3
    FROM item_field_vectors v
    WHERE :use_dense AND :dense IS NULL AND :dense_index = 'float' AND :field_vectors
      AND v.embedding MATCH :qvec AND k = :k AND v.servable = 1
    UNION ALL
    -- coarse index: the partitions of the :probe centroids nearest the query, and partition 0
    -- (a library without clusters); each partition gives its own k nearest
    SELECT v.item_id, 1.0 - v.distance, 0
    FROM item_vectors v
    WHERE :use_dense AND :dense IS NULL AND :dense_index = 'ivf'
      AND v.embedding MATCH :qvec AND k = :k AND v.servable = 1
      AND v.cluster IN (SELECT cluster FROM vector_centroids WHERE centroid MATCH :qvec AND k = :probe
                        UNION ALL SELECT 0)
    UNION ALL
    SELECT v.vector_id >> 2, 1.0 - v.distance, v.vector_id & 3
    FROM item_field_vectors v
    WHERE :use_dense AND :dense IS NULL AND :dense_index = 'ivf' AND :field_vectors
      AND v.embedding MATCH :qvec AND k = :k AND v.servable = 1
      AND v.cluster IN (SELECT cluster FROM vector_centroids WHERE centroid MATCH :qvec AND k = :probe
                        UNION ALL SELECT 0)
    UNION ALL
    -- a large library's coarse index (migrations 019-020, mambomeme/dense_index.py): in each of the
    -- :probe partitions nearest the query, the :codes_k vectors whose int8 codes are nearest the
    -- query's (:qcode), every kind in one table (vector_id = item_id * 4 + kind); the
    -- :codes_rescore nearest of those are ranked by the cosine between the codes (the library keeps
    -- no float vector of a quantized item)
    SELECT c.vector_id >> 2, 1.0 - vec_distance_cosine(vec_int8(c.embedding), vec_int8(:qcode)), c.vector_id & 3
    FROM (SELECT vector_id, embedding FROM vector_codes
          WHERE :use_dense AND :dense IS NULL AND :dense_index = 'ivf-int8'
            AND embedding MATCH vec_int8(:qcode) AND k = :codes_k AND servable = 1
            AND cluster IN (SELECT cluster FROM vector_centroids WHERE centroid MATCH :qvec AND k = :probe)
            AND (:field_vectors OR vector_id & 3 = 0)
          ORDER BY distance LIMIT :codes_rescore) c
    UNION ALL
    -- sign bits: a Hamming KNN, its candidates rescored by float cosine
    SELECT c.item_id, 1.0 - vec_distance_cosine(v.embedding, :qvec), 0
    FROM (SELECT item_id FROM item_vectors_bit
          WHERE :use_dense AND :dense IS NULL AND :dense_index = 'bit-rescore'
            AND embedding MATCH vec_quantize_binary(:qvec) AND k = :k AND servable = 1) c
    JOIN item_vectors v ON v.item_id = c.item_id
), dense AS (
    -- (a ranking made before this statement, e.g. from vectors held in memory, may hold an item
    -- hidden since: it is dropped here, and the rest keep their ranks)
    SELECT value ->> 0 AS item_id, value ->> 1 AS sim, value ->> 2 AS sim_all, key + 1 AS rank FROM json_each(:dense)
    WHERE :use_dense AND :dense IS NOT NULL AND value ->> 0 NOT IN (SELECT item_id FROM hidden_items)
    UNION ALL
    -- an item is as similar as its best vector (all fields, caption, picture or looks, the looks
    -- vector's similarity x :looks_weight, search.LOOKS_WEIGHT); the all-fields vector's own
    -- similarity (when among the candidates) is evidence for "no match" apart
    SELECT item_id, sim, sim_all, row_number() OVER (ORDER BY sim DESC, item_id) AS rank
    FROM (SELECT d.item_id, max(d.sim * (CASE WHEN d.kind = 3 THEN :looks_weight ELSE 1.0 END)) AS sim,
                 max(CASE WHEN d.kind = 0 THEN d.sim END) AS sim_all
          FROM dense_candidates d JOIN servable_items s ON s.item_id = d.item_id
          GROUP BY d.item_id ORDER BY sim DESC, d.item_id LIMIT :depth)
)
SELECT item_id,
       sum(score) AS score,
       max(lexical_rank) AS lexical_rank,
       max(fuzzy_rank) AS fuzzy_rank,
       max(dense_rank) AS dense_rank,
       max(sim) AS sim,
       max(sim_all) AS sim_all
FROM (
    SELECT item_id, :w_lexical * weight / (:rrf_k + rank) AS score,
           rank AS lexical_rank, NULL AS fuzzy_rank, NULL AS dense_rank, NULL AS sim, NULL AS sim_all FROM lex
    UNION ALL
    SELECT item_id, :w_fuzzy / (:rrf_k + rank), NULL, rank, NULL, NULL, NULL FROM fuzzy
    UNION ALL
    SELECT item_id, :w_dense / (:rrf_k + rank), NULL, NULL, rank, sim, sim_all FROM dense
)
GROUP BY item_id
ORDER BY score DESC, coalesce(max(lexical_rank), max(fuzzy_rank), 1e9), item_id
LIMIT :pool;

-- name: results_details
-- What a result shows, for the items in :ids (a JSON array): effective fields (sidecar, else
-- derived: item_effective in schema.sql) with where each came from. One statement per search, not
-- one per shown result (per-statement overhead was ~0.1-0.3 ms, 1-2 ms of a 10-result query).
SELECT i.item_id, i.sha256, i.title, e.template, e.template_text, e.template_source, e.entities, e.entities_source, e.tags,
       e.tags_source, e.description, e.description_source, i.ocr_text, coalesce(i.ocr_words, '') AS ocr_words,
       coalesce(i.ocr_spaced, '') AS ocr_spaced, i.derived,
       i.safety, i.creator, i.licence, i.perceptual_group, i.template_group,
       r.path AS root_path, r.name AS root, f.rel_path,
       (SELECT count(*) - 1 FROM files d WHERE d.item_id = i.item_id) AS duplicate_count,
       EXISTS (SELECT 1 FROM previews p WHERE p.item_id = i.item_id) AS has_preview
FROM json_each(:ids) j
JOIN items i ON i.item_id = j.value
JOIN item_effective e ON e.item_id = i.item_id
JOIN files f ON f.file_id = (SELECT min(file_id) FROM files WHERE item_id = i.item_id)
JOIN library_roots r ON r.root_id = f.root_id;

-- name: dense_feedback
-- Pseudo-relevance feedback for the dense route (Rocchio): the query vector moves towards the mean
-- of one vector of each of the route's :feedback_top best items (its all-fields vector or, with
-- :feedback_best, the one of its vectors nearest the query: DENSE_FEEDBACK "best"), and the route's
-- candidates (:dense, [[item id, similarity, all-fields similarity], ...] best first) are ranked
-- again by their best vector's cosine similarity to the moved vector. :qvec_scaled is the query
-- vector times (items averaged) / alpha, so q + alpha * mean(top) points the same way as
-- :qvec_scaled + sum(top) (cosine ignores length) and vec_add is the only vector arithmetic needed.
-- Only the candidates' stored vectors are read (primary-key lookups, once), never a second scan.
-- Each row keeps its first-pass similarities: the "no match" evidence is about the query, not the
-- moved vector.
WITH RECURSIVE ranked AS (
    SELECT value ->> 0 AS item_id, value ->> 1 AS sim, value ->> 2 AS sim_all, key AS pos FROM json_each(:dense)
), vectors AS MATERIALIZED (
    -- the candidates' stored vectors, by primary key: all fields (kind 0), then caption, picture,
    -- looks; `w` what a vector's similarity counts (the looks vector's: :looks_weight)
    SELECT r.item_id, 0 AS kind, v.embedding, 1.0 AS w FROM ranked r JOIN item_vectors v ON v.item_id = r.item_id
    UNION ALL
    SELECT r.item_id, 1, v.embedding, 1.0 FROM ranked r JOIN item_field_vectors v ON v.vector_id = r.item_id * 4 + 1
    WHERE :field_vectors
    UNION ALL
    SELECT r.item_id, 2, v.embedding, 1.0 FROM ranked r JOIN item_field_vectors v ON v.vector_id = r.item_id * 4 + 2
    WHERE :field_vectors
    UNION ALL
    SELECT r.item_id, 3, v.embedding, :looks_weight FROM ranked r
    JOIN item_field_vectors v ON v.vector_id = r.item_id * 4 + 3
    WHERE :field_vectors
), top AS (
    SELECT row_number() OVER (ORDER BY t.pos) AS n,
           (SELECT x.embedding FROM vectors x WHERE x.item_id = t.item_id AND (x.kind = 0 OR :feedback_best)
            ORDER BY (1.0 - vec_distance_cosine(x.embedding, vec_f32(:qvec_scaled))) * x.w DESC, x.kind
            LIMIT 1) AS embedding
    FROM (SELECT item_id, pos FROM ranked ORDER BY pos LIMIT :feedback_top) t
), moved(n, qvec) AS (
    SELECT 0, vec_f32(:qvec_scaled)
    UNION ALL
    SELECT m.n + 1, vec_add(m.qvec, t.embedding) FROM moved m JOIN top t ON t.n = m.n + 1
), rescored AS (
    SELECT item_id, max((1.0 - vec_distance_cosine(embedding, (SELECT qvec FROM moved ORDER BY n DESC LIMIT 1))) * w)
           AS moved_sim
    FROM vectors GROUP BY item_id
)
SELECT r.item_id, r.sim, r.sim_all, s.moved_sim FROM ranked r JOIN rescored s ON s.item_id = r.item_id
ORDER BY s.moved_sim DESC, r.pos;

-- name: holds_vectors
-- Whether the library holds any vector, float or code (none: its memes wait to be embedded,
-- Searcher.search).
SELECT EXISTS (SELECT 1 FROM item_vectors) OR EXISTS (SELECT 1 FROM vector_codes_items);

-- name: described_share
-- The share of servable memes a sidecar described (title, template, people, tags or a description
-- of its own; derived fields do not count): the "no match" model's library condition.
SELECT avg(i.title <> '' OR i.template <> '' OR i.entities <> '[]' OR i.tags <> '[]' OR i.description <> '')
FROM items i JOIN servable_items USING (item_id);

-- name: candidate_codes
-- The codes of a large library's dense candidates (:ids, a JSON array of item ids), all fields
-- first, then caption, picture and looks (with :field_vectors), for the query's feedback step.
SELECT j.value AS item_id, k.kind, c.embedding
FROM json_each(:ids) j
JOIN (SELECT 0 AS kind UNION ALL SELECT 1 WHERE :field_vectors UNION ALL SELECT 2 WHERE :field_vectors
      UNION ALL SELECT 3 WHERE :field_vectors) k
JOIN vector_codes c ON c.vector_id = j.value * 4 + k.kind
ORDER BY j.key, k.kind;

-- name: large_vector_index
-- The coarse index's size when the library is quantized (Searcher: the probe grows with it).
SELECT clusters FROM vector_index WHERE EXISTS (SELECT 1 FROM vector_codes_items);
