-- Named queries of upkeep (mambomeme/upkeep.py): status, check, prune.
-- Each query starts with a `-- name: NAME` line and runs to the next. Parameters are apsw named
-- bindings (:name). Keep SQL here, not in Python strings. Every *.sql file of this folder is loaded
-- into one namespace (mambomeme/library.py): a name defined twice stops the program at import.

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
SELECT f.file_id, f.item_id, r.name AS root, r.path AS root_path, f.rel_path, i.sha256, f.size
FROM files f JOIN library_roots r ON r.root_id = f.root_id JOIN items i ON i.item_id = f.item_id
ORDER BY f.file_id;

-- name: delete_file
DELETE FROM files WHERE file_id = :file_id;

-- name: item_of_file
SELECT item_id FROM files WHERE file_id = :file_id;

-- name: consistency
-- Every item must be searchable in every route or in none: these counts must be zero.
SELECT (SELECT count(*) FROM items i WHERE NOT EXISTS (SELECT 1 FROM items_fts f WHERE f.rowid = i.item_id))
           AS items_without_fts,
       (SELECT count(*) FROM items i WHERE NOT EXISTS (SELECT 1 FROM item_vectors v WHERE v.item_id = i.item_id)
                                       AND NOT EXISTS (SELECT 1 FROM vector_codes_items q WHERE q.item_id = i.item_id))
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
       (SELECT count(*) FROM item_field_vectors v
        WHERE v.servable IS NOT ((v.vector_id >> 2) IN (SELECT item_id FROM servable_items)))
           AS field_vectors_with_wrong_servable,
       (SELECT count(*) FROM item_field_vectors v
        WHERE NOT EXISTS (SELECT 1 FROM items i WHERE i.item_id = v.vector_id >> 2)) AS field_vectors_without_item,
       -- the coarse index: every vector in the partition of a centroid (0 when there are none)
       (SELECT count(*) FROM item_vectors v
        WHERE v.cluster IS NOT coalesce((SELECT c.cluster FROM vector_centroids c WHERE c.cluster = v.cluster),
                                        CASE WHEN EXISTS (SELECT 1 FROM vector_index) THEN -1 ELSE 0 END))
       + (SELECT count(*) FROM item_field_vectors v
          WHERE v.cluster IS NOT coalesce((SELECT c.cluster FROM vector_centroids c WHERE c.cluster = v.cluster),
                                          CASE WHEN EXISTS (SELECT 1 FROM vector_index) THEN -1 ELSE 0 END))
           AS vectors_outside_the_coarse_index,
       -- a large library's codes (migrations 019-020): the same rules
       (SELECT count(*) FROM vector_codes_items q
        WHERE NOT EXISTS (SELECT 1 FROM vector_codes c WHERE c.vector_id = q.item_id * 4)) AS quantized_items_without_code,
       (SELECT count(*) FROM vector_codes c
        WHERE NOT EXISTS (SELECT 1 FROM items i WHERE i.item_id = c.vector_id >> 2)) AS codes_without_item,
       (SELECT count(*) FROM vector_codes c
        WHERE c.servable IS NOT ((c.vector_id >> 2) IN (SELECT item_id FROM servable_items))) AS codes_with_wrong_servable,
       (SELECT count(*) FROM vector_codes c
        WHERE NOT EXISTS (SELECT 1 FROM vector_centroids v WHERE v.cluster = c.cluster)) AS codes_outside_the_coarse_index;

-- name: template_counts
SELECT source, count(*) AS n FROM templates GROUP BY source ORDER BY source;

-- name: recognised_counts
SELECT (SELECT count(*) FROM items WHERE template_id IS NOT NULL) AS recognised,
       (SELECT count(*) FROM items WHERE derived <> '{}') AS with_derived_fields;

-- name: vector_checksums
-- Every embedded item's stored vector checksum (NULL: written before schema 7) and its vector,
-- unless it keeps int8 codes only (a large library: code_checksums checks those).
SELECT e.item_id, e.vector_sha256, (SELECT v.embedding FROM item_vectors v WHERE v.item_id = e.item_id)
FROM item_embeddings e
WHERE EXISTS (SELECT 1 FROM item_vectors v WHERE v.item_id = e.item_id)
   OR NOT EXISTS (SELECT 1 FROM vector_codes_items q WHERE q.item_id = e.item_id)
ORDER BY e.item_id;

-- name: bit_vectors_not_from_floats
SELECT count(*) FROM item_vectors v JOIN item_vectors_bit b ON b.item_id = v.item_id
WHERE b.embedding <> vec_quantize_binary(v.embedding);

-- name: items_fts_integrity
INSERT INTO items_fts(items_fts) VALUES ('integrity-check');

-- name: items_trigram_integrity
INSERT INTO items_trigram(items_trigram) VALUES ('integrity-check');

-- name: root_files
SELECT f.rel_path, f.size FROM files f JOIN library_roots r ON r.root_id = f.root_id
WHERE r.name = :name ORDER BY f.file_id;

-- name: schema_objects
-- Every table, view, trigger and index of a library (SQLite's own sqlite_* objects aside), for
-- `mambo check` to compare with what schema.sql makes.
SELECT type, name, sql FROM sqlite_schema WHERE name NOT LIKE 'sqlite\_%' ESCAPE '\' ORDER BY name;

-- name: file_readings
-- What each file's sidecars and manifest lines said when it was read (`mambo check` reads them
-- again); files read bare (no sidecar checksum) are left out.
SELECT r.path AS root_path, f.rel_path, f.sidecar_sha256, f.metadata, f.safety, f.rights, f.private, f.stated
FROM files f JOIN library_roots r ON r.root_id = f.root_id
WHERE f.sidecar_sha256 <> '';

-- name: delete_orphan_items
-- Items left without any file (their only file changed content or was pruned).
DELETE FROM items WHERE NOT EXISTS (SELECT 1 FROM files f WHERE f.item_id = items.item_id);

-- name: move_root
UPDATE library_roots SET path = :path WHERE name = :name;

-- name: private_files_of
-- The files among :file_ids (a JSON array) whose own metadata says private, with its source.
SELECT f.file_id, f.item_id, i.sha256, coalesce(json_extract(f.metadata, '$.source'), 'metadata') AS source,
       r.name || '/' || f.rel_path AS path
FROM files f JOIN items i ON i.item_id = f.item_id JOIN library_roots r ON r.root_id = f.root_id
WHERE f.file_id IN (SELECT value FROM json_each(:file_ids)) AND f.private = 1;

-- name: hold_private
-- A file whose sidecar or manifest line said private was forgotten while its content lives on in
-- another file (its image renamed or copied): the meme stays private, held by that metadata, until
-- the owner decides otherwise (`mambo private ID --clear`).
INSERT INTO privacy_decisions(sha256, decided_by, decider_kind, note)
SELECT sha256, :source, 'metadata', :note FROM items WHERE sha256 = :sha256
ON CONFLICT (sha256) DO NOTHING;

-- name: code_checksums
-- Every quantized item's stored code checksum and its all-fields code (`mambo check`).
SELECT q.item_id, q.codes_sha256, (SELECT c.embedding FROM vector_codes c WHERE c.vector_id = q.item_id * 4)
FROM vector_codes_items q ORDER BY q.item_id;

-- name: integrity_check
PRAGMA integrity_check;

-- name: foreign_key_check
PRAGMA foreign_key_check;
