"""`mambo add`: walking folders, analysing each image in worker processes (decode, OCR, template
recognition), the batch pipeline that commits 16 items at a time (hashes, previews, sidecars, safety,
groups, vectors), re-recognition after the catalogue changes, and embedding."""

from __future__ import annotations

import collections
import contextlib
import functools
import hashlib
import json
import os
import signal
import stat
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mambomeme.embed import (
    Embedder,
    embed_text,
    field_texts,
    get_embedder,
    items_to_embed_again,
    model_id,
)
from mambomeme.images import (
    MAX_FILE_BYTES,
    NEAR_DUP_BITS_CROPPED,
    TEMPLATE_BITS,
    BadInput,
    ImageFacts,
    Look,
    PhashIndex,
    assign_groups,
    look,
    near_identical,
    read_image,
)
from mambomeme.library import DB, clean_line, show_path
from mambomeme.ocr import OCR, get_ocr, ocr_engine_id, ocr_identity
from mambomeme.safety_picture import PictureScorer, get_picture, identity, picture_class
from mambomeme.safety_review import (
    engine_id,
    record_meaning_signals,
    record_picture_signal,
    record_text_signal,
    text_engine_id,
)
from mambomeme.safety_text import detect_safety
from mambomeme.sidecars import IMAGE_SUFFIXES, MANIFEST_NAME, Metadata, NoSidecars, SidecarFinder, metadata_folders
from mambomeme.state import file_params, follow_decisions, restate, same_readings, template_group_id
from mambomeme.templates import (
    Recognition,
    TemplateIndex,
    anchor_words_in,
    derive,
    known_text,
    sync_catalogue,
    templates_revision,
)
from mambomeme.vectors import maintain_vector_index

# Items are written in batches: one transaction per batch, so Ctrl-C or kill -9 loses at most
# one batch of work and never leaves a half-written item. 16 keeps the model's batching efficient.
INGEST_BATCH = 16


@dataclass
class Analysis:
    """What ingest learns from one image's pixels."""

    facts: ImageFacts
    ocr_text: str
    boxes: list[list[int]]
    template: Recognition | None
    recognise_ms: float  # wall clock
    recognise_cpu_ms: float  # this process's CPU time (a worker is single-threaded)
    picture_score: float | None = None  # Open-NSFW's P(explicit) of the picture (mambomeme/safety_picture.py)
    cpu_ms: dict[str, float] = field(default_factory=dict)  # CPU by stage, for `mambo bench ingest`


def analyse(data: bytes, name: str, ocr: OCR, templates: TemplateIndex | None,
            picture: PictureScorer | None = None) -> Analysis:
    """Decode, hash, preview, OCR, score the picture and recognise the template of one image; the
    pixels are dropped before returning."""
    facts = _stage("decoder", read_image, data, name)
    c0 = time.process_time()
    explicit = _stage("picture signal", picture.score, facts.rgb) if picture is not None else None
    cpu_ms = facts.cpu_ms | {"picture safety": (time.process_time() - c0) * 1000}
    ocr_before = dict(getattr(ocr, "cpu_ms", {}))
    text, boxes, box_texts = _stage("OCR", ocr.read_lines, facts.rgb)
    cpu_ms |= {k: v - ocr_before[k] for k, v in getattr(ocr, "cpu_ms", {}).items()}
    t0, c0 = time.perf_counter(), time.process_time()
    words = list(zip(boxes, box_texts, strict=True))
    found = None
    if templates is not None:
        found = _stage("template recognition", templates.recognise, facts.rgb, boxes, words)
    ms, cpu = (time.perf_counter() - t0) * 1000, (time.process_time() - c0) * 1000
    cpu_ms["template recognition"] = cpu
    facts.rgb = None
    return Analysis(facts, text, boxes, found, ms, cpu, explicit, cpu_ms)


def _stage(stage: str, fn: Callable[..., Any], *args: Any) -> Any:
    """One step of analysing one file. Whatever it raises (an OpenCV error, a decoder's
    ValueError, MemoryError) is that file's ingest error, never the end of the run."""
    try:
        return fn(*args)
    except BadInput:
        raise
    except Exception as e:  # noqa: BLE001 - any failure on one file is that file's error
        raise BadInput("analysis", f"{stage} failed on it ({type(e).__name__}: {clean_line(e)[:200]})") from None


_WORKER_OCR: OCR | None = None
_WORKER_TEMPLATES: TemplateIndex | None = None
_WORKER_PICTURE: PictureScorer | None = None
_WORKER_START_MS = 0.0  # the worker's start-up CPU, reported with its first result


def _worker_init(templates: tuple[list, list] | None = None) -> None:
    """An ingest worker process: Ctrl-C is the parent's to handle (no traceback per worker)."""
    global _WORKER_OCR, _WORKER_TEMPLATES, _WORKER_PICTURE, _WORKER_START_MS
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    parent = os.getppid()

    def orphan_watch() -> None:
        # If the ingest is killed (kill -9) nobody would stop this worker: leave with it.
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(0)

    threading.Thread(target=orphan_watch, daemon=True).start()
    _WORKER_OCR = OCR(threads=1)
    _WORKER_PICTURE = PictureScorer(threads=1)
    import cv2

    cv2.setNumThreads(1)  # one worker per core already
    _WORKER_TEMPLATES = TemplateIndex(*templates) if templates else None
    _WORKER_START_MS = time.process_time() * 1000


def _worker_analyse(data: bytes, name: str) -> Analysis | BadInput:
    global _WORKER_START_MS
    assert _WORKER_OCR is not None
    try:
        out = analyse(data, name, _WORKER_OCR, _WORKER_TEMPLATES, _WORKER_PICTURE)
        out.cpu_ms["workers' start"], _WORKER_START_MS = _WORKER_START_MS, 0.0
        return out
    except BadInput as e:
        return e
    except Exception as e:  # noqa: BLE001 - one file's failure is one ingest error
        return BadInput("analysis", f"analysis failed on it ({type(e).__name__}: {clean_line(e)[:200]})")


# ─────────────────────────────────────────────────────────────────────────────
# Ingest
# ─────────────────────────────────────────────────────────────────────────────


@dataclass
class Found:
    """A file to ingest: which root it belongs to and where it is."""

    root_id: int
    path: Path
    rel_path: str
    root: Path | None = None


@dataclass
class IngestStats:
    added: int = 0
    updated: int = 0
    duplicates: int = 0
    skipped: int = 0
    errors: int = 0
    unread: int = 0  # files or folders skipped: not indexed at all (errors also counts warnings)
    seen: int = 0


class Progress:
    """count, rate and time left on stderr: redrawn in place on a terminal, a line every few
    seconds otherwise (logs, CI)."""

    def __init__(self, total: int, *, enabled: bool = True):
        self.total = total
        self.start = time.monotonic()
        self.last = 0.0
        self.tty = sys.stderr.isatty()
        self.enabled = enabled

    def update(self, done: int, note: str = "", *, final: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if not final and now - self.last < (0.2 if self.tty else 5.0):
            return
        self.last = now
        elapsed = max(now - self.start, 1e-6)
        rate = done / elapsed
        left = (self.total - done) / rate if rate > 0 else 0
        width = 24
        fill = int(width * done / self.total) if self.total else width
        bar = "#" * fill + "-" * (width - fill)
        # Nothing done yet: no rate and no time left to state (not "0.0/s  left 0s").
        pace = (f"{rate:.1f}/s  " + ("done in " + _fmt_secs(elapsed) if final else "left " + _fmt_secs(left))
                if done or final else "")
        msg = "  ".join(x for x in (f"[{bar}] {done}/{self.total}", pace, note) if x)
        if self.tty:
            sys.stderr.write("\r\x1b[2K" + msg[:200] + ("\n" if final else ""))
        else:
            sys.stderr.write(msg + "\n")
        sys.stderr.flush()


def _fmt_secs(s: float) -> str:
    s = int(round(s))
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


def find_root(db: DB, path: Path) -> tuple[int, Path]:
    """The library root for `path`: the deepest existing root containing it, else a new root at
    the folder (or a file's parent). Looked up and created in one write transaction, so two
    `mambo add`s of one new folder at the same time agree on one root."""
    with db.write():
        best = None
        for root_id, _name, rpath, _n in db.q("roots"):
            rp = Path(rpath)
            if path == rp or rp in path.parents:
                if best is None or len(str(rp)) > len(str(best[1])):
                    best = (int(root_id), rp)
        if best:
            return best
        folder = path if path.is_dir() else path.parent
        base = clean_line(folder.name) or "root"
        name, n = base, 1
        while db.q1("root_by_name", {"name": name}):
            n += 1
            name = f"{base}-{n}"
        root_id = int(db.q1("insert_root", {"name": name, "path": str(folder)})[0])
    return root_id, folder


def read_regular(path: Path, limit: int) -> bytes:
    """A regular file's bytes, at most `limit` of them. O_NONBLOCK, then fstat: a file that became
    a FIFO or a device since the folder was listed would block or never end."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with open(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise BadInput("not-file", "not a regular file")
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise BadInput("too-large", f"file is over {limit // 1_000_000} MB: not a meme")
    return data


def utf8_path(path: Path | str) -> bool:
    """Whether a path is valid UTF-8 (Python keeps other bytes as lone surrogates)."""
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def walk(paths: Iterable[Path], on_error: Callable[[Path, BadInput], None]) -> Iterator[Path]:
    """Image files under `paths`, in sorted order. Directory symlinks are followed once each
    (a loop is reported, not followed); unreadable entries are reported and skipped."""
    seen_dirs: set[tuple[int, int]] = set()

    def visit(p: Path, explicit: bool) -> Iterator[Path]:
        try:
            st = p.stat()
        except OSError as e:
            kind = "symlink-loop" if e.errno == 40 else "unreadable"
            why = "symlink loop" if e.errno == 40 else (e.strerror or str(e))
            on_error(p, BadInput(kind, f"cannot open: {why}"))
            return
        if stat.S_ISDIR(st.st_mode):
            key = (st.st_dev, st.st_ino)
            if key in seen_dirs:
                if p.is_symlink():
                    on_error(p, BadInput("symlink-loop", "symlink loop: folder already visited, skipped"))
                return
            seen_dirs.add(key)
            try:
                children = sorted(p.iterdir())
            except OSError as e:
                on_error(p, BadInput("unreadable", f"cannot list folder: {e.strerror}"))
                return
            for child in children:
                if child.name.startswith("."):
                    continue
                yield from visit(child, False)
        elif stat.S_ISREG(st.st_mode):
            if p.suffix.lower() in IMAGE_SUFFIXES and not utf8_path(p):
                # The library stores paths as SQLite TEXT (UTF-8): a name in another encoding
                # cannot be stored faithfully, and a lossy copy would not find the file again.
                on_error(p, BadInput("bad-name", "file name is not valid UTF-8: rename the file"))
            elif p.suffix.lower() in IMAGE_SUFFIXES:
                yield p
            elif explicit:
                on_error(p, BadInput("not-image", "not an image file: expected .png, .jpg, .gif or .webp"))
        elif explicit:
            on_error(p, BadInput("not-file", "not a regular file"))

    for p in paths:
        yield from visit(p, True)


@dataclass
class Pending:
    """Everything one new item needs, computed outside the write transaction."""

    found: Found
    size: int
    mtime_ns: int
    sidecar_sha: str
    meta: Metadata
    facts: ImageFacts | None = None
    ocr_text: str = ""
    boxes: list[list[int]] = field(default_factory=list)
    template: Recognition | None = None
    picture_score: float | None = None
    existing_item: int | None = None  # set when only metadata changed


@dataclass
class Batch:
    """One batch between the two ingest stages."""

    pending: list[Pending] = field(default_factory=list)  # items to (re)write
    touches: list[dict[str, Any]] = field(default_factory=list)  # same content, new stat
    links: list[tuple[Found, int, int, str, str, Metadata | None]] = field(default_factory=list)  # exact copies
    jobs: list[tuple[Pending, bytes, str]] = field(default_factory=list)  # new content being analysed
    results: Callable[[], list[Analysis | BadInput]] = lambda: []


class Ingester:
    def __init__(self, db: DB, *, progress: bool = True, batch: int = INGEST_BATCH, workers: int | None = None,
                 sidecars: bool = True, report: Callable[[str], None] | None = None):
        self.db = db
        # One line for the person running it (a skipped file, a warning); stderr unless told otherwise.
        self.report = report or (lambda line: print(line, file=sys.stderr, flush=True))
        self.progress_enabled = progress
        self.batch = batch
        self.stats = IngestStats()
        self.sidecars = SidecarFinder() if sidecars else NoSidecars()
        self.templates: TemplateIndex | None = None
        self.revision = 0
        self.recognise_ms: list[float] = []  # per new image, for `mambo bench ingest`
        self.recognise_cpu_ms: list[float] = []
        # CPU milliseconds by stage over the run (workers' and this process's), for `mambo bench ingest`
        self.cpu_ms: collections.Counter[str] = collections.Counter()
        self._embedder: Embedder | None = None
        self.ocr_engine_id: int | None = None
        self.picture_engine_id: int | None = None
        self.pool: Any = None
        self._pool_broken = False
        self._relabelled: set[int] = set()  # items whose kept labels came back (their groups re-derive)
        self.workers = workers if workers is not None else min(os.cpu_count() or 1, 4)
        self.run_id = 0
        self.phash_index = PhashIndex([])
        self.state_changed = False  # what may be shown changed: the vocabulary is refreshed
        self._created: set[int] = set()  # items this run made (their words are not in the vocabulary yet)
        self._hidden: set[int] = set()  # items whose state changed to hidden in the open transaction
        self._stage_inner = 0.0

    @contextlib.contextmanager
    def _clock(self, stage: str, *, children: bool = False) -> Iterator[None]:
        """Adds this process's CPU time inside the block to cpu_ms[stage] (nested blocks count once,
        in the inner stage); children=True adds what child processes that ended in it spent (the
        embedding model's one-time export)."""
        import resource

        start, kids = time.process_time(), resource.getrusage(resource.RUSAGE_CHILDREN)
        outer = self._stage_inner
        self._stage_inner = 0.0
        try:
            yield
        finally:
            spent = (time.process_time() - start) * 1000
            self.cpu_ms[stage] += spent - self._stage_inner
            self._stage_inner = outer + spent
            if children:
                now = resource.getrusage(resource.RUSAGE_CHILDREN)
                self.cpu_ms[stage] += (now.ru_utime - kids.ru_utime + now.ru_stime - kids.ru_stime) * 1000

    # -- lazily loaded engines (a re-run with nothing new loads neither)
    def submit_analysis(self, jobs: list[tuple[bytes, str]]) -> Callable[[], list[Analysis | BadInput]]:
        """Start decoding + OCR of new images; the returned function waits for the results.
        With worker processes (one single-threaded OCR engine per core, when there is enough
        work to pay their ~1 s start) this runs while the previous batch is embedded and written."""
        if self.ocr_engine_id is None:
            with self.db.write():
                self.ocr_engine_id = ocr_engine_id(self.db, ocr_identity())
                self.picture_engine_id = engine_id(self.db, **identity())
        if self.pool is None and self.workers > 1 and len(jobs) >= 4:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            # spawn, not fork: forking a process that has imported torch can deadlock its threads.
            self.pool = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("spawn"),
                                            initializer=_worker_init,
                                            initargs=(self.templates.payload if self.templates else None,))
        if self.pool is not None:
            from concurrent.futures.process import BrokenProcessPool

            futures = [self.pool.submit(_worker_analyse, data, name) for data, name in jobs]

            def collect() -> list[Analysis | BadInput]:
                out: list[Analysis | BadInput] = []
                for f in futures:
                    try:
                        out.append(f.result())
                    except BrokenProcessPool:
                        # A worker killed by the kernel (out of memory) or crashed in native code:
                        # its files are errors, and the next batch starts new workers.
                        out.append(BadInput("analysis", "the worker analysing it stopped (out of memory or a "
                                                        "crash in a decoder)"))
                        self._pool_broken = True
                    except Exception as e:  # noqa: BLE001 - one file's failure is one ingest error
                        out.append(BadInput("analysis", f"analysis failed on it ({type(e).__name__})"))
                if self._pool_broken and self.pool is not None:
                    self.pool.shutdown(wait=False, cancel_futures=True)
                    self.pool, self._pool_broken = None, False
                return out

            return collect

        def in_process() -> list[Analysis | BadInput]:
            out: list[Analysis | BadInput] = []
            for data, name in jobs:
                try:
                    out.append(analyse(data, name, get_ocr(), self.templates, get_picture()))
                except BadInput as e:
                    out.append(e)
                except Exception as e:  # noqa: BLE001 - one file's failure is one ingest error
                    out.append(BadInput("analysis", f"analysis failed on it ({type(e).__name__}: "
                                                    f"{clean_line(e)[:200]})"))
            return out

        return in_process

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            with self._clock("model loading", children=True):
                self._embedder = get_embedder(threads=1)
            with self.db.write():
                self.model_id = model_id(self.db, self._embedder.manifest)
        return self._embedder

    def error(self, path: Path, err: BadInput, *, skipped: bool = True, unread: bool | None = None) -> None:
        """Report on one line and record in `ingest_errors`; the rest of the run goes on. `unread`
        (by default: skipped) counts it among the files `mambo add` could not index."""
        self.stats.errors += 1
        self.stats.unread += skipped if unread is None else unread
        msg = clean_line(err.message)
        if skipped:
            self.report(f"mambo: skipped {show_path(path)}: {msg}")
        elif err.kind == "orphan-metadata":
            self.report(f"mambo: warning: {show_path(path)}: {msg}; a meme it made private stays private until "
                        "`mambo private ID --clear`")
        else:
            self.report(f"mambo: warning: {show_path(path)}: {msg} (indexed with what could be read)")
        # A name that is not UTF-8 is recorded with U+FFFD in place of its undecodable bytes.
        stored = str(path).encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        with self.db.write():
            self.db.q("insert_error", {"run_id": self.run_id, "path": stored, "kind": err.kind,
                                       "message": msg})

    def run(self, paths: list[Path]) -> IngestStats:
        db = self.db
        t0 = time.monotonic()
        with db.write():
            db.q("abandon_stale_runs")
            self.run_id = int(db.q1("start_run", {"paths": json.dumps([str(p) for p in paths])})[0])
        status = "failed"
        try:
            found: list[Found] = []
            for p in paths:
                p = Path(os.path.abspath(p))
                if not p.exists() and not p.is_symlink():
                    self.error(p, BadInput("missing", "no such file or folder"))
                    continue
                if not utf8_path(p):
                    self.error(p, BadInput("bad-name", "folder name is not valid UTF-8: rename it"))
                    continue
                root_id, root = find_root(db, p)
                for f in walk([p], self.error):
                    found.append(Found(root_id, f, f.relative_to(root).as_posix(), root))
            image_folders = {f.path.parent for f in found}
            for folder in sorted({d for f in found for d in metadata_folders(f.path, f.root)}):
                for err in self.sidecars.manifest_errors(folder):
                    self.error(folder / MANIFEST_NAME, err, unread=False)  # its images are still read
                # What said "private" must not be lost quietly when its image is renamed: say so.
                for path, why in self.sidecars.orphans(folder, sidecars=folder in image_folders):
                    self.error(path, BadInput("orphan-metadata", why), skipped=False, unread=False)
            if db.q1("setting", {"key": REGROUP_SETTING}):
                self._regroup()
            with self._clock("catalogue and indexes"):
                self.phash_index = PhashIndex(db.q("phashes"))
                sync_catalogue(db)
                self.revision = templates_revision(db)
                self.templates = TemplateIndex.load(db)
            progress = Progress(len(found), enabled=self.progress_enabled)
            # The bar from the first file: the first batch waits for the OCR engine and the model.
            progress.update(0, "starting the OCR engine and the model")
            # A two-stage pipeline: batch N+1 is read, hashed and handed to the OCR workers before
            # batch N is embedded and written.
            inflight: Batch | None = None
            for start in range(0, len(found), self.batch):
                prepared = self._prepare(found[start:start + self.batch], inflight)
                if inflight is not None:
                    self._finish(inflight)
                    progress.update(self.stats.seen, f"{self.stats.added} new, {self.stats.errors} errors")
                inflight = prepared
            if inflight is not None:
                self._finish(inflight)
            progress.update(self.stats.seen, f"{self.stats.added} new, {self.stats.errors} errors", final=True)
            with self._clock("upkeep"):
                # Items recognised before the templates last changed: matched against the new ones only.
                recognise_existing(db, lambda: (self.embedder, self.model_id), quiet=not self.progress_enabled)
                embed_again(db, lambda: (self.embedder, self.model_id), quiet=not self.progress_enabled)
                # Every group once more: an item deleted (its file's content changed) may have held its
                # copies, and a library from before schema 7 gets the rule. Holding a copy never waits
                # for this: _write applies it to the item's group in the item's own transaction.
                with db.write():
                    self._restate(None)
                    self._hide_words()
            status = "done"
        except KeyboardInterrupt:
            status = "interrupted"
            raise
        finally:
            if self.pool is not None:
                self.pool.shutdown(wait=True, cancel_futures=True)
                self.pool = None
            if self.stats.added or self.stats.updated or self.state_changed:
                with self._clock("upkeep"), contextlib.suppress(Exception), db.write():
                    db.q("refresh_vocabulary")
            s = self.stats
            with contextlib.suppress(Exception), db.write():
                db.q("finish_run", {"run_id": self.run_id, "status": status, "added": s.added,
                                    "updated": s.updated, "duplicates": s.duplicates, "skipped": s.skipped,
                                    "errors": s.errors, "seconds": time.monotonic() - t0})
        if self.stats.added:  # a library that grew past a threshold gets (re)clustered
            with self._clock("upkeep"):
                maintain_vector_index(db, quiet=not self.progress_enabled)
        return self.stats

    def _prepare(self, batch: list[Found], inflight: Batch | None) -> Batch:
        """Stage 1: stat, sidecars, hashes and duplicate checks; new content goes to OCR."""
        with self._clock("read, hash, sidecars"):
            return self._prepare_batch(batch, inflight)

    def _prepare_batch(self, batch: list[Found], inflight: Batch | None) -> Batch:
        db = self.db
        b = Batch()
        pending, touches, links, jobs = b.pending, b.touches, b.links, b.jobs
        earlier = inflight.jobs if inflight is not None else []
        for f in batch:
            self.stats.seen += 1
            try:
                st = f.path.stat()
            except OSError as e:
                self.error(f.path, BadInput("unreadable", f"cannot open: {e.strerror}"))
                continue
            sidecar_sha, meta, side_err = self.sidecars.find(f.path, f.root)
            if side_err:
                # The image is still ingested with what could be read; what could not be read is
                # reported and, for safety, rights and privacy, held at the stricter reading.
                self.error(f.path, side_err, skipped=False)
                sidecar_sha = "error:" + sidecar_sha
            known = db.q1("file_by_path", {"root_id": f.root_id, "rel_path": f.rel_path})
            # Bare means "read no sidecar", not "forget what they said": a known file keeps its metadata.
            keep = bool(known) and isinstance(self.sidecars, NoSidecars)
            # The stored readings are compared with the sidecars' too: a reading changed behind mambo's
            # back (an edit of the file, a flipped byte) is repaired from the sidecar, as `check` reports.
            same_reading = keep or (known is not None and known[4] == sidecar_sha
                                    and same_readings(tuple(known[6:11]), meta))
            if known and known[2] == st.st_size and known[3] == st.st_mtime_ns:
                if same_reading:
                    self.stats.skipped += 1
                    continue
                # Only the metadata changed: update it and re-embed the item's text.
                pending.append(Pending(f, st.st_size, st.st_mtime_ns, sidecar_sha, meta or Metadata(),
                                       existing_item=int(known[1])))
                continue
            if st.st_size == 0:
                self.error(f.path, BadInput("empty", "empty file (0 bytes): not an image; delete it or copy it again"))
                continue
            if st.st_size > MAX_FILE_BYTES:
                self.error(f.path, BadInput("too-large", f"file is {st.st_size / 1e6:,.0f} MB, over the "
                                                         f"{MAX_FILE_BYTES // 1_000_000} MB limit: not a meme"))
                continue
            try:
                data = read_regular(f.path, MAX_FILE_BYTES)
            except OSError as e:
                self.error(f.path, BadInput("unreadable", f"cannot read: {e.strerror}"))
                continue
            except BadInput as e:
                self.error(f.path, e)
                continue
            sha = hashlib.sha256(data).hexdigest()
            if known and known[5] == sha:
                touches.append({"file_id": known[0], "size": st.st_size, "mtime_ns": st.st_mtime_ns,
                                "sidecar_sha256": known[4]})
                if not same_reading:
                    pending.append(Pending(f, st.st_size, st.st_mtime_ns, sidecar_sha, meta or Metadata(),
                                           existing_item=int(known[1])))
                else:
                    self.stats.skipped += 1
                continue
            same = db.q1("item_by_sha", {"sha256": sha})
            twin = any(s == sha for _p, _d, s in [*earlier, *jobs])
            if same or twin:
                # An exact copy is another file of the same item: its metadata is kept with the file,
                # and the item's state is computed from all of its files (state.restate).
                links.append((f, st.st_size, st.st_mtime_ns, sha, sidecar_sha, meta))
                continue
            jobs.append((Pending(f, st.st_size, st.st_mtime_ns, sidecar_sha, meta or Metadata()), data, sha))
        if jobs:
            b.results = self.submit_analysis([(d, p.found.path.name) for p, d, _ in jobs])
        return b

    def _finish(self, b: Batch) -> None:
        """Stage 2: collect OCR and recognition, write the batch, derive fields and embed the
        items' effective text, all in one transaction."""
        with self._clock("writes"):
            self._finish_batch(b)

    def _finish_batch(self, b: Batch) -> None:
        db = self.db
        pending, touches, links, jobs = b.pending, b.touches, b.links, b.jobs
        for (p, _data, _sha), res in zip(jobs, b.results(), strict=True):
            if isinstance(res, BadInput):
                self.error(p.found.path, res)
            else:
                p.facts, p.ocr_text, p.boxes, p.template = res.facts, res.ocr_text, res.boxes, res.template
                p.picture_score = res.picture_score
                self.recognise_ms.append(res.recognise_ms)
                self.recognise_cpu_ms.append(res.recognise_cpu_ms)
                self.cpu_ms.update(res.cpu_ms)
                pending.append(p)
        written = {p.facts.sha256 for p in pending if p.facts is not None}
        for link in [x for x in links if x[3] not in written and not db.q1("item_by_sha", {"sha256": x[3]})]:
            links.remove(link)  # a copy of a file that just failed to decode fails the same way
            self.error(link[0].path, BadInput("corrupt", "identical to a file that could not be read"))
        if not (pending or touches or links):
            return
        if pending or links:
            _ = self.embedder  # load the model before taking the write lock (a copy's metadata may change text)
        with db.write():
            for t in touches:
                db.q("touch_file", t)
            items = [item_id for p in pending if (item_id := self._write(p)) is not None]
            linked = []
            for f, size, mtime_ns, sha, sidecar_sha, meta in links:
                item_id = int(db.q1("item_by_sha", {"sha256": sha})[0])
                self.stats.duplicates += 1
                self._insert_file(item_id, f, size, mtime_ns, sidecar_sha, meta)
                linked.append(item_id)
            db.q("delete_orphan_items")
            items += self._restate(linked)
            items = list(dict.fromkeys(i for i in [*items, *sorted(self._relabelled)]
                                       if db.q1("item_groups", {"item_id": i})))
            self._relabelled.clear()
            derive(db, items)
            if items:  # a batch of touched files only has nothing to embed (and no model loaded)
                with self._clock("embedding"):
                    embed_items(db, items, self.embedder, self.model_id)
            with self._clock("caption meaning safety"):
                # Scored from the caption vectors just stored (no second encoding), then restated.
                self._restate(record_meaning_signals(db, items), merge=False)
            self._hide_words()

    def _regroup(self) -> None:
        """Migration 012's upkeep: groups made again, the fields of their items derived and
        embedded again, the request cleared: one transaction, so an interrupted run does it again."""
        db = self.db
        _ = self.embedder  # loaded before the write lock is taken
        with db.write():
            touched, groups = regroup(db)
            embed_items(db, derive(db, touched), self.embedder, self.model_id)
            db.q("delete_setting", {"key": REGROUP_SETTING})
            db.q("refresh_vocabulary")  # a copy joining a hidden group is hidden in this transaction
        if self.progress_enabled:
            self.report(f"mambo: near-identical groups made again: {groups} groups, {len(touched)} items "
                        "re-checked")

    def _groups(self, item_id: int, phash: int, ocr_text: str, template_group: int | None) -> tuple[int, int | None]:
        """(perceptual group, template group) of a new item; see NEAR_DUP_BITS for the rule."""
        with self._clock("grouping"):
            return self._group_of(item_id, phash, ocr_text, template_group)

    def _group_of(self, item_id: int, phash: int, ocr_text: str, template_group: int | None) -> tuple[int, int | None]:
        perceptual = None
        for d, other in self.phash_index.near(phash, NEAR_DUP_BITS_CROPPED):
            if near_identical(d, ocr_text, self.db.q1("ocr_text", {"item_id": other})[0],
                              known_text(self.db, item_id, other),
                              lambda o=other: (item_look(self.db, item_id), item_look(self.db, o))):
                perceptual = self.phash_index.groups[other][0]
                template_group = template_group or self.phash_index.groups[other][1]
                break
        if template_group is None:
            near = self.phash_index.near(phash, TEMPLATE_BITS)
            template_group = next((self.phash_index.groups[o][1] for _d, o in near if self.phash_index.groups[o][1]),
                                  None)
        if perceptual is None:
            perceptual = int(self.db.q1("new_group", {"kind": "perceptual", "label": None})[0])
        self.phash_index.add(item_id, phash, perceptual, template_group)
        return perceptual, template_group

    def _write(self, p: Pending) -> int | None:
        """Write one item (or its new metadata); returns its id, None when it became a duplicate.
        Vectors are written afterwards, from the effective text (embed_items)."""
        db = self.db
        meta = p.meta.params() | {"template_group": template_group_id(db, p.meta.template)}
        if p.existing_item is not None:
            # Only this file's metadata changed: the item is computed again from all of its files.
            self._insert_file(p.existing_item, p.found, p.size, p.mtime_ns, p.sidecar_sha, p.meta)
            self.stats.updated += 1
            return p.existing_item if self._restate([p.existing_item]) else None
        if (same := db.q1("item_by_sha", {"sha256": p.facts.sha256 if p.facts else ""})) is not None:
            # Another ingest stored this content meanwhile: this file is an exact duplicate of it.
            self.stats.duplicates += 1
            self._insert_file(int(same[0]), p.found, p.size, p.mtime_ns, p.sidecar_sha, p.meta)
            self._restate([int(same[0])])
            return None
        facts = p.facts
        assert facts is not None
        # What the signals find is stored with the item; its class is computed from them (restate).
        detected = detect_safety(p.ocr_text)
        pic = picture_class(p.picture_score) if p.picture_score is not None else None
        rec = p.template
        if meta["template_group"] is None and rec is not None:
            # A recognised template names the template group, as a sidecar's template would.
            name = db.q1("template_name", {"template_id": rec.template_id})[0]
            meta["template_group"] = template_group_id(db, name)
        item_id = int(db.q1("insert_item", meta | {
            "sha256": facts.sha256, "format": facts.format, "width": facts.width,
            "height": facts.height, "byte_size": facts.byte_size, "phash": facts.phash,
            "dhash": facts.dhash, "perceptual_group": None, "ocr_text": p.ocr_text,
            "ocr_engine_id": self.ocr_engine_id,
            "template_id": rec.template_id if rec else None, "template_score": rec.inliers if rec else None,
            "recognised_revision": self.revision, "ocr_boxes": json.dumps(p.boxes),
        })[0])
        self._insert_file(item_id, p.found, p.size, p.mtime_ns, p.sidecar_sha, p.meta)
        if detected:  # what fired, for `mambo safety` (a person may overrule it)
            record_text_signal(db, item_id, detected, text_engine_id(db))
        if pic and self.picture_engine_id is not None:
            record_picture_signal(db, item_id, p.picture_score, pic, self.picture_engine_id)
        db.q("insert_preview", {"item_id": item_id, "format": "webp", "width": facts.preview_size[0],
                                "height": facts.preview_size[1], "data": facts.preview})
        perceptual, template = self._groups(item_id, facts.phash, p.ocr_text, meta["template_group"])
        db.q("set_groups", {"item_id": item_id, "perceptual_group": perceptual, "template_group": template})
        # A re-saved or re-encoded copy takes the decisions made on its group, before its original goes.
        follow_decisions(db, item_id)
        # A near-duplicate of a private, withdrawn or unsafe item is held as strictly, at once.
        self._restate([item_id], merge=False)
        # Labels kept when this content was last deleted come back with it.
        for scope, group in db.q("reattach_labels", {"item_id": item_id}):
            self._relabelled |= {r[0] for r in db.q("items_in_scope", {"scope": scope, "item_id": item_id,
                                                                        "group_id": group})}
        db.q("forget_kept_labels", {"sha256": facts.sha256})
        self._created.add(item_id)
        self.stats.added += 1
        return item_id

    def _insert_file(self, item_id: int, f: Found, size: int, mtime_ns: int, sidecar_sha: str,
                     meta: Metadata | None) -> None:
        self.db.q("insert_file", {"item_id": item_id, "root_id": f.root_id, "rel_path": f.rel_path, "size": size,
                                  "mtime_ns": mtime_ns, "sidecar_sha256": sidecar_sha} | file_params(meta))

    def _restate(self, item_ids: list[int] | None, *, merge: bool = True) -> list[int]:
        """state.restate for the items a write touched; returns those whose text changed."""
        changed, shown = restate(self.db, item_ids, merge=merge, hidden=self._hidden)
        self.state_changed |= shown
        return changed

    def _hide_words(self) -> None:
        """At the end of a write transaction: when a meme the vocabulary knows became hidden in it,
        the vocabulary forgets its words in the same transaction (a kill before the end of the run
        must not leave them for typo correction to offer)."""
        if self._hidden - self._created:
            self.db.q("refresh_vocabulary")
        self._hidden.clear()


def embed_items(db: DB, item_ids: list[int], embedder: Embedder, model: int) -> None:
    """(Re-)embed items' effective text (sidecar fields, else derived ones: EMBED_TEXT_RECIPE): the
    all-fields vector, and one vector per non-empty evidence field (field_texts)."""
    if not item_ids:
        return
    texts, fields = [], []
    for item_id in item_ids:
        title, template, entities, tags, description, ocr_text = db.q1("effective_text", {"item_id": item_id})
        texts.append(embed_text(title, template, json.loads(entities), json.loads(tags), description, ocr_text))
        # A field whose text is the whole text (a bare meme's caption, usually) would store the
        # all-fields vector twice: the scan would read it twice for the same similarity.
        fields.extend((item_id, kind, text)
                      for kind, text in field_texts(template, json.loads(tags), description, ocr_text).items()
                      if text and text != texts[-1])
    vecs = embedder.encode(texts + [text for _i, _k, text in fields], remember=True)
    for item_id, vec, text in zip(item_ids, vecs[:len(texts)], texts, strict=True):
        db.q("delete_vector", {"item_id": item_id})
        db.q("delete_vector_bit", {"item_id": item_id})
        db.q("delete_field_vectors", {"item_id": item_id})
        db.q("insert_vector", {"item_id": item_id, "embedding": vec.tobytes()})
        db.q("insert_vector_bit", {"item_id": item_id, "embedding": vec.tobytes()})
        db.q("upsert_embedding", {"item_id": item_id, "model_id": model,
                                  "text_sha256": hashlib.sha256(text.encode()).hexdigest(),
                                  "vector_sha256": hashlib.sha256(vec.tobytes()).hexdigest()})
    for (item_id, kind, _text), vec in zip(fields, vecs[len(texts):], strict=True):
        db.q("insert_field_vector", {"item_id": item_id, "kind": kind, "embedding": vec.tobytes()})


def embed_again(db: DB, model: Callable[[], tuple[Embedder, int]], *, quiet: bool = True) -> int:
    """Embed again the items with no vector of the current model and text recipe (a library from
    before schema 11 has no evidence vectors, one from before schema 15 no all-mpnet-base-v2 vectors),
    in batches, each its own transaction: an interrupted run leaves every item searchable and the
    next one goes on. Returns how many were embedded."""
    stale = items_to_embed_again(db)
    if not stale:  # the model loads only when needed
        return 0
    embedder, model_row = model()
    progress = Progress(len(stale), enabled=not quiet)
    for start in range(0, len(stale), INGEST_BATCH):
        with db.write():
            embed_items(db, stale[start:start + INGEST_BATCH], embedder, model_row)
        progress.update(min(start + INGEST_BATCH, len(stale)), "embedded again (new model or text recipe)",
                        final=start + INGEST_BATCH >= len(stale))
    return len(stale)


def _item_pixels(db: DB, item_id: int) -> Any:
    """The decoded pixels of an item's first readable file, or None when none is on this machine."""
    for root_path, rel in db.q("item_files", {"item_id": item_id}):
        try:
            data = read_regular(Path(root_path) / rel, MAX_FILE_BYTES)
            return read_image(data, rel).rgb
        except (OSError, BadInput):
            continue
        except Exception:  # noqa: BLE001 - a file that cannot be decoded is not there for recognition
            continue
    return None


def recognise_existing(db: DB, model: Callable[[], tuple[Embedder, int]], *,
                       quiet: bool = True) -> tuple[int, int, int]:
    """Incremental re-recognition after the templates changed: each item recognised at revision R
    is matched only against templates added or changed after R (items whose template was removed
    are at 0: all templates). Returns (items checked, items whose template changed, items whose
    files are missing). Items with missing files keep their old revision and are retried later."""
    revision = templates_revision(db)
    todo = db.rows("items_to_recognise", {"revision": revision})
    if not todo:
        return 0, 0, 0
    indexes: dict[int, TemplateIndex] = {}
    changed: list[int] = []
    missing = 0
    progress = Progress(len(todo), enabled=not quiet)
    for start in range(0, len(todo), INGEST_BATCH):
        updates, absent = [], []
        for it in todo[start:start + INGEST_BATCH]:
            after = it["recognised_revision"]
            if after not in indexes:
                indexes[after] = TemplateIndex.load(db, after)
            index = indexes[after]
            found, boxes, words = None, None, None
            # Anchored (text-layout) templates need each OCR box's text, which is not stored: the
            # item is read again only when its caption holds every anchor's words somewhere.
            anchored = any(anchor_words_in(a, it["ocr_text"]) for _t, a in index.anchors)
            if len(index) or anchored:
                rgb = _item_pixels(db, it["item_id"])
                if rgb is None:
                    missing += 1
                    absent.append(it["item_id"])  # a removed template must still leave its fields
                    continue
                if it["ocr_boxes"] is None or anchored:  # items from schema 1 have no caption boxes yet
                    _text, boxes, texts = get_ocr().read_lines(rgb)
                    words = list(zip(boxes, texts, strict=True))
                try:
                    found = _stage("template recognition", index.recognise, rgb,
                                   boxes if boxes is not None else json.loads(it["ocr_boxes"]), words)
                except BadInput:
                    found = None
            # A picture recognised by more inliers wins; anchors only name an item with no template.
            better = found is not None and (it["template_id"] is None or (
                not found.anchors and found.inliers > (it["template_score"] or 0)))
            updates.append((it, found if better else None, boxes))
        if updates or absent:
            model()  # loaded before the write lock is taken: their derived fields may change
        with db.write():
            for it, found, boxes in updates:
                tid = found.template_id if found else it["template_id"]
                score = found.inliers if found else it["template_score"]
                db.q("set_recognition", {"item_id": it["item_id"], "template_id": tid, "template_score": score,
                                         "recognised_revision": revision,
                                         "ocr_boxes": None if boxes is None else json.dumps(boxes)})
                if found and not it["template"]:
                    name = db.q1("template_name", {"template_id": found.template_id})[0]
                    group = template_group_id(db, name)
                    db.q("set_template_group", {"item_id": it["item_id"], "template_group": group})
            now = derive(db, [it["item_id"] for it, _f, _b in updates] + absent)
            if now:
                embedder, model_row = model()
                embed_items(db, now, embedder, model_row)
            changed += now
        progress.update(min(start + INGEST_BATCH, len(todo)), f"{len(changed)} changed")
    if changed:
        with db.write():
            db.q("refresh_vocabulary")
    return len(todo), len(changed), missing


# Migration 012 sets this: the library's perceptual groups were made by an older rule (pHash with
# word overlap) and are made again, once, by the next `mambo add` (regroup).
REGROUP_SETTING = "regroup_perceptual"


def item_look(db: DB, item_id: int) -> Look | None:
    """An item's preview and caption boxes for near_identical; None without a preview or boxes."""
    row = db.q1("item_look", {"item_id": item_id})
    if row is None or row[3] is None:
        return None
    return look(row[0], int(row[1]), int(row[2]), json.loads(row[3]))


def regroup(db: DB) -> tuple[list[int], int]:
    """Perceptual groups made again by the current rule (images.near_identical), in one
    transaction (call inside db.write()). A group keeps its id when its first item stays; a label
    given to a group stays with the item it was given to (relabel_perceptual); the fail-closed
    group state is recomputed. Returns (items whose derived fields must be computed again: every
    member of a group that changed, groups after regrouping)."""
    rows = db.q("grouping_inputs")
    old = {int(r[0]): r[3] for r in rows}
    look_of = functools.lru_cache(maxsize=256)(lambda i: item_look(db, i))
    first = assign_groups(((int(r[0]), int(r[1]), r[2]) for r in rows), lambda a, b: known_text(db, a, b), look_of)
    group_of_first: dict[int, int] = {}
    taken: set[int] = set()
    touched_old: set[int] = set()
    moved: list[int] = []
    for item_id, head in first.items():
        if head not in group_of_first:
            g = old[head]
            if g is None or g in taken:
                g = int(db.q1("new_group", {"kind": "perceptual", "label": None})[0])
            taken.add(g)
            group_of_first[head] = g
        if old[item_id] != group_of_first[head]:
            db.q("set_perceptual_group", {"item_id": item_id, "perceptual_group": group_of_first[head]})
            moved.append(item_id)
            touched_old.add(old[item_id])
    db.q("relabel_perceptual")
    follow_decisions(db, None)  # an item that joined a group takes its decisions
    restate(db, None)
    # Everyone who shared a group with a moved item, before or after, may gain or lose its labels.
    new = {i: group_of_first[head] for i, head in first.items()}
    touched_new = {new[i] for i in moved}
    touched = {i for i in old if old[i] in touched_old or new[i] in touched_new}
    return sorted(touched), len(group_of_first)
