-- Named queries of `mambo eval`'s commands (mambomeme/lab/evaluation_commands.py).
-- Each query starts with a `-- name: NAME` line and runs to the next. Parameters are apsw named
-- bindings (:name). Keep SQL here, not in Python strings. Every *.sql file of this folder is loaded
-- into one namespace (mambomeme/library.py): a name defined twice stops the program at import.

-- name: partition_query_count
SELECT count(*) FROM bench_queries WHERE partition_id = :partition_id;

-- name: final_labels
SELECT q.qid, (SELECT rel_path FROM files WHERE item_id = f.item_id ORDER BY file_id LIMIT 1) AS path,
       f.item_id, f.grade, f.safety, f.status, c.origin
FROM final_judgements f JOIN bench_queries q USING (query_id)
JOIN judgement_candidates c ON c.set_id = f.set_id AND c.query_id = f.query_id AND c.item_id = f.item_id
WHERE f.set_id = :set_id ORDER BY q.qid, path;

-- name: interaction_report
-- The spec's interaction metrics from opt-in events (render = a list shown for a query).
WITH renders AS (
    SELECT event_id, session, query, at, system, interface_version,
           lead(event_id) OVER (PARTITION BY session ORDER BY event_id) AS next_render
    FROM interaction_events WHERE kind = 'render'
), outcome AS (
    SELECT r.*, (SELECT min(e.rank) FROM interaction_events e WHERE e.session = r.session AND e.kind = 'choose'
                 AND e.event_id > r.event_id AND (r.next_render IS NULL OR e.event_id < r.next_render)) AS chosen_rank,
           (SELECT min(e.ms_since_render) FROM interaction_events e WHERE e.session = r.session
                AND e.kind = 'choose' AND e.event_id > r.event_id
                AND (r.next_render IS NULL OR e.event_id < r.next_render)) AS ms_to_choose,
           (SELECT count(*) FROM interaction_events e WHERE e.session = r.session AND e.kind IN ('preview', 'open', 'copy')
                AND e.event_id > r.event_id AND (r.next_render IS NULL OR e.event_id < r.next_render)) AS actions
    FROM renders r
)
SELECT system, interface_version, count(*) AS renders,
       avg(chosen_rank IS NOT NULL AND chosen_rank <= 10) AS choose_rate_top10,
       avg(coalesce(1.0 / chosen_rank, 0)) AS reciprocal_chosen_rank,
       avg(ms_to_choose) AS mean_ms_to_choose,
       avg(actions > 0) AS action_rate,
       avg(chosen_rank IS NULL AND next_render IS NOT NULL) AS reformulation_rate,
       avg(chosen_rank IS NULL AND next_render IS NULL) AS abandonment_rate
FROM outcome GROUP BY system, interface_version;

-- name: newest_batch
SELECT max(batch_id) FROM annotation_batches WHERE set_id = :set_id;

-- name: partition_slices
SELECT slice, count(*) AS queries,
       sum(subsets LIKE '%"safety"%') AS safety, sum(subsets LIKE '%"multi-cue"%') AS multi_cue
FROM bench_queries WHERE partition_id = :partition_id GROUP BY slice ORDER BY slice;

-- name: run_components
SELECT * FROM run_components WHERE run_id = :run_id;

-- name: set_origins
SELECT origin, count(*) FROM judgement_candidates WHERE set_id = :set_id GROUP BY origin ORDER BY origin;
