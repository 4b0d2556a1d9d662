"""The sweep behind mambomeme.search.LEXICAL_EVIDENCE's boost, KEEP_FULL_MATCHES and the evidence vectors
(issue 18): hybrid's ranking on the DEVELOPMENT partition 2 only (benchdata/v1/dev-v2.jsonl, the
graders' judged labels; unjudged results count as misses), on the annotated and the bare library.

    .venv/bin/python benchdata/fusion_sweep_v2.py LIBRARY.sqlite BARE.sqlite [VARIANT ...]

A VARIANT is a system name with changes to its configuration, e.g.
`hybrid:lexical_evidence.boost=5,keep_full_matches=false` (values are JSON). Without variants, the
grid of the issue-18 note in mambomeme/search.py. Ranking quality is measured before the "no match"
rule (refitted afterwards by `mambo bench no-match`): nDCG@10 per slice of the answerable queries."""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from mambomeme.bench import judged_queries  # noqa: E402
from mambomeme.calibrate import evaluate_runs  # noqa: E402
from mambomeme.embed import get_embedder  # noqa: E402
from mambomeme.library import DB  # noqa: E402
from mambomeme.search import DEFAULT_SYSTEMS, Searcher  # noqa: E402

V2 = Path(__file__).parent / "v1"
GRID = ["hybrid:field_vectors=false,lexical_evidence.boost=30,keep_full_matches=false",
        "hybrid:lexical_evidence.boost=30,keep_full_matches=false",
        "hybrid:lexical_evidence.boost=5", "hybrid:lexical_evidence.boost=2", "hybrid:lexical_evidence.boost=1",
        "hybrid:lexical_evidence.boost=1,keep_full_matches=false", "hybrid:rrf_k=20",
        "hybrid:lexical_evidence.drop_below=0.75", "hybrid:route_weights.dense=1.5", "dense", "bm25"]


def variant(spec: str) -> dict:
    """A system's configuration with `key.sub=JSON` changes."""
    name, _, changes = spec.partition(":")
    cfg = copy.deepcopy(DEFAULT_SYSTEMS[name])
    for change in filter(None, changes.split(",")):
        key, value = change.split("=", 1)
        *path, last = key.split(".")
        target = cfg
        for k in path:
            target = target[k]
        target[last] = json.loads(value)
    return cfg


def main(argv: list[str]) -> int:
    libraries = {"annotated": DB(Path(argv[0]), create=False), "bare": DB(Path(argv[1]), create=False)}
    specs = argv[2:] or GRID
    queries = [q for q in judged_queries(V2 / "dev-v2.jsonl", V2 / "judgements" / "dev-v2-set1.jsonl")
               if q["slice"] != "no-match"]
    embedder = get_embedder()
    for spec in specs:
        cfg = variant(spec)
        line = []
        for condition, db in libraries.items():
            searcher = Searcher(db, embedder, parallel=False)
            runs = {q["id"]: searcher.search(q["query"], cfg, 10, empty_rule=False) for q in queries}
            m = evaluate_runs(db, queries, runs)
            line.append(f"{condition} Q {m['Q']:.3f} " + " ".join(f"{s} {v:.3f}" for s, v in
                                                                 sorted(m["ndcg_by_slice"].items())))
        print(f"{spec}\n    " + "\n    ".join(line), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
