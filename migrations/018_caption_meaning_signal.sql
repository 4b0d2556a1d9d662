-- 018: a third safety signal, the caption's meaning (mambomeme/safety_meaning.py: a linear model over
-- the caption's stored vector), beside the text rules and the picture classifier. SQLite cannot
-- change a CHECK in place: the table is made again with the same rows (nothing else reads it by
-- its old name). The next `mambo add` (or `mambo safety recheck`) scores every embedded caption:
-- the library's safety_text_rules setting names the signals it was checked with.
PRAGMA legacy_alter_table = ON;
ALTER TABLE safety_signals RENAME TO safety_signals_018;
CREATE TABLE safety_signals (
    item_id    INTEGER NOT NULL REFERENCES items(item_id) ON DELETE CASCADE,
    signal     TEXT NOT NULL CHECK (signal IN ('text', 'picture', 'meaning')),
    engine_id  INTEGER NOT NULL REFERENCES safety_engines(engine_id),
    safety     TEXT NOT NULL CHECK (safety IN ('safe', 'sensitive', 'unsafe', 'critical')),
    rule       TEXT NOT NULL DEFAULT '',
    words      TEXT NOT NULL DEFAULT '[]' CHECK (json_type(words) = 'array'),
    score      REAL,
    at         TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    PRIMARY KEY (item_id, signal)
);
INSERT INTO safety_signals(item_id, signal, engine_id, safety, rule, words, score, at)
SELECT item_id, signal, engine_id, safety, rule, words, score, at FROM safety_signals_018;
DROP TABLE safety_signals_018;
PRAGMA legacy_alter_table = OFF;
