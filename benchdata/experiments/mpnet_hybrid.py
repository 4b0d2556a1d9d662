"""After mpnet_semantic.py: all-mpnet-base-v2 as the dense route INSIDE the tool's hybrid
system (lexical route, evidence gate, weighted lexical hits, full-match guarantee, Rocchio feedback
and the fusion statement all unchanged), against today's MiniLM hybrid, on dev v2. A pure experiment:
the tool is not changed.

How it swaps the model without touching the tool: the search screen's in-memory dense route
(vectormatrix.VectorMatrix.ranking, handed to search.sql's fusion as `:dense`) takes any unit
vectors; here the matrix holds mpnet's vectors of the same texts (mpnet_semantic.item_texts: all
fields, caption, picture) and the embedder encodes the query with mpnet, so `Searcher.search`
runs hybrid exactly as the tool does, with mpnet's ranking as the dense route. The MiniLM side uses
the same path with the library's own MiniLM vectors (checked equal to the SQL route's lists).

Reproduce (the model and cache as in mpnet_semantic.py; ~3 min with the item vectors cached):

    HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false PYTHONPATH=.:benchdata/experiments \
    .venv/bin/python benchdata/experiments/mpnet_hybrid.py --lib LIB.sqlite --bare BARE.sqlite \
        --model WORK/model/all-mpnet-base-v2 --cache WORK > benchdata/experiments/mpnet_hybrid-result.txt

Rankings are taken before the "no match" rule (its models were fitted on MiniLM similarities and
would need refitting). Scored with the judged labels of dev v2 (official: unjudged = grade 0) and
condensed (unjudged removed), as mpnet_semantic.py.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import mpnet_semantic as M
import numpy as np

from mambomeme.lab.product import DB, DEFAULT_SYSTEMS, Searcher, VectorMatrix


class Encoder:
    """The embedder interface Searcher uses (encode a list of texts to unit vectors)."""

    def __init__(self, encode: Any) -> None:
        self.encode = encode


class Held:
    """InMemoryVectors' interface: always this matrix."""

    def __init__(self, matrix: VectorMatrix) -> None:
        self.matrix = matrix

    def get(self, db: DB) -> VectorMatrix:
        return self.matrix


def matrix_of(texts: list[tuple[int, int, str]], vecs: np.ndarray) -> VectorMatrix:
    whole = [(i, n) for n, (i, k, _t) in enumerate(texts) if k == 0]
    fields = [(i, n) for n, (i, k, _t) in enumerate(texts) if k != 0]
    m = VectorMatrix(
        np.array([i for i, _n in whole], dtype=np.int64),
        vecs[[n for _i, n in whole]],
        np.array([i for i, _n in fields], dtype=np.int64),
        vecs[[n for _i, n in fields]] if fields else np.zeros((0, vecs.shape[1]), np.float32),
        (),
        np.array([k for _i, k, _t in texts if k != 0], dtype=np.int64),
    )
    return m


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lib", type=Path, required=True)
    ap.add_argument("--bare", type=Path, required=True)
    ap.add_argument("--model", type=Path, required=True)
    ap.add_argument("--cache", type=Path, required=True)
    args = ap.parse_args()
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(args.model), device="cpu")
    queries = M.judged_queries(M.QUERIES, M.LABELS)
    answerable = [q for q in queries if q["slice"] != "no-match"]
    judged = M.judged_pairs(M.LABELS)
    slices = [s for s in M.SLICES if any(q["slice"] == s for q in answerable)]
    minilm = M.get_embedder()
    mpnet = Encoder(
        lambda xs: model.encode(xs, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False).astype(
            np.float32
        )
    )
    print(
        "hybrid with all-mpnet-base-v2 as its dense route vs hybrid with MiniLM (the tool's): dev v2, "
        f"{len(answerable)} answerable queries, judged labels {M.LABELS.name}; rankings before the no-match rule"
    )
    for name, path in (("annotated", args.lib), ("bare", args.bare)):
        db = DB(path, create=False)
        ids, texts = M.item_texts(db)
        vec_minilm = M.stored_minilm(db, ids, texts)
        vec_mpnet, *_ = M.mpnet_vectors(model, args.model.name, [t for _i, _k, t in texts], args.cache)
        runs: dict[str, dict[str, list[M.Hit]]] = {}
        for system in ("hybrid", "dense"):
            for label, enc, vecs in (("MiniLM", minilm, vec_minilm), ("mpnet", mpnet, vec_mpnet)):
                searcher = Searcher(db, enc, parallel=False, vectors=Held(matrix_of(texts, vecs)))
                runs[f"{label} {system}"] = {
                    q["id"]: [
                        M.Hit(r.item_id)
                        for r in searcher.search(q["query"], DEFAULT_SYSTEMS[system], M.KEEP, empty_rule=False)
                    ]
                    for q in answerable
                }
        sql = Searcher(db, minilm, parallel=False)
        same = sum(
            [r.item_id for r in sql.search(q["query"], "hybrid", 10, empty_rule=False)]
            == [h.item_id for h in runs["MiniLM hybrid"][q["id"]][:10]]
            for q in answerable
        )
        lib = {"metrics": {s: M.score(db, answerable, r, judged) for s, r in runs.items()}}
        print(
            f"\n== {name} library: {len(ids)} servable items; MiniLM hybrid through this path = the tool's "
            f"SQL route's top 10 on {same} of {len(answerable)} queries =="
        )
        print("\n".join(M.table(lib, slices)))
        m, b = lib["metrics"]["mpnet hybrid"], lib["metrics"]["MiniLM hybrid"]
        for key, label in (("ndcg_by_slice", "official"), ("condensed_by_slice", "condensed")):
            print(
                f"  mpnet hybrid - MiniLM hybrid, {label}: "
                + " ".join(f"{s} {m[key][s] - b[key][s]:+.3f}" for s in slices)
            )
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
