-- Migration 002: known templates, template recognition, group labels, derived (searchable) fields.
-- Applied in one transaction by mambo.py (DB._migrate); schema.sql holds the same result.

-- Known templates: entries of the bundled catalogue (templates/catalogue.jsonl) and the user's own
-- (`mambo templates add`). `revision` is the library's templates revision (settings key
-- templates_revision) when the row was added or last changed: an item recognised at revision R
-- only needs matching against templates newer than R.
CREATE TABLE templates (
    template_id   INTEGER PRIMARY KEY,
    slug          TEXT NOT NULL UNIQUE,
    name          TEXT NOT NULL,
    aliases       TEXT NOT NULL DEFAULT '[]' CHECK (json_type(aliases) = 'array'),
    description   TEXT NOT NULL DEFAULT '',
    source        TEXT NOT NULL CHECK (source IN ('catalogue', 'user')),
    source_url    TEXT NOT NULL DEFAULT '',
    entry_sha256  TEXT NOT NULL DEFAULT '',  -- catalogue: SHA-256 of its line (unchanged lines are kept)
    revision      INTEGER NOT NULL,
    added_at      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);

-- One fingerprinted picture of a template (catalogue README, fingerprint version 1). ORB keypoints
-- are float32 [x, y] pixels of the 400-px-wide picture, descriptors n x 32 uint8, both row-major.
CREATE TABLE template_views (
    view_id             INTEGER PRIMARY KEY,
    template_id         INTEGER NOT NULL REFERENCES templates(template_id) ON DELETE CASCADE,
    fingerprint_version INTEGER NOT NULL,
    width               INTEGER NOT NULL,
    height              INTEGER NOT NULL,
    phash64             TEXT NOT NULL,
    dhash64             TEXT NOT NULL,
    band_phash64        TEXT NOT NULL,
    band_dhash64        TEXT NOT NULL,
    color_layout        TEXT NOT NULL CHECK (json_type(color_layout) = 'array'),
    orb_xy              BLOB NOT NULL,
    orb_desc            BLOB NOT NULL,
    origin              TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(origin))  -- which picture it came from
);
CREATE INDEX template_views_template ON template_views(template_id);

-- Group labels (`mambo label`): the user names one meme's template, entities or tags, for that
-- meme alone or for its whole perceptual / template group. `value` is a name (template) or a JSON
-- array (entities, tags).
CREATE TABLE labels (
    label_id    INTEGER PRIMARY KEY,
    item_id     INTEGER NOT NULL REFERENCES items(item_id) ON DELETE CASCADE,
    scope       TEXT NOT NULL CHECK (scope IN ('item', 'perceptual', 'template')),
    group_id    INTEGER REFERENCES image_groups(group_id) ON DELETE CASCADE,
    field       TEXT NOT NULL CHECK (field IN ('template', 'entities', 'tags')),
    value       TEXT NOT NULL,
    created_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE INDEX labels_item ON labels(item_id);
CREATE INDEX labels_group ON labels(group_id);

-- The recognised template (NULL: none recognised), its RANSAC inlier count, the templates
-- revision it was recognised at, the caption boxes OCR found (NULL: not recorded, items from
-- schema 1) and the derived fields: JSON {field: {..., "source": "catalogue" | "user" | "label" |
-- "propagated"}} computed by mambo.py from the recognised template and group labels.
ALTER TABLE items ADD COLUMN template_id INTEGER REFERENCES templates(template_id) ON DELETE SET NULL;
ALTER TABLE items ADD COLUMN template_score REAL;
ALTER TABLE items ADD COLUMN recognised_revision INTEGER NOT NULL DEFAULT 0;
ALTER TABLE items ADD COLUMN ocr_boxes TEXT;
ALTER TABLE items ADD COLUMN derived TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(derived));
CREATE INDEX items_template ON items(template_id);

-- What an item says, field by field: the sidecar's value when it has one (user-written metadata
-- always wins), else the derived one; *_source names where each came from.
CREATE VIEW item_effective AS
SELECT item_id, title,
       CASE WHEN template <> '' THEN template ELSE coalesce(derived ->> '$.template.name', '') END AS template,
       CASE WHEN template <> '' THEN template ELSE coalesce(derived ->> '$.template.text', '') END AS template_text,
       CASE WHEN template <> '' THEN 'sidecar' ELSE derived ->> '$.template.source' END AS template_source,
       CASE WHEN entities <> '[]' THEN entities ELSE coalesce(derived -> '$.entities.values', '[]') END AS entities,
       CASE WHEN entities <> '[]' THEN 'sidecar' ELSE derived ->> '$.entities.source' END AS entities_source,
       CASE WHEN tags <> '[]' THEN tags ELSE coalesce(derived -> '$.tags.values', '[]') END AS tags,
       CASE WHEN tags <> '[]' THEN 'sidecar' ELSE derived ->> '$.tags.source' END AS tags_source,
       CASE WHEN description <> '' THEN description ELSE coalesce(derived ->> '$.description.text', '') END
           AS description,
       CASE WHEN description <> '' THEN 'sidecar' ELSE derived ->> '$.description.source' END AS description_source,
       ocr_text
FROM items;

DROP TRIGGER items_fts_insert;
DROP TRIGGER items_fts_update;
DROP VIEW item_search_text;

-- The text both indexes hold for an item: the effective fields (derived ones included, with a
-- template's aliases beside its name), JSON lists flattened to "a ; b".
CREATE VIEW item_search_text AS
SELECT item_id, title, template_text AS template,
       (SELECT group_concat(value, ' ; ') FROM json_each(e.entities)) AS entities,
       (SELECT group_concat(value, ' ; ') FROM json_each(e.tags)) AS tags,
       ocr_text, description
FROM item_effective e;

CREATE TRIGGER items_fts_insert AFTER INSERT ON items BEGIN
    INSERT INTO items_fts(rowid, title, template, entities, tags, ocr_text, description)
    SELECT * FROM item_search_text WHERE item_id = new.item_id;
    INSERT INTO items_trigram(rowid, title, template, entities, tags, ocr_text, description)
    SELECT * FROM item_search_text WHERE item_id = new.item_id;
END;

CREATE TRIGGER items_fts_update AFTER UPDATE OF title, template, entities, tags, ocr_text, description, derived
ON items BEGIN
    DELETE FROM items_fts WHERE rowid = old.item_id;
    DELETE FROM items_trigram WHERE rowid = old.item_id;
    INSERT INTO items_fts(rowid, title, template, entities, tags, ocr_text, description)
    SELECT * FROM item_search_text WHERE item_id = new.item_id;
    INSERT INTO items_trigram(rowid, title, template, entities, tags, ocr_text, description)
    SELECT * FROM item_search_text WHERE item_id = new.item_id;
END;

DROP VIEW library;

CREATE VIEW library AS
SELECT i.item_id, i.sha256, r.name AS root, f.rel_path AS path, i.format, i.width, i.height,
       i.title, e.template, e.template_source, e.entities, e.tags, e.description, i.ocr_text,
       i.safety, i.rights, i.private, i.creator, i.licence, i.source_url,
       i.perceptual_group, i.template_group, t.slug AS recognised_template, i.template_score, i.derived,
       (SELECT count(*) - 1 FROM files d WHERE d.item_id = i.item_id) AS duplicate_count,
       (p.item_id IS NOT NULL) AS has_preview
FROM items i
JOIN item_effective e ON e.item_id = i.item_id
JOIN files f ON f.file_id = (SELECT min(file_id) FROM files WHERE item_id = i.item_id)
JOIN library_roots r ON r.root_id = f.root_id
LEFT JOIN templates t ON t.template_id = i.template_id
LEFT JOIN previews p ON p.item_id = i.item_id;
