"""`mambo add`: the run. Files are found (walk), read, hashed and checked against the library in
batches; new content is analysed (analyse) while the batch before it is written (write); then the
library's upkeep: re-recognition, embedding again, every group's state, the vocabulary."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

from mambomeme.dense_index import maintain_vector_index
from mambomeme.embed import WRITE_BATCH, Embedder, embed_again, get_embedder, model_id
from mambomeme.images import MAX_FILE_BYTES, BadInput, read_regular
from mambomeme.ingest.analyse import Analyser, Analysis
from mambomeme.ingest.groups import Grouper, regroup_if_asked
from mambomeme.ingest.stats import IngestStats, StageClock
from mambomeme.ingest.walk import Found, find_root, utf8_path, walk
from mambomeme.ingest.write import Batch, Pending, Writer
from mambomeme.library import DB
from mambomeme.ocr import ocr_engine_id, ocr_identity
from mambomeme.output import clean_line, show_path
from mambomeme.progress import Progress
from mambomeme.safety_picture import identity
from mambomeme.safety_review import engine_id
from mambomeme.sidecars import MANIFEST_NAME, Metadata, NoSidecars, SidecarFinder, metadata_folders
from mambomeme.state import same_readings
from mambomeme.templates import TemplateIndex, recognise_existing, sync_catalogue, templates_revision
from mambomeme.vocabulary import refresh_vocabulary
from mambomeme.words import split_pending

INGEST_BATCH = WRITE_BATCH  # files a batch reads, analyses, writes in one transaction and embeds together


class Ingester:
    def __init__(
        self,
        db: DB,
        *,
        progress: bool = True,
        batch: int = INGEST_BATCH,
        workers: int | None = None,
        sidecars: bool = True,
        report: Callable[[str], None] | None = None,
    ):
        self.db = db
        # One line for the person running it (a skipped file, a warning); stderr unless told otherwise.
        self.report = report or (lambda line: print(line, file=sys.stderr, flush=True))
        self.progress_enabled = progress
        self.batch = batch
        self.stats = IngestStats()
        self.sidecars = SidecarFinder() if sidecars else NoSidecars()
        self.recognise_ms: list[float] = []  # per new image, for `mambo bench ingest`
        self.recognise_cpu_ms: list[float] = []
        self.clock = StageClock()
        self.cpu_ms = self.clock.cpu_ms  # CPU milliseconds by stage, for `mambo bench ingest`
        self._embedder: Embedder | None = None
        self.analyser = Analyser(workers if workers is not None else min(os.cpu_count() or 1, 4))
        self.writer = Writer(db, self.stats, self.clock, Grouper(db), self._model)
        self.run_id = 0
        self.words_split = 0  # items whose run-together words were looked for this run

    @property
    def templates(self) -> TemplateIndex | None:
        return self.analyser.templates

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            with self.clock("model loading", children=True):
                self._embedder = get_embedder(threads=1)
            with self.db.write():
                self.model_id = model_id(self.db, self._embedder.manifest)
        return self._embedder

    def _model(self) -> tuple[Embedder, int]:
        return self.embedder, self.model_id

    def error(self, path: Path, err: BadInput, *, skipped: bool = True, unread: bool | None = None) -> None:
        """Report on one line and record in `ingest_errors`; the rest of the run goes on. `unread`
        (by default: skipped) counts it among the files `mambo add` could not index."""
        self.stats.errors += 1
        self.stats.unread += skipped if unread is None else unread
        msg = clean_line(err.message)
        if skipped:
            self.report(f"mambo: skipped {show_path(path)}: {msg}")
        elif err.kind == "orphan-metadata":
            self.report(
                f"mambo: warning: {show_path(path)}: {msg}; a meme it made private stays private until "
                "`mambo private ID --clear`"
            )
        else:
            self.report(f"mambo: warning: {show_path(path)}: {msg} (indexed with what could be read)")
        # A name that is not UTF-8 is recorded with U+FFFD in place of its undecodable bytes.
        stored = str(path).encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        with self.db.write():
            self.db.q("insert_error", {"run_id": self.run_id, "path": stored, "kind": err.kind, "message": msg})

    # -- the run, stage by stage
    def run(self, paths: list[Path]) -> IngestStats:
        t0 = time.monotonic()
        with self.db.write():
            self.db.q("abandon_stale_runs")
            self.run_id = int(self.db.q1("start_run", {"paths": json.dumps([str(p) for p in paths])})[0])
        status = "failed"
        try:
            found = self._find(paths)
            self._check_metadata(found)
            self._regroup()
            with self.clock("catalogue and indexes"):
                self._load_catalogue()
            self._ingest(found)
            with self.clock("upkeep"):
                self._upkeep()
            status = "done"
        except KeyboardInterrupt:
            status = "interrupted"
            raise
        finally:
            self._end_run(status, t0)
        if self.stats.added:  # a library that grew past a threshold gets (re)clustered
            with self.clock("upkeep"):
                maintain_vector_index(self.db, quiet=not self.progress_enabled)
        return self.stats

    def _find(self, paths: list[Path]) -> list[Found]:
        """The image files under `paths`, each with its library root (made for a new folder)."""
        found: list[Found] = []
        for p in paths:
            p = Path(os.path.abspath(p))
            if not p.exists() and not p.is_symlink():
                self.error(p, BadInput("missing", "no such file or folder"))
                continue
            if not utf8_path(p):
                self.error(p, BadInput("bad-name", "folder name is not valid UTF-8: rename it"))
                continue
            root_id, root = find_root(self.db, p)
            for f in walk([p], self.error):
                found.append(Found(root_id, f, f.relative_to(root).as_posix(), root))
        return found

    def _check_metadata(self, found: list[Found]) -> None:
        """What is wrong with the metadata files of the folders read: each reported once."""
        image_folders = {f.path.parent for f in found}
        for folder in sorted({d for f in found for d in metadata_folders(f.path, f.root)}):
            for err in self.sidecars.manifest_errors(folder):
                self.error(folder / MANIFEST_NAME, err, unread=False)  # its images are still read
            # What said "private" must not be lost quietly when its image is renamed: say so.
            for path, why in self.sidecars.orphans(folder, sidecars=folder in image_folders):
                self.error(path, BadInput("orphan-metadata", why), skipped=False, unread=False)

    def _regroup(self) -> None:
        done = regroup_if_asked(self.db, self._model)
        if done is not None and self.progress_enabled:
            self.report(f"mambo: near-identical groups made again: {done[0]} groups, {done[1]} items re-checked")

    def _load_catalogue(self) -> None:
        self.writer.grouper.load()
        sync_catalogue(self.db)
        self.writer.revision = templates_revision(self.db)
        self.analyser.templates = TemplateIndex.load(self.db)

    def _ingest(self, found: list[Found]) -> None:
        """A two-stage pipeline: batch N+1 is read, hashed and handed to the OCR workers before
        batch N is embedded and written."""
        progress = Progress(len(found), enabled=self.progress_enabled)
        # The bar from the first file: the first batch waits for the OCR engine and the model.
        progress.update(0, "starting the OCR engine and the model")
        inflight: Batch | None = None
        for start in range(0, len(found), self.batch):
            prepared = self._prepare(found[start : start + self.batch], inflight)
            if inflight is not None:
                self._finish(inflight)
                progress.update(self.stats.seen, f"{self.stats.added} new, {self.stats.errors} errors")
            inflight = prepared
        if inflight is not None:
            self._finish(inflight)
        progress.update(self.stats.seen, f"{self.stats.added} new, {self.stats.errors} errors", final=True)

    def _upkeep(self) -> None:
        # Items recognised before the templates last changed: matched against the new ones only.
        recognise_existing(self.db, self._model, quiet=not self.progress_enabled)
        embed_again(self.db, self._model, quiet=not self.progress_enabled)
        # New items, and every item of a library made before split words existed, from the stored caption.
        self.words_split = split_pending(self.db)
        # Every group once more: an item deleted (its file's content changed) may have held its
        # copies, and a library from before schema 7 gets the rule. Holding a copy never waits
        # for this: the writer applies it to the item's group in the item's own transaction.
        with self.db.write():
            self.writer.restate(None)
            self.writer.hide_words()

    def _end_run(self, status: str, t0: float) -> None:
        """Whatever happened: the workers stopped, the vocabulary made again if the run changed
        words, the run recorded."""
        db, s = self.db, self.stats
        self.analyser.close()
        if s.added or s.updated or self.writer.state_changed or self.words_split:
            with self.clock("upkeep"), contextlib.suppress(Exception), db.write():
                refresh_vocabulary(db)
        with contextlib.suppress(Exception), db.write():
            db.q(
                "finish_run",
                {
                    "run_id": self.run_id,
                    "status": status,
                    "added": s.added,
                    "updated": s.updated,
                    "duplicates": s.duplicates,
                    "skipped": s.skipped,
                    "errors": s.errors,
                    "seconds": time.monotonic() - t0,
                },
            )

    # -- stage 1: what each file of a batch needs
    def _prepare(self, batch: list[Found], inflight: Batch | None) -> Batch:
        """Stage 1: stat, sidecars, hashes and duplicate checks; new content goes to OCR."""
        with self.clock("read, hash, sidecars"):
            return self._prepare_batch(batch, inflight)

    def _prepare_batch(self, batch: list[Found], inflight: Batch | None) -> Batch:
        b = Batch()
        earlier = inflight.jobs if inflight is not None else []
        for f in batch:
            self.stats.seen += 1
            self._prepare_file(f, b, earlier)
        if b.jobs:
            b.results = self._submit([(d, p.found.path.name) for p, d, _ in b.jobs])
        return b

    def _prepare_file(self, f: Found, b: Batch, earlier: list[tuple[Pending, bytes, str]]) -> None:
        """One file: unchanged (skipped), its metadata changed, its content known (touched, or
        linked as an exact copy), or new content to analyse."""
        try:
            st = f.path.stat()
        except OSError as e:
            self.error(f.path, BadInput("unreadable", f"cannot open: {e.strerror}"))
            return
        sidecar_sha, meta, side_err = self.sidecars.find(f.path, f.root)
        if side_err:
            # The image is still ingested with what could be read; what could not be read is
            # reported and, for safety, rights and privacy, held at the stricter reading.
            self.error(f.path, side_err, skipped=False)
            sidecar_sha = "error:" + sidecar_sha
        known = self.db.q1("file_by_path", {"root_id": f.root_id, "rel_path": f.rel_path})
        # Bare means "read no sidecar", not "forget what they said": a known file keeps its metadata.
        keep = bool(known) and isinstance(self.sidecars, NoSidecars)
        # The stored readings are compared with the sidecars' too: a reading changed behind mambo's
        # back (an edit of the file, a flipped byte) is repaired from the sidecar, as `check` reports.
        same_reading = keep or (
            known is not None and known[4] == sidecar_sha and same_readings(tuple(known[6:11]), meta)
        )
        pending = Pending(f, st.st_size, st.st_mtime_ns, sidecar_sha, meta or Metadata())
        if known and known[2] == st.st_size and known[3] == st.st_mtime_ns:
            if same_reading:
                self.stats.skipped += 1
            else:  # only the metadata changed: update it and re-embed the item's text
                pending.existing_item = int(known[1])
                b.pending.append(pending)
            return
        data = self._read(f, st.st_size)
        if data is None:
            return
        sha = hashlib.sha256(data).hexdigest()
        if known and known[5] == sha:
            b.touches.append(
                {"file_id": known[0], "size": st.st_size, "mtime_ns": st.st_mtime_ns, "sidecar_sha256": known[4]}
            )
            if not same_reading:
                pending.existing_item = int(known[1])
                b.pending.append(pending)
            else:
                self.stats.skipped += 1
        elif self.db.q1("item_by_sha", {"sha256": sha}) or any(s == sha for _p, _d, s in [*earlier, *b.jobs]):
            # An exact copy is another file of the same item: its metadata is kept with the file,
            # and the item's state is computed from all of its files (state.restate).
            b.links.append((f, st.st_size, st.st_mtime_ns, sha, sidecar_sha, meta))
        else:
            b.jobs.append((pending, data, sha))

    def _read(self, f: Found, size: int) -> bytes | None:
        """A new or changed file's bytes; None (the error reported) when it cannot be a meme."""
        if size == 0:
            self.error(f.path, BadInput("empty", "empty file (0 bytes): not an image; delete it or copy it again"))
            return None
        if size > MAX_FILE_BYTES:
            self.error(
                f.path,
                BadInput(
                    "too-large",
                    f"file is {size / 1e6:,.0f} MB, over the {MAX_FILE_BYTES // 1_000_000} MB limit: not a meme",
                ),
            )
            return None
        try:
            return read_regular(f.path, MAX_FILE_BYTES)
        except OSError as e:
            self.error(f.path, BadInput("unreadable", f"cannot read: {e.strerror}"))
        except BadInput as e:
            self.error(f.path, e)
        return None

    def _submit(self, jobs: list[tuple[bytes, str]]) -> Callable[[], list[Analysis | BadInput]]:
        """Start analysing new images; the engines' identity rows are written on the first batch
        (a re-run with nothing new loads neither)."""
        if self.writer.ocr_engine_id is None:
            with self.db.write():
                self.writer.ocr_engine_id = ocr_engine_id(self.db, ocr_identity())
                self.writer.picture_engine_id = engine_id(self.db, **identity())
        return self.analyser.submit(jobs)

    # -- stage 2: the batch written
    def _finish(self, b: Batch) -> None:
        """Stage 2: collect OCR and recognition, write the batch, derive fields and embed the
        items' effective text, all in one transaction."""
        with self.clock("writes"):
            self._finish_batch(b)

    def _finish_batch(self, b: Batch) -> None:
        self._collect(b)
        written = {p.facts.sha256 for p in b.pending if p.facts is not None}
        for link in [x for x in b.links if x[3] not in written and not self.db.q1("item_by_sha", {"sha256": x[3]})]:
            b.links.remove(link)  # a copy of a file that just failed to decode fails the same way
            self.error(link[0].path, BadInput("corrupt", "identical to a file that could not be read"))
        if not (b.pending or b.touches or b.links):
            return
        if b.pending or b.links:
            _ = self.embedder  # load the model before taking the write lock (a copy's metadata may change text)
        self.writer.write_batch(b)

    def _collect(self, b: Batch) -> None:
        """The analyses of the batch's new content: each an item to write, or that file's error."""
        for (p, _data, _sha), res in zip(b.jobs, b.results(), strict=True):
            if isinstance(res, BadInput):
                self.error(p.found.path, res)
                continue
            p.facts, p.ocr_text, p.boxes, p.template = res.facts, res.ocr_text, res.boxes, res.template
            p.picture_score = res.picture_score
            self.recognise_ms.append(res.recognise_ms)
            self.recognise_cpu_ms.append(res.recognise_cpu_ms)
            self.cpu_ms.update(res.cpu_ms)
            b.pending.append(p)
