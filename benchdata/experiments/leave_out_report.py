"""The "no match" rules on leave-out libraries and on folds held out by template group.

For each library condition (annotated, bare) and each fold of `v1/leave-out.jsonl`, a copy of the
library has the fold's units pruned the way `mambo prune` forgets files (files deleted, orphan items
and their words, vectors and states removed, vocabulary refreshed, vector index maintained): the
library as if those memes were never added. In that view the fold's leave-out queries must be
answered "no match" and every dev v2 answerable query whose useful memes remain must stay answered.

Reports per system and condition: (a) dev v2 on the whole library, (b) the leave-out set (CorrectEmpty
on its queries, false "no match" on the dev v2 answerable queries run in the views), (c) held out by
template: the evidence model fitted and thresholded by `lab.nomatch.choose` on the other folds'
queries (leave-out queries and the dev v2 queries whose judged memes' groups sit in those folds;
dev v2 no-match queries dealt to folds by family), measured on the fold's. Hit@10 loss is against
the same lists without a rule. Each is reported "before" (the same lists with the words-there rule
off: search.WORDS_THERE_TOP) and "after", with the false "no match" of queries typed with a swapped
letter (dev v2's answerable queries, and the first four caption words of each meme judged useful for
one) and the no-match queries the words-there rule answers. `--features`: the evidence features of
EXTRA, each beside today's and all together, held out by template.

    .venv/bin/python benchdata/experiments/leave_out_report.py --lib LIB --bare BARE --scratch DIR
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import sqlite3
import sys
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))

from mambomeme.lab.bench import judged_queries  # noqa: E402
from mambomeme.lab.calibrate import evaluate_runs  # noqa: E402
from mambomeme.lab.nomatch import (  # noqa: E402  # noqa: E402
    FEATURES,
    MAX_FALSE_EMPTY,
    MAX_HIT_LOSS,
    Condition,
    apply,
    as_rule,
    choose,
    condition,
    false_empty,
    fit_logistic,
)
from mambomeme.lab.product import (  # noqa: E402
    ARTICLES,
    DB,
    FILLER_WORDS,
    Searcher,
    coverage,
    evidence_features,
    evidence_score,
    forget_files,
    get_embedder,
    holds_word,
    idf_weights,
    item_words,
    normalise_query,
    plan_for,
    sync_systems,
    system_config,
)

V1 = HERE.parent / "v1"
FOLD_SEED = 35


class CachedEmbedder:
    """The model, each distinct text encoded once: the same queries run in every view."""

    def __init__(self, inner: Any):
        self.inner, self.cache = inner, {}

    def encode(self, texts: list[str]) -> Any:
        missing = [t for t in texts if t not in self.cache]
        if missing:
            for t, v in zip(missing, self.inner.encode(missing), strict=True):
                self.cache[t] = v
        import numpy as np

        return np.stack([self.cache[t] for t in texts])

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def view(source: Path, dest: Path, paths: set[str]) -> DB:
    """A copy of the library without the files at `paths` (relative to their root), pruned as
    upkeep.prune forgets files that are gone (upkeep.forget_files)."""
    if not dest.exists():
        tmp = dest.with_suffix(".tmp")
        tmp.unlink(missing_ok=True)
        src = sqlite3.connect(source)
        out = sqlite3.connect(tmp)
        src.backup(out)
        out.close()
        src.close()
        db = DB(tmp, create=False)
        forget_files(db, [int(fid) for fid, _item, _root, _rp, rel, _sha, _size in db.q("all_files") if rel in paths])
        db.close()
        tmp.rename(dest)
    return DB(dest, create=False)


def measure(c: Condition, rule: dict[str, Any], subset: list[dict[str, Any]]) -> dict[str, Any]:
    """CorrectEmpty, false "no match", Hit@10 and its loss against the unruled lists, of `rule` on `subset`."""
    unruled = {q["id"]: c.raw[q["id"]] for q in subset}
    runs = apply(rule, unruled)
    m, m0 = evaluate_runs(c.db, subset, runs), evaluate_runs(c.db, subset, unruled)
    return {
        "correct_empty": round(m["correct_empty"], 3),
        "false_empty": round(false_empty(c, subset, runs), 3),
        "hit10": round(m["hit10"], 3),
        "hit10_loss": round(m0["hit10"] - m["hit10"], 3),
    }


# Features a person would use, tried beside today's (search.evidence_features): the idf-weighted word
# coverage of the top three, whether one of them holds the query's rarest word, the query's shape
# (it holds a filler word: "X meme", "X pic"), and "phrase": the longest run of the typed words (filler
# and articles left out) that one field of a top-three meme holds in the same order, side by side, as
# a share of the typed words (a remembered caption line vs the same words scattered).
EXTRA = ("idf_coverage", "rare_held", "shape", "phrase")
# Measured alone beside today's, after "all" above: "agreement", the dense similarity of the meme of
# the top ten that holds most of the query's words (the word evidence), as a share of the best
# similarity (the meaning evidence): 0 when no meme holds a word.
LATER = ("agreement",)


def phrase_share(plan: Any, details: dict[str, Any]) -> float:
    typed = [t for t in plan.tokens if t not in FILLER_WORDS and t not in ARTICLES]
    if not typed:
        return 0.0
    best = 0
    names = " ".join(
        [
            details["title"],
            details.get("template_text") or details["template"],
            " ".join(json.loads(details["entities"])),
        ]
    )
    for text in (names, details["ocr_text"]):
        field = [w for w in normalise_query(text) if w not in ARTICLES]
        for i in range(len(typed)):
            for j in range(len(field)):
                n = 0
                while i + n < len(typed) and j + n < len(field) and holds_word(plan, typed[i + n], {field[j + n]}):
                    n += 1
                best = max(best, n)
    return best / len(typed)


def extras(db: DB, cfg: dict[str, Any], query: str, results: list[Any]) -> dict[str, float]:
    plan = plan_for(db, query, cfg)
    if not plan.content or not results:
        return dict.fromkeys(EXTRA + LATER, 0.0)
    idf = idf_weights(db, plan)
    rare = max(plan.content, key=lambda t: idf[t])
    words = [item_words(r.details) for r in results[:3]]
    return {
        "idf_coverage": max(coverage(plan, w, idf) for w in words),
        "rare_held": float(any(holds_word(plan, rare, w) for w in words)),
        "shape": float(any(t in FILLER_WORDS for t in plan.tokens)),
        "phrase": max(phrase_share(plan, r.details) for r in results[:3]),
        "agreement": agreement(results),
    }


def agreement(results: list[Any]) -> float:
    best = max((r.similarity or 0.0 for r in results[:10]), default=0.0)
    worded = max(results[:10], key=lambda r: (r.coverage, r.similarity or 0.0))
    return (worded.similarity or 0.0) / best if best > 0 and worded.coverage > 0 else 0.0


def fit_choose(
    names: tuple[str, ...], c: Condition, queries: list[dict[str, Any]], train: set[str], x: dict[str, dict[str, float]]
) -> dict[str, Any]:
    """nomatch.choose over features `x` (qid -> features): fit, then the threshold with the most
    CorrectEmpty within the false "no match" and Hit@10 bounds."""
    sub = [q for q in queries if q["id"] in train and c.raw[q["id"]]]
    w = fit_logistic(
        np.array([[x[q["id"]][n] for n in names] for q in sub]),
        np.array([float(q["slice"] != "no-match") for q in sub]),
    )
    subset = [q for q in queries if q["id"] in train]
    unruled = {q["id"]: c.raw[q["id"]] for q in subset}
    h0 = evaluate_runs(c.db, subset, unruled)["hit10"]
    best = None
    for t in [round(0.02 * i, 2) for i in range(1, 50)]:
        rule = as_rule(names, w, t)
        runs = runs_x(rule, unruled, x)
        m = evaluate_runs(c.db, subset, runs)
        ok = false_empty(c, subset, runs) <= MAX_FALSE_EMPTY and m["hit10"] >= h0 - MAX_HIT_LOSS
        key = (ok, round(m["correct_empty"], 4), m["hit10"])
        if best is None or key > best[0]:
            best = (key, rule)
    assert best is not None
    return best[1]


def runs_x(rule: dict[str, Any], raw: dict[str, list[Any]], x: dict[str, dict[str, float]]) -> dict[str, list[Any]]:
    """A fitted rule over features `x`; a list whose words are there (holds_query) is never emptied."""
    return {
        k: v if v and (any(r.holds_query for r in v) or evidence_score(rule, x[k]) >= rule["threshold"]) else []
        for k, v in raw.items()
    }


def rate(xs: list[float]) -> float | None:
    return round(sum(xs) / len(xs), 3) if xs else None


def template_folds(dev: list[dict[str, Any]], lo: list[dict[str, Any]]) -> dict[str, int]:
    """Dev v2 queries by template fold: an answerable query goes with the fold that removes most of
    its judged memes (none removed: dealt by family, as no-match queries are)."""
    folds = sorted({r["fold"] for r in lo})
    removed = {k: {p for r in lo if r["fold"] == k for p in r["leave_out"]} for k in folds}
    fams = sorted({q["family"] for q in dev})
    random.Random(FOLD_SEED).shuffle(fams)
    fam_fold = {f: folds[i % len(folds)] for i, f in enumerate(fams)}
    out = {}
    for q in dev:
        useful = {p for p, g in q["relevant"].items() if g >= 2}
        counts = {k: len(useful & removed[k]) for k in folds}
        best = max(folds, key=lambda k: (counts[k], -k))
        out[q["id"]] = best if counts[best] else fam_fold[q["family"]]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lib", type=Path, required=True)
    ap.add_argument("--bare", type=Path, required=True)
    ap.add_argument("--scratch", type=Path, required=True, help="where the pruned copies are kept")
    ap.add_argument("--queries", type=Path, default=V1 / "dev-v2.jsonl")
    ap.add_argument("--labels", type=Path, default=V1 / "judgements" / "dev-v2-set1.jsonl")
    ap.add_argument("--leave-out", type=Path, default=V1 / "leave-out.jsonl")
    ap.add_argument("--system", action="append", default=None)
    ap.add_argument("--conditions", default="annotated,bare")
    ap.add_argument("--features", action="store_true", help="also the evidence features tried (EXTRA), held out")
    args = ap.parse_args()
    systems = args.system or ["bm25", "dense", "hybrid"]
    dev = judged_queries(args.queries, args.labels)
    lo = [json.loads(x) for x in args.leave_out.read_text(encoding="utf-8").splitlines() if x.strip()]
    folds = sorted({r["fold"] for r in lo})
    removed = {k: {p for r in lo if r["fold"] == k for p in r["leave_out"]} for k in folds}
    dev_fold = template_folds(dev, lo)
    lo_queries = [
        {
            "id": r["id"],
            "query": r["query"],
            "slice": "no-match",
            "family": r["unit"]["key"],
            "relevant": {},
            "exact": [],
            "exact_groups": [],
            "subsets": [],
        }
        for r in lo
    ]
    embedder = CachedEmbedder(get_embedder())
    args.scratch.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {}
    for cond in args.conditions.split(","):
        path = args.lib if cond == "annotated" else args.bare
        full = DB(path, create=False)
        sync_systems(full)
        views = {k: view(path, args.scratch / f"{cond}-fold{k}.sqlite", removed[k]) for k in folds}
        for name in systems:
            cfg = system_config(full, name)
            whole = condition(full, Searcher(full, embedder), cfg, dev)
            raw, useful = dict(whole.raw), set(whole.useful)
            queries = list(dev)
            fold_of = dict(dev_fold)
            answerable = [q for q in dev if q["slice"] != "no-match"]
            for k, vdb in views.items():
                mine = [q for q in lo_queries if lo[int(q["id"][3:]) - 1]["fold"] == k]
                kept = [
                    q | {"id": f"{q['id']}@{k}"}
                    for q in answerable
                    if not ({p for p, g in q["relevant"].items() if g >= 2} & removed[k])
                ]
                c = condition(vdb, Searcher(vdb, embedder), cfg, mine + kept)
                raw.update(c.raw)
                useful |= c.useful
                queries += mine + kept
                fold_of.update({q["id"]: k for q in mine})
                fold_of.update({q["id"]: dev_fold[q["id"].split("@")[0]] for q in kept})
            where = {q["id"]: full for q in dev} | {
                q["id"]: views[int(q["id"].split("@")[1])] for q in queries if "@" in q["id"]
            }
            where |= {q["id"]: views[fold_of[q["id"]]] for q in queries if q["id"] in {r["id"] for r in lo}}
            x = {
                q["id"]: (evidence_features(raw[q["id"]]) if raw[q["id"]] else {})
                | extras(where[q["id"]], cfg, q["query"], raw[q["id"]])
                for q in queries
            }
            # typed captions with a swapped letter: dev v2's answerable queries, each with its longest
            # content word's second and third letters swapped, on the whole library
            typo = [
                q | {"id": q["id"] + "~swap", "query": swapped}
                for q in answerable
                if (swapped := swap_letter(full, cfg, q["query"]))
            ]
            typo += caption_typos(full, cfg, answerable)
            typo_c = condition(full, Searcher(full, embedder), cfg, typo)
            raw |= typo_c.raw
            useful |= typo_c.useful
            # the no-match queries the words-there rule answers, and what it found there (an audit)
            for q in queries:
                hit = next((r for r in raw[q["id"]] if r.holds_query), None)
                if q["slice"] == "no-match" and hit is not None:
                    print(
                        f"# {name} {cond} words there for no-match {q['id']} {q['query']!r}: "
                        f"{' '.join(hit.details['ocr_text'].split())[:100]!r}",
                        flush=True,
                    )
            # "before": the same lists with the words-there rule off (it marks results, the rule reads them)
            for variant, lists in (("before", {k: unmarked(v) for k, v in raw.items()}), ("after", raw)):
                out = evaluate(
                    name, cfg, full, dev, queries, typo, lists, useful, fold_of, folds, lo_queries, x, args.features
                )
                report.setdefault(name, {}).setdefault(cond, {})[variant] = out
                print(name, cond, variant, json.dumps({k: v for k, v in out.items() if k != "refit_all"}), flush=True)
    print(json.dumps(report, indent=1))
    return 0


def swap_letter(db: DB, cfg: dict[str, Any], query: str) -> str | None:
    """The query with its longest content word (4+ letters) typed with its second and third letters
    swapped ("pretends" -> "pertends"), or None when it has no such word."""
    plan = plan_for(db, query, cfg)
    words = [t for t in plan.content if len(t) >= 4 and t.isalpha() and t[1] != t[2]]
    if not words:
        return None
    w = max(words, key=len)
    return " ".join(w[0] + w[2] + w[1] + w[3:] if t == w else t for t in plan.tokens)


def caption_typos(db: DB, cfg: dict[str, Any], answerable: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Captions typed with a swapped letter: for each meme judged useful (grade >= 2) for a dev v2
    answerable query (one query per meme), the first four words of its caption as the library read
    it, the longest content word's second and third letters swapped; the meme is the answer."""
    item_of = dict(db.con.execute("SELECT rel_path, item_id FROM files"))
    files: dict[int, list[str]] = {}
    for rel, item in item_of.items():
        files.setdefault(item, []).append(rel)
    out, seen = [], set()
    for q in answerable:
        for path in sorted(p for p, g in q["relevant"].items() if g >= 2 and p in item_of):
            item = item_of[path]
            if item in seen:
                continue
            seen.add(item)
            (text,) = db.con.execute("SELECT ocr_text FROM items WHERE item_id = ?", (item,)).fetchone()
            swapped = swap_letter(db, cfg, " ".join(normalise_query(text or "")[:4]))
            if swapped:
                out.append(
                    {
                        "id": f"{q['id']}~cap{item}",
                        "query": swapped,
                        "slice": "quote",
                        "family": q["family"],
                        "relevant": dict.fromkeys(files[item], 3.0),
                        "exact": [],
                        "exact_groups": [],
                        "subsets": [],
                    }
                )
    return out


def unmarked(results: list[Any]) -> list[Any]:
    return [dataclasses.replace(r, holds_query=False) for r in results]


def evaluate(
    name: str,
    cfg: dict[str, Any],
    full: DB,
    dev: list[dict[str, Any]],
    queries: list[dict[str, Any]],
    typo: list[dict[str, Any]],
    raw: dict[str, list[Any]],
    useful: set[str],
    fold_of: dict[str, int],
    folds: list[int],
    lo_queries: list[dict[str, Any]],
    x: dict[str, dict[str, float]],
    features: bool,
) -> dict[str, Any]:
    allc = Condition(full, raw, useful)
    rule = cfg["empty_rule"]
    in_views = [q for q in queries if "@" in q["id"]]
    lo_ids = {q["id"] for q in lo_queries}

    out: dict[str, Any] = {
        "dev_v2": measure(allc, rule, dev),
        "leave_out": {
            "correct_empty": measure(allc, rule, [q for q in queries if q["id"] in lo_ids])["correct_empty"],
            **{k: v for k, v in measure(allc, rule, in_views).items() if k != "correct_empty"},
        },
        # false "no match" of the queries typed with a swapped letter whose list held a useful meme
        **{
            key: {
                "queries": len(sub),
                "useful": sum(q["id"] in useful for q in sub),
                "false_empty": round(false_empty(allc, sub, apply(rule, {q["id"]: raw[q["id"]] for q in sub})), 3),
            }
            for key, sub in (
                ("swapped_letter", [q for q in typo if "~swap" in q["id"]]),
                ("caption_swapped", [q for q in typo if "~cap" in q["id"]]),
            )
        },
    }
    # (c) held out by template group: fit on the other folds, measure on the fold
    if name in FEATURES:
        ce, fe, hit, hit0 = [], [], [], []
        for k in folds:
            train = {q["id"] for q in queries if fold_of[q["id"]] != k}
            test = [q for q in queries if fold_of[q["id"]] == k]
            fitted = choose(FEATURES[name], {"lib": allc}, queries, train)["rule"]
            runs = apply(fitted, {q["id"]: raw[q["id"]] for q in test})
            ce += [float(not runs[q["id"]]) for q in test if q["slice"] == "no-match"]
            fe += [float(not runs[q["id"]]) for q in test if q["id"] in useful]
            m = evaluate_runs(full, test, runs)
            m0 = evaluate_runs(full, test, {q["id"]: raw[q["id"]] for q in test})
            n_ans = sum(1 for q in test if q["slice"] != "no-match")
            hit.append(m["hit10"] * n_ans)
            hit0.append(m0["hit10"] * n_ans)
        n_ans = sum(1 for q in queries if q["slice"] != "no-match")
        out["held_out_template"] = {
            "correct_empty": rate(ce),
            "false_empty": rate(fe),
            "hit10_loss": round((sum(hit0) - sum(hit)) / n_ans, 3),
        }
        out["current_rule_on_same_folds"] = measure(allc, rule, queries)
        refit = choose(FEATURES[name], {"lib": allc}, queries, {q["id"] for q in queries})
        out["refit_all"] = {"rule": refit["rule"], "metrics": refit["metrics"]["lib"]}
    if name in FEATURES and features:
        # today's features alone, each extra beside them, and all together, held out by template
        for label, names in (
            [("today", FEATURES[name])]
            + [(f"+{e}", FEATURES[name] + (e,)) for e in EXTRA]
            + [("+all", FEATURES[name] + EXTRA)]
            + [(f"+{e}", FEATURES[name] + (e,)) for e in LATER]
        ):
            ce, fe = [], []
            for k in folds:
                train = {q["id"] for q in queries if fold_of[q["id"]] != k}
                test = [q for q in queries if fold_of[q["id"]] == k]
                rule_k = fit_choose(names, allc, queries, train, x)
                runs = runs_x(rule_k, {q["id"]: raw[q["id"]] for q in test}, x)
                ce += [float(not runs[q["id"]]) for q in test if q["slice"] == "no-match"]
                fe += [float(not runs[q["id"]]) for q in test if q["id"] in useful]
            out.setdefault("features_held_out", {})[label] = {"correct_empty": rate(ce), "false_empty": rate(fe)}
    return out


if __name__ == "__main__":
    sys.exit(main())
