-- 008: safety a user can trust. What each safety signal found (the text rules, the
-- picture classifier: class, rule, words that fired, score, engine), and a person's decision,
-- which wins over every automatic class, survives re-ingest and is recorded with who made it.
CREATE TABLE safety_engines (
    engine_id      INTEGER PRIMARY KEY,
    kind           TEXT NOT NULL CHECK (kind IN ('text', 'picture')),
    name           TEXT NOT NULL,
    version        TEXT NOT NULL,
    weights_sha256 TEXT NOT NULL DEFAULT '',
    params         TEXT NOT NULL DEFAULT '{}',
    UNIQUE (kind, name, version, weights_sha256, params)
);

CREATE TABLE safety_signals (
    item_id    INTEGER NOT NULL REFERENCES items(item_id) ON DELETE CASCADE,
    signal     TEXT NOT NULL CHECK (signal IN ('text', 'picture')),
    engine_id  INTEGER NOT NULL REFERENCES safety_engines(engine_id),
    safety     TEXT NOT NULL CHECK (safety IN ('safe', 'sensitive', 'unsafe', 'critical')),
    rule       TEXT NOT NULL DEFAULT '',
    words      TEXT NOT NULL DEFAULT '[]' CHECK (json_type(words) = 'array'),
    score      REAL,
    at         TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    PRIMARY KEY (item_id, signal)
);

CREATE TABLE safety_decisions (
    sha256           TEXT PRIMARY KEY CHECK (length(sha256) = 64),
    safety           TEXT NOT NULL CHECK (safety IN ('safe', 'sensitive', 'unsafe', 'critical')),
    decided_by       TEXT NOT NULL CHECK (length(decided_by) > 0),
    decider_kind     TEXT NOT NULL DEFAULT 'person' CHECK (decider_kind = 'person'),
    note             TEXT NOT NULL DEFAULT '',
    automatic_safety TEXT NOT NULL CHECK (automatic_safety IN ('safe', 'sensitive', 'unsafe', 'critical')),
    automatic_source TEXT NOT NULL,
    decided_at       TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);

CREATE TRIGGER safety_decision_made AFTER INSERT ON safety_decisions BEGIN
    UPDATE items SET safety = new.safety, safety_source = 'person:' || new.decided_by WHERE sha256 = new.sha256;
END;

CREATE TRIGGER safety_decision_changed AFTER UPDATE OF safety, decided_by ON safety_decisions BEGIN
    UPDATE items SET safety = new.safety, safety_source = 'person:' || new.decided_by WHERE sha256 = new.sha256;
END;

CREATE TRIGGER safety_decision_withdrawn AFTER DELETE ON safety_decisions BEGIN
    UPDATE items SET safety = old.automatic_safety, safety_source = old.automatic_source WHERE sha256 = old.sha256;
END;

CREATE TRIGGER safety_decision_on_new_item AFTER INSERT ON items
WHEN EXISTS (SELECT 1 FROM safety_decisions WHERE sha256 = new.sha256) BEGIN
    UPDATE safety_decisions SET automatic_safety = new.safety, automatic_source = new.safety_source
    WHERE sha256 = new.sha256;
    UPDATE items SET safety = (SELECT safety FROM safety_decisions WHERE sha256 = new.sha256),
                     safety_source = 'person:' || (SELECT decided_by FROM safety_decisions WHERE sha256 = new.sha256)
    WHERE item_id = new.item_id;
END;

CREATE TRIGGER safety_decision_on_reclass AFTER UPDATE OF safety, safety_source ON items
WHEN new.safety_source NOT LIKE 'person:%' AND EXISTS (SELECT 1 FROM safety_decisions WHERE sha256 = new.sha256) BEGIN
    UPDATE safety_decisions SET automatic_safety = new.safety, automatic_source = new.safety_source
    WHERE sha256 = new.sha256;
    UPDATE items SET safety = (SELECT safety FROM safety_decisions WHERE sha256 = new.sha256),
                     safety_source = 'person:' || (SELECT decided_by FROM safety_decisions WHERE sha256 = new.sha256)
    WHERE item_id = new.item_id;
END;
