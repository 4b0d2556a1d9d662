-- Named queries of the command line (mambomeme/cli.py).
-- Each query starts with a `-- name: NAME` line and runs to the next. Parameters are apsw named
-- bindings (:name). Keep SQL here, not in Python strings. Every *.sql file of this folder is loaded
-- into one namespace (mambomeme/library.py): a name defined twice stops the program at import.

-- name: privacy_followers
-- How many other items follow the privacy decision made on this one.
SELECT count(*) FROM privacy_decisions d JOIN items i ON i.sha256 = d.sha256
WHERE d.follows = (SELECT sha256 FROM items WHERE item_id = :item_id);

-- name: list_templates
SELECT t.template_id, t.slug, t.name, t.source, t.aliases, t.description, t.revision,
       (SELECT count(*) FROM template_views v WHERE v.template_id = t.template_id) AS views,
       (SELECT count(*) FROM items i WHERE i.template_id = t.template_id) AS items
FROM templates t
WHERE :source IS NULL OR t.source = :source
ORDER BY t.source DESC, t.slug;
