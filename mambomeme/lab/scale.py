"""Scale benchmarks of `mambo bench`: search latency on libraries topped up with seeded synthetic
memes (`bench search`), a long mixed and hostile load (`bench load`) and cold starts (`bench cold`).
Numbers with the machine they ran on, never asserted by tests. mambomeme/cli.py registers BENCH_COMMANDS."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import subprocess
import sys
import time
import unicodedata
from pathlib import Path
from typing import Any

import click

from mambomeme.dense_index import (
    DENSE_OVERSAMPLE,
    IVF_MIN_VECTORS,
    IVF_PROBE,
    QUANTIZED_MIN_VECTORS,
    large_probe,
    maintain_vector_index,
    read_spill,
    spill_vectors,
)
from mambomeme.dense_memory import InMemoryVectors
from mambomeme.embed import CAPTION, PICTURE, Embedder, ensure_onnx, field_texts, get_embedder
from mambomeme.ingest import Ingester
from mambomeme.lab.bench import HOSTILE_QUERIES, load_dev_queries, machine_info, percentiles
from mambomeme.library import DB, FIXTURE_DIR, ROOT, insert_root, item_count
from mambomeme.output import MamboError, clean_line
from mambomeme.search import DEFAULT_SYSTEM, DEFAULT_SYSTEMS, Searcher, format_result, plan_for, sync_systems
from mambomeme.sidecars import Metadata
from mambomeme.state import file_params
from mambomeme.vocabulary import refresh_vocabulary

SYNTH_WORDS = (
    "monday coffee cat dog boss meeting deadline pizza gym exam teacher homework weekend party money rent "
    "landlord printer wifi laptop bug code deploy server cloud robot duck penguin wizard chef recipe kitchen "
    "mom dad kids school bus train rain snow summer winter beach holiday sleep alarm morning night zoom email "
    "phone battery charger game level boss fight hero villain dragon castle pirate ship ocean fish shark "
    "taxes bank savings salary promotion intern manager office desk chair plant garden tomato banana "
    "avocado toast breakfast cereal milk cookie cake birthday wedding dance music guitar drum concert "
    "movie popcorn sequel spoiler netflix series episode football goal referee coach marathon bicycle "
    "traffic parking ticket police fridge snack diet salad burger fries soda hangover regret anxiety "
    "confidence victory failure chaos calm panic"
).split()


def synthetic_library(
    db: DB, count: int, seed: int, real_vectors: Any, embedder: Embedder | None = None, embed_first: int = 0
) -> None:
    """Add `count` seeded synthetic items (text drawn from a fixed word list) beside whatever the
    library holds, for scale benchmarks. The first `embed_first` get real model vectors of their
    text; the rest (speed only) get vectors mixed from real ones plus noise."""

    import numpy as np

    rng = random.Random(seed)
    nrng = np.random.default_rng(seed)
    texts = [[rng.choice(SYNTH_WORDS) for _ in range(rng.randint(6, 18))] for _ in range(count)]
    real = min(embed_first, count) if embedder is not None else 0
    # An item's vectors as ingest writes them: all fields, and its caption and picture (labels)
    # evidence vectors (embed.field_texts), so the dense route scans what a real library holds.
    fields = [field_texts("", w[3:5], "", " ".join(w[5:])) for w in texts]
    encoded = (
        embedder.encode([" ".join(w) for w in texts[:real]] + [f[k] for f in fields[:real] for k in (CAPTION, PICTURE)])
        if real and embedder is not None
        else []
    )

    def mixed() -> Any:
        a, b = nrng.integers(0, len(real_vectors), 2)
        vec = real_vectors[a] * nrng.uniform(0.5, 1.0) + real_vectors[b] * nrng.uniform(0, 0.5)
        vec = vec + nrng.normal(0, 0.03, vec.shape)
        return (vec / np.linalg.norm(vec)).astype(np.float32)

    with db.write():
        root_id = insert_root(db, f"synthetic-{seed}", "/nonexistent/synthetic")
        for n, words in enumerate(texts):
            if n < real:
                vec, caption, picture = encoded[n], encoded[real + 2 * n], encoded[real + 2 * n + 1]
            else:
                vec, caption, picture = mixed(), mixed(), mixed()
            sha = hashlib.sha256(f"synthetic {seed} {n}".encode()).hexdigest()
            item_id = int(
                db.q1(
                    "insert_item",
                    Metadata(title=" ".join(words[:3]), tags=words[3:5]).params()
                    | {
                        "sha256": sha,
                        "format": "png",
                        "width": 500,
                        "height": 500,
                        "byte_size": 0,
                        "phash": rng.getrandbits(63),
                        "dhash": rng.getrandbits(63),
                        "perceptual_group": None,
                        "template_group": None,
                        "ocr_text": " ".join(words[5:]),
                        "ocr_engine_id": None,
                        "template_id": None,
                        "template_score": None,
                        "recognised_revision": 0,
                        "ocr_boxes": None,
                    },
                )[0]
            )
            db.q(
                "insert_file",
                {
                    "item_id": item_id,
                    "root_id": root_id,
                    "rel_path": f"s{n}.png",
                    "size": 0,
                    "mtime_ns": 0,
                    "sidecar_sha256": "",
                }
                | file_params(None),
            )
            db.q("insert_vector", {"item_id": item_id, "embedding": vec.tobytes()})
            db.q("insert_vector_bit", {"item_id": item_id, "embedding": vec.tobytes()})
            for kind, field_vec in ((CAPTION, caption), (PICTURE, picture)):
                if fields[n][kind]:
                    db.q("insert_field_vector", {"item_id": item_id, "kind": kind, "embedding": field_vec.tobytes()})
        refresh_vocabulary(db)  # as `mambo add` ends: typo correction knows the new words


def base_library(dest: Path, base: Path | None) -> Any:
    """The start of every scaled benchmark library: a copy of `base`, else the fixture memes
    ingested (real OCR and vectors). Returns its float32 vectors (synthetic items mix them)."""
    import shutil

    import numpy as np

    if base is not None:
        shutil.copy(base, dest)
    else:
        db = DB(dest)
        Ingester(db, progress=False).run([FIXTURE_DIR / "images"])
        db.close()
    db = DB(dest)
    try:
        return np.stack([np.frombuffer(v, dtype=np.float32) for (v,) in db.q("scale_float_vectors")])
    finally:
        db.close()


def scaled_copy(src: Path, dest: Path, items: int, seed: int) -> int:
    """A copy of the library `src` at `dest` (SQLite's backup: a pending WAL comes along), topped up
    to `items` with seeded synthetic items whose vectors mix its own (synthetic_library) and
    re-indexed as `mambo add` would: the same library at a larger size, for latency at scale.
    Returns its number of items."""
    import numpy as np

    source = DB(src, create=False, readonly=True)
    db = DB(dest)
    try:
        with db.con.backup("main", source.con, "main") as b:
            while not b.done:
                b.step(1024)
    finally:
        source.close()
    try:
        have = item_count(db)
        if items > have:
            real = np.stack([np.frombuffer(r[1], dtype=np.float32) for r in db.q("vectors_for_clustering")])
            synthetic_library(db, items - have, seed, real)
            maintain_vector_index(db)  # as `mambo add` would (none below IVF_MIN_VECTORS: exact)
        return item_count(db)
    finally:
        db.close()


def _timed_searches(
    path: str, variants: dict[str, dict[str, Any]], queries: list[str], order: list[str]
) -> dict[str, Any]:
    """`mambo bench search`'s measuring process: a fresh process that opens the library, loads the
    model and answers searches, as `mambo search` or the TUI would. Timings are of the engine (the
    query vector is computed in the warm-up and reused); its resident memory is the engine's, not
    the benchmark builder's."""
    import numpy as np

    db = DB(Path(path))
    embedder = get_embedder()
    qvecs: dict[str, Any] = {}

    class Frozen:  # query vectors computed once, in the warm-up: the engine alone is timed
        def encode(self, texts: list[str]) -> Any:
            for t in texts:
                if t not in qvecs:
                    qvecs[t] = embedder.encode([t])[0]
            return np.stack([qvecs[t] for t in texts])

    searcher = Searcher(db, Frozen())  # type: ignore[arg-type]
    out: dict[str, Any] = {}
    memory: Searcher | None = None
    for name, cfg in variants.items():
        if name.endswith("-memory") and memory is None:
            # the search screen's dense route: the vectors read into memory once (dense_memory.py)
            vectors = InMemoryVectors(Path(path))
            t = time.perf_counter()
            vectors.start()
            out["memory_loaded"] = vectors.wait(600)
            out["memory_load_ms"] = round((time.perf_counter() - t) * 1000, 1)
            memory = Searcher(db, Frozen(), vectors=vectors)  # type: ignore[arg-type]
        run = memory if name.endswith("-memory") and memory is not None else searcher
        for q in queries:  # warm-up: every query once
            run.search(q, cfg)
        ms = []
        for q in order:
            t = time.perf_counter()
            run.search(q, cfg)
            ms.append((time.perf_counter() - t) * 1000)
        out[name] = percentiles(ms)
    out["rss_mb"], out["peak_rss_mb"] = rss_mb(), rss_mb("VmHWM")
    db.close()
    return out


# The numpy floor reads at most this many vectors (3 GB) and is scaled to the rest.
FLOOR_MAX_VECTORS = 1_000_000


def exact_top10(
    spill: Path,
    ids: Any,
    servable: Any,
    whole: Any,
    queries: list[str],
    qvecs: dict[str, Any],
    *,
    whole_only: bool,
    batch: int = 200_000,
) -> dict[str, set[int]]:
    """Each query's exact float32 top 10 items (an item scores its best servable vector, all-fields
    ones only with `whole_only`), read from a spill file (vectors.spill_vectors) in batches."""
    import numpy as np

    if not queries:
        return {}
    item_of = np.where(whole, ids, ids >> 2)
    keep = servable.astype(bool) & (whole if whole_only else True)
    qmat = np.stack([qvecs[q] for q in queries]).astype(np.float32)
    best: list[dict[int, float]] = [{} for _ in queries]
    for start in range(0, len(ids), batch):
        rows = np.arange(start, min(len(ids), start + batch))
        sims = read_spill(spill, rows) @ qmat.T
        sims[~keep[rows]] = -np.inf
        for j in range(len(queries)):
            col = sims[:, j]
            top = np.argpartition(-col, 30)[:30] if len(col) > 30 else np.arange(len(col))
            for i in top.tolist():
                if col[i] > -np.inf:
                    item = int(item_of[start + i])
                    best[j][item] = max(best[j].get(item, -1.0), float(col[i]))
    return {q: set(sorted(b, key=lambda i: (-b[i], i))[:10]) for q, b in zip(queries, best, strict=True)}


def dense_recall(searcher: Searcher, exact: dict[str, set[int]], cfg: dict[str, Any]) -> float:
    """Mean recall@10 of an approximate dense configuration against the exact float32 top 10."""
    import numpy as np

    got = [
        len(want & {r.item_id for r in searcher.search(q, cfg, empty_rule=False)}) / len(want)
        for q, want in exact.items()
        if want
    ]
    return round(float(np.mean(got)), 4)


@click.command(name="search")
@click.option(
    "--items",
    "sizes",
    multiple=True,
    type=click.IntRange(100, 2_000_000),
    default=[10_000, 100_000],
    show_default=True,
    help="Library sizes to build (repeatable).",
)
@click.option("--searches", default=300, show_default=True, help="Timed searches per route and size.")
@click.option(
    "--real-vectors",
    default=10_000,
    show_default=True,
    help="Synthetic items embedded by the real model (recall is measured on these).",
)
@click.option(
    "--oversample",
    "oversamples",
    multiple=True,
    type=click.IntRange(1, 64),
    help="Also time the bit index at these oversampling factors, with their recall (repeatable).",
)
@click.option(
    "--probe",
    "probes",
    multiple=True,
    type=click.IntRange(1, 4096),
    help="Also time the coarse index probing this many clusters, with its recall (repeatable).",
)
@click.option(
    "--clusters",
    type=click.IntRange(1, 100_000),
    help="Cluster every size's library into this many centroids (default: as `mambo add` would, "
    f"sqrt(n)/4 from {IVF_MIN_VECTORS:,} vectors up, sqrt(n)/2 over "
    f"{QUANTIZED_MIN_VECTORS:,}).",
)
@click.option("--seed", default=11, show_default=True)
@click.option(
    "--base",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Start from a copy of this library instead of ingesting the fixture.",
)
@click.option(
    "--dir",
    "work_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Build the libraries in this folder (default: a temporary one); a million memes need "
    "~46 GB free while the index is built.",
)
@click.option("--json", "as_json", is_flag=True)
def bench_search(
    sizes: tuple[int, ...],
    searches: int,
    real_vectors: int,
    oversamples: tuple[int, ...],
    probes: tuple[int, ...],
    clusters: int | None,
    seed: int,
    base: Path | None,
    work_dir: Path | None,
    as_json: bool,
) -> None:
    """Search latency per route on reproducible scaled-up libraries: the fixture (real OCR and
    vectors) plus seeded synthetic items. Reports engine p50/p95 (SQL + fusion + empty rule, the
    query vector computed beforehand) measured in a fresh process with its resident memory, the
    query-encoding time, a numpy brute-force floor over the same float32 vectors, and recall@10 of
    the approximate dense indexes (coarse IVF, bit-quantized) against exact float32 (neighbours are
    real all-mpnet-base-v2 vectors: fixture items and --real-vectors synthetic texts), the library
    file's size and the building process's peak memory. A quantized library (over
    QUANTIZED_MIN_VECTORS) keeps int8 codes only: its float and bit routes are not timed, and the
    exact reference is the float vectors as written, kept in a file beside it. The floor is timed
    on at most FLOOR_MAX_VECTORS vectors and scaled to all (memory-bound: linear in the vectors read)."""
    import multiprocessing
    import shutil
    import tempfile
    from concurrent.futures import ProcessPoolExecutor

    import numpy as np

    queries = [q["query"] for q in load_dev_queries(FIXTURE_DIR / "queries.jsonl")]
    embedder = get_embedder()
    encode_ms = []
    for q in queries * 3:
        t = time.perf_counter()
        embedder.encode([q])
        encode_ms.append((time.perf_counter() - t) * 1000)
    dense, hybrid = DEFAULT_SYSTEMS["dense"], DEFAULT_SYSTEMS["hybrid"]
    variants = (
        {
            "bm25": DEFAULT_SYSTEMS["bm25"],
            "dense-float": dense | {"dense_index": "float"},
            "dense-ivf": dense | {"dense_index": "ivf"},
            "dense-bit": dense | {"dense_index": "bit-rescore"},
            "hybrid-float": hybrid | {"dense_index": "float"},
            "hybrid-ivf": hybrid | {"dense_index": "ivf"},
            "hybrid-bit": hybrid | {"dense_index": "bit-rescore"},
            # the search screen's way (vectors held in memory, up to MATRIX_MAX_VECTORS; beyond, the SQL route)
            "dense-memory": dense,
            "hybrid-memory": hybrid,
        }
        | {f"dense-ivf-p{p}": dense | {"dense_index": "ivf", "ivf_probe": p, "large_probe": p} for p in probes}
        | {f"dense-bit-x{o}": dense | {"dense_index": "bit-rescore", "dense_oversample": o} for o in oversamples}
    )
    default = {"float": "hybrid-float", "ivf": "hybrid-ivf", "bit-rescore": "hybrid-bit"}[hybrid["dense_index"]]
    report: dict[str, Any] = {
        "benchmark": "search",
        "seed": seed,
        "machine": machine_info(),
        "default": default,
        "dense_oversample": DENSE_OVERSAMPLE,
        "ivf_probe": IVF_PROBE,
        "query_encode_ms": percentiles(encode_ms),
        "sizes": {},
    }
    if work_dir is not None:
        work_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="mambo-bench-", dir=work_dir) as tmp:
        real = base_library(Path(tmp) / "base.sqlite", base)
        for size in sizes:
            path = Path(tmp) / f"lib-{size}.sqlite"
            shutil.copy(Path(tmp) / "base.sqlite", path)
            db = DB(path)
            t0 = time.monotonic()
            synthetic_library(db, max(0, size - len(real)), seed, real, embedder, real_vectors)
            build_s = time.monotonic() - t0
            # the exact reference: every float vector as written, kept outside the library (a large
            # library keeps int8 codes only once indexed)
            reference = Path(tmp) / f"lib-{size}.f32"
            ref_ids, ref_servable, ref_whole = spill_vectors(db, reference)
            t0 = time.monotonic()
            maintain_vector_index(db, clusters=clusters)
            index_s = time.monotonic() - t0
            index = db.q1("vector_index")
            vector_total = int(db.q1("vector_count")[0])
            quantized = vector_total > QUANTIZED_MIN_VECTORS
            db.close()
            builder_peak = rss_mb("VmHWM")
            rng = random.Random(seed)
            order = [rng.choice(queries) for _ in range(searches)]
            # a quantized library has no float vector: its only dense index is the int8 one
            timed = {
                k: v
                for k, v in variants.items()
                if not (quantized and v.get("dense_index") in ("float", "bit-rescore"))
            }
            with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as child:
                row: dict[str, Any] = child.submit(_timed_searches, str(path), timed, queries, order).result()
            row["builder_peak_rss_mb"] = builder_peak
            row["build_seconds"] = round(build_s, 1)
            row["clusters"] = index[0] if index else 0
            row["probe"] = large_probe(row["clusters"]) if quantized else IVF_PROBE
            row["index_seconds"] = round(index_s, 1)
            db = DB(path)
            # the floor scans what the dense route scans: every all-fields and evidence vector (up
            # to FLOOR_MAX_VECTORS of them, read into one matrix; the time is scaled to all)
            got = min(len(ref_ids), FLOOR_MAX_VECTORS)
            mat = read_spill(reference, np.arange(got))
            scale = vector_total / max(1, got)
            row["vectors"] = vector_total
            row["floor_vectors"] = got
            plans = {q: plan_for(db, q, DEFAULT_SYSTEMS["dense"]) for q in queries}
            qvecs = {q: embedder.encode([plans[q].dense_query])[0] for q in queries}
            floor = []
            for q in order:
                qv = qvecs[q]
                t = time.perf_counter()
                sims = mat @ qv
                top = np.argpartition(-sims, 10)[:10]
                top[np.argsort(-sims[top])]
                floor.append((time.perf_counter() - t) * 1000 * scale)
            del mat
            row["numpy_floor"] = percentiles(floor)
            searcher = Searcher(db, embedder)
            asked = [q for q in queries if plans[q].tokens]  # (a query of no words has no dense route)
            exact = exact_top10(reference, ref_ids, ref_servable, ref_whole, asked, qvecs, whole_only=False)
            row["ivf_recall_at_10"] = dense_recall(searcher, exact, variants["dense-ivf"])
            row["ivf_recall_by_probe"] = {p: dense_recall(searcher, exact, variants[f"dense-ivf-p{p}"]) for p in probes}
            # the bit index holds the all-fields vectors only: its recall is against their exact top
            # 10 (it rescores with float vectors: none in a quantized library)
            exact_whole = exact_top10(reference, ref_ids, ref_servable, ref_whole, asked, qvecs, whole_only=True)
            row["bit_recall_at_10"] = None if quantized else dense_recall(searcher, exact_whole, variants["dense-bit"])
            row["bit_recall_by_oversample"] = {
                o: None if quantized else dense_recall(searcher, exact_whole, variants[f"dense-bit-x{o}"])
                for o in oversamples
            }
            reference.unlink()
            # pages freed when the floats became codes: later writes (`mambo add`) reuse them
            free = int(db.q1("free_bytes")[0])
            db.close()
            row["database_mb"] = round(path.stat().st_size / 1e6, 1)
            row["database_live_mb"] = round((path.stat().st_size - free) / 1e6, 1)
            report["sizes"][str(size)] = row
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    m = report["machine"]
    click.echo(f"machine: {m['cpu']}, {m['cores']} cores, {m['memory_gb']} GB, Python {m['python']}")
    e = report["query_encode_ms"]
    click.echo(
        f"query encoding (all-mpnet-base-v2, warm): p50 {e['p50']} ms, p95 {e['p95']} ms; default system: {default}"
    )
    for size, row in report["sizes"].items():
        floor95 = row["numpy_floor"]["p95"]
        kind = "int8 codes" if row["vectors"] > QUANTIZED_MIN_VECTORS else "float"
        coarse = (
            f"{row['clusters']} clusters of {kind} ({row['index_seconds']} s), probe {row['probe']}"
            if row["clusters"]
            else "no clusters (exact)"
        )
        click.echo(
            f"{int(size):,} items, {row['vectors']:,} vectors (built in {row['build_seconds']} s, "
            f"database {row['database_mb']} MB, {row['database_live_mb']} MB in use, "
            f"builder peak RSS {row['builder_peak_rss_mb']} MB; "
            f"search process RSS {row['rss_mb']} MB, peak {row['peak_rss_mb']} MB):"
        )
        if row["floor_vectors"] < row["vectors"]:
            click.echo(f"  numpy floor timed on {row['floor_vectors']:,} vectors and scaled to all (extrapolated)")
        bit = (
            f"bit recall@10 {row['bit_recall_at_10']} at oversample {DENSE_OVERSAMPLE}"
            if row["bit_recall_at_10"] is not None
            else "no float vectors kept (int8 codes only)"
        )
        click.echo(f"  coarse index: {coarse}, recall@10 vs float {row['ivf_recall_at_10']}; {bit}")
        for name in [*(v for v in variants if v in row), "numpy_floor"]:
            ratio = f"   {row[name]['p95'] / floor95:5.1f}x floor p95" if name != "numpy_floor" and floor95 else ""
            recall_note = ""
            if name.startswith("dense-bit-x"):
                recall_note = f"   recall@10 {row['bit_recall_by_oversample'][int(name.rsplit('x', 1)[1])]}"
            elif name.startswith("dense-ivf-p"):
                recall_note = f"   recall@10 {row['ivf_recall_by_probe'][int(name.rsplit('p', 1)[1])]}"
            mark = " *" if name == default else ""
            click.echo(
                f"  {name + mark:15} p50 {row[name]['p50']:7.2f} ms   p95 {row[name]['p95']:7.2f} ms"
                f"{ratio}{recall_note}"
            )
        click.echo("  (* the default system)")


def load_queries(rng: Any, dev: list[str], n: int) -> list[str]:
    """`n` mixed queries: development queries, word queries over the synthetic vocabulary (1-4
    words), the same with one typo, and hostile strings, in a seeded order."""
    out = []
    for _ in range(n):
        kind = rng.random()
        if kind < 0.3:
            out.append(rng.choice(dev))
        elif kind < 0.7:
            out.append(" ".join(rng.choice(SYNTH_WORDS) for _ in range(rng.randint(1, 4))))
        elif kind < 0.85:
            w = rng.choice(SYNTH_WORDS)
            i = rng.randrange(len(w))
            out.append(w[:i] + rng.choice("abcdefghijklmnopqrstuvwxyz") + w[i + 1 :] + " " + rng.choice(SYNTH_WORDS))
        else:
            out.append(rng.choice(HOSTILE_QUERIES))
    return out


def rss_mb(field: str = "VmRSS") -> float:
    """Resident memory now (VmRSS; VmHWM: the peak so far), from /proc."""
    with contextlib.suppress(OSError, ValueError, StopIteration):
        line = next(x for x in Path("/proc/self/status").read_text().splitlines() if x.startswith(f"{field}:"))
        return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def start_times(runs: int) -> dict[str, dict[str, float]]:
    """What starting mambo costs before any work: `python -c pass` (the floor, in the same run),
    `mambo --version`, `mambo --help` and one shell-completion request (a Tab after `mambo se`),
    each a fresh process, interleaved; wall and CPU seconds (children's user + system time)."""
    import statistics

    script = str(ROOT / "mambo.py")
    cases = {
        "python -c pass": ([sys.executable, "-c", "pass"], {}),
        "mambo --version": ([sys.executable, script, "--version"], {}),
        "mambo --help": ([sys.executable, script, "--help"], {}),
        "completion (mambo se<Tab>)": (
            [sys.executable, script],
            {"_MAMBO_COMPLETE": "bash_complete", "COMP_WORDS": "mambo se", "COMP_CWORD": "1"},
        ),
        "completion (mambo search -s b<Tab>)": (
            [sys.executable, script],
            {"_MAMBO_COMPLETE": "bash_complete", "COMP_WORDS": "mambo search -s b", "COMP_CWORD": "3"},
        ),
    }
    if (ROOT / "mambo").exists():  # the checkout's launcher, as `./mambo` (or a symlink on PATH) runs it
        cases["./mambo --version (the launcher)"] = ([str(ROOT / "mambo"), "--version"], {"MAMBO_VENV": sys.prefix})
    wall: dict[str, list[float]] = {k: [] for k in cases}
    cpu: dict[str, list[float]] = {k: [] for k in cases}
    for _ in range(runs):
        for name, (argv, env) in cases.items():
            t0 = time.perf_counter()
            child = subprocess.Popen(
                argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, **env}
            )
            _, status, usage = os.wait4(child.pid, 0)
            wall[name].append(time.perf_counter() - t0)
            cpu[name].append(usage.ru_utime + usage.ru_stime)
            if os.waitstatus_to_exitcode(status) != 0:
                raise MamboError(f"`{name}` failed (exit {os.waitstatus_to_exitcode(status)}): run it to see why")
    return {
        k: {
            "wall_s_median": round(statistics.median(wall[k]), 3),
            "wall_s_min": round(min(wall[k]), 3),
            "cpu_s_median": round(statistics.median(cpu[k]), 3),
        }
        for k in cases
    }


def warm_bytecode() -> None:
    """A user's Python reads each module's cached bytecode (written by the first run, or by pip at
    install); with PYTHONDONTWRITEBYTECODE set (some sandboxes and CI do) every start would compile
    the package instead (~30 ms). The package is compiled once here and the children may cache."""
    import compileall

    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    compileall.compile_dir(str(ROOT / "mambomeme"), quiet=1)


@click.command(name="cold")
@click.option(
    "--query", "queries", multiple=True, default=("john cena",), show_default=True, help="Query to search (repeatable)."
)
@click.option(
    "--system",
    "systems_",
    multiple=True,
    default=("hybrid", "bm25"),
    show_default=True,
    help="System to time (repeatable); runs are interleaved so every system sees the same load.",
)
@click.option("--runs", default=5, show_default=True, type=click.IntRange(1, 100), help="Cold starts per system.")
@click.option(
    "--tui/--no-tui",
    default=True,
    show_default=True,
    help='Also time the full-screen search from launch to "model ready" (needs pexpect).',
)
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def bench_cold(
    ctx: click.Context, queries: tuple[str, ...], systems_: tuple[str, ...], runs: int, tui: bool, as_json: bool
) -> None:
    """What a user waits for: `mambo search QUERY` as a fresh process (wall time and peak RSS, per
    system, interleaved so the ratios are fair on a busy machine), and the full-screen search's
    launch-to-"model ready" time, on the library given by --db (e.g. the demo library)."""
    import statistics

    from mambomeme.library import default_db_path

    db_path = ctx.obj["db_path"] or default_db_path()
    DB(db_path, create=False).close()
    ensure_onnx()  # the ONNX export exists before anything is timed (made once per machine)
    warm_bytecode()
    wall: dict[str, list[float]] = {s: [] for s in systems_}
    rss: dict[str, list[float]] = {s: [] for s in systems_}
    cpu: dict[str, list[float]] = {s: [] for s in systems_}
    start = start_times(runs)
    for i in range(runs):
        for system in systems_:
            argv = [
                sys.executable,
                str(ROOT / "mambo.py"),
                "--db",
                str(db_path),
                "search",
                "-s",
                system,
                queries[i % len(queries)],
            ]
            t0 = time.perf_counter()
            # Cold: each search loads everything itself, never through a search helper.
            child = subprocess.Popen(
                argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=os.environ | {"MAMBO_NO_HELPER": "1"}
            )
            _, status, usage = os.wait4(child.pid, 0)  # wait4: this child's own peak RSS
            wall[system].append(time.perf_counter() - t0)
            child.returncode = os.waitstatus_to_exitcode(status)
            if child.returncode != 0:
                raise MamboError(f"`mambo {' '.join(argv[2:])}` failed (exit {child.returncode}): run it to see why")
            rss[system].append(usage.ru_maxrss / 1024)  # KiB on Linux
            cpu[system].append(usage.ru_utime + usage.ru_stime)
    report: dict[str, Any] = {
        "benchmark": "cold",
        "library": str(db_path),
        "runs": runs,
        "queries": list(queries),
        "start": start,
        "search": {
            s: {
                "wall_s_median": round(statistics.median(wall[s]), 3),
                "wall_s_max": round(max(wall[s]), 3),
                "wall_s_min": round(min(wall[s]), 3),
                "cpu_s_median": round(statistics.median(cpu[s]), 3),
                "rss_mb_median": round(statistics.median(rss[s]), 1),
            }
            for s in systems_
        },
    }
    if len(systems_) >= 2:
        a, b = systems_[0], systems_[1]
        report["ratio"] = {f"{a}/{b}": round(statistics.median(wall[a]) / statistics.median(wall[b]), 2)}
    if tui:
        from mambomeme.lab.pty import MeasuredTUI, time_to_model_ready

        ready = [time_to_model_ready(db_path) for _ in range(runs)]
        report["tui_model_ready_s"] = {"median": round(statistics.median(ready), 3), "max": round(max(ready), 3)}
        painted = []
        for _ in range(runs):
            app = MeasuredTUI(db_path, DEFAULT_SYSTEM, wait_ready=False, ready="Search:")
            painted.append(app.ready_s)
            app.close()
        report["tui_first_paint_s"] = {"median": round(statistics.median(painted), 3), "max": round(max(painted), 3)}
    report["machine"] = machine_info() | {"load_average": [round(x, 2) for x in os.getloadavg()]}
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    for name, r in report["start"].items():
        click.echo(
            f"{name}: {r['wall_s_median']} s median ({r['wall_s_min']} min) wall, "
            f"{r['cpu_s_median']} s CPU, {runs} runs"
        )
    for s, r in report["search"].items():
        click.echo(
            f"mambo search -s {s}: {r['wall_s_median']} s median ({r['wall_s_min']} min, {r['wall_s_max']} max) "
            f"wall, {r['cpu_s_median']} s CPU, {r['rss_mb_median']} MB peak RSS, {runs} cold runs"
        )
    for k, v in report.get("ratio", {}).items():
        click.echo(f"ratio {k}: {v}")
    if tui:
        t = report["tui_model_ready_s"]
        click.echo(f'full-screen search, launch to "model ready": {t["median"]} s median ({t["max"]} max)')
        t = report["tui_first_paint_s"]
        click.echo(f"full-screen search, launch to first paint: {t['median']} s median ({t['max']} max)")
    m = report["machine"]
    click.echo(
        f"machine: {m['cpu']}, {m['cores']} cores, {m['memory_gb']} GB, Python {m['python']}, "
        f"load average {' '.join(map(str, m['load_average']))}"
    )


@click.command(name="load")
@click.option(
    "--items",
    "size",
    default=10_000,
    show_default=True,
    type=click.IntRange(100, 2_000_000),
    help="Library size (the fixture plus seeded synthetic items).",
)
@click.option("--searches", default=10_000, show_default=True, type=click.IntRange(1, 10_000_000))
@click.option(
    "--real-vectors",
    default=1_000,
    show_default=True,
    help="Synthetic items embedded by the real model (the rest mix real vectors).",
)
@click.option("--seed", default=13, show_default=True)
@click.option(
    "--base",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Start from a copy of this library instead of ingesting the fixture.",
)
@click.option("--json", "as_json", is_flag=True)
def bench_load(size: int, searches: int, real_vectors: int, seed: int, base: Path | None, as_json: bool) -> None:
    """Many searches in a row on one library, as a long TUI session would run them: every system
    (bm25, dense, hybrid, and variants with the fuzzy route and the bit-quantized index), with the
    query embedded by the real model each time, on mixed queries (development, synthetic words,
    typos, hostile strings). Counts errors and printed results that would not be terminal-safe;
    samples resident memory at the start, middle and end (it must stay flat)."""
    import tempfile

    embedder = get_embedder()
    dev = [q["query"] for q in load_dev_queries(FIXTURE_DIR / "queries.jsonl")]
    rng = random.Random(seed)
    queries = load_queries(rng, dev, searches)
    hybrid, bm25 = DEFAULT_SYSTEMS["hybrid"], DEFAULT_SYSTEMS["bm25"]
    systems = {
        "bm25": "bm25",
        "dense": "dense",
        "hybrid": "hybrid",
        "hybrid-bit": hybrid | {"dense_index": "bit-rescore"},
        "hybrid-float": hybrid | {"dense_index": "float"},
        "bm25-fuzzy": bm25 | {"route_weights": {"lexical": 1.0, "fuzzy": 0.5, "dense": 0.0}},
        "all-routes": hybrid | {"route_weights": {"lexical": 1.0, "fuzzy": 0.5, "dense": 1.0}},
    }
    order = [rng.choice(list(systems)) for _ in range(searches)]
    report: dict[str, Any] = {
        "benchmark": "load",
        "items": size,
        "searches": searches,
        "seed": seed,
        "machine": machine_info(),
    }
    with tempfile.TemporaryDirectory(prefix="mambo-bench-") as tmp:
        path = Path(tmp) / "load.sqlite"
        t0 = time.monotonic()
        real = base_library(path, base)
        db = DB(path)
        sync_systems(db)
        synthetic_library(db, max(0, size - len(real)), seed, real, embedder, real_vectors)
        maintain_vector_index(db)  # as `mambo add` would
        report["build_seconds"] = round(time.monotonic() - t0, 1)
        report["library_items"] = item_count(db)
        searcher = Searcher(db, embedder)
        for name in systems:  # warm-up: caches, statements, the model's first call
            searcher.search("monday coffee", systems[name])
        errors: dict[str, int] = {}
        samples: list[str] = []
        unsafe = shown = empty = 0
        ms: dict[str, list[float]] = {name: [] for name in systems}
        rss = {"start": rss_mb()}
        t_run = time.monotonic()
        for i, (q, name) in enumerate(zip(queries, order, strict=True)):
            if i == searches // 2:
                rss["middle"] = rss_mb()
            t = time.perf_counter()
            try:
                results = searcher.search(q, systems[name], 10)
            except Exception as e:  # noqa: BLE001 - every failure is counted and reported, not raised
                key = f"{type(e).__name__}: {clean_line(str(e))[:80]}"
                errors[key] = errors.get(key, 0) + 1
                if len(samples) < 5:
                    samples.append(f"{name} {q[:40]!r}: {key}")
                continue
            ms[name].append((time.perf_counter() - t) * 1000)
            empty += not results
            for r in results:
                shown += 1
                line = format_result(r)
                unsafe += any(unicodedata.category(c) in ("Cc", "Cf") and c != "\n" for c in line)
        rss["end"] = rss_mb()
        report["run_seconds"] = round(time.monotonic() - t_run, 1)
        db.close()
    everything = [x for v in ms.values() for x in v]
    report |= {
        "errors": sum(errors.values()),
        "error_kinds": errors,
        "error_samples": samples,
        "results_shown": shown,
        "unsafe_lines": unsafe,
        "no_match": empty,
        "rss_mb": rss,
        "rss_growth_mb": round(rss["end"] - rss["start"], 1),
        "latency_ms": percentiles(everything) if everything else {},
        "latency_ms_by_system": {k: percentiles(v) for k, v in ms.items() if v},
    }
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    m = report["machine"]
    click.echo(
        f"load: {searches} searches on {report['library_items']:,} items (built in "
        f"{report['build_seconds']} s), {report['run_seconds']} s: {report['errors']} errors, "
        f"{unsafe} unsafe output lines, {empty} no-match answers"
    )
    click.echo(f"  RSS start {rss['start']} MB, middle {rss.get('middle', rss['start'])} MB, end {rss['end']} MB")
    lat = report["latency_ms"]
    if lat:
        click.echo(f"  all searches: p50 {lat['p50']} ms, p95 {lat['p95']} ms (query embedding included)")
    for name, row in report["latency_ms_by_system"].items():
        click.echo(f"  {name:11} n {row['n']:5}  p50 {row['p50']:7.2f} ms  p95 {row['p95']:7.2f} ms")
    for line in samples:
        click.echo(f"  error: {clean_line(line)}")
    click.echo(f"machine: {m['cpu']}, {m['cores']} cores, {m['memory_gb']} GB, Python {m['python']}")
    if report["errors"] or unsafe:
        raise MamboError(f"{report['errors']} error(s), {unsafe} unsafe line(s) in {searches} searches")


BENCH_COMMANDS = [bench_search, bench_cold, bench_load]
