-- Named queries of the evaluation's scoring (mambomeme/lab/scoring.py).
-- Each query starts with a `-- name: NAME` line and runs to the next. Parameters are apsw named
-- bindings (:name). Keep SQL here, not in Python strings. Every *.sql file of this folder is loaded
-- into one namespace (mambomeme/library.py): a name defined twice stops the program at import.

-- name: rescore_run_ids
SELECT run_id FROM runs_needing_rescore;

-- name: insert_selftest_partition
-- The scratch partition the publication self-test publishes to and rolls back.
INSERT INTO bench_partitions(benchmark, version, partition, meta, source_sha256)
VALUES ('selftest', '0', 'dev', '{}', '') RETURNING partition_id;

-- name: insert_scorecard
INSERT INTO scorecards(partition_id, score_version, report_json, report_md) VALUES (:partition_id, :score_version,
    :report_json, :report_md) RETURNING scorecard_id;

-- name: published
SELECT publication_id, scorecard_id, published_at FROM published_scorecard;

-- name: insert_latency_run
INSERT INTO latency_runs(system_id, partition_id, interface, protocol, environment)
VALUES (:system_id, :partition_id, :interface, :protocol, :environment) RETURNING latency_run_id;

-- name: insert_latency_sample
INSERT INTO latency_samples(latency_run_id, seq, query_id, ms, error) VALUES (:id, :seq, :query_id, :ms, :error);

-- name: insert_publication
INSERT INTO publications(scorecard_id) VALUES (:scorecard_id) RETURNING publication_id;

-- name: interactions_without_opt_in
-- Privacy: events recorded while the library's opt-in setting is off are a critical violation.
SELECT count(*) FROM interaction_events
WHERE coalesce((SELECT value FROM settings WHERE key = 'interaction_events'), 'off') <> 'on';

-- name: latest_run
-- The annotated run a score reuses; bare runs (migration 004) are never the system's score.
SELECT r.run_id FROM runs r JOIN systems s USING (system_id)
WHERE s.name = :system AND r.partition_id = :partition_id AND r.finished_at IS NOT NULL
  AND r.set_id IS :set_id AND r.corpus_version_id = :cv AND r.system_id = :system_id AND r.library = 'annotated'
ORDER BY r.run_id DESC LIMIT 1;

-- name: rollback_publication
UPDATE publications SET rolled_back_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), rollback_reason = :reason
WHERE publication_id = :publication_id AND rolled_back_at IS NULL;

-- name: run
SELECT r.run_id, s.name AS system, s.version AS system_version, r.partition_id, r.set_id, r.corpus_version_id,
       r.config, r.code_commit, r.model_manifest, r.environment, r.seed, r.started_at, r.finished_at, r.library,
       r.bare_manifest_sha256
FROM runs r JOIN systems s USING (system_id) WHERE r.run_id = :run_id;

-- name: run_diagnostics
SELECT * FROM run_diagnostics WHERE run_id = :run_id ORDER BY slice;

-- name: run_query_metrics
SELECT * FROM query_metrics WHERE run_id = :run_id ORDER BY qid;

-- name: run_slices
SELECT * FROM slice_metrics WHERE run_id = :run_id ORDER BY slice;

-- name: scorecard
SELECT scorecard_id, partition_id, score_version, report_json, report_md, created_at FROM scorecards
WHERE scorecard_id = :scorecard_id;

-- name: unjudged_results
SELECT count(*) FROM run_results rr JOIN runs r USING (run_id)
WHERE rr.run_id = :run_id AND rr.rank <= 10
  AND NOT EXISTS (SELECT 1 FROM final_judgements f WHERE f.set_id = r.set_id AND f.query_id = rr.query_id
                  AND f.item_id = rr.item_id AND f.grade IS NOT NULL);

-- name: unjudged_share
-- How much of a run's top 10 has no final judgement (scored as grade 0): for a bare run, how far its
-- numbers can be trusted, since the pool was drawn from the annotated library's rankings.
SELECT count(*) AS results,
       coalesce(sum(NOT EXISTS (SELECT 1 FROM final_judgements f WHERE f.set_id = r.set_id
                                AND f.query_id = rr.query_id AND f.item_id = rr.item_id
                                AND f.grade IS NOT NULL)), 0) AS unjudged
FROM run_results rr JOIN runs r USING (run_id)
WHERE rr.run_id = :run_id AND rr.rank <= 10;
