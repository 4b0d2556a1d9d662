-- 023: run-together words and internet slang.
-- * `items.ocr_words`: the words of the caption's run-together tokens ("THEFIFTH WALL" -> "the
--   fifth"), split by mambomeme/words.py; NULL until computed, which the next `mambo add` does for
--   every item from its stored caption (no OCR again). Both indexes hold them after the caption, so
--   the glued token and its words are both searchable.
-- * More slang and abbreviations in `query_aliases`: each is searched as typed and as its
--   expansion, and is never read as a typo of another word. Source: the abbreviation list of abbrfix
--   26.2.2024 (MIT, its abbreviations.json), the expansions kept that people mean in a search, plus
--   the reaction-meme phrases (tfw, mfw, mrw) and wifi, whose OCR and typed forms differ ("wi-fi").
ALTER TABLE items ADD COLUMN ocr_words TEXT;

DROP VIEW item_search_text;
CREATE VIEW item_search_text AS
SELECT e.item_id, e.title, e.template_text AS template,
       (SELECT group_concat(value, ' ; ') FROM json_each(e.entities)) AS entities,
       (SELECT group_concat(value, ' ; ') FROM json_each(e.tags)) AS tags,
       e.ocr_text || coalesce(' ' || nullif(i.ocr_words, ''), '') AS ocr_text, e.description
FROM item_effective e JOIN items i ON i.item_id = e.item_id;

-- Split words computed (NULL -> words) are indexed; none found (NULL -> '') leaves the index alone.
CREATE TRIGGER items_fts_words AFTER UPDATE OF ocr_words ON items
WHEN coalesce(old.ocr_words, '') <> coalesce(new.ocr_words, '') BEGIN
    DELETE FROM items_fts WHERE rowid = old.item_id;
    DELETE FROM items_trigram WHERE rowid = old.item_id;
    INSERT INTO items_fts(rowid, title, template, entities, tags, ocr_text, description)
    SELECT * FROM item_search_text WHERE item_id = new.item_id;
    INSERT INTO items_trigram(rowid, title, template, entities, tags, ocr_text, description)
    SELECT * FROM item_search_text WHERE item_id = new.item_id;
END;

INSERT OR IGNORE INTO query_aliases(term, expansion) VALUES
    ('tfw', 'that feeling when'), ('tfw', 'the face when'), ('mfw', 'my face when'),
    ('mrw', 'my reaction when'), ('wifi', 'wi fi'), ('wifi', 'wireless'), ('imho', 'in my humble opinion'),
    ('fomo', 'fear of missing out'), ('sus', 'suspicious'), ('ikr', 'i know right'), ('ftw', 'for the win'),
    ('af', 'as fuck'), ('afk', 'away from keyboard'), ('aka', 'also known as'), ('asap', 'as soon as possible'),
    ('atm', 'at the moment'), ('brb', 'be right back'), ('cya', 'see you'), ('dm', 'direct message'),
    ('dw', 'don''t worry'), ('gf', 'girlfriend'), ('bf', 'boyfriend'), ('gg', 'good game'),
    ('hmu', 'hit me up'), ('iirc', 'if i recall correctly'), ('ily', 'i love you'), ('jk', 'just kidding'),
    ('lmk', 'let me know'), ('np', 'no problem'), ('nsfw', 'not safe for work'), ('ofc', 'of course'),
    ('omw', 'on my way'), ('pov', 'point of view'), ('rofl', 'rolling on the floor laughing'),
    ('tbf', 'to be fair'), ('tmi', 'too much information'), ('ttyl', 'talk to you later'),
    ('wyd', 'what are you doing'), ('yolo', 'you only live once'), ('yw', 'you''re welcome'),
    ('fml', 'fuck my life'), ('gtg', 'got to go'), ('op', 'original poster'), ('tldr', 'too long didn''t read'),
    ('stfu', 'shut up'), ('lmfao', 'laugh'), ('fyi', 'for your information'), ('omfg', 'oh my god'),
    ('wtf', 'what the fuck'), ('bff', 'best friends forever'), ('istg', 'i swear to god'),
    ('stg', 'swear to god'), ('hbu', 'how about you'), ('wbu', 'what about you'), ('gl', 'good luck'),
    ('og', 'original'), ('cba', 'can''t be arsed'), ('idfc', 'i don''t care'), ('idfk', 'i don''t know');
