-- Named queries of the full-screen search (mambomeme/tui_shell.py): previews, interaction events.
-- Each query starts with a `-- name: NAME` line and runs to the next. Parameters are apsw named
-- bindings (:name). Keep SQL here, not in Python strings. Every *.sql file of this folder is loaded
-- into one namespace (mambomeme/library.py): a name defined twice stops the program at import.

-- name: preview
SELECT format, width, height, data FROM previews WHERE item_id = :item_id;

-- name: insert_interaction_event
INSERT INTO interaction_events(session, kind, query, item_id, rank, ms_since_render, system, system_version,
                               interface_version)
VALUES (:session, :kind, :query, :item_id, :rank, :ms_since_render, :system, :system_version, :interface_version);

-- name: servable_among
-- Which of the memes chosen (a JSON array of item ids) the library still serves.
SELECT value FROM json_each(:ids) WHERE value IN (SELECT item_id FROM servable_items);
