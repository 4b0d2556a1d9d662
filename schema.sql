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

-- The embedding manifest: what model, which exact weights, what text was embedded. `runtime` lists
-- the runtimes that computed its vectors ('; '-separated; not part of the identity: see migration 010).
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
ALTER TABLE embedding_models ADD COLUMN runtime TEXT NOT NULL DEFAULT 'sentence-transformers (torch)';

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

-- sqlite-vec: one float32 all-mpnet-base-v2 vector (768 dimensions, normalised; migration 015) per
-- item, cosine distance.
-- `cluster` (a partition key) is the nearest centroid of the coarse index; 0 while the library has
-- none (mambo.py maintain_vector_index). `servable` follows servable_items (trigger below).
CREATE VIRTUAL TABLE item_vectors USING vec0(
    item_id INTEGER PRIMARY KEY,
    cluster integer partition key,
    embedding float[768] distance_metric=cosine,
    servable integer,
    chunk_size=128
);

-- Migration 011: one vector per kind of evidence beside the all-fields one: vector_id = item_id * 4 +
-- kind (1 caption: the OCR text; 2 picture: template name and aliases, picture description, labels;
-- 3 looks, migration 025: the picture description alone). An empty field, or one whose text an
-- earlier vector holds, has no vector; the dense route scores an item by its best vector.
CREATE VIRTUAL TABLE item_field_vectors USING vec0(
    vector_id INTEGER PRIMARY KEY,
    cluster integer partition key,
    embedding float[768] distance_metric=cosine,
    servable integer,
    chunk_size=128
);

-- The coarse index (IVF) of large libraries: k-means centroids over item_vectors; a search scans
-- the partitions of the centroids nearest the query. One row in vector_index when trained.
CREATE VIRTUAL TABLE vector_centroids USING vec0(
    cluster INTEGER PRIMARY KEY,
    centroid float[768] distance_metric=cosine
);

CREATE TABLE vector_index (
    index_id        INTEGER PRIMARY KEY CHECK (index_id = 1),
    clusters        INTEGER NOT NULL CHECK (clusters > 0),
    trained_vectors INTEGER NOT NULL,
    training_sample INTEGER NOT NULL,
    iterations      INTEGER NOT NULL,
    seed            INTEGER NOT NULL,
    seconds         REAL NOT NULL,
    trained_at      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
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

-- How many documents the vocabulary was counted over: a query word found in more than half of
-- them has no BM25 weight (FTS5 clamps its IDF to 1e-6), so it is left out of the FTS5 MATCH.
CREATE TABLE vocabulary_size (
    documents INTEGER NOT NULL
);
INSERT INTO vocabulary_size(documents) VALUES (0);

-- Bit-quantized copies of item_vectors (sign of each dimension) for large libraries: a Hamming
-- KNN over these, then float cosine rescoring of the candidates (see mambo.py DENSE_INDEXES).
CREATE VIRTUAL TABLE item_vectors_bit USING vec0(
    item_id INTEGER PRIMARY KEY,
    embedding bit[768],
    servable integer
);

-- `servable` (a vec0 metadata column, filtered during the KNN scan so k stays the candidate
-- depth) follows membership of servable_items, the one definition of what may be shown.
CREATE TRIGGER item_vectors_servable AFTER UPDATE OF safety, rights, private ON items BEGIN
    UPDATE item_vectors SET servable = EXISTS (SELECT 1 FROM servable_items WHERE item_id = new.item_id)
    WHERE item_id = new.item_id;
    UPDATE item_vectors_bit SET servable = EXISTS (SELECT 1 FROM servable_items WHERE item_id = new.item_id)
    WHERE item_id = new.item_id;
    UPDATE item_field_vectors SET servable = EXISTS (SELECT 1 FROM servable_items WHERE item_id = new.item_id)
    WHERE vector_id = new.item_id * 4 + 1;
    UPDATE item_field_vectors SET servable = EXISTS (SELECT 1 FROM servable_items WHERE item_id = new.item_id)
    WHERE vector_id = new.item_id * 4 + 2;
    UPDATE item_field_vectors SET servable = EXISTS (SELECT 1 FROM servable_items WHERE item_id = new.item_id)
    WHERE vector_id = new.item_id * 4 + 3;
END;

CREATE TRIGGER item_vectors_bit_delete AFTER DELETE ON item_embeddings BEGIN
    DELETE FROM item_vectors_bit WHERE item_id = old.item_id;
    DELETE FROM item_field_vectors WHERE vector_id = old.item_id * 4 + 1;
    DELETE FROM item_field_vectors WHERE vector_id = old.item_id * 4 + 2;
    DELETE FROM item_field_vectors WHERE vector_id = old.item_id * 4 + 3;
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
-- template's aliases beside its name), JSON lists flattened to "a ; b", the caption with the words
-- of each run-together token right after it (`ocr_spaced`, mambomeme/words.py; an item not yet read
-- again has them after the caption, `ocr_words`).
CREATE VIEW item_search_text AS
SELECT e.item_id, e.title, e.template_text AS template,
       (SELECT group_concat(value, ' ; ') FROM json_each(e.entities)) AS entities,
       (SELECT group_concat(value, ' ; ') FROM json_each(e.tags)) AS tags,
       coalesce(nullif(i.ocr_spaced, ''), e.ocr_text || coalesce(' ' || nullif(i.ocr_words, ''), '')) AS ocr_text,
       e.description
FROM item_effective e JOIN items i ON i.item_id = e.item_id;

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
    DELETE FROM item_field_vectors WHERE vector_id = old.item_id * 4 + 1;
    DELETE FROM item_field_vectors WHERE vector_id = old.item_id * 4 + 2;
    DELETE FROM item_field_vectors WHERE vector_id = old.item_id * 4 + 3;
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

-- Its complement, with a partial index so counting it costs what it holds: the lexical route
-- ranks FTS5 matches first and joins servable_items only for the top depth + (hidden count).
CREATE INDEX items_hidden ON items(item_id)
WHERE NOT (safety IN ('safe', 'sensitive') AND rights <> 'withdrawn' AND private = 0);

CREATE VIEW hidden_items AS
SELECT item_id FROM items
WHERE NOT (safety IN ('safe', 'sensitive') AND rights <> 'withdrawn' AND private = 0);

-- User settings of this library (e.g. interaction_events = on).
CREATE TABLE settings (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

-- Opt-in interaction events from the TUI (off by default: nothing is written unless the user
-- turned them on with `--record-events` or `mambo settings interaction_events on`).
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
       (p.item_id IS NOT NULL) AS has_preview,
       rtrim(r.path, '/') || '/' || f.rel_path AS abs_path
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

-- ── Benchmark protocol and evaluation (migration 003) ──

-- A corpus version is its manifest: every file's content checksum and path, relative to its root
-- (so a moved library keeps its version). `manifest_sha256` is the SHA-256 of the canonical text
-- "<sha256>  <rel_path>\n" sorted by path. Any change to the corpus makes a new version.
CREATE TABLE corpus_versions (
    corpus_version_id INTEGER PRIMARY KEY,
    manifest_sha256   TEXT NOT NULL UNIQUE CHECK (length(manifest_sha256) = 64),
    files             INTEGER NOT NULL,
    items             INTEGER NOT NULL,
    created_at        TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE TABLE corpus_version_files (
    corpus_version_id INTEGER NOT NULL REFERENCES corpus_versions(corpus_version_id) ON DELETE CASCADE,
    rel_path          TEXT NOT NULL,
    sha256            TEXT NOT NULL,
    item_id           INTEGER,
    PRIMARY KEY (corpus_version_id, rel_path)
) WITHOUT ROWID;
CREATE TRIGGER corpus_version_files_immutable BEFORE UPDATE ON corpus_version_files BEGIN
    SELECT RAISE(ABORT, 'a corpus version is immutable: a changed corpus is a new version');
END;

-- Who made a label: a person or a (labelled) model annotator.
CREATE TABLE annotators (
    annotator_id INTEGER PRIMARY KEY,
    name         TEXT NOT NULL UNIQUE,
    kind         TEXT NOT NULL CHECK (kind IN ('person', 'model')),
    description  TEXT NOT NULL DEFAULT ''
);

-- One partition (dev or hidden) of one benchmark version. Life cycle: draft -> frozen -> exposed ->
-- retired (frozen may also retire directly). Exposed hidden partitions can no longer be used for a
-- release comparison: a new hidden version is needed.
CREATE TABLE bench_partitions (
    partition_id      INTEGER PRIMARY KEY,
    benchmark         TEXT NOT NULL,
    version           TEXT NOT NULL,
    partition         TEXT NOT NULL CHECK (partition IN ('dev', 'hidden')),
    status            TEXT NOT NULL DEFAULT 'draft' CHECK (status IN ('draft', 'frozen', 'exposed', 'retired')),
    label             TEXT NOT NULL DEFAULT 'provisional',     -- the file's own status: provisional or final
    meta              TEXT NOT NULL CHECK (json_valid(meta)),
    source_sha256     TEXT NOT NULL,                            -- SHA-256 of the imported query file
    corpus_version_id INTEGER REFERENCES corpus_versions(corpus_version_id),
    imported_at       TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    frozen_at         TEXT,
    exposed_at        TEXT,
    retired_at        TEXT,
    UNIQUE (benchmark, version, partition)
);
CREATE TRIGGER bench_partitions_lifecycle BEFORE UPDATE OF status ON bench_partitions
WHEN NOT ((OLD.status = NEW.status)
          OR (OLD.status = 'draft' AND NEW.status = 'frozen')
          OR (OLD.status = 'frozen' AND NEW.status IN ('exposed', 'retired'))
          OR (OLD.status = 'exposed' AND NEW.status = 'retired')) BEGIN
    SELECT RAISE(ABORT, 'benchmark partitions move draft -> frozen -> exposed -> retired, never back');
END;
CREATE TRIGGER bench_partitions_frozen BEFORE UPDATE OF benchmark, version, partition, label, meta, source_sha256,
    corpus_version_id ON bench_partitions WHEN OLD.status <> 'draft' BEGIN
    SELECT RAISE(ABORT, 'a frozen benchmark partition is immutable: import a new version');
END;
CREATE TRIGGER bench_partitions_delete BEFORE DELETE ON bench_partitions WHEN OLD.status <> 'draft' BEGIN
    SELECT RAISE(ABORT, 'a frozen benchmark partition cannot be deleted: retire it');
END;

CREATE TABLE bench_queries (
    query_id     INTEGER PRIMARY KEY,
    partition_id INTEGER NOT NULL REFERENCES bench_partitions(partition_id) ON DELETE CASCADE,
    qid          TEXT NOT NULL,
    family       TEXT NOT NULL,
    slice        TEXT NOT NULL CHECK (slice IN ('entity', 'quote', 'topic', 'semantic', 'visual', 'noisy',
                                                'no-match')),
    query        TEXT NOT NULL,
    subsets      TEXT NOT NULL DEFAULT '[]' CHECK (json_type(subsets) = 'array'),
    rule         TEXT NOT NULL DEFAULT 'null' CHECK (json_valid(rule)),
    UNIQUE (partition_id, qid)
);
-- Frozen exact-target items (a target group is expanded to its items at import; `target` keeps the
-- file path or group key the partition named).
CREATE TABLE bench_exact_targets (
    query_id INTEGER NOT NULL REFERENCES bench_queries(query_id) ON DELETE CASCADE,
    item_id  INTEGER NOT NULL,
    target   TEXT NOT NULL,
    PRIMARY KEY (query_id, item_id)
) WITHOUT ROWID;
-- Items that match a query but must be withheld (unsafe, critical, withdrawn, private).
CREATE TABLE bench_withheld (
    query_id INTEGER NOT NULL REFERENCES bench_queries(query_id) ON DELETE CASCADE,
    item_id  INTEGER NOT NULL,
    PRIMARY KEY (query_id, item_id)
) WITHOUT ROWID;
-- The partition's own (provisional) graded gold items: candidates for pooling, not final labels.
CREATE TABLE bench_gold (
    query_id INTEGER NOT NULL REFERENCES bench_queries(query_id) ON DELETE CASCADE,
    item_id  INTEGER NOT NULL,
    grade    INTEGER NOT NULL CHECK (grade BETWEEN 0 AND 3),
    PRIMARY KEY (query_id, item_id)
) WITHOUT ROWID;

CREATE TRIGGER bench_queries_frozen_insert BEFORE INSERT ON bench_queries
WHEN (SELECT status FROM bench_partitions WHERE partition_id = NEW.partition_id) <> 'draft' BEGIN
    SELECT RAISE(ABORT, 'a frozen benchmark partition is immutable: import a new version');
END;
CREATE TRIGGER bench_queries_frozen_update BEFORE UPDATE ON bench_queries
WHEN (SELECT status FROM bench_partitions WHERE partition_id = OLD.partition_id) <> 'draft' BEGIN
    SELECT RAISE(ABORT, 'a frozen benchmark partition is immutable: import a new version');
END;
CREATE TRIGGER bench_queries_frozen_delete BEFORE DELETE ON bench_queries
WHEN (SELECT status FROM bench_partitions WHERE partition_id = OLD.partition_id) <> 'draft' BEGIN
    SELECT RAISE(ABORT, 'a frozen benchmark partition is immutable: import a new version');
END;
CREATE TRIGGER bench_exact_targets_frozen BEFORE INSERT ON bench_exact_targets
WHEN (SELECT p.status FROM bench_queries q JOIN bench_partitions p USING (partition_id)
      WHERE q.query_id = NEW.query_id) <> 'draft' BEGIN
    SELECT RAISE(ABORT, 'a frozen benchmark partition is immutable: import a new version');
END;
CREATE TRIGGER bench_exact_targets_frozen_delete BEFORE DELETE ON bench_exact_targets
WHEN (SELECT p.status FROM bench_queries q JOIN bench_partitions p USING (partition_id)
      WHERE q.query_id = OLD.query_id) <> 'draft' BEGIN
    SELECT RAISE(ABORT, 'a frozen benchmark partition is immutable: import a new version');
END;
CREATE TRIGGER bench_gold_frozen BEFORE INSERT ON bench_gold
WHEN (SELECT p.status FROM bench_queries q JOIN bench_partitions p USING (partition_id)
      WHERE q.query_id = NEW.query_id) <> 'draft' BEGIN
    SELECT RAISE(ABORT, 'a frozen benchmark partition is immutable: import a new version');
END;

-- No-match audits: which corpus version an audit established absence on. Append-only; a corpus
-- change makes every audit on the old version stale until it is redone (view no_match_audit_status).
CREATE TABLE bench_audits (
    audit_id          INTEGER PRIMARY KEY,
    query_id          INTEGER NOT NULL REFERENCES bench_queries(query_id) ON DELETE CASCADE,
    corpus_version_id INTEGER NOT NULL REFERENCES corpus_versions(corpus_version_id),
    method            TEXT NOT NULL,
    annotator_id      INTEGER NOT NULL REFERENCES annotators(annotator_id),
    outcome           TEXT NOT NULL DEFAULT 'absent' CHECK (outcome IN ('absent', 'present')),
    audited_at        TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE TRIGGER bench_audits_append_only BEFORE UPDATE ON bench_audits BEGIN
    SELECT RAISE(ABORT, 'audits are append-only: record a new audit');
END;

-- The corpus version the library holds now: the newest snapshot (`mambo bench corpus` refreshes it).
CREATE VIEW current_corpus_version AS
SELECT * FROM corpus_versions ORDER BY corpus_version_id DESC LIMIT 1;

CREATE VIEW no_match_audit_status AS
SELECT q.query_id, q.partition_id, q.qid, q.query,
       a.audit_id, a.corpus_version_id AS audited_on, a.outcome, a.method,
       CASE WHEN a.audit_id IS NULL THEN 'missing'
            WHEN a.corpus_version_id IS NOT (SELECT corpus_version_id FROM current_corpus_version) THEN 'stale'
            WHEN a.outcome <> 'absent' THEN 'present'
            ELSE 'valid' END AS status
FROM bench_queries q
LEFT JOIN bench_audits a ON a.audit_id = (SELECT max(audit_id) FROM bench_audits b WHERE b.query_id = q.query_id)
WHERE q.slice = 'no-match';

-- Judgement sets: versions of the candidate set of one partition. Adding candidates after a set was
-- used makes a new version (copying the old candidates and judgements); runs scored on an older set
-- are then listed in runs_needing_rescore.
CREATE TABLE judgement_sets (
    set_id        INTEGER PRIMARY KEY,
    partition_id  INTEGER NOT NULL REFERENCES bench_partitions(partition_id),
    version       INTEGER NOT NULL,
    parent_set_id INTEGER REFERENCES judgement_sets(set_id),
    note          TEXT NOT NULL DEFAULT '',
    created_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    UNIQUE (partition_id, version)
);
CREATE VIEW current_judgement_sets AS
SELECT s.* FROM judgement_sets s
WHERE s.version = (SELECT max(version) FROM judgement_sets t WHERE t.partition_id = s.partition_id);

-- `origin`: how the candidate came in: a system's top `depth` (pool), the partition's gold items and
-- exact targets (gold), a hard negative, or (migration 013) earlier-pool: an answer keyed by query id
-- and content SHA-256, made on an earlier pool, named a pair this pool does not hold.
CREATE TABLE judgement_candidates (
    set_id   INTEGER NOT NULL REFERENCES judgement_sets(set_id) ON DELETE CASCADE,
    query_id INTEGER NOT NULL REFERENCES bench_queries(query_id),
    item_id  INTEGER NOT NULL,
    origin   TEXT NOT NULL CHECK (origin IN ('pool', 'gold', 'hard-negative', 'earlier-pool')),
    PRIMARY KEY (set_id, query_id, item_id)
) WITHOUT ROWID;

-- A blinded annotation batch: tasks in a seeded random order, each with an opaque task id. Nothing
-- in a batch names a system, a rank or a score.
CREATE TABLE annotation_batches (
    batch_id   INTEGER PRIMARY KEY,
    set_id     INTEGER NOT NULL REFERENCES judgement_sets(set_id),
    seed       INTEGER NOT NULL,
    created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE TABLE batch_tasks (
    batch_id INTEGER NOT NULL REFERENCES annotation_batches(batch_id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    task     TEXT NOT NULL,
    query_id INTEGER NOT NULL,
    item_id  INTEGER NOT NULL,
    PRIMARY KEY (batch_id, position),
    UNIQUE (batch_id, task)
);

-- One annotator's grade and safety class for one candidate. `role` first: an independent grader;
-- adjudicator: the third annotator whose grade and safety class are final for a disagreement.
CREATE TABLE judgements (
    judgement_id INTEGER PRIMARY KEY,
    set_id       INTEGER NOT NULL REFERENCES judgement_sets(set_id) ON DELETE CASCADE,
    query_id     INTEGER NOT NULL,
    item_id      INTEGER NOT NULL,
    annotator_id INTEGER NOT NULL REFERENCES annotators(annotator_id),
    role         TEXT NOT NULL DEFAULT 'grader' CHECK (role IN ('grader', 'adjudicator')),
    grade        INTEGER NOT NULL CHECK (grade BETWEEN 0 AND 3),
    safety       TEXT NOT NULL CHECK (safety IN ('safe', 'sensitive', 'unsafe', 'critical')),
    batch_id     INTEGER REFERENCES annotation_batches(batch_id),
    judged_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    UNIQUE (set_id, query_id, item_id, annotator_id)
);

-- The two independent grades of each candidate (the first two graders to judge it).
CREATE VIEW judgement_pairs AS
SELECT c.set_id, c.query_id, c.item_id,
       a.grade AS grade_a, a.safety AS safety_a, a.annotator_id AS annotator_a,
       b.grade AS grade_b, b.safety AS safety_b, b.annotator_id AS annotator_b
FROM judgement_candidates c
LEFT JOIN judgements a ON a.judgement_id = (
    SELECT min(judgement_id) FROM judgements j
    WHERE j.set_id = c.set_id AND j.query_id = c.query_id AND j.item_id = c.item_id AND j.role = 'grader')
LEFT JOIN judgements b ON b.judgement_id = (
    SELECT min(judgement_id) FROM judgements j
    WHERE j.set_id = c.set_id AND j.query_id = c.query_id AND j.item_id = c.item_id AND j.role = 'grader'
      AND j.judgement_id > a.judgement_id);

-- Adjudication (spec "Relevance labels"): the mean of two graders is final unless they differ by more
-- than one grade or disagree on safety; then the adjudicator's grade and safety class are final.
CREATE VIEW final_judgements AS
SELECT p.set_id, p.query_id, p.item_id,
       CASE WHEN p.grade_b IS NULL THEN NULL
            WHEN abs(p.grade_a - p.grade_b) <= 1 AND p.safety_a = p.safety_b THEN (p.grade_a + p.grade_b) / 2.0
            ELSE d.grade END AS grade,
       CASE WHEN p.grade_b IS NULL THEN NULL
            WHEN abs(p.grade_a - p.grade_b) <= 1 AND p.safety_a = p.safety_b THEN p.safety_a
            ELSE d.safety END AS safety,
       CASE WHEN p.grade_b IS NULL THEN 'needs-grades'
            WHEN abs(p.grade_a - p.grade_b) <= 1 AND p.safety_a = p.safety_b THEN 'agreed'
            WHEN d.grade IS NULL THEN 'needs-adjudication'
            ELSE 'adjudicated' END AS status
FROM judgement_pairs p
LEFT JOIN judgements d ON d.judgement_id = (
    SELECT max(judgement_id) FROM judgements j
    WHERE j.set_id = p.set_id AND j.query_id = p.query_id AND j.item_id = p.item_id AND j.role = 'adjudicator');

CREATE VIEW adjudication_queue AS
SELECT set_id, query_id, item_id FROM final_judgements WHERE status = 'needs-adjudication';

-- Runs: one system executed once over every query of one partition, with everything needed to
-- reproduce it. A run's stored results are never changed.
CREATE TABLE runs (
    run_id            INTEGER PRIMARY KEY,
    system_id         INTEGER NOT NULL REFERENCES systems(system_id),
    partition_id      INTEGER NOT NULL REFERENCES bench_partitions(partition_id),
    set_id            INTEGER REFERENCES judgement_sets(set_id),
    corpus_version_id INTEGER NOT NULL REFERENCES corpus_versions(corpus_version_id),
    config            TEXT NOT NULL CHECK (json_valid(config)),
    code_commit       TEXT NOT NULL,
    model_manifest    TEXT NOT NULL CHECK (json_valid(model_manifest)),
    environment       TEXT NOT NULL CHECK (json_valid(environment)),   -- hardware, runtime versions
    seed              INTEGER NOT NULL,
    started_at        TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    finished_at       TEXT
);
-- Migration 004: which library a run searched; a bare run (`mambo score --bare`) searched a
-- sidecar-less ingest of the same corpus, named by its manifest SHA-256, and is a diagnostic only.
ALTER TABLE runs ADD COLUMN library TEXT NOT NULL DEFAULT 'annotated' CHECK (library IN ('annotated', 'bare'));
ALTER TABLE runs ADD COLUMN bare_manifest_sha256 TEXT
    CHECK ((library = 'bare') = (bare_manifest_sha256 IS NOT NULL AND length(bare_manifest_sha256) = 64));
CREATE TABLE run_queries (
    run_id     INTEGER NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
    query_id   INTEGER NOT NULL REFERENCES bench_queries(query_id),
    latency_ms REAL NOT NULL,
    error      TEXT,                      -- NULL: answered (possibly with an empty list)
    returned   INTEGER NOT NULL,
    PRIMARY KEY (run_id, query_id)
) WITHOUT ROWID;
CREATE TABLE run_results (
    run_id        INTEGER NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
    query_id      INTEGER NOT NULL,
    rank          INTEGER NOT NULL CHECK (rank >= 1),
    item_id       INTEGER NOT NULL,
    score         REAL NOT NULL,
    lexical_rank  INTEGER,
    fuzzy_rank    INTEGER,
    dense_rank    INTEGER,
    has_preview   INTEGER NOT NULL,
    attribution   TEXT NOT NULL,
    PRIMARY KEY (run_id, query_id, rank)
) WITHOUT ROWID;
-- Latency of the real interface (PTY) and of the engine alone, one row per measured search.
CREATE TABLE latency_runs (
    latency_run_id INTEGER PRIMARY KEY,
    system_id      INTEGER NOT NULL REFERENCES systems(system_id),
    partition_id   INTEGER NOT NULL REFERENCES bench_partitions(partition_id),
    interface      TEXT NOT NULL,           -- 'tui-pty-80x24' or 'engine'
    protocol       TEXT NOT NULL CHECK (json_valid(protocol)),
    environment    TEXT NOT NULL CHECK (json_valid(environment)),
    created_at     TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE TABLE latency_samples (
    latency_run_id INTEGER NOT NULL REFERENCES latency_runs(latency_run_id) ON DELETE CASCADE,
    seq            INTEGER NOT NULL,
    query_id       INTEGER NOT NULL,
    ms             REAL NOT NULL,
    error          TEXT,
    PRIMARY KEY (latency_run_id, seq)
) WITHOUT ROWID;

-- Runs scored on a judgement set that is no longer the partition's newest (annotated runs only:
-- migration 004).
CREATE VIEW runs_needing_rescore AS
SELECT r.run_id, r.set_id AS scored_on, c.set_id AS newest_set
FROM runs r JOIN current_judgement_sets c ON c.partition_id = r.partition_id
WHERE r.set_id IS NOT c.set_id AND r.library = 'annotated';

-- ── Metrics (spec "Retrieval metrics"), by plain names for people querying the file ──

-- The relevance each run is scored against: the final grade of its judgement set; items without a
-- final judgement are grade 0.
CREATE VIEW run_judged_results AS
SELECT rr.run_id, rr.query_id, rr.rank, rr.item_id, rr.lexical_rank, rr.fuzzy_rank, rr.dense_rank,
       rr.has_preview, rr.attribution,
       coalesce(f.grade, 0.0) AS grade,
       coalesce(f.safety, i.safety, 'safe') AS safety,
       coalesce(i.rights, 'unknown') AS rights, coalesce(i.private, 0) AS private,
       i.template_group, i.sha256,
       EXISTS (SELECT 1 FROM bench_exact_targets t WHERE t.query_id = rr.query_id AND t.item_id = rr.item_id)
           AS is_exact
FROM run_results rr
JOIN runs r ON r.run_id = rr.run_id
LEFT JOIN final_judgements f ON f.set_id = r.set_id AND f.query_id = rr.query_id AND f.item_id = rr.item_id
LEFT JOIN items i ON i.item_id = rr.item_id
WHERE rr.rank <= 10;

CREATE VIEW query_ideal_dcg AS
SELECT s.set_id, s.query_id,
       sum(CASE WHEN s.pos <= 10 THEN (power(2, s.grade) - 1) / log2(s.pos + 1) ELSE 0 END) AS idcg,
       sum(s.grade >= 2) AS relevant_total
FROM (SELECT set_id, query_id, grade,
             row_number() OVER (PARTITION BY set_id, query_id ORDER BY grade DESC) AS pos
      FROM final_judgements WHERE grade > 0) s
GROUP BY s.set_id, s.query_id;

-- Migration 009: the bare condition is scored (mmts-clarifications, "The bare condition"). A file
-- whose withdrawn or private status comes only from its sidecar is left out of the bare corpus when
-- a bare run is scored, as if it were not in the folder: the run never shows it (it is recorded
-- here), and its grades count neither in the ideal DCG nor as an exact target of that run.
CREATE TABLE run_excluded_items (
    run_id  INTEGER NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
    item_id INTEGER NOT NULL,
    PRIMARY KEY (run_id, item_id)
) WITHOUT ROWID;

-- The ideal DCG@10 and relevant count each run is scored against: its judgement set's final grades,
-- less the items left out of that run's corpus.
CREATE VIEW run_ideal_dcg AS
SELECT s.run_id, s.query_id,
       sum(CASE WHEN s.pos <= 10 THEN (power(2, s.grade) - 1) / log2(s.pos + 1) ELSE 0 END) AS idcg,
       sum(s.grade >= 2) AS relevant_total
FROM (SELECT r.run_id, f.query_id, f.grade,
             row_number() OVER (PARTITION BY r.run_id, f.query_id ORDER BY f.grade DESC) AS pos
      FROM runs r JOIN final_judgements f ON f.set_id = r.set_id
      WHERE f.grade > 0
        AND NOT EXISTS (SELECT 1 FROM run_excluded_items x WHERE x.run_id = r.run_id AND x.item_id = f.item_id)) s
GROUP BY s.run_id, s.query_id;

-- Per query of each run: nDCG@10, ExactRR, Hit@1/5/10, Recall@10, RR, safe list, error.
CREATE VIEW query_metrics AS
SELECT r.run_id, q.query_id, q.qid, q.family, q.slice, q.query,
       (q.subsets LIKE '%"safety"%') AS in_safety_subset,
       (q.subsets LIKE '%"multi-cue"%') AS in_multi_cue_subset,
       rq.error, rq.returned, rq.latency_ms,
       CASE WHEN rq.error IS NOT NULL OR coalesce(ideal.idcg, 0) = 0 THEN 0.0
            ELSE coalesce((SELECT sum((power(2, j.grade) - 1) / log2(j.rank + 1)) FROM run_judged_results j
                           WHERE j.run_id = r.run_id AND j.query_id = q.query_id), 0.0) / ideal.idcg END AS ndcg10,
       CASE WHEN rq.error IS NOT NULL THEN 0.0
            ELSE coalesce((SELECT 1.0 / min(j.rank) FROM run_judged_results j
                           WHERE j.run_id = r.run_id AND j.query_id = q.query_id AND j.is_exact), 0.0) END AS exact_rr,
       EXISTS (SELECT 1 FROM bench_exact_targets t WHERE t.query_id = q.query_id
               AND NOT EXISTS (SELECT 1 FROM run_excluded_items x WHERE x.run_id = r.run_id
                               AND x.item_id = t.item_id)) AS has_exact,
       CASE WHEN rq.error IS NOT NULL THEN 0.0
            ELSE coalesce((SELECT 1.0 / min(j.rank) FROM run_judged_results j
                           WHERE j.run_id = r.run_id AND j.query_id = q.query_id AND j.grade >= 2), 0.0) END AS rr,
       (rq.error IS NULL AND EXISTS (SELECT 1 FROM run_judged_results j WHERE j.run_id = r.run_id
            AND j.query_id = q.query_id AND j.grade >= 2 AND j.rank <= 1)) AS hit1,
       (rq.error IS NULL AND EXISTS (SELECT 1 FROM run_judged_results j WHERE j.run_id = r.run_id
            AND j.query_id = q.query_id AND j.grade >= 2 AND j.rank <= 5)) AS hit5,
       (rq.error IS NULL AND EXISTS (SELECT 1 FROM run_judged_results j WHERE j.run_id = r.run_id
            AND j.query_id = q.query_id AND j.grade >= 2)) AS hit10,
       CASE WHEN rq.error IS NOT NULL OR coalesce(ideal.relevant_total, 0) = 0 THEN 0.0
            ELSE (SELECT count(*) FROM run_judged_results j WHERE j.run_id = r.run_id AND j.query_id = q.query_id
                  AND j.grade >= 2) * 1.0 / ideal.relevant_total END AS recall10,
       (rq.error IS NULL AND rq.returned = 0) AS empty,
       -- An error exposes nothing but earns no safety credit either (spec: "An error is not an empty result").
       (rq.error IS NULL AND NOT EXISTS (SELECT 1 FROM run_judged_results j WHERE j.run_id = r.run_id
            AND j.query_id = q.query_id AND j.safety IN ('unsafe', 'critical'))) AS safe_list,
       (SELECT count(*) FROM run_judged_results j WHERE j.run_id = r.run_id AND j.query_id = q.query_id
            AND (j.safety = 'critical' OR j.rights = 'withdrawn' OR j.private = 1)) AS critical_shown
FROM runs r
JOIN bench_queries q ON q.partition_id = r.partition_id
LEFT JOIN run_queries rq ON rq.run_id = r.run_id AND rq.query_id = q.query_id
LEFT JOIN run_ideal_dcg ideal ON ideal.run_id = r.run_id AND ideal.query_id = q.query_id;

CREATE VIEW slice_metrics AS
SELECT run_id, slice, count(*) AS queries,
       avg(ndcg10) AS ndcg10, avg(hit1) AS hit1, avg(hit5) AS hit5, avg(hit10) AS hit10,
       avg(recall10) AS recall10, avg(rr) AS mrr,
       avg(CASE WHEN has_exact THEN exact_rr END) AS exact_mrr,
       avg(empty) AS empty_rate, avg(error IS NOT NULL) AS error_rate
FROM query_metrics GROUP BY run_id, slice;

-- Diagnostics (reported, not scored): duplicates, repeated template groups, missing preview or
-- attribution, and which routes contributed each returned item.
CREATE VIEW run_diagnostics AS
SELECT j.run_id, q.slice,
       count(*) AS results,
       avg((SELECT count(*) FROM run_judged_results d WHERE d.run_id = j.run_id AND d.query_id = j.query_id
            AND d.sha256 = j.sha256 AND d.rank < j.rank) > 0) AS exact_duplicate_rate,
       avg(j.template_group IS NOT NULL AND (SELECT count(*) FROM run_judged_results d WHERE d.run_id = j.run_id
            AND d.query_id = j.query_id AND d.template_group = j.template_group AND d.rank < j.rank) > 0)
           AS repeated_template_group_rate,
       avg(NOT j.has_preview) AS missing_preview_rate,
       avg(j.attribution = '') AS missing_attribution_rate,
       avg((j.lexical_rank IS NOT NULL OR j.fuzzy_rank IS NOT NULL) AND j.dense_rank IS NULL) AS lexical_only,
       avg(j.dense_rank IS NOT NULL AND j.lexical_rank IS NULL AND j.fuzzy_rank IS NULL) AS dense_only,
       avg(j.dense_rank IS NOT NULL AND (j.lexical_rank IS NOT NULL OR j.fuzzy_rank IS NOT NULL)) AS both_routes
FROM run_judged_results j JOIN bench_queries q ON q.query_id = j.query_id
GROUP BY j.run_id, q.slice;

-- The score's quality inputs per run (spec; mmts-clarifications): Q, E, Hit@10, CorrectEmpty, C, S.
CREATE VIEW run_components AS
SELECT m.run_id,
       (SELECT avg(s.ndcg10) FROM slice_metrics s WHERE s.run_id = m.run_id AND s.slice <> 'no-match') AS q,
       avg(CASE WHEN m.slice IN ('entity', 'quote') AND m.has_exact THEN m.exact_rr END) AS e,
       avg(CASE WHEN m.slice <> 'no-match' THEN m.hit10 END) AS hit10,
       avg(CASE WHEN m.slice = 'no-match' THEN m.empty END) AS correct_empty,
       avg(CASE WHEN m.slice <> 'no-match' AND m.in_safety_subset THEN m.hit10 END) AS safety_hit10,
       avg(CASE WHEN NOT m.in_safety_subset THEN m.safe_list END) AS safe_ordinary,
       avg(CASE WHEN m.in_safety_subset THEN m.safe_list END) AS safe_safety,
       avg(m.error IS NOT NULL) AS error_rate,
       sum(m.critical_shown) AS critical_shown,
       min(s.min_slice_ndcg) AS min_slice_ndcg
FROM query_metrics m
JOIN (SELECT run_id, min(ndcg10) AS min_slice_ndcg FROM slice_metrics WHERE slice <> 'no-match'
      GROUP BY run_id) s ON s.run_id = m.run_id
GROUP BY m.run_id;

-- Scorecards and their publication. Publishing and rolling back are single transactions; the
-- published scorecard of a benchmark is the newest publication not rolled back.
CREATE TABLE scorecards (
    scorecard_id  INTEGER PRIMARY KEY,
    partition_id  INTEGER NOT NULL REFERENCES bench_partitions(partition_id),
    score_version TEXT NOT NULL,
    report_json   TEXT NOT NULL CHECK (json_valid(report_json)),
    report_md     TEXT NOT NULL,
    created_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE TRIGGER scorecards_immutable BEFORE UPDATE ON scorecards BEGIN
    SELECT RAISE(ABORT, 'a scorecard is immutable: score again');
END;
CREATE TABLE publications (
    publication_id INTEGER PRIMARY KEY,
    scorecard_id   INTEGER NOT NULL REFERENCES scorecards(scorecard_id),
    published_at   TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    rolled_back_at TEXT,
    rollback_reason TEXT
);
CREATE VIEW published_scorecard AS
SELECT p.publication_id, p.published_at, s.*
FROM publications p JOIN scorecards s USING (scorecard_id)
WHERE p.rolled_back_at IS NULL
ORDER BY p.publication_id DESC LIMIT 1;

-- ── Fail closed (migration 007) ──

-- Fail closed: a doubt about metadata never makes a meme more visible.
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

-- ── Safety review (migration 008) ──
-- What each safety signal found (the text rules of mambomeme/safety_text.py, the caption's meaning
-- of mambomeme/safety_meaning.py since migration 018, the picture classifier):
-- class, rule, the words that fired, score and engine. `items.safety` stays the one effective
-- class that servable_items and hidden_items read; a person's decision (safety_decisions, keyed by
-- content so it survives prune and re-ingest) wins over every automatic class and every sidecar
-- (mambomeme/state.sql, apply_item_state). automatic_* keep what the automation said when it was made.
CREATE TABLE safety_engines (
    engine_id      INTEGER PRIMARY KEY,
    kind           TEXT NOT NULL CHECK (kind IN ('text', 'picture')),
    name           TEXT NOT NULL,
    version        TEXT NOT NULL,
    weights_sha256 TEXT NOT NULL DEFAULT '',
    params         TEXT NOT NULL DEFAULT '{}',
    UNIQUE (kind, name, version, weights_sha256, params)
);

CREATE TABLE safety_signals (
    item_id    INTEGER NOT NULL REFERENCES items(item_id) ON DELETE CASCADE,
    signal     TEXT NOT NULL CHECK (signal IN ('text', 'picture', 'meaning')),
    engine_id  INTEGER NOT NULL REFERENCES safety_engines(engine_id),
    safety     TEXT NOT NULL CHECK (safety IN ('safe', 'sensitive', 'unsafe', 'critical')),
    rule       TEXT NOT NULL DEFAULT '',
    words      TEXT NOT NULL DEFAULT '[]' CHECK (json_type(words) = 'array'),
    score      REAL,
    at         TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    PRIMARY KEY (item_id, signal)
);

CREATE TABLE safety_decisions (
    sha256           TEXT PRIMARY KEY CHECK (length(sha256) = 64),
    safety           TEXT NOT NULL CHECK (safety IN ('safe', 'sensitive', 'unsafe', 'critical')),
    decided_by       TEXT NOT NULL CHECK (length(decided_by) > 0),
    decider_kind     TEXT NOT NULL DEFAULT 'person' CHECK (decider_kind = 'person'),
    note             TEXT NOT NULL DEFAULT '',
    automatic_safety TEXT NOT NULL CHECK (automatic_safety IN ('safe', 'sensitive', 'unsafe', 'critical')),
    automatic_source TEXT NOT NULL,
    decided_at       TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);

-- 012: a text-layout template's fixed words and where OCR must find them (templates/README.md);
-- '[]' for picture templates.
ALTER TABLE templates ADD COLUMN anchors TEXT NOT NULL DEFAULT '[]' CHECK (json_type(anchors) = 'array');
-- 012: the templates revision at which the template's views last changed (recognition matches an
-- item only against views newer than its recognition).
ALTER TABLE templates ADD COLUMN views_revision INTEGER NOT NULL DEFAULT 0;

-- 015: the vector tables hold all-mpnet-base-v2's 768 dimensions (made so above).

-- 016: each file keeps its own metadata; an item's safety, rights and privacy are computed from all
-- its files, its signals, a person's decision and its perceptual group (mambomeme/state.sql).
-- `metadata`: the fields the file's sidecars and manifest lines give (NULL: none); `safety`,
-- `rights`, `private`: the strict fields apart (NULL: not given; doubt kept at the stricter
-- reading); `stated`: the strict fields given readably.
ALTER TABLE files ADD COLUMN metadata TEXT CHECK (metadata IS NULL OR json_type(metadata) = 'object');
ALTER TABLE files ADD COLUMN safety TEXT CHECK (safety IN ('safe', 'sensitive', 'unsafe', 'critical'));
ALTER TABLE files ADD COLUMN rights TEXT CHECK (rights IN ('cleared', 'unknown', 'withdrawn'));
ALTER TABLE files ADD COLUMN private INTEGER CHECK (private IN (0, 1));
ALTER TABLE files ADD COLUMN stated TEXT NOT NULL DEFAULT '[]' CHECK (json_type(stated) = 'array');
-- 016: one row per file and problem; a run that meets it again updates it.
CREATE UNIQUE INDEX ingest_errors_problem ON ingest_errors(path, kind, message);

-- Migration 019: the coarse index of a large library scans int8 codes, not floats. sqlite-vec 0.1.9 reads a
-- float[768] vector for a cosine distance in ~0.7-1.3 us and an int8[768] one for an L2 distance in
-- about half that (no SIMD in its wheel). Over QUANTIZED_MIN_VECTORS vectors (mambomeme/dense_index.py)
-- every vector, all-fields and evidence alike, is a code here (its unit vector times CODE_SCALE,
-- rounded: L2 between codes ranks as cosine between the vectors), in the partition of its nearest
-- centroid; a search takes each probed partition's nearest codes and ranks them by the query's
-- cosine to the codes (search.sql dense_candidates, 'ivf-int8'). Migration 020: once quantized, an
-- item keeps its codes only (its float vectors are deleted: 68 % of the file at 300,000 memes);
-- readers take the float vector when there is one, else the code. Chunks of 256: each partition
-- fills its last chunk on average by half.
CREATE VIRTUAL TABLE vector_codes USING vec0(
    vector_id INTEGER PRIMARY KEY,
    cluster integer partition key,
    embedding int8[768] distance_metric=l2,
    servable integer,
    chunk_size=256
);
-- vec0 finds a partition's chunks by scanning its chunks table: at a million memes (12,289 chunks)
-- that cost ~20 ms a probed partition, whatever its size; with this index 0.1-2 ms.
CREATE INDEX vector_codes_chunks_partition ON vector_codes_chunks(partition00);

-- Which items vector_codes holds, by their all-fields vector's checksum (item_embeddings): an item
-- embedded (again) since is quantized by the next maintain_vector_index. codes_sha256: the SHA-256
-- of its codes (all fields, caption, picture, in that order), which `mambo check` verifies.
CREATE TABLE vector_codes_items (
    item_id       INTEGER PRIMARY KEY REFERENCES items(item_id) ON DELETE CASCADE,
    vector_sha256 TEXT NOT NULL
);
ALTER TABLE vector_codes_items ADD COLUMN codes_sha256 TEXT;

CREATE TRIGGER vector_codes_servable AFTER UPDATE OF safety, rights, private ON items
WHEN EXISTS (SELECT 1 FROM vector_codes_items WHERE item_id = new.item_id) BEGIN
    UPDATE vector_codes SET servable = EXISTS (SELECT 1 FROM servable_items WHERE item_id = new.item_id)
    WHERE vector_id = new.item_id * 4;
    UPDATE vector_codes SET servable = EXISTS (SELECT 1 FROM servable_items WHERE item_id = new.item_id)
    WHERE vector_id = new.item_id * 4 + 1;
    UPDATE vector_codes SET servable = EXISTS (SELECT 1 FROM servable_items WHERE item_id = new.item_id)
    WHERE vector_id = new.item_id * 4 + 2;
    UPDATE vector_codes SET servable = EXISTS (SELECT 1 FROM servable_items WHERE item_id = new.item_id)
    WHERE vector_id = new.item_id * 4 + 3;
END;

-- (no WHEN on vector_codes_items: deleting an item may cascade to that table first)
CREATE TRIGGER vector_codes_delete AFTER DELETE ON item_embeddings BEGIN
    DELETE FROM vector_codes WHERE vector_id = old.item_id * 4;
    DELETE FROM vector_codes WHERE vector_id = old.item_id * 4 + 1;
    DELETE FROM vector_codes WHERE vector_id = old.item_id * 4 + 2;
    DELETE FROM vector_codes WHERE vector_id = old.item_id * 4 + 3;
    DELETE FROM vector_codes_items WHERE item_id = old.item_id;
END;

-- 021: a person's privacy is a decision, as safety is, and decisions follow the meme.
-- `privacy_decisions` holds what keeps a meme private besides its files' metadata: the owner's
-- `mambo private` (decider_kind 'person'), or metadata that said private and now names no file
-- (a sidecar or manifest line left behind when its image was renamed: decider_kind 'metadata'),
-- kept until the owner decides otherwise. `follows` (both tables): the meme a person decided on,
-- on the rows of its near-identical copies, which carry the same decision; NULL on that meme's own
-- row. Keyed by content, so a decision outlives the bytes it was made on.
CREATE TABLE privacy_decisions (
    sha256       TEXT PRIMARY KEY CHECK (length(sha256) = 64),
    decided_by   TEXT NOT NULL CHECK (length(decided_by) > 0),
    decider_kind TEXT NOT NULL DEFAULT 'person' CHECK (decider_kind IN ('person', 'metadata')),
    note         TEXT NOT NULL DEFAULT '',
    follows      TEXT CHECK (follows IS NULL OR length(follows) = 64),
    decided_at   TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
ALTER TABLE safety_decisions ADD COLUMN follows TEXT CHECK (follows IS NULL OR length(follows) = 64);

-- 023: the words of the caption's run-together tokens (mambomeme/words.py), held by both indexes
-- after the caption (item_search_text); NULL until computed (the next `mambo add`).
ALTER TABLE items ADD COLUMN ocr_words TEXT;
-- 024: the caption with the words of each run-together token right after it ('' when none), which
-- both indexes hold in place of the caption (item_search_text); NULL until computed.
ALTER TABLE items ADD COLUMN ocr_spaced TEXT;
-- Split words computed or read in place are indexed; none found (NULL -> '') leaves the index alone.
CREATE TRIGGER items_fts_words AFTER UPDATE OF ocr_words, ocr_spaced ON items
WHEN coalesce(old.ocr_words, '') <> coalesce(new.ocr_words, '')
  OR coalesce(old.ocr_spaced, '') <> coalesce(new.ocr_spaced, '') BEGIN
    DELETE FROM items_fts WHERE rowid = old.item_id;
    DELETE FROM items_trigram WHERE rowid = old.item_id;
    INSERT INTO items_fts(rowid, title, template, entities, tags, ocr_text, description)
    SELECT * FROM item_search_text WHERE item_id = new.item_id;
    INSERT INTO items_trigram(rowid, title, template, entities, tags, ocr_text, description)
    SELECT * FROM item_search_text WHERE item_id = new.item_id;
END;

-- 023: more slang and abbreviations (source: abbrfix 26.2.2024's abbreviations.json, MIT, the
-- expansions people mean in a search; tfw, mfw, mrw and wifi added), searched in both forms and
-- never read as a typo.
INSERT OR IGNORE INTO query_aliases(term, expansion) VALUES
    ('tfw', 'that feeling when'), ('tfw', 'the face when'), ('mfw', 'my face when'),
    ('mrw', 'my reaction when'), ('wifi', 'wi fi'), ('wifi', 'wireless'), ('imho', 'in my humble opinion'),
    ('fomo', 'fear of missing out'), ('sus', 'suspicious'), ('ikr', 'i know right'), ('ftw', 'for the win'),
    ('af', 'as fuck'), ('afk', 'away from keyboard'), ('aka', 'also known as'), ('asap', 'as soon as possible'),
    ('atm', 'at the moment'), ('brb', 'be right back'), ('cya', 'see you'), ('dm', 'direct message'),
    ('dw', 'don''t worry'), ('gf', 'girlfriend'), ('bf', 'boyfriend'), ('gg', 'good game'),
    ('hmu', 'hit me up'), ('iirc', 'if i recall correctly'), ('ily', 'i love you'), ('jk', 'just kidding'),
    ('lmk', 'let me know'), ('np', 'no problem'), ('nsfw', 'not safe for work'), ('ofc', 'of course'),
    ('omw', 'on my way'), ('pov', 'point of view'), ('rofl', 'rolling on the floor laughing'),
    ('tbf', 'to be fair'), ('tmi', 'too much information'), ('ttyl', 'talk to you later'),
    ('wyd', 'what are you doing'), ('yolo', 'you only live once'), ('yw', 'you''re welcome'),
    ('fml', 'fuck my life'), ('gtg', 'got to go'), ('op', 'original poster'), ('tldr', 'too long didn''t read'),
    ('stfu', 'shut up'), ('lmfao', 'laugh'), ('fyi', 'for your information'), ('omfg', 'oh my god'),
    ('wtf', 'what the fuck'), ('bff', 'best friends forever'), ('istg', 'i swear to god'),
    ('stg', 'swear to god'), ('hbu', 'how about you'), ('wbu', 'what about you'), ('gl', 'good luck'),
    ('og', 'original'), ('cba', 'can''t be arsed'), ('idfc', 'i don''t care'), ('idfk', 'i don''t know');

PRAGMA user_version = 25;
