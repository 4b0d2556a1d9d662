-- MamboMeme library schema: the WHOLE current schema of one library file.
-- A new file is created from this script; an older file is upgraded by migrations/NNN_*.sql.
-- tests/test_db.py checks that migrating from an empty file gives exactly this schema.
-- Timestamps are UTC ISO-8601 text; JSON arrays are stored as text and read with json_each.

-- Folders the images live in. Paths of files are relative to a root, so a copied database
-- can be re-pointed at the images' new folder (`mambo roots move NAME PATH`).
CREATE TABLE library_roots (
    root_id    INTEGER PRIMARY KEY,
    name       TEXT NOT NULL UNIQUE,
    path       TEXT NOT NULL,
    added_at   TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);

-- OCR engines by name, version and model checksums: every item's OCR text names its engine.
CREATE TABLE ocr_engines (
    engine_id     INTEGER PRIMARY KEY,
    name          TEXT NOT NULL,
    version       TEXT NOT NULL,
    models_sha256 TEXT NOT NULL,
    params        TEXT NOT NULL DEFAULT '{}',
    UNIQUE (name, version, models_sha256, params)
);

-- The embedding manifest: what model, which exact weights, what text was embedded.
CREATE TABLE embedding_models (
    model_id        INTEGER PRIMARY KEY,
    name            TEXT NOT NULL,
    revision        TEXT NOT NULL,
    weights_sha256  TEXT NOT NULL,
    dim             INTEGER NOT NULL,
    text_recipe     TEXT NOT NULL,
    normalized      INTEGER NOT NULL DEFAULT 1,
    created_at      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    UNIQUE (name, revision, weights_sha256, text_recipe)
);

-- Perceptual groups: near-identical images (re-encoded, resized, cropped, watermarked copies).
CREATE TABLE image_groups (
    group_id     INTEGER PRIMARY KEY,
    kind         TEXT NOT NULL CHECK (kind IN ('perceptual', 'template')),
    label        TEXT,
    created_at   TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE UNIQUE INDEX image_groups_template_label ON image_groups(label) WHERE kind = 'template';

-- One row per distinct image content (SHA-256). Exact duplicates are extra rows in `files`.
CREATE TABLE items (
    item_id           INTEGER PRIMARY KEY,
    sha256            TEXT NOT NULL UNIQUE CHECK (length(sha256) = 64),
    format            TEXT NOT NULL,
    width             INTEGER NOT NULL,
    height            INTEGER NOT NULL,
    byte_size         INTEGER NOT NULL,
    phash             INTEGER NOT NULL,          -- 64-bit DCT perceptual hash (imagehash.phash), signed
    dhash             INTEGER NOT NULL,          -- 64-bit difference hash, signed
    perceptual_group  INTEGER REFERENCES image_groups(group_id),
    template_group    INTEGER REFERENCES image_groups(group_id),
    title             TEXT NOT NULL DEFAULT '',
    template          TEXT NOT NULL DEFAULT '',
    entities          TEXT NOT NULL DEFAULT '[]' CHECK (json_type(entities) = 'array'),
    tags              TEXT NOT NULL DEFAULT '[]' CHECK (json_type(tags) = 'array'),
    description       TEXT NOT NULL DEFAULT '',
    source_url        TEXT NOT NULL DEFAULT '',
    creator           TEXT NOT NULL DEFAULT '',
    licence           TEXT NOT NULL DEFAULT '',
    safety            TEXT NOT NULL DEFAULT 'safe'
                      CHECK (safety IN ('safe', 'sensitive', 'unsafe', 'critical')),
    rights            TEXT NOT NULL DEFAULT 'unknown'
                      CHECK (rights IN ('cleared', 'unknown', 'withdrawn')),
    private           INTEGER NOT NULL DEFAULT 0 CHECK (private IN (0, 1)),
    safety_source     TEXT NOT NULL DEFAULT 'default',  -- 'default', 'sidecar' or 'detector:<rule>'
    metadata_source   TEXT NOT NULL DEFAULT 'none',  -- 'sidecar:<path>', 'manifest:<path>' or 'none'
    ocr_text          TEXT NOT NULL DEFAULT '',
    ocr_engine_id     INTEGER REFERENCES ocr_engines(engine_id),
    added_at          TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    updated_at        TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE INDEX items_perceptual_group ON items(perceptual_group);
CREATE INDEX items_template_group ON items(template_group);

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

-- Where an item's content was found. The lowest file_id of an item is its original; the others
-- are exact duplicates of it.
CREATE TABLE files (
    file_id    INTEGER PRIMARY KEY,
    item_id    INTEGER NOT NULL REFERENCES items(item_id) ON DELETE CASCADE,
    root_id    INTEGER NOT NULL REFERENCES library_roots(root_id) ON DELETE CASCADE,
    rel_path   TEXT NOT NULL,
    size       INTEGER NOT NULL,
    mtime_ns   INTEGER NOT NULL,
    sidecar_sha256 TEXT NOT NULL DEFAULT '',
    seen_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    UNIQUE (root_id, rel_path)
);
CREATE INDEX files_item ON files(item_id);

-- The stored preview, so a database copied without its images still shows every meme.
-- WebP, longest side PREVIEW_SIDE pixels (mambo.py says why that size).
CREATE TABLE previews (
    item_id  INTEGER PRIMARY KEY REFERENCES items(item_id) ON DELETE CASCADE,
    format   TEXT NOT NULL,
    width    INTEGER NOT NULL,
    height   INTEGER NOT NULL,
    data     BLOB NOT NULL
);

-- Which model embedded which text of an item; the vector itself is in item_vectors.
CREATE TABLE item_embeddings (
    item_id     INTEGER PRIMARY KEY REFERENCES items(item_id) ON DELETE CASCADE,
    model_id    INTEGER NOT NULL REFERENCES embedding_models(model_id),
    text_sha256 TEXT NOT NULL
);

-- sqlite-vec: one float32 all-MiniLM-L6-v2 vector (normalised) per item, cosine distance.
CREATE VIRTUAL TABLE item_vectors USING vec0(
    item_id INTEGER PRIMARY KEY,
    embedding float[384] distance_metric=cosine
);

-- FTS5 over the text fields, one column per field so BM25 can weight them.
-- Kept in step with `items` by the triggers below, in the same transaction.
CREATE VIRTUAL TABLE items_fts USING fts5(
    title, template, entities, tags, ocr_text, description,
    tokenize = 'unicode61 remove_diacritics 2'
);

-- Typo tolerance: the same fields under the trigram tokenizer. A misspelt or slangy query word
-- ("jon ceena", OCR's "AWAYLIKE") still shares most of its 3-letter pieces with the right word.
CREATE VIRTUAL TABLE items_trigram USING fts5(
    title, template, entities, tags, ocr_text, description,
    tokenize = 'trigram remove_diacritics 1'
);

-- The word index's vocabulary, read live from FTS5 (slow to scan: a full pass over the index).
CREATE VIRTUAL TABLE items_vocab USING fts5vocab('items_fts', 'row');

-- A B-tree copy of that vocabulary, refreshed at the end of every `mambo add` and `mambo prune`,
-- for the query-time typo correction: is a word known, and which known words are one edit away.
CREATE TABLE vocabulary (
    term  TEXT PRIMARY KEY,
    docs  INTEGER NOT NULL
) WITHOUT ROWID;

-- Bit-quantized copies of item_vectors (sign of each dimension) for large libraries: a Hamming
-- KNN over these, then float cosine rescoring of the candidates (see mambo.py DENSE_INDEXES).
CREATE VIRTUAL TABLE item_vectors_bit USING vec0(
    item_id INTEGER PRIMARY KEY,
    embedding bit[384]
);

CREATE TRIGGER item_vectors_bit_delete AFTER DELETE ON item_embeddings BEGIN
    DELETE FROM item_vectors_bit WHERE item_id = old.item_id;
END;

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

CREATE TRIGGER items_delete AFTER DELETE ON items BEGIN
    DELETE FROM items_fts WHERE rowid = old.item_id;
    DELETE FROM items_trigram WHERE rowid = old.item_id;
    DELETE FROM item_vectors WHERE item_id = old.item_id;
    DELETE FROM item_vectors_bit WHERE item_id = old.item_id;
END;

-- Slang, abbreviations and common misspellings people type, expanded at query time for the
-- lexical routes (`ngl` also searches "not gonna lie"). Users may add rows (source 'user').
CREATE TABLE query_aliases (
    term       TEXT NOT NULL,
    expansion  TEXT NOT NULL,
    source     TEXT NOT NULL DEFAULT 'builtin',
    PRIMARY KEY (term, expansion)
) WITHOUT ROWID;

INSERT INTO query_aliases(term, expansion) VALUES
    ('u', 'you'), ('ur', 'your'), ('ure', 'you are'), ('r', 'are'), ('y', 'why'), ('n', 'and'),
    ('ngl', 'not gonna lie'), ('tbh', 'to be honest'), ('imo', 'in my opinion'), ('idk', 'i don''t know'),
    ('idc', 'i don''t care'), ('smh', 'shaking my head'), ('rn', 'right now'), ('irl', 'in real life'),
    ('bc', 'because'), ('cuz', 'because'), ('coz', 'because'), ('bcuz', 'because'), ('tho', 'though'),
    ('thx', 'thanks'), ('ty', 'thank you'), ('pls', 'please'), ('plz', 'please'), ('gonna', 'going to'),
    ('wanna', 'want to'), ('gotta', 'got to'), ('kinda', 'kind of'), ('dunno', 'don''t know'),
    ('ya', 'you'), ('yall', 'you all'), ('im', 'i am'), ('ive', 'i have'), ('dont', 'do not'),
    ('cant', 'can not'), ('wont', 'will not'), ('didnt', 'did not'), ('isnt', 'is not'),
    ('bruh', 'bro'), ('bro', 'brother'), ('fam', 'family'), ('lol', 'laugh'), ('lmao', 'laugh'),
    ('omg', 'oh my god'), ('wtf', 'what'), ('fr', 'for real'), ('b4', 'before'), ('2day', 'today'),
    ('2moro', 'tomorrow'), ('tmrw', 'tomorrow'), ('l8r', 'later'), ('gr8', 'great'), ('m8', 'mate'),
    ('w8', 'wait'), ('msg', 'message'), ('pic', 'picture'), ('pics', 'pictures'), ('mon', 'monday'),
    ('fri', 'friday'), ('wknd', 'weekend'), ('bday', 'birthday'), ('xmas', 'christmas'),
    ('govt', 'government'), ('ppl', 'people'), ('sry', 'sorry'), ('srsly', 'seriously'),
    ('nvm', 'never mind'), ('btw', 'by the way'), ('afaik', 'as far as i know'), ('wfh', 'work from home'),
    ('dev', 'developer'), ('devs', 'developers'), ('prod', 'production'), ('js', 'javascript'),
    ('meirl', 'me in real life'), ('doggo', 'dog'), ('pupper', 'puppy'), ('kitteh', 'cat'),
    ('catto', 'cat'), ('smol', 'small'), ('chonk', 'fat'), ('chonky', 'fat'), ('noob', 'beginner');

-- One row per `mambo add` run; errors name their run.
CREATE TABLE ingest_runs (
    run_id      INTEGER PRIMARY KEY,
    started_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    finished_at TEXT,
    status      TEXT NOT NULL DEFAULT 'running'
                CHECK (status IN ('running', 'done', 'interrupted', 'failed')),
    paths       TEXT NOT NULL DEFAULT '[]',
    added       INTEGER NOT NULL DEFAULT 0,
    updated     INTEGER NOT NULL DEFAULT 0,
    duplicates  INTEGER NOT NULL DEFAULT 0,
    skipped     INTEGER NOT NULL DEFAULT 0,
    errors      INTEGER NOT NULL DEFAULT 0,
    seconds     REAL
);

CREATE TABLE ingest_errors (
    error_id   INTEGER PRIMARY KEY,
    run_id     INTEGER REFERENCES ingest_runs(run_id) ON DELETE SET NULL,
    path       TEXT NOT NULL,
    kind       TEXT NOT NULL,
    message    TEXT NOT NULL,
    at         TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);

-- Search systems are data: the complete configuration of each named system (bm25, dense,
-- hybrid, ...). A configuration is never changed in place: a change is a new version row.
CREATE TABLE systems (
    system_id     INTEGER PRIMARY KEY,
    name          TEXT NOT NULL,
    version       INTEGER NOT NULL,
    config        TEXT NOT NULL CHECK (json_valid(config)),
    config_sha256 TEXT NOT NULL,
    notes         TEXT NOT NULL DEFAULT '',
    created_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    UNIQUE (name, version),
    UNIQUE (name, config_sha256)
);
CREATE TRIGGER systems_immutable BEFORE UPDATE OF name, version, config, config_sha256 ON systems BEGIN
    SELECT RAISE(ABORT, 'search systems are immutable: a changed configuration is a new version');
END;

CREATE VIEW current_systems AS
SELECT s.* FROM systems s
WHERE s.version = (SELECT max(version) FROM systems t WHERE t.name = s.name);

-- What may be shown, under safety policy mambo-safety-v1 (benchdata/safety-policy-v1.md):
-- `unsafe` and `critical` items, withdrawn items and private items are never served.
CREATE VIEW servable_items AS
SELECT item_id FROM items
WHERE safety IN ('safe', 'sensitive') AND rights <> 'withdrawn' AND private = 0;

-- User settings of this library (e.g. interaction_events = on).
CREATE TABLE settings (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

-- Opt-in interaction events from the TUI (off by default: nothing is written unless the user
-- turned them on with `--record-events` or `mambo settings set interaction_events on`).
CREATE TABLE interaction_events (
    event_id          INTEGER PRIMARY KEY,
    at                TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    session           TEXT NOT NULL,
    kind              TEXT NOT NULL CHECK (kind IN ('render', 'preview', 'open', 'copy', 'choose')),
    query             TEXT NOT NULL,
    item_id           INTEGER REFERENCES items(item_id) ON DELETE SET NULL,
    rank              INTEGER,
    ms_since_render   REAL,
    system            TEXT NOT NULL,
    system_version    INTEGER,
    interface_version TEXT NOT NULL
);

-- Plain-named views for people querying the file with sqlite3 / datasette.
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

CREATE VIEW duplicate_files AS
SELECT f.file_id, f.item_id, r.name AS root, f.rel_path AS path, o.rel_path AS original_path
FROM files f
JOIN library_roots r ON r.root_id = f.root_id
JOIN files o ON o.file_id = (SELECT min(file_id) FROM files WHERE item_id = f.item_id)
WHERE f.file_id <> o.file_id;

CREATE VIEW recent_errors AS
SELECT e.at, e.path, e.kind, e.message, e.run_id FROM ingest_errors e ORDER BY e.error_id DESC;

PRAGMA user_version = 2;
