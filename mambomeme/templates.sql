-- Named queries of templates (mambomeme/templates.py): the catalogue, recognition, derived fields and
-- group labels.
-- Each query starts with a `-- name: NAME` line and runs to the next. Parameters are apsw named
-- bindings (:name). Keep SQL here, not in Python strings. Every *.sql file of this folder is loaded
-- into one namespace (mambomeme/library.py): a name defined twice stops the program at import.

-- name: templates_brief
SELECT template_id, slug, source, entry_sha256 FROM templates;

-- name: insert_template
INSERT INTO templates(slug, name, aliases, description, source, source_url, entry_sha256, revision, anchors,
                      views_revision)
VALUES (:slug, :name, :aliases, :description, :source, :source_url, :entry_sha256, :revision,
        :anchors, :revision)
RETURNING template_id;

-- name: update_template_fields
-- A catalogue entry whose pictures did not change: its names, description and anchors in place
-- (a new revision, so items are checked against its anchors; its views keep views_revision).
UPDATE templates SET name = :name, aliases = :aliases, description = :description, source_url = :source_url,
                     entry_sha256 = :entry_sha256, revision = :revision, anchors = :anchors
WHERE template_id = :template_id;

-- name: template_view_prints
SELECT phash64, orb_xy, orb_desc FROM template_views WHERE template_id = :template_id ORDER BY view_id;

-- name: insert_template_view
INSERT INTO template_views(template_id, fingerprint_version, width, height, phash64, dhash64, band_phash64,
                           band_dhash64, color_layout, orb_xy, orb_desc, origin)
VALUES (:template_id, :fingerprint_version, :width, :height, :phash64, :dhash64, :band_phash64,
        :band_dhash64, :color_layout, :orb_xy, :orb_desc, :origin);

-- name: reset_items_of_template
-- Items recognised as a template that is going away: recognised again against every template.
UPDATE items SET template_id = NULL, template_score = NULL, recognised_revision = 0
WHERE template_id = :template_id;

-- name: delete_template
DELETE FROM templates WHERE template_id = :template_id;

-- name: template_index
-- The views of templates added or changed after a revision (0: all), for recognition.
SELECT v.view_id, v.template_id, v.orb_xy, v.orb_desc, v.origin ->> '$.h' AS orb_h
FROM template_views v JOIN templates t ON t.template_id = v.template_id
WHERE t.views_revision > :after_revision AND length(v.orb_desc) >= 64
ORDER BY v.view_id;

-- name: template_anchors
-- The anchors (fixed words and where they stand) of text-layout templates added or changed after a
-- revision (0: all).
SELECT template_id, anchors FROM templates
WHERE revision > :after_revision AND anchors <> '[]'
ORDER BY template_id;

-- name: template_by_slug
SELECT template_id, slug, name, source FROM templates WHERE slug = :slug;

-- name: template_by_name
-- A template a user names: by name, slug or alias (the user's own first).
SELECT template_id, slug, name, aliases, description FROM templates
WHERE lower(name) = lower(:name) OR slug = lower(:name)
   OR EXISTS (SELECT 1 FROM json_each(templates.aliases) a WHERE a.value = lower(:name))
ORDER BY source = 'user' DESC, lower(name) = lower(:name) DESC, template_id
LIMIT 1;

-- name: derive_inputs
SELECT i.template_id, i.template_score, i.perceptual_group, i.template_group, i.derived,
       t.name AS t_name, t.aliases AS t_aliases, t.description AS t_description, t.source AS t_source,
       t.slug AS t_slug
FROM items i LEFT JOIN templates t ON t.template_id = i.template_id
WHERE i.item_id = :item_id;

-- name: labels_for_item
SELECT label_id, item_id, scope, field, value FROM labels
WHERE (scope = 'item' AND item_id = :item_id)
   OR (scope = 'perceptual' AND group_id = :perceptual_group)
   OR (scope = 'template' AND group_id = :template_group);

-- name: set_derived
UPDATE items SET derived = :derived, updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
WHERE item_id = :item_id;

-- name: item_template_text
-- The name, aliases and anchors of the template an item was recognised as (templates.known_text).
SELECT t.name, t.aliases, t.anchors FROM items i JOIN templates t ON t.template_id = i.template_id
WHERE i.item_id = :item_id;

-- name: template_name
SELECT name FROM templates WHERE template_id = :template_id;

-- name: items_to_recognise
-- Items not yet matched against every template (newer templates, or their template was removed).
SELECT item_id, recognised_revision, template_id, template_score, ocr_boxes, ocr_text, template FROM items
WHERE recognised_revision < :revision
ORDER BY item_id;

-- name: set_recognition
UPDATE items SET template_id = :template_id, template_score = :template_score,
       recognised_revision = :recognised_revision, ocr_boxes = coalesce(:ocr_boxes, ocr_boxes)
WHERE item_id = :item_id;

-- name: set_template_group
UPDATE items SET template_group = :template_group WHERE item_id = :item_id;

-- name: item_files
SELECT r.path AS root_path, f.rel_path FROM files f JOIN library_roots r ON r.root_id = f.root_id
WHERE f.item_id = :item_id ORDER BY f.file_id;

-- name: items_in_scope
SELECT item_id FROM items
WHERE (:scope = 'item' AND item_id = :item_id)
   OR (:scope = 'perceptual' AND perceptual_group = :group_id)
   OR (:scope = 'template' AND template_group = :group_id)
ORDER BY item_id;
