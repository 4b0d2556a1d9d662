-- 015: the embedding model is all-mpnet-base-v2 (dev v2's semantic slice 0.438 -> 0.594
-- annotated, 0.434 -> 0.663 bare, in the same hybrid; mambomeme/embed.py). Its vectors have 768
-- dimensions, and a vec0 table's dimension is fixed when it is made: the vector tables are made
-- again, empty, and the coarse index goes with them (it is trained again once there are vectors).
-- Every item's embedding row goes too, so `mambo add` embeds every item again with the new model
-- (ingest.sql items_to_embed_again), in batches that each commit: an interrupted run goes on where
-- it stopped. Meanwhile search uses the memes' words, and `mambo search` says how many wait.
DELETE FROM item_embeddings;

DROP TABLE item_vectors;
CREATE VIRTUAL TABLE item_vectors USING vec0(
    item_id INTEGER PRIMARY KEY,
    cluster integer partition key,
    embedding float[768] distance_metric=cosine,
    servable integer,
    chunk_size=128
);

DROP TABLE item_field_vectors;
CREATE VIRTUAL TABLE item_field_vectors USING vec0(
    vector_id INTEGER PRIMARY KEY,
    cluster integer partition key,
    embedding float[768] distance_metric=cosine,
    servable integer,
    chunk_size=128
);

DROP TABLE vector_centroids;
CREATE VIRTUAL TABLE vector_centroids USING vec0(
    cluster INTEGER PRIMARY KEY,
    centroid float[768] distance_metric=cosine
);
DELETE FROM vector_index;

DROP TABLE item_vectors_bit;
CREATE VIRTUAL TABLE item_vectors_bit USING vec0(
    item_id INTEGER PRIMARY KEY,
    embedding bit[768],
    servable integer
);
