-- 017: near-identical groups also compare the pictures. Two jokes on a template that prints words
-- of its own (a sign, a label) agree as text; the caption boxes' pixels of one preview aligned onto
-- the other tell them apart (mambomeme/images.py, same_caption_pixels; docs/grouping.md). The
-- comparison needs Python, so this asks for it: the next `mambo add` makes every group again in one
-- transaction (ingest.regroup) and clears the request.
INSERT INTO settings(key, value) VALUES ('regroup_perceptual', 'caption-pixels-1')
ON CONFLICT (key) DO UPDATE SET value = excluded.value;
