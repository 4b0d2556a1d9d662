-- Named queries of the evaluation (mambomeme/evaluation.py, scoring.py, evaluation_commands.py): the
-- benchmark protocol, runs and scoring. Tables and metric views are in schema.sql.
-- Each query starts with a `-- name: NAME` line and runs to the next. Parameters are apsw named
-- bindings (:name). Keep SQL here, not in Python strings. Every *.sql file of this folder is loaded
-- into one namespace (mambomeme/library.py): a name defined twice stops the program at import.

-- name: corpus_manifest
SELECT i.sha256, CASE WHEN (SELECT count(*) FROM library_roots) > 1 THEN r.name || ':' || f.rel_path
                      ELSE f.rel_path END AS path, f.item_id
FROM files f JOIN items i USING (item_id) JOIN library_roots r USING (root_id)
ORDER BY path;

-- name: corpus_version_by_sha
SELECT corpus_version_id FROM corpus_versions WHERE manifest_sha256 = :sha;

-- name: insert_corpus_version
INSERT INTO corpus_versions(manifest_sha256, files, items) VALUES (:sha, :files, :items)
RETURNING corpus_version_id;

-- name: insert_corpus_version_file
INSERT INTO corpus_version_files(corpus_version_id, rel_path, sha256, item_id) VALUES (:cv, :path, :sha, :item_id);

-- name: corpus_version
SELECT corpus_version_id, manifest_sha256, files, items, created_at FROM corpus_versions
WHERE corpus_version_id = :cv;

-- name: item_by_path
SELECT item_id FROM files WHERE rel_path = :path ORDER BY file_id LIMIT 1;

-- name: annotator_by_name
SELECT annotator_id, name, kind FROM annotators WHERE name = :name;

-- name: insert_annotator
INSERT INTO annotators(name, kind, description) VALUES (:name, :kind, :description) RETURNING annotator_id;

-- name: insert_partition
INSERT INTO bench_partitions(benchmark, version, partition, label, meta, source_sha256, corpus_version_id)
VALUES (:benchmark, :version, :partition, :label, :meta, :source_sha256, :cv) RETURNING partition_id;

-- name: partition_exists
SELECT partition_id, status FROM bench_partitions
WHERE benchmark = :benchmark AND version = :version AND partition = :partition;

-- name: delete_partition
DELETE FROM bench_partitions WHERE partition_id = :partition_id;

-- name: insert_query
INSERT INTO bench_queries(partition_id, qid, family, slice, query, subsets, rule)
VALUES (:partition_id, :qid, :family, :slice, :query, :subsets, :rule) RETURNING query_id;

-- name: insert_exact_target
INSERT OR IGNORE INTO bench_exact_targets(query_id, item_id, target) VALUES (:query_id, :item_id, :target);

-- name: insert_withheld
INSERT OR IGNORE INTO bench_withheld(query_id, item_id) VALUES (:query_id, :item_id);

-- name: insert_gold
INSERT INTO bench_gold(query_id, item_id, grade) VALUES (:query_id, :item_id, :grade)
ON CONFLICT (query_id, item_id) DO UPDATE SET grade = max(grade, excluded.grade);

-- name: insert_audit
INSERT INTO bench_audits(query_id, corpus_version_id, method, annotator_id, outcome)
VALUES (:query_id, :cv, :method, :annotator_id, :outcome);

-- name: list_partitions
SELECT p.partition_id, p.benchmark, p.version, p.partition, p.status, p.label,
       (SELECT count(*) FROM bench_queries q WHERE q.partition_id = p.partition_id) AS queries,
       (SELECT count(DISTINCT family) FROM bench_queries q WHERE q.partition_id = p.partition_id) AS families,
       (SELECT max(version) FROM judgement_sets s WHERE s.partition_id = p.partition_id) AS judgement_set,
       p.imported_at
FROM bench_partitions p ORDER BY p.partition_id;

-- name: partition
SELECT partition_id, benchmark, version, partition, status, label, meta, source_sha256, corpus_version_id,
       imported_at, frozen_at, exposed_at, retired_at
FROM bench_partitions WHERE partition_id = :partition_id;

-- name: set_partition_status
UPDATE bench_partitions SET status = :status,
    frozen_at = CASE WHEN :status = 'frozen' THEN strftime('%Y-%m-%dT%H:%M:%fZ', 'now') ELSE frozen_at END,
    exposed_at = CASE WHEN :status = 'exposed' THEN strftime('%Y-%m-%dT%H:%M:%fZ', 'now') ELSE exposed_at END,
    retired_at = CASE WHEN :status = 'retired' THEN strftime('%Y-%m-%dT%H:%M:%fZ', 'now') ELSE retired_at END
WHERE partition_id = :partition_id;

-- name: family_overlap
-- Query families this partition shares with another partition (dev vs hidden) of its benchmark.
SELECT DISTINCT q.family, o.partition || ' ' || o.version AS other
FROM bench_queries q
JOIN bench_partitions p ON p.partition_id = q.partition_id
JOIN bench_partitions o ON o.benchmark = p.benchmark AND o.partition <> p.partition
JOIN bench_queries oq ON oq.partition_id = o.partition_id AND oq.family = q.family
WHERE q.partition_id = :partition_id
ORDER BY q.family LIMIT 10;

-- name: group_overlap
-- Template or perceptual groups of judged-relevant or exact-target items shared across partitions.
WITH used AS (
    SELECT q.partition_id, x.item_id FROM bench_queries q
    JOIN (SELECT query_id, item_id FROM bench_gold WHERE grade >= 2
          UNION SELECT query_id, item_id FROM bench_exact_targets) x ON x.query_id = q.query_id
), groups AS (
    SELECT u.partition_id, 'template' AS kind, i.template_group AS grp, u.item_id FROM used u
    JOIN items i ON i.item_id = u.item_id WHERE i.template_group IS NOT NULL
    UNION ALL
    SELECT u.partition_id, 'perceptual', i.perceptual_group, u.item_id FROM used u
    JOIN items i ON i.item_id = u.item_id WHERE i.perceptual_group IS NOT NULL
)
SELECT DISTINCT g.kind, g.grp, o.partition || ' ' || o.version AS other,
       (SELECT rel_path FROM files WHERE item_id = g.item_id ORDER BY file_id LIMIT 1) AS example
FROM groups g
JOIN bench_partitions p ON p.partition_id = g.partition_id
JOIN bench_partitions o ON o.benchmark = p.benchmark AND o.partition <> p.partition
JOIN groups og ON og.partition_id = o.partition_id AND og.kind = g.kind AND og.grp = g.grp
WHERE g.partition_id = :partition_id
LIMIT 10;

-- name: partition_queries
SELECT query_id, qid, family, slice, query, subsets, rule FROM bench_queries
WHERE partition_id = :partition_id ORDER BY qid;

-- name: audit_status
SELECT query_id, qid, query, status, audited_on, method FROM no_match_audit_status
WHERE partition_id = :partition_id ORDER BY qid;

-- name: servable_items_matching
-- Servable items whose words (title, template, entities, tags, OCR text, description) contain any of
-- the query's content words: the canonical-field check of a no-match audit.
SELECT f.rowid AS item_id, (SELECT rel_path FROM files WHERE item_id = f.rowid ORDER BY file_id LIMIT 1) AS path
FROM items_fts f JOIN servable_items s ON s.item_id = f.rowid
WHERE items_fts MATCH :match LIMIT 20;

-- name: current_set
SELECT set_id, version FROM current_judgement_sets WHERE partition_id = :partition_id;

-- name: insert_set
INSERT INTO judgement_sets(partition_id, version, parent_set_id, note) VALUES (:partition_id, :version, :parent, :note)
RETURNING set_id;

-- name: copy_set
INSERT INTO judgement_candidates(set_id, query_id, item_id, origin)
SELECT :new, query_id, item_id, origin FROM judgement_candidates WHERE set_id = :old;

-- name: copy_set_judgements
INSERT INTO judgements(set_id, query_id, item_id, annotator_id, role, grade, safety, batch_id, judged_at)
SELECT :new, query_id, item_id, annotator_id, role, grade, safety, batch_id, judged_at
FROM judgements WHERE set_id = :old ORDER BY judgement_id;

-- name: set_is_used
SELECT (SELECT count(*) FROM judgements WHERE set_id = :set_id) + (SELECT count(*) FROM runs WHERE set_id = :set_id);

-- name: is_candidate
SELECT 1 FROM judgement_candidates WHERE set_id = :set_id AND query_id = :query_id AND item_id = :item_id;

-- name: insert_candidate
INSERT OR IGNORE INTO judgement_candidates(set_id, query_id, item_id, origin) VALUES (:set_id, :query_id, :item_id, :origin);

-- name: gold_and_exact
SELECT item_id FROM bench_gold WHERE query_id = :query_id
UNION SELECT item_id FROM bench_exact_targets WHERE query_id = :query_id;

-- name: candidates_to_grade
-- Candidates of a set that still lack two graders' judgements (a batch's tasks).
SELECT c.query_id, c.item_id FROM judgement_candidates c
WHERE c.set_id = :set_id
  AND (SELECT count(*) FROM judgements j WHERE j.set_id = c.set_id AND j.query_id = c.query_id
       AND j.item_id = c.item_id AND j.role = 'grader') < 2
ORDER BY c.query_id, c.item_id;

-- name: candidates_to_adjudicate
SELECT query_id, item_id FROM adjudication_queue WHERE set_id = :set_id ORDER BY query_id, item_id;

-- name: insert_batch
INSERT INTO annotation_batches(set_id, seed) VALUES (:set_id, :seed) RETURNING batch_id;

-- name: insert_task
INSERT INTO batch_tasks(batch_id, position, task, query_id, item_id) VALUES (:batch_id, :position, :task, :query_id, :item_id);

-- name: batch
SELECT batch_id, set_id, seed, created_at FROM annotation_batches WHERE batch_id = :batch_id;

-- name: batch_tasks_for
-- The tasks of a batch this annotator has not judged yet (resumable), in the batch's order.
SELECT t.position, t.task, t.query_id, t.item_id, q.query
FROM batch_tasks t JOIN bench_queries q USING (query_id)
JOIN annotation_batches b ON b.batch_id = t.batch_id
WHERE t.batch_id = :batch_id
  AND NOT EXISTS (SELECT 1 FROM judgements j WHERE j.set_id = b.set_id AND j.query_id = t.query_id
                  AND j.item_id = t.item_id AND j.annotator_id = :annotator_id)
ORDER BY t.position;

-- name: task_by_id
SELECT t.query_id, t.item_id, b.set_id FROM batch_tasks t JOIN annotation_batches b USING (batch_id)
WHERE t.batch_id = :batch_id AND t.task = :task;

-- name: task_key
-- What keys a task's answer without the task id: the query id and the candidate's content SHA-256
-- (and, for people reading the file, its first path).
SELECT q.qid, i.sha256, (SELECT rel_path FROM files WHERE item_id = t.item_id ORDER BY file_id LIMIT 1) AS path
FROM batch_tasks t JOIN bench_queries q USING (query_id) JOIN items i ON i.item_id = t.item_id
WHERE t.batch_id = :batch_id AND t.task = :task;

-- name: query_by_qid
SELECT query_id FROM bench_queries WHERE partition_id = :partition_id AND qid = :qid;

-- name: item_by_sha256
SELECT item_id FROM items WHERE sha256 = :sha256;

-- name: set_row
SELECT s.set_id, s.partition_id, s.version, (SELECT count(*) FROM runs r WHERE r.set_id = s.set_id) AS runs,
       s.set_id = (SELECT c.set_id FROM current_judgement_sets c WHERE c.partition_id = s.partition_id) AS current
FROM judgement_sets s WHERE s.set_id = :set_id;

-- name: candidate_view
-- What an annotator sees of a candidate: its content only, never a system, rank or score. The
-- effective fields (grading guide: the sidecar's description, or a recognised template's).
SELECT i.item_id, e.title, e.template, e.entities, e.tags, e.description, e.ocr_text, i.safety,
       (SELECT rel_path FROM files WHERE item_id = i.item_id ORDER BY file_id LIMIT 1) AS path,
       p.data AS preview
FROM items i JOIN item_effective e USING (item_id) LEFT JOIN previews p ON p.item_id = i.item_id
WHERE i.item_id = :item_id;

-- name: insert_judgement
INSERT INTO judgements(set_id, query_id, item_id, annotator_id, role, grade, safety, batch_id)
VALUES (:set_id, :query_id, :item_id, :annotator_id, :role, :grade, :safety, :batch_id)
ON CONFLICT (set_id, query_id, item_id, annotator_id) DO NOTHING;

-- name: judged_pairs
SELECT grade_a, grade_b, safety_a, safety_b FROM judgement_pairs WHERE set_id = :set_id AND grade_b IS NOT NULL;

-- name: judgement_status
SELECT status, count(*) FROM final_judgements WHERE set_id = :set_id GROUP BY status ORDER BY status;

-- name: set_annotators
SELECT DISTINCT a.name, a.kind, j.role FROM judgements j JOIN annotators a USING (annotator_id)
WHERE j.set_id = :set_id ORDER BY j.role, a.name;

-- name: gold_grade
SELECT grade FROM bench_gold WHERE query_id = :query_id AND item_id = :item_id;

-- name: insert_run
INSERT INTO runs(system_id, partition_id, set_id, corpus_version_id, config, code_commit, model_manifest, environment,
                 seed)
VALUES (:system_id, :partition_id, :set_id, :cv, :config, :code_commit, :model_manifest, :environment, :seed)
RETURNING run_id;

-- name: insert_bare_run
-- A run against the bare library (`mambo score --bare`): a diagnostic beside the annotated run, never
-- the system's score. Its results are stored under this library's item ids (mapped by SHA-256).
INSERT INTO runs(system_id, partition_id, set_id, corpus_version_id, config, code_commit, model_manifest, environment,
                 seed, library, bare_manifest_sha256)
VALUES (:system_id, :partition_id, :set_id, :cv, :config, :code_commit, :model_manifest, :environment, :seed, 'bare',
        :bare_sha)
RETURNING run_id;

-- name: finish_eval_run
UPDATE runs SET finished_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') WHERE run_id = :run_id;

-- name: insert_run_query
INSERT INTO run_queries(run_id, query_id, latency_ms, error, returned) VALUES (:run_id, :query_id, :ms, :error, :returned);

-- name: insert_run_result
INSERT INTO run_results(run_id, query_id, rank, item_id, score, lexical_rank, fuzzy_rank, dense_rank, has_preview,
                        attribution)
VALUES (:run_id, :query_id, :rank, :item_id, :score, :lex, :fuzzy, :dense, :has_preview, :attribution);

-- name: system_row
SELECT system_id, name, version, config FROM current_systems WHERE name = :name;

-- name: image_sha256s
-- Every ingested image's content checksum and one of its paths (the bare-library corpus check).
SELECT i.sha256, min(f.rel_path) AS path, i.item_id
FROM items i JOIN files f USING (item_id) GROUP BY i.item_id;

-- name: items_with_sidecar_metadata
SELECT count(*) FROM items WHERE metadata_source <> 'none';

-- name: hidden_by_rights_or_privacy
-- Items never served for their rights or privacy (withdrawn, private). Compared between the annotated
-- and the bare library: what only a sidecar said is left out of the bare corpus when it is scored.
SELECT item_id FROM items WHERE rights = 'withdrawn' OR private = 1;

-- name: insert_run_excluded
INSERT INTO run_excluded_items(run_id, item_id) VALUES (:run_id, :item_id);

-- name: embedding_manifest
-- Every embedding recipe the library has used, as a run records them.
SELECT name, revision, weights_sha256, dim, text_recipe FROM embedding_models ORDER BY model_id;

-- name: partition_of_set
SELECT partition_id FROM judgement_sets WHERE set_id = :set_id;

-- name: items_by_sha256
SELECT sha256, item_id FROM items;
