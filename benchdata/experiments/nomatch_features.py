"""Do features read from the routes separately, not from the fused list, let
the "no match" evidence model (search.EMPTY_RULES, fitted by `mambo bench no-match`) empty more
no-match queries of dev v2 at the same price? A negative result, kept so it can be re-run after
fusion changes (result: benchdata/experiments/nomatch_features-result.txt). Candidate "coherence" (the
mean pairwise cosine of the dense route's five best items' all-fields vectors) added in the re-run.

Reproduce (from the repository root; copies of the annotated and the bare library of benchmark v1's
2,200 rendered files, recipe-v3 vectors; ~1 min):

    .venv/bin/python benchdata/experiments/nomatch_features.py --lib LIB.sqlite --bare BARE.sqlite \
        > benchdata/experiments/nomatch_features-result.txt

A second run: the features include "corrected" and "absent" (search.evidence_features), and
the tool fits one model per library condition; `--condition bare` (or annotated) fits and holds out
on that library alone, as `mambo bench no-match` now does (result for the bare library:
benchdata/experiments/nomatch_features-session8-bare.txt).

Per library and system it takes the unthresholded top 10 (Searcher.search(..., empty_rule=False)),
the feature the current model reads (search.evidence_features), and what the routes computed on
the way, captured without changing the search path: the dense route's whole ranking (its top
candidate_depth similarities) and hybrid's lexical-evidence ranking. Candidate features:
  lex_cov     the word route's own top three: best coverage of the query's content words
  lex_hits    how many memes the word route matched (log, of at most candidate_depth)
  dense_lift  best dense similarity minus the mean of the route's top 50 (a query-specific
              baseline: generic queries are close to many memes)
  dense_mean  that mean itself; dense_top3: mean of the three best
  agree       share of the dense top 10 that the word route's top 10 also holds
  idf_cov     the fused top three's best coverage, each content word weighted by its IDF in the
              library (a word the library never saw weighs as much as a word of one meme)
  name_unk    a content word unknown to the library that is rare in English (< 2,000 in
              pyspellchecker's list, queries.REAL_WORD_MIN_COUNT): a name the folder does not hold
  length      content words (stopwords and filler out), / 6, at most 1
Each set is fitted and thresholded exactly as `mambo bench no-match` does (logistic over both
libraries, label "answerable"; the threshold with the most CorrectEmpty whose price is at most 3 %
false "no match" and 0.02 Hit@10 in each library, grid 0.02), and held out over the same five
family folds (seed 17). Hit@10 and false "no match" use the judged labels as the tool does:
results nobody graded yet count as misses.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from mambomeme.lab.bench import judged_queries  # noqa: E402
from mambomeme.lab.nomatch import FEATURES, FOLDS, L2, MAX_FALSE_EMPTY, MAX_HIT_LOSS, fit_logistic  # noqa: E402
from mambomeme.lab.product import (  # noqa: E402
    DB,
    REAL_WORD_MIN_COUNT,
    Searcher,
    english_frequencies,
    evidence_features,
    get_embedder,
    holds_word,
    item_words,
    plan_query,
    sync_systems,
    system_config,
)

LIBS = ("annotated", "bare")


def capture(db: DB, searcher: Searcher, cfg: dict, query: str) -> tuple[list, dict]:
    """One unthresholded search, and what its routes saw on the way."""
    seen: dict = {}
    dense_route, q = Searcher._dense_route, db.q

    def spy_dense(reader, params, feedback=None):
        seen["dense"] = json.loads(dense_route(reader, params, feedback))
        return json.dumps(seen["dense"])

    def spy_q(name, params=None):
        rows = q(name, params)
        if name == "search" and params and not params.get("use_dense") and params.get("use_lexical"):
            seen["lexical"] = [r[0] for r in rows]
        return rows

    Searcher._dense_route = staticmethod(spy_dense)
    db.q = spy_q  # type: ignore[method-assign]
    try:
        results = searcher.search(query, cfg, 10, empty_rule=False)
    finally:
        Searcher._dense_route = staticmethod(dense_route)
        del db.q
    return results, seen


def features(db: DB, query: str, results: list, seen: dict, documents: int) -> dict[str, float] | None:
    if not results:
        return None
    f = evidence_features(results)
    plan = plan_query(db, query)
    sims = [s for _i, s, _a in seen.get("dense", [])]
    f["dense_mean"] = sum(sims) / len(sims) if sims else 0.0
    f["dense_lift"] = sims[0] - f["dense_mean"] if sims else 0.0
    f["dense_top3"] = sum(sims[:3]) / len(sims[:3]) if sims else 0.0
    lexical = seen.get("lexical")
    if lexical is None:  # bm25 and dense: no separate word route; the fused list stands in
        lexical = [r.item_id for r in results if r.lexical_rank is not None]
    words = {r.item_id: item_words(r.details) for r in results}
    if lexical and any(i not in words for i in lexical[:3]):
        words |= {d["item_id"]: item_words(d) for d in db.rows("results_details", {"ids": json.dumps(lexical[:3])})}
    content = plan.content or [""]

    def cov(ws: set[str]) -> float:
        return sum(holds_word(plan, t, ws) for t in plan.content) / len(content)

    f["lex_cov"] = max((cov(words[i]) for i in lexical[:3]), default=0.0)
    f["lex_hits"] = math.log1p(len(lexical)) / math.log(51)
    f["agree"] = len({i for i, _s, _a in seen.get("dense", [])[:10]} & set(lexical[:10])) / 10
    docs = dict(db.q("vocabulary_docs", {"terms": json.dumps(plan.content)}))
    idf = {t: math.log(documents / docs[t]) if docs.get(t) else math.log(documents) for t in plan.content}
    total = sum(idf.values()) or 1.0
    f["idf_cov"] = max(
        (sum(idf[t] for t in plan.content if holds_word(plan, t, words[r.item_id])) / total for r in results[:3]),
        default=0.0,
    )
    freq = english_frequencies()
    f["name_unk"] = float(any(freq[t] < REAL_WORD_MIN_COUNT for t in plan.unknown))
    f["length"] = min(len(plan.content), 6) / 6
    # coherence: the mean pairwise cosine of the dense route's five best items'
    # all-fields vectors; an answerable query's best items tend to be about one thing
    top = [i for i, _s, _a in seen.get("dense", [])[:5]]
    vecs = [
        np.frombuffer(v, dtype=np.float32)
        for (v,) in db.con.execute(
            "SELECT embedding FROM item_vectors WHERE item_id IN (SELECT value FROM json_each(?))", (json.dumps(top),)
        )
    ]
    if len(vecs) > 1:
        m = np.stack(vecs)
        m = m / np.linalg.norm(m, axis=1, keepdims=True)
        g = m @ m.T
        f["coherence"] = float((g.sum() - len(vecs)) / (len(vecs) * (len(vecs) - 1)))
    else:
        f["coherence"] = 0.0
    return f


def evaluate(scores: dict, useful: dict, queries: list, ids: set, t: float) -> dict:
    out = {}
    for lib in LIBS:
        nm = [q for q in queries if q["id"] in ids and q["slice"] == "no-match"]
        ans = [q for q in queries if q["id"] in ids and q["slice"] != "no-match"]
        emptied = [q for q in ans if q["id"] in useful[lib] and (scores[lib][q["id"]] or 0) < t]
        n_useful = sum(q["id"] in useful[lib] for q in ans)
        out[lib] = {
            "ce": sum((scores[lib][q["id"]] or 0) < t for q in nm) / len(nm),
            "fe": len(emptied) / max(1, n_useful),
            "hit_loss": len(emptied) / len(ans),
        }
    return out


def choose(names: tuple, feats: dict, useful: dict, queries: list, train: set) -> tuple:
    xs, ys = [], []
    for lib in LIBS:
        for q in queries:
            if q["id"] in train and feats[lib][q["id"]] is not None:
                xs.append([feats[lib][q["id"]][n] for n in names])
                ys.append(float(q["slice"] != "no-match"))
    w = fit_logistic(np.array(xs), np.array(ys), L2)

    def p(f: dict | None) -> float | None:
        if f is None:
            return None
        z = w[0] + sum(v * f[n] for v, n in zip(w[1:], names, strict=True))
        return 1 / (1 + math.exp(-max(-60.0, min(60.0, z))))

    scores = {lib: {qid: p(f) for qid, f in feats[lib].items()} for lib in LIBS}
    best = None
    for t in [round(0.02 * i, 2) for i in range(1, 50)]:
        m = evaluate(scores, useful, queries, train, t)
        ok = all(v["fe"] <= MAX_FALSE_EMPTY and v["hit_loss"] <= MAX_HIT_LOSS for v in m.values())
        key = (ok, sum(v["ce"] for v in m.values()) / len(m))
        if best is None or key > best[0]:
            best = (key, t, m)
    assert best is not None
    return w, best[1], best[2], scores


def run(names: tuple, feats: dict, useful: dict, queries: list, seed: int = 17) -> str:
    w, t, m, _ = choose(names, feats, useful, queries, {q["id"] for q in queries})
    families = sorted({q["family"] for q in queries})
    random.Random(seed).shuffle(families)
    held = {lib: ([], []) for lib in LIBS}
    for fold in [set(families[i::FOLDS]) for i in range(FOLDS)]:
        train = {q["id"] for q in queries if q["family"] not in fold}
        _w, t2, _m, sc = choose(names, feats, useful, queries, train)
        for lib in LIBS:
            for q in queries:
                if q["family"] in fold:
                    empty = (sc[lib][q["id"]] or 0) < t2
                    if q["slice"] == "no-match":
                        held[lib][0].append(empty)
                    elif q["id"] in useful[lib]:
                        held[lib][1].append(empty)
    fit = "  ".join(f"{lib} CE {m[lib]['ce']:.3f} fe {100 * m[lib]['fe']:.1f}%" for lib in LIBS)
    out = "  ".join(f"{lib} CE {np.mean(held[lib][0]):.3f} fe {100 * np.mean(held[lib][1]):.1f}%" for lib in LIBS)
    weights = " ".join(f"{n} {v:+.2f}" for n, v in zip(("bias",) + names, w, strict=True))
    return f"  fitted t={t:.2f}: {fit}\n  held out:    {out}\n  weights: {weights}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--bare", required=True)
    ap.add_argument("--queries", default=str(ROOT / "benchdata/v1/dev-v2.jsonl"))
    ap.add_argument("--labels", default=str(ROOT / "benchdata/v1/judgements/dev-v2-set1.jsonl"))
    ap.add_argument(
        "--condition",
        choices=("both", "annotated", "bare"),
        default="both",
        help="one model over both libraries' queries, or one per condition (as `mambo eval bench no-match`)",
    )
    args = ap.parse_args()
    queries = judged_queries(Path(args.queries), Path(args.labels))
    embedder = get_embedder()
    global LIBS
    LIBS = ("annotated", "bare") if args.condition == "both" else (args.condition,)
    dbs = {lib: DB(path, create=False) for lib, path in (("annotated", args.lib), ("bare", args.bare)) if lib in LIBS}
    candidates = (
        "lex_cov",
        "lex_hits",
        "dense_lift",
        "dense_mean",
        "dense_top3",
        "agree",
        "idf_cov",
        "name_unk",
        "length",
        "coherence",
    )
    for system in ("hybrid", "dense", "bm25"):
        feats: dict = {}
        useful: dict = {}
        for lib, db in dbs.items():
            sync_systems(db)
            cfg = system_config(db, system)
            searcher = Searcher(db, embedder)
            documents = db.con.execute("SELECT documents FROM vocabulary_size").fetchone()[0]
            by_path = dict(db.con.execute("SELECT rel_path, item_id FROM files"))
            feats[lib], useful[lib] = {}, set()
            for q in queries:
                results, seen = capture(db, searcher, cfg, q["query"])
                feats[lib][q["id"]] = features(db, q["query"], results, seen, documents)
                good = {by_path[p] for p, g in q["relevant"].items() if g >= 2 and p in by_path}
                if q["slice"] != "no-match" and good & {r.item_id for r in results[:10]}:
                    useful[lib].add(q["id"])
        base = FEATURES[system]
        print(f"== {system}: today's features {'+'.join(base)}")
        print(run(base, feats, useful, queries))
        for extra in candidates:
            print(f"-- + {extra}")
            print(run(base + (extra,), feats, useful, queries))
        if system == "hybrid":
            for names in (
                ("similarity", "whole", "margin", "lex_cov", "full", "lexical", "unknown"),
                ("similarity", "whole", "lex_cov", "full", "unknown", "length"),
                ("similarity", "whole", "lex_cov", "full", "lexical", "unknown", "length"),
                base + ("lex_cov", "dense_lift", "agree", "idf_cov", "name_unk"),
            ):
                print(f"-- {'+'.join(names)}")
                print(run(names, feats, useful, queries))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
