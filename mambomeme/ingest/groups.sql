-- Named queries of ingest's grouping (mambomeme/ingest/groups.py): near-identical groups of new
-- items and regrouping by the current rule.
-- Each query starts with a `-- name: NAME` line and runs to the next. Parameters are apsw named
-- bindings (:name). Keep SQL here, not in Python strings. Every *.sql file of mambomeme/, its lab and
-- its ingest package is loaded into one namespace (mambomeme/library.py): a name defined twice stops
-- the program at import.

-- name: phashes
SELECT item_id, phash, perceptual_group, template_group FROM items;

-- name: ocr_text
SELECT ocr_text FROM items WHERE item_id = :item_id;

-- name: grouping_inputs
-- Every item, in the order ingest met them, for regrouping (groups.regroup).
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

-- name: new_perceptual_group
INSERT INTO image_groups(kind, label) VALUES ('perceptual', NULL) RETURNING group_id;
