"""An item's state, computed from all it is made of: every file's own metadata (sidecars and
manifest lines), its safety signals, a person's decision and its perceptual group. Every writer
that changes one of those inputs calls `restate` in its own transaction; nothing copies one
file's metadata onto the item."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from mambomeme.library import DB
from mambomeme.sidecars import STRICT_FIELDS, Metadata
from mambomeme.vocabulary import refresh_vocabulary

TEXT_KEYS = (
    "title",
    "template",
    "entities",
    "tags",
    "description",
    "source_url",
    "creator",
    "licence",
    "metadata_source",
)


def file_params(meta: Metadata | None) -> dict[str, Any]:
    """The columns a file's own metadata is kept in (files.metadata, safety, rights, private,
    stated); all NULL for a file that no sidecar or manifest line describes."""
    if meta is None or (meta.source == "none" and not meta.given):
        return {"metadata": None, "safety": None, "rights": None, "private": None, "stated": "[]"}
    given = {k: getattr(meta, k) for k in meta.given if k not in STRICT_FIELDS}
    return {
        "metadata": json.dumps({**given, "source": meta.source}, ensure_ascii=False),
        "safety": meta.safety if "safety" in meta.given else None,
        "rights": meta.rights if "rights" in meta.given else None,
        "private": int(meta.private) if "private" in meta.given else None,
        "stated": json.dumps(meta.stated),
    }


def same_readings(stored: tuple, meta: Metadata | None) -> bool:
    """Whether a file's stored readings (metadata, safety, rights, private, stated, as file_params
    orders them) are what `meta` gives; JSON compared as values, not as text."""
    want = file_params(meta)

    def values(readings: dict[str, Any]) -> dict[str, Any]:
        return {k: json.loads(v) if k in ("metadata", "stated") and v is not None else v for k, v in readings.items()}

    return values(dict(zip(want, stored, strict=True))) == values(want)


def _file_meta(row: dict[str, Any]) -> Metadata | None:
    if row["metadata"] is None:
        return None
    data = json.loads(row["metadata"])
    md = Metadata(source=data.pop("source", "none"))
    for key, value in data.items():
        setattr(md, key, value)
    md.given = frozenset(data)
    return md


def merged_metadata(db: DB, item_id: int) -> Metadata:
    """The item's descriptive fields: the original file's metadata first, each other file's filling
    what it left out (Metadata.merged). Safety, rights and privacy are not taken from here."""
    metas = [m for r in db.rows("file_metadata", {"item_id": item_id}) if (m := _file_meta(r)) is not None]
    if not metas:
        return Metadata()
    out = metas[0]
    for other in metas[1:]:
        out = out.merged(other)
    return out


def template_group_id(db: DB, template: str) -> int | None:
    """The template group named by a template name (created on first use)."""
    label = " ".join(template.lower().split())
    if not label:
        return None
    row = db.q1("template_group", {"label": label})
    if row:
        return int(row[0])
    return int(db.q1("new_group", {"kind": "template", "label": label})[0])


def apply_item_state(db: DB, item_id: int | None) -> list[tuple]:
    """Derive the item's state (None: every item's) from its files, decisions and signals and store
    it; returns (item_id, hidden now) of each item whose state changed."""
    return db.q("apply_item_state", {"item_id": item_id})


def restate(
    db: DB, item_ids: Iterable[int] | None, *, merge: bool = True, hidden: set[int] | None = None
) -> tuple[list[int], bool]:
    """Recompute the named items (None: every item's state, descriptive fields left as they are;
    merge=False: state only, for an item just written from its one file). Call inside db.write().
    Returns (items whose descriptive fields changed, so their derived fields and vectors are made
    again; whether what may be shown changed, so the vocabulary is refreshed). `hidden` gets the
    items whose state changed and that may not be shown now."""
    changed_text: list[int] = []
    state_changed = False

    def apply(item_id: int | None) -> bool:
        rows = apply_item_state(db, item_id)
        if hidden is not None:
            hidden.update(int(i) for i, h in rows if h)
        return bool(rows)

    if item_ids is None:
        return [], apply(None)
    for item_id in dict.fromkeys(item_ids):
        if not merge:
            state_changed |= apply(item_id)
            continue
        meta = merged_metadata(db, item_id)
        params = meta.params()
        row = db.rows("item_metadata", {"item_id": item_id})
        if not row:
            continue
        if any(row[0][k] != params[k] for k in TEXT_KEYS):
            changed_text.append(item_id)
        db.q(
            "set_item_metadata",
            {k: params[k] for k in TEXT_KEYS}
            | {"item_id": item_id, "template_group": template_group_id(db, meta.template)},
        )
        state_changed |= apply(item_id)
    return changed_text, state_changed


def spread_decision(db: DB, item_id: int, kind: str) -> None:
    """A decision just made on `item_id` ("safety" or "privacy") holds its near-identical copies:
    each gets the same decision, following it (state.sql spread_decisions). Call inside db.write()."""
    db.q("spread_decisions", {"item_id": item_id, "kind": kind})


def follow_decisions(db: DB, item_id: int | None) -> None:
    """An item that joined a near-identical group takes the group's newest decisions it lacks
    (None: every item, after groups are made again). Call inside db.write(), before restate."""
    db.q("follow_decisions", {"item_id": item_id})


def decision_origin(db: DB, table: str, sha256: str) -> str | None:
    """The content a decision was made on: the item's own, or the one its decision follows
    (`table`: safety_decisions or privacy_decisions)."""
    query = {"safety_decisions": "safety_decisions_origin", "privacy_decisions": "privacy_decisions_origin"}[table]
    row = db.q1(query, {"sha256": sha256})
    return None if row is None else str(row[0])


def make_private(db: DB, item_id: int, decided_by: str, note: str = "") -> dict[str, Any]:
    """The owner's decision that a meme is private: it and its near-identical copies are never
    shown, whatever their sidecars say, through every `add`, re-check and safety decision, until
    `clear_private`. One transaction, the vocabulary refreshed in it."""
    with db.write():
        row = db.rows("item_privacy", {"item_id": item_id})[0]
        db.q("decide_private", {"sha256": row["sha256"], "decided_by": decided_by, "note": note})
        spread_decision(db, item_id, "privacy")
        restate(db, [item_id], merge=False)  # the item and its group: a decision changes no text
        refresh_vocabulary(db)  # the words a search knows are those of memes it may show
    return db.rows("item_privacy", {"item_id": item_id})[0]


def clear_private(db: DB, item_id: int) -> dict[str, Any]:
    """Take back the privacy decision on a meme and its copies (the owner's, or metadata kept after
    its file was renamed). What its files' sidecars and manifest lines say still holds."""
    with db.write():
        row = db.rows("item_privacy", {"item_id": item_id})[0]
        origin = decision_origin(db, "privacy_decisions", row["sha256"])
        if origin is not None:
            db.q("clear_private", {"origin": origin})
        restate(db, None)  # every item: a copy outside the group may have followed the same decision
        refresh_vocabulary(db)
    return db.rows("item_privacy", {"item_id": item_id})[0] | {"had_decision": origin is not None}
