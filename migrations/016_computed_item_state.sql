-- 016: an item's safety, rights and privacy are computed from all it is made of, not copied from
-- the one file whose sidecar changed last (mambomeme/state.sql, apply_item_state).
-- * Each file keeps its own metadata: `metadata` (JSON: the fields its sidecars and manifest lines
--   give; NULL: none), and the strict fields apart (`safety`, `rights`, `private`: NULL where the
--   file's metadata does not give them; a value read in doubt is kept at the stricter reading;
--   `stated`: the strict fields it gives readably).
-- * ingest_errors keeps one row per file and problem: a run that meets it again updates the row.
-- * A person's safety decision no longer writes items.safety through triggers: the state statement
--   reads safety_decisions with the files, the signals and the perceptual group.
ALTER TABLE files ADD COLUMN metadata TEXT CHECK (metadata IS NULL OR json_type(metadata) = 'object');
ALTER TABLE files ADD COLUMN safety TEXT CHECK (safety IN ('safe', 'sensitive', 'unsafe', 'critical'));
ALTER TABLE files ADD COLUMN rights TEXT CHECK (rights IN ('cleared', 'unknown', 'withdrawn'));
ALTER TABLE files ADD COLUMN private INTEGER CHECK (private IN (0, 1));
ALTER TABLE files ADD COLUMN stated TEXT NOT NULL DEFAULT '[]' CHECK (json_type(stated) = 'array');

DROP TRIGGER safety_decision_made;
DROP TRIGGER safety_decision_changed;
DROP TRIGGER safety_decision_withdrawn;
DROP TRIGGER safety_decision_on_new_item;
DROP TRIGGER safety_decision_on_reclass;

-- Until the next `mambo add` reads every sidecar again (the changed checksum below makes it), each
-- file of an item described by metadata holds the item's own values: stricter than any one file's,
-- never looser.
UPDATE files SET
    metadata = (SELECT json_object('title', i.title, 'template', i.template, 'entities', json(i.entities),
                                   'tags', json(i.tags), 'description', i.description,
                                   'source_url', i.source_url, 'creator', i.creator, 'licence', i.licence)
                FROM items i WHERE i.item_id = files.item_id AND i.metadata_source <> 'none'),
    safety = (SELECT coalesce(i.inherited ->> '$.safety', i.safety) FROM items i
              WHERE i.item_id = files.item_id AND i.metadata_source <> 'none' AND i.safety_source = 'sidecar'),
    rights = (SELECT coalesce(i.inherited ->> '$.rights', i.rights) FROM items i
              WHERE i.item_id = files.item_id AND i.metadata_source <> 'none'),
    private = (SELECT coalesce(i.inherited ->> '$.private', i.private) FROM items i
               WHERE i.item_id = files.item_id AND i.metadata_source <> 'none'),
    stated = coalesce((SELECT i.stated FROM items i
                       WHERE i.item_id = files.item_id AND i.metadata_source <> 'none'), '[]');
UPDATE files SET sidecar_sha256 = 'schema-15:' || sidecar_sha256 WHERE sidecar_sha256 <> '';

DELETE FROM ingest_errors WHERE error_id NOT IN (SELECT max(error_id) FROM ingest_errors GROUP BY path, kind, message);
CREATE UNIQUE INDEX ingest_errors_problem ON ingest_errors(path, kind, message);
