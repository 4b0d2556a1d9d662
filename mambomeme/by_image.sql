-- Named queries of search by image and "more like this" (mambomeme/by_image.py).
-- Each query starts with a `-- name: NAME` line and runs to the next. Parameters are apsw named
-- bindings (:name). Keep SQL here, not in Python strings. Every *.sql file of mambomeme/ is loaded
-- into one namespace (mambomeme/library.py): a name defined twice stops the program at import.

-- name: image_exact
-- The item holding these bytes (one item per SHA-256).
SELECT item_id FROM items WHERE sha256 = :sha256;

-- name: image_hashes
-- Every item's pHash, for the near-copy and same-picture candidates (images.PhashIndex).
SELECT item_id, phash, perceptual_group, template_group FROM items;

-- name: image_facts
-- What the ranking compares of the items in :ids (a JSON array): hashes, caption, groups, template.
SELECT item_id, sha256, phash, dhash, ocr_text, perceptual_group, template_group, template_id
FROM items WHERE item_id IN (SELECT value FROM json_each(:ids));

-- name: image_group_members
-- The items of the perceptual groups in :groups (a JSON array): copies of a copy.
SELECT item_id FROM items WHERE perceptual_group IN (SELECT value FROM json_each(:groups)) ORDER BY item_id;

-- name: image_same_template
-- Items recognised as :template_id, or in one of the template groups :groups (a JSON array) or in
-- the template group of an item recognised as :template_id.
SELECT item_id, phash FROM items
WHERE template_id = :template_id
   OR template_group IN (SELECT value FROM json_each(:groups))
   OR template_group IN (SELECT template_group FROM items WHERE template_id = :template_id
                         AND template_group IS NOT NULL);

-- name: image_caption_candidates
-- Items whose caption shares words with the picture's OCR text (:match, an FTS5 query on the
-- ocr_text column), best BM25 first: the only ones its caption is compared with.
SELECT rowid FROM items_fts WHERE items_fts MATCH :match ORDER BY rank LIMIT :k;

-- name: image_servable
-- Which of the items in :ids (a JSON array) may be shown (servable_items).
SELECT item_id FROM servable_items WHERE item_id IN (SELECT value FROM json_each(:ids));

-- name: image_template_text
-- A recognised template's name, aliases and anchors (by_image._template_text).
SELECT name, aliases, anchors FROM templates WHERE template_id = :template_id;
