"""The "no match" evidence model on the real-style development set (benchdata/real), held out by
template, each feature alone and all together, and refitted on real-style and dev v2 queries.

For each system it takes the unthresholded top 10 of every query (Searcher.search(...,
empty_rule=False)), the features search.evidence_features reads, and whether the rule decides the
list at all (a list whose first results hold the query's words is always shown: WORDS_THERE_TOP).
A model (logistic, label "answerable", `lab.nomatch.fit_logistic`) is fitted on four folds and its
threshold chosen there (the most CorrectEmpty whose false "no match" on the training folds' answerable
queries is at most CAP; ties to the lower threshold), then applied to the fifth; the held-out lists of
the five folds are scored together. Folds: real-style queries by template (benchdata/real/folds.py),
dev v2 queries by family (SHA-256 of the family name, 5 folds), so a family is never split.

Reported per model: CorrectEmpty, false "no match" (answerable queries emptied, of all answerable;
and of those whose unthresholded top 10 held a useful meme), nDCG@10 macro (Q) and the semantic
slice, each beside the same lists without a rule; and today's rule (search.EMPTY_RULES) on the same
lists. Training material: `real` (the real-style set only) or `real+v2` (with the dev v2 queries of
the same library condition, each set weighing the same in the fit).

    .venv/bin/python benchdata/experiments/nomatch_real.py --real REAL_COPY.sqlite \
        [--v2-bare V2_BARE_COPY.sqlite] [--cache DIR] > benchdata/experiments/nomatch_real-result.txt
"""

from __future__ import annotations

import argparse
import hashlib
import pickle
import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchdata" / "real"))

import folds as real_folds  # noqa: E402

from mambomeme.lab.bench import judged_queries  # noqa: E402
from mambomeme.lab.calibrate import evaluate_runs  # noqa: E402
from mambomeme.lab.nomatch import FEATURES, as_rule, condition, fit_logistic  # noqa: E402
from mambomeme.lab.product import (  # noqa: E402
    DB,
    REAL_WORD_MIN_COUNT,
    Searcher,
    english_frequencies,
    evidence_features,
    evidence_score,
    get_embedder,
    plan_query,
    sync_systems,
    system_config,
)

FOLDS = 5
CANDIDATES = ("rare", "any_rare")
CAPS = (0.0, 0.01, 0.02, 0.03, 0.05)
# Smaller models: the features whose weight keeps the sign its meaning gives (more similarity,
# coverage, a full match: answerable; unknown or corrected words, a named template the folder lacks:
# not), with and without the margin and the all-fields similarity.
SUBSETS = {
    "sim cov full unk cor abs": ("similarity", "coverage", "full", "unknown", "corrected", "absent"),
    "sim margin cov full unk cor abs": ("similarity", "margin", "coverage", "full", "unknown", "corrected", "absent"),
    "sim whole cov full unk cor abs": ("similarity", "whole", "coverage", "full", "unknown", "corrected", "absent"),
    "sim full unk abs": ("similarity", "full", "unknown", "absent"),
    "sim abs": ("similarity", "absent"),
}
CHOSEN = SUBSETS["sim margin cov full unk cor abs"]
GRID = [round(0.01 * i, 2) for i in range(1, 100)]


class Set:
    """One library's queries, their unthresholded lists, features and folds."""

    def __init__(self, name: str, db: DB, queries: list[dict[str, Any]], fold: dict[str, int], raw: dict, useful: set):
        self.name, self.db, self.queries, self.fold = name, db, queries, fold
        self.raw, self.useful = raw, useful
        text = {q["id"]: q["query"] for q in queries}
        self.feats = {qid: evidence_features(r) | self.candidates(text[qid]) if r else None for qid, r in raw.items()}
        # the rule decides only a list none of whose first results holds the query's words
        self.decides = {qid: bool(r) and not any(x.holds_query for x in r) for qid, r in raw.items()}
        self.answerable = [q for q in queries if q["slice"] != "no-match"]
        self.nomatch = [q for q in queries if q["slice"] == "no-match"]

    def candidates(self, query: str) -> dict[str, float]:
        """Evidence the product does not read yet. "rare": the share of the query's content words
        that the library never saw, no correction stands in for, and that are rare in English
        (under REAL_WORD_MIN_COUNT in pyspellchecker's list, the bar a template's name word is read
        by): names and coinages ("wojak", "ramsay") rather than other words for what a caption says."""
        plan = plan_query(self.db, query)
        freq = english_frequencies()
        rare = [w for w in plan.unknown if freq[w] < REAL_WORD_MIN_COUNT]
        return {"rare": len(rare) / len(plan.content) if plan.content else 0.0, "any_rare": float(bool(rare))}


def family_fold(family: str) -> int:
    return int(hashlib.sha256(("family:" + family).encode()).hexdigest()[:8], 16) % FOLDS


def load(name: str, path: Path, queries: list, fold: dict, system: str, cache: Path | None, embedder: Any) -> Set:
    db = DB(path, create=False)
    sync_systems(db)
    key = cache / f"{name}-{system}.pickle" if cache else None
    if key and key.exists():
        raw, useful = pickle.loads(key.read_bytes())
    else:
        c = condition(db, Searcher(db, embedder), system_config(db, system), queries)
        raw, useful = c.raw, c.useful
        if key:
            key.write_bytes(pickle.dumps((raw, useful)))
    return Set(name, db, queries, fold, raw, useful)


def scores(s: Set, names: tuple[str, ...], w: np.ndarray) -> dict[str, float]:
    """P(answerable) of each list the rule decides; 1.0 for a list it lets through unread."""
    rule = as_rule(names, w, 0.5)
    return {qid: evidence_score(rule, s.feats[qid]) if s.decides[qid] else 1.0 for qid in s.raw}


def emptied(s: Set, p: dict[str, float], t: float, qid: str) -> bool:
    return not s.raw[qid] or p[qid] < t


def fit(sets: list[Set], names: tuple[str, ...], train: dict[str, set[str]], decided_only: bool) -> np.ndarray:
    xs, ys, ws = [], [], []
    for s in sets:
        rows = [
            q
            for q in s.queries
            if q["id"] in train[s.name] and s.raw[q["id"]] and (s.decides[q["id"]] or not decided_only)
        ]
        for q in rows:
            xs.append([s.feats[q["id"]][n] for n in names])
            ys.append(float(q["slice"] != "no-match"))
            ws.append(1.0 / len(rows))  # each set weighs the same
    sw = np.array(ws) * len(ws) / sum(ws)  # mean weight 1: the ridge weighs as without weights
    return fit_logistic(np.array(xs), np.array(ys), sample_weight=sw)


def threshold(sets: list[Set], ps: dict[str, dict], train: dict[str, set[str]], cap: float) -> float:
    """The threshold with the most CorrectEmpty (mean over the sets) whose false "no match" (lists
    the rule empties) on each set's training answerable queries is at most `cap`; ties to the lower
    threshold."""
    best = (-1.0, 0.0)
    for t in GRID:
        ce, ok = [], True
        for s in sets:
            ans = [q["id"] for q in s.answerable if q["id"] in train[s.name]]
            nm = [q["id"] for q in s.nomatch if q["id"] in train[s.name]]
            # what the rule empties (bm25 finds nothing at all for some: no threshold changes that)
            fe = sum(bool(s.raw[i]) and emptied(s, ps[s.name], t, i) for i in ans) / max(1, len(ans))
            ok &= fe <= cap + 1e-9
            ce.append(sum(emptied(s, ps[s.name], t, i) for i in nm) / max(1, len(nm)))
        if ok and sum(ce) / len(ce) > best[0]:
            best = (sum(ce) / len(ce), t)
    return best[1] if best[0] >= 0 else 0.0


def held_out(
    sets: list[Set], names: tuple[str, ...], cap: float, decided_only: bool = True, fixed: np.ndarray | None = None
) -> dict[str, dict]:
    """Each set's lists, each fold's emptied by the model fitted and thresholded on the other folds
    (with `fixed` weights, only the threshold is chosen there)."""
    out: dict[str, dict] = {s.name: {} for s in sets}
    for k in range(FOLDS):
        train = {s.name: {q["id"] for q in s.queries if s.fold[q["id"]] != k} for s in sets}
        w = fixed if fixed is not None else fit(sets, names, train, decided_only)
        ps = {s.name: scores(s, names, w) for s in sets}
        t = threshold(sets, ps, train, cap)
        for s in sets:
            for q in s.queries:
                if s.fold[q["id"]] == k:
                    out[s.name][q["id"]] = [] if emptied(s, ps[s.name], t, q["id"]) else s.raw[q["id"]]
    return out


def measure(s: Set, runs: dict[str, list]) -> dict[str, Any]:
    m = evaluate_runs(s.db, s.queries, runs)
    fe = [q["id"] for q in s.answerable if not runs[q["id"]]]
    return {
        "ce": m["correct_empty"],
        "fe": len(fe),
        "fe_rate": len(fe) / len(s.answerable),
        "fe_useful": sum(i in s.useful for i in fe),
        "Q": m["Q"],
        "semantic": m["ndcg_by_slice"].get("semantic", 0.0),
        "slices": m["ndcg_by_slice"],
        "emptied": fe,
    }


def line(label: str, m: dict[str, Any], base: dict[str, Any]) -> str:
    return (
        f"  {label:<44} CE {m['ce']:.3f}  false no-match {m['fe']:>2} ({100 * m['fe_rate']:.1f} %, "
        f"{m['fe_useful']} useful)  Q {m['Q']:.3f} (no rule {base['Q']:.3f})  "
        f"semantic {m['semantic']:.3f} (no rule {base['semantic']:.3f})"
    )


def today(s: Set, rule: dict[str, Any]) -> dict[str, list]:
    return {qid: Searcher.empty_rule(rule, r) for qid, r in s.raw.items()}


def report(system: str, sets: dict[str, Set], rule: dict[str, Any], caps: tuple[float, ...]) -> None:
    names = FEATURES[system]
    base = {k: measure(s, s.raw) for k, s in sets.items()}
    print(f"== {system}")
    for k, s in sets.items():
        print(f"[{k}] {len(s.answerable)} answerable, {len(s.nomatch)} no-match")
        print(line("no rule", base[k], base[k]))
        m = measure(s, today(s, rule))
        print(line("today's rule (EMPTY_RULES)", m, base[k]))
        print(f"    emptied: {' '.join(m['emptied'])}")
    material = {"real": [sets["real"]]} | ({"real+v2": list(sets.values())} if len(sets) > 1 else {})
    print(f"-- features alone and together, fitted on real, held out by template, cap {caps[1]:.0%}")
    for label, ns in (
        [(f, (f,)) for f in names]
        + [("all", names)]
        + [(f"all - {f}", tuple(n for n in names if n != f)) for f in names]
    ):
        runs = held_out(material["real"], ns, caps[1])
        print(line(label, measure(sets["real"], runs["real"]), base["real"]))
    for extra in CANDIDATES:
        runs = held_out(material["real"], (extra,), caps[1])
        print(line(f"candidate {extra} alone", measure(sets["real"], runs["real"]), base["real"]))
        runs = held_out(material["real"], names + (extra,), caps[1])
        print(line(f"all + candidate {extra}", measure(sets["real"], runs["real"]), base["real"]))
    bare = rule.get("bare", rule)
    if rule.get("kind") == "logistic":
        # the bare model's own features (it may hold fewer than the system has)
        held = tuple(bare["weights"])
        fixed = np.array([bare["bias"]] + [bare["weights"][n] for n in held])
        print("-- today's bare weights, only the threshold chosen on the training folds")
        for cap in caps:
            runs = held_out(material["real"], held, cap, fixed=fixed)
            print(line(f"cap {cap:.0%}", measure(sets["real"], runs["real"]), base["real"]))
    print("-- all features, fit on lists the rule decides vs on every non-empty list (cap 1 %)")
    runs = held_out(material["real"], names, caps[1], decided_only=False)
    print(line("all, every non-empty list", measure(sets["real"], runs["real"]), base["real"]))
    for cap in caps[1:3]:
        print(f"-- smaller models, fitted on real, held out by template, cap {cap:.0%}")
        for label, ns in SUBSETS.items():
            runs = held_out(material["real"], ns, cap)
            print(line(label, measure(sets["real"], runs["real"]), base["real"]))
    for mat, ss in material.items():
        for label, ns in (("today's features", names), ("today's + rare", names + ("rare",)), ("chosen", CHOSEN)):
            print(f"-- trade-off: {label}, trained on {mat}, cap on the training folds' false no-match")
            for cap in caps:
                runs = held_out(ss, ns, cap)
                for s in ss:
                    print(line(f"cap {cap:.0%} -> held out on {s.name}", measure(s, runs[s.name]), base[s.name]))
    print(flush=True)


def final(system: str, sets: dict[str, Set], cap: float, material: str) -> None:
    """The rule (CHOSEN features) fitted on every fold of the chosen material, its threshold at
    `cap`, in-sample."""
    names = CHOSEN
    ss = [sets["real"]] if material == "real" else list(sets.values())
    every = {s.name: {q["id"] for q in s.queries} for s in ss}
    w = fit(ss, names, every, True)
    ps = {s.name: scores(s, names, w) for s in ss}
    t = threshold(ss, ps, every, cap)
    rule = as_rule(names, w, t)
    print(f"== {system} final ({material}, cap {cap:.0%}): {rule}")
    for s in ss:
        runs = {q["id"]: [] if emptied(s, ps[s.name], t, q["id"]) else s.raw[q["id"]] for q in s.queries}
        print(line(f"in-sample on {s.name}", measure(s, runs), measure(s, s.raw)))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--real", type=Path, required=True, help="a copy of the real-style bare library")
    ap.add_argument("--v2-bare", type=Path, help="a copy of the dev v2 bare library")
    ap.add_argument("--system", action="append", choices=sorted(FEATURES))
    ap.add_argument("--cache", type=Path, help="keep the unthresholded lists here between runs")
    ap.add_argument("--final", choices=("real", "real+v2"), help="print the rule fitted on every fold")
    ap.add_argument("--final-cap", type=float, default=0.01)
    args = ap.parse_args()
    if args.cache:
        args.cache.mkdir(parents=True, exist_ok=True)
    real_q = judged_queries(ROOT / "benchdata/real/dev.jsonl", ROOT / "benchdata/real/judgements/dev-set1.jsonl")
    real_fold = real_folds.query_folds()
    v2_q = judged_queries(ROOT / "benchdata/v1/dev-v2.jsonl", ROOT / "benchdata/v1/judgements/dev-v2-set1.jsonl")
    v2_fold = {q["id"]: family_fold(q["family"]) for q in v2_q}
    embedder = get_embedder()
    for system in args.system or ["hybrid", "dense"]:
        sets = {"real": load("real", args.real, real_q, real_fold, system, args.cache, embedder)}
        if args.v2_bare:
            sets["v2-bare"] = load("v2-bare", args.v2_bare, v2_q, v2_fold, system, args.cache, embedder)
        rule = system_config(sets["real"].db, system)["empty_rule"]
        if args.final:
            final(system, sets, args.final_cap, args.final)
        else:
            report(system, sets, rule, CAPS)


if __name__ == "__main__":
    main()
