"""A person's labels on a meme and its group: which meme a reference names, and labelling it.

A label is a derived field (template, entities, tags) on one meme, its near-identical copies or its
template group; `templates.derive` turns labels into the fields search reads, and a sidecar's own
values always win over them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from mambomeme.embed import Embedder, embed_items
from mambomeme.library import DB, list_roots
from mambomeme.output import MamboError, clean_line
from mambomeme.templates import derive, item_files, items_in_scope
from mambomeme.vocabulary import refresh_vocabulary

SCOPES = ("template", "perceptual", "item")


def resolve_item(db: DB, ref: str) -> int:
    """A meme by id (search --json's meme_id) or by the path of one of its files."""
    if ref.isdigit() and db.q1("item_groups", {"item_id": int(ref)}):
        return int(ref)
    p = Path(ref)
    if p.exists():
        p = p.resolve()
        for _rid, _name, rpath, _n in list_roots(db):
            root = Path(rpath)
            if root in p.parents:
                row = db.q1("item_by_file", {"root_path": rpath, "rel_path": p.relative_to(root).as_posix()})
                if row:
                    return int(row[0])
    # The forms the listings print (`mambo safety`: ROOT/rel/path), and the absolute path of an
    # indexed file that is gone from the disk (renamed, moved): found by the stored path.
    for _rid, name, rpath, _n in list_roots(db):
        for prefix in (f"{name}/", f"{rpath.rstrip('/')}/"):
            if ref.startswith(prefix):
                row = db.q1("item_by_file", {"root_path": rpath, "rel_path": ref[len(prefix) :]})
                if row:
                    return int(row[0])
    raise MamboError(
        f"no meme {clean_line(ref)!r} in the library: give a meme id (`search --json` meme_id), "
        "the path of an indexed file, or the path `mambo safety` prints"
    )


def item_file(db: DB, item_id: int) -> Path | None:
    """A file of the meme that is on this machine (the first one found)."""
    for root_path, rel_path in item_files(db, item_id):
        if (path := Path(root_path) / rel_path).is_file():
            return path
    return None


@dataclass(frozen=True)
class Labelled:
    scope: str  # the scope the labels went to ("perceptual" when a meme has no template group)
    reached: int  # memes the labels reach, the labelled one included
    changed: int  # memes whose derived fields changed (embedded again)
    # field -> memes whose sidecar gives that field, so the label does not show on them
    sidecar_wins: dict[str, int]


def label_meme(
    db: DB,
    item_id: int,
    *,
    template: str | None,
    entities: tuple[str, ...],
    tags: tuple[str, ...],
    scope: str,
    clear: bool,
    load_model: Callable[[], tuple[Embedder, int]],
) -> Labelled:
    """Label one meme and its group (`scope`), or `clear` its labels, in one transaction.
    `load_model` gives the embedder and the library's model id; it runs (0.5-2 s) before the write
    lock is taken."""
    if not clear and not (template or entities or tags):
        raise MamboError("nothing to label: give --template, --entity or --tag (or --clear)")
    _it, perceptual, template_group = db.q1("item_groups", {"item_id": item_id})
    if scope == "template" and template_group is None:
        scope = "perceptual"  # no template group yet: its near-identical copies are its group
    group = {"item": None, "perceptual": perceptual, "template": template_group}[scope]
    embedder, model = load_model()
    # The labels, the word indexes (triggers), the vectors and the vocabulary in one transaction, so
    # a meme is found by its new words in every route or in none.
    with db.write():
        affected: set[int] = set()
        if clear:
            for old_scope, old_group in db.q("delete_labels_of_item", {"item_id": item_id}):
                affected |= items_in_scope(db, old_scope, item_id, old_group)
        else:
            values = {
                "template": clean_line(template or "")[:200],
                "entities": json.dumps([clean_line(e)[:200] for e in entities if clean_line(e)]),
                "tags": json.dumps([clean_line(t)[:200] for t in tags if clean_line(t)]),
            }
            for fld, value in values.items():
                if value and value != "[]":
                    db.q(
                        "insert_label",
                        {"item_id": item_id, "scope": scope, "group_id": group, "field": fld, "value": value},
                    )
            affected = items_in_scope(db, scope, item_id, group)
        reached = sorted(affected | {item_id})
        changed = derive(db, reached)
        if changed:
            embed_items(db, changed, embedder, model)
            refresh_vocabulary(db)
    given = [] if clear else [f for f, v in (("template", template), ("entities", entities), ("tags", tags)) if v]
    wins = {
        f: sum(1 for i in reached if db.q1("field_source", {"item_id": i, "field": f})[0] == "sidecar") for f in given
    }
    return Labelled(scope, len(reached), len(changed), {f: n for f, n in wins.items() if n})
