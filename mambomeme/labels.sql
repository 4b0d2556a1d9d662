-- Named queries of labels (mambomeme/labels.py): which meme a file names, and a person's labels.
-- Each query starts with a `-- name: NAME` line and runs to the next (mambomeme/library.py loads
-- every *.sql file of this folder into one namespace).

-- name: item_by_file
SELECT f.item_id FROM files f JOIN library_roots r ON r.root_id = f.root_id
WHERE r.path = :root_path AND f.rel_path = :rel_path;

-- name: insert_label
INSERT INTO labels(item_id, scope, group_id, field, value) VALUES (:item_id, :scope, :group_id, :field, :value)
RETURNING label_id;

-- name: delete_labels_of_item
DELETE FROM labels WHERE item_id = :item_id RETURNING scope, group_id;

-- name: field_source
-- Where a meme's shown value of a label field comes from ("sidecar" wins over any label).
SELECT CASE :field WHEN 'template' THEN template_source WHEN 'entities' THEN entities_source
                   WHEN 'tags' THEN tags_source END
FROM item_effective WHERE item_id = :item_id;

-- name: item_groups
SELECT item_id, perceptual_group, template_group FROM items WHERE item_id = :item_id;
