-- Named queries of an item's state (mambomeme/state.py): what an item's files say, and the one
-- statement that computes whether it may be shown. Each query starts with a `-- name: NAME` line.

-- name: file_metadata
-- Every file's own metadata of one item, the original (lowest file_id) first.
SELECT file_id, metadata, safety, rights, private, stated FROM files WHERE item_id = :item_id ORDER BY file_id;

-- name: set_item_metadata
-- The descriptive fields merged from every file (state.py merged_metadata); a template a sidecar
-- names sets the template group, an item with none keeps the one recognition gave it.
UPDATE items SET title = :title, template = :template, entities = :entities, tags = :tags,
       description = :description, source_url = :source_url, creator = :creator, licence = :licence,
       metadata_source = :metadata_source, template_group = coalesce(:template_group, template_group),
       updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
WHERE item_id = :item_id
  AND (title, template, entities, tags, description, source_url, creator, licence, metadata_source)
      IS NOT (:title, :template, :entities, :tags, :description, :source_url, :creator, :licence, :metadata_source)
   OR item_id = :item_id AND template_group IS NOT coalesce(:template_group, template_group);

-- name: apply_item_state
-- The one rule for what an item may show, recomputed from its inputs whenever one changes (a
-- sidecar or manifest line added, edited or removed; a copy added, moved or pruned; a signal; a
-- person's decision made or taken back):
-- * its own state: the strictest over EVERY file of the item (each file's sidecars and manifest
--   lines, doubt kept at the stricter reading) and its safety signals; a person's safety decision
--   on the content replaces the signals and the sidecars' class (the person reviewed it); a privacy
--   decision (the owner's, or metadata kept after its file was renamed) makes it private;
-- * its perceptual group: each field is raised to the strictest own value of the group, except
--   where the item's own files (or a decision) state that field readably: a person's word on that
--   copy wins. `inherited` keeps the own values of a raised item, `stated` the fields stated.
-- :item_id names one item's group (and the item); NULL: every item.
WITH scope AS MATERIALIZED (
    SELECT item_id FROM items
    WHERE :item_id IS NOT NULL
      AND (item_id = :item_id
           OR perceptual_group IN (SELECT perceptual_group FROM items WHERE item_id = :item_id))
    UNION ALL
    SELECT item_id FROM items WHERE :item_id IS NULL
),
by_file AS MATERIALIZED (
    SELECT f.item_id,
           max(CASE f.safety WHEN 'safe' THEN 0 WHEN 'sensitive' THEN 1 WHEN 'unsafe' THEN 2 WHEN 'critical' THEN 3 END)
               AS side_rank,
           max(CASE f.rights WHEN 'cleared' THEN 0 WHEN 'unknown' THEN 1 WHEN 'withdrawn' THEN 2 END) AS rights_rank,
           max(f.private) AS file_private,
           max(f.stated <> '[]') AS any_stated
    FROM files f WHERE f.item_id IN scope GROUP BY f.item_id
),
inputs AS MATERIALIZED (
    SELECT i.item_id, i.perceptual_group AS g, d.safety AS decided, d.decided_by, d.follows AS decided_follows,
           b.side_rank,
           t.safety AS text_safety, t.rule AS text_rule, p.safety AS picture_safety, p.rule AS picture_rule,
           m.safety AS meaning_safety, m.rule AS meaning_rule,
           b.rights_rank, max(coalesce(b.file_private, 0), pd.sha256 IS NOT NULL) AS file_private,
           CASE WHEN b.any_stated THEN (SELECT json_group_array(DISTINCT s.value) FROM files f, json_each(f.stated) s
                                        WHERE f.item_id = i.item_id) END AS file_stated
    FROM items i
    LEFT JOIN by_file b ON b.item_id = i.item_id
    LEFT JOIN safety_decisions d ON d.sha256 = i.sha256
    LEFT JOIN privacy_decisions pd ON pd.sha256 = i.sha256
    LEFT JOIN safety_signals t ON t.item_id = i.item_id AND t.signal = 'text'
    LEFT JOIN safety_signals p ON p.item_id = i.item_id AND p.signal = 'picture'
    LEFT JOIN safety_signals m ON m.item_id = i.item_id AND m.signal = 'meaning'
    WHERE i.item_id IN scope
),
ranked AS (
    SELECT *, coalesce(side_rank, 0) AS base_rank,
           CASE decided WHEN 'safe' THEN 0 WHEN 'sensitive' THEN 1 WHEN 'unsafe' THEN 2 WHEN 'critical' THEN 3
                        ELSE -1 END AS decided_rank,
           CASE text_safety WHEN 'safe' THEN 0 WHEN 'sensitive' THEN 1 WHEN 'unsafe' THEN 2 WHEN 'critical' THEN 3
                            ELSE -1 END AS text_rank,
           CASE picture_safety WHEN 'safe' THEN 0 WHEN 'sensitive' THEN 1 WHEN 'unsafe' THEN 2
                               WHEN 'critical' THEN 3 ELSE -1 END AS picture_rank,
           CASE meaning_safety WHEN 'safe' THEN 0 WHEN 'sensitive' THEN 1 WHEN 'unsafe' THEN 2
                               WHEN 'critical' THEN 3 ELSE -1 END AS meaning_rank
    FROM inputs
),
own AS MATERIALIZED (
    -- A person's decision on the content replaces the signals and the sidecars' class. A decision
    -- a near copy follows (made on another item of its group) replaces its signals only: its own
    -- sidecar's class still holds, so a wrong group never lowers what a copy's metadata says. On a
    -- tie the sidecar's class names the source, then the text rules', the caption meaning's, the picture's.
    SELECT item_id, g,
           CASE WHEN decided IS NOT NULL AND decided_follows IS NULL THEN decided
                ELSE CASE CASE WHEN decided IS NOT NULL THEN max(base_rank, decided_rank)
                               ELSE max(base_rank, text_rank, picture_rank, meaning_rank) END
                     WHEN 0 THEN 'safe' WHEN 1 THEN 'sensitive' WHEN 2 THEN 'unsafe' ELSE 'critical' END
           END AS o_safety,
           CASE WHEN decided IS NOT NULL AND (decided_follows IS NULL OR decided_rank >= base_rank)
                THEN 'person:' || decided_by
                WHEN decided IS NOT NULL THEN 'sidecar'
                WHEN picture_rank > max(base_rank, text_rank, meaning_rank) THEN 'picture:' || picture_rule
                WHEN meaning_rank > max(base_rank, text_rank) THEN 'meaning:' || meaning_rule
                WHEN text_rank > base_rank THEN 'detector:' || text_rule
                WHEN side_rank IS NOT NULL THEN 'sidecar'
                ELSE 'default' END AS o_source,
           CASE coalesce(rights_rank, 1) WHEN 0 THEN 'cleared' WHEN 1 THEN 'unknown' ELSE 'withdrawn' END
               AS o_rights,
           coalesce(file_private, 0) AS o_private,
           CASE WHEN decided IS NOT NULL AND decided_follows IS NULL
                     AND NOT EXISTS (SELECT 1 FROM json_each(file_stated) WHERE value = 'safety')
                THEN json_insert(coalesce(file_stated, '[]'), '$[#]', 'safety')
                ELSE coalesce(file_stated, '[]') END AS o_stated
    FROM ranked
),
strictest AS (
    SELECT g, max(CASE o_safety WHEN 'safe' THEN 0 WHEN 'sensitive' THEN 1 WHEN 'unsafe' THEN 2 ELSE 3 END)
                  AS s_rank,
           max(o_rights = 'withdrawn') AS withdrawn, max(o_private) AS private
    FROM own WHERE g IS NOT NULL GROUP BY g
),
want AS (
    SELECT o.item_id, o.o_safety, o.o_source, o.o_rights, o.o_private, o.o_stated,
           CASE WHEN s.g IS NULL OR 'safety' IN (SELECT value FROM json_each(o.o_stated))
                  OR s.s_rank <= CASE o.o_safety WHEN 'safe' THEN 0 WHEN 'sensitive' THEN 1
                                                 WHEN 'unsafe' THEN 2 ELSE 3 END
                THEN o.o_safety
                ELSE CASE s.s_rank WHEN 1 THEN 'sensitive' WHEN 2 THEN 'unsafe' ELSE 'critical' END END AS n_safety,
           CASE WHEN s.g IS NULL OR 'rights' IN (SELECT value FROM json_each(o.o_stated)) OR NOT s.withdrawn
                THEN o.o_rights ELSE 'withdrawn' END AS n_rights,
           CASE WHEN s.g IS NULL OR 'private' IN (SELECT value FROM json_each(o.o_stated)) THEN o.o_private
                ELSE max(o.o_private, s.private) END AS n_private
    FROM own o LEFT JOIN strictest s USING (g)
),
final AS MATERIALIZED (
    SELECT *, CASE WHEN n_safety = o_safety AND n_rights = o_rights AND n_private = o_private THEN '{}'
                   ELSE json_object('safety', o_safety, 'rights', o_rights, 'private', o_private) END AS n_inherited
    FROM want
)
UPDATE items SET safety = f.n_safety, safety_source = f.o_source, rights = f.n_rights, private = f.n_private,
       stated = f.o_stated, inherited = f.n_inherited, updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
FROM final f
WHERE items.item_id = f.item_id
  AND (items.safety <> f.n_safety OR items.safety_source <> f.o_source OR items.rights <> f.n_rights
       OR items.private <> f.n_private OR items.stated <> f.o_stated OR items.inherited <> f.n_inherited)
RETURNING items.item_id, items.private = 1 OR items.rights = 'withdrawn' OR items.safety IN ('unsafe', 'critical')
    AS hidden;

-- name: spread_decisions
-- A decision made on an item holds its near-identical copies too: each copy gets the same decision
-- (`follows` names the item decided on), replacing what it had, so the decision outlives the bytes
-- it was made on (a re-saved or re-encoded copy keeps it after the original is gone).
INSERT INTO safety_decisions(sha256, safety, decided_by, decider_kind, note, automatic_safety, automatic_source,
                             follows, decided_at)
SELECT o.sha256, d.safety, d.decided_by, d.decider_kind, d.note, o.safety, o.safety_source, d.sha256, d.decided_at
FROM items i JOIN safety_decisions d ON d.sha256 = i.sha256
JOIN items o ON o.perceptual_group = i.perceptual_group AND o.item_id <> i.item_id
WHERE i.item_id = :item_id AND :kind = 'safety'
ON CONFLICT (sha256) DO UPDATE SET
    safety = excluded.safety, decided_by = excluded.decided_by, note = excluded.note, follows = excluded.follows,
    decided_at = excluded.decided_at;
INSERT INTO privacy_decisions(sha256, decided_by, decider_kind, note, follows, decided_at)
SELECT o.sha256, d.decided_by, d.decider_kind, d.note, d.sha256, d.decided_at
FROM items i JOIN privacy_decisions d ON d.sha256 = i.sha256
JOIN items o ON o.perceptual_group = i.perceptual_group AND o.item_id <> i.item_id
WHERE i.item_id = :item_id AND :kind = 'privacy'
ON CONFLICT (sha256) DO UPDATE SET
    decided_by = excluded.decided_by, decider_kind = excluded.decider_kind, note = excluded.note,
    follows = excluded.follows, decided_at = excluded.decided_at;

-- name: follow_decisions
-- An item that joins a near-identical group (a copy added later, or groups made again) takes the
-- newest decision of the group's other items when it has none of its own. :item_id names one
-- item; NULL: every item.
INSERT INTO safety_decisions(sha256, safety, decided_by, decider_kind, note, automatic_safety, automatic_source,
                             follows, decided_at)
SELECT sha256, safety, decided_by, decider_kind, note, auto_safety, auto_source, origin, decided_at FROM (
    SELECT n.sha256, d.safety, d.decided_by, d.decider_kind, d.note, n.safety AS auto_safety,
           n.safety_source AS auto_source, coalesce(d.follows, d.sha256) AS origin, d.decided_at,
           row_number() OVER (PARTITION BY n.item_id ORDER BY d.decided_at DESC, d.sha256) AS k
    FROM items n
    JOIN items o ON o.perceptual_group = n.perceptual_group AND o.item_id <> n.item_id
    JOIN safety_decisions d ON d.sha256 = o.sha256
    WHERE (:item_id IS NULL OR n.item_id = :item_id)
      AND NOT EXISTS (SELECT 1 FROM safety_decisions x WHERE x.sha256 = n.sha256)
) WHERE k = 1;
INSERT INTO privacy_decisions(sha256, decided_by, decider_kind, note, follows, decided_at)
SELECT sha256, decided_by, decider_kind, note, origin, decided_at FROM (
    SELECT n.sha256, d.decided_by, d.decider_kind, d.note, coalesce(d.follows, d.sha256) AS origin, d.decided_at,
           row_number() OVER (PARTITION BY n.item_id ORDER BY d.decided_at DESC, d.sha256) AS k
    FROM items n
    JOIN items o ON o.perceptual_group = n.perceptual_group AND o.item_id <> n.item_id
    JOIN privacy_decisions d ON d.sha256 = o.sha256
    WHERE (:item_id IS NULL OR n.item_id = :item_id)
      AND NOT EXISTS (SELECT 1 FROM privacy_decisions x WHERE x.sha256 = n.sha256)
) WHERE k = 1;

-- name: safety_decisions_origin
SELECT coalesce(follows, sha256) FROM safety_decisions WHERE sha256 = :sha256;

-- name: privacy_decisions_origin
SELECT coalesce(follows, sha256) FROM privacy_decisions WHERE sha256 = :sha256;

-- name: item_privacy
-- An item's privacy and the first of its files whose own metadata says private (with that source).
SELECT i.item_id, i.sha256, i.private,
       (SELECT json_extract(f.metadata, '$.source') FROM files f WHERE f.item_id = i.item_id AND f.private = 1
        ORDER BY f.file_id LIMIT 1) AS file_source,
       (SELECT r.name || '/' || f.rel_path FROM files f JOIN library_roots r ON r.root_id = f.root_id
        WHERE f.item_id = i.item_id AND f.private = 1 ORDER BY f.file_id LIMIT 1) AS private_file
FROM items i WHERE i.item_id = :item_id;

-- name: decide_private
INSERT INTO privacy_decisions(sha256, decided_by, decider_kind, note)
VALUES (:sha256, :decided_by, 'person', :note)
ON CONFLICT (sha256) DO UPDATE SET
    decided_by = excluded.decided_by, decider_kind = 'person', note = excluded.note, follows = NULL,
    decided_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now');

-- name: clear_private
DELETE FROM privacy_decisions WHERE sha256 = :origin OR follows = :origin;

-- name: item_metadata
SELECT title, template, entities, tags, description, source_url, creator, licence, safety, rights, private,
       metadata_source
FROM items WHERE item_id = :item_id;

-- name: new_group
INSERT INTO image_groups(kind, label) VALUES (:kind, :label) RETURNING group_id;

-- name: template_group
SELECT group_id FROM image_groups WHERE kind = 'template' AND label = :label;
