"""Calibrating "no match" on development queries, on the annotated and the bare library:
`mambo bench no-match` fits the evidence model of each system (a small logistic model over what a
ranked list and the query say, search.evidence_features) for each library condition, on that
library, and picks its threshold. The annotated coefficients in search.EMPTY_RULES come from it; the
bare ones from the real-style set, held out by template (benchdata/experiments/nomatch_real.py,
whose fit and threshold use fit_logistic and as_rule from here); its bare fit on dev v2 is the
comparison. Registered under `mambo bench`."""

from __future__ import annotations

import dataclasses
import json
import random
from pathlib import Path
from typing import Any

import click
import numpy as np

from mambomeme.cli_base import open_library
from mambomeme.embed import get_embedder
from mambomeme.lab.bench import judged_queries
from mambomeme.lab.calibrate import evaluate_runs, objective
from mambomeme.library import DB
from mambomeme.output import MamboError, show_path
from mambomeme.search import Result, Searcher, evidence_features, evidence_score, sync_systems, system_config

# Which evidence each system has: bm25 has no dense similarity, dense no word route.
FEATURES = {
    "bm25": ("coverage", "full", "lexical", "unknown", "corrected", "absent"),
    "dense": ("similarity", "whole", "margin", "coverage", "full", "unknown", "corrected", "absent"),
    "hybrid": ("similarity", "whole", "margin", "coverage", "full", "lexical", "unknown", "corrected", "absent"),
}
# Answerable queries the rule may empty, at most (the target: false "no match" <= 3 %).
MAX_FALSE_EMPTY = 0.03
MAX_HIT_LOSS = 0.02  # ... and answerable Hit@10 down by at most this against the lists without a rule
# A library fewer than half of whose memes a sidecar described gets the bare library's model
# (search.condition_model; benchmark v1: the annotated library 0.92, the bare one 0).
BARE_BELOW = 0.5
L2 = 0.01  # ridge on the weights (not the bias): keeps the fit stable with ~450 samples
FOLDS = 5


def fit_logistic(
    x: np.ndarray, y: np.ndarray, l2: float = L2, iterations: int = 50, sample_weight: np.ndarray | None = None
) -> np.ndarray:
    """Newton-Raphson (IRLS) for logistic regression, each sample weighing `sample_weight` (1 when
    not given); returns [bias, weights...]."""
    xb = np.hstack([np.ones((len(x), 1)), x])
    sw = np.ones(len(x)) if sample_weight is None else sample_weight
    w = np.zeros(xb.shape[1])
    reg = np.full(xb.shape[1], l2)
    reg[0] = 0.0
    for _ in range(iterations):
        p = 1 / (1 + np.exp(-np.clip(xb @ w, -60, 60)))
        grad = xb.T @ (sw * (p - y)) + reg * w
        hess = (xb * (sw * p * (1 - p))[:, None]).T @ xb + np.diag(reg) + 1e-9 * np.eye(len(w))
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.max(np.abs(step)) < 1e-8:
            break
    return w


def as_rule(names: tuple[str, ...], w: np.ndarray, threshold: float) -> dict[str, Any]:
    return {
        "kind": "logistic",
        "bias": round(float(w[0]), 4),
        "weights": {n: round(float(v), 4) for n, v in zip(names, w[1:], strict=True)},
        "threshold": threshold,
    }


def by_condition(annotated: dict[str, Any], bare: dict[str, Any]) -> dict[str, Any]:
    """One system's rule: the annotated library's model, with the bare library's beside it."""
    return annotated | {"bare": {k: bare[k] for k in ("bias", "weights", "threshold")}, "bare_below": BARE_BELOW}


def apply(rule: dict[str, Any], raw: dict[str, list[Result]]) -> dict[str, list[Result]]:
    return {k: Searcher.empty_rule(rule, v) for k, v in raw.items()}


@dataclasses.dataclass
class Condition:
    """One library's unthresholded rankings of the queries, and which of them showed a useful meme."""

    db: DB
    raw: dict[str, list[Result]]
    useful: set[str]  # answerable query ids whose top 10 held an item judged useful (grade >= 2)


def condition(db: DB, searcher: Searcher, config: dict[str, Any], queries: list[dict[str, Any]]) -> Condition:
    raw = {q["id"]: searcher.search(q["query"], config, 10, empty_rule=False) for q in queries}
    by_path = dict(db.q("nomatch_files"))
    useful = {
        q["id"]
        for q in queries
        if q["slice"] != "no-match"
        and {by_path[p] for p, g in q["relevant"].items() if g >= 2 and p in by_path}
        & {r.item_id for r in raw[q["id"]][:10]}
    }
    return Condition(db, raw, useful)


def false_empty(c: Condition, queries: list[dict[str, Any]], runs: dict[str, list[Result]]) -> float:
    """A false "no match": an answerable query emptied although its list showed a useful meme
    (emptying a list of junk loses the user nothing; Hit@10 and Q count that case)."""
    ans = [q for q in queries if q["id"] in c.useful]
    return sum(1 for q in ans if not runs[q["id"]]) / len(ans) if ans else 0.0


def choose(
    names: tuple[str, ...], libs: dict[str, Condition], queries: list[dict[str, Any]], train: set[str]
) -> dict[str, Any]:
    """Fit on the `train` query ids of the libraries given (one condition's, as bench_no_match
    calls it), then the threshold with the most correct "no match" answers whose price is at most
    MAX_FALSE_EMPTY false "no match" and MAX_HIT_LOSS of Hit@10; ties go to the quality objective."""
    xs, ys = [], []
    for c in libs.values():
        for q in queries:
            if q["id"] in train and c.raw[q["id"]]:
                f = evidence_features(c.raw[q["id"]])
                xs.append([f[n] for n in names])
                ys.append(float(q["slice"] != "no-match"))
    w = fit_logistic(np.array(xs), np.array(ys))
    subset = [q for q in queries if q["id"] in train]
    unruled = {lib: evaluate_runs(c.db, subset, {q["id"]: c.raw[q["id"]] for q in subset}) for lib, c in libs.items()}
    best: dict[str, Any] | None = None
    for t in [round(0.02 * i, 2) for i in range(1, 50)]:
        rule = as_rule(names, w, t)
        per = {}
        for lib, c in libs.items():
            runs = apply(rule, {q["id"]: c.raw[q["id"]] for q in subset})
            per[lib] = evaluate_runs(c.db, subset, runs) | {"false_empty": false_empty(c, subset, runs)}
        ok = all(
            m["false_empty"] <= MAX_FALSE_EMPTY and m["hit10"] >= unruled[lib]["hit10"] - MAX_HIT_LOSS
            for lib, m in per.items()
        )
        key = (
            ok,
            round(sum(m["correct_empty"] for m in per.values()) / len(per), 4),
            sum(objective(m) for m in per.values()) / len(per),
        )
        if best is None or key > best["key"]:
            best = {"key": key, "rule": rule, "metrics": per}
    assert best is not None
    return best


@click.command(name="no-match")
@click.option(
    "--queries",
    "queries_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    required=True,
    help="Development queries (e.g. benchdata/v1/dev-v2.jsonl).",
)
@click.option(
    "--labels",
    "labels_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Judged final labels (`mambo bench labels` output) instead of the file's provisional grades.",
)
@click.option(
    "--bare",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    required=True,
    help="The bare library of the same corpus: the rule is calibrated on both conditions.",
)
@click.option("--system", "systems_", multiple=True, default=["bm25", "dense", "hybrid"], show_default=True)
@click.option("--seed", default=17, show_default=True, help="Seed of the family folds (cross-validation).")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def bench_no_match(
    ctx: click.Context,
    queries_path: Path,
    labels_path: Path | None,
    bare: Path,
    systems_: tuple[str, ...],
    seed: int,
    as_json: bool,
) -> None:
    """Calibrate each system's "no match" rule (an evidence model: logistic over the best dense
    similarity and its margin, word coverage, whether the word route found anything, and the share
    of query words the library never saw) on development queries over the annotated and the bare
    library, with the current rule and a family-fold cross-validation beside it."""
    db = open_library(ctx)
    sync_systems(db)
    bare_db = DB(bare, create=False)
    ctx.call_on_close(bare_db.close)
    queries = judged_queries(queries_path, labels_path)
    embedder = get_embedder()
    report: dict[str, Any] = {
        "queries": str(queries_path),
        "labels": str(labels_path) if labels_path else None,
        "bare": str(bare),
        "n": len(queries),
        "systems": {},
    }
    families = sorted({q["family"] for q in queries})
    random.Random(seed).shuffle(families)
    folds = [set(families[i::FOLDS]) for i in range(FOLDS)]
    for name in systems_:
        if name not in FEATURES:
            raise MamboError(f"no evidence features for system {name!r}: choose one of {', '.join(FEATURES)}")
        cfg = system_config(db, name)
        libs = {
            lib: condition(d, Searcher(d, embedder), cfg, queries) for lib, d in (("annotated", db), ("bare", bare_db))
        }
        current, unruled = {}, {}
        for lib, c in libs.items():
            runs = apply(cfg["empty_rule"], c.raw)
            current[lib] = evaluate_runs(c.db, queries, runs) | {"false_empty": false_empty(c, queries, runs)}
            # the lists without any rule: what MAX_HIT_LOSS is measured against
            unruled[lib] = evaluate_runs(c.db, queries, c.raw) | {"false_empty": 0.0}
        every = {q["id"] for q in queries}
        fits = {lib: choose(FEATURES[name], {lib: c}, queries, every) for lib, c in libs.items()}
        best = {
            "rule": by_condition(fits["annotated"]["rule"], fits["bare"]["rule"]),
            "metrics": {lib: fits[lib]["metrics"][lib] for lib in libs},
        }
        # Held-out: fit and threshold on four fifths of the families, measure on the fifth.
        held = {lib: {"correct_empty": [], "false_empty": []} for lib in libs}
        for fold in folds:
            train = {q["id"] for q in queries if q["family"] not in fold}
            test = [q for q in queries if q["family"] in fold]
            for lib, c in libs.items():
                rule = choose(FEATURES[name], {lib: c}, queries, train)["rule"]
                runs = apply(rule, {q["id"]: c.raw[q["id"]] for q in test})
                held[lib]["correct_empty"] += [float(not runs[q["id"]]) for q in test if q["slice"] == "no-match"]
                held[lib]["false_empty"] += [float(not runs[q["id"]]) for q in test if q["id"] in c.useful]
        cv = {lib: {k: round(sum(v) / len(v), 4) if v else None for k, v in m.items()} for lib, m in held.items()}
        scores = {
            lib: [
                round(evidence_score(fits[lib]["rule"], evidence_features(c.raw[q["id"]])), 3)
                for q in queries
                if c.raw[q["id"]]
            ]
            for lib, c in libs.items()
        }
        report["systems"][name] = {
            "rule": best["rule"],
            "calibrated": best["metrics"],
            "current": current,
            "no rule": unruled,
            "cross_validated": cv,
            "score_range": {k: [min(v), max(v)] for k, v in scores.items()},
        }
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    click.echo(
        f"{len(queries)} development queries from {show_path(queries_path)}"
        + (f", judged labels {show_path(labels_path)}" if labels_path else ", provisional grades")
    )
    for name, r in report["systems"].items():
        click.echo(f"{name}: rule {json.dumps(r['rule'])}")
        for lib in ("annotated", "bare"):
            for kind in ("no rule", "current", "calibrated"):
                m = r[kind][lib]
                click.echo(
                    f"  {lib:9} {kind:10} Q {m['Q']:.3f}  E {m['E']:.3f}  Hit@10 {m['hit10']:.3f}  "
                    f"CorrectEmpty {m['correct_empty']:.3f}  false no-match {m['false_empty']:.3f}  "
                    f"C {m['C']:.3f}  objective {objective(m):.4f}"
                )
            c = r["cross_validated"][lib]
            click.echo(
                f"  {lib:9} held-out   CorrectEmpty {c['correct_empty']}  false no-match {c['false_empty']} "
                f"({FOLDS} family folds)"
            )


# Registered under `mambo bench` by mambomeme/cli.py.
BENCH_COMMANDS = [bench_no_match]
