-- 007: fail closed: a doubt about metadata never makes a meme more visible.
-- * `stated`: the strict fields (safety, rights, private) the item's own sidecar states readably; a
--   perceptual duplicate of a private, withdrawn or unsafe item inherits the stricter state except
--   for the fields it states itself (a person's decision wins). `inherited` keeps the item's own
--   values of the fields raised by its group ({} when none), so the group's state can be undone
--   when the stricter item leaves the group (mambomeme/ingest.sql, apply_group_state).
-- * `kept_labels`: labels outlive their items. When an item is deleted (pruned, or its only file
--   changed content) its labels are kept by the content's SHA-256 and re-attached when that content
--   is indexed again.
-- * `item_embeddings.vector_sha256`: the SHA-256 of the stored float32 vector, so `mambo check`
--   can tell a flipped byte in a vector page from a real vector (NULL: written before schema 7).
ALTER TABLE items ADD COLUMN stated TEXT NOT NULL DEFAULT '[]' CHECK (json_type(stated) = 'array');
ALTER TABLE items ADD COLUMN inherited TEXT NOT NULL DEFAULT '{}' CHECK (json_type(inherited) = 'object');
ALTER TABLE item_embeddings ADD COLUMN vector_sha256 TEXT;

CREATE TABLE kept_labels (
    kept_id     INTEGER PRIMARY KEY,
    sha256      TEXT NOT NULL,
    scope       TEXT NOT NULL CHECK (scope IN ('item', 'perceptual', 'template')),
    field       TEXT NOT NULL CHECK (field IN ('template', 'entities', 'tags')),
    value       TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    kept_at     TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE INDEX kept_labels_sha256 ON kept_labels(sha256);

CREATE TRIGGER items_keep_labels BEFORE DELETE ON items BEGIN
    INSERT INTO kept_labels(sha256, scope, field, value, created_at)
    SELECT old.sha256, scope, field, value, created_at FROM labels WHERE item_id = old.item_id;
END;

-- Rows written before schema 7 do not say which fields their sidecar stated: the next `mambo add`
-- reads every sidecar again (a changed checksum is a metadata update, no pixels are read).
UPDATE files SET sidecar_sha256 = 'schema-6:' || sidecar_sha256 WHERE sidecar_sha256 <> '';
