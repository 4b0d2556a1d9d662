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

TEXT_KEYS = ("title", "template", "entities", "tags", "description", "source_url", "creator", "licence",
             "metadata_source")


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


def restate(db: DB, item_ids: Iterable[int] | None, *, merge: bool = True) -> tuple[list[int], bool]:
    """Recompute the named items (None: every item's state, descriptive fields left as they are;
    merge=False: state only, for an item just written from its one file). Call inside db.write().
    Returns (items whose descriptive fields changed, so their derived fields and vectors are made
    again; whether what may be shown changed, so the vocabulary is refreshed)."""
    changed_text: list[int] = []
    state_changed = False
    if item_ids is None:
        db.q("apply_item_state", {"item_id": None})
        return [], db.con.changes() > 0
    for item_id in dict.fromkeys(item_ids):
        if not merge:
            db.q("apply_item_state", {"item_id": item_id})
            state_changed |= db.con.changes() > 0
            continue
        meta = merged_metadata(db, item_id)
        params = meta.params()
        row = db.rows("item_metadata", {"item_id": item_id})
        if not row:
            continue
        if any(row[0][k] != params[k] for k in TEXT_KEYS):
            changed_text.append(item_id)
        db.q("set_item_metadata", {k: params[k] for k in TEXT_KEYS}
             | {"item_id": item_id, "template_group": template_group_id(db, meta.template)})
        db.q("apply_item_state", {"item_id": item_id})
        state_changed |= db.con.changes() > 0
    return changed_text, state_changed
