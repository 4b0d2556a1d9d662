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
