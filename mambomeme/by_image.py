"""Search by image and "more like this": does the library hold this picture, its copies, its
template, and which memes say the same. A picture (a file read and analysed as ingest analyses one,
nothing written; or a meme of the library) is ranked in tiers, each result with its reason: exact
copies (the same SHA-256), near copies (images.near_identical, the rule ingest groups copies by, and
the copies of those copies), the same meme re-captured (its caption's words: a screenshot or a crop
keeps them), the same template, then memes whose caption means the same (the dense route on the
picture's OCR text). Another signal (a picture-feature model) is one more tier in `rank`."""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mambomeme.images import (
    MAX_FILE_BYTES,
    NEAR_DUP_BITS_CROPPED,
    NEAR_DUP_CONTAINMENT,
    NEAR_DUP_CONTAINMENT_CROPPED,
    NEAR_DUP_MIN_LETTERS,
    NEAR_DUP_TRIGRAMS,
    TEMPLATE_BITS,
    BadInput,
    Caption,
    Look,
    PhashIndex,
    caption,
    hamming,
    known_phrases,
    look,
    near_identical,
    read_regular,
    varying,
)
from mambomeme.ingest.analyse import analyse
from mambomeme.ingest.groups import item_look
from mambomeme.library import DB
from mambomeme.ocr import get_ocr
from mambomeme.output import MamboError, clean_line, show_path
from mambomeme.query_plan import normalise_query
from mambomeme.safety_review import withheld_note as safety_withheld_note
from mambomeme.search import Result, Searcher, result_json, result_lines, results_details
from mambomeme.templates import TemplateIndex, known_text

EXACT, NEAR, CAPTION, TEMPLATE, MEANING = "exact copy", "near copy", "same caption", "same template", "similar caption"
REASONS = (EXACT, NEAR, CAPTION, TEMPLATE, MEANING)  # the tiers, best first

# The same caption: the items whose OCR text shares most words with the picture's (FTS5's BM25 over
# the caption column, its first CAPTION_WORDS distinct words of 3+ letters) are compared with it
# letter by letter; a crop or a screenshot's status bar changes few of a caption's words.
CAPTION_CANDIDATES = 50
# ... and for a picture within NEAR_DUP_BITS_CROPPED, a caption of this many letters (a crop leaves a
# few words) held at NEAR_DUP_CONTAINMENT, OCR noise allowed (benchmark v1's crops: 4 of 6 misses
# kept only "what you did", "delete it all"; search_by_image-result.txt).
CROPPED_MIN_LETTERS = 8
CAPTION_WORDS = 32
# "Similar caption": a meme whose caption vector (or all-fields vector) is at least this similar
# (cosine, all-mpnet-base-v2) to the picture's OCR text: the lowest floor at which at least half of
# the similar captions shown share the picture's subtopic, chosen on one fold of benchmark v1's
# development templates and held on the other (two folds by template group, bare library; shown,
# share: 0.45 -> 57, 0.37 / 86, 0.35; 0.50 -> 33, 0.58 / 41, 0.51; 0.55 -> 24, 0.63 / 24, 0.71).
# Sweep: benchdata/experiments/search_by_image.py, figures in search_by_image-result.txt.
SIMILAR_CAPTION_MIN = 0.5


@dataclass(frozen=True)
class Probe:
    """What the ranking knows of a picture: its bytes' hash, pHash and caption, the template it was
    recognised as, its groups and its look (preview and caption boxes), and for a meme of the
    library its own item (never in its own answer)."""

    sha256: str
    phash: int
    ocr_text: str
    template_id: int | None = None
    perceptual_group: int | None = None
    template_group: int | None = None
    look: Look | None = None
    item_id: int | None = None
    known: tuple[str, ...] = ()  # the known text of its template (templates.known_text)


@dataclass(frozen=True)
class ImageAnswer:
    """The ranked memes (each Result's details say its "reason") and how many withheld memes
    (private, withdrawn, unsafe) are copies of the picture or share its caption or template."""

    results: list[Result]
    withheld: int
    ocr_text: str


def read_file(path: str) -> bytes:
    """A picture file's bytes, or a one-line MamboError saying why not."""
    try:
        return read_regular(Path(path), MAX_FILE_BYTES)
    except BadInput as e:
        raise MamboError(f"{show_path(path)}: {e.message}") from None
    except OSError as e:
        raise MamboError(f"cannot read {show_path(path)}: {clean_line(e.strerror or e)}") from None


def probe_file(db: DB, data: bytes, name: str) -> Probe:
    """A picture as ingest reads it (analyse: decode, hashes, preview, OCR, template), nothing written."""
    try:
        a = analyse(data, name, get_ocr(), TemplateIndex.load(db))
    except BadInput as e:
        raise MamboError(f"{show_path(name)}: {e.message}") from None
    f = a.facts
    template = a.template.template_id if a.template else None
    known = _template_text(db, template) if template is not None else ()
    return Probe(f.sha256, f.phash, a.ocr_text, template, look=look(f.preview, f.width, f.height, a.boxes), known=known)


def probe_item(db: DB, item_id: int) -> Probe:
    """A meme of the library as the ranking reads it (more like this)."""
    row = db.q1("image_facts", {"ids": json.dumps([item_id])})
    if row is None:
        raise MamboError(f"no meme {item_id} in this library")
    _id, sha, phash, _dhash, text, perceptual, template_group, template = row
    return Probe(
        sha,
        int(phash),
        text,
        template,
        perceptual,
        template_group,
        item_look(db, item_id),
        item_id,
        known_text(db, item_id),
    )


def _template_text(db: DB, template_id: int) -> tuple[str, ...]:
    """A recognised template's name, aliases and anchors' words, as templates.known_text gives an item's."""
    out: list[str] = []
    for name, aliases, anchors in db.q("image_template_text", {"template_id": template_id}):
        out += [name, *json.loads(aliases), *(a["text"] for a in json.loads(anchors))]
    return tuple(dict.fromkeys(out))


def search_file(db: DB, path: str, limit: int, searcher: Searcher | None = None) -> ImageAnswer:
    """`mambo search --image FILE`: the file read, analysed and ranked; the embedding model is loaded
    for the similar-caption tier when the picture has words and no `searcher` is given."""
    probe = probe_file(db, read_file(path), path)
    if searcher is None and normalise_query(probe.ocr_text):
        from mambomeme.embed import get_embedder

        searcher = Searcher(db, get_embedder())
    return rank(db, probe, limit, searcher)


def more_like(db: DB, item_id: int, limit: int, searcher: Searcher | None = None) -> ImageAnswer:
    """ "More like this" on a meme of the library: its copies, its template, memes saying the same."""
    return rank(db, probe_item(db, item_id), limit, searcher)


def rank(
    db: DB, probe: Probe, limit: int, searcher: Searcher | None = None, *, ignore: Iterable[int] = ()
) -> ImageAnswer:
    """The tiers in order (REASONS), each item in the first tier that holds it; withheld memes
    counted, never shown. `ignore`: items left out as if the library did not hold them."""
    left_out = {*ignore, *([probe.item_id] if probe.item_id is not None else [])}
    found: dict[int, tuple[int, float]] = {}  # item -> (tier, closeness 0-1)

    def add(tier: int, items: Iterable[tuple[int, float]]) -> None:
        for item, closeness in items:
            if item not in left_out and item not in found:
                found[item] = (tier, closeness)

    index = PhashIndex(db.q("image_hashes"))
    exact = [] if probe.item_id is not None else [int(r[0]) for r in db.q("image_exact", {"sha256": probe.sha256})]
    add(0, ((i, 1.0) for i in exact))
    add(1, _near_copies(db, probe, index, left_out))
    copies = [i for i in found if i not in left_out]
    groups = {index.groups[i][0] for i in copies} | {probe.perceptual_group}
    add(1, ((int(r[0]), 0.0) for r in db.q("image_group_members", {"groups": _ids(groups)})))
    add(2, _same_caption(db, probe))
    add(2, _cropped_caption(db, probe, index, set(found) | left_out))
    add(3, _same_template(db, probe, index, {index.groups[i][1] for i in found} | {probe.template_group}))
    shown = {int(r[0]) for r in db.q("image_servable", {"ids": json.dumps(sorted(found))})}
    withheld = len(found) - len(shown)
    found = {i: v for i, v in found.items() if i in shown}
    if searcher is not None and len(found) < limit:
        add(4, _similar_captions(searcher, probe.ocr_text, limit + len(found)))
    ordered = sorted(found, key=lambda i: (found[i][0], -found[i][1], i))[:limit]
    details = {d["item_id"]: d for d in results_details(db, ordered)}
    results = [
        Result(
            item_id=i,
            rank=n,
            score=len(REASONS) - found[i][0] + 0.99 * found[i][1],
            lexical_rank=None,
            fuzzy_rank=None,
            dense_rank=None,
            similarity=found[i][1] if found[i][0] == 4 else None,
            coverage=0.0,
            details=details[i] | {"reason": REASONS[found[i][0]]},
        )
        for n, i in enumerate(ordered, 1)
    ]
    return ImageAnswer(results, withheld, probe.ocr_text)


def _ids(values: Iterable[int | None]) -> str:
    return json.dumps(sorted({int(v) for v in values if v is not None}))


def _facts(db: DB, ids: list[int]) -> dict[int, tuple]:
    return {int(r[0]): tuple(r) for r in db.q("image_facts", {"ids": json.dumps(ids)})} if ids else {}


def _near_copies(db: DB, probe: Probe, index: PhashIndex, left_out: set[int]) -> list[tuple[int, float]]:
    """Items near-identical to the picture by the library's own rule (images.near_identical: pHash
    within NEAR_DUP_BITS_CROPPED, captions and caption pixels agreeing), nearest first."""
    near = [(d, i) for d, i in index.near(probe.phash, NEAR_DUP_BITS_CROPPED) if i not in left_out]
    facts = _facts(db, [i for _d, i in near])
    out = []
    for d, other in near:
        looks: Callable[[], tuple[Look | None, Look | None]] = lambda o=other: (probe.look, item_look(db, o))  # noqa: E731
        if near_identical(d, probe.ocr_text, facts[other][4], probe.known + known_text(db, other), looks):
            out.append((other, 1.0 - d / 64))
    return out


def _same_caption(db: DB, probe: Probe) -> list[tuple[int, float]]:
    """Items whose caption the picture's OCR text holds, or that hold it (same_caption), best first."""
    words = list(dict.fromkeys(w for w in normalise_query(probe.ocr_text) if len(w) >= 3))[:CAPTION_WORDS]
    if not words:
        return []
    match = "ocr_text : (" + " OR ".join(f'"{w}"' for w in words) + ")"
    ids = [int(r[0]) for r in db.q("image_caption_candidates", {"match": match, "k": CAPTION_CANDIDATES})]
    facts = _facts(db, ids)
    held = [(i, same_caption(probe.ocr_text, facts[i][4], probe.known + known_text(db, i))) for i in ids if i in facts]
    return [(i, _closeness(h, facts[i][2], probe)) for i, h in held if h >= NEAR_DUP_CONTAINMENT_CROPPED]


def _closeness(held: float, phash: int, probe: Probe) -> float:
    """A same-caption item's place in its tier: how well the captions agree, then (the same caption
    on other pictures: a template's stock phrase) the nearer picture."""
    return 0.8 * held + 0.2 * (1.0 - hamming(int(phash), probe.phash) / 64)


def _cropped_caption(db: DB, probe: Probe, index: PhashIndex, seen: set[int]) -> list[tuple[int, float]]:
    """Items whose picture is near (within NEAR_DUP_BITS_CROPPED) and whose caption holds the
    picture's words, or theirs, in whole: a crop that cut a caption to a few words ("what you did"),
    too few for the near-copy rule, which must be sure enough to group, is still that meme first."""
    near = [i for _d, i in index.near(probe.phash, NEAR_DUP_BITS_CROPPED) if i not in seen]
    facts = _facts(db, near)
    a, out = caption(probe.ocr_text), []
    for i in near:
        b = caption(facts[i][4])
        held = max(_held(a, b, CROPPED_MIN_LETTERS, least=False), _held(b, a, CROPPED_MIN_LETTERS, least=False))
        if held >= NEAR_DUP_CONTAINMENT:
            out.append((i, _closeness(held, facts[i][2], probe)))
    return out


def same_caption(text_a: str, text_b: str, known: Iterable[str] = ()) -> float:
    """How well one caption holds the other, in whichever direction holds better (a screenshot's
    status bar adds a line, a crop cuts some words): as the near-identity rule reads captions, the
    share of letters found of the held caption's least-contained line (`_held`), the template's
    known text (its own printed words) left out of both. 0.0 when the held caption has under
    NEAR_DUP_MIN_LETTERS letters."""
    a, b = caption(text_a), caption(text_b)
    if phrases := known_phrases(known):
        a, b = varying(a, phrases), varying(b, phrases)
    return max(_held(a, b), _held(b, a))


def _held(a: Caption, b: Caption, min_letters: int = NEAR_DUP_MIN_LETTERS, least: bool = True) -> float:
    """The share of letters of a's least-contained line (least=False: of all a's letters) found in
    b: each line matched in order against b's letters, in runs of two or more (single letters
    matched here and there are chance). 0.0 when a has fewer than `min_letters`."""
    if len(a.joined) < max(1, min_letters) or not b.joined:
        return 0.0
    if len(a.trigrams & b.trigrams) < NEAR_DUP_TRIGRAMS * len(a.trigrams):
        return 0.0
    shares, found = [], 0
    for line in a.lines:
        letters = "".join(line)
        blocks = difflib.SequenceMatcher(None, letters, b.joined, autojunk=False).get_matching_blocks()
        n = sum(m.size for m in blocks if m.size >= 2)
        shares.append(n / len(letters))
        found += n
    return min(shares) if least else found / len(a.joined)


def _same_template(db: DB, probe: Probe, index: PhashIndex, groups: set[int | None]) -> list[tuple[int, float]]:
    """Memes of the picture's template: recognised as the same template, in the template group of
    a copy or of the picture, or with a picture within TEMPLATE_BITS (the rule by which ingest gives
    an unlabelled meme the template group of a picture this close). First those whose caption
    shares most of the picture's words (a crop that cut most of the caption is still that meme),
    then the nearest picture: closeness is the mean of the two."""
    near = index.near(probe.phash, TEMPLATE_BITS)
    groups = groups | {index.groups[i][1] for _d, i in near}
    rows = db.q("image_same_template", {"template_id": probe.template_id, "groups": _ids(groups)})
    picture = {int(i): 1.0 - hamming(int(ph), probe.phash) / 64 for i, ph in rows}
    picture |= {i: 1.0 - d / 64 for d, i in near}
    facts = _facts(db, list(picture))
    a = caption(probe.ocr_text)
    out = {}
    for i, closeness in picture.items():
        b = caption(facts[i][4])
        out[i] = (max(_held(a, b, 1, least=False), _held(b, a, 1, least=False)) + closeness) / 2
    return sorted(out.items(), key=lambda x: (-x[1], x[0]))


def _similar_captions(searcher: Searcher, text: str, k: int) -> list[tuple[int, float]]:
    """Memes whose caption means what the picture's says: the dense route (the "dense" system, no
    "no match" rule) on its OCR text, at least SIMILAR_CAPTION_MIN similar."""
    if not normalise_query(text):
        return []
    answer = searcher.answer(" ".join(text.split()), "dense", min(100, max(10, k)), empty_rule=False)
    return [(r.item_id, r.similarity) for r in answer.results if (r.similarity or 0.0) >= SIMILAR_CAPTION_MIN]


def format_match(r: Result) -> str:
    """A result as `mambo search --image` prints it: rank, name and reason, caption, path."""
    return result_lines(r, f"({r.details['reason']})", [])


def match_json(r: Result) -> dict[str, Any]:
    """A result as `mambo search --image --json` prints it: search's result JSON and its reason."""
    return result_json(r) | {"reason": r.details["reason"]}


def withheld_note(n: int) -> str:
    """How many withheld memes match the picture (a count, never which)."""
    return safety_withheld_note(n, ("matches", "match"), "this picture")
