"""Near-identical groups: the perceptual and template group of each new item (images.NEAR_DUP_BITS
for the rule), and every group made again when the rule changes (regroup)."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable

from mambomeme.embed import Embedder, embed_items
from mambomeme.images import NEAR_DUP_BITS_CROPPED, TEMPLATE_BITS, Look, PhashIndex, assign_groups, look, near_identical
from mambomeme.library import DB, get_setting
from mambomeme.state import follow_decisions, restate
from mambomeme.templates import derive, known_text
from mambomeme.vocabulary import refresh_vocabulary

# Migration 012 sets this: the library's perceptual groups were made by an older rule (pHash with
# word overlap) and are made again, once, by the next `mambo add` (regroup).
REGROUP_SETTING = "regroup_perceptual"


def item_look(db: DB, item_id: int) -> Look | None:
    """An item's preview and caption boxes for near_identical; None without a preview or boxes."""
    row = db.q1("item_look", {"item_id": item_id})
    if row is None or row[3] is None:
        return None
    return look(row[0], int(row[1]), int(row[2]), json.loads(row[3]))


class Grouper:
    """The groups of the items a run adds, against the library's pHash index (load) and the items
    added before them."""

    def __init__(self, db: DB):
        self.db = db
        self.index = PhashIndex([])

    def load(self) -> None:
        self.index = PhashIndex(self.db.q("phashes"))

    def group_of(self, item_id: int, phash: int, ocr_text: str, template_group: int | None) -> tuple[int, int | None]:
        """(perceptual group, template group) of a new item: a near-identical item's groups, else
        a new perceptual group and the template group of a picture within TEMPLATE_BITS."""
        db, index = self.db, self.index
        perceptual = None
        for d, other in index.near(phash, NEAR_DUP_BITS_CROPPED):
            if near_identical(
                d,
                ocr_text,
                db.q1("ocr_text", {"item_id": other})[0],
                known_text(db, item_id, other),
                lambda o=other: (item_look(db, item_id), item_look(db, o)),
            ):
                perceptual = index.groups[other][0]
                template_group = template_group or index.groups[other][1]
                break
        if template_group is None:
            near = index.near(phash, TEMPLATE_BITS)
            template_group = next((index.groups[o][1] for _d, o in near if index.groups[o][1]), None)
        if perceptual is None:
            perceptual = int(db.q1("new_perceptual_group")[0])
        index.add(item_id, phash, perceptual, template_group)
        return perceptual, template_group


def regroup_if_asked(db: DB, model: Callable[[], tuple[Embedder, int]]) -> tuple[int, int] | None:
    """Migration 012's upkeep: groups made again, the fields of their items derived and embedded
    again, the request cleared: one transaction, so an interrupted run does it again. Returns
    (groups, items re-checked), None when no regrouping was asked for."""
    if get_setting(db, REGROUP_SETTING) is None:
        return None
    embedder, model_row = model()  # loaded before the write lock is taken
    with db.write():
        touched, groups = regroup(db)
        embed_items(db, derive(db, touched), embedder, model_row)
        db.q("delete_setting", {"key": REGROUP_SETTING})
        refresh_vocabulary(db)  # a copy joining a hidden group is hidden in this transaction
    return groups, len(touched)


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
                g = int(db.q1("new_perceptual_group")[0])
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
