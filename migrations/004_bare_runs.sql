-- Migration 004: bare-library runs. Benchmark v1's corpus can also be ingested
-- bare (`mambo add --no-sidecars`, as a real downloads folder is), and `mambo score --bare LIBRARY`
-- runs every system against that second library with the annotated run's configuration. Its
-- results are mapped to this library's items by SHA-256 and stored here, beside the annotated runs,
-- so the same judgements and metric views score them. A bare run is a diagnostic: it is never the
-- system's score, never the "latest run" a score reuses, and never waits to be rescored (each
-- `mambo score --bare` searches the bare library afresh, since its derived fields can change
-- without its images changing).

-- `library`: which library the run searched. `bare_manifest_sha256`: the bare library's corpus
-- manifest (SHA-256 of its canonical "<sha256>  <path>" lines, as corpus_versions), set exactly
-- for bare runs.
ALTER TABLE runs ADD COLUMN library TEXT NOT NULL DEFAULT 'annotated' CHECK (library IN ('annotated', 'bare'));
ALTER TABLE runs ADD COLUMN bare_manifest_sha256 TEXT
    CHECK ((library = 'bare') = (bare_manifest_sha256 IS NOT NULL AND length(bare_manifest_sha256) = 64));

-- Runs scored on a judgement set that is no longer the partition's newest. Annotated runs only: a
-- bare run is never reused, so it never needs rescoring (and must not block the release check).
DROP VIEW runs_needing_rescore;
CREATE VIEW runs_needing_rescore AS
SELECT r.run_id, r.set_id AS scored_on, c.set_id AS newest_set
FROM runs r JOIN current_judgement_sets c ON c.partition_id = r.partition_id
WHERE r.set_id IS NOT c.set_id AND r.library = 'annotated';
