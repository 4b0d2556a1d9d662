#!/usr/bin/env python3
"""Hybrid's ranking choices (DENSE_FEEDBACK, route weights, LEXICAL_EVIDENCE, KEEP_FULL_MATCHES)
measured on the real-style development set, bare, with folds held out by template: the set those
constants were never fitted on (they were chosen on benchmark v1's dev v2, benchdata/fusion_sweep_v2.py).

    python benchdata/experiments/fusion_real.py LIBRARY.sqlite [VARIANT ...]

LIBRARY is the real-style folder's bare library holding the partition and its judgements (a scored
copy: benchdata/real/score.sh). A VARIANT is as in fusion_sweep_v2.py (`hybrid:dense_feedback=null`,
`hybrid:route_weights.dense=1.5`); without variants, GRID. nDCG@10 per slice of the answerable
queries before the "no match" rule, twice: "miss" counts a result no grader judged as grade 0,
"condensed" drops unjudged results first (a choice that wins by unjudged memes shows up). The
folds are benchdata/real/folds.py's (5, by template; a query family never split): for each fold the
variant with the best macro nDCG ("miss") on the other four is measured on it, and the held-out
means are printed against the default's.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchdata"))
sys.path.insert(0, str(REPO / "benchdata" / "real"))

import folds  # noqa: E402  (benchdata/real/folds.py)
from fusion_sweep_v2 import query_scores, variant  # noqa: E402

from mambomeme.lab.product import DB, Searcher, get_embedder  # noqa: E402

GRID = [
    "hybrid",
    "hybrid:dense_feedback=null",
    "hybrid:dense_feedback.alpha=0.2",
    "hybrid:dense_feedback.alpha=0.7",
    "hybrid:dense_feedback.top=3",
    "hybrid:route_weights.dense=1.5",
    "hybrid:route_weights.dense=2.0",
    "hybrid:route_weights.lexical=0.7",
    "hybrid:lexical_evidence.partial=0",
    "hybrid:lexical_evidence.boost=1.0",
    "hybrid:keep_full_matches=5",
    "hybrid:full_match_by_meaning=false",
    "hybrid:rrf_k=20",
    "dense",
]
DEPTH = 30  # the condensed list needs judged results below the top 10


def grades(db: DB) -> dict[str, dict[int, float]]:
    """qid -> item -> its final grade in the newest judgement set (unjudged and unsettled pairs absent)."""
    rows = db.con.execute(
        "SELECT q.qid, f.item_id, f.grade FROM final_judgements f "
        "JOIN current_judgement_sets s ON s.set_id = f.set_id "
        "JOIN bench_queries q ON q.query_id = f.query_id WHERE f.grade IS NOT NULL"
    ).fetchall()
    out: dict[str, dict[int, float]] = {}
    for qid, item, g in rows:
        out.setdefault(qid, {})[item] = max(float(g), out.get(qid, {}).get(item, 0.0))
    return out


def per_query(searcher: Searcher, cfg: dict, queries: list[dict], judged: dict) -> dict[str, tuple[float, float, int]]:
    """qid -> (nDCG@10 unjudged as misses, condensed, unjudged in the top 10)."""
    out = {}
    for q in queries:
        ids = [r.item_id for r in searcher.search(q["query"], cfg, DEPTH, empty_rule=False)]
        out[q["id"]] = query_scores(judged.get(q["id"], {}), ids)
    return out


def macro(scores: dict[str, tuple[float, float, int]], queries: list[dict], k: int) -> tuple[float, dict[str, float]]:
    by_slice: dict[str, list[float]] = {}
    for q in queries:
        if q["id"] in scores:
            by_slice.setdefault(q["slice"], []).append(scores[q["id"]][k])
    means = {s: sum(v) / len(v) for s, v in sorted(by_slice.items())}
    return (sum(means.values()) / len(means) if means else 0.0), means


def main(argv: list[str]) -> int:
    db = DB(Path(argv[0]), create=False)
    specs = argv[1:] or GRID
    queries = [q for q in folds.load_jsonl(REPO / "benchdata/real/dev.jsonl") if q["slice"] != "no-match"]
    fold_of = folds.query_folds()
    judged = grades(db)
    searcher = Searcher(db, get_embedder(), parallel=False)
    results = {}
    for spec in specs:
        results[spec] = s = per_query(searcher, variant(spec), queries, judged)
        unjudged = sum(x[2] for x in s.values()) / (10 * len(s))
        for k, name in ((0, "miss"), (1, "condensed")):
            q, means = macro(s, queries, k)
            extra = f"  (unjudged in top 10: {unjudged:.1%})" if k == 0 else ""
            print(f"{spec:45} {name:9} Q {q:.3f} " + " ".join(f"{a} {b:.3f}" for a, b in means.items()) + extra)
        sys.stdout.flush()
    print("\nHeld out by template (folds.py): the variant best on the other folds, measured on each fold")
    default = specs[0]
    for k, name in ((0, "miss"), (1, "condensed")):
        held, base = [], []
        for f in sorted(set(fold_of.values())):
            train = [q for q in queries if fold_of.get(q["id"]) != f]
            test = [q for q in queries if fold_of.get(q["id"]) == f]
            best = max(specs, key=lambda sp: macro(results[sp], train, 0)[0])
            held.append(macro(results[best], test, k)[0])
            base.append(macro(results[default], test, k)[0])
            print(f"  {name:9} fold {f}: chose {best}: {held[-1]:.3f} (default {base[-1]:.3f})")
        print(f"  {name:9} mean over folds: chosen {sum(held) / len(held):.3f}, default {sum(base) / len(base):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
