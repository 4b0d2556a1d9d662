"""Words run together, as OCR reads tightly set captions ("THEFIFTH WALL", "NOBODYGETSONLINETODAY")
and people type them ("hidethepainharold"): a long token that no English word list and no word of
the library knows is split into the words it holds by word frequencies (wordninja's English list,
inside its wheel), and kept only when every piece is a word. The glued token stays searchable; its
pieces are searched beside it (at index time, right after it in the caption the index holds: the
`ocr_spaced` column; in a query, as an alternative)."""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Callable, Container, Iterable, Mapping
from types import MappingProxyType
from typing import Any

from mambomeme.library import DB

# Chosen on the glued-word set (dev captions, 2-4 words run together; both template folds chose 4
# letters and pieces seen 1,000 times): held out, precision 0.95, recall 0.80; from 6 letters recall
# falls to 0.77. docs/decisions.md#glued-words, benchdata/experiments/glued_words-result.txt.
GLUED_MIN_LENGTH = 4
# A piece is a word when pyspellchecker's English list has seen it this often (or the library holds
# it, or it is a number, or slang): rarer entries ("ovi", "naf") are a wrong split's leftovers.
PIECE_MIN_COUNT = 1000
# A token this many memes hold is a word of its own ("stonks", a name); fewer may be one meme's
# copies repeating its OCR. Real-style library, 731 real glued tokens: from 2 memes 395 split right,
# from 10 562 (25 wrong), never 562 (36 wrong); the same knee on both folds (decisions.md#glued-words).
LIBRARY_WORD_MIN_DOCS = 10
# A single-letter piece other than these is a leftover ("s tonks" for "stonks").
ONE_LETTER_WORDS = frozenset({"a", "i"})


@functools.cache
def english_frequencies() -> Any:
    """pyspellchecker's English word frequencies (bundled with the package, nothing downloaded).
    Loaded once per process (~0.3-0.5 s), and only when a word needs it."""
    from spellchecker import SpellChecker

    return SpellChecker(language="en", distance=1).word_frequency


@functools.cache
def _segmenter() -> Callable[[str], list[str]]:
    import wordninja  # ~0.35 s to load its word list: only when a token needs splitting

    return wordninja.split


def segment(token: str) -> list[str]:
    """The token cut into the most likely sequence of words (wordninja), whatever they are."""
    return _segmenter()(token)


def tokens(text: str) -> list[str]:
    """The lower-case letter-and-digit tokens of a caption, as the word index splits it (ASCII)."""
    return re.findall(r"[^\W_]+", text.lower())


def could_be_glued(
    token: str,
    docs: Mapping[str, int],
    slang: Container[str] = frozenset(),
    *,
    min_length: int = GLUED_MIN_LENGTH,
    library_word_docs: int = LIBRARY_WORD_MIN_DOCS,
) -> bool:
    """Long, not a number, and neither English, slang nor a word of the library (`docs`: its
    document counts)."""
    return (
        len(token) >= min_length
        and token.isascii()
        and not token.isdigit()
        and token not in slang
        and docs.get(token, 0) < library_word_docs
        and not english_frequencies()[token]
    )


def joined_slang(pieces: list[str], slang: Container[str]) -> list[str]:
    """Adjacent pieces that together are a slang word, joined again: the English list cuts words
    it lacks ("wifihere" -> wi fi here -> wifi here)."""
    out, i = [], 0
    while i < len(pieces):
        j = next((j for j in range(min(len(pieces), i + 3), i + 1, -1) if "".join(pieces[i:j]) in slang), i + 1)
        out.append("".join(pieces[i:j]))
        i = j
    return out


def is_piece(
    piece: str, docs: Mapping[str, int], slang: Container[str], piece_min_count: int = PIECE_MIN_COUNT
) -> bool:
    """A piece of a split is a word: a number, slang, "a" or "i", English seen `piece_min_count`
    times (a contraction also without its apostrophe), or a word of two documents of the library."""
    if piece.isdigit() or piece in slang:
        return True
    if len(piece) == 1:
        return piece in ONE_LETTER_WORDS
    freq = english_frequencies()
    if freq[piece] >= piece_min_count or docs.get(piece, 0) >= 2:
        return True
    # a contraction typed, or read by OCR, without its apostrophe ("dont", "wasnt", "youre", "yall")
    return any(freq[f"{piece[:i]}'{piece[i:]}"] >= piece_min_count for i in range(1, len(piece)))


# In a typed query, a piece of wordninja's split that no other list counts as a word is still one
# when wordninja's own word list holds it and it has this many letters or more (shorter pieces are
# its leftovers: "happendswhenyourenot" -> happen ds when ...). Chosen on the glued-word set's
# tokens typed as queries, folds by template (both chose 6): held out, objective 0.739 -> 0.760 and
# 0.748 -> 0.761 against no such piece (recall 0.842 -> 0.864, 0.853 -> 0.868; unknown single words
# split 112 -> 119 of 619, 136 -> 142 of 725); 4 letters split 166 and 192. glued_words.py split,
# benchdata/experiments/glued_words-result.txt ("the query reading").
KNOWN_PIECE_LENGTH = 6


def split_glued(
    token: str,
    docs: Mapping[str, int] = MappingProxyType({}),
    slang: Container[str] = frozenset(),
    *,
    min_length: int = GLUED_MIN_LENGTH,
    piece_min_count: int = PIECE_MIN_COUNT,
    library_word_docs: int = LIBRARY_WORD_MIN_DOCS,
    words_only: bool = False,
    known_piece_length: int = KNOWN_PIECE_LENGTH,
) -> list[str]:
    """The words a run-together token holds ("nobodygetsonline" -> nobody gets online), or [] when
    it is not one: too short, a known word, or a split with a piece that is not a word (is_piece).
    With `words_only`, a split with a piece that is no word gives way to the likeliest split into
    words alone (words_split; `docs` must then hold every substring's count: "aintnobody" is cut
    "a in t nobody", a split into words reads "aint nobody")."""
    if not could_be_glued(token, docs, slang, min_length=min_length, library_word_docs=library_word_docs):
        return []
    pieces = joined_slang(segment(token), slang)
    if all(is_piece(p, docs, slang, piece_min_count) for p in pieces):
        return pieces if len(pieces) >= 2 else []
    if words_only and len(pieces) >= 2:
        # A typed query: a piece wordninja's own list holds, long enough to be no leftover, is a word
        # the user typed ("kentucky", "wasnt" in "herecomesthekentucky", "daythoughwasntshortened").
        if all(
            is_piece(p, docs, slang, piece_min_count) or (len(p) >= known_piece_length and is_segment_word(p))
            for p in pieces
        ):
            return pieces
        # (a word the English list holds whole, "megamind", is never forced apart; nor into
        # pieces of under FORCED_PIECE_LENGTH letters on average, a typo's letters: "ceena" ce en a)
        pieces = words_split(token, lambda p: is_piece(p, docs, slang, piece_min_count))
        return pieces if len(pieces) >= 2 and len(token) >= FORCED_PIECE_LENGTH * len(pieces) else []
    return []


# A split into words alone (split_glued's `words_only`) averages this many letters a piece or more:
# under it, it cuts a typo or a name into letters ("ceena": ce en a; "noooo": n oo oo; English words
# average 4-5 letters). Not swept: the guard of the cases seen. Real-style typed glued queries found
# at rank 1 (glued_words.py library; the typed share then counted article pairs): 249 / 300 with it,
# 253 with no floor (dev v2 bare: "jon ceena" emptied, two absent memes answered), 240 when only
# leftover single letters may force a split.
FORCED_PIECE_LENGTH = 3
# The longest piece words_split tries (longer English words are rare in captions).
LONGEST_PIECE = 20


def substrings(token: str) -> list[str]:
    """Every piece words_split may try: the library counts it needs."""
    n = len(token)
    return [token[i:j] for i in range(n) for j in range(i + 1, min(n, i + LONGEST_PIECE) + 1)]


def words_split(token: str, is_word: Callable[[str], bool]) -> list[str]:
    """The most likely split of the token by wordninja's word costs among splits whose every piece
    is a word ([] when none is): wordninja's own search, kept to words. A word its list lacks (the
    library's "dont", slang) costs as its rarest word."""
    cost = _word_costs()
    rarest = _rarest_cost()
    best: list[tuple[float, int]] = [(0.0, 0)] + [(math.inf, 0)] * len(token)
    for end in range(1, len(token) + 1):
        for start in range(max(0, end - LONGEST_PIECE), end):
            if best[start][0] < math.inf and is_word(piece := token[start:end]):
                c = best[start][0] + cost.get(piece, rarest)
                if c < best[end][0]:
                    best[end] = (c, start)
    if best[-1][0] == math.inf:
        return []
    pieces, end = [], len(token)
    while end:
        start = best[end][1]
        pieces.append(token[start:end])
        end = start
    return pieces[::-1]


def is_segment_word(piece: str) -> bool:
    """Whether wordninja's word list (126k words, from which it segments) holds the piece."""
    return piece in _word_costs()


@functools.cache
def _word_costs() -> dict[str, float]:
    """wordninja's word -> cost (its model's own table; ~0.35 s to load, once)."""
    import wordninja

    return wordninja.DEFAULT_LANGUAGE_MODEL._wordcost  # noqa: SLF001


@functools.cache
def _rarest_cost() -> float:
    return max(_word_costs().values())


def split_words(splits: Mapping[str, list[str]]) -> str:
    """The words of every split token, in order, each once ("" when none)."""
    return " ".join(dict.fromkeys(p for pieces in splits.values() for p in pieces))


def caption_splits(
    text: str, docs: Mapping[str, int] = MappingProxyType({}), slang: Container[str] = frozenset()
) -> dict[str, list[str]]:
    """Each run-together token of a caption (lower case, in order) with its words."""
    return {t: pieces for t in dict.fromkeys(tokens(text)) if (pieces := split_glued(t, docs, slang))}


def spaced_text(text: str, splits: Mapping[str, list[str]]) -> str:
    """The caption with the words of each run-together token right after it, where it stands
    ("THEFIFTH WALL" -> "THEFIFTH the fifth WALL"): the index then holds "fifth wall" side by side,
    as a phrase typed from the meme would have it, and the glued token itself. "" when none."""
    if not splits:
        return ""
    return re.sub(
        r"[^\W_]+",
        lambda m: f"{m[0]} {' '.join(splits[m[0].lower()])}" if m[0].lower() in splits else m[0],
        text,
    )


def slang_words(db: DB) -> frozenset[str]:
    """The words `query_aliases` expands (slang, abbreviations): words, though no English list has them."""
    return frozenset(t for (t,) in db.q("alias_terms"))


def candidates(texts: Iterable[str]) -> list[str]:
    """The tokens of `texts` that may be run together, and their pieces: the words whose library
    counts decide (`library_docs`)."""
    found = {t for text in texts for t in tokens(text) if could_be_glued(t, {})}
    return sorted(found | {p for t in found for p in segment(t)})


def library_docs(db: DB, words: list[str]) -> dict[str, int]:
    """How many documents of the library hold each of `words` (absent: none)."""
    if not words:
        return {}
    return {term: int(n) for term, n in db.q("word_docs", {"terms": json.dumps(words)})}


def split_pending(db: DB, batch: int = 500) -> int:
    """Every item whose split words were never computed (new, or from a library made before they
    existed) gets them, from its caption as stored: no OCR again. Call after the vocabulary is
    current; returns how many items were done (the vocabulary is then stale)."""
    done, slang = 0, slang_words(db)
    while rows := db.q("items_unsplit", {"most": batch}):
        docs = library_docs(db, candidates(text for _id, text in rows))
        with db.write():
            for item_id, text in rows:
                splits = caption_splits(text, docs, slang)
                db.q(
                    "set_ocr_words",
                    {"item_id": item_id, "words": split_words(splits), "spaced": spaced_text(text, splits)},
                )
        done += len(rows)
    return done
