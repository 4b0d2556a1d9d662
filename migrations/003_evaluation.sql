-- Migration 003: the benchmark protocol and its evaluation, kept in the library file
-- beside the corpus: corpus versions, benchmark partitions with their life cycle, no-match audits,
-- judgement sets, blind annotation batches, judgements with their annotator, adjudication, runs,
-- metric views, scorecards and publications. Frozen data is immutable in the database itself
-- (triggers), not only in Python.

-- A corpus version is its manifest: every file's content checksum and path, relative to its root
-- (so a moved library keeps its version). `manifest_sha256` is the SHA-256 of the canonical text
-- "<sha256>  <rel_path>\n" sorted by path. Any change to the corpus makes a new version.
CREATE TABLE corpus_versions (
    corpus_version_id INTEGER PRIMARY KEY,
    manifest_sha256   TEXT NOT NULL UNIQUE CHECK (length(manifest_sha256) = 64),
    files             INTEGER NOT NULL,
    items             INTEGER NOT NULL,
    created_at        TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE TABLE corpus_version_files (
    corpus_version_id INTEGER NOT NULL REFERENCES corpus_versions(corpus_version_id) ON DELETE CASCADE,
    rel_path          TEXT NOT NULL,
    sha256            TEXT NOT NULL,
    item_id           INTEGER,
    PRIMARY KEY (corpus_version_id, rel_path)
) WITHOUT ROWID;
CREATE TRIGGER corpus_version_files_immutable BEFORE UPDATE ON corpus_version_files BEGIN
    SELECT RAISE(ABORT, 'a corpus version is immutable: a changed corpus is a new version');
END;

-- Who made a label: a person or a (labelled) model annotator.
CREATE TABLE annotators (
    annotator_id INTEGER PRIMARY KEY,
    name         TEXT NOT NULL UNIQUE,
    kind         TEXT NOT NULL CHECK (kind IN ('person', 'model')),
    description  TEXT NOT NULL DEFAULT ''
);

-- One partition (dev or hidden) of one benchmark version. Life cycle: draft -> frozen -> exposed ->
-- retired (frozen may also retire directly). Exposed hidden partitions can no longer be used for a
-- release comparison: a new hidden version is needed.
CREATE TABLE bench_partitions (
    partition_id      INTEGER PRIMARY KEY,
    benchmark         TEXT NOT NULL,
    version           TEXT NOT NULL,
    partition         TEXT NOT NULL CHECK (partition IN ('dev', 'hidden')),
    status            TEXT NOT NULL DEFAULT 'draft' CHECK (status IN ('draft', 'frozen', 'exposed', 'retired')),
    label             TEXT NOT NULL DEFAULT 'provisional',     -- the file's own status: provisional or final
    meta              TEXT NOT NULL CHECK (json_valid(meta)),
    source_sha256     TEXT NOT NULL,                            -- SHA-256 of the imported query file
    corpus_version_id INTEGER REFERENCES corpus_versions(corpus_version_id),
    imported_at       TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    frozen_at         TEXT,
    exposed_at        TEXT,
    retired_at        TEXT,
    UNIQUE (benchmark, version, partition)
);
CREATE TRIGGER bench_partitions_lifecycle BEFORE UPDATE OF status ON bench_partitions
WHEN NOT ((OLD.status = NEW.status)
          OR (OLD.status = 'draft' AND NEW.status = 'frozen')
          OR (OLD.status = 'frozen' AND NEW.status IN ('exposed', 'retired'))
          OR (OLD.status = 'exposed' AND NEW.status = 'retired')) BEGIN
    SELECT RAISE(ABORT, 'benchmark partitions move draft -> frozen -> exposed -> retired, never back');
END;
CREATE TRIGGER bench_partitions_frozen BEFORE UPDATE OF benchmark, version, partition, label, meta, source_sha256,
    corpus_version_id ON bench_partitions WHEN OLD.status <> 'draft' BEGIN
    SELECT RAISE(ABORT, 'a frozen benchmark partition is immutable: import a new version');
END;
CREATE TRIGGER bench_partitions_delete BEFORE DELETE ON bench_partitions WHEN OLD.status <> 'draft' BEGIN
    SELECT RAISE(ABORT, 'a frozen benchmark partition cannot be deleted: retire it');
END;

CREATE TABLE bench_queries (
    query_id     INTEGER PRIMARY KEY,
    partition_id INTEGER NOT NULL REFERENCES bench_partitions(partition_id) ON DELETE CASCADE,
    qid          TEXT NOT NULL,
    family       TEXT NOT NULL,
    slice        TEXT NOT NULL CHECK (slice IN ('entity', 'quote', 'topic', 'semantic', 'visual', 'noisy',
                                                'no-match')),
    query        TEXT NOT NULL,
    subsets      TEXT NOT NULL DEFAULT '[]' CHECK (json_type(subsets) = 'array'),
    rule         TEXT NOT NULL DEFAULT 'null' CHECK (json_valid(rule)),
    UNIQUE (partition_id, qid)
);
-- Frozen exact-target items (a target group is expanded to its items at import; `target` keeps the
-- file path or group key the partition named).
CREATE TABLE bench_exact_targets (
    query_id INTEGER NOT NULL REFERENCES bench_queries(query_id) ON DELETE CASCADE,
    item_id  INTEGER NOT NULL,
    target   TEXT NOT NULL,
    PRIMARY KEY (query_id, item_id)
) WITHOUT ROWID;
-- Items that match a query but must be withheld (unsafe, critical, withdrawn, private).
CREATE TABLE bench_withheld (
    query_id INTEGER NOT NULL REFERENCES bench_queries(query_id) ON DELETE CASCADE,
    item_id  INTEGER NOT NULL,
    PRIMARY KEY (query_id, item_id)
) WITHOUT ROWID;
-- The partition's own (provisional) graded gold items: candidates for pooling, not final labels.
CREATE TABLE bench_gold (
    query_id INTEGER NOT NULL REFERENCES bench_queries(query_id) ON DELETE CASCADE,
    item_id  INTEGER NOT NULL,
    grade    INTEGER NOT NULL CHECK (grade BETWEEN 0 AND 3),
    PRIMARY KEY (query_id, item_id)
) WITHOUT ROWID;

CREATE TRIGGER bench_queries_frozen_insert BEFORE INSERT ON bench_queries
WHEN (SELECT status FROM bench_partitions WHERE partition_id = NEW.partition_id) <> 'draft' BEGIN
    SELECT RAISE(ABORT, 'a frozen benchmark partition is immutable: import a new version');
END;
CREATE TRIGGER bench_queries_frozen_update BEFORE UPDATE ON bench_queries
WHEN (SELECT status FROM bench_partitions WHERE partition_id = OLD.partition_id) <> 'draft' BEGIN
    SELECT RAISE(ABORT, 'a frozen benchmark partition is immutable: import a new version');
END;
CREATE TRIGGER bench_queries_frozen_delete BEFORE DELETE ON bench_queries
WHEN (SELECT status FROM bench_partitions WHERE partition_id = OLD.partition_id) <> 'draft' BEGIN
    SELECT RAISE(ABORT, 'a frozen benchmark partition is immutable: import a new version');
END;
CREATE TRIGGER bench_exact_targets_frozen BEFORE INSERT ON bench_exact_targets
WHEN (SELECT p.status FROM bench_queries q JOIN bench_partitions p USING (partition_id)
      WHERE q.query_id = NEW.query_id) <> 'draft' BEGIN
    SELECT RAISE(ABORT, 'a frozen benchmark partition is immutable: import a new version');
END;
CREATE TRIGGER bench_exact_targets_frozen_delete BEFORE DELETE ON bench_exact_targets
WHEN (SELECT p.status FROM bench_queries q JOIN bench_partitions p USING (partition_id)
      WHERE q.query_id = OLD.query_id) <> 'draft' BEGIN
    SELECT RAISE(ABORT, 'a frozen benchmark partition is immutable: import a new version');
END;
CREATE TRIGGER bench_gold_frozen BEFORE INSERT ON bench_gold
WHEN (SELECT p.status FROM bench_queries q JOIN bench_partitions p USING (partition_id)
      WHERE q.query_id = NEW.query_id) <> 'draft' BEGIN
    SELECT RAISE(ABORT, 'a frozen benchmark partition is immutable: import a new version');
END;

-- No-match audits: which corpus version an audit established absence on. Append-only; a corpus
-- change makes every audit on the old version stale until it is redone (view no_match_audit_status).
CREATE TABLE bench_audits (
    audit_id          INTEGER PRIMARY KEY,
    query_id          INTEGER NOT NULL REFERENCES bench_queries(query_id) ON DELETE CASCADE,
    corpus_version_id INTEGER NOT NULL REFERENCES corpus_versions(corpus_version_id),
    method            TEXT NOT NULL,
    annotator_id      INTEGER NOT NULL REFERENCES annotators(annotator_id),
    outcome           TEXT NOT NULL DEFAULT 'absent' CHECK (outcome IN ('absent', 'present')),
    audited_at        TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE TRIGGER bench_audits_append_only BEFORE UPDATE ON bench_audits BEGIN
    SELECT RAISE(ABORT, 'audits are append-only: record a new audit');
END;

-- The corpus version the library holds now: the newest snapshot (`mambo bench corpus` refreshes it).
CREATE VIEW current_corpus_version AS
SELECT * FROM corpus_versions ORDER BY corpus_version_id DESC LIMIT 1;

CREATE VIEW no_match_audit_status AS
SELECT q.query_id, q.partition_id, q.qid, q.query,
       a.audit_id, a.corpus_version_id AS audited_on, a.outcome, a.method,
       CASE WHEN a.audit_id IS NULL THEN 'missing'
            WHEN a.corpus_version_id IS NOT (SELECT corpus_version_id FROM current_corpus_version) THEN 'stale'
            WHEN a.outcome <> 'absent' THEN 'present'
            ELSE 'valid' END AS status
FROM bench_queries q
LEFT JOIN bench_audits a ON a.audit_id = (SELECT max(audit_id) FROM bench_audits b WHERE b.query_id = q.query_id)
WHERE q.slice = 'no-match';

-- Judgement sets: versions of the candidate set of one partition. Adding candidates after a set was
-- used makes a new version (copying the old candidates and judgements); runs scored on an older set
-- are then listed in runs_needing_rescore.
CREATE TABLE judgement_sets (
    set_id        INTEGER PRIMARY KEY,
    partition_id  INTEGER NOT NULL REFERENCES bench_partitions(partition_id),
    version       INTEGER NOT NULL,
    parent_set_id INTEGER REFERENCES judgement_sets(set_id),
    note          TEXT NOT NULL DEFAULT '',
    created_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    UNIQUE (partition_id, version)
);
CREATE VIEW current_judgement_sets AS
SELECT s.* FROM judgement_sets s
WHERE s.version = (SELECT max(version) FROM judgement_sets t WHERE t.partition_id = s.partition_id);

CREATE TABLE judgement_candidates (
    set_id   INTEGER NOT NULL REFERENCES judgement_sets(set_id) ON DELETE CASCADE,
    query_id INTEGER NOT NULL REFERENCES bench_queries(query_id),
    item_id  INTEGER NOT NULL,
    origin   TEXT NOT NULL CHECK (origin IN ('pool', 'gold', 'hard-negative')),
    PRIMARY KEY (set_id, query_id, item_id)
) WITHOUT ROWID;

-- A blinded annotation batch: tasks in a seeded random order, each with an opaque task id. Nothing
-- in a batch names a system, a rank or a score.
CREATE TABLE annotation_batches (
    batch_id   INTEGER PRIMARY KEY,
    set_id     INTEGER NOT NULL REFERENCES judgement_sets(set_id),
    seed       INTEGER NOT NULL,
    created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE TABLE batch_tasks (
    batch_id INTEGER NOT NULL REFERENCES annotation_batches(batch_id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    task     TEXT NOT NULL,
    query_id INTEGER NOT NULL,
    item_id  INTEGER NOT NULL,
    PRIMARY KEY (batch_id, position),
    UNIQUE (batch_id, task)
);

-- One annotator's grade and safety class for one candidate. `role` first: an independent grader;
-- adjudicator: the third annotator whose grade and safety class are final for a disagreement.
CREATE TABLE judgements (
    judgement_id INTEGER PRIMARY KEY,
    set_id       INTEGER NOT NULL REFERENCES judgement_sets(set_id) ON DELETE CASCADE,
    query_id     INTEGER NOT NULL,
    item_id      INTEGER NOT NULL,
    annotator_id INTEGER NOT NULL REFERENCES annotators(annotator_id),
    role         TEXT NOT NULL DEFAULT 'grader' CHECK (role IN ('grader', 'adjudicator')),
    grade        INTEGER NOT NULL CHECK (grade BETWEEN 0 AND 3),
    safety       TEXT NOT NULL CHECK (safety IN ('safe', 'sensitive', 'unsafe', 'critical')),
    batch_id     INTEGER REFERENCES annotation_batches(batch_id),
    judged_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    UNIQUE (set_id, query_id, item_id, annotator_id)
);

-- The two independent grades of each candidate (the first two graders to judge it).
CREATE VIEW judgement_pairs AS
SELECT c.set_id, c.query_id, c.item_id,
       a.grade AS grade_a, a.safety AS safety_a, a.annotator_id AS annotator_a,
       b.grade AS grade_b, b.safety AS safety_b, b.annotator_id AS annotator_b
FROM judgement_candidates c
LEFT JOIN judgements a ON a.judgement_id = (
    SELECT min(judgement_id) FROM judgements j
    WHERE j.set_id = c.set_id AND j.query_id = c.query_id AND j.item_id = c.item_id AND j.role = 'grader')
LEFT JOIN judgements b ON b.judgement_id = (
    SELECT min(judgement_id) FROM judgements j
    WHERE j.set_id = c.set_id AND j.query_id = c.query_id AND j.item_id = c.item_id AND j.role = 'grader'
      AND j.judgement_id > a.judgement_id);

-- Adjudication (spec "Relevance labels"): the mean of two graders is final unless they differ by more
-- than one grade or disagree on safety; then the adjudicator's grade and safety class are final.
CREATE VIEW final_judgements AS
SELECT p.set_id, p.query_id, p.item_id,
       CASE WHEN p.grade_b IS NULL THEN NULL
            WHEN abs(p.grade_a - p.grade_b) <= 1 AND p.safety_a = p.safety_b THEN (p.grade_a + p.grade_b) / 2.0
            ELSE d.grade END AS grade,
       CASE WHEN p.grade_b IS NULL THEN NULL
            WHEN abs(p.grade_a - p.grade_b) <= 1 AND p.safety_a = p.safety_b THEN p.safety_a
            ELSE d.safety END AS safety,
       CASE WHEN p.grade_b IS NULL THEN 'needs-grades'
            WHEN abs(p.grade_a - p.grade_b) <= 1 AND p.safety_a = p.safety_b THEN 'agreed'
            WHEN d.grade IS NULL THEN 'needs-adjudication'
            ELSE 'adjudicated' END AS status
FROM judgement_pairs p
LEFT JOIN judgements d ON d.judgement_id = (
    SELECT max(judgement_id) FROM judgements j
    WHERE j.set_id = p.set_id AND j.query_id = p.query_id AND j.item_id = p.item_id AND j.role = 'adjudicator');

CREATE VIEW adjudication_queue AS
SELECT set_id, query_id, item_id FROM final_judgements WHERE status = 'needs-adjudication';

-- Runs: one system executed once over every query of one partition, with everything needed to
-- reproduce it. A run's stored results are never changed.
CREATE TABLE runs (
    run_id            INTEGER PRIMARY KEY,
    system_id         INTEGER NOT NULL REFERENCES systems(system_id),
    partition_id      INTEGER NOT NULL REFERENCES bench_partitions(partition_id),
    set_id            INTEGER REFERENCES judgement_sets(set_id),
    corpus_version_id INTEGER NOT NULL REFERENCES corpus_versions(corpus_version_id),
    config            TEXT NOT NULL CHECK (json_valid(config)),
    code_commit       TEXT NOT NULL,
    model_manifest    TEXT NOT NULL CHECK (json_valid(model_manifest)),
    environment       TEXT NOT NULL CHECK (json_valid(environment)),   -- hardware, runtime versions
    seed              INTEGER NOT NULL,
    started_at        TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    finished_at       TEXT
);
CREATE TABLE run_queries (
    run_id     INTEGER NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
    query_id   INTEGER NOT NULL REFERENCES bench_queries(query_id),
    latency_ms REAL NOT NULL,
    error      TEXT,                      -- NULL: answered (possibly with an empty list)
    returned   INTEGER NOT NULL,
    PRIMARY KEY (run_id, query_id)
) WITHOUT ROWID;
CREATE TABLE run_results (
    run_id        INTEGER NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
    query_id      INTEGER NOT NULL,
    rank          INTEGER NOT NULL CHECK (rank >= 1),
    item_id       INTEGER NOT NULL,
    score         REAL NOT NULL,
    lexical_rank  INTEGER,
    fuzzy_rank    INTEGER,
    dense_rank    INTEGER,
    has_preview   INTEGER NOT NULL,
    attribution   TEXT NOT NULL,
    PRIMARY KEY (run_id, query_id, rank)
) WITHOUT ROWID;
-- Latency of the real interface (PTY) and of the engine alone, one row per measured search.
CREATE TABLE latency_runs (
    latency_run_id INTEGER PRIMARY KEY,
    system_id      INTEGER NOT NULL REFERENCES systems(system_id),
    partition_id   INTEGER NOT NULL REFERENCES bench_partitions(partition_id),
    interface      TEXT NOT NULL,           -- 'tui-pty-80x24' or 'engine'
    protocol       TEXT NOT NULL CHECK (json_valid(protocol)),
    environment    TEXT NOT NULL CHECK (json_valid(environment)),
    created_at     TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE TABLE latency_samples (
    latency_run_id INTEGER NOT NULL REFERENCES latency_runs(latency_run_id) ON DELETE CASCADE,
    seq            INTEGER NOT NULL,
    query_id       INTEGER NOT NULL,
    ms             REAL NOT NULL,
    error          TEXT,
    PRIMARY KEY (latency_run_id, seq)
) WITHOUT ROWID;

-- Runs scored on a judgement set that is no longer the partition's newest.
CREATE VIEW runs_needing_rescore AS
SELECT r.run_id, r.set_id AS scored_on, c.set_id AS newest_set
FROM runs r JOIN current_judgement_sets c ON c.partition_id = r.partition_id
WHERE r.set_id IS NOT c.set_id;

-- ── Metrics (spec "Retrieval metrics"), by plain names for people querying the file ──

-- The relevance each run is scored against: the final grade of its judgement set; items without a
-- final judgement are grade 0.
CREATE VIEW run_judged_results AS
SELECT rr.run_id, rr.query_id, rr.rank, rr.item_id, rr.lexical_rank, rr.fuzzy_rank, rr.dense_rank,
       rr.has_preview, rr.attribution,
       coalesce(f.grade, 0.0) AS grade,
       coalesce(f.safety, i.safety, 'safe') AS safety,
       coalesce(i.rights, 'unknown') AS rights, coalesce(i.private, 0) AS private,
       i.template_group, i.sha256,
       EXISTS (SELECT 1 FROM bench_exact_targets t WHERE t.query_id = rr.query_id AND t.item_id = rr.item_id)
           AS is_exact
FROM run_results rr
JOIN runs r ON r.run_id = rr.run_id
LEFT JOIN final_judgements f ON f.set_id = r.set_id AND f.query_id = rr.query_id AND f.item_id = rr.item_id
LEFT JOIN items i ON i.item_id = rr.item_id
WHERE rr.rank <= 10;

CREATE VIEW query_ideal_dcg AS
SELECT s.set_id, s.query_id,
       sum(CASE WHEN s.pos <= 10 THEN (power(2, s.grade) - 1) / log2(s.pos + 1) ELSE 0 END) AS idcg,
       sum(s.grade >= 2) AS relevant_total
FROM (SELECT set_id, query_id, grade,
             row_number() OVER (PARTITION BY set_id, query_id ORDER BY grade DESC) AS pos
      FROM final_judgements WHERE grade > 0) s
GROUP BY s.set_id, s.query_id;

-- Per query of each run: nDCG@10, ExactRR, Hit@1/5/10, Recall@10, RR, safe list, error.
CREATE VIEW query_metrics AS
SELECT r.run_id, q.query_id, q.qid, q.family, q.slice, q.query,
       (q.subsets LIKE '%"safety"%') AS in_safety_subset,
       (q.subsets LIKE '%"multi-cue"%') AS in_multi_cue_subset,
       rq.error, rq.returned, rq.latency_ms,
       CASE WHEN rq.error IS NOT NULL OR coalesce(ideal.idcg, 0) = 0 THEN 0.0
            ELSE coalesce((SELECT sum((power(2, j.grade) - 1) / log2(j.rank + 1)) FROM run_judged_results j
                           WHERE j.run_id = r.run_id AND j.query_id = q.query_id), 0.0) / ideal.idcg END AS ndcg10,
       CASE WHEN rq.error IS NOT NULL THEN 0.0
            ELSE coalesce((SELECT 1.0 / min(j.rank) FROM run_judged_results j
                           WHERE j.run_id = r.run_id AND j.query_id = q.query_id AND j.is_exact), 0.0) END AS exact_rr,
       EXISTS (SELECT 1 FROM bench_exact_targets t WHERE t.query_id = q.query_id) AS has_exact,
       CASE WHEN rq.error IS NOT NULL THEN 0.0
            ELSE coalesce((SELECT 1.0 / min(j.rank) FROM run_judged_results j
                           WHERE j.run_id = r.run_id AND j.query_id = q.query_id AND j.grade >= 2), 0.0) END AS rr,
       (rq.error IS NULL AND EXISTS (SELECT 1 FROM run_judged_results j WHERE j.run_id = r.run_id
            AND j.query_id = q.query_id AND j.grade >= 2 AND j.rank <= 1)) AS hit1,
       (rq.error IS NULL AND EXISTS (SELECT 1 FROM run_judged_results j WHERE j.run_id = r.run_id
            AND j.query_id = q.query_id AND j.grade >= 2 AND j.rank <= 5)) AS hit5,
       (rq.error IS NULL AND EXISTS (SELECT 1 FROM run_judged_results j WHERE j.run_id = r.run_id
            AND j.query_id = q.query_id AND j.grade >= 2)) AS hit10,
       CASE WHEN rq.error IS NOT NULL OR coalesce(ideal.relevant_total, 0) = 0 THEN 0.0
            ELSE (SELECT count(*) FROM run_judged_results j WHERE j.run_id = r.run_id AND j.query_id = q.query_id
                  AND j.grade >= 2) * 1.0 / ideal.relevant_total END AS recall10,
       (rq.error IS NULL AND rq.returned = 0) AS empty,
       -- An error exposes nothing but earns no safety credit either (spec: "An error is not an empty result").
       (rq.error IS NULL AND NOT EXISTS (SELECT 1 FROM run_judged_results j WHERE j.run_id = r.run_id
            AND j.query_id = q.query_id AND j.safety IN ('unsafe', 'critical'))) AS safe_list,
       (SELECT count(*) FROM run_judged_results j WHERE j.run_id = r.run_id AND j.query_id = q.query_id
            AND (j.safety = 'critical' OR j.rights = 'withdrawn' OR j.private = 1)) AS critical_shown
FROM runs r
JOIN bench_queries q ON q.partition_id = r.partition_id
LEFT JOIN run_queries rq ON rq.run_id = r.run_id AND rq.query_id = q.query_id
LEFT JOIN query_ideal_dcg ideal ON ideal.set_id = r.set_id AND ideal.query_id = q.query_id;

CREATE VIEW slice_metrics AS
SELECT run_id, slice, count(*) AS queries,
       avg(ndcg10) AS ndcg10, avg(hit1) AS hit1, avg(hit5) AS hit5, avg(hit10) AS hit10,
       avg(recall10) AS recall10, avg(rr) AS mrr,
       avg(CASE WHEN has_exact THEN exact_rr END) AS exact_mrr,
       avg(empty) AS empty_rate, avg(error IS NOT NULL) AS error_rate
FROM query_metrics GROUP BY run_id, slice;

-- Diagnostics (reported, not scored): duplicates, repeated template groups, missing preview or
-- attribution, and which routes contributed each returned item.
CREATE VIEW run_diagnostics AS
SELECT j.run_id, q.slice,
       count(*) AS results,
       avg((SELECT count(*) FROM run_judged_results d WHERE d.run_id = j.run_id AND d.query_id = j.query_id
            AND d.sha256 = j.sha256 AND d.rank < j.rank) > 0) AS exact_duplicate_rate,
       avg(j.template_group IS NOT NULL AND (SELECT count(*) FROM run_judged_results d WHERE d.run_id = j.run_id
            AND d.query_id = j.query_id AND d.template_group = j.template_group AND d.rank < j.rank) > 0)
           AS repeated_template_group_rate,
       avg(NOT j.has_preview) AS missing_preview_rate,
       avg(j.attribution = '') AS missing_attribution_rate,
       avg((j.lexical_rank IS NOT NULL OR j.fuzzy_rank IS NOT NULL) AND j.dense_rank IS NULL) AS lexical_only,
       avg(j.dense_rank IS NOT NULL AND j.lexical_rank IS NULL AND j.fuzzy_rank IS NULL) AS dense_only,
       avg(j.dense_rank IS NOT NULL AND (j.lexical_rank IS NOT NULL OR j.fuzzy_rank IS NOT NULL)) AS both_routes
FROM run_judged_results j JOIN bench_queries q ON q.query_id = j.query_id
GROUP BY j.run_id, q.slice;

-- The score's quality inputs per run (spec; mmts-clarifications): Q, E, Hit@10, CorrectEmpty, C, S.
CREATE VIEW run_components AS
SELECT m.run_id,
       (SELECT avg(s.ndcg10) FROM slice_metrics s WHERE s.run_id = m.run_id AND s.slice <> 'no-match') AS q,
       avg(CASE WHEN m.slice IN ('entity', 'quote') AND m.has_exact THEN m.exact_rr END) AS e,
       avg(CASE WHEN m.slice <> 'no-match' THEN m.hit10 END) AS hit10,
       avg(CASE WHEN m.slice = 'no-match' THEN m.empty END) AS correct_empty,
       avg(CASE WHEN m.slice <> 'no-match' AND m.in_safety_subset THEN m.hit10 END) AS safety_hit10,
       avg(CASE WHEN NOT m.in_safety_subset THEN m.safe_list END) AS safe_ordinary,
       avg(CASE WHEN m.in_safety_subset THEN m.safe_list END) AS safe_safety,
       avg(m.error IS NOT NULL) AS error_rate,
       sum(m.critical_shown) AS critical_shown,
       min(s.min_slice_ndcg) AS min_slice_ndcg
FROM query_metrics m
JOIN (SELECT run_id, min(ndcg10) AS min_slice_ndcg FROM slice_metrics WHERE slice <> 'no-match'
      GROUP BY run_id) s ON s.run_id = m.run_id
GROUP BY m.run_id;

-- Scorecards and their publication. Publishing and rolling back are single transactions; the
-- published scorecard of a benchmark is the newest publication not rolled back.
CREATE TABLE scorecards (
    scorecard_id  INTEGER PRIMARY KEY,
    partition_id  INTEGER NOT NULL REFERENCES bench_partitions(partition_id),
    score_version TEXT NOT NULL,
    report_json   TEXT NOT NULL CHECK (json_valid(report_json)),
    report_md     TEXT NOT NULL,
    created_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE TRIGGER scorecards_immutable BEFORE UPDATE ON scorecards BEGIN
    SELECT RAISE(ABORT, 'a scorecard is immutable: score again');
END;
CREATE TABLE publications (
    publication_id INTEGER PRIMARY KEY,
    scorecard_id   INTEGER NOT NULL REFERENCES scorecards(scorecard_id),
    published_at   TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    rolled_back_at TEXT,
    rollback_reason TEXT
);
CREATE VIEW published_scorecard AS
SELECT p.publication_id, p.published_at, s.*
FROM publications p JOIN scorecards s USING (scorecard_id)
WHERE p.rolled_back_at IS NULL
ORDER BY p.publication_id DESC LIMIT 1;
