-- Named queries of the OCR engine (mambomeme/ocr.py): its identity row.
-- Each query starts with a `-- name: NAME` line and runs to the next. Parameters are apsw named
-- bindings (:name). Keep SQL here, not in Python strings. Every *.sql file of mambomeme/, its lab and
-- its ingest package is loaded into one namespace (mambomeme/library.py): a name defined twice stops
-- the program at import.

-- name: ocr_engine
SELECT engine_id FROM ocr_engines
WHERE name = :name AND version = :version AND models_sha256 = :models_sha256 AND params = :params;

-- name: insert_ocr_engine
INSERT INTO ocr_engines(name, version, models_sha256, params)
VALUES (:name, :version, :models_sha256, :params) RETURNING engine_id;
