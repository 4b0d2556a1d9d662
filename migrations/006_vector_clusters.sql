-- 006: a coarse (IVF) index for the dense route, and a cheaper safety filter for the lexical one.
-- sqlite-vec 0.1.9 scans every float vector of a KNN at ~0.7 us each (no SIMD in the wheel): 84 ms
-- per query at 100k items, over the 60 ms a search may take. Large libraries are now clustered:
-- k-means centroids live in `vector_centroids`, each vector's nearest centroid is its vec0
-- PARTITION KEY `cluster`, and a search scans only the partitions of the centroids nearest the
-- query (mambo.py DENSE_INDEXES). Partition 0 holds vectors of a library without trained clusters,
-- so an untrained library answers exactly. vec0 cannot UPDATE a partition key: re-clustering
-- rewrites the vectors (mambo.py maintain_vector_index).
CREATE TEMP TABLE vectors_006 AS SELECT item_id, embedding, servable FROM item_vectors;

DROP TABLE item_vectors;

CREATE VIRTUAL TABLE item_vectors USING vec0(
    item_id INTEGER PRIMARY KEY,
    cluster integer partition key,
    embedding float[384] distance_metric=cosine,
    servable integer,
    chunk_size=128
);

INSERT INTO item_vectors(item_id, cluster, embedding, servable)
SELECT item_id, 0, embedding, servable FROM vectors_006;

DROP TABLE vectors_006;

CREATE VIRTUAL TABLE vector_centroids USING vec0(
    cluster INTEGER PRIMARY KEY,
    centroid float[384] distance_metric=cosine
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

-- The complement of servable_items, with a partial index so counting it costs what it holds.
-- The lexical route ranks FTS5 matches first and joins the servable view only for the top
-- depth + (hidden count) rows: joining every match before ranking doubled a common-word query's
-- cost (one word in 9,000 of 100,000 documents: 17 ms joined first, 8 ms for the ranking alone).
CREATE INDEX items_hidden ON items(item_id)
WHERE NOT (safety IN ('safe', 'sensitive') AND rights <> 'withdrawn' AND private = 0);

CREATE VIEW hidden_items AS
SELECT item_id FROM items
WHERE NOT (safety IN ('safe', 'sensitive') AND rights <> 'withdrawn' AND private = 0);

-- How many documents the vocabulary was counted over: a query word found in more than half of
-- them has no BM25 weight (FTS5 clamps its IDF to 1e-6), so it is left out of the FTS5 MATCH.
CREATE TABLE vocabulary_size (
    documents INTEGER NOT NULL
);
INSERT INTO vocabulary_size(documents) SELECT count(*) FROM items;
