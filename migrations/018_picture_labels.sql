-- 018: picture labels (mambomeme/picture_labels.py): the objects an ImageNet classifier sees in a
-- picture, in plain words, kept with the item and searched as a field of their own, so a bare
-- library finds "cat" in a picture whose caption never says it. `picture_labels` NULL: not labelled
-- yet; the next `mambo add` labels such items (their pictures only: nothing else is read again).
-- The labels have an FTS5 index of their own beside items_fts: the words' index, its BM25 lengths
-- and the vocabulary (typo corrections, the "no match" evidence) stay those of what people and
-- captions wrote, and a classifier's guess never changes how the other fields rank.
CREATE TABLE picture_labellers (
    labeller_id    INTEGER PRIMARY KEY,
    name           TEXT NOT NULL,
    package        TEXT NOT NULL,
    weights_sha256 TEXT NOT NULL CHECK (length(weights_sha256) = 64),
    params         TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(params)),
    created_at     TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    UNIQUE (name, weights_sha256, params)
);
ALTER TABLE items ADD COLUMN picture_labels TEXT CHECK (picture_labels IS NULL OR json_type(picture_labels) = 'array');
ALTER TABLE items ADD COLUMN picture_labeller_id INTEGER REFERENCES picture_labellers(labeller_id);

-- Each label's names ("tabby cat ; tabby ; cat"), one row per labelled item, kept in step with
-- `items` by the triggers below.
CREATE VIRTUAL TABLE picture_labels_fts USING fts5(
    picture_labels,
    tokenize = 'unicode61 remove_diacritics 2'
);

CREATE VIEW item_label_text AS
SELECT i.item_id, (SELECT group_concat(n.value, ' ; ') FROM json_each(i.picture_labels) l, json_each(l.value, '$.names') n)
       AS picture_labels
FROM items i;

CREATE TRIGGER picture_labels_fts_insert AFTER INSERT ON items WHEN new.picture_labels IS NOT NULL BEGIN
    INSERT INTO picture_labels_fts(rowid, picture_labels)
    SELECT item_id, picture_labels FROM item_label_text WHERE item_id = new.item_id AND picture_labels IS NOT NULL;
END;

CREATE TRIGGER picture_labels_fts_update AFTER UPDATE OF picture_labels ON items BEGIN
    DELETE FROM picture_labels_fts WHERE rowid = old.item_id;
    INSERT INTO picture_labels_fts(rowid, picture_labels)
    SELECT item_id, picture_labels FROM item_label_text WHERE item_id = new.item_id AND picture_labels IS NOT NULL;
END;

CREATE TRIGGER picture_labels_fts_delete AFTER DELETE ON items BEGIN
    DELETE FROM picture_labels_fts WHERE rowid = old.item_id;
END;
