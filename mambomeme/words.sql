-- Named queries of run-together words (mambomeme/words.py): the split words of each caption.
-- Each query starts with a `-- name: NAME` line and runs to the next. Parameters are apsw named
-- bindings (:name). Every *.sql file of this folder is loaded into one namespace (mambomeme/library.py).

-- name: word_docs
-- How many documents of the word index hold each of :terms (a JSON array), read live from the index
-- (the vocabulary table is made again only at the end of a run); words it never saw are absent.
SELECT v.term, v.doc FROM items_vocab v WHERE v.term IN (SELECT value FROM json_each(:terms));

-- name: items_unsplit
-- Items whose split words were never computed (NULL): new ones, and every item of a library made
-- before the columns existed.
SELECT item_id, ocr_text FROM items WHERE ocr_words IS NULL OR ocr_spaced IS NULL ORDER BY item_id LIMIT :most;

-- name: set_ocr_words
-- The split words, and the caption with them where each glued token stands (one update: the index
-- trigger runs once).
UPDATE items SET ocr_words = :words, ocr_spaced = :spaced WHERE item_id = :item_id;

-- name: alias_terms
-- The words query_aliases expands (slang, abbreviations): words a split may give, and never split.
SELECT DISTINCT term FROM query_aliases;
