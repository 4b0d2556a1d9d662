-- 022: the `library` view gains `abs_path`, each meme's file as an absolute path (its root's path
-- and its path under the root), so SQL finds the file to open without joining library_roots.
-- Last among the view's columns: `SELECT *` keeps its earlier columns where they were.
DROP VIEW library;

CREATE VIEW library AS
SELECT i.item_id, i.sha256, r.name AS root, f.rel_path AS path, i.format, i.width, i.height,
       i.title, e.template, e.template_source, e.entities, e.tags, e.description, i.ocr_text,
       i.safety, i.rights, i.private, i.creator, i.licence, i.source_url,
       i.perceptual_group, i.template_group, t.slug AS recognised_template, i.template_score, i.derived,
       (SELECT count(*) - 1 FROM files d WHERE d.item_id = i.item_id) AS duplicate_count,
       (p.item_id IS NOT NULL) AS has_preview,
       rtrim(r.path, '/') || '/' || f.rel_path AS abs_path
FROM items i
JOIN item_effective e ON e.item_id = i.item_id
JOIN files f ON f.file_id = (SELECT min(file_id) FROM files WHERE item_id = i.item_id)
JOIN library_roots r ON r.root_id = f.root_id
LEFT JOIN templates t ON t.template_id = i.template_id
LEFT JOIN previews p ON p.item_id = i.item_id;
