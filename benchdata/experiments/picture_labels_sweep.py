"""Picture labels in search: the labels field's BM25 weight (search.PICTURE_LABELS_WEIGHT) swept on
dev v2, both libraries, hybrid with its "no match" rule; nDCG@10 by slice, CorrectEmpty, and how
many top-10 results have no judgement (they count as grade 0 here and in the scorecard).

Reproduce (libraries labelled by this version's `mambo add`; judged labels of dev v2):

    PYTHONPATH=. .venv/bin/python benchdata/experiments/picture_labels_sweep.py --lib LIB.sqlite \\
        --bare BARE.sqlite > benchdata/experiments/picture_labels_sweep-result.txt
"""

from __future__ import annotations

import argparse
import copy
import json
from pathlib import Path

from mambomeme.embed import get_embedder
from mambomeme.lab.bench import judged_pairs, judged_queries
from mambomeme.lab.calibrate import evaluate_runs
from mambomeme.library import DB
from mambomeme.search import DEFAULT_SYSTEMS, Searcher

REPO = Path(__file__).resolve().parents[2]
QUERIES = REPO / "benchdata/v1/dev-v2.jsonl"
LABELS = REPO / "benchdata/v1/judgements/dev-v2-set1.jsonl"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--bare", required=True)
    ap.add_argument("--weights", default="0,0.5,1,2,4")
    ap.add_argument("--system", default="hybrid")
    args = ap.parse_args()
    queries = judged_queries(QUERIES, LABELS)
    judged = judged_pairs(LABELS)
    embedder = get_embedder()
    for name, path in (("annotated", args.lib), ("bare", args.bare)):
        db = DB(Path(path), create=False, readonly=True)
        rel = dict(db.con.execute("SELECT item_id, rel_path FROM files ORDER BY file_id DESC"))
        searcher = Searcher(db, embedder, parallel=False)
        for w in (float(x) for x in args.weights.split(",")):
            cfg = copy.deepcopy(DEFAULT_SYSTEMS[args.system])
            cfg["field_weights"]["picture_labels"] = w
            runs = {q["id"]: searcher.search(q["query"], cfg, limit=10) for q in queries}
            m = evaluate_runs(db, queries, runs)
            unjudged = sum(rel[r.item_id] not in judged.get(q["id"], set())
                           for q in queries for r in runs[q["id"]][:10])
            print(json.dumps({"library": name, "labels_weight": w, "Q": m["Q"], "ndcg": m["ndcg_by_slice"],
                              "hit10": m["hit10"], "correct_empty": m["correct_empty"],
                              "unjudged_top10": unjudged}), flush=True)


if __name__ == "__main__":
    main()
