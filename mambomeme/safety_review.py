"""The safety review: what the safety signals found (stored per item with the rule, the words that
fired and the score), the list a person reviews (`mambo safety`), a person's decision (`mambo safety
set`) that wins over every automatic class, and re-checking a library with the current text rules
and caption-meaning model."""

from __future__ import annotations

import json
from typing import Any

from mambomeme.dense_index import stored_vector
from mambomeme.library import DB, SAFETY_CLASSES, get_setting, set_setting
from mambomeme.output import MamboError, clean_line
from mambomeme.query_plan import QueryPlan
from mambomeme.safety_meaning import meaning_model
from mambomeme.safety_text import RULES_VERSION, Detection, detect_safety
from mambomeme.state import decision_origin, restate, spread_decision
from mambomeme.vocabulary import refresh_vocabulary

# The caption signals (text rules and caption-meaning model) the library's classes come from.
TEXT_RULES_SETTING = "safety_text_rules"


def caption_signals_version() -> str:
    """What TEXT_RULES_SETTING holds for a library checked by this version."""
    m = meaning_model()
    return f"{RULES_VERSION} + {m.signal} {m.sha256[:12]}"


def engine_id(db: DB, kind: str, name: str, version: str, weights_sha256: str = "", params: str = "{}") -> int:
    """The row of one safety engine (the text rules, a picture classifier), as OCR engines are recorded."""
    identity = {"kind": kind, "name": name, "version": version, "weights_sha256": weights_sha256, "params": params}
    row = db.q1("safety_engine", identity)
    return int(row[0]) if row else int(db.q1("insert_safety_engine", identity)[0])


def text_engine_id(db: DB) -> int:
    name, _, version = RULES_VERSION.rpartition("-")
    return engine_id(db, "text", name, version)


def record_text_signal(db: DB, item_id: int, found: Detection | None, engine: int) -> None:
    """Store what the text rules found for one item (nothing stored when they found nothing)."""
    if found is None:
        db.q("delete_safety_signal", {"item_id": item_id, "signal": "text"})
        return
    db.q(
        "upsert_safety_signal",
        {
            "item_id": item_id,
            "signal": "text",
            "engine_id": engine,
            "safety": found.safety,
            "rule": found.rule,
            "words": json.dumps(list(found.words)),
            "score": None,
        },
    )


def record_picture_signal(db: DB, item_id: int, score: float, found: tuple[str, str], engine: int) -> None:
    """Store the picture classifier's score for one item, with the class it maps to."""
    db.q(
        "upsert_safety_signal",
        {
            "item_id": item_id,
            "signal": "picture",
            "engine_id": engine,
            "safety": found[0],
            "rule": found[1],
            "words": "[]",
            "score": round(score, 4),
        },
    )


def meaning_engine_id(db: DB) -> int:
    return engine_id(db, "text", **meaning_model().identity())


def record_meaning_signals(db: DB, item_ids: list[int]) -> list[int]:
    """Score the named items' stored caption vectors with the caption-meaning model and store each
    score with its class (an item with no caption, or not yet embedded by the current model, gets
    none). Returns the items scored; their state is for the caller to restate. No model is loaded."""
    import numpy as np

    from mambomeme.embed import EMBED_MODEL_NAME, EMBED_TEXT_RECIPE, WEIGHTS_SHA256

    if not item_ids:
        return []
    rows = db.q(
        "caption_vectors",
        {
            "item_ids": json.dumps(list(item_ids)),
            "name": EMBED_MODEL_NAME,
            "weights_sha256": WEIGHTS_SHA256,
            "text_recipe": EMBED_TEXT_RECIPE,
        },
    )
    rows = [(i, v) for i, v in ((i, stored_vector(f, c)) for i, f, c in rows) if v is not None]
    if not rows:
        return []
    vecs = np.stack([v for _i, v in rows])
    engine = meaning_engine_id(db)
    for (item_id, _v), m in zip(rows, meaning_model().judge(vecs), strict=True):
        db.q(
            "upsert_safety_signal",
            {
                "item_id": item_id,
                "signal": "meaning",
                "engine_id": engine,
                "safety": m.safety,
                "rule": m.rule,
                "words": "[]",
                "score": m.score,
            },
        )
    return [i for i, _v in rows]


def recheck(db: DB) -> dict[str, int]:
    """Re-run the current text rules on every item's stored OCR text and the caption-meaning model
    on every stored caption vector: the signals follow them, and so does every item's class
    (state.sql apply_item_state: a sidecar's class is kept with its file, so a check never lowers
    what a sidecar says). A person's decision stays in force."""
    engine = text_engine_id(db)
    counts = {"items": 0, "changed": 0, "meaning_scored": 0}
    with db.write():
        before = dict(db.q("item_classes"))
        for item_id, ocr_text in db.q("items_to_recheck"):
            counts["items"] += 1
            record_text_signal(db, item_id, detect_safety(ocr_text), engine)
        ids = [r[0] for r in db.q("all_item_ids")]
        for start in range(0, len(ids), 512):
            counts["meaning_scored"] += len(record_meaning_signals(db, ids[start : start + 512]))
        restate(db, None)
        after = dict(db.q("item_classes"))
        counts["changed"] = sum(after.get(i) != c for i, c in before.items())
        set_setting(db, TEXT_RULES_SETTING, caption_signals_version())
        if counts["changed"]:
            refresh_vocabulary(db)  # the words a search knows are those of memes it may show
    return counts


def recheck_if_stale(db: DB) -> dict[str, int] | None:
    """Recheck once after the text rules or the caption-meaning model changed (a library made by an
    older mambo)."""
    if get_setting(db, TEXT_RULES_SETTING) == caption_signals_version():
        return None
    return recheck(db)


def decide(db: DB, item_id: int, safety: str, decided_by: str, note: str = "") -> dict[str, Any]:
    """A person's decision on one meme (and its exact copies): it wins over the detector, the picture
    signal and sidecars, holds its near-identical copies as strictly (perceptual group), and
    survives re-ingest (it is kept by content). One transaction."""
    if safety not in SAFETY_CLASSES:
        raise MamboError(f"unknown safety class {clean_line(safety)!r}: use one of {', '.join(SAFETY_CLASSES)}")
    who = clean_line(decided_by).strip()[:100]
    if not who:
        raise MamboError("say who decides: --by NAME (a person)")
    before = db.rows("item_safety", {"item_id": item_id})[0]
    with db.write():
        db.q(
            "decide_safety",
            {
                "sha256": before["sha256"],
                "safety": safety,
                "decided_by": who,
                "note": clean_line(note)[:500],
                "automatic_safety": before["automatic_safety"] or before["safety"],
                "automatic_source": before["automatic_source"] or before["safety_source"],
            },
        )
        spread_decision(db, item_id, "safety")
        restate(db, [item_id])
        refresh_vocabulary(db)  # the words a search knows are those of memes it may show
    after = db.rows("item_safety", {"item_id": item_id})[0]
    return {
        "item_id": item_id,
        "before": before["safety"],
        "before_source": before["safety_source"],
        "decided": safety,
        "safety": after["safety"],
        "source": after["safety_source"],
        "decided_by": who,
    }


def withdraw(db: DB, item_id: int) -> dict[str, Any]:
    """Take a person's decision back: the class its sidecars and signals give returns."""
    before = db.rows("item_safety", {"item_id": item_id})[0]
    if before["decided"] is None:
        raise MamboError(f"meme {item_id} has no decision to take back (`mambo safety` lists the decided ones)")
    with db.write():
        db.q("withdraw_safety_decision", {"origin": decision_origin(db, "safety_decisions", before["sha256"])})
        restate(db, None)  # every item: a copy outside the group may have followed the same decision
        refresh_vocabulary(db)  # the words a search knows are those of memes it may show
    after = db.rows("item_safety", {"item_id": item_id})[0]
    return {"item_id": item_id, "before": before["safety"], "safety": after["safety"], "source": after["safety_source"]}


def has_decision(db: DB, item_id: int) -> bool:
    """Whether a person's decision holds this meme (its own, or one it follows as a copy)."""
    row = db.rows("item_safety", {"item_id": item_id})
    return bool(row) and row[0]["decided"] is not None


def review_list(db: DB) -> list[dict[str, Any]]:
    out = []
    for r in db.rows("safety_review_list"):
        r["text_words"] = json.loads(r["text_words"]) if r["text_words"] else []
        out.append(r)
    return out


def review_counts(db: DB) -> dict[str, Any]:
    counts = db.rows("safety_review_counts")[0]
    counts["text_rules"] = caption_signals_version()
    counts["text_rules_stale"] = get_setting(db, TEXT_RULES_SETTING) != counts["text_rules"] and counts["items"] > 0
    counts["engines"] = db.rows("safety_engines_in_use")
    return counts


# A query counts withheld memes only when one of its words has 3 or more characters: "-n" alone (read
# as "n", whose slang alias is "and") counted 6 of the fixture's 7 withheld memes, "me" 1; such
# counts say nothing of what was asked. "u cant c me" still counts (by "cant").
WITHHELD_MIN_WORD = 3


def withheld_matches(db: DB, plan: QueryPlan) -> int:
    """How many withheld memes hold every content word of the query `plan` read (each word or one
    of its aliases; a typo correction is a guess and does not count), for a "no match" answer to say
    that the library holds matches it does not show; 0 when no word has WITHHELD_MIN_WORD characters."""
    if not db.q1("any_withheld")[0]:
        return 0
    if not any(len(t) >= WITHHELD_MIN_WORD for t in plan.content):
        return 0

    def quoted(words: list[str]) -> str:
        return '"' + " ".join(words).replace('"', '""') + '"'

    each = [" OR ".join(dict.fromkeys([quoted([t]), *(quoted(a) for a in plan.aliases(t) if a)])) for t in plan.content]
    return int(db.q1("withheld_matches", {"all_words": " AND ".join(f"({e})" for e in each)})[0]) if each else 0


def withheld_note(n: int, verb: tuple[str, str] = ("holds", "hold"), what: str = "these words") -> str:
    """What an answer adds when n withheld memes hold the query's words (a count, never which): the
    command line prints it in brackets, the search screen under its "no match" line. `verb` (one
    meme, several) and `what` say how they match another kind of query (a picture)."""
    return (
        f"{n} meme{'s' if n != 1 else ''} that {verb[0] if n == 1 else verb[1]} {what} "
        f"{'are' if n != 1 else 'is'} withheld: private, withdrawn or unsafe; see `mambo safety`"
    )
