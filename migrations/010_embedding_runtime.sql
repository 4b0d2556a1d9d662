-- 010: the embedding manifest records which runtimes computed a model's vectors. Queries and new
-- vectors are now encoded by onnxruntime from an ONNX export of the same weights (mambomeme/embed.py);
-- every vector stored before this migration was computed by sentence-transformers on torch. The
-- runtime is not part of the model's identity (UNIQUE stays name, revision, weights, text recipe):
-- both runtimes give vectors with cosine >= 0.99999, so existing vectors stay valid.
ALTER TABLE embedding_models ADD COLUMN runtime TEXT NOT NULL DEFAULT 'sentence-transformers (torch)';
