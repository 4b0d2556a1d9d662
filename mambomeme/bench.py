"""`mambo bench`: numbers with the machine they ran on, never asserted by tests: ingest throughput,
crash safety under kill -9 (soak), template recognition, search latency on scaled-up libraries, and a
long mixed (and hostile) load. The evaluation and calibration modules add their own bench commands."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import random
import signal
import sys
import time
import unicodedata
from pathlib import Path
from typing import Any

import click

from mambomeme.embed import CAPTION, PICTURE, Embedder, ensure_onnx, field_texts, get_embedder
from mambomeme.ingest import IMAGE_SUFFIXES, Ingester
from mambomeme.library import CONTEXT, DB, FIXTURE_DIR, ROOT, SAFETY_CLASSES, MamboError, clean_line, show_path
from mambomeme.ocr import get_ocr
from mambomeme.search import DEFAULT_SYSTEMS, Searcher, format_result, plan_query, sync_systems
from mambomeme.sidecars import MANIFEST_NAME, Metadata
from mambomeme.templates import (
    MIN_INLIERS,
    ORB_QUERY_FEATURES,
    ORB_TEMPLATE_FEATURES,
    SPARSE_MIN_INLIERS,
    SPARSE_SHARE,
    SPARSE_SPREAD,
    TemplateIndex,
    accepted,
    fingerprint_rgb,
    fingerprint_view,
    insert_template_view,
    next_templates_revision,
    orb_features,
    required_inliers,
    sync_catalogue,
)
from mambomeme.vectors import DENSE_OVERSAMPLE, IVF_MIN_VECTORS, IVF_PROBE, maintain_vector_index


def machine_info() -> dict[str, Any]:
    """What a benchmark ran on: reported with every number."""
    import platform
    from importlib import metadata

    cpu = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    mem = 0
    with contextlib.suppress(OSError, ValueError, IndexError):
        mem = int(Path("/proc/meminfo").read_text().split()[1]) * 1024
    versions = {}
    for pkg in ("apsw", "sqlite-vec", "onnxruntime", "torch", "sentence-transformers", "numpy"):
        with contextlib.suppress(metadata.PackageNotFoundError):
            versions[pkg] = metadata.version(pkg)
    return {"cpu": cpu, "cores": os.cpu_count(), "memory_gb": round(mem / 2**30, 1),
            "python": platform.python_version(), "os": platform.platform(), "packages": versions}


def synthetic_variants(src: Path, out: Path, count: int, seed: int) -> list[Path]:
    """`count` distinct images made from the fixture memes by seeded crops, rescales, colour
    shifts and re-encodes: every one is new content with a real caption for OCR to read."""

    from PIL import Image, ImageEnhance

    rng = random.Random(seed)
    sources = sorted(p for p in src.rglob("*") if p.suffix.lower() in IMAGE_SUFFIXES)
    out.mkdir(parents=True, exist_ok=True)
    made = []
    for n in range(count):
        img = Image.open(sources[n % len(sources)]).convert("RGB")
        w, h = img.size
        c = rng.uniform(0, 0.04)
        img = img.crop((int(w * c), int(h * c), w - int(w * c), h - int(h * c)))
        scale = rng.uniform(0.8, 1.25)
        img = img.resize((max(64, int(img.width * scale)), max(64, int(img.height * scale))))
        img = ImageEnhance.Color(img).enhance(rng.uniform(0.7, 1.3))
        path = out / f"synthetic-{n:06d}.{'jpg' if n % 3 else 'png'}"
        img.save(path, quality=rng.randint(70, 92)) if n % 3 else img.save(path)
        made.append(path)
    return made


@click.group(context_settings=CONTEXT)
def bench() -> None:
    """Benchmarks: numbers with the machine they ran on (never asserted by tests)."""


@bench.command(name="ingest")
@click.option("--images", "count", default=300, show_default=True, type=click.IntRange(1, 100_000),
              help="How many synthetic images to ingest.")
@click.option("--seed", default=7, show_default=True)
@click.option("--workers", type=click.IntRange(1, 64), help="OCR worker processes (default: one per core).")
@click.option("--json", "as_json", is_flag=True)
def bench_ingest(count: int, seed: int, workers: int | None, as_json: bool) -> None:
    """End-to-end ingest throughput (decode, hashes, preview, OCR, embedding, writes) into a fresh
    library, on seeded variants of the fixture memes. Model loading is counted."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="mambo-bench-") as tmp:
        images = synthetic_variants(FIXTURE_DIR / "images", Path(tmp) / "images", count, seed)
        db = DB(Path(tmp) / "bench.sqlite")
        t0 = time.monotonic()
        ing = Ingester(db, progress=sys.stderr.isatty(), workers=workers)
        stats = ing.run([Path(tmp) / "images"])
        seconds = time.monotonic() - t0
        recognised = int(db.rows("recognised_counts")[0]["recognised"])
        size = db.path.stat().st_size
        db.close()
    report = {"benchmark": "ingest", "images": len(images), "added": stats.added, "errors": stats.errors,
              "seconds": round(seconds, 2), "images_per_second": round(stats.added / seconds, 2),
              "database_mb": round(size / 1e6, 2), "seed": seed,
              # template recognition inside the OCR workers (ORB + index + RANSAC), per new image
              "recognition": {"templates_indexed": len(ing.templates) if ing.templates else 0,
                              "wall_ms": _pcts(ing.recognise_ms) if ing.recognise_ms else {},
                              "cpu_ms": _pcts(ing.recognise_cpu_ms) if ing.recognise_cpu_ms else {},
                              "recognised_items": recognised},
              "machine": machine_info()}
    if as_json:
        click.echo(json.dumps(report, indent=2))
    else:
        m = report["machine"]
        click.echo(f"ingest: {stats.added} images in {seconds:.1f} s = {report['images_per_second']} images/s "
                   f"end to end (model loading included), {stats.errors} errors, "
                   f"database {report['database_mb']} MB")
        rec = report["recognition"]
        if rec["wall_ms"]:
            click.echo(f"template recognition: {rec['wall_ms']['p50']} ms p50 / {rec['wall_ms']['p95']} ms p95 wall, "
                       f"{rec['cpu_ms']['p50']} ms p50 / {rec['cpu_ms']['p95']} ms p95 CPU per image against "
                       f"{rec['templates_indexed']} template views; {rec['recognised_items']} recognised")
        click.echo(f"machine: {m['cpu']}, {m['cores']} cores, {m['memory_gb']} GB, Python {m['python']}")


def _soak_child(root: click.Command, db_path: Path, folder: Path, batch: int) -> None:
    """A forked `mambo add` (the real command line, `root`: the command this bench runs under): never returns."""
    try:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        root.main(["--db", str(db_path), "add", "-q", "--workers", "1", "--batch-size", str(batch), str(folder)],
                 prog_name="mambo")
    finally:
        os._exit(0)


def _soak_verify(db_path: Path, before: dict[str, dict[str, Any]], errors_before: int) -> dict[str, Any]:
    """What the next command sees after a crash: integrity, every item in every route or none,
    nothing indexed or judged before the crash lost or changed."""
    db = DB(db_path)  # the recovery any next command does: WAL replay, migrations
    try:
        integrity = db.scalar("PRAGMA integrity_check")
        consistency = {k: v for k, v in db.rows("consistency")[0].items() if v}
        now = {r["path"]: r for r in db.rows("indexed_snapshot")}
        lost = [p for p, r in before.items() if now.get(p) != r]
        errors = int(db.q1("error_count")[0])
    finally:
        db.close()
    return {"integrity": integrity, "consistency": consistency, "lost": lost, "snapshot": now,
            "errors_lost": max(0, errors_before - errors), "errors": errors}


@bench.command(name="soak")
@click.option("--kills", default=100, show_default=True, type=click.IntRange(1, 100_000),
              help="How many ingests to kill -9.")
@click.option("--images", "count", default=40, show_default=True, type=click.IntRange(2, 10_000),
              help="Synthetic images in the folder (plus the fixture's broken files and a manifest).")
@click.option("--max-delay", default=6.0, show_default=True, help="Kill after a random 0.05..this many seconds.")
@click.option("--batch-size", "batch", default=2, show_default=True, type=click.IntRange(1, 1000))
@click.option("--seed", default=8, show_default=True)
@click.option("--json", "as_json", is_flag=True)
def bench_soak(kills: int, count: int, max_delay: float, batch: int, seed: int, as_json: bool) -> None:
    """Crash safety: run `mambo add` on a folder and kill -9 it at seeded random moments, again
    and again, each run resuming the last. After every kill the library must pass
    `PRAGMA integrity_check`, hold every item in every route (words, trigrams, float and bit
    vectors, preview) or in none, and still hold everything indexed or judged before; when the
    folder is complete, a new round starts on a fresh library. Ends with one uninterrupted run that
    must index the whole folder.

    The model is loaded once here and each `mambo add` is a fork of this process, so a kill costs
    ~1 s (the OCR engine starts in each child) rather than ~15 s of imports."""
    import shutil
    import tempfile

    # The embedder's onnxruntime session has one intra-op thread: a forked child inherits no pool.
    embedder = get_embedder()
    embedder.encode(["warm up"])
    rng = random.Random(seed)
    t_start = time.monotonic()
    report: dict[str, Any] = {"benchmark": "soak", "kills": 0, "kills_mid_write": 0, "completed_runs": 0,
                              "rounds": 1, "interrupted_runs": 0, "integrity_failures": 0, "inconsistent": 0,
                              "lost": 0, "errors_lost": 0, "seed": seed, "images": count, "batch_size": batch,
                              "max_delay_s": max_delay, "failures": []}
    with tempfile.TemporaryDirectory(prefix="mambo-soak-") as tmp:
        folder = Path(tmp) / "memes"
        made = synthetic_variants(FIXTURE_DIR / "images", folder, count, seed)
        # Judgements and errors are part of what must survive: a manifest with titles and safety
        # classes for some images, and the fixture's broken files.
        with open(folder / MANIFEST_NAME, "w", encoding="utf-8") as fh:
            for n, path in enumerate(made[::3]):
                fh.write(json.dumps({"file": path.name, "title": f"soak title {n}",
                                     "safety": SAFETY_CLASSES[n % 2]}) + "\n")
        shutil.copytree(FIXTURE_DIR / "bad", folder / "bad")
        db_path = Path(tmp) / "soak.sqlite"
        before: dict[str, dict[str, Any]] = {}
        errors_before = 0

        def check(state: str) -> dict[str, Any]:
            v = _soak_verify(db_path, before, errors_before)
            bad = []
            if v["integrity"] != "ok":
                report["integrity_failures"] += 1
                bad.append(f"integrity: {v['integrity']}")
            if v["consistency"]:
                report["inconsistent"] += 1
                bad.append(f"half-written items: {v['consistency']}")
            if v["lost"]:
                report["lost"] += len(v["lost"])
                bad.append(f"lost or changed: {v['lost'][:3]}")
            report["errors_lost"] += v["errors_lost"]
            if bad:
                report["failures"].append(f"{state}: " + "; ".join(bad))
            return v

        def interrupted_runs() -> int:
            """Killed runs the next run found still 'running' and marked interrupted."""
            db = DB(db_path, create=False, readonly=True)
            try:
                return int(db.q1("interrupted_runs")[0])
            finally:
                db.con.close()

        def files_now() -> int:
            with contextlib.suppress(Exception):  # the file may not exist yet, or be mid-creation
                db = DB(db_path, create=False, readonly=True)
                try:
                    return int(db.scalar("SELECT count(*) FROM files"))
                finally:
                    db.con.close()
            return 0

        for k in range(kills):
            # Half the kills at a random moment of the run (start-up included), half at a random
            # moment just after the run has committed new items (inside later batches' work and
            # writes): start-up takes seconds on a loaded machine, and would otherwise get most.
            after_commit = rng.random() < 0.5
            delay = rng.uniform(0, 1.0) if after_commit else rng.uniform(0.05, max_delay)
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                _soak_child(click.get_current_context().find_root().command, db_path, folder, batch)
            t0 = time.monotonic()
            wait_status = None
            if after_commit:
                while files_now() <= len(before) and time.monotonic() - t0 < 120:
                    done, status_ = os.waitpid(pid, os.WNOHANG)
                    if done:  # it finished without committing anything new
                        wait_status = status_
                        break
                    time.sleep(0.05)
                delay += time.monotonic() - t0
            if wait_status is None:
                time.sleep(max(0.0, t0 + delay - time.monotonic()))
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                _pid, wait_status = os.waitpid(pid, 0)
            killed = os.WIFSIGNALED(wait_status)
            v = check(f"kill {k + 1} after {delay:.2f} s")
            report["kills"] += killed
            report["completed_runs"] += not killed
            report["kills_mid_write"] += killed and len(v["snapshot"]) > len(before)
            report.setdefault("timeline", []).append([round(delay, 2), len(v["snapshot"]), killed])
            before, errors_before = v["snapshot"], v["errors"]
            if not killed:  # the folder is complete: start again on a fresh library
                report["rounds"] += 1
                report["interrupted_runs"] += interrupted_runs()
                for suffix in ("", "-wal", "-shm"):
                    Path(str(db_path) + suffix).unlink(missing_ok=True)
                before, errors_before = {}, 0
        pid = os.fork()
        if pid == 0:
            _soak_child(click.get_current_context().find_root().command, db_path, folder, batch)
        os.waitpid(pid, 0)
        final = check("final uninterrupted run")
        db = DB(db_path)
        expected = len(made) + 2  # fine.png and broken-sidecar.png from the broken files
        report["final"] = {"files": len(final["snapshot"]), "expected_files": expected,
                           "items": int(db.scalar("SELECT count(*) FROM items")),
                           "running_runs_left": int(db.q1("running_runs")[0]),
                           "interrupted_runs": int(db.q1("interrupted_runs")[0])}
        db.close()
        # every round's, not only the last one's (a round that ended on a completed run leaves a
        # fresh library to the final run)
        report["interrupted_runs"] += report["final"]["interrupted_runs"]
        if report["final"]["files"] != expected or report["final"]["running_runs_left"]:
            report["failures"].append(f"final run: {report['final']}")
    report["seconds"] = round(time.monotonic() - t_start, 1)
    report["machine"] = machine_info()
    report["ok"] = not report["failures"]
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    click.echo(f"soak: {report['kills']} kill -9s ({report['kills_mid_write']} after new items were committed), "
               f"{report['completed_runs']} runs finished first, {report['rounds']} round(s), {report['seconds']} s")
    click.echo(f"  integrity failures {report['integrity_failures']}, half-written states {report['inconsistent']}, "
               f"indexed files lost {report['lost']}, recorded errors lost {report['errors_lost']}")
    click.echo(f"  final run: {report['final']['files']}/{report['final']['expected_files']} files, "
               f"{report['final']['items']} items; {report['interrupted_runs']} killed runs marked interrupted "
               "by the run after them")
    for f in report["failures"]:
        click.echo(f"  FAILED {clean_line(f)}")
    if report["failures"]:
        raise MamboError(f"{len(report['failures'])} failure(s) after kill -9")
    m = report["machine"]
    click.echo(f"machine: {m['cpu']}, {m['cores']} cores, {m['memory_gb']} GB, Python {m['python']}")


SYNTH_WORDS = (
    "monday coffee cat dog boss meeting deadline pizza gym exam teacher homework weekend party money rent "
    "landlord printer wifi laptop bug code deploy server cloud robot duck penguin wizard chef recipe kitchen "
    "mom dad kids school bus train rain snow summer winter beach holiday sleep alarm morning night zoom email "
    "phone battery charger game level boss fight hero villain dragon castle pirate ship ocean fish shark "
    "taxes bank savings salary promotion intern manager office desk chair plant garden tomato banana "
    "avocado toast breakfast cereal milk cookie cake birthday wedding dance music guitar drum concert "
    "movie popcorn sequel spoiler netflix series episode football goal referee coach marathon bicycle "
    "traffic parking ticket police fridge snack diet salad burger fries soda hangover regret anxiety "
    "confidence victory failure chaos calm panic").split()


def synthetic_library(db: DB, count: int, seed: int, real_vectors: Any, embedder: Embedder | None = None,
                      embed_first: int = 0) -> None:
    """Add `count` seeded synthetic items (text drawn from a fixed word list) beside whatever the
    library holds, for scale benchmarks. The first `embed_first` get real MiniLM vectors of their
    text; the rest (speed only) get vectors mixed from real ones plus noise."""

    import numpy as np

    rng = random.Random(seed)
    nrng = np.random.default_rng(seed)
    texts = [[rng.choice(SYNTH_WORDS) for _ in range(rng.randint(6, 18))] for _ in range(count)]
    real = min(embed_first, count) if embedder is not None else 0
    # An item's vectors as ingest writes them: all fields, and its caption and picture (labels)
    # evidence vectors (embed.field_texts), so the dense route scans what a real library holds.
    fields = [field_texts("", w[3:5], "", " ".join(w[5:])) for w in texts]
    encoded = (embedder.encode([" ".join(w) for w in texts[:real]]
                               + [f[k] for f in fields[:real] for k in (CAPTION, PICTURE)])
               if real and embedder is not None else [])

    def mixed() -> Any:
        a, b = nrng.integers(0, len(real_vectors), 2)
        vec = real_vectors[a] * nrng.uniform(0.5, 1.0) + real_vectors[b] * nrng.uniform(0, 0.5)
        vec = vec + nrng.normal(0, 0.03, vec.shape)
        return (vec / np.linalg.norm(vec)).astype(np.float32)

    with db.write():
        root_id = int(db.q1("insert_root", {"name": f"synthetic-{seed}", "path": "/nonexistent/synthetic"})[0])
        for n, words in enumerate(texts):
            if n < real:
                vec, caption, picture = encoded[n], encoded[real + 2 * n], encoded[real + 2 * n + 1]
            else:
                vec, caption, picture = mixed(), mixed(), mixed()
            sha = hashlib.sha256(f"synthetic {seed} {n}".encode()).hexdigest()
            item_id = int(db.q1("insert_item", Metadata(title=" ".join(words[:3]), tags=words[3:5]).params() | {
                "sha256": sha, "format": "png", "width": 500, "height": 500, "byte_size": 0,
                "phash": rng.getrandbits(63), "dhash": rng.getrandbits(63), "perceptual_group": None,
                "template_group": None, "ocr_text": " ".join(words[5:]), "ocr_engine_id": None,
                "template_id": None, "template_score": None, "recognised_revision": 0, "ocr_boxes": None})[0])
            db.q("insert_file", {"item_id": item_id, "root_id": root_id, "rel_path": f"s{n}.png", "size": 0,
                                 "mtime_ns": 0, "sidecar_sha256": ""})
            db.q("insert_vector", {"item_id": item_id, "embedding": vec.tobytes()})
            db.q("insert_vector_bit", {"item_id": item_id, "embedding": vec.tobytes()})
            for kind, field_vec in ((CAPTION, caption), (PICTURE, picture)):
                if fields[n][kind]:
                    db.q("insert_field_vector", {"item_id": item_id, "kind": kind, "embedding": field_vec.tobytes()})
        db.q("refresh_vocabulary")  # as `mambo add` ends: typo correction knows the new words


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
        return np.stack([np.frombuffer(v, dtype=np.float32) for (v,) in
                         db.con.execute("SELECT embedding FROM item_vectors")])
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
        have = int(db.q1("status_counts")[0])
        if items > have:
            real = np.stack([np.frombuffer(r[1], dtype=np.float32) for r in db.q("vectors_for_clustering")])
            synthetic_library(db, items - have, seed, real)
            maintain_vector_index(db)  # as `mambo add` would (none below IVF_MIN_VECTORS: exact)
        return int(db.q1("status_counts")[0])
    finally:
        db.close()


def _pcts(ms: list[float]) -> dict[str, float]:
    import numpy as np

    return {"p50": round(float(np.percentile(ms, 50)), 2), "p95": round(float(np.percentile(ms, 95)), 2),
            "n": len(ms)}


def _load_renderer() -> Any:
    """benchdata/render.py (the benchmark's renderer; a checkout only, not shipped)."""
    import importlib.util
    import shutil

    path = ROOT / "benchdata" / "render.py"
    if not path.is_file():
        raise MamboError("bench templates needs benchdata/render.py: run it from a MamboMeme checkout")
    if not shutil.which("rsvg-convert") or not Path("/usr/share/openclipart/svg").is_dir():
        raise MamboError("bench templates needs rsvg-convert and the openclipart drawings: "
                         "apt-get install -y librsvg2-bin openclipart-svg")
    spec = importlib.util.spec_from_file_location("mambo_render", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def degrade(img: Any, rng: Any) -> Any:
    """What happens to a meme on its way to a folder: a crop of 0-10 % on each side, a rescale to
    50-150 %, half of them a watermark, and a JPEG re-encode at quality 40-90."""
    from PIL import Image, ImageDraw, ImageFont

    img = img.convert("RGB")
    w, h = img.size
    box = (int(w * rng.uniform(0, 0.1)), int(h * rng.uniform(0, 0.1)),
           w - int(w * rng.uniform(0, 0.1)), h - int(h * rng.uniform(0, 0.1)))
    img = img.crop(box)
    s = rng.uniform(0.5, 1.5)
    img = img.resize((max(64, int(img.width * s)), max(64, int(img.height * s))), Image.Resampling.BILINEAR)
    if rng.random() < 0.5:
        font = ImageFont.load_default(size=max(10, img.width // 28))
        ImageDraw.Draw(img).text((img.width * 0.55, img.height * 0.93), "memevault.example", font=font,
                                 fill=(255, 255, 255), stroke_width=1, stroke_fill=(0, 0, 0))
    buf = io.BytesIO()
    img.save(buf, "JPEG", quality=rng.randint(40, 90))
    return Image.open(io.BytesIO(buf.getvalue()))


@bench.command(name="templates")
@click.option("--corpus", type=click.Path(exists=True, file_okay=False, path_type=Path), required=True,
              help="The rendered benchmark v1 corpus (benchdata/render.py benchdata/v1/corpus.jsonl --out DIR).")
@click.option("--recipe", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=ROOT / "benchdata" / "v1" / "corpus.jsonl", show_default=True)
@click.option("--groups", default=120, show_default=True, type=click.IntRange(4, 10_000),
              help="Template groups (drawings) to use.")
@click.option("--held-out", default=0.3, show_default=True, type=click.FloatRange(0.05, 0.95),
              help="Share of the groups NOT added as templates (their memes must get no template).")
@click.option("--sparse", default=0.25, show_default=True, type=click.FloatRange(0, 1),
              help="Share of the known templates fingerprinted sparse: only their 8-30 strongest keypoints.")
@click.option("--seed", default=5, show_default=True)
@click.option("--json", "as_json", is_flag=True)
def bench_templates(corpus: Path, recipe: Path, groups: int, held_out: float, sparse: float, seed: int,
                    as_json: bool) -> None:
    """Template recognition: top-1 on catalogued templates, false recognition on held-out ones, and
    milliseconds per image.

    Each benchmark v1 drawing is a template: its blank picture (the drawing on its background,
    rendered from the openclipart SVG) is added as a user template beside the bundled catalogue, for
    all but --held-out of the groups. The group's memes (captions in six layouts, the corpus's own
    near-duplicates), each degraded once more (crop, rescale, watermark, JPEG: see `degrade`), are
    then recognised as at ingest: OCR's caption boxes masked, then the index. --sparse of the known
    templates keep only their 8-30 strongest keypoints, as a low-texture catalogue picture does (the
    catalogue's sparsest view has 11). Reports the numbers under the acceptance rule
    (templates.accepted) and under other constants (the calibration table)."""
    import tempfile

    import numpy as np
    from PIL import Image

    render = _load_renderer()
    lines = [json.loads(x) for x in recipe.read_text(encoding="utf-8").splitlines() if x.strip()]
    pictures: dict[str, dict[str, Any]] = {}
    for ln in lines:
        if ln.get("group") and "template" in ln:
            pictures.setdefault(ln["group"], ln["template"])
    rng = random.Random(seed)
    chosen = sorted(pictures)
    rng.shuffle(chosen)
    chosen = chosen[:groups]
    cut = max(1, round(len(chosen) * held_out))
    held, known = set(chosen[:cut]), set(chosen[cut:])
    sparse_keys = sorted(known)
    rng.shuffle(sparse_keys)
    sparse_n = {k: rng.randint(8, 30) for k in sparse_keys[:round(len(known) * sparse)]}
    ctx = render.Ctx(Path("/usr/share/openclipart/svg"), verify=False)
    ocr = get_ocr()

    def blank(key: str) -> Any:
        """A group's template picture: its drawing on its background, no caption."""
        t = pictures[key]
        canvas = Image.new("RGBA", (500, 500), render.hex_rgb(t["bg"]) + (255,))
        drawing = ctx.drawing(t, 455, 455)
        canvas.alpha_composite(drawing, ((500 - drawing.width) // 2, (500 - drawing.height) // 2))
        return np.asarray(canvas.convert("RGB"))

    with tempfile.TemporaryDirectory(prefix="mambo-bench-") as tmp:
        db = DB(Path(tmp) / "bench.sqlite")
        sync_catalogue(db)
        slugs: dict[int, str] = {}
        with db.write():
            rev = next_templates_revision(db)
            for key in sorted(known):
                t = pictures[key]
                view = fingerprint_view(blank(key), features=sparse_n.get(key, ORB_TEMPLATE_FEATURES))
                tid = int(db.q1("insert_template", {
                    "slug": f"bench-{key}", "name": t["name"], "aliases": "[]", "description": "",
                    "source": "user", "source_url": "", "entry_sha256": "", "revision": rev, "anchors": "[]"})[0])
                insert_template_view(db, tid, view)
                slugs[tid] = key
        index = TemplateIndex.load(db)
        # Some benchmark drawings contain another one (the same clip-art car and driver, with and
        # without a beach scene around them). A held-out group whose blank picture is itself
        # recognised as a known template is not an unknown picture: it is left out of the
        # false-recognition count and reported as `related_held_out`.
        related = {key for key in held if index.recognise(blank(key)) is not None}
        held -= related
        n_catalogue = int(dict(db.q("template_counts")).get("catalogue", 0))
        db.close()
    drng = random.Random(seed + 1)
    runs = []
    for ln in lines:
        if ln.get("group") not in known | held or (ln.get("variant") or {}).get("op") == "copy":
            continue
        path = corpus / ln["out"]["file"]
        if not path.is_file():
            raise MamboError(f"{show_path(path)} is missing: render the corpus first (benchdata/render.py "
                             f"{show_path(recipe)} --out {show_path(corpus)})")
        with Image.open(path) as img:
            rgb = fingerprint_rgb(degrade(Image.fromarray(fingerprint_rgb(img)), drng))
        t0 = time.perf_counter()
        _text, boxes = ocr.read_boxes(rgb)
        t1, c1 = time.perf_counter(), time.process_time()
        qxy, q, h = orb_features(rgb, ORB_QUERY_FEATURES, boxes)
        found = index.match(qxy, q, h)
        t2, c2 = time.perf_counter(), time.process_time()
        runs.append({"file": ln["out"]["file"], "group": ln["group"], "known": ln["group"] in known,
                     "sparse": ln["group"] in sparse_n, "layout": ln.get("layout") or "variant",
                     "candidates": [(slugs.get(c.template_id, "catalogue"), c) for c in found[:5]],
                     "ocr_ms": (t1 - t0) * 1000,
                     "recognise_ms": (t2 - t1) * 1000, "recognise_cpu_ms": (c2 - c1) * 1000})

    def decide(r: dict[str, Any], rule: tuple[float, int, float]) -> tuple[str | None, int]:
        """The recognised template under an acceptance rule (share, floor, spread), and its inliers."""
        ok = [(c.inliers / required_inliers(c.keypoints, rule[0], rule[1]), c.inliers, name)
              for name, c in r["candidates"] if accepted(c, *rule)]
        return (max(ok)[2], max(ok)[1]) if ok else (None, 0)

    def rates(rule: tuple[float, int, float]) -> dict[str, Any]:
        kn = [(r, decide(r, rule)[0]) for r in runs if r["known"]]
        ho = [decide(r, rule)[0] for r in runs if not r["known"]]
        sp = [(r, b) for r, b in kn if r["sparse"]]
        return {"share": rule[0], "floor": rule[1], "spread": rule[2],
                "top1": round(sum(b == r["group"] for r, b in kn) / max(1, len(kn)), 4),
                "top1_sparse": round(sum(b == r["group"] for r, b in sp) / max(1, len(sp)), 4),
                "wrong_on_known": round(sum(b is not None and b != r["group"] for r, b in kn) / max(1, len(kn)), 4),
                "false_on_held_out": round(sum(b is not None for b in ho) / max(1, len(ho)), 4)}

    rule = (SPARSE_SHARE, SPARSE_MIN_INLIERS, SPARSE_SPREAD)
    for r in runs:
        r["best"], r["inliers"] = decide(r, rule)
        top = r["candidates"][0][1] if r["candidates"] else None
        r["top"] = {"inliers": top.inliers, "keypoints": top.keypoints, "spread": round(top.spread, 3)} if top else None

    ms = [r["recognise_ms"] for r in runs]
    by_layout = {}
    for lay in sorted({r["layout"] for r in runs if r["known"]}):
        kn = [r for r in runs if r["known"] and r["layout"] == lay]
        by_layout[lay] = {"memes": len(kn), "top1": round(sum(r["best"] == r["group"] for r in kn) / len(kn), 3)}
    report = {
        "benchmark": "templates", "recipe": str(recipe), "seed": seed,
        "templates": {"catalogue": n_catalogue, "bench_known": len(known), "bench_held_out": len(held),
                      "bench_sparse": len(sparse_n), "related_held_out": sorted(related)},
        "memes": {"known": sum(r["known"] for r in runs), "held_out": sum(not r["known"] for r in runs),
                  "sparse": sum(r["sparse"] for r in runs)},
        "at_min_inliers": rates(rule),
        "only_min_inliers": rates((1.0, MIN_INLIERS, 0.0)),
        "calibration": [rates((share, floor, spread)) for share in (0.3, 0.4, 0.5, 0.6) for floor in (5, 6, 7, 8)
                        for spread in (0.0, 0.05)],
        "by_layout": by_layout,
        "recognise_ms": _pcts(ms) | {"mean": round(float(np.mean(ms)), 2) if ms else 0.0},
        # CPU time of this process: what recognition costs, whatever else the machine is running
        "recognise_cpu_ms": _pcts([r["recognise_cpu_ms"] for r in runs]),
        "ocr_ms": _pcts([r["ocr_ms"] for r in runs]),
        "held_out_inliers_max": max((r["top"]["inliers"] for r in runs if not r["known"] and r["top"]), default=0),
        "held_out_top": [r["top"] for r in runs if not r["known"] and r["top"]],
        "false_recognitions": [{k: r[k] for k in ("file", "group", "best", "inliers", "top")} for r in runs
                               if not r["known"] and r["best"] is not None],
        "missed": [{k: r[k] for k in ("file", "group", "sparse", "best", "inliers", "top")} for r in runs
                   if r["known"] and r["best"] != r["group"]],
        "machine": machine_info(),
    }
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    a = report["at_min_inliers"]
    click.echo(f"templates: {n_catalogue} catalogue + {len(known)} bench templates, {len(held)} held out "
               f"({len(related)} more left out: their drawing contains a known one); "
               f"{report['memes']['known']} memes of known templates, {report['memes']['held_out']} of held-out")
    o = report["only_min_inliers"]
    click.echo(f"acceptance (MIN_INLIERS={MIN_INLIERS}; sparse views: {SPARSE_SHARE} of their keypoints, at least "
               f"{SPARSE_MIN_INLIERS}, spread {SPARSE_SPREAD}): top-1 {a['top1']:.3f} (sparse views "
               f"{a['top1_sparse']:.3f}, {report['memes']['sparse']} memes), wrong on known {a['wrong_on_known']:.3f}, "
               f"false recognition on held-out {a['false_on_held_out']:.3f}")
    click.echo(f"MIN_INLIERS alone: top-1 {o['top1']:.3f} (sparse views {o['top1_sparse']:.3f}), "
               f"false on held-out {o['false_on_held_out']:.3f}")
    r = report["recognise_ms"]
    c = report["recognise_cpu_ms"]
    click.echo(f"recognition: {r['p50']} ms p50, {r['p95']} ms p95, {r['mean']} ms mean per image wall clock; "
               f"CPU {c['p50']} ms p50, {c['p95']} ms p95 (ORB + index + RANSAC; OCR, needed anyway, "
               f"{report['ocr_ms']['p50']} ms p50)")
    for c in report["calibration"]:
        click.echo(f"  share {c['share']} floor {c['floor']} spread {c['spread']}: "
                   f"top-1 {c['top1']:.3f}  sparse {c['top1_sparse']:.3f}  wrong {c['wrong_on_known']:.3f}  "
                   f"false {c['false_on_held_out']:.3f}")
    click.echo("by layout: " + ", ".join(f"{k} {v['top1']:.2f} ({v['memes']})" for k, v in by_layout.items()))
    m = report["machine"]
    click.echo(f"machine: {m['cpu']}, {m['cores']} cores, {m['memory_gb']} GB, Python {m['python']}")


def group_quality(groups: dict[int, Any], truth: dict[int, str]) -> dict[str, Any]:
    """Pairwise precision and recall of near-identical groups (item -> group) against the truth
    (item -> the recipe's original meme), and the group counts."""
    import collections
    import math

    pred: dict[Any, list[int]] = collections.defaultdict(list)
    for item, g in groups.items():
        pred[g].append(item)
    pairs = together = 0
    for members in pred.values():
        for n, a in enumerate(members):
            for b in members[n + 1:]:
                pairs += 1
                together += truth[a] == truth[b]
    true_pairs = sum(math.comb(c, 2) for c in collections.Counter(truth.values()).values())
    return {"groups": len(pred), "true_groups": len(set(truth.values())), "pairs": pairs,
            "true_pairs": true_pairs, "precision": round(together / pairs, 4) if pairs else 1.0,
            "recall": round(together / true_pairs, 4) if true_pairs else 1.0}


@bench.command(name="groups")
@click.option("--recipe", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=ROOT / "benchdata" / "v1" / "corpus.jsonl", show_default=True)
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def bench_groups(ctx: click.Context, recipe: Path, as_json: bool) -> None:
    """Near-identical groups against the recipe's truth: pairwise precision and recall.

    Run it on a library of the rendered benchmark corpus (`mambo --db LIB bench groups`). Two memes
    belong together when the recipe says one is a near-duplicate (`near_dup_of`: resized,
    re-encoded, cropped, watermarked) or an exact copy of the other. Reports the groups stored in
    the library and the groups the current rule (images.near_identical) makes of the same items
    in the order ingest met them; nothing else is written (an older library is migrated on opening,
    as by every command)."""
    from mambomeme.images import assign_groups
    from mambomeme.library import open_library

    lines = [json.loads(x) for x in recipe.read_text(encoding="utf-8").splitlines() if x.strip()]
    by_id = {ln["id"]: ln for ln in lines}
    by_file = {ln["out"]["file"]: ln for ln in lines}

    def original(ln: dict[str, Any]) -> str:
        t = ln.get("truth") or {}
        if t.get("exact_dup_of"):
            return original(by_id[t["exact_dup_of"]])
        return t.get("near_dup_of") or ln["id"]

    db = open_library(ctx)
    truth: dict[int, str] = {}
    stored: dict[int, Any] = {}
    inputs: dict[int, tuple[int, int, str]] = {}
    unknown = 0
    for item_id, rel, phash, text, group in db.q("group_bench_items"):
        ln = next((by_file[k] for k in (rel, "/".join(rel.split("/")[-2:])) if k in by_file), None)
        if ln is None:
            unknown += 1
            continue
        truth[item_id] = original(ln)
        stored[item_id] = group
        inputs[item_id] = (item_id, phash, text)
    if not truth:
        raise MamboError(f"no file of the library is in {show_path(recipe)}: build it from the rendered corpus")
    t0 = time.perf_counter()
    rule = assign_groups(inputs[i] for i in sorted(inputs))
    seconds = time.perf_counter() - t0
    report = {"benchmark": "groups", "recipe": str(recipe), "items": len(truth), "files_not_in_recipe": unknown,
              "stored": group_quality(stored, truth), "rule": group_quality(rule, truth),
              "rule_seconds": round(seconds, 2), "load_average": os.getloadavg()[0], "machine": machine_info()}
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    click.echo(f"{report['items']} items; the recipe makes {report['rule']['true_groups']} memes of them "
               f"({report['rule']['true_pairs']} near-identical pairs)")
    for name, r in (("stored in the library", report["stored"]), ("current rule", report["rule"])):
        click.echo(f"{name:>22}: {r['groups']} groups, precision {r['precision']:.3f}, recall {r['recall']:.3f} "
                   f"({r['pairs']} pairs grouped)")
    m = report["machine"]
    click.echo(f"rule applied in {seconds:.1f} s; machine: {m['cpu']}, {m['cores']} cores, load average "
               f"{report['load_average']:.1f}")


def _timed_searches(path: str, variants: dict[str, dict[str, Any]], queries: list[str], order: list[str]
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
    for name, cfg in variants.items():
        for q in queries:  # warm-up: every query once
            searcher.search(q, cfg)
        ms = []
        for q in order:
            t = time.perf_counter()
            searcher.search(q, cfg)
            ms.append((time.perf_counter() - t) * 1000)
        out[name] = _pcts(ms)
    out["rss_mb"], out["peak_rss_mb"] = rss_mb(), rss_mb("VmHWM")
    db.close()
    return out


def dense_recall(searcher: Searcher, exact: dict[str, set[int]], cfg: dict[str, Any]) -> float:
    """Mean recall@10 of an approximate dense configuration against the exact float32 top 10."""
    import numpy as np

    got = [len(want & {r.item_id for r in searcher.search(q, cfg, empty_rule=False)}) / len(want)
           for q, want in exact.items() if want]
    return round(float(np.mean(got)), 4)


@bench.command(name="search")
@click.option("--items", "sizes", multiple=True, type=click.IntRange(100, 2_000_000), default=[10_000, 100_000],
              show_default=True, help="Library sizes to build (repeatable).")
@click.option("--searches", default=300, show_default=True, help="Timed searches per route and size.")
@click.option("--real-vectors", default=10_000, show_default=True,
              help="Synthetic items embedded by the real model (recall is measured on these).")
@click.option("--oversample", "oversamples", multiple=True, type=click.IntRange(1, 64),
              help="Also time the bit index at these oversampling factors, with their recall (repeatable).")
@click.option("--probe", "probes", multiple=True, type=click.IntRange(1, 4096),
              help="Also time the coarse index probing this many clusters, with its recall (repeatable).")
@click.option("--clusters", type=click.IntRange(1, 100_000),
              help="Cluster every size's library into this many centroids (default: as `mambo add` would, "
                   f"sqrt(n)/4 from {IVF_MIN_VECTORS:,} vectors up).")
@click.option("--seed", default=11, show_default=True)
@click.option("--base", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Start from a copy of this library instead of ingesting the fixture.")
@click.option("--json", "as_json", is_flag=True)
def bench_search(sizes: tuple[int, ...], searches: int, real_vectors: int, oversamples: tuple[int, ...],
                 probes: tuple[int, ...], clusters: int | None, seed: int, base: Path | None, as_json: bool) -> None:
    """Search latency per route on reproducible scaled-up libraries: the fixture (real OCR and
    vectors) plus seeded synthetic items. Reports engine p50/p95 (SQL + fusion + empty rule, the
    query vector computed beforehand) measured in a fresh process with its resident memory, the
    query-encoding time, a numpy brute-force floor over the same float32 vectors, and recall@10 of
    the approximate dense indexes (coarse IVF, bit-quantized) against exact float32 (neighbours are
    real MiniLM vectors: fixture items and --real-vectors synthetic texts)."""
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
    variants = {
        "bm25": DEFAULT_SYSTEMS["bm25"],
        "dense-float": dense | {"dense_index": "float"},
        "dense-ivf": dense | {"dense_index": "ivf"},
        "dense-bit": dense | {"dense_index": "bit-rescore"},
        "hybrid-float": hybrid | {"dense_index": "float"},
        "hybrid-ivf": hybrid | {"dense_index": "ivf"},
        "hybrid-bit": hybrid | {"dense_index": "bit-rescore"},
    } | {f"dense-ivf-p{p}": dense | {"dense_index": "ivf", "ivf_probe": p} for p in probes
         } | {f"dense-bit-x{o}": dense | {"dense_index": "bit-rescore", "dense_oversample": o} for o in oversamples}
    default = {"float": "hybrid-float", "ivf": "hybrid-ivf", "bit-rescore": "hybrid-bit"}[hybrid["dense_index"]]
    report: dict[str, Any] = {"benchmark": "search", "seed": seed, "machine": machine_info(), "default": default,
                              "dense_oversample": DENSE_OVERSAMPLE, "ivf_probe": IVF_PROBE,
                              "query_encode_ms": _pcts(encode_ms), "sizes": {}}
    with tempfile.TemporaryDirectory(prefix="mambo-bench-") as tmp:
        real = base_library(Path(tmp) / "base.sqlite", base)
        for size in sizes:
            path = Path(tmp) / f"lib-{size}.sqlite"
            shutil.copy(Path(tmp) / "base.sqlite", path)
            db = DB(path)
            t0 = time.monotonic()
            synthetic_library(db, max(0, size - len(real)), seed, real, embedder, real_vectors)
            build_s = time.monotonic() - t0
            t0 = time.monotonic()
            maintain_vector_index(db, clusters=clusters)
            index_s = time.monotonic() - t0
            index = db.q1("vector_index")
            db.close()
            rng = random.Random(seed)
            order = [rng.choice(queries) for _ in range(searches)]
            with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as child:
                row: dict[str, Any] = child.submit(_timed_searches, str(path), variants, queries, order).result()
            row["build_seconds"] = round(build_s, 1)
            row["clusters"] = index[0] if index else 0
            row["index_seconds"] = round(index_s, 1)
            db = DB(path)
            # the floor scans what the dense route scans: every all-fields and evidence vector
            mat = np.stack([np.frombuffer(v, dtype=np.float32) for (v,) in
                            db.con.execute("SELECT embedding FROM item_vectors UNION ALL "
                                           "SELECT embedding FROM item_field_vectors")])
            row["vectors"] = len(mat)
            qvecs = {q: embedder.encode([" ".join(plan_query(db, q).expanded)])[0] for q in queries}
            floor = []
            for q in order:
                qv = qvecs[q]
                t = time.perf_counter()
                sims = mat @ qv
                top = np.argpartition(-sims, 10)[:10]
                top[np.argsort(-sims[top])]
                floor.append((time.perf_counter() - t) * 1000)
            row["numpy_floor"] = _pcts(floor)
            searcher = Searcher(db, embedder)
            exact = {q: {r.item_id for r in searcher.search(q, variants["dense-float"], empty_rule=False)}
                     for q in queries}
            row["ivf_recall_at_10"] = dense_recall(searcher, exact, variants["dense-ivf"])
            row["ivf_recall_by_probe"] = {p: dense_recall(searcher, exact, variants[f"dense-ivf-p{p}"])
                                          for p in probes}
            # the bit index holds the all-fields vectors only: its recall is against their exact top 10
            whole = variants["dense-float"] | {"field_vectors": False}
            exact_whole = {q: {r.item_id for r in searcher.search(q, whole, empty_rule=False)} for q in queries}
            row["bit_recall_at_10"] = dense_recall(searcher, exact_whole, variants["dense-bit"])
            row["bit_recall_by_oversample"] = {o: dense_recall(searcher, exact_whole, variants[f"dense-bit-x{o}"])
                                               for o in oversamples}
            db.close()
            row["database_mb"] = round(path.stat().st_size / 1e6, 1)
            report["sizes"][str(size)] = row
            del mat
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    m = report["machine"]
    click.echo(f"machine: {m['cpu']}, {m['cores']} cores, {m['memory_gb']} GB, Python {m['python']}")
    e = report["query_encode_ms"]
    click.echo(f"query encoding (MiniLM, warm): p50 {e['p50']} ms, p95 {e['p95']} ms; default system: {default}")
    for size, row in report["sizes"].items():
        floor95 = row["numpy_floor"]["p95"]
        coarse = (f"{row['clusters']} clusters ({row['index_seconds']} s), probe {IVF_PROBE}" if row["clusters"]
                  else "no clusters (exact)")
        click.echo(f"{int(size):,} items (built in {row['build_seconds']} s, database {row['database_mb']} MB; "
                   f"search process RSS {row['rss_mb']} MB, peak {row['peak_rss_mb']} MB):")
        click.echo(f"  coarse index: {coarse}, recall@10 vs float {row['ivf_recall_at_10']}; "
                   f"bit recall@10 {row['bit_recall_at_10']} at oversample {DENSE_OVERSAMPLE}")
        for name in [*variants, "numpy_floor"]:
            ratio = f"   {row[name]['p95'] / floor95:5.1f}x floor p95" if name != "numpy_floor" and floor95 else ""
            recall_note = ""
            if name.startswith("dense-bit-x"):
                recall_note = f"   recall@10 {row['bit_recall_by_oversample'][int(name.rsplit('x', 1)[1])]}"
            elif name.startswith("dense-ivf-p"):
                recall_note = f"   recall@10 {row['ivf_recall_by_probe'][int(name.rsplit('p', 1)[1])]}"
            mark = " *" if name == default else ""
            click.echo(f"  {name + mark:15} p50 {row[name]['p50']:7.2f} ms   p95 {row[name]['p95']:7.2f} ms"
                       f"{ratio}{recall_note}")
        click.echo("  (* the default system)")


# Queries nobody should type but someone will: FTS5 and SQL syntax, quotes, wildcards, control
# and escape sequences, bidi overrides, emoji, combining marks, huge and empty strings.
HOSTILE_QUERIES = (
    "", " ", "\t\n", '"', '""', "'", "AND", "OR NOT", "NEAR(cat dog, 2)", "title:cena", "cat*", "-cat", "^cat",
    "cat AND (dog OR", "'; DROP TABLE items; --", "\x00cat", "\x1b[31mcena\x1b[0m", "\x1b]52;c;aGk=\x07",
    "\u202ecena\u202c", "ｊｏｈｎ　ｃｅｎａ", "😂😂😂", "e\u0301\u0301\u0301", "\ud800", "%", "_", "\\", "{}[]",
    "cat " * 500, "x" * 10_000, "1e309", "-1", "NULL", "*", ":", "(", ")", "\u0000\u0001\u007f",
)


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
            out.append(w[:i] + rng.choice("abcdefghijklmnopqrstuvwxyz") + w[i + 1:] + " " + rng.choice(SYNTH_WORDS))
        else:
            out.append(rng.choice(HOSTILE_QUERIES))
    return out


def rss_mb(field: str = "VmRSS") -> float:
    """Resident memory now (VmRSS; VmHWM: the peak so far), from /proc."""
    with contextlib.suppress(OSError, ValueError, StopIteration):
        line = next(x for x in Path("/proc/self/status").read_text().splitlines() if x.startswith(f"{field}:"))
        return round(int(line.split()[1]) / 1024, 1)
    return 0.0


@bench.command(name="cold")
@click.option("--query", "queries", multiple=True, default=("john cena",), show_default=True,
              help="Query to search (repeatable).")
@click.option("--system", "systems_", multiple=True, default=("hybrid", "bm25"), show_default=True,
              help="System to time (repeatable); runs are interleaved so every system sees the same load.")
@click.option("--runs", default=5, show_default=True, type=click.IntRange(1, 100), help="Cold starts per system.")
@click.option("--tui/--no-tui", default=True, show_default=True,
              help="Also time the full-screen search from launch to \"model ready\" (needs pexpect).")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def bench_cold(ctx: click.Context, queries: tuple[str, ...], systems_: tuple[str, ...], runs: int, tui: bool,
               as_json: bool) -> None:
    """What a user waits for: `mambo search QUERY` as a fresh process (wall time and peak RSS, per
    system, interleaved so the ratios are fair on a busy machine), and the full-screen search's
    launch-to-"model ready" time, on the library given by --db (e.g. the demo library)."""
    import statistics
    import subprocess

    from mambomeme.library import default_db_path

    db_path = ctx.obj["db_path"] or default_db_path()
    DB(db_path, create=False).close()
    ensure_onnx()  # the ONNX export exists before anything is timed (made once per machine)
    wall: dict[str, list[float]] = {s: [] for s in systems_}
    rss: dict[str, list[float]] = {s: [] for s in systems_}
    for i in range(runs):
        for system in systems_:
            argv = [sys.executable, str(ROOT / "mambo.py"), "--db", str(db_path), "search", "-s", system,
                    queries[i % len(queries)]]
            t0 = time.perf_counter()
            child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            _, status, usage = os.wait4(child.pid, 0)  # wait4: this child's own peak RSS
            wall[system].append(time.perf_counter() - t0)
            child.returncode = os.waitstatus_to_exitcode(status)
            if child.returncode != 0:
                raise MamboError(f"`mambo {' '.join(argv[2:])}` failed (exit {child.returncode}): run it to see why")
            rss[system].append(usage.ru_maxrss / 1024)  # KiB on Linux
    report: dict[str, Any] = {"benchmark": "cold", "library": str(db_path), "runs": runs, "queries": list(queries),
                              "search": {s: {"wall_s_median": round(statistics.median(wall[s]), 3),
                                             "wall_s_max": round(max(wall[s]), 3),
                                             "rss_mb_median": round(statistics.median(rss[s]), 1)}
                                         for s in systems_}}
    if len(systems_) >= 2:
        a, b = systems_[0], systems_[1]
        report["ratio"] = {f"{a}/{b}": round(statistics.median(wall[a]) / statistics.median(wall[b]), 2)}
    if tui:
        from mambomeme.terminal import time_to_model_ready

        ready = [time_to_model_ready(db_path) for _ in range(runs)]
        report["tui_model_ready_s"] = {"median": round(statistics.median(ready), 3), "max": round(max(ready), 3)}
    report["machine"] = machine_info() | {"load_average": [round(x, 2) for x in os.getloadavg()]}
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    for s, r in report["search"].items():
        click.echo(f"mambo search -s {s}: {r['wall_s_median']} s median ({r['wall_s_max']} max) wall, "
                   f"{r['rss_mb_median']} MB peak RSS, {runs} cold runs")
    for k, v in report.get("ratio", {}).items():
        click.echo(f"ratio {k}: {v}")
    if tui:
        t = report["tui_model_ready_s"]
        click.echo(f"full-screen search, launch to \"model ready\": {t['median']} s median ({t['max']} max)")
    m = report["machine"]
    click.echo(f"machine: {m['cpu']}, {m['cores']} cores, {m['memory_gb']} GB, Python {m['python']}, "
               f"load average {' '.join(map(str, m['load_average']))}")


@bench.command(name="load")
@click.option("--items", "size", default=10_000, show_default=True, type=click.IntRange(100, 2_000_000),
              help="Library size (the fixture plus seeded synthetic items).")
@click.option("--searches", default=10_000, show_default=True, type=click.IntRange(1, 10_000_000))
@click.option("--real-vectors", default=1_000, show_default=True,
              help="Synthetic items embedded by the real model (the rest mix real vectors).")
@click.option("--seed", default=13, show_default=True)
@click.option("--base", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Start from a copy of this library instead of ingesting the fixture.")
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
    systems = {"bm25": "bm25", "dense": "dense", "hybrid": "hybrid",
               "hybrid-bit": hybrid | {"dense_index": "bit-rescore"},
               "hybrid-float": hybrid | {"dense_index": "float"},
               "bm25-fuzzy": bm25 | {"route_weights": {"lexical": 1.0, "fuzzy": 0.5, "dense": 0.0}},
               "all-routes": hybrid | {"route_weights": {"lexical": 1.0, "fuzzy": 0.5, "dense": 1.0}}}
    order = [rng.choice(list(systems)) for _ in range(searches)]
    report: dict[str, Any] = {"benchmark": "load", "items": size, "searches": searches, "seed": seed,
                              "machine": machine_info()}
    with tempfile.TemporaryDirectory(prefix="mambo-bench-") as tmp:
        path = Path(tmp) / "load.sqlite"
        t0 = time.monotonic()
        real = base_library(path, base)
        db = DB(path)
        sync_systems(db)
        synthetic_library(db, max(0, size - len(real)), seed, real, embedder, real_vectors)
        maintain_vector_index(db)  # as `mambo add` would
        report["build_seconds"] = round(time.monotonic() - t0, 1)
        report["library_items"] = int(db.scalar("SELECT count(*) FROM items"))
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
    report |= {"errors": sum(errors.values()), "error_kinds": errors, "error_samples": samples,
               "results_shown": shown, "unsafe_lines": unsafe, "no_match": empty, "rss_mb": rss,
               "rss_growth_mb": round(rss["end"] - rss["start"], 1),
               "latency_ms": _pcts(everything) if everything else {},
               "latency_ms_by_system": {k: _pcts(v) for k, v in ms.items() if v}}
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    m = report["machine"]
    click.echo(f"load: {searches} searches on {report['library_items']:,} items (built in "
               f"{report['build_seconds']} s), {report['run_seconds']} s: {report['errors']} errors, "
               f"{unsafe} unsafe output lines, {empty} no-match answers")
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


def load_dev_queries(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def judged_queries(queries_path: Path, labels_path: Path | None) -> list[dict[str, Any]]:
    """The partition's queries; with `labels` (`mambo bench labels` output), their relevance is the
    judged final grades instead of the file's provisional ones."""
    queries = load_dev_queries(queries_path)
    if labels_path is None:
        return queries
    judged: dict[str, dict[str, float]] = {}
    for line in labels_path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            if row.get("grade"):
                judged.setdefault(row["qid"], {})[row["path"]] = float(row["grade"])
    return [q | {"relevant": judged.get(q["id"], {})} for q in queries]
