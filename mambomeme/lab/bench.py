"""`mambo bench`: numbers with the machine they ran on, never asserted by tests: ingest throughput,
crash safety under kill -9 (soak), template recognition and near-duplicate groups. The scale
benchmarks (search latency on scaled-up libraries, a long mixed and hostile load, cold starts) are
in scale.py; the evaluation and calibration modules add their own bench commands."""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import signal
import sys
import time
from pathlib import Path
from typing import Any

import click

from mambomeme.cli_base import CONTEXT
from mambomeme.embed import get_embedder
from mambomeme.ingest import Ingester
from mambomeme.library import DB, FIXTURE_DIR, ROOT, SAFETY_CLASSES, item_count
from mambomeme.ocr import get_ocr
from mambomeme.output import MamboError, clean_line, show_path
from mambomeme.sidecars import IMAGE_SUFFIXES, MANIFEST_NAME
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
    insert_template,
    insert_template_view,
    next_templates_revision,
    orb_features,
    required_inliers,
    sync_catalogue,
)
from mambomeme.upkeep import consistency_counts, library_status


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
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gb": round(mem / 2**30, 1),
        "python": platform.python_version(),
        "os": platform.platform(),
        "packages": versions,
    }


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
@click.option(
    "--images",
    "count",
    default=300,
    show_default=True,
    type=click.IntRange(1, 100_000),
    help="How many synthetic images to ingest (without --folder).",
)
@click.option(
    "--folder",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Ingest this folder instead of the seeded variants (it is only read).",
)
@click.option("--no-sidecars", is_flag=True, help="Read no sidecar or manifest (a bare library).")
@click.option("--seed", default=7, show_default=True)
@click.option("--workers", type=click.IntRange(1, 64), help="OCR worker processes (default: one per core).")
@click.option(
    "--keep",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Keep the library it builds as this new file (to compare its text with another build).",
)
@click.option("--json", "as_json", is_flag=True)
def bench_ingest(
    count: int, folder: Path | None, no_sidecars: bool, seed: int, workers: int | None, keep: Path | None, as_json: bool
) -> None:
    """End-to-end ingest throughput into a fresh library, with the CPU-seconds a file of every
    stage (decode, hashes and preview, picture safety, OCR detection and recognition, template
    recognition, embedding, caption meaning safety, grouping, writes), on a folder you pass or
    seeded variants of the fixture memes. Model loading is counted."""
    import resource
    import tempfile

    given = folder
    if keep is not None and (keep.exists() or not keep.parent.is_dir()):
        raise MamboError(f"--keep {show_path(keep)}: give a new file in an existing folder")
    with tempfile.TemporaryDirectory(prefix="mambo-bench-") as tmp:
        if folder is None:
            folder = Path(tmp) / "images"
            synthetic_variants(FIXTURE_DIR / "images", folder, count, seed)
        db = DB(keep or Path(tmp) / "bench.sqlite")
        self0, kids0 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.monotonic()
        ing = Ingester(db, progress=sys.stderr.isatty(), workers=workers, sidecars=not no_sidecars)
        stats = ing.run([folder])
        seconds = time.monotonic() - t0
        self1, kids1 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        recognised = int(library_status(db)["recognised"])
        size = db.path.stat().st_size
        db.close()
    cpu = sum(
        getattr(b, f) - getattr(a, f) for a, b in ((self0, self1), (kids0, kids1)) for f in ("ru_utime", "ru_stime")
    )
    files = max(stats.added, 1)
    stages = {k: round(v / 1000 / files, 4) for k, v in sorted(ing.cpu_ms.items(), key=lambda kv: -kv[1])}
    report = {
        "benchmark": "ingest",
        "folder": str(given) if given else None,
        "added": stats.added,
        "duplicates": stats.duplicates,
        "errors": stats.errors,
        "sidecars": not no_sidecars,
        "seconds": round(seconds, 2),
        "files_per_second": round(stats.added / seconds, 2),
        "cpu_seconds": round(cpu, 1),
        "cpu_seconds_per_file": round(cpu / files, 4),
        "stage_cpu_seconds_per_file": stages,
        "unaccounted_cpu_seconds_per_file": round(cpu / files - sum(stages.values()), 4),
        "peak_rss_mb": {"ingest": round(self1.ru_maxrss / 1024), "largest_worker": round(kids1.ru_maxrss / 1024)},
        "database_mb": round(size / 1e6, 2),
        "seed": seed,
        # template recognition inside the OCR workers (ORB + index + RANSAC), per new image
        "recognition": {
            "templates_indexed": len(ing.templates) if ing.templates else 0,
            "wall_ms": percentiles(ing.recognise_ms) if ing.recognise_ms else {},
            "cpu_ms": percentiles(ing.recognise_cpu_ms) if ing.recognise_cpu_ms else {},
            "recognised_items": recognised,
        },
        "machine": machine_info(),
    }
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    m = report["machine"]
    click.echo(
        f"ingest: {stats.added} files in {seconds:.1f} s = {report['files_per_second']} files/s end to end "
        f"(model loading included), {stats.errors} errors; {cpu:.1f} CPU-s = "
        f"{report['cpu_seconds_per_file']} CPU-s a file; peak RSS {report['peak_rss_mb']['ingest']} MB "
        f"(a worker {report['peak_rss_mb']['largest_worker']} MB); database {report['database_mb']} MB"
    )
    click.echo("CPU-s a file by stage:")
    for stage, v in stages.items():
        click.echo(f"  {stage:<24}{v:8.4f}  {100 * v / max(cpu / files, 1e-9):5.1f} %")
    click.echo(f"  {'(not in a stage)':<24}{report['unaccounted_cpu_seconds_per_file']:8.4f}")
    rec = report["recognition"]
    if rec["wall_ms"]:
        click.echo(
            f"template recognition: {rec['cpu_ms']['p50']} ms p50 / {rec['cpu_ms']['p95']} ms p95 CPU per image "
            f"against {rec['templates_indexed']} template views; {rec['recognised_items']} recognised"
        )
    click.echo(f"machine: {m['cpu']}, {m['cores']} cores, {m['memory_gb']} GB, Python {m['python']}")


def _soak_child(root: click.Command, db_path: Path, folder: Path, batch: int) -> None:
    """A forked `mambo add` (the real command line, `root`: the command this bench runs under): never returns."""
    try:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        root.main(
            ["--db", str(db_path), "add", "-q", "--workers", "1", "--batch-size", str(batch), str(folder)],
            prog_name="mambo",
        )
    finally:
        os._exit(0)


def _soak_verify(db_path: Path, before: dict[str, dict[str, Any]], errors_before: int) -> dict[str, Any]:
    """What the next command sees after a crash: integrity, every item in every route or none,
    nothing indexed or judged before the crash lost or changed."""
    db = DB(db_path)  # the recovery any next command does: WAL replay, migrations
    try:
        integrity = db.q1("soak_integrity")[0]
        consistency = {k: v for k, v in consistency_counts(db).items() if v}
        now = {r["path"]: r for r in db.rows("indexed_snapshot")}
        lost = [p for p, r in before.items() if now.get(p) != r]
        errors = int(db.q1("error_count")[0])
    finally:
        db.close()
    return {
        "integrity": integrity,
        "consistency": consistency,
        "lost": lost,
        "snapshot": now,
        "errors_lost": max(0, errors_before - errors),
        "errors": errors,
    }


@bench.command(name="soak")
@click.option(
    "--kills", default=100, show_default=True, type=click.IntRange(1, 100_000), help="How many ingests to kill -9."
)
@click.option(
    "--images",
    "count",
    default=40,
    show_default=True,
    type=click.IntRange(2, 10_000),
    help="Synthetic images in the folder (plus the fixture's broken files and a manifest).",
)
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

    # Ingest's embedder (one intra-op thread): a forked child inherits no thread pool.
    embedder = get_embedder(threads=1)
    embedder.encode(["warm up"])
    rng = random.Random(seed)
    t_start = time.monotonic()
    report: dict[str, Any] = {
        "benchmark": "soak",
        "kills": 0,
        "kills_mid_write": 0,
        "completed_runs": 0,
        "rounds": 1,
        "interrupted_runs": 0,
        "integrity_failures": 0,
        "inconsistent": 0,
        "lost": 0,
        "errors_lost": 0,
        "seed": seed,
        "images": count,
        "batch_size": batch,
        "max_delay_s": max_delay,
        "failures": [],
    }
    with tempfile.TemporaryDirectory(prefix="mambo-soak-") as tmp:
        folder = Path(tmp) / "memes"
        made = synthetic_variants(FIXTURE_DIR / "images", folder, count, seed)
        # Judgements and errors are part of what must survive: a manifest with titles and safety
        # classes for some images, and the fixture's broken files.
        with open(folder / MANIFEST_NAME, "w", encoding="utf-8") as fh:
            for n, path in enumerate(made[::3]):
                fh.write(
                    json.dumps({"file": path.name, "title": f"soak title {n}", "safety": SAFETY_CLASSES[n % 2]}) + "\n"
                )
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
                    return int(db.q1("file_count")[0])
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
        report["final"] = {
            "files": len(final["snapshot"]),
            "expected_files": expected,
            "items": item_count(db),
            "running_runs_left": int(db.q1("running_runs")[0]),
            "interrupted_runs": int(db.q1("interrupted_runs")[0]),
        }
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
    click.echo(
        f"soak: {report['kills']} kill -9s ({report['kills_mid_write']} after new items were committed), "
        f"{report['completed_runs']} runs finished first, {report['rounds']} round(s), {report['seconds']} s"
    )
    click.echo(
        f"  integrity failures {report['integrity_failures']}, half-written states {report['inconsistent']}, "
        f"indexed files lost {report['lost']}, recorded errors lost {report['errors_lost']}"
    )
    click.echo(
        f"  final run: {report['final']['files']}/{report['final']['expected_files']} files, "
        f"{report['final']['items']} items; {report['interrupted_runs']} killed runs marked interrupted "
        "by the run after them"
    )
    for f in report["failures"]:
        click.echo(f"  FAILED {clean_line(f)}")
    if report["failures"]:
        raise MamboError(f"{len(report['failures'])} failure(s) after kill -9")
    m = report["machine"]
    click.echo(f"machine: {m['cpu']}, {m['cores']} cores, {m['memory_gb']} GB, Python {m['python']}")


def pct(xs: list[float], p: float) -> float | None:
    """The one percentile of every benchmark and score: nearest rank, no interpolation (the sorted
    value at index round(p/100 * (n - 1))), rounded to 0.01. None for no values."""
    if not xs:
        return None
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))], 2)


def percentiles(ms: list[float]) -> dict[str, float | None]:
    return {"p50": pct(ms, 50), "p95": pct(ms, 95), "n": len(ms)}


def _load_renderer() -> Any:
    """benchdata/render.py (the benchmark's renderer; a checkout only, not shipped)."""
    import importlib.util
    import shutil

    path = ROOT / "benchdata" / "render.py"
    if not path.is_file():
        raise MamboError("bench templates needs benchdata/render.py: run it from a MamboMeme checkout")
    if not shutil.which("rsvg-convert") or not Path("/usr/share/openclipart/svg").is_dir():
        raise MamboError(
            "bench templates needs rsvg-convert and the openclipart drawings: "
            "apt-get install -y librsvg2-bin openclipart-svg"
        )
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
    box = (
        int(w * rng.uniform(0, 0.1)),
        int(h * rng.uniform(0, 0.1)),
        w - int(w * rng.uniform(0, 0.1)),
        h - int(h * rng.uniform(0, 0.1)),
    )
    img = img.crop(box)
    s = rng.uniform(0.5, 1.5)
    img = img.resize((max(64, int(img.width * s)), max(64, int(img.height * s))), Image.Resampling.BILINEAR)
    if rng.random() < 0.5:
        font = ImageFont.load_default(size=max(10, img.width // 28))
        ImageDraw.Draw(img).text(
            (img.width * 0.55, img.height * 0.93),
            "memevault.example",
            font=font,
            fill=(255, 255, 255),
            stroke_width=1,
            stroke_fill=(0, 0, 0),
        )
    buf = io.BytesIO()
    img.save(buf, "JPEG", quality=rng.randint(40, 90))
    return Image.open(io.BytesIO(buf.getvalue()))


@bench.command(name="templates")
@click.option(
    "--corpus",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    required=True,
    help="The rendered benchmark v1 corpus (benchdata/render.py benchdata/v1/corpus.jsonl --out DIR).",
)
@click.option(
    "--recipe",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=ROOT / "benchdata" / "v1" / "corpus.jsonl",
    show_default=True,
)
@click.option(
    "--groups",
    default=120,
    show_default=True,
    type=click.IntRange(4, 10_000),
    help="Template groups (drawings) to use.",
)
@click.option(
    "--held-out",
    default=0.3,
    show_default=True,
    type=click.FloatRange(0.05, 0.95),
    help="Share of the groups NOT added as templates (their memes must get no template).",
)
@click.option(
    "--sparse",
    default=0.25,
    show_default=True,
    type=click.FloatRange(0, 1),
    help="Share of the known templates fingerprinted sparse: only their 8-30 strongest keypoints.",
)
@click.option("--seed", default=5, show_default=True)
@click.option("--json", "as_json", is_flag=True)
def bench_templates(
    corpus: Path, recipe: Path, groups: int, held_out: float, sparse: float, seed: int, as_json: bool
) -> None:
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
    sparse_n = {k: rng.randint(8, 30) for k in sparse_keys[: round(len(known) * sparse)]}
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
                tid = insert_template(
                    db,
                    {
                        "slug": f"bench-{key}",
                        "name": t["name"],
                        "aliases": "[]",
                        "description": "",
                        "source": "user",
                        "source_url": "",
                        "entry_sha256": "",
                        "revision": rev,
                        "anchors": "[]",
                    },
                )
                insert_template_view(db, tid, view)
                slugs[tid] = key
        index = TemplateIndex.load(db)
        # Some benchmark drawings contain another one (the same clip-art car and driver, with and
        # without a beach scene around them). A held-out group whose blank picture is itself
        # recognised as a known template is not an unknown picture: it is left out of the
        # false-recognition count and reported as `related_held_out`.
        related = {key for key in held if index.recognise(blank(key)) is not None}
        held -= related
        n_catalogue = int(library_status(db)["templates"].get("catalogue", 0))
        db.close()
    drng = random.Random(seed + 1)
    runs = []
    for ln in lines:
        if ln.get("group") not in known | held or (ln.get("variant") or {}).get("op") == "copy":
            continue
        path = corpus / ln["out"]["file"]
        if not path.is_file():
            raise MamboError(
                f"{show_path(path)} is missing: render the corpus first (benchdata/render.py "
                f"{show_path(recipe)} --out {show_path(corpus)})"
            )
        with Image.open(path) as img:
            rgb = fingerprint_rgb(degrade(Image.fromarray(fingerprint_rgb(img)), drng))
        t0 = time.perf_counter()
        _text, boxes = ocr.read_boxes(rgb)
        t1, c1 = time.perf_counter(), time.process_time()
        qxy, q, h = orb_features(rgb, ORB_QUERY_FEATURES, boxes)
        found = index.match(qxy, q, h)
        t2, c2 = time.perf_counter(), time.process_time()
        runs.append(
            {
                "file": ln["out"]["file"],
                "group": ln["group"],
                "known": ln["group"] in known,
                "sparse": ln["group"] in sparse_n,
                "layout": ln.get("layout") or "variant",
                "candidates": [(slugs.get(c.template_id, "catalogue"), c) for c in found[:5]],
                "ocr_ms": (t1 - t0) * 1000,
                "recognise_ms": (t2 - t1) * 1000,
                "recognise_cpu_ms": (c2 - c1) * 1000,
            }
        )

    def decide(r: dict[str, Any], rule: tuple[float, int, float]) -> tuple[str | None, int]:
        """The recognised template under an acceptance rule (share, floor, spread), and its inliers."""
        ok = [
            (c.inliers / required_inliers(c.keypoints, rule[0], rule[1]), c.inliers, name)
            for name, c in r["candidates"]
            if accepted(c, *rule)
        ]
        return (max(ok)[2], max(ok)[1]) if ok else (None, 0)

    def rates(rule: tuple[float, int, float]) -> dict[str, Any]:
        kn = [(r, decide(r, rule)[0]) for r in runs if r["known"]]
        ho = [decide(r, rule)[0] for r in runs if not r["known"]]
        sp = [(r, b) for r, b in kn if r["sparse"]]
        return {
            "share": rule[0],
            "floor": rule[1],
            "spread": rule[2],
            "top1": round(sum(b == r["group"] for r, b in kn) / max(1, len(kn)), 4),
            "top1_sparse": round(sum(b == r["group"] for r, b in sp) / max(1, len(sp)), 4),
            "wrong_on_known": round(sum(b is not None and b != r["group"] for r, b in kn) / max(1, len(kn)), 4),
            "false_on_held_out": round(sum(b is not None for b in ho) / max(1, len(ho)), 4),
        }

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
        "benchmark": "templates",
        "recipe": str(recipe),
        "seed": seed,
        "templates": {
            "catalogue": n_catalogue,
            "bench_known": len(known),
            "bench_held_out": len(held),
            "bench_sparse": len(sparse_n),
            "related_held_out": sorted(related),
        },
        "memes": {
            "known": sum(r["known"] for r in runs),
            "held_out": sum(not r["known"] for r in runs),
            "sparse": sum(r["sparse"] for r in runs),
        },
        "at_min_inliers": rates(rule),
        "only_min_inliers": rates((1.0, MIN_INLIERS, 0.0)),
        "calibration": [
            rates((share, floor, spread))
            for share in (0.3, 0.4, 0.5, 0.6)
            for floor in (5, 6, 7, 8)
            for spread in (0.0, 0.05)
        ],
        "by_layout": by_layout,
        "recognise_ms": percentiles(ms) | {"mean": round(float(np.mean(ms)), 2) if ms else 0.0},
        # CPU time of this process: what recognition costs, whatever else the machine is running
        "recognise_cpu_ms": percentiles([r["recognise_cpu_ms"] for r in runs]),
        "ocr_ms": percentiles([r["ocr_ms"] for r in runs]),
        "held_out_inliers_max": max((r["top"]["inliers"] for r in runs if not r["known"] and r["top"]), default=0),
        "held_out_top": [r["top"] for r in runs if not r["known"] and r["top"]],
        "false_recognitions": [
            {k: r[k] for k in ("file", "group", "best", "inliers", "top")}
            for r in runs
            if not r["known"] and r["best"] is not None
        ],
        "missed": [
            {k: r[k] for k in ("file", "group", "sparse", "best", "inliers", "top")}
            for r in runs
            if r["known"] and r["best"] != r["group"]
        ],
        "machine": machine_info(),
    }
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    a = report["at_min_inliers"]
    click.echo(
        f"templates: {n_catalogue} catalogue + {len(known)} bench templates, {len(held)} held out "
        f"({len(related)} more left out: their drawing contains a known one); "
        f"{report['memes']['known']} memes of known templates, {report['memes']['held_out']} of held-out"
    )
    o = report["only_min_inliers"]
    click.echo(
        f"acceptance (MIN_INLIERS={MIN_INLIERS}; sparse views: {SPARSE_SHARE} of their keypoints, at least "
        f"{SPARSE_MIN_INLIERS}, spread {SPARSE_SPREAD}): top-1 {a['top1']:.3f} (sparse views "
        f"{a['top1_sparse']:.3f}, {report['memes']['sparse']} memes), wrong on known {a['wrong_on_known']:.3f}, "
        f"false recognition on held-out {a['false_on_held_out']:.3f}"
    )
    click.echo(
        f"MIN_INLIERS alone: top-1 {o['top1']:.3f} (sparse views {o['top1_sparse']:.3f}), "
        f"false on held-out {o['false_on_held_out']:.3f}"
    )
    r = report["recognise_ms"]
    c = report["recognise_cpu_ms"]
    click.echo(
        f"recognition: {r['p50']} ms p50, {r['p95']} ms p95, {r['mean']} ms mean per image wall clock; "
        f"CPU {c['p50']} ms p50, {c['p95']} ms p95 (ORB + index + RANSAC; OCR, needed anyway, "
        f"{report['ocr_ms']['p50']} ms p50)"
    )
    for c in report["calibration"]:
        click.echo(
            f"  share {c['share']} floor {c['floor']} spread {c['spread']}: "
            f"top-1 {c['top1']:.3f}  sparse {c['top1_sparse']:.3f}  wrong {c['wrong_on_known']:.3f}  "
            f"false {c['false_on_held_out']:.3f}"
        )
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
            for b in members[n + 1 :]:
                pairs += 1
                together += truth[a] == truth[b]
    true_pairs = sum(math.comb(c, 2) for c in collections.Counter(truth.values()).values())
    return {
        "groups": len(pred),
        "true_groups": len(set(truth.values())),
        "pairs": pairs,
        "true_pairs": true_pairs,
        "precision": round(together / pairs, 4) if pairs else 1.0,
        "recall": round(together / true_pairs, 4) if true_pairs else 1.0,
    }


@bench.command(name="groups")
@click.option(
    "--recipe",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=ROOT / "benchdata" / "v1" / "corpus.jsonl",
    show_default=True,
)
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
    from mambomeme.cli_base import open_library
    from mambomeme.images import assign_groups
    from mambomeme.templates import known_text

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
    rule = assign_groups((inputs[i] for i in sorted(inputs)), lambda a, b: known_text(db, a, b))
    seconds = time.perf_counter() - t0
    report = {
        "benchmark": "groups",
        "recipe": str(recipe),
        "items": len(truth),
        "files_not_in_recipe": unknown,
        "stored": group_quality(stored, truth),
        "rule": group_quality(rule, truth),
        "rule_seconds": round(seconds, 2),
        "load_average": os.getloadavg()[0],
        "machine": machine_info(),
    }
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    click.echo(
        f"{report['items']} items; the recipe makes {report['rule']['true_groups']} memes of them "
        f"({report['rule']['true_pairs']} near-identical pairs)"
    )
    for name, r in (("stored in the library", report["stored"]), ("current rule", report["rule"])):
        click.echo(
            f"{name:>22}: {r['groups']} groups, precision {r['precision']:.3f}, recall {r['recall']:.3f} "
            f"({r['pairs']} pairs grouped)"
        )
    m = report["machine"]
    click.echo(
        f"rule applied in {seconds:.1f} s; machine: {m['cpu']}, {m['cores']} cores, load average "
        f"{report['load_average']:.1f}"
    )


# Queries nobody should type but someone will: FTS5 and SQL syntax, quotes, wildcards, control
# and escape sequences, bidi overrides, emoji, combining marks, huge and empty strings.
HOSTILE_QUERIES = (
    "",
    " ",
    "\t\n",
    '"',
    '""',
    "'",
    "AND",
    "OR NOT",
    "NEAR(cat dog, 2)",
    "title:cena",
    "cat*",
    "-cat",
    "^cat",
    "cat AND (dog OR",
    "'; DROP TABLE items; --",
    "\x00cat",
    "\x1b[31mcena\x1b[0m",
    "\x1b]52;c;aGk=\x07",
    "\u202ecena\u202c",
    "ｊｏｈｎ　ｃｅｎａ",
    "😂😂😂",
    "e\u0301\u0301\u0301",
    "\ud800",
    "%",
    "_",
    "\\",
    "{}[]",
    "cat " * 500,
    "x" * 10_000,
    "1e309",
    "-1",
    "NULL",
    "*",
    ":",
    "(",
    ")",
    "\u0000\u0001\u007f",
)


def load_dev_queries(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def judged_pairs(labels_path: Path) -> dict[str, set[str]]:
    """Every judged (query id, file) of a labels file, grade 0 included: what counts as "judged"
    when a list is condensed (unjudged results left out; benchdata/experiments)."""
    out: dict[str, set[str]] = {}
    for line in labels_path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            out.setdefault(row["qid"], set()).add(row["path"])
    return out


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
