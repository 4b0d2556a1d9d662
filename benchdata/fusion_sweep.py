"""The sweep behind mambomeme.search.LEXICAL_EVIDENCE: hybrid's query-dependent fusion on the DEVELOPMENT
partition only (benchdata/v1/dev.jsonl, provisional labels), objective 0.55 Q + 0.15 E + 0.10 C.

    .venv/bin/python benchdata/fusion_sweep.py LIBRARY.sqlite

LIBRARY holds benchmark v1's rendered corpus. For each (drop_below, boost_at, boost) the best
empty rule of a small grid is reported with its metrics."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from mambomeme.lab.bench import load_dev_queries  # noqa: E402
from mambomeme.lab.calibrate import evaluate_runs, objective  # noqa: E402
from mambomeme.lab.product import DB, DEFAULT_SYSTEMS, Searcher, get_embedder  # noqa: E402

GATES = [
    None,
    (0.5, 1.0, 1.0),
    (0.25, 1.0, 2.0),
    (0.5, 1.0, 2.0),
    (0.67, 1.0, 2.0),
    (0.5, 1.0, 5.0),
    (0.5, 1.0, 30.0),
    (0.5, 0.75, 5.0),
    (0.5, 0.75, 30.0),
    (0.5, 0.75, 100.0),
]


def main(argv: list[str]) -> int:
    db = DB(argv[0], create=False)
    queries = load_dev_queries(Path(__file__).parent / "v1" / "dev.jsonl")
    searcher = Searcher(db, get_embedder())
    base = {k: v for k, v in DEFAULT_SYSTEMS["hybrid"].items() if k != "lexical_evidence"}
    for gate in GATES:
        cfg = (
            base
            if gate is None
            else base | {"lexical_evidence": dict(zip(("drop_below", "boost_at", "boost"), gate, strict=True))}
        )
        raw = {q["id"]: searcher.search(q["query"], cfg, 10, empty_rule=False) for q in queries}
        best = None
        for sim in (0.35, 0.40, 0.45):
            for cov in (0.25, 0.5):
                rule = {"min_similarity": sim, "min_coverage": cov}
                m = evaluate_runs(db, queries, {k: Searcher.empty_rule(rule, v) for k, v in raw.items()})
                if best is None or objective(m) > best[0]:
                    best = (objective(m), sim, cov, m)
        o, sim, cov, m = best
        print(
            f"gate {gate}: objective {o:.4f} (sim {sim}, cov {cov}) Q {m['Q']:.3f} E {m['E']:.3f} "
            f"Hit@10 {m['hit10']:.3f} CE {m['correct_empty']:.3f} C {m['C']:.3f} slices {m['ndcg_by_slice']}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
