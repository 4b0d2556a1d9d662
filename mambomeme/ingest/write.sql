-- Named queries of ingest's writes (mambomeme/ingest/write.py): items, files, previews and their
-- groups, and the labels kept for content that comes back.
-- Each query starts with a `-- name: NAME` line and runs to the next. Parameters are apsw named
-- bindings (:name). Keep SQL here, not in Python strings. Every *.sql file of mambomeme/, its lab and
-- its ingest package is loaded into one namespace (mambomeme/library.py): a name defined twice stops
-- the program at import.

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

-- name: insert_preview
INSERT OR REPLACE INTO previews(item_id, format, width, height, data)
VALUES (:item_id, :format, :width, :height, :data);

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

-- name: set_groups
UPDATE items SET perceptual_group = :perceptual_group, template_group = :template_group
WHERE item_id = :item_id;

-- name: item_exists
SELECT 1 FROM items WHERE item_id = :item_id;
