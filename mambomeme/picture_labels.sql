-- Named queries of the picture labels (mambomeme/picture_labels.py): the labeller's manifest row,
-- the items it has not labelled, and an item's labels.

-- name: picture_labeller
SELECT labeller_id FROM picture_labellers
WHERE name = :name AND weights_sha256 = :weights_sha256 AND params = :params;

-- name: insert_picture_labeller
INSERT INTO picture_labellers(name, package, weights_sha256, params)
VALUES (:name, :package, :weights_sha256, :params)
RETURNING labeller_id;

-- name: items_to_label
-- Items with no labels of this labeller (weights and parameters): a library from before schema 18,
-- or labelled with other parameters.
SELECT i.item_id FROM items i
WHERE i.picture_labels IS NULL OR i.picture_labeller_id IS NULL
   OR i.picture_labeller_id NOT IN (SELECT labeller_id FROM picture_labellers
                                    WHERE weights_sha256 = :weights_sha256 AND params = :params)
ORDER BY i.item_id;

-- name: set_picture_labels
UPDATE items SET picture_labels = :labels, picture_labeller_id = :labeller_id WHERE item_id = :item_id;
