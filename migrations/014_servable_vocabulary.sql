-- 014: the words a search knows are those of the memes it may show (ingest.sql refresh_vocabulary,
-- which every ingest, prune and safety decision now runs): the vocabulary loses the documents of
-- hidden items, so typo correction never turns a query into a word only a hidden meme holds, and
-- such a word is unknown to the "no match" evidence. Counted here once for an existing library.
CREATE VIRTUAL TABLE IF NOT EXISTS temp.hidden_fts USING fts5(
    title, template, entities, tags, ocr_text, description,
    tokenize = 'unicode61 remove_diacritics 2'
);
CREATE VIRTUAL TABLE IF NOT EXISTS temp.hidden_vocab USING fts5vocab('temp', 'hidden_fts', 'row');
DELETE FROM vocabulary;
INSERT INTO vocabulary(term, docs) SELECT term, doc FROM items_vocab;
DELETE FROM temp.hidden_fts;
INSERT INTO temp.hidden_fts(rowid, title, template, entities, tags, ocr_text, description)
SELECT * FROM item_search_text WHERE item_id IN (SELECT item_id FROM hidden_items);
UPDATE vocabulary SET docs = docs - h.doc FROM temp.hidden_vocab h WHERE h.term = vocabulary.term;
DELETE FROM vocabulary WHERE docs <= 0;
DELETE FROM temp.hidden_fts;
UPDATE vocabulary_size SET documents = (SELECT count(*) FROM servable_items);
