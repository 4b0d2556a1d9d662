"""The full-screen search as pure functions: rows, events and effects, `process_event(state, event)`
and `paint(state) -> FSArray`. No terminal here: tui_shell.py owns it.

Shape (bpython's curtsiesfrontend): a pure state machine and a pure painter, and a thin shell
that owns the terminal.
  process_event(state, event) -> (state, effects)   keys and posted events in, effects out
  paint(state, rows, cols) -> FSArray                 what the screen shows, nothing else
  _Shell                                              performs effects (search, open, copy,
                                                      record, choose) and feeds results back
The UI draws on /dev/tty, never on stdout: stdout carries only the chosen path, printed after
the alternate screen is left, so `xdg-open "$(mambo search)"` works like an fzf picker.

Keys as in fzf: typing always edits the query (from anywhere) and the results follow it after a
short pause, its last word read as a prefix; actions are keys that are not letters (Up/Down,
Ctrl-N/Ctrl-P, Ctrl-J/Ctrl-K move the selection from anywhere; Enter, Tab, Ctrl-/, Ctrl-O, Ctrl-Y,
Ctrl-R, F1). Every key acts on the list of the query typed before it: an action key pressed before
the list answers the typed query is queued, that answer is asked at once, and the key applies to
it. So one Enter chooses the highlighted meme (or every marked one) of the typed query's answer.
Ctrl-S searches at once without choosing (the scored submit of the PTY latency protocol, numbered
"search #N" on the status line) and gives the list the focus. The list grows past its first page
as the selection nears its end. Where the answer is "no match", Ctrl-R shows the nearest memes
anyway, under a "not confident" line (the search without its "no match" rule); the next query
typed is answered as usual. A "weaker matches" line divides the list before the first result whose
evidence is much weaker than the first result's (search.evidence_classes); it is not a row: the
keys move from the result above it to the one below."""

from __future__ import annotations

import dataclasses
import functools
import io
import json
import re
import textwrap
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mambomeme.library import __version__
from mambomeme.output import clean_line, clean_text, show_path
from mambomeme.query_plan import normalise_query
from mambomeme.search import DEFAULT_SYSTEM, Result

# ─────────────────────────────────────────────────────────────────────────────
# Terminal UI (`mambo search` without a QUERY; its shape and keys: the module docstring)
# ─────────────────────────────────────────────────────────────────────────────

# Recorded with every interaction event; bump when the UI changes in a way that could change
# how people interact with results (layout, keys, what is shown).
# 5: keys queued, Down moves, the list grows, the preview from 120x30
# 6: Ctrl-R shows the nearest memes of a "no match" (not confident)
# 7: a "weaker matches" divider before results whose evidence is much weaker than the first's
TUI_INTERFACE_VERSION = f"mambo-tui/7 ({__version__})"
# Below 80x24 the screen is compact (the list without a preview, two lines a result); below this it
# only says what it needs (a tmux split of 40x10 still searches).
TUI_MIN_ROWS, TUI_MIN_COLS = 10, 40
TUI_FULL_ROWS, TUI_FULL_COLS = 24, 80
# The lexical-only system used while the embedding model is still loading.
TUI_LOADING_SYSTEM = "bm25"
# How long typing must pause before the results follow the query. People type with 120-200 ms
# between keys, so the list follows a word at a time; a search costs 5-25 ms (hybrid, dev library).
# The PTY latency harness sends Enter within a few ms of its query's echo, well inside this pause,
# so its submits do not queue behind a live search.
TUI_LIVE_PAUSE_S = 0.15
# The list grows by a page when the selection comes within TUI_MORE_AHEAD rows of its end, up to
# TUI_MAX_ROWS (a search of 200 rows costs about what one of 10 does: the routes rank every match).
TUI_MORE_AHEAD = 3
TUI_MAX_ROWS = 200
# The preview is on by default where it fits beside a list as wide as an 80-column one's text: from
# 120x30 the list keeps 72 columns (3/5) and the preview gets ~47x25 cells, its caption whole. At
# 80x24 a preview beside the list is ~39x19 cells and cuts every name to ~30 characters: Ctrl-/ asks.
TUI_PREVIEW_ROWS, TUI_PREVIEW_COLS = 30, 120


# -- Rows: what a result shows, cleaned once ---------------------------------------------------

_WORD_RE = re.compile(r"[^\W_]+")


@dataclass(frozen=True)
class Row:
    """One result as the screen shows it. Every string from the library has been through
    clean_line; `path` is the real path (for opening/printing), `shown_path` its printable form."""

    item_id: int
    rank: int
    name: str
    name_spans: tuple[tuple[int, int], ...]
    snippet: str
    snippet_spans: tuple[tuple[int, int], ...]
    path: str
    shown_path: str
    sensitive: bool
    duplicates: int
    routes: str
    has_preview: bool
    weaker: bool = False  # below the "weaker matches" divider (search.evidence_classes)


def _match_spans(text: str, tokens: frozenset[str]) -> tuple[tuple[int, int], ...]:
    """Where the query's tokens occur in text, compared as normalise_query compares them."""
    if not tokens:
        return ()
    spans = []
    for m in _WORD_RE.finditer(text):
        word = m.group()
        # An ASCII word normalises to itself in lower case (normalise_query's NFKC, control-character
        # removal and accent stripping change nothing in it): ~10x cheaper, the common case.
        if word.lower() in tokens if word.isascii() else any(t in tokens for t in normalise_query(word)):
            spans.append((m.start(), m.end()))
    return tuple(spans)


def _json_list(s: Any) -> list[str]:

    try:
        v = json.loads(s) if isinstance(s, str) else s
    except ValueError:
        return []
    return [str(x) for x in v] if isinstance(v, list) else []


def row_from_result(r: Result, query: str) -> Row:
    d = r.details
    tokens = frozenset(normalise_query(query))
    name = clean_line(d.get("title") or d.get("template") or Path(str(d.get("rel_path") or "")).name or "?")
    name = unicodedata.normalize("NFC", name)
    text = (
        d.get("ocr_text")
        or d.get("description")
        or ", ".join(_json_list(d.get("entities")) + _json_list(d.get("tags")))
    )
    text = unicodedata.normalize("NFC", clean_line(text or ""))
    spans = _match_spans(text, tokens)
    if spans and spans[0][0] > 12:
        # Start the snippet a few words before the first match so the match is on screen.
        cut = text.rfind(" ", 0, spans[0][0] - 8) + 1
        text = "…" + text[cut:]
        spans = tuple((a - cut + 1, b - cut + 1) for a, b in spans if a >= cut)
    path = str(Path(str(d["root_path"])) / str(d["rel_path"]))
    routes = "".join(
        x
        for x, v in (("L", r.lexical_rank), ("F", getattr(r, "fuzzy_rank", None)), ("D", r.dense_rank))
        if v is not None
    )
    return Row(
        item_id=int(r.item_id),
        rank=int(r.rank),
        name=name,
        name_spans=_match_spans(name, tokens),
        snippet=text,
        snippet_spans=spans,
        path=path,
        shown_path=clean_line(show_path(path)),
        sensitive=d.get("safety") == "sensitive",
        duplicates=int(d.get("duplicate_count") or 0),
        routes=routes,
        has_preview=bool(d.get("has_preview")),
        weaker=getattr(r, "evidence", "") == "weaker",
    )


@dataclass(frozen=True)
class Preview:
    """A decoded stored preview: RGB bytes, row-major."""

    width: int
    height: int
    rgb: bytes


def decode_preview(data: bytes) -> Preview:
    from PIL import Image

    with Image.open(io.BytesIO(data)) as im:
        im = im.convert("RGB")
        return Preview(im.width, im.height, im.tobytes())


# -- Events and effects ------------------------------------------------------------------------
# Keys arrive as curtsies key names ('a', '<UP>', '<Ctrl-j>' ...); the rest are these.


@dataclass(frozen=True)
class Searched:
    """A search's answer. `seq` is the number of submits (Enter) before it was asked; `live` > 0
    for a search the typing pause (or the model becoming ready) asked for: (seq, live) orders
    every search asked, and an answer older than the newest asked is stale and dropped."""

    seq: int
    query: str
    rows: tuple[Row, ...]
    ms: float
    system: str
    system_version: int | None
    error: str = ""
    live: int = 0
    withheld: str = ""  # what the policy withholds that holds the words (a count, never which), or ""
    more: bool = False  # the search found more rows than were asked for
    extend: bool = False  # the answer to a DoSearch(extend=True): rows to add below those shown
    nearest: bool = False  # the answer to a DoSearch(nearest=True): the nearest memes, not confident


@dataclass(frozen=True)
class ModelStatus:
    status: str  # "loading" | "ready" | "failed" | "unused"
    detail: str = ""


@dataclass(frozen=True)
class PreviewLoaded:
    item_id: int
    preview: Preview | None


@dataclass(frozen=True)
class Message:
    text: str


@dataclass(frozen=True)
class Resized:
    pass


@dataclass(frozen=True)
class Interrupt:
    """Ctrl-C (SIGINT)."""


@dataclass(frozen=True)
class DoSearch:
    query: str
    seq: int
    live: int = 0  # 0: a submit (Enter); else the live search's number
    exact: bool = False  # a live search asked again for a submit's query: its last word is whole, not a prefix
    now: bool = False  # keys wait for this answer: the shell answers it before reading the next key
    limit: int = 0  # rows to ask for; 0: the screen's page (--limit)
    extend: bool = False  # more rows of the shown list, to add below it
    nearest: bool = False  # the search without its "no match" rule: the nearest memes of a "no match"


@dataclass(frozen=True)
class MoreLike:
    """Effect: list the memes like `row` (Ctrl-T): its copies, its template, memes saying the same."""

    row: Row
    seq: int


@dataclass(frozen=True)
class Alike:
    """Event: the answer to MoreLike (by_image.more_like), each row's badge its reason."""

    seq: int
    of: Row
    rows: tuple[Row, ...]
    ms: float
    error: str = ""
    withheld: str = ""  # by_image.withheld_note, or ""


@dataclass(frozen=True)
class Typed:
    """Effect: the query changed; the shell answers with Paused(gen) after TUI_LIVE_PAUSE_S."""

    gen: int


@dataclass(frozen=True)
class Paused:
    """Event: typing paused since the query's change number `gen`."""

    gen: int


@dataclass(frozen=True)
class Suspended:
    """Event: the user pressed Ctrl-Z (SIGTSTP); the shell restores the terminal and stops."""


@dataclass(frozen=True)
class LoadPreview:
    item_id: int


@dataclass(frozen=True)
class OpenFile:
    path: str
    shown: str
    item_id: int | None = None  # checked, as a choice is, to be still servable


@dataclass(frozen=True)
class CopyPath:
    path: str
    item_id: int | None = None


@dataclass(frozen=True)
class Choose:
    paths: tuple[str, ...]  # the marked memes in the order marked, else the highlighted one
    item_ids: tuple[int, ...] = ()  # theirs: the shell checks they are still servable before printing


@dataclass(frozen=True)
class LibraryChanged:
    """Event: another process committed to the library (a meme made private or unsafe, an `add`):
    the list shown may hold memes that are no longer servable, so its search runs again."""


@dataclass(frozen=True)
class Unservable:
    """Event: memes chosen with Enter (or opened, or copied) that the library no longer serves
    (private, withdrawn, unsafe or critical since they were listed): nothing is printed, opened or
    copied, and they leave the list."""

    item_ids: tuple[int, ...]
    what: str = "chosen"  # chosen | opened | copied


@dataclass(frozen=True)
class Quit:
    pass


@dataclass(frozen=True)
class Record:
    kind: str  # render | preview | open | copy | choose
    query: str
    item_id: int | None = None
    rank: int | None = None


# -- State -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TUIState:
    system: str = DEFAULT_SYSTEM
    model: str = "loading"  # loading | ready | failed | unused
    model_detail: str = ""
    wait_ready: bool = False
    truecolor: bool = False
    query: str = ""
    cursor: int = 0
    focus: str = "query"  # query | list
    rows: tuple[Row, ...] = ()
    searched_query: str | None = None  # None: nothing searched yet
    seq: int = 0  # searches submitted; drawn as "search #N" when the answer is shown
    shown_seq: int = 0
    live: int = 0  # live searches asked (typing paused, model ready)
    asked: tuple[int, int] = (0, 0)  # (seq, live) of the newest search asked: older answers are stale
    asked_query: str | None = None  # its query
    asked_exact: bool = False  # whether it was a submit (its last word whole) or a live search (a prefix)
    edits: int = 0  # changes of the query text (Typed / Paused generations)
    search_ms: float | None = None
    used_system: str = ""
    used_version: int | None = None
    selected: int = 0
    show_preview: bool | None = None  # None: on where it fits (TUI_PREVIEW_COLS); Ctrl-/ decides
    screen: tuple[int, int] = (0, 0)  # the terminal's rows and columns, as the shell last drew them
    show_help: bool = False
    multi: bool = False  # `mambo search -m` (fzf's -m): Tab / Shift-Tab mark several memes
    marked: tuple[Row, ...] = ()  # memes marked with Tab (fzf's multi-select), in the order marked
    previews: dict[int, Preview | None] = field(default_factory=dict)
    pending: str | None = None  # a query waiting for the model (--wait-ready)
    message: str = ""
    withheld: str = ""  # the shown answer's safety_review.withheld_note, or "" (status line; "no match" text)
    color: bool = True  # False under NO_COLOR: bold and inverse only, no colours (a monochrome preview)
    paste: str | None = None  # a bracketed paste being read: its characters so far
    queued: tuple[str, ...] = ()  # action keys pressed before the list answered the typed query
    more: bool = False  # the search found more rows than the list holds
    nearest: bool = False  # the rows are the nearest memes of a "no match" (Ctrl-R): not confident
    large: bool = False  # F3: the selected meme's preview on the whole body, the list hidden
    images: str = "blocks"  # how the preview is drawn: half-blocks, or a tui_images protocol's picture
    like: Row | None = None  # the rows are the memes like this one (Ctrl-T); Esc / Backspace go back
    like_back: tuple = ()  # the query's list to go back to: (rows, selected, more, withheld, nearest)


def _selected_row(s: TUIState) -> Row | None:
    return s.rows[s.selected] if s.rows and 0 <= s.selected < len(s.rows) else None


def _model_failed_note(detail: str) -> str:
    """The message line when the model failed to load; a submit clears it, and the answer to a
    search asked before the failure keeps it."""
    return f"the model failed to load ({detail}); searching by words only"


def _submit(s: TUIState) -> tuple[TUIState, list]:
    query = s.query
    if not query.strip():
        return dataclasses.replace(s, message="type what you remember, then press Enter"), []
    if s.wait_ready and s.model == "loading":
        return dataclasses.replace(s, pending=query, message="waiting for the model…"), []
    seq = s.seq + 1
    return (
        dataclasses.replace(s, seq=seq, asked=(seq, 0), asked_query=query, asked_exact=True, pending=None, message=""),
        [DoSearch(query, seq)],
    )


def _live_search(s: TUIState, query: str, now: bool = False) -> tuple[TUIState, list]:
    """Ask for the results of `query` without a submit (typing paused, the model became ready, or
    a key queued for them: `now`)."""
    if not query.strip() or (s.wait_ready and s.model == "loading"):
        return s, []
    live = s.live + 1
    return (
        dataclasses.replace(s, live=live, asked=(s.seq, live), asked_query=query, asked_exact=False),
        [DoSearch(query, s.seq, live, now=now)],
    )


def _refresh(s: TUIState) -> tuple[TUIState, list]:
    """The library changed: ask the newest search again (a submit's query with its last word whole),
    as a live search, so the list keeps its focus and its highlighted meme."""
    query = s.asked_query
    if not query or not query.strip() or (s.wait_ready and s.model == "loading"):
        return s, []
    live = s.live + 1
    nearest = s.nearest and query == s.searched_query  # the nearest memes shown stay the nearest
    # as long a list as is shown, so a grown list keeps its length and its highlighted meme
    return (
        dataclasses.replace(s, live=live, asked=(s.seq, live)),
        [DoSearch(query, s.seq, live, exact=s.asked_exact, limit=len(s.rows), nearest=nearest)],
    )


def _unservable(s: TUIState, gone: tuple[int, ...], what: str) -> tuple[TUIState, list]:
    """Memes chosen that are no longer servable leave the list and the marks; the status line says so."""
    keep = _selected_row(s)
    rows = tuple(r for r in s.rows if r.item_id not in gone)
    selected = next((i for i, r in enumerate(rows) if keep and r.item_id == keep.item_id), 0)
    n = len(gone)
    s = dataclasses.replace(
        s,
        rows=rows,
        selected=min(selected, max(0, len(rows) - 1)),
        marked=tuple(r for r in s.marked if r.item_id not in gone),
        focus=s.focus if rows else "query",
        message=f"{'that meme is' if n == 1 else f'{n} memes are'} no longer shown (private, withdrawn or unsafe): "
        f"nothing {what}",
    )
    return _refresh(s)


# Bracketed paste: the terminal sends a paste between ESC[200~ and ESC[201~, so it is read as text
# and never as keys (a pasted BEL is not Ctrl-G). curtsies reads each marker as the key "\x1b[200"
# (or "\x1b[201") and then "~". A paste never closed ends at PASTE_MAX characters.
PASTE_START, PASTE_END = "\x1b[200~", "\x1b[201~"
PASTE_MAX = 10_000


@functools.cache
def _key_chars() -> dict[str, str]:
    """curtsies' key names back to the characters the terminal sent ("<SPACE>" is " ")."""
    from curtsies.events import CURTSIES_NAMES

    return {name: seq.decode("utf-8", "replace") for seq, name in sorted(CURTSIES_NAMES.items(), reverse=True)}


def _paste_key(s: TUIState, key: str) -> tuple[TUIState, list]:
    """A key of a bracketed paste: kept until the paste ends, then the text, without its control
    characters and escape sequences (clean_text: `\x1b[31mred` is `red`), edits the query."""
    text = (s.paste or "") + _key_chars().get(key, key)
    if not text.endswith(PASTE_END) and len(text) < PASTE_MAX:
        return dataclasses.replace(s, paste=text), []
    text = text.removeprefix(PASTE_START[len(PASTE_START) - 1 :]).removesuffix(PASTE_END)
    text = " ".join(clean_text(text).split())
    at = dataclasses.replace(
        s, paste=None, show_help=False, focus="query", cursor=s.cursor if s.focus == "query" else len(s.query)
    )
    edited = at
    for ch in text:
        edited = _edit(edited, ch) or edited
    if edited.query == s.query:
        return edited, []
    edits = s.edits + 1
    return dataclasses.replace(edited, edits=edits, message=""), [Typed(edits)]


def _edit(s: TUIState, key: str) -> TUIState | None:
    """Query-line editing; None when key is not an editing key."""
    q, c = s.query, min(s.cursor, len(s.query))
    if key == "<SPACE>":
        key = " "
    if len(key) == 1 and key.isprintable():
        if _cw(key) == 0:
            # A combining mark (a decomposed accent, pasted from a file name): joined to the letter
            # before it, else dropped. The query line draws a character per column (curtsies' lines
            # count characters: a zero-width one made the line too long and the screen failed), and
            # searching ignores accents anyway (normalise_query).
            joined = unicodedata.normalize("NFC", q[c - 1 : c] + key) if c else ""
            return dataclasses.replace(s, query=q[: c - 1] + joined + q[c:]) if len(joined) == 1 else s
        return dataclasses.replace(s, query=q[:c] + key + q[c:], cursor=c + 1)
    if key in ("<BACKSPACE>", "<Ctrl-h>"):
        return dataclasses.replace(s, query=q[: max(0, c - 1)] + q[c:], cursor=max(0, c - 1))
    if key in ("<DELETE>", "<Ctrl-DELETE>"):
        return dataclasses.replace(s, query=q[:c] + q[c + 1 :])
    if key in ("<LEFT>", "<Ctrl-b>"):
        return dataclasses.replace(s, cursor=max(0, c - 1))
    if key in ("<RIGHT>", "<Ctrl-f>"):
        return dataclasses.replace(s, cursor=min(len(q), c + 1))
    if key in ("<HOME>", "<Ctrl-a>"):
        return dataclasses.replace(s, cursor=0)
    if key in ("<END>", "<Ctrl-e>"):
        return dataclasses.replace(s, cursor=len(q))
    if key == "<Ctrl-u>":
        return dataclasses.replace(s, query=q[c:], cursor=0)
    if key == "<Ctrl-w>":
        head = q[:c].rstrip()
        head = head[: len(head) - len(head.split(" ")[-1])] if head else ""
        return dataclasses.replace(s, query=head + q[c:], cursor=len(head))
    return None


# fzf's movement keys: Ctrl-J/Ctrl-N are Down, Ctrl-K/Ctrl-P are Up (Enter is Ctrl-M: the shell turns
# off the terminal's CR-to-NL mapping, so the two arrive apart).
MOVES = {
    "<UP>": "<UP>",
    "<Ctrl-k>": "<UP>",
    "<Ctrl-p>": "<UP>",
    "<DOWN>": "<DOWN>",
    "<Ctrl-j>": "<DOWN>",
    "<Ctrl-n>": "<DOWN>",
    "<PAGEUP>": "<PAGEUP>",
    "<PAGEDOWN>": "<PAGEDOWN>",
}
ENTER = "<Ctrl-m>"
# Search now without choosing: the scored submit of the PTY latency harness (lab/pty.py).
SUBMIT = "<Ctrl-s>"
# On a "no match": the nearest memes anyway (a key no other binding uses).
NEAREST = "<Ctrl-r>"
# The keys that act on the list: pressed before it answers the typed query, they wait for that answer.
# "More like this" on the highlighted meme (a key fzf leaves unbound).
MORE_LIKE = "<Ctrl-t>"
LIST_KEYS = (*MOVES, "<TAB>", "<Shift-TAB>", ENTER, "<Ctrl-o>", "<Ctrl-y>", NEAREST, MORE_LIKE)
PREVIEW_KEYS = ("<Ctrl-/>", "<F2>")  # fzf leaves toggle-preview unbound; its docs bind ctrl-/
LARGE_KEY = "<F3>"  # the preview on the whole body (F3 or Esc: back to the list)


def _move(s: TUIState, key: str) -> tuple[TUIState, list]:
    """Up/Down move the selection from anywhere (the query line too, wherever its cursor is), as
    fzf's do; Up from the first result gives the query line the focus."""
    n = len(s.rows)
    if not n:
        return s, []
    key = MOVES[key]
    step = {"<UP>": -1, "<DOWN>": 1, "<PAGEUP>": -5, "<PAGEDOWN>": 5}[key]
    if step < 0 and s.selected == 0:
        return dataclasses.replace(s, focus="query"), []
    return _grow(dataclasses.replace(s, selected=max(0, min(n - 1, s.selected + step)), focus="list"))


def _grow(s: TUIState) -> tuple[TUIState, list]:
    """The selection near the end of a list that has more: ask for twice as many rows, answered
    before the next key (the rows shown stay as they are; the new ones are added below)."""
    sq = s.searched_query
    if not (s.more and sq and s.selected >= len(s.rows) - TUI_MORE_AHEAD and len(s.rows) < TUI_MAX_ROWS):
        return s, []
    live = s.live + 1
    return (
        dataclasses.replace(s, live=live, asked=(s.seq, live), asked_query=sq),
        [
            DoSearch(
                sq,
                s.seq,
                live,
                exact=s.asked_exact,
                now=True,
                limit=min(TUI_MAX_ROWS, 2 * len(s.rows)),
                extend=True,
                nearest=s.nearest,
            )
        ],
    )


def _unanswered(s: TUIState) -> bool:
    """Whether the list does not answer the typed query yet (typed, not searched or not answered)."""
    return bool(s.query.strip()) and s.searched_query != s.query


def _queue(s: TUIState, key: str) -> tuple[TUIState, list]:
    """A list key pressed before the list answers the typed query: kept, and that answer asked at
    once (Enter: a submit, its last word whole), before the next key is read; the key then acts on
    it (process_event's Searched)."""
    waiting = bool(s.queued)  # a search is asked already (held for the model with --wait-ready)
    s = dataclasses.replace(s, queued=(*s.queued, key))
    if key == ENTER:
        return _submit(dataclasses.replace(s, focus="query"))
    if waiting:
        return s, []
    return _live_search(s, s.query, now=True)


def _replay(s: TUIState, effects: list) -> tuple[TUIState, list]:
    """The answer the queued keys waited for is shown: they act on it, in the order pressed."""
    keys, s = s.queued, dataclasses.replace(s, queued=())
    for i, k in enumerate(keys):
        if k == ENTER and not s.rows:  # "no match": the screen stays, to try other words
            continue
        s, more = _key(s, k)
        effects = [*effects, *more]
        if k == NEAREST and more:  # the keys after it act on the nearest memes, once they answer
            return dataclasses.replace(s, queued=keys[i + 1 :]), effects
    return s, effects


def _nearest(s: TUIState) -> tuple[TUIState, list]:
    """Ctrl-R on a "no match": the typed query searched again without the "no match" rule, as a
    submit (its last word whole); its rows are shown under a "not confident" line."""
    if s.rows and not s.nearest:
        return dataclasses.replace(s, message='Ctrl-R shows the nearest memes where the answer is "no match"'), []
    if s.searched_query is None or s.rows or s.nearest or s.searched_query != s.query:
        return s, []  # nothing said "no match" (or the nearest are shown already): nothing to do
    seq = s.seq + 1
    return (
        dataclasses.replace(s, seq=seq, asked=(seq, 0), asked_query=s.query, asked_exact=True, message=""),
        [DoSearch(s.query, seq, nearest=True)],
    )


def _more_like(s: TUIState) -> tuple[TUIState, list]:
    """Ctrl-T: the highlighted meme's look-alikes are asked for (answered before the next key)."""
    row = _selected_row(s)
    if row is None or s.searched_query is None:
        return dataclasses.replace(s, message="Ctrl-T lists the memes like the highlighted one: search first"), []
    seq = s.seq + 1
    return dataclasses.replace(s, seq=seq, asked=(seq, 0), message=""), [MoreLike(row, seq)]


def _alike(s: TUIState, event: Alike) -> TUIState:
    """The look-alikes shown under a "more like" header; the query's list is kept to go back to."""
    if event.error:
        return dataclasses.replace(s, message=f"search failed: {event.error}")
    if not event.rows:
        return dataclasses.replace(s, message=f"nothing else in the library is like “{event.of.name}”")
    back = s.like_back if s.like is not None else (s.rows, s.selected, s.more, s.withheld, s.nearest)
    return dataclasses.replace(
        s,
        rows=event.rows,
        selected=0,
        focus="list",
        like=event.of,
        like_back=back,
        more=False,
        nearest=False,
        withheld=event.withheld,
        search_ms=event.ms,
        shown_seq=event.seq,
        previews={r.item_id: s.previews[r.item_id] for r in event.rows if r.item_id in s.previews},
    )


def _unlike(s: TUIState) -> tuple[TUIState, list]:
    """Esc / Backspace on the look-alikes: back to the query's list, as it was."""
    rows, selected, more, withheld, nearest = s.like_back
    s = dataclasses.replace(
        s, like=None, like_back=(), rows=rows, selected=selected, more=more, withheld=withheld, nearest=nearest
    )
    return dataclasses.replace(s, focus="list" if rows else "query", message=""), []


def _toggle_preview(s: TUIState) -> tuple[TUIState, list]:
    s = dataclasses.replace(s, show_preview=not _preview_on(s, *s.screen), show_help=False)
    row = _selected_row(s)
    if s.show_preview and row and s.searched_query is not None:
        return s, [Record("preview", s.searched_query, row.item_id, row.rank)]
    return s, []


def _preview_on(s: TUIState, rows: int, cols: int) -> bool:
    """Whether the preview is shown: as Ctrl-/ last said, else where it fits beside a readable list."""
    if s.show_preview is not None:
        return s.show_preview
    return rows >= TUI_PREVIEW_ROWS and cols >= TUI_PREVIEW_COLS


@dataclass(frozen=True)
class Sized:
    """Event: the terminal's size, when the screen opens and after each resize (the preview's default)."""

    rows: int
    cols: int


def _toggle_mark(s: TUIState, step: int) -> TUIState:
    """Tab / Shift-Tab: mark or unmark the highlighted meme, then move down / up (fzf)."""
    if not s.multi:  # as in fzf, marking is asked for: say how rather than do nothing
        return dataclasses.replace(s, message="to mark several memes with Tab, open the screen with `mambo search -m`")
    row = _selected_row(s)
    if row is None or s.searched_query is None:
        return s
    ids = [r.item_id for r in s.marked]
    marked = tuple(r for r in s.marked if r.item_id != row.item_id) if row.item_id in ids else (*s.marked, row)
    selected = max(0, min(len(s.rows) - 1, s.selected + step))
    return dataclasses.replace(s, marked=marked, selected=selected, focus="list")


def _mark(s: TUIState, step: int) -> tuple[TUIState, list]:
    t = _toggle_mark(s, step)
    return _grow(t) if t.selected != s.selected else (t, [])


def _choose(s: TUIState, row: Row, sq: str) -> tuple[TUIState, list]:
    """Enter: the marked memes (each printed on its own line), else the highlighted one."""
    chosen = s.marked or (row,)
    return s, [
        *(Record("choose", sq, r.item_id, r.rank) for r in chosen),
        Choose(tuple(r.path for r in chosen), tuple(r.item_id for r in chosen)),
    ]


def _key(s: TUIState, key: str) -> tuple[TUIState, list]:
    if key in ("<Ctrl-c>", "<Ctrl-d>", "<Ctrl-g>"):
        return s, [Quit()]
    if s.show_help:  # any key closes the help
        return dataclasses.replace(s, show_help=False), []
    if s.large and key in (LARGE_KEY, "<ESC>"):
        return dataclasses.replace(s, large=False), []
    if key == LARGE_KEY:
        return dataclasses.replace(s, large=True), []
    if s.like is not None and key in ("<ESC>", "<BACKSPACE>", "<Ctrl-h>"):
        return _unlike(s)
    if key == "<ESC>":
        return s, [Quit()]
    if key == "<F1>":
        return dataclasses.replace(s, show_help=True), []
    if key in PREVIEW_KEYS:
        return _toggle_preview(s)
    if key == SUBMIT:
        return _submit(dataclasses.replace(s, focus="query", queued=()))
    if key in LIST_KEYS and (s.queued or _unanswered(s)):
        return _queue(s, key)
    if key in ("<TAB>", "<Shift-TAB>"):
        return _mark(s, 1 if key == "<TAB>" else -1)
    if key in MOVES:
        return _move(s, key)
    if key == NEAREST:
        return _nearest(s)
    if key == MORE_LIKE:
        return _more_like(s)
    enter = key == ENTER
    row = _selected_row(s)
    if row is not None and s.searched_query is not None:
        sq = s.searched_query
        if enter and (s.focus == "list" or sq == s.query):  # the list answers what is typed: pick
            return _choose(s, row, sq)
        if key == "<Ctrl-o>":
            return (
                dataclasses.replace(s, message=f"opening {row.shown_path}"),
                [Record("open", sq, row.item_id, row.rank), OpenFile(row.path, row.shown_path, row.item_id)],
            )
        if key == "<Ctrl-y>":
            return (
                dataclasses.replace(s, message=f"copied: {row.shown_path}"),
                [Record("copy", sq, row.item_id, row.rank), CopyPath(row.path, row.item_id)],
            )
    if enter:
        return _submit(dataclasses.replace(s, focus="query"))
    # Everything else edits the query, from the list too (focus back to the query, at its end).
    at = s if s.focus == "query" else dataclasses.replace(s, cursor=len(s.query))
    edited = _edit(at, key)
    if edited is None:
        return s, []
    edited = dataclasses.replace(edited, focus="query", message="" if s.focus == "list" else edited.message)
    if key == "<Ctrl-u>" and not edited.query:
        # The whole query gone: so is its list (fzf shows the start again), and any answer on its way.
        edited = dataclasses.replace(
            edited,
            rows=(),
            searched_query=None,
            nearest=False,
            selected=0,
            search_ms=None,
            live=s.live + 1,
            asked=(s.seq, s.live + 1),
            asked_query="",
        )
    if edited.query == s.query:
        return edited, []
    edits = s.edits + 1
    # keys queued for the query no longer typed are dropped (they wait only while --wait-ready holds it)
    return dataclasses.replace(edited, edits=edits, queued=()), [Typed(edits)]


def _want_preview(s: TUIState, effects: list) -> list:
    row = _selected_row(s)
    if (s.large or _preview_on(s, *s.screen)) and row is not None and row.item_id not in s.previews:
        if not row.has_preview:
            return effects  # painted as "no preview"
        if not any(isinstance(e, LoadPreview) and e.item_id == row.item_id for e in effects):
            return [*effects, LoadPreview(row.item_id)]
    return effects


def _answered(s: TUIState, event: Searched) -> TUIState:
    """The state showing an answer to a new search (typed or submitted): its rows and what the
    status line says of it; the previews already decoded for rows it keeps."""
    return dataclasses.replace(
        s,
        rows=event.rows,
        searched_query=event.query,
        shown_seq=event.seq,
        search_ms=event.ms,
        used_system=event.system,
        used_version=event.system_version,
        more=event.more,
        nearest=event.nearest,
        withheld=event.withheld,
        previews={r.item_id: s.previews[r.item_id] for r in event.rows if r.item_id in s.previews},
        like=None,
        like_back=(),
    )


def process_event(state: TUIState, event: Any) -> tuple[TUIState, list]:
    """The whole behaviour: (state, event) -> (new state, effects for the shell to perform)."""
    s = state
    effects: list = []
    if isinstance(event, str):
        if s.paste is not None:
            s, effects = _paste_key(s, event)
        elif event == PASTE_START[:-1]:
            s = dataclasses.replace(s, paste="")
        else:
            s, effects = _key(s, event)
    elif isinstance(event, Alike):
        if (event.seq, 0) >= s.asked:  # else typing or another search came after it: stale
            s = _alike(s, event)
    elif isinstance(event, LibraryChanged):
        s, effects = _refresh(s)
    elif isinstance(event, Unservable):
        s, effects = _unservable(s, event.item_ids, event.what)
    elif isinstance(event, Interrupt):
        effects = [Quit()]
    elif isinstance(event, Paused):
        if event.gen == s.edits and s.query != s.asked_query:
            s, effects = _live_search(s, s.query)
    elif isinstance(event, Searched):
        if (event.seq, event.live) < s.asked:  # an answer to a superseded search
            return s, []
        if event.error:
            s = dataclasses.replace(s, message=f"search failed: {event.error}", shown_seq=event.seq, queued=())
        elif event.extend:
            if event.query != s.searched_query:
                return s, []
            shown = {r.item_id for r in s.rows}
            new = [r for r in event.rows if r.item_id not in shown]
            rows = s.rows + tuple(dataclasses.replace(r, rank=len(s.rows) + i) for i, r in enumerate(new, 1))
            s = dataclasses.replace(s, rows=rows, more=event.more and bool(new) and len(rows) < TUI_MAX_ROWS)
        elif event.live:
            # The list follows the typing: the focus stays where it is (the query, usually). The
            # same query answered again (the model became ready) keeps the status line's message:
            # "the opener failed" posted a moment before is still news.
            same = event.query == s.searched_query and not s.message.startswith("search failed")
            # The same query answered again (the library changed) keeps its highlighted meme.
            keep = _selected_row(s) if event.query == s.searched_query else None
            selected = next((i for i, r in enumerate(event.rows) if keep and r.item_id == keep.item_id), 0)
            s = dataclasses.replace(
                _answered(s, event),
                selected=selected,
                focus=s.focus if event.rows else "query",
                message=s.message if same else "",
            )
        else:
            s = dataclasses.replace(
                _answered(s, event),
                selected=0,
                focus="list" if event.rows else "query",
                cursor=len(s.query),
                message=s.message if s.model == "failed" and s.message == _model_failed_note(s.model_detail) else "",
            )
            effects = [Record("render", event.query)]
        if s.queued and event.query == s.query and not event.extend:
            s, effects = _replay(s, effects)
    elif isinstance(event, ModelStatus):
        was = s.model
        s = dataclasses.replace(s, model=event.status, model_detail=event.detail)
        if event.status != "loading" and s.pending is not None:
            s, effects = _submit(dataclasses.replace(s, query=s.pending, cursor=len(s.pending)))
        elif event.status != "loading" and was == "loading" and s.queued:
            s, effects = _live_search(s, s.query, now=True)  # the keys held for the model (--wait-ready)
        elif event.status == "ready" and was == "loading" and s.asked_query is not None:
            # What is on screen came from the lexical stand-in: ask again with the full system.
            s, effects = _refresh(s) if s.nearest else _live_search(s, s.asked_query)
        if event.status == "failed":  # said after the submit it lets go (--wait-ready): its answer keeps it
            s = dataclasses.replace(s, message=_model_failed_note(event.detail))
    elif isinstance(event, PreviewLoaded):
        s = dataclasses.replace(s, previews={**s.previews, event.item_id: event.preview})
    elif isinstance(event, Message):
        s = dataclasses.replace(s, message=event.text)
    elif isinstance(event, Sized):
        s = dataclasses.replace(s, screen=(event.rows, event.cols))
    return s, _want_preview(s, effects)


# -- Painting ----------------------------------------------------------------------------------


def _cw(ch: str) -> int:
    if " " <= ch < "\x7f":
        return 1
    from wcwidth import wcwidth

    return max(0, wcwidth(ch))


def _width(s: str) -> int:
    if s.isprintable() and s.replace("…", "").isascii():
        return len(s)
    return sum(_cw(c) for c in s)


def _clip(text: str, width: int) -> str:
    """text cut to at most width terminal columns, with … when cut."""
    if width <= 0:
        return ""
    if _width(text) <= width:
        return text
    out, w = [], 0
    for ch in text:
        cw = _cw(ch)
        if w + cw > width - 1:
            break
        out.append(ch)
        w += cw
    return "".join(out) + "…"


def _clip_middle(text: str, width: int) -> str:
    """text cut to width columns in its middle (its start and its end stay), with …."""
    if _width(text) <= width:
        return text
    if width <= 2:
        return _clip(text, width)
    tail = _clip_left(text, (width - 1) // 2)
    return _clip(text, width - _width(tail)).removesuffix("…") + "…" + tail


def _clip_left(text: str, width: int) -> str:
    """The last `width` columns of text."""
    out: list[str] = []
    w = 0
    for ch in reversed(text):
        cw = _cw(ch)
        if w + cw > width:
            break
        out.append(ch)
        w += cw
    return "".join(reversed(out))


@functools.lru_cache(maxsize=64)
def _atts(style: tuple[tuple[str, Any], ...]) -> dict[str, Any]:
    """curtsies' attributes for fmtstr(text, **style), parsed once per style."""
    from curtsies.formatstring import parse_args

    return dict(parse_args((), dict(style)))


def _styled(text: str, spans: tuple[tuple[int, int], ...], width: int, base: dict[str, Any], hl: dict[str, Any]) -> Any:
    """A FmtStr exactly `width` columns wide: text clipped and padded, spans highlighted."""
    from curtsies import fmtstr

    if text.isprintable() and text.replace("…", "").isascii():
        return _styled_ascii(text, spans, width, base, hl)
    text = _clip(text, width)
    marks = [False] * len(text)
    for a, b in spans:
        for i in range(max(0, a), min(b, len(text))):
            marks[i] = True
    segs: list[list] = []
    for ch, m in zip(text, marks, strict=True):
        if segs and segs[-1][1] == m:
            segs[-1][0] += ch
        elif segs and _cw(ch) == 0:
            segs[-1][0] += ch  # a zero-width character stays with what it modifies
        elif _cw(ch) > 0:
            segs.append([ch, m])
    pad = width - sum(_width(t) for t, _ in segs)
    if pad > 0:
        segs.append([" " * pad, False])
    out = fmtstr("")
    for t, m in segs:
        out = out + fmtstr(t, **(hl if m else base))
    return out


def _styled_ascii(
    text: str, spans: tuple[tuple[int, int], ...], width: int, base: dict[str, Any], hl: dict[str, Any]
) -> Any:
    """_styled for printable ASCII text (and "…"; one column per character, no escapes): the same
    clipping and the same chunks, cut at the spans' edges instead of character by character, each
    chunk made directly (a screen is ~100 styled strings: fmtstr's argument parsing and chunk copies
    were ~1/3 of painting it)."""
    from curtsies.formatstring import Chunk, FmtStr

    if width <= 0:
        text = ""
    elif len(text) > width:
        text = text[: width - 1] + "…"
    n = len(text)
    merged: list[list[int]] = []
    for a, b in sorted((max(0, a), min(b, n)) for a, b in spans):
        if a >= b:
            continue
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    b_atts, h_atts = _atts(tuple(base.items())), _atts(tuple(hl.items()))
    chunks, pos = [Chunk("")], 0
    for a, b in merged:
        if a > pos:
            chunks.append(Chunk(text[pos:a], b_atts))
        chunks.append(Chunk(text[a:b], h_atts))
        pos = b
    if pos < n:
        chunks.append(Chunk(text[pos:], b_atts))
    if width > n:
        chunks.append(Chunk(" " * (width - n), b_atts))
    return FmtStr(*chunks)


def _fs(text: str, **style: Any) -> Any:
    """fmtstr(text, **style), made directly when text holds no escape sequence to parse."""
    from curtsies.formatstring import Chunk, FmtStr

    if "\x1b" in text:
        from curtsies import fmtstr

        return fmtstr(text, **style)
    return FmtStr(Chunk(text, _atts(tuple(style.items()))))


def _plain(text: str, width: int, **style: Any) -> Any:
    return _styled(text, (), width, style, style)


def _xterm256(r: int, g: int, b: int) -> int:
    def cube(v: int) -> int:
        return 0 if v < 48 else 1 if v < 115 else (v - 35) // 40

    levels = (0, 95, 135, 175, 215, 255)
    ci = (cube(r), cube(g), cube(b))
    cr, cg, cb = (levels[i] for i in ci)
    gray = (r + g + b) // 3
    gi = max(0, min(23, (gray - 8) // 10))
    gv = 8 + 10 * gi
    if (r - gv) ** 2 + (g - gv) ** 2 + (b - gv) ** 2 < (r - cr) ** 2 + (g - cg) ** 2 + (b - cb) ** 2:
        return 232 + gi
    return 16 + 36 * ci[0] + 6 * ci[1] + ci[2]


@functools.lru_cache(maxsize=32)
def preview_lines(p: Preview, width: int, height: int, truecolor: bool) -> tuple[Any, ...]:
    """The preview as `height` lines of `width` half-block cells: ▀ with the upper pixel as
    foreground and the lower pixel as background (24-bit colour or the xterm 256-colour cube)."""
    from curtsies.formatstring import Chunk, FmtStr
    from PIL import Image

    if width <= 0 or height <= 0:
        return ()
    scale = min(width / p.width, 2 * height / p.height)
    w, h = max(1, round(p.width * scale)), max(1, round(p.height * scale))
    im = Image.frombytes("RGB", (p.width, p.height), p.rgb).resize((w, h), Image.Resampling.BOX)
    px = im.load()

    def code(layer: int, rgb: tuple[int, int, int]) -> str:
        if truecolor:
            return f"{layer};2;{rgb[0]};{rgb[1]};{rgb[2]}"
        return f"{layer};5;{_xterm256(*rgb)}"

    left = (width - w) // 2
    top = (height - (h + 1) // 2) // 2
    lines = []
    for row in range(height):
        y = 2 * (row - top)
        if y < 0 or y >= h:
            lines.append(FmtStr(Chunk(" " * width)))
            continue
        chunks = [Chunk(" " * left)] if left else []
        for x in range(w):
            atts = {"fg": code(38, px[x, y])}
            if y + 1 < h:
                atts["bg"] = code(48, px[x, y + 1])
            chunks.append(Chunk("▀", atts))
        if width - left - w:
            chunks.append(Chunk(" " * (width - left - w)))
        lines.append(FmtStr(*chunks))
    return tuple(lines)


# At most 76 columns and 20 lines: the whole help fits an 80x24 screen (2 columns of margin,
# 4 lines of query, header, hints and status).
# Light to dark, for a picture drawn without colour: each cell is a 1x2-pixel block's luminance.
MONO_RAMP = " .:-=+*#%@"


@functools.lru_cache(maxsize=32)
def preview_mono(p: Preview, width: int, height: int) -> tuple[Any, ...]:
    """The preview as `height` lines of `width` characters from MONO_RAMP, with no colour (NO_COLOR),
    dark pixels drawn as dense characters (light text on a dark terminal reads the other way round,
    but the shapes and the caption's place in the picture still show)."""
    from curtsies.formatstring import Chunk, FmtStr
    from PIL import Image

    if width <= 0 or height <= 0:
        return ()
    scale = min(width / p.width, 2 * height / p.height)
    w, h = max(1, round(p.width * scale)), max(1, round(p.height * scale / 2))
    im = Image.frombytes("RGB", (p.width, p.height), p.rgb).convert("L").resize((w, h), Image.Resampling.BOX)
    px = im.load()
    left, top = (width - w) // 2, (height - h) // 2
    top_pad, n = " " * width, len(MONO_RAMP) - 1
    lines = []
    for row in range(height):
        y = row - top
        if y < 0 or y >= h:
            lines.append(FmtStr(Chunk(top_pad)))
            continue
        text = "".join(MONO_RAMP[n - px[x, y] * n // 255] for x in range(w))
        lines.append(FmtStr(Chunk(" " * left + text + " " * (width - left - w))))
    return tuple(lines)


HELP_LINES = (
    "MamboMeme search: keys",
    "",
    "Typing edits the query; the results follow it (the last word as a prefix).",
    "  Enter             choose the highlighted result, or every marked one: quit",
    "                    and print the paths (waits for the typed query's list)",
    "  Ctrl-S            search now, without choosing",
    '  Ctrl-R            at "no match": the nearest memes anyway (not confident)',
    "  Ctrl-T            more like this: the meme's copies, template, captions",
    "  Up/Down Ctrl-P/N  move through the results (Ctrl-K/J, PgUp/PgDn too)",
    "  Tab / Shift-Tab   with -m: mark or unmark the result, move down / up",
    "  Ctrl-/ or F2      show or hide the preview; F3 show it large (Esc: back)",
    "  Ctrl-O open ($MAMBO_OPENER, else xdg-open) · Ctrl-Y copy the path",
    "  F1 help · Ctrl-Z suspend · Esc / Ctrl-C / Ctrl-G / Ctrl-D quit",
    "Query line: Left/Right, Home/End, Backspace, Delete, Ctrl-U, Ctrl-W.",
    "The selected result's path is on the line under the query.",
    "Badges: L found by its words (lexical), F by similar spelling (fuzzy),",
    "        D by meaning (dense); * marked (Tab);",
    "        sensitive; +N dup: copies. Under “weaker matches”: less evidence.",
    "Picker: xdg-open \"$(mambo search)\" · mambo search -m | xargs -d '\\n' ls",
    "Press any key to close this help.",
)


def _row_lines(r: Row, width: int, selected: bool, focused: bool, with_path: bool, marked: bool = False) -> list:

    badges = []
    if r.routes:
        badges.append(f"[{r.routes}]")
    if r.duplicates:
        badges.append(f"+{r.duplicates} dup")
    badge_text = " ".join(badges)
    sens = "sensitive" if r.sensitive else ""
    right = (len(badge_text) + 1 if badge_text else 0) + (len(sens) + 1 if sens else 0)
    marker = "›" if selected else " "
    head = f"{marker}{r.rank:>2}. " + ("* " if marked else "")  # "*": marked with Tab
    name_w = max(1, width - len(head) - right)
    inv = {"invert": True} if selected and focused else {}
    bold = {"bold": True} if selected else {}
    line = _fs(head, **inv, **bold) + _styled(
        r.name, r.name_spans, name_w, {**inv, **bold}, {**inv, "bold": True, "fg": "yellow"}
    )
    if badge_text:
        line = line + _fs(" " + badge_text, fg="cyan", **inv)
    if sens:
        line = line + _fs(" " + sens, fg="red", bold=True, **inv)
    lines = [line]
    lines.append(
        _fs("     ") + _styled(r.snippet, r.snippet_spans, width - 5, {"dark": True}, {"bold": True, "fg": "yellow"})
    )
    if with_path:
        lines.append(_fs("     ") + _plain(r.shown_path, width - 5, fg="blue"))
    return lines


NEAREST_OFFER = "Ctrl-R shows the nearest memes anyway (not confident)."


def _list_lines(s: TUIState, height: int, width: int) -> list:
    if s.searched_query is None:
        intro = [
            "Type what you remember of a meme (words in it, who is in it, its template):",
            "the results follow your typing; Enter picks the best match. F1 shows the keys.",
        ]
        return [_plain(t, width) for t in intro]
    if not s.rows:
        said = [_plain(f"no match for “{clean_line(s.searched_query)}”", width, bold=True)]
        if s.withheld:  # wrapped: the count and what to do both stay on a 40-column screen
            said += [_plain(line, width) for line in textwrap.wrap(s.withheld + ".", width)]
        else:
            said.append(_plain("Nothing in the library is close enough; try other words.", width))
        if s.nearest:
            return said + [_plain("Nothing is near it either.", width)]
        return said + [_plain(line, width) for line in textwrap.wrap(NEAREST_OFFER, width)]
    out = []
    if s.nearest:  # the rule said "no match": these are only the nearest
        out.append(_plain(f"not confident: nothing fits “{clean_line(s.searched_query)}” well; the nearest:", width))
        height -= 1
    divider = divider_index(s.rows)
    if divider is not None:  # its line is kept whether or not it is in view: the rows do not jump
        height -= 1
    per = 3 if height >= 3 * len(s.rows) else 2
    visible = max(1, height // per)
    first = max(0, min(s.selected - visible + 1, len(s.rows) - visible))
    marked = {m.item_id for m in s.marked}
    for i, r in enumerate(s.rows[first : first + visible], first):
        if i == divider:
            out.append(_divider_line(width))
        out.extend(_row_lines(r, width, i == s.selected, s.focus == "list", per == 3, r.item_id in marked))
    return out


WEAKER_MATCHES = " weaker matches "


def divider_index(rows: tuple[Row, ...]) -> int | None:
    """Where the "weaker matches" divider goes: before the first weaker row (never the first row)."""
    return next((i for i, r in enumerate(rows) if r.weaker and i > 0), None)


def _divider_line(width: int) -> Any:
    """The divider: a rule with "weaker matches" in it, dim, as wide as the list."""
    left = min(4, max(0, width - len(WEAKER_MATCHES)))
    right = max(0, width - left - len(WEAKER_MATCHES))
    return _plain("─" * left + WEAKER_MATCHES + "─" * right, width, dark=True)


def _preview_pane(s: TUIState, height: int, width: int) -> list:
    row = _selected_row(s)
    if row is None:
        return [_plain("(preview: no result selected)", width, dark=True)]
    caption = _plain(row.name, width, bold=True)
    if row.item_id not in s.previews:
        msg = "loading preview…" if row.has_preview else "no preview stored"
        return [caption, _plain(msg, width, dark=True)]
    p = s.previews[row.item_id]
    if p is None:
        return [caption, _plain("no preview stored", width, dark=True)]
    if s.images != "blocks":  # the shell draws the picture over these blank cells (see picture)
        return [caption]
    if not s.color:  # NO_COLOR: the picture in shades of one ink, no colour codes
        return [caption, *preview_mono(p, width, height - 1)]
    return [caption, *preview_lines(p, width, height - 1, s.truecolor)]


@dataclass(frozen=True)
class Picture:
    """The selected meme's preview as a picture (TUIState.images is a protocol): item N drawn in
    the cell rectangle (row, col, rows, cols), 0-based, which paint leaves blank for it."""

    item_id: int
    rect: tuple[int, int, int, int]


def _split(s: TUIState, cols: int) -> tuple[int, int]:
    """The list's and the preview's widths when the preview is shown beside the list."""
    lw = cols // 2 if cols < TUI_PREVIEW_COLS else cols * 3 // 5  # wide: the list keeps ~72 columns
    return lw, cols - lw - 1


def picture(state: TUIState, rows: int, cols: int) -> Picture | None:
    """Where paint leaves room for the selected meme's picture, or None (half-blocks, no preview
    shown or none decoded, the help, a screen too small). Pure, as paint is."""
    s = state
    if s.images == "blocks" or s.show_help or rows < TUI_MIN_ROWS or cols < TUI_MIN_COLS:
        return None
    row = _selected_row(s)
    if row is None or s.previews.get(row.item_id) is None:
        return None
    body_h = rows - 4  # under the query line and header, the caption line first
    if s.large:
        return Picture(row.item_id, (3, 0, body_h - 1, cols)) if body_h > 1 else None
    if not _preview_on(s, rows, cols) or rows < TUI_FULL_ROWS or cols < TUI_FULL_COLS:
        return None
    lw, pw = _split(s, cols)
    return Picture(row.item_id, (3, lw + 1, body_h - 1, pw)) if body_h > 1 and pw > 0 else None


def withheld_count(note: str) -> str:
    """The count a withheld note opens with ("2 memes that hold these words are withheld: ...")."""
    return note.split(" ", 1)[0]


def _status_text(s: TUIState) -> str:
    parts = []
    if s.searched_query is not None:
        n = f"{len(s.rows)}{'+' if s.more else ''}"  # "10+": more are found as the selection nears the end
        parts.append(f"{n} result{'s' if n != '1' else ''}" if s.rows else "no match")
        if s.nearest and s.rows:
            parts[-1] = f"{n} nearest, not confident"
        if s.search_ms is not None:
            parts.append(f"{s.search_ms:.1f} ms" if s.search_ms < 10 else f"{s.search_ms:.0f} ms")
        if s.used_system:
            parts.append(s.used_system + (f" v{s.used_version}" if s.used_version else ""))
        if s.rows and s.withheld:  # how many, never which (`mambo safety` lists them); after the
            parts.append(f"{withheld_count(s.withheld)} withheld")  # time, which the PTY harness reads
    else:
        parts.append(s.system)
    if s.marked:
        parts.append(f"{len(s.marked)} marked")
    model = {
        "loading": f"model loading… ({TUI_LOADING_SYSTEM} meanwhile)" if not s.wait_ready else "model loading…",
        "ready": f"model ready ({s.system})",
        "failed": "model failed: lexical only",
        "unused": "lexical system",
    }.get(s.model, s.model)
    parts.append(model)
    return " " + " · ".join(parts)


def paint(state: TUIState, rows: int, cols: int) -> Any:
    """The screen for a state: a rows x cols FSArray. Pure: same state and size, same screen."""
    from curtsies import FSArray

    s = state
    if rows <= 0 or cols <= 0:
        return FSArray(max(0, rows), max(0, cols))
    if rows < TUI_MIN_ROWS or cols < TUI_MIN_COLS:
        msg = (
            f"MamboMeme needs a terminal of at least {TUI_MIN_COLS}x{TUI_MIN_ROWS}; this one is "
            f"{cols}x{rows}. Enlarge it, or press Esc to quit."
        )
        words, lines, cur = msg.split(), [], ""
        for w in words:
            if cur and len(cur) + 1 + len(w) > cols:
                lines.append(cur)
                cur = ""
            cur = (cur + " " + w).strip()
        lines.append(cur)
        top = max(0, (rows - len(lines)) // 2)
        arr = FSArray(rows, cols)
        for i, t in enumerate(lines[: rows - top]):
            arr[top + i : top + i + 1, 0:cols] = [_plain(t, cols, bold=True)]
        return arr

    lines: list = []
    # Query line, with a drawn cursor when it has the focus.
    label = " Search: "
    hint = " F1 help "
    qw = cols - len(label) - len(hint)
    q = clean_line(s.query) if "\x1b" in s.query else s.query
    cur = min(s.cursor, len(q))
    start = cur  # scrolled so that the cursor stays visible
    while start > 0 and _width(q[start - 1 : cur]) <= qw - 2:
        start -= 1
    # A scrolled query says that its start is hidden: "…" in place of its first shown character.
    shown = q[start:] if start == 0 or cur == start else "…" + q[start + 1 :]
    cpos = cur - start
    qline = _fs(label, bold=True)
    if s.focus == "query":
        before, at, after = shown[:cpos], shown[cpos : cpos + 1] or " ", shown[cpos + 1 :]
        if _cw(at) == 0:
            at = " "
        used = _width(before) + _width(at)
        qline = qline + (_plain(before, _width(before)) if before else _fs(""))
        qline = qline + _fs(at, invert=True) + _plain(after, max(0, qw - used))
    else:
        qline = qline + _plain(shown, qw, dark=True)
    lines.append(qline + _fs(hint, dark=True))
    title = ""
    if s.searched_query is not None:
        title = f" results for “{clean_line(s.searched_query)}” "
    if s.like is not None:  # Ctrl-T's look-alikes
        title = f" more like “{s.like.name}” (Esc: back) "
    # The selected result's path, always on screen (result rows show paths only when there is room),
    # cut at its start so the file name stays.
    # The counter (N/10) always stays; the query keeps its start and end (… in its middle), the path
    # its end (the file name).
    row = _selected_row(s) if not s.show_help else None
    counter = f" {row.rank}/{len(s.rows)}{'+' if s.more else ''}" if row else ""
    path = f" {row.shown_path} " if row else ""
    if row and _width(title) + _width(counter) + _width(path) > cols - 4:
        budget = max(8, (cols - 4) // 2)
        frame = (" like “" if s.like else " “", "” ")
        subject = s.like.name if s.like else clean_line(s.searched_query or "")
        inner = _clip_middle(subject, max(3, budget - _width("".join(frame))))
        title = frame[0] + inner + frame[1]
        room = cols - 4 - _width(title) - _width(counter)
        if _width(path) > room:
            path = " …" + _clip_left(path, room - 2) if room > 3 else " "
    path = counter + path
    title = _clip_middle(title, cols - 2)
    fill = max(0, cols - 2 - _width(title) - _width(path))
    lines.append(
        _fs("─" * 2)
        + _plain(title, _width(title), bold=True)
        + _fs("─" * fill)
        + (_plain(path, _width(path), fg="blue") if path else _fs(""))
    )

    body_h = rows - 4
    compact = rows < TUI_FULL_ROWS or cols < TUI_FULL_COLS  # the list alone, no preview pane
    if s.show_help:
        body = [_plain("  " + t, cols) for t in HELP_LINES[:body_h]]
    elif s.large:  # F3: the preview on the whole body
        body = _preview_pane(s, body_h, cols)
    elif _preview_on(s, rows, cols) and not compact:
        lw, pw = _split(s, cols)
        left = _list_lines(s, body_h, lw)
        right = _preview_pane(s, body_h, pw)
        body = []
        for i in range(body_h):
            lft = left[i] if i < len(left) else _plain("", lw)
            rgt = right[i] if i < len(right) else _plain("", pw)
            body.append(lft + _fs("│", dark=True) + rgt)
    else:
        body = _list_lines(s, body_h, cols)
    body = body[:body_h] + [_plain("", cols)] * (body_h - len(body[:body_h]))
    lines.extend(body)

    if s.message:
        msg = _plain(" " + clean_line(s.message), cols, fg="green")
    elif s.large:
        msg = _plain(" F3 or Esc back to the list · Up/Down the next meme · Enter choose", cols, dark=True)
    elif s.show_preview and compact:  # asked for (Ctrl-/), not room for it
        msg = _plain(f" the preview needs {TUI_FULL_COLS}x{TUI_FULL_ROWS} (Ctrl-/ hides it)", cols, dark=True)
    elif s.focus == "list" and s.rows:
        msg = _plain(
            " Enter choose · "
            + ("Tab mark · " if s.multi else "")
            + "Ctrl-/ preview · Ctrl-O open · Ctrl-Y copy · F1 help",
            cols,
            dark=True,
        )
    elif s.rows and s.searched_query == s.query:
        msg = _plain(
            " Enter choose · Down results · "
            + ("Tab mark · " if s.multi else "")
            + "Ctrl-/ preview · F1 help · Esc quit",
            cols,
            dark=True,
        )
    elif s.searched_query is not None and s.searched_query == s.query and not s.nearest:  # "no match"
        msg = _plain(" Ctrl-R the nearest memes · Ctrl-S search · F1 help · Esc quit", cols, dark=True)
    else:
        msg = _plain(" Enter choose · Down results · Ctrl-S search · Ctrl-O open · F1 help · Esc quit", cols, dark=True)
    lines.append(msg)
    # The status line is one chunk so its text arrives in one piece ("search #N" marks each answer).
    counter = f"search #{s.shown_seq} " if s.shown_seq else ""
    status = _clip(_status_text(s), cols - len(counter) - 1)
    lines.append(_fs(status + " " * (cols - _width(status) - len(counter)) + counter, invert=True))

    from curtsies.formatstring import Chunk, FmtStr

    arr = FSArray(rows, cols)
    for i, line in enumerate(lines[:rows]):
        if not s.color:  # NO_COLOR: the same screen without colour (bold, dim and inverse stay)
            line = FmtStr(
                *[Chunk(c.s, {k: v for k, v in c.atts.items() if k not in ("fg", "bg")}) for c in line.chunks]
            )
        if len(line) <= cols:  # what FSArray's slice assignment makes of it (splicing into the
            arr.rows[i] = FmtStr(*[c for c in line.chunks if c.s])  # empty row), at ~1/10 the cost
        else:  # too long: FSArray's own slice assignment refuses it
            arr[i : i + 1, 0:cols] = [line]
    return arr
