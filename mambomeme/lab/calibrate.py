"""Choices made on development queries: the ablation of retrieval's parts, which text an item embeds,
the "nothing matches" thresholds and route weights (`mambo bench calibrate`), and the TUI's latency
(`mambo bench tui`). Registered under `mambo bench` by mambomeme/cli.py."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from mambomeme.cli_base import open_library
from mambomeme.embed import CAPTION, PICTURE, embed_text, field_texts, get_embedder
from mambomeme.lab.bench import judged_queries, load_dev_queries, machine_info
from mambomeme.lab.pty import measure_latencies
from mambomeme.library import DB, FIXTURE_DIR, default_db_path
from mambomeme.output import show_path
from mambomeme.search import (
    DEFAULT_SYSTEM,
    DEFAULT_SYSTEMS,
    Result,
    Searcher,
    plan_for,
    results_details,
    sync_systems,
    system_config,
)


def ndcg_at_10(grades: list[float], ideal: list[float]) -> float:
    """The spec's nDCG@10: gain 2^rel - 1, discount log2(rank + 1)."""

    dcg = sum((2**g - 1) / math.log2(i + 2) for i, g in enumerate(grades[:10]))
    idcg = sum((2**g - 1) / math.log2(i + 2) for i, g in enumerate(sorted(ideal, reverse=True)[:10]))
    return dcg / idcg if idcg else 0.0


def objective(m: dict[str, Any]) -> float:
    """The retrieval-quality part of MMTS-Search-v1 (weights from the spec)."""
    return 0.55 * m["Q"] + 0.15 * m["E"] + 0.10 * m["C"]


def evaluate_runs(db: DB, queries: list[dict[str, Any]], runs: dict[str, list[Result]]) -> dict[str, Any]:
    """Per-slice nDCG@10, Hit@10, CorrectEmpty, C and ExactRR of ranked lists (item ids) for
    queries whose judgements name files relative to a library root."""
    by_path = {rel: item for item, rel in db.q("calibrate_files")}
    slices: dict[str, list[float]] = {}
    hits = answerable = empty_ok = no_match = 0
    exact_rr: list[float] = []
    for q in queries:
        results = runs[q["id"]]
        grades: dict[int, float] = {}
        for rel_path, g in q["relevant"].items():
            if rel_path in by_path:
                grades[by_path[rel_path]] = max(g, grades.get(by_path[rel_path], 0))
        ranked = [grades.get(r.item_id, 0) for r in results]
        if q["slice"] == "no-match":
            no_match += 1
            empty_ok += not results
            continue
        answerable += 1
        slices.setdefault(q["slice"], []).append(ndcg_at_10(ranked, list(grades.values())))
        hits += any(g >= 2 for g in ranked[:10])
        if q["exact"]:
            targets = {by_path[p] for p in q["exact"] if p in by_path}
            rank = next((i for i, r in enumerate(results[:10], 1) if r.item_id in targets), None)
            exact_rr.append(1 / rank if rank else 0.0)
    hit10 = hits / answerable if answerable else 0.0
    ce = empty_ok / no_match if no_match else 0.0
    return {
        "ndcg_by_slice": {k: round(sum(v) / len(v), 4) for k, v in sorted(slices.items())},
        "Q": round(sum(sum(v) / len(v) for v in slices.values()) / len(slices), 4) if slices else 0.0,
        "E": round(sum(exact_rr) / len(exact_rr), 4) if exact_rr else 0.0,
        "hit10": round(hit10, 4),
        "correct_empty": round(ce, 4),
        "C": round(2 * hit10 * ce / (hit10 + ce), 4) if hit10 + ce else 0.0,
    }


dev_queries_option = click.option(
    "--queries",
    "queries_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=lambda: str(FIXTURE_DIR / "queries.jsonl"),
    show_default="the fixture's development queries",
    help="Development queries (JSONL: id, slice, query, relevant {file: grade}, exact [file]).",
)


@click.command(name="tui")
@dev_queries_option
@click.option("--searches", default=1000, show_default=True)
@click.option("--warmups", default=100, show_default=True)
@click.option(
    "--system",
    "systems_",
    multiple=True,
    default=[DEFAULT_SYSTEM],
    show_default=True,
    help="System to measure (repeatable): one app each, taking turns every 50 searches on the same "
    "queries, so their ratio holds on a busy machine.",
)
@click.option(
    "--items",
    type=click.IntRange(0, 2_000_000),
    default=0,
    help="Measure on a copy of the library topped up to this many items with seeded synthetic ones "
    "(vectors mixed from its own, as `mambo bench load`); 0: the library itself.",
)
@click.option("--seed", default=42, show_default=True)
@click.option(
    "--enter-after",
    "enter_after_ms",
    type=click.IntRange(0, 5000),
    default=0,
    show_default=True,
    help="Press the submit key (Ctrl-S) this many ms after the query line shows the query, as a "
    "person does after the last key (the screen encodes the query meanwhile); 0: a paste and "
    "the submit at once.",
)
@click.pass_context
def bench_tui(
    ctx: click.Context,
    queries_path: Path,
    searches: int,
    warmups: int,
    systems_: tuple[str, ...],
    items: int,
    seed: int,
    enter_after_ms: int,
) -> None:
    """Submit-to-render latency of the real full-screen search in an 80x24 PTY (pexpect): the submit
    key (Ctrl-S) sent -> status line and complete list drawn, on the library given by --db. Prints JSON: one
    system's result as before, or each system's with the p50/p95 ratios to the last one."""
    import os
    import tempfile
    import time

    from mambomeme.lab.scale import scaled_copy

    db_path = ctx.obj["db_path"] or default_db_path()
    DB(db_path, create=False).close()
    queries = [q["query"] for q in load_dev_queries(queries_path)]
    with tempfile.TemporaryDirectory(prefix="mambo-bench-tui-") as tmp:
        library: dict[str, Any] = {"path": str(db_path)}
        if items:
            t0 = time.monotonic()
            scaled = Path(tmp) / "scaled.sqlite"
            library = {
                "path": f"{db_path} topped up to {items} items (seed {seed})",
                "items": scaled_copy(Path(db_path), scaled, items, seed),
                "build_seconds": round(time.monotonic() - t0, 1),
            }
            db_path = scaled
        load_before = [round(x, 2) for x in os.getloadavg()]
        got = measure_latencies(
            db_path,
            queries,
            list(systems_),
            n=searches,
            warmups=warmups,
            seed=seed,
            enter_after_s=enter_after_ms / 1000,
        )
        load_after = [round(x, 2) for x in os.getloadavg()]
    m = machine_info() | {"load_average_before": load_before, "load_average_after": load_after}
    if len(systems_) == 1:
        click.echo(json.dumps(got[systems_[0]] | {"library": library, "machine": m}, indent=2))
        return
    ref = systems_[-1]
    ratios = {
        f"{s}/{ref}": {
            p: round(got[s]["submit_to_render_ms"][p] / got[ref]["submit_to_render_ms"][p], 2) for p in ("p50", "p95")
        }
        for s in systems_[:-1]
    }
    click.echo(json.dumps({"systems": got, "ratios": ratios, "library": library, "machine": m}, indent=2))


@click.command(name="ablation")
@dev_queries_option
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def bench_ablation(ctx: click.Context, queries_path: Path, as_json: bool) -> None:
    """What each part of retrieval contributes on development queries: the systems with the typo
    (fuzzy) route, the slang aliases or the dense route removed, and the bit-quantized index."""
    db = open_library(ctx)
    queries = load_dev_queries(queries_path)
    searcher = Searcher(db, get_embedder())
    hybrid, bm25 = DEFAULT_SYSTEMS["hybrid"], DEFAULT_SYSTEMS["bm25"]
    variants = {
        "bm25": bm25,
        "bm25 with fuzzy route 0.5": bm25 | {"route_weights": bm25["route_weights"] | {"fuzzy": 0.5}},
        "bm25 without aliases": bm25 | {"use_aliases": False},
        "bm25 without corrections": bm25 | {"correct_typos": False},
        "hybrid": hybrid,
        "hybrid with fuzzy route 0.25": hybrid | {"route_weights": hybrid["route_weights"] | {"fuzzy": 0.25}},
        "hybrid without aliases": hybrid | {"use_aliases": False},
        "hybrid without corrections": hybrid | {"correct_typos": False},
        "hybrid, dense weight 0.5": hybrid | {"route_weights": hybrid["route_weights"] | {"dense": 0.5}},
        "hybrid, bit-quantized dense": hybrid | {"dense_index": "bit-rescore"},
        "hybrid, item filter .3/.5": hybrid
        | {"empty_rule": hybrid["empty_rule"] | {"item_min_similarity": 0.3, "item_min_coverage": 0.5}},
        "hybrid, item filter .35/.67": hybrid
        | {"empty_rule": hybrid["empty_rule"] | {"item_min_similarity": 0.35, "item_min_coverage": 0.67}},
        "hybrid, item filter .25/.34": hybrid
        | {"empty_rule": hybrid["empty_rule"] | {"item_min_similarity": 0.25, "item_min_coverage": 0.34}},
        "dense": DEFAULT_SYSTEMS["dense"],
    }
    report = {}
    for name, cfg in variants.items():
        runs = {q["id"]: searcher.search(q["query"], cfg) for q in queries}
        report[name] = evaluate_runs(db, queries, runs)
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    slices = sorted(next(iter(report.values()))["ndcg_by_slice"])
    click.echo(f"{len(queries)} development queries from {show_path(queries_path)}; nDCG@10 by slice:")
    click.echo(f"{'variant':28} {'Q':>6} " + " ".join(f"{s[:8]:>8}" for s in slices) + f" {'Hit@10':>7} {'C':>6}")
    for name, m in report.items():
        click.echo(
            f"{name:28} {m['Q']:6.3f} "
            + " ".join(f"{m['ndcg_by_slice'][s]:8.3f}" for s in slices)
            + f" {m['hit10']:7.3f} {m['C']:6.3f}"
        )


def _all_fields(d: dict[str, Any]) -> str:
    return embed_text(
        d["title"],
        d["template_text"] or "",
        json.loads(d["entities"]),
        json.loads(d["tags"]),
        d["description"],
        d["ocr_text"],
    )


def _field(kind: int) -> Callable[[dict[str, Any]], str]:
    return lambda d: field_texts(d["template_text"] or "", json.loads(d["tags"]), d["description"], d["ocr_text"])[kind]


# Each variant: the texts an item embeds; an item scores its best one (an empty text has no vector).
EMBED_TEXT_VARIANTS: dict[str, list[Callable[[dict[str, Any]], str]]] = {
    "all fields (v2)": [_all_fields],
    "caption only": [_field(CAPTION)],
    "picture only": [_field(PICTURE)],
    "metadata only": [
        lambda d: embed_text(
            d["title"], d["template_text"] or "", json.loads(d["entities"]), json.loads(d["tags"]), d["description"], ""
        )
    ],
    "best of all, caption (v3)": [_all_fields, _field(CAPTION)],
    "best of all, caption, picture (v3)": [_all_fields, _field(CAPTION), _field(PICTURE)],
}


@click.command(name="embed-text")
@dev_queries_option
@click.option(
    "--labels",
    "labels_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Judged final labels (`mambo bench labels` output) instead of the file's provisional grades.",
)
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def bench_embed_text(ctx: click.Context, queries_path: Path, labels_path: Path | None, as_json: bool) -> None:
    """Which text an item should embed: dense-only ranking quality (no empty rule) on development
    queries for each candidate text recipe, embedding the library's items in memory (an item scores
    its best vector where a recipe gives it several)."""
    import numpy as np

    db = open_library(ctx)
    queries = judged_queries(queries_path, labels_path)
    embedder = get_embedder()
    ids = [r[0] for r in db.q("calibrate_servable_items")]
    by_id = {d["item_id"]: d for d in results_details(db, ids)}
    details = [by_id[i] for i in ids]
    # the query text the dense route embeds (filler words out, slang and corrections in), read as the
    # dense system reads it
    qvecs = embedder.encode([plan_for(db, q["query"], DEFAULT_SYSTEMS["dense"]).dense_query for q in queries])
    cache: dict[Callable[[dict[str, Any]], str], Any] = {}

    def sims(make: Callable[[dict[str, Any]], str]) -> Any:
        if make not in cache:
            texts = [make(d) for d in details]
            empty = np.array([not t.strip() for t in texts])
            cache[make] = np.where(empty[None, :], -1.0, qvecs @ embedder.encode(texts).T)
        return cache[make]

    report = {}
    for name, makes in EMBED_TEXT_VARIANTS.items():
        best = np.maximum.reduce([sims(m) for m in makes])
        runs = {}
        for qi, q in enumerate(queries):
            order = np.argsort(-best[qi], kind="stable")[:10]
            runs[q["id"]] = [
                Result(ids[j], n, 0.0, None, None, None, None, 0.0, details[j]) for n, j in enumerate(order, 1)
            ]
        report[name] = evaluate_runs(db, [q for q in queries if q["slice"] != "no-match"], runs)
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    click.echo(f"dense-only nDCG@10 by slice over {len(ids)} items, {show_path(queries_path)}:")
    for name, m in report.items():
        click.echo(f"{name:36} Q {m['Q']:.3f}  " + "  ".join(f"{k} {v:.3f}" for k, v in m["ndcg_by_slice"].items()))


@click.command(name="calibrate")
@dev_queries_option
@click.option("--system", "systems_", multiple=True, default=["bm25", "dense", "hybrid"], show_default=True)
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def bench_calibrate(ctx: click.Context, queries_path: Path, systems_: tuple[str, ...], as_json: bool) -> None:
    """Choose route weights and the "nothing matches" thresholds on development queries. For each
    system it sweeps the fuzzy and dense route weights (the lexical weight stays 1), min
    similarity and min coverage, and picks the combination that maximises the quality part of
    MMTS-Search-v1, 0.55 Q + 0.15 E + 0.10 C (an empty answer costs Q and Hit@10, a shown junk list
    costs CorrectEmpty); ties go to higher C, then to the stricter rule. Uses only the queries given."""
    db = open_library(ctx)
    sync_systems(db)
    queries = load_dev_queries(queries_path)
    searcher = Searcher(db, get_embedder())
    report: dict[str, Any] = {"queries": str(queries_path), "n": len(queries), "systems": {}}
    sims = [round(0.20 + 0.05 * i, 2) for i in range(9)]
    covs = [round(0.25 + 0.125 * i, 3) for i in range(7)]
    for name in systems_:
        cfg = system_config(db, name)
        rw = cfg["route_weights"]
        fuzzies = [0.0, 0.25, 0.5] if rw["lexical"] > 0 else [rw["fuzzy"]]
        denses = [0.5, 1.0, 1.5] if rw["dense"] > 0 and rw["lexical"] > 0 else [rw["dense"]]
        grid = []
        for fuzzy in fuzzies:
            for dense in denses:
                variant = cfg | {"route_weights": rw | {"fuzzy": fuzzy, "dense": dense}}
                raw = {q["id"]: searcher.search(q["query"], variant, 10, empty_rule=False) for q in queries}
                for sim in sims:
                    for cov in covs:
                        rule = {"min_similarity": sim, "min_coverage": cov}
                        m = evaluate_runs(db, queries, {k: Searcher.empty_rule(rule, v) for k, v in raw.items()})
                        grid.append(
                            {
                                "fuzzy": fuzzy,
                                "dense": dense,
                                "min_similarity": sim,
                                "min_coverage": cov,
                                "objective": round(objective(m), 6),
                                **m,
                            }
                        )
        best = max(grid, key=lambda g: (g["objective"], g["C"], g["min_similarity"], g["min_coverage"]))
        current = evaluate_runs(db, queries, {q["id"]: searcher.search(q["query"], name, 10) for q in queries})
        report["systems"][name] = {
            "best": best,
            "current": current,
            "grid": [{k: v for k, v in g.items() if k != "ndcg_by_slice"} for g in grid],
        }
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    click.echo(f"{len(queries)} development queries from {show_path(queries_path)}")
    for name, r in report["systems"].items():
        b, c = r["best"], r["current"]
        click.echo(
            f"{name:8} current: Q {c['Q']:.3f}  E {c['E']:.3f}  Hit@10 {c['hit10']:.3f}  "
            f"CorrectEmpty {c['correct_empty']:.3f}  C {c['C']:.3f}  objective {objective(c):.4f}  "
            f"nDCG {c['ndcg_by_slice']}"
        )
        click.echo(
            f"{'':8} best:    fuzzy {b['fuzzy']}, dense {b['dense']}, min_similarity {b['min_similarity']}, "
            f"min_coverage {b['min_coverage']} -> Q {b['Q']:.3f}  E {b['E']:.3f}  Hit@10 {b['hit10']:.3f}  "
            f"CorrectEmpty {b['correct_empty']:.3f}  C {b['C']:.3f}  objective {b['objective']:.4f}"
        )


# Registered under `mambo bench` by mambomeme/cli.py.
BENCH_COMMANDS = [bench_tui, bench_ablation, bench_embed_text, bench_calibrate]
