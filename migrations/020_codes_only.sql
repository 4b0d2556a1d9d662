-- 020: a large library keeps int8 codes only. Over QUANTIZED_MIN_VECTORS (mambomeme/vectors.py) an
-- item's vectors live in vector_codes alone once quantized: the float vectors were 68 % of the file
-- at 300,000 memes (a million would need ~9 GB of them). Every reader of a vector takes the float
-- one when it is there (small libraries; items embedded since the last quantization) and the code
-- otherwise (vec_f32 of vec_to_json, normalised). The codes table is made again with chunks of 256
-- vectors: each partition fills its last chunk on average by half, and 1,024-vector chunks left
-- ~35 % of the table empty at 474 partitions.
CREATE TEMP TABLE codes_020 AS SELECT vector_id, cluster, embedding, servable FROM vector_codes;
DROP TABLE vector_codes;
CREATE VIRTUAL TABLE vector_codes USING vec0(
    vector_id INTEGER PRIMARY KEY,
    cluster integer partition key,
    embedding int8[768] distance_metric=l2,
    servable integer,
    chunk_size=256
);
INSERT INTO vector_codes(vector_id, cluster, embedding, servable)
SELECT vector_id, cluster, vec_int8(embedding), servable FROM temp.codes_020;
DROP TABLE temp.codes_020;
-- vec0 finds a partition's chunks by scanning its chunks table: at a million memes (12,289 chunks)
-- that cost ~20 ms a probed partition, whatever its size; with this index 0.1-2 ms.
CREATE INDEX vector_codes_chunks_partition ON vector_codes_chunks(partition00);

-- The checksum of each quantized item's codes (all fields, caption, picture, in that order):
-- `mambo check` reads it as it reads item_embeddings.vector_sha256 for float vectors.
ALTER TABLE vector_codes_items ADD COLUMN codes_sha256 TEXT;

-- Quantized items keep their codes only.
DELETE FROM item_vectors WHERE item_id IN (SELECT item_id FROM vector_codes_items);
DELETE FROM item_field_vectors WHERE (vector_id >> 2) IN (SELECT item_id FROM vector_codes_items);
