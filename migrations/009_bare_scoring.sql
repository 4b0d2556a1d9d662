-- Migration 009: the bare condition is scored (mmts-clarifications, "The bare condition"). A file
-- whose withdrawn or private status comes only from its sidecar is left out of the bare corpus when
-- a bare run is scored, as if it were not in the folder: the run never shows it (it is recorded
-- here), and its grades count neither in the ideal DCG nor as an exact target of that run.
CREATE TABLE run_excluded_items (
    run_id  INTEGER NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
    item_id INTEGER NOT NULL,
    PRIMARY KEY (run_id, item_id)
) WITHOUT ROWID;

-- The ideal DCG@10 and relevant count each run is scored against: its judgement set's final grades,
-- less the items left out of that run's corpus.
CREATE VIEW run_ideal_dcg AS
SELECT s.run_id, s.query_id,
       sum(CASE WHEN s.pos <= 10 THEN (power(2, s.grade) - 1) / log2(s.pos + 1) ELSE 0 END) AS idcg,
       sum(s.grade >= 2) AS relevant_total
FROM (SELECT r.run_id, f.query_id, f.grade,
             row_number() OVER (PARTITION BY r.run_id, f.query_id ORDER BY f.grade DESC) AS pos
      FROM runs r JOIN final_judgements f ON f.set_id = r.set_id
      WHERE f.grade > 0
        AND NOT EXISTS (SELECT 1 FROM run_excluded_items x WHERE x.run_id = r.run_id AND x.item_id = f.item_id)) s
GROUP BY s.run_id, s.query_id;

DROP VIEW query_metrics;
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
       EXISTS (SELECT 1 FROM bench_exact_targets t WHERE t.query_id = q.query_id
               AND NOT EXISTS (SELECT 1 FROM run_excluded_items x WHERE x.run_id = r.run_id
                               AND x.item_id = t.item_id)) AS has_exact,
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
LEFT JOIN run_ideal_dcg ideal ON ideal.run_id = r.run_id AND ideal.query_id = q.query_id;
