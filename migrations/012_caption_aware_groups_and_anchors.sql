-- 012: near-identical means the same meme, and templates known by their fixed words.
-- * `templates.anchors`: the fixed words of a text-layout template (a banner's "marked safe from")
--   and where in the picture OCR must find them, as JSON [{"text": ..., "region": [x0, y0, x1, y1]}]
--   in fractions of the picture (templates/README.md, "Anchors"); '[]' for picture templates.
-- * Perceptual groups were made from pHash and word overlap, which joined different memes drawn on
--   one template (benchmark v1: 1,897 groups for 2,200 items, pairwise precision 0.25). The new
--   rule asks the picture AND the caption (mambomeme/images.py, near_identical). The comparison of
--   OCR lines needs Python, so this only asks for it: the next `mambo add` makes every group again
--   in one transaction (ingest.regroup), keeps labels with the items they were given to, and clears
--   the request.
-- * `templates.views_revision`: the templates revision at which the template's pictures (views)
--   last changed. An entry whose names, description or anchors change keeps its views, and items
--   are matched again only against views newer than their recognition (adding anchors to two
--   catalogue entries would otherwise have every item's pixels read again).
ALTER TABLE templates ADD COLUMN anchors TEXT NOT NULL DEFAULT '[]' CHECK (json_type(anchors) = 'array');
ALTER TABLE templates ADD COLUMN views_revision INTEGER NOT NULL DEFAULT 0;
UPDATE templates SET views_revision = revision;
INSERT INTO settings(key, value) VALUES ('regroup_perceptual', 'near-identical-2')
ON CONFLICT (key) DO UPDATE SET value = excluded.value;
