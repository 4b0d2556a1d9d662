"""Writing a batch to the library in one transaction: its items, files, previews, signals, groups
and vectors, and the state of every item the batch touched (state.restate)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mambomeme.embed import Embedder, embed_items
from mambomeme.images import BadInput, ImageFacts
from mambomeme.ingest.analyse import Analysis
from mambomeme.ingest.groups import Grouper
from mambomeme.ingest.stats import IngestStats, StageClock
from mambomeme.ingest.walk import Found
from mambomeme.library import DB
from mambomeme.safety_picture import picture_class
from mambomeme.safety_review import record_meaning_signals, record_picture_signal, record_text_signal, text_engine_id
from mambomeme.safety_text import detect_safety
from mambomeme.sidecars import Metadata
from mambomeme.state import file_params, follow_decisions, restate, template_group_id
from mambomeme.templates import Recognition, derive, items_in_scope, template_name
from mambomeme.upkeep import delete_orphan_items
from mambomeme.vocabulary import refresh_vocabulary


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


class Writer:
    """Writes a run's batches. What one batch leaves for the next (the items whose kept labels came
    back, the items hidden in the open transaction) and for the end of the run (whether what may be
    shown changed) is kept here."""

    def __init__(
        self, db: DB, stats: IngestStats, clock: StageClock, grouper: Grouper, model: Callable[[], tuple[Embedder, int]]
    ):
        self.db = db
        self.stats = stats
        self.clock = clock
        self.grouper = grouper
        self.model = model  # the embedder and its model id, loaded before the write lock is taken
        self.revision = 0  # the templates' revision the new items were recognised at
        self.ocr_engine_id: int | None = None
        self.picture_engine_id: int | None = None
        self.state_changed = False  # what may be shown changed: the vocabulary is refreshed
        self._relabelled: set[int] = set()  # items whose kept labels came back (their groups re-derive)
        self._created: set[int] = set()  # items this run made (their words are not in the vocabulary yet)
        self._hidden: set[int] = set()  # items whose state changed to hidden in the open transaction

    def write_batch(self, b: Batch) -> None:
        """The batch's files and items, their derived fields and vectors, in one transaction."""
        db = self.db
        with db.write():
            for t in b.touches:
                db.q("touch_file", t)
            items = [item_id for p in b.pending if (item_id := self.write(p)) is not None]
            linked = []
            for f, size, mtime_ns, sha, sidecar_sha, meta in b.links:
                item_id = int(db.q1("item_by_sha", {"sha256": sha})[0])
                self.stats.duplicates += 1
                self.insert_file(item_id, f, size, mtime_ns, sidecar_sha, meta)
                linked.append(item_id)
            delete_orphan_items(db)
            items += self.restate(linked)
            items = list(
                dict.fromkeys(i for i in [*items, *sorted(self._relabelled)] if db.q1("item_exists", {"item_id": i}))
            )
            self._relabelled.clear()
            derive(db, items)
            if items:  # a batch of touched files only has nothing to embed (and no model loaded)
                with self.clock("embedding"):
                    embed_items(db, items, *self.model())
            with self.clock("caption meaning safety"):
                # Scored from the caption vectors just stored (no second encoding), then restated.
                self.restate(record_meaning_signals(db, items), merge=False)
            self.hide_words()

    def write(self, p: Pending) -> int | None:
        """Write one item (or its new metadata); returns its id, None when it became a duplicate.
        Vectors are written afterwards, from the effective text (embed_items)."""
        db = self.db
        meta = p.meta.params() | {"template_group": template_group_id(db, p.meta.template)}
        if p.existing_item is not None:
            # Only this file's metadata changed: the item is computed again from all of its files.
            self.insert_file(p.existing_item, p.found, p.size, p.mtime_ns, p.sidecar_sha, p.meta)
            self.stats.updated += 1
            return p.existing_item if self.restate([p.existing_item]) else None
        if (same := db.q1("item_by_sha", {"sha256": p.facts.sha256 if p.facts else ""})) is not None:
            # Another ingest stored this content meanwhile: this file is an exact duplicate of it.
            self.stats.duplicates += 1
            self.insert_file(int(same[0]), p.found, p.size, p.mtime_ns, p.sidecar_sha, p.meta)
            self.restate([int(same[0])])
            return None
        return self._write_new(p, meta)

    def _write_new(self, p: Pending, meta: dict[str, Any]) -> int:
        db, facts = self.db, p.facts
        assert facts is not None
        # What the signals find is stored with the item; its class is computed from them (restate).
        detected = detect_safety(p.ocr_text)
        pic = picture_class(p.picture_score) if p.picture_score is not None else None
        item_id = self._insert_item(p, meta)
        self.insert_file(item_id, p.found, p.size, p.mtime_ns, p.sidecar_sha, p.meta)
        if detected:  # what fired, for `mambo safety` (a person may overrule it)
            record_text_signal(db, item_id, detected, text_engine_id(db))
        if pic and self.picture_engine_id is not None:
            record_picture_signal(db, item_id, p.picture_score, pic, self.picture_engine_id)
        db.q(
            "insert_preview",
            {
                "item_id": item_id,
                "format": "webp",
                "width": facts.preview_size[0],
                "height": facts.preview_size[1],
                "data": facts.preview,
            },
        )
        with self.clock("grouping"):
            perceptual, template = self.grouper.group_of(item_id, facts.phash, p.ocr_text, meta["template_group"])
        db.q("set_groups", {"item_id": item_id, "perceptual_group": perceptual, "template_group": template})
        # A re-saved or re-encoded copy takes the decisions made on its group, before its original goes.
        follow_decisions(db, item_id)
        # A near-duplicate of a private, withdrawn or unsafe item is held as strictly, at once.
        self.restate([item_id], merge=False)
        # Labels kept when this content was last deleted come back with it.
        for scope, group in db.q("reattach_labels", {"item_id": item_id}):
            self._relabelled |= items_in_scope(db, scope, item_id, group)
        db.q("forget_kept_labels", {"sha256": facts.sha256})
        self._created.add(item_id)
        self.stats.added += 1
        return item_id

    def _insert_item(self, p: Pending, meta: dict[str, Any]) -> int:
        """The new item's row: its metadata, facts, caption and recognised template."""
        db, facts, rec = self.db, p.facts, p.template
        assert facts is not None
        if meta["template_group"] is None and rec is not None:
            # A recognised template names the template group, as a sidecar's template would.
            meta["template_group"] = template_group_id(db, template_name(db, rec.template_id))
        row = meta | {
            "sha256": facts.sha256,
            "format": facts.format,
            "width": facts.width,
            "height": facts.height,
            "byte_size": facts.byte_size,
            "phash": facts.phash,
            "dhash": facts.dhash,
            "perceptual_group": None,
            "ocr_text": p.ocr_text,
            "ocr_engine_id": self.ocr_engine_id,
            "template_id": rec.template_id if rec else None,
            "template_score": rec.inliers if rec else None,
            "recognised_revision": self.revision,
            "ocr_boxes": json.dumps(p.boxes),
        }
        return int(db.q1("insert_item", row)[0])

    def insert_file(
        self, item_id: int, f: Found, size: int, mtime_ns: int, sidecar_sha: str, meta: Metadata | None
    ) -> None:
        self.db.q(
            "insert_file",
            {
                "item_id": item_id,
                "root_id": f.root_id,
                "rel_path": f.rel_path,
                "size": size,
                "mtime_ns": mtime_ns,
                "sidecar_sha256": sidecar_sha,
            }
            | file_params(meta),
        )

    def restate(self, item_ids: list[int] | None, *, merge: bool = True) -> list[int]:
        """state.restate for the items a write touched; returns those whose text changed."""
        changed, shown = restate(self.db, item_ids, merge=merge, hidden=self._hidden)
        self.state_changed |= shown
        return changed

    def hide_words(self) -> None:
        """At the end of a write transaction: when a meme the vocabulary knows became hidden in it,
        the vocabulary forgets its words in the same transaction (a kill before the end of the run
        must not leave them for typo correction to offer)."""
        if self._hidden - self._created:
            refresh_vocabulary(self.db)
        self._hidden.clear()
