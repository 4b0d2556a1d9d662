-- Named queries of reading a query (mambomeme/query_plan.py): the known templates a query may name.
-- Each query starts with a `-- name: NAME` line and runs to the next. Parameters are apsw named
-- bindings (:name). Every *.sql file of this folder is loaded into one namespace (mambomeme/library.py).

-- name: template_names
SELECT template_id, name, aliases FROM templates ORDER BY template_id;

-- name: template_count
SELECT count(*) FROM templates;

-- name: template_held
-- Whether the library holds a meme it may show of the template: recognised as it, or whose template
-- field (a sidecar's, a label's, a recognised template's names) holds one of its names (:match, an
-- FTS5 expression of quoted phrases on the template column).
SELECT EXISTS (SELECT 1 FROM items i JOIN servable_items s USING (item_id) WHERE i.template_id = :template_id)
    OR EXISTS (SELECT 1 FROM items_fts JOIN servable_items s ON s.item_id = items_fts.rowid
               WHERE items_fts MATCH :match);

-- name: vocabulary_completions
-- The library's words that start with an unfinished query word (:low up to :high, :low followed by
-- the last code point), the most common first: what the word stands for in the dense text.
SELECT v.term FROM vocabulary v WHERE v.term >= :low AND v.term < :high ORDER BY v.docs DESC, v.term LIMIT :most;

-- name: common_words
-- Query words in more than half of the library's documents: BM25 gives them no weight (FTS5
-- clamps a negative IDF to 1e-6), yet matching them makes FTS5 score most of the library.
SELECT v.term FROM vocabulary v, vocabulary_size z
WHERE v.term IN (SELECT value FROM json_each(:terms)) AND v.docs * 2 > z.documents;

-- name: vocabulary_by_prefix
-- The library's words from :low (inclusive) to :high (exclusive) of :shortest to :longest letters
-- (a two-letter prefix: :low 'we', :high 'wf'): the candidates for a correction two edits away
-- (queries.corrections), read by a range of the key.
SELECT v.term, v.docs FROM vocabulary v
WHERE v.term >= :low AND v.term < :high AND length(v.term) BETWEEN :shortest AND :longest;

-- name: vocabulary_docs
-- How many documents hold each of :terms (a JSON array); words the library never saw are absent.
SELECT v.term, v.docs FROM vocabulary v WHERE v.term IN (SELECT value FROM json_each(:terms));

-- name: vocabulary_size_documents
SELECT documents FROM vocabulary_size;

-- name: aliases
SELECT expansion FROM query_aliases WHERE term = :term;
