-- 018: picture labels (mambomeme/picture_labels.py): the objects an ImageNet classifier sees in a
-- picture, in plain words, kept with the item and indexed as their own field, so a bare library
-- finds "cat" in a picture whose caption never says it. `picture_labels` NULL: not labelled yet;
-- the next `mambo add` labels such items (their pictures only: nothing else is read again) and
-- embeds again those whose picture text changes. A new FTS5 column means new FTS5 tables: both
-- indexes are made again from the items, in this transaction.
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

DROP TRIGGER items_fts_insert;
DROP TRIGGER items_fts_update;
DROP VIEW item_search_text;
DROP TABLE items_vocab;
DROP TABLE items_fts;
DROP TABLE items_trigram;

CREATE VIRTUAL TABLE items_fts USING fts5(
    title, template, entities, tags, ocr_text, description, picture_labels,
    tokenize = 'unicode61 remove_diacritics 2'
);
CREATE VIRTUAL TABLE items_trigram USING fts5(
    title, template, entities, tags, ocr_text, description, picture_labels,
    tokenize = 'trigram remove_diacritics 1'
);
CREATE VIRTUAL TABLE items_vocab USING fts5vocab('items_fts', 'row');

CREATE VIEW item_search_text AS
SELECT item_id, title, template_text AS template,
       (SELECT group_concat(value, ' ; ') FROM json_each(e.entities)) AS entities,
       (SELECT group_concat(value, ' ; ') FROM json_each(e.tags)) AS tags,
       ocr_text, description,
       (SELECT group_concat(n.value, ' ; ') FROM items i, json_each(i.picture_labels) l, json_each(l.value, '$.names') n
        WHERE i.item_id = e.item_id) AS picture_labels
FROM item_effective e;

CREATE TRIGGER items_fts_insert AFTER INSERT ON items BEGIN
    INSERT INTO items_fts(rowid, title, template, entities, tags, ocr_text, description, picture_labels)
    SELECT * FROM item_search_text WHERE item_id = new.item_id;
    INSERT INTO items_trigram(rowid, title, template, entities, tags, ocr_text, description, picture_labels)
    SELECT * FROM item_search_text WHERE item_id = new.item_id;
END;

CREATE TRIGGER items_fts_update
AFTER UPDATE OF title, template, entities, tags, ocr_text, description, derived, picture_labels ON items BEGIN
    DELETE FROM items_fts WHERE rowid = old.item_id;
    DELETE FROM items_trigram WHERE rowid = old.item_id;
    INSERT INTO items_fts(rowid, title, template, entities, tags, ocr_text, description, picture_labels)
    SELECT * FROM item_search_text WHERE item_id = new.item_id;
    INSERT INTO items_trigram(rowid, title, template, entities, tags, ocr_text, description, picture_labels)
    SELECT * FROM item_search_text WHERE item_id = new.item_id;
END;

INSERT INTO items_fts(rowid, title, template, entities, tags, ocr_text, description, picture_labels)
SELECT * FROM item_search_text;
INSERT INTO items_trigram(rowid, title, template, entities, tags, ocr_text, description, picture_labels)
SELECT * FROM item_search_text;
