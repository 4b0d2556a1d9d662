-- Named queries of the vocabulary (mambomeme/vocabulary.py): the words a search knows.
-- Each query starts with a `-- name: NAME` line and runs to the next. Parameters are apsw named
-- bindings (:name). Keep SQL here, not in Python strings. Every *.sql file of this folder is loaded
-- into one namespace (mambomeme/library.py): a name defined twice stops the program at import.

-- name: index_hidden_words
-- The documents of hidden items (unsafe, withdrawn, private), in a temporary FTS5 index with the
-- word index's tokenizer, counted by term (temp.hidden_vocab). Temporary tables only, so a
-- read-only library can be checked.
CREATE VIRTUAL TABLE IF NOT EXISTS temp.hidden_fts USING fts5(
    title, template, entities, tags, ocr_text, description,
    tokenize = 'unicode61 remove_diacritics 2'
);
CREATE VIRTUAL TABLE IF NOT EXISTS temp.hidden_vocab USING fts5vocab('temp', 'hidden_fts', 'row');
DELETE FROM temp.hidden_fts;
INSERT INTO temp.hidden_fts(rowid, title, template, entities, tags, ocr_text, description)
SELECT * FROM item_search_text WHERE item_id IN (SELECT item_id FROM hidden_items);

-- name: rewrite_vocabulary
-- Every indexed word, less the documents of hidden items (index_hidden_words, run first). So typo
-- correction never turns a query into a word only a hidden meme holds, and a name only a hidden
-- meme holds is unknown to "no match" as it is to the user.
DELETE FROM vocabulary;
INSERT INTO vocabulary(term, docs) SELECT term, doc FROM items_vocab;
UPDATE vocabulary SET docs = docs - h.doc FROM temp.hidden_vocab h WHERE h.term = vocabulary.term;
DELETE FROM vocabulary WHERE docs <= 0;
DELETE FROM temp.hidden_fts;
UPDATE vocabulary_size SET documents = (SELECT count(*) FROM servable_items);

-- name: vocabulary_differences
-- How far the vocabulary is from what rewrite_vocabulary would make of the word index now (after
-- index_hidden_words): the terms whose counts differ either way, and 1 when its document count is
-- not the number of servable items. 0: current.
WITH want AS (
    SELECT v.term, v.doc - coalesce(h.doc, 0) AS docs
    FROM items_vocab v LEFT JOIN temp.hidden_vocab h ON h.term = v.term
    WHERE v.doc - coalesce(h.doc, 0) > 0
)
SELECT (SELECT count(*) FROM (SELECT term, docs FROM want EXCEPT SELECT term, docs FROM vocabulary))
     + (SELECT count(*) FROM (SELECT term, docs FROM vocabulary EXCEPT SELECT term, docs FROM want))
     + ((SELECT documents FROM vocabulary_size) IS NOT (SELECT count(*) FROM servable_items));
