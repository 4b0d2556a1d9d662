-- 024: the words of a run-together token stand where it stands.
-- `items.ocr_spaced`: the caption with the words of each run-together token right after it
-- ("THEFIFTH WALL" -> "THEFIFTH the fifth WALL"; '' when it has none), so both indexes hold the
-- words side by side with the caption word beside the glued run: a phrase typed from the meme
-- ("fifth wall") matches as a phrase. NULL until computed, which the next `mambo add` does from the
-- stored caption (no OCR again); until then an item's split words stay after its caption.
ALTER TABLE items ADD COLUMN ocr_spaced TEXT;

DROP VIEW item_search_text;
CREATE VIEW item_search_text AS
SELECT e.item_id, e.title, e.template_text AS template,
       (SELECT group_concat(value, ' ; ') FROM json_each(e.entities)) AS entities,
       (SELECT group_concat(value, ' ; ') FROM json_each(e.tags)) AS tags,
       coalesce(nullif(i.ocr_spaced, ''), e.ocr_text || coalesce(' ' || nullif(i.ocr_words, ''), '')) AS ocr_text,
       e.description
FROM item_effective e JOIN items i ON i.item_id = e.item_id;

-- Split words computed or read in place are indexed; none found (NULL -> '') leaves the index alone.
DROP TRIGGER items_fts_words;
CREATE TRIGGER items_fts_words AFTER UPDATE OF ocr_words, ocr_spaced ON items
WHEN coalesce(old.ocr_words, '') <> coalesce(new.ocr_words, '')
  OR coalesce(old.ocr_spaced, '') <> coalesce(new.ocr_spaced, '') BEGIN
    DELETE FROM items_fts WHERE rowid = old.item_id;
    DELETE FROM items_trigram WHERE rowid = old.item_id;
    INSERT INTO items_fts(rowid, title, template, entities, tags, ocr_text, description)
    SELECT * FROM item_search_text WHERE item_id = new.item_id;
    INSERT INTO items_trigram(rowid, title, template, entities, tags, ocr_text, description)
    SELECT * FROM item_search_text WHERE item_id = new.item_id;
END;
