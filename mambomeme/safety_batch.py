"""`mambo safety review`: the memes the safety signals doubt, one at a time, each decided with one key.

A person clears a folder's doubts in minutes: each card shows where the meme is, the words read
from it (cut to one line, terminal-safe), why it is withheld or marked, and the keys. A decision is
`safety_review.decide`, one transaction each: quitting at any point keeps every decision made, and a
meme whose copy was just decided is passed over (the decision reached it already). What a card
shows and what a key means are pure functions; `run` is the thin loop around the terminal."""

from __future__ import annotations

import contextlib
import os
import sys
import termios
import tty
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mambomeme.library import DB
from mambomeme.output import clean_line, show_path, start_viewer, viewer
from mambomeme.safety_meaning import meaning_model
from mambomeme.safety_picture import REASON as PICTURE_REASON
from mambomeme.safety_review import decide, has_decision, review_list

# The keys of a card: one letter per class (and the digits 1-4, as on a rating scale), a key to pass
# a meme over, one to look at the picture, one to stop.
DECIDE = {
    "s": "safe",
    "e": "sensitive",
    "u": "unsafe",
    "c": "critical",
    "1": "safe",
    "2": "sensitive",
    "3": "unsafe",
    "4": "critical",
}
SKIP = (" ", "n", "\x1b[C")  # space, n(ext), Right
OPEN = ("o",)
QUIT = ("q", "\x1b", "\x04")  # q, Esc, Ctrl-D
KEYS_LINE = "s safe · e sensitive · u unsafe · c critical · space skip · o open the picture · q quit"
# How much of a caption a card shows on its one line.
CAPTION_SHOWN = 90


def why(r: dict[str, Any]) -> list[str]:
    """Why a meme is on the review list, one phrase per signal that marked it (and the decision)."""
    meaning = meaning_model()
    out = []
    if r["text_rule"]:
        out.append(
            f"text {r['text_safety']}: {r['text_rule']} ("
            + ", ".join(repr(clean_line(w)) for w in r["text_words"])
            + ")"
        )
    if r["meaning_rule"]:
        out.append(
            f"meaning {r['meaning_safety']}: {clean_line(r['meaning_rule'])}, score {r['meaning_score']:.2f}"
            f" (bars: {meaning.sensitive_bar:g} marks, {meaning.unsafe_bar:g} withholds)"
        )
    if r["picture_rule"]:
        out.append(
            f"picture {r['picture_safety']}: {clean_line(r['picture_rule'])}, score {r['picture_score']:.2f}"
            f" ({PICTURE_REASON})"
        )
    if r["decided_by"]:
        out.append(
            f"decided by {clean_line(r['decided_by'])} (person) {r['decided_at'][:19]}, "
            f"automatic class {r['automatic_safety']}"
        )
    return out or [clean_line(r["safety_source"])]


def caption_line(text: str | None) -> str:
    caption = clean_line(text or "")
    return (caption if len(caption) <= CAPTION_SHOWN else caption[: CAPTION_SHOWN - 1] + "…") or "(no text read)"


def card(r: dict[str, Any], n: int, total: int) -> str:
    """One meme as the review shows it."""
    shown = "withheld" if r["safety"] in ("unsafe", "critical") else "shown"
    return (
        f"\n[{n} of {total}] meme {r['item_id']}: {r['safety']} ({shown})  {show_path(r['path'])}\n"
        f"  caption: {caption_line(r['caption'])}\n"
        f"  why: {'; '.join(why(r))}\n"
        f"  {KEYS_LINE}\n"
    )


def action(key: str) -> tuple[str, str | None]:
    """What a key does: ("decide", class), ("skip", None), ("open", None), ("quit", None) or ("help", None)."""
    if key.lower() in DECIDE:
        return "decide", DECIDE[key.lower()]
    if key in SKIP:
        return "skip", None
    if key.lower() in OPEN:
        return "open", None
    if key.lower() in QUIT:
        return "quit", None
    return "help", None


@dataclass
class Tally:
    decided: Counter = field(default_factory=Counter)
    skipped: int = 0
    followed: int = 0  # passed over: a copy's decision reached it during the review
    left: int = 0

    def summary(self) -> str:
        n = sum(self.decided.values())
        classes = ", ".join(f"{k} {v}" for k, v in sorted(self.decided.items()))
        parts = [f"{n} decided" + (f" ({classes})" if classes else ""), f"{self.skipped} skipped"]
        if self.followed:
            parts.append(f"{self.followed} followed a copy's decision")
        if self.left:
            parts.append(f"{self.left} left: run `mambo safety review` again")
        return "review: " + ", ".join(parts)


def queue(db: DB, *, include_decided: bool) -> list[dict[str, Any]]:
    """The memes to review, withheld ones first: those no person has decided (or all, to revisit)."""
    return [r for r in review_list(db) if include_decided or not r["decided_by"]]


def open_picture(path: Path | None) -> str:
    """Hand the meme's file to the viewer ($MAMBO_OPENER, else xdg-open), detached, as the search screen does."""
    if path is None or not path.exists():
        return "  the file is not there any more"
    try:
        start_viewer(str(path))
    except (OSError, ValueError) as e:
        return f"  cannot open with {clean_line(viewer())!r}: {clean_line(str(e))} (set $MAMBO_OPENER)"
    return f"  opening: {show_path(path)}"


@contextlib.contextmanager
def keys() -> Iterator[Callable[[], str]]:
    """Keys one at a time, unechoed, for the whole review: the terminal is switched once and without
    flushing (TCSANOW), so a key typed while a decision is being written is read next, not lost;
    Ctrl-C still interrupts."""
    fd = sys.stdin.fileno()
    saved = termios.tcgetattr(fd)
    tty.setcbreak(fd, termios.TCSANOW)
    try:
        yield lambda: os.read(fd, 32).decode("utf-8", "replace") or "q"  # end of input stops, as q does
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


def run(
    db: DB,
    who: str,
    *,
    include_decided: bool,
    read_key: Callable[[], str],
    say: Callable[[str], None],
    file_of: Callable[[int], Path | None],
) -> Tally:
    """The review loop: a card, a key, a decision, until the list ends or the person stops."""
    todo = queue(db, include_decided=include_decided)
    tally = Tally()
    for n, r in enumerate(todo, 1):
        if not include_decided and has_decision(db, r["item_id"]):
            tally.followed += 1
            continue
        say(card(r, n, len(todo)))
        while True:
            what, klass = action(read_key())
            if what == "decide":
                d = decide(db, r["item_id"], str(klass), who, "mambo safety review")
                tally.decided[d["decided"]] += 1
                say(f"  -> {d['decided']} (decided by {d['decided_by']})")
                break
            if what == "skip":
                tally.skipped += 1
                say("  skipped")
                break
            if what == "open":
                say(open_picture(file_of(r["item_id"])))
                continue
            if what == "quit":
                tally.left = len(todo) - n + 1
                return tally
            say(f"  keys: {KEYS_LINE}")
    return tally
