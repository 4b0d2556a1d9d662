-- 021: a person's privacy is a decision, as safety is, and decisions follow the meme.
-- `privacy_decisions` holds what keeps a meme private besides its files' metadata: the owner's
-- `mambo private` (decider_kind 'person'), or metadata that said private and now names no file
-- (a sidecar or manifest line left behind when its image was renamed: decider_kind 'metadata'),
-- kept until the owner decides otherwise. `follows` (both tables): the meme a person decided on,
-- on the rows of its near-identical copies, which carry the same decision; NULL on that meme's own
-- row. Keyed by content, so a decision outlives the bytes it was made on.
CREATE TABLE privacy_decisions (
    sha256       TEXT PRIMARY KEY CHECK (length(sha256) = 64),
    decided_by   TEXT NOT NULL CHECK (length(decided_by) > 0),
    decider_kind TEXT NOT NULL DEFAULT 'person' CHECK (decider_kind IN ('person', 'metadata')),
    note         TEXT NOT NULL DEFAULT '',
    follows      TEXT CHECK (follows IS NULL OR length(follows) = 64),
    decided_at   TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
ALTER TABLE safety_decisions ADD COLUMN follows TEXT CHECK (follows IS NULL OR length(follows) = 64);
