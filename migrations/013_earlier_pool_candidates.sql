-- 013: answers keyed by query id and content SHA-256 (`mambo bench import-judgements`, `mambo bench
-- key-answers`). Task ids are drawn in pool order, so any ranking change gave every task a new id and
-- the committed answers no longer loaded. A keyed answer loads into whatever pool a library holds; if
-- that pool lacks its pair, the pair joins the judgement set as a candidate of origin 'earlier-pool'.
-- SQLite cannot change a CHECK in place: the table is made again with the same rows. Legacy ALTER
-- keeps the views that read judgement_candidates (judgement_pairs) pointing at the new table.
PRAGMA legacy_alter_table = ON;
ALTER TABLE judgement_candidates RENAME TO judgement_candidates_012;
CREATE TABLE judgement_candidates (
    set_id   INTEGER NOT NULL REFERENCES judgement_sets(set_id) ON DELETE CASCADE,
    query_id INTEGER NOT NULL REFERENCES bench_queries(query_id),
    item_id  INTEGER NOT NULL,
    origin   TEXT NOT NULL CHECK (origin IN ('pool', 'gold', 'hard-negative', 'earlier-pool')),
    PRIMARY KEY (set_id, query_id, item_id)
) WITHOUT ROWID;
INSERT INTO judgement_candidates(set_id, query_id, item_id, origin)
SELECT set_id, query_id, item_id, origin FROM judgement_candidates_012;
DROP TABLE judgement_candidates_012;
PRAGMA legacy_alter_table = OFF;
