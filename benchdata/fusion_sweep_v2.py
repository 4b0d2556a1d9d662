"""The sweep behind mambomeme.search.LEXICAL_EVIDENCE (boost, partial), KEEP_FULL_MATCHES, DENSE_FEEDBACK
and the evidence vectors: hybrid's ranking on the DEVELOPMENT partition 2 only
(benchdata/v1/dev-v2.jsonl, the graders' judged labels), on the annotated and the bare library.

    .venv/bin/python benchdata/fusion_sweep_v2.py LIBRARY.sqlite BARE.sqlite [VARIANT ...]

A VARIANT is a system name with changes to its configuration, e.g.
`hybrid:lexical_evidence.boost=5,keep_full_matches=false` or `dense:dense_feedback.top=5,dense_feedback.alpha=0.3`
(values are JSON; `key=null` removes a feature). Without variants, GRID: the choices behind the constants in
mambomeme/search.py. Ranking quality is measured before the "no match" rule (refitted afterwards
by `mambo bench no-match`): nDCG@10 per slice of the answerable queries, twice: "miss" counts a
result nobody graded as grade 0 (the scorecard's rule), "condensed" removes unjudged results from
the ranking first (Sakai 2007), so a choice that wins only by showing unjudged memes shows up.
The share of unjudged results in the top 10 is printed beside each."""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from mambomeme.lab.bench import judged_queries  # noqa: E402
from mambomeme.lab.calibrate import ndcg_at_10  # noqa: E402
from mambomeme.lab.product import DB, DEFAULT_SYSTEMS, Searcher, get_embedder  # noqa: E402

V2 = Path(__file__).parent / "v1"
GRID = [
    "hybrid:dense_feedback=null,lexical_evidence.partial=0",  # without DENSE_FEEDBACK and partial
    "hybrid:dense_feedback=null,lexical_evidence.partial=0,lexical_evidence.boost=30,keep_full_matches=false",
    "hybrid:dense_feedback=null,lexical_evidence.partial=0,lexical_evidence.boost=1",
    "hybrid:dense_feedback=null,lexical_evidence.partial=1",
    "hybrid:dense_feedback=null",
    "hybrid:lexical_evidence.partial=0",
    "hybrid:lexical_evidence.partial=1",
    "hybrid:lexical_evidence.partial=3",
    "hybrid:dense_feedback.top=3",
    "hybrid:dense_feedback.top=8",
    "hybrid:dense_feedback.alpha=0.2",
    "hybrid:dense_feedback.alpha=0.45",
    "hybrid:lexical_evidence.boost=1",
    "hybrid",
    "dense",
    "dense:dense_feedback.top=5,dense_feedback.alpha=0.3",
    "bm25",
]


def variant(spec: str) -> dict:
    """A system's configuration with `key.sub=JSON` changes."""
    name, _, changes = spec.partition(":")
    cfg = copy.deepcopy(DEFAULT_SYSTEMS[name])
    for change in filter(None, changes.split(",")):
        key, value = change.split("=", 1)
        *path, last = key.split(".")
        target = cfg
        for k in path:
            target[k] = target = dict(target.get(k) or {})  # a missing or null feature becomes one
        target[last] = json.loads(value)
    return cfg


def judged_pairs(labels: Path) -> dict[str, dict[str, float]]:
    """Every graded (query, file) pair with its grade, grade 0 included: what "judged" means."""
    pairs: dict[str, dict[str, float]] = {}
    for line in labels.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            pairs.setdefault(row["qid"], {})[row["path"]] = float(row["grade"] or 0)
    return pairs


def evaluate(
    db: DB, queries: list[dict], judged: dict[str, dict[str, float]], runs: dict[str, list[int]]
) -> tuple[dict[str, float], dict[str, float], float]:
    """Per-slice nDCG@10 with unjudged results as misses, the same on condensed lists, and the share
    of unjudged results in the top 10."""
    by_path = {rel: item for item, rel in db.con.execute("SELECT item_id, rel_path FROM files")}
    miss: dict[str, list[float]] = {}
    condensed: dict[str, list[float]] = {}
    unjudged = shown = 0
    for q in queries:
        grades: dict[int, float] = {}
        for rel, g in judged.get(q["id"], {}).items():
            if rel in by_path:
                grades[by_path[rel]] = max(g, grades.get(by_path[rel], 0.0))
        m, c, u = query_scores(grades, runs[q["id"]])
        miss.setdefault(q["slice"], []).append(m)
        condensed.setdefault(q["slice"], []).append(c)
        unjudged += u
        shown += len(runs[q["id"]][:10])
    mean = lambda d: {k: sum(v) / len(v) for k, v in sorted(d.items())}  # noqa: E731
    return mean(miss), mean(condensed), unjudged / shown if shown else 0.0


def query_scores(grades: dict[int, float], ranked: list[int]) -> tuple[float, float, int]:
    """One query's nDCG@10 with unjudged results as misses, the same on its condensed list (unjudged
    results dropped first), and how many of its top 10 nobody judged (`grades`: item -> grade)."""
    ideal = [g for g in grades.values() if g > 0]
    top = ranked[:10]
    miss = ndcg_at_10([grades.get(i, 0.0) for i in top], ideal)
    condensed = ndcg_at_10([grades[i] for i in ranked if i in grades][:10], ideal)
    return miss, condensed, sum(i not in grades for i in top)


def main(argv: list[str]) -> int:
    libraries = {"annotated": DB(Path(argv[0]), create=False), "bare": DB(Path(argv[1]), create=False)}
    specs = argv[2:] or GRID
    labels = V2 / "judgements" / "dev-v2-set1.jsonl"
    queries = [q for q in judged_queries(V2 / "dev-v2.jsonl", labels) if q["slice"] != "no-match"]
    judged = judged_pairs(labels)
    embedder = get_embedder()
    for spec in specs:
        cfg = variant(spec)
        line = []
        for condition, db in libraries.items():
            searcher = Searcher(db, embedder, parallel=False)
            # 30 deep: the condensed list needs judged results from below the top 10
            runs = {
                q["id"]: [r.item_id for r in searcher.search(q["query"], cfg, 30, empty_rule=False)] for q in queries
            }
            miss, condensed, unjudged = evaluate(db, queries, judged, runs)
            for name, m in (("miss", miss), ("condensed", condensed)):
                line.append(
                    f"{condition} {name:9} Q {sum(m.values()) / len(m):.3f} "
                    + " ".join(f"{s} {v:.3f}" for s, v in m.items())
                    + (f"  (unjudged in top 10: {unjudged:.1%})" if name == "miss" else "")
                )
        print(f"{spec}\n    " + "\n    ".join(line), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
