# ─────────────────────────────────────────────────────────────────────────────
# 11. Terminal UI (`mambo search` without a QUERY)
# ─────────────────────────────────────────────────────────────────────────────
#
# Shape (bpython's curtsiesfrontend): a pure state machine and a pure painter, and a thin shell
# that owns the terminal.
#   process_event(state, event) -> (state, effects)   keys and posted events in, effects out
#   paint(state, rows, cols) -> FSArray                 what the screen shows, nothing else
#   _Shell                                              performs effects (search, open, copy,
#                                                       record, choose) and feeds results back
# The UI draws on /dev/tty, never on stdout: stdout carries only the chosen path, printed after
# the alternate screen is left, so `xdg-open "$(mambo search)"` works like an fzf picker.
#
# Focus: typing always edits the query and Enter searches; after a search the result list has
# the focus, where Enter chooses and the single letters o, c, p, ? are commands. Any other
# printable key sends the focus back to the query and types itself.

from __future__ import annotations

import base64
import contextlib
import dataclasses
import functools
import io
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
import unicodedata
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mambo import (
    DB,
    DEFAULT_SYSTEM,
    MamboError,
    Q,
    Result,
    Searcher,
    __version__,
    clean_line,
    get_embedder,
    normalise_query,
    show_path,
    system_config,
)

# Recorded with every interaction event; bump when the UI changes in a way that could change
# how people interact with results (layout, keys, what is shown).
TUI_INTERFACE_VERSION = f"mambo-tui/1 ({__version__})"
TUI_MIN_ROWS, TUI_MIN_COLS = 24, 80
# The lexical-only system used while the embedding model is still loading.
TUI_LOADING_SYSTEM = "bm25"

# >>> Named queries for queries.sql (move them there on merge; `_tq` then becomes `db.q`).
TUI_QUERIES = {
    # -- name: setting
    "setting": "SELECT value FROM settings WHERE key = :key",
    # -- name: insert_interaction_event
    "insert_interaction_event": (
        "INSERT INTO interaction_events(session, kind, query, item_id, rank, ms_since_render, system, "
        "system_version, interface_version)\n"
        "VALUES (:session, :kind, :query, :item_id, :rank, :ms_since_render, :system, :system_version, "
        ":interface_version);"
    ),
}
# <<<


def needs_model(cfg: dict[str, Any]) -> bool:
    """Whether a system's configuration has a dense (embedding) route."""
    if "route_weights" in cfg:
        return cfg["route_weights"].get("dense", 0) > 0
    return "dense" in cfg.get("routes", ())


def _tq(db: DB, name: str, params: dict[str, Any]) -> list[tuple]:
    if name in Q:
        return db.q(name, params)
    return list(db.con.execute(TUI_QUERIES[name], params))


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


def _match_spans(text: str, tokens: frozenset[str]) -> tuple[tuple[int, int], ...]:
    """Where the query's tokens occur in text, compared as normalise_query compares them."""
    if not tokens:
        return ()
    spans = []
    for m in _WORD_RE.finditer(text):
        if any(t in tokens for t in normalise_query(m.group())):
            spans.append((m.start(), m.end()))
    return tuple(spans)


def _json_list(s: Any) -> list[str]:
    import json

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
    text = d.get("ocr_text") or d.get("description") or ", ".join(_json_list(d.get("entities")) +
                                                                  _json_list(d.get("tags")))
    text = unicodedata.normalize("NFC", clean_line(text or ""))
    spans = _match_spans(text, tokens)
    if spans and spans[0][0] > 12:
        # Start the snippet a few words before the first match so the match is on screen.
        cut = text.rfind(" ", 0, spans[0][0] - 8) + 1
        text = "…" + text[cut:]
        spans = tuple((a - cut + 1, b - cut + 1) for a, b in spans if a >= cut)
    path = str(Path(str(d["root_path"])) / str(d["rel_path"]))
    routes = "".join(x for x, v in (("L", r.lex_rank), ("F", getattr(r, "fuzzy_rank", None)), ("D", r.vec_rank))
                     if v is not None)
    return Row(
        item_id=int(r.item_id), rank=int(r.rank), name=name, name_spans=_match_spans(name, tokens),
        snippet=text, snippet_spans=spans, path=path, shown_path=clean_line(show_path(path)),
        sensitive=d.get("safety") == "sensitive", duplicates=int(d.get("duplicate_count") or 0),
        routes=routes, has_preview=bool(d.get("has_preview")),
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
    seq: int
    query: str
    rows: tuple[Row, ...]
    ms: float
    system: str
    system_version: int | None
    error: str = ""


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


@dataclass(frozen=True)
class LoadPreview:
    item_id: int


@dataclass(frozen=True)
class OpenFile:
    path: str
    shown: str


@dataclass(frozen=True)
class CopyPath:
    path: str


@dataclass(frozen=True)
class Choose:
    path: str


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
    search_ms: float | None = None
    used_system: str = ""
    used_version: int | None = None
    selected: int = 0
    show_preview: bool = False
    show_help: bool = False
    previews: dict[int, Preview | None] = field(default_factory=dict)
    pending: str | None = None  # a query waiting for the model (--wait-ready)
    message: str = ""


def _selected_row(s: TUIState) -> Row | None:
    return s.rows[s.selected] if s.rows and 0 <= s.selected < len(s.rows) else None


def _submit(s: TUIState) -> tuple[TUIState, list]:
    query = s.query
    if not query.strip():
        return dataclasses.replace(s, message="type what you remember, then press Enter"), []
    if s.wait_ready and s.model == "loading":
        return dataclasses.replace(s, pending=query, message="waiting for the model…"), []
    seq = s.seq + 1
    return dataclasses.replace(s, seq=seq, pending=None, message=""), [DoSearch(query, seq)]


def _edit(s: TUIState, key: str) -> TUIState | None:
    """Query-line editing; None when key is not an editing key."""
    q, c = s.query, min(s.cursor, len(s.query))
    if key == "<SPACE>":
        key = " "
    if len(key) == 1 and key.isprintable():
        return dataclasses.replace(s, query=q[:c] + key + q[c:], cursor=c + 1)
    if key in ("<BACKSPACE>", "<Ctrl-h>"):
        return dataclasses.replace(s, query=q[:max(0, c - 1)] + q[c:], cursor=max(0, c - 1))
    if key in ("<DELETE>", "<Ctrl-DELETE>"):
        return dataclasses.replace(s, query=q[:c] + q[c + 1:])
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


def _move(s: TUIState, key: str) -> TUIState:
    n = len(s.rows)
    if not n:
        return s
    step = {"<UP>": -1, "<DOWN>": 1, "<PAGEUP>": -5, "<PAGEDOWN>": 5}[key]
    if s.focus == "query":
        if key in ("<DOWN>", "<PAGEDOWN>"):
            return dataclasses.replace(s, focus="list")
        return s
    if key == "<UP>" and s.selected == 0:
        return dataclasses.replace(s, focus="query")
    return dataclasses.replace(s, selected=max(0, min(n - 1, s.selected + step)))


def _toggle_preview(s: TUIState) -> tuple[TUIState, list]:
    s = dataclasses.replace(s, show_preview=not s.show_preview, show_help=False)
    row = _selected_row(s)
    if s.show_preview and row and s.searched_query is not None:
        return s, [Record("preview", s.searched_query, row.item_id, row.rank)]
    return s, []


def _key(s: TUIState, key: str) -> tuple[TUIState, list]:
    if key in ("<Ctrl-c>", "<Ctrl-d>"):
        return s, [Quit()]
    if s.show_help:  # any key closes the help
        return dataclasses.replace(s, show_help=False), []
    if key == "<ESC>":
        return s, [Quit()]
    if key == "<F1>":
        return dataclasses.replace(s, show_help=True), []
    if key in ("<TAB>", "<Shift-TAB>"):
        return _toggle_preview(s)
    if key in ("<UP>", "<DOWN>", "<PAGEUP>", "<PAGEDOWN>"):
        return _move(s, key), []
    enter = key in ("<Ctrl-j>", "<Ctrl-m>")
    row = _selected_row(s)
    if s.focus == "list" and row is not None:
        sq = s.searched_query or ""
        if enter:
            return s, [Record("choose", sq, row.item_id, row.rank), Choose(row.path)]
        if key == "o":
            return (dataclasses.replace(s, message=f"opening {row.shown_path}"),
                    [Record("open", sq, row.item_id, row.rank), OpenFile(row.path, row.shown_path)])
        if key == "c":
            return (dataclasses.replace(s, message=f"copied: {row.shown_path}"),
                    [Record("copy", sq, row.item_id, row.rank), CopyPath(row.path)])
        if key == "p":
            return _toggle_preview(s)
        if key == "?":
            return dataclasses.replace(s, show_help=True), []
        if key == "/":
            return dataclasses.replace(s, focus="query", cursor=len(s.query)), []
        # Anything else edits the query: focus goes back to it, at its end.
        edited = _edit(dataclasses.replace(s, cursor=len(s.query)), key)
        if edited is not None:
            return dataclasses.replace(edited, focus="query", message=""), []
        return s, []
    if enter:
        return _submit(dataclasses.replace(s, focus="query"))
    edited = _edit(s, key)
    if edited is not None:
        return dataclasses.replace(edited, focus="query"), []
    return s, []


def _want_preview(s: TUIState, effects: list) -> list:
    row = _selected_row(s)
    if s.show_preview and row is not None and row.item_id not in s.previews:
        if not row.has_preview:
            return effects  # painted as "no preview"
        if not any(isinstance(e, LoadPreview) and e.item_id == row.item_id for e in effects):
            return [*effects, LoadPreview(row.item_id)]
    return effects


def process_event(state: TUIState, event: Any) -> tuple[TUIState, list]:
    """The whole behaviour: (state, event) -> (new state, effects for the shell to perform)."""
    s = state
    effects: list = []
    if isinstance(event, str):
        s, effects = _key(s, event)
    elif isinstance(event, Interrupt):
        effects = [Quit()]
    elif isinstance(event, Searched):
        if event.seq < s.seq:  # an answer to a superseded search
            return s, []
        if event.error:
            s = dataclasses.replace(s, message=f"search failed: {event.error}", shown_seq=event.seq)
        else:
            s = dataclasses.replace(
                s, rows=event.rows, searched_query=event.query, shown_seq=event.seq, search_ms=event.ms,
                used_system=event.system, used_version=event.system_version, selected=0,
                focus="list" if event.rows else "query", cursor=len(s.query), message="",
                previews={r.item_id: s.previews[r.item_id] for r in event.rows if r.item_id in s.previews})
            effects = [Record("render", event.query)]
    elif isinstance(event, ModelStatus):
        s = dataclasses.replace(s, model=event.status, model_detail=event.detail)
        if event.status == "failed":
            s = dataclasses.replace(s, message=f"the model failed to load ({event.detail}); searching by words only")
        if event.status != "loading" and s.pending is not None:
            s, effects = _submit(dataclasses.replace(s, query=s.pending, cursor=len(s.pending)))
    elif isinstance(event, PreviewLoaded):
        s = dataclasses.replace(s, previews={**s.previews, event.item_id: event.preview})
    elif isinstance(event, Message):
        s = dataclasses.replace(s, message=event.text)
    return s, _want_preview(s, effects)


# -- Painting ----------------------------------------------------------------------------------


def _cw(ch: str) -> int:
    if " " <= ch < "\x7f":
        return 1
    from wcwidth import wcwidth

    return max(0, wcwidth(ch))


def _width(s: str) -> int:
    if s.isascii() and s.isprintable():
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


def _styled(text: str, spans: tuple[tuple[int, int], ...], width: int, base: dict[str, Any],
            hl: dict[str, Any]) -> Any:
    """A FmtStr exactly `width` columns wide: text clipped and padded, spans highlighted."""
    from curtsies import fmtstr

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


HELP_LINES = (
    "MamboMeme search: keys",
    "",
    "Typing always edits the query; Enter searches.",
    "After a search the result list has the focus:",
    "  Up/Down, PgUp/PgDn  move (Up on the first result goes back to the query)",
    "  Enter               choose: quit and print the file's path on stdout",
    "  o                   open the original ($MAMBO_OPENER, else xdg-open)",
    "  c                   copy the path (terminal clipboard, OSC 52)",
    "  p or Tab            show or hide the preview",
    "  ?                   this help      /  back to the query",
    "  other keys          back to the query, typing the key",
    "Anywhere: Tab preview, F1 help, Esc / Ctrl-C / Ctrl-D quit.",
    "Query line: Left/Right, Home/End, Backspace, Delete, Ctrl-U, Ctrl-W.",
    "",
    "Badges: L found by its words (lexical), F by similar spelling (fuzzy),",
    "        D by meaning (dense),",
    "        sensitive, +N dup = N more copies of the file.",
    "As a picker:  xdg-open \"$(mambo search)\"",
    "",
    "Press any key to close this help.",
)


def _row_lines(r: Row, width: int, selected: bool, focused: bool, with_path: bool) -> list:
    from curtsies import fmtstr

    badges = []
    if r.routes:
        badges.append(f"[{r.routes}]")
    if r.duplicates:
        badges.append(f"+{r.duplicates} dup")
    badge_text = " ".join(badges)
    sens = "sensitive" if r.sensitive else ""
    right = (len(badge_text) + 1 if badge_text else 0) + (len(sens) + 1 if sens else 0)
    marker = "›" if selected else " "
    head = f"{marker}{r.rank:>2}. "
    name_w = max(1, width - len(head) - right)
    inv = {"invert": True} if selected and focused else {}
    bold = {"bold": True} if selected else {}
    line = (fmtstr(head, **inv, **bold)
            + _styled(r.name, r.name_spans, name_w, {**inv, **bold}, {**inv, "bold": True, "fg": "yellow"}))
    if badge_text:
        line = line + fmtstr(" " + badge_text, fg="cyan", **inv)
    if sens:
        line = line + fmtstr(" " + sens, fg="red", bold=True, **inv)
    lines = [line]
    lines.append(fmtstr("     ") + _styled(r.snippet, r.snippet_spans, width - 5, {"dark": True},
                                             {"bold": True, "fg": "yellow"}))
    if with_path:
        lines.append(fmtstr("     ") + _plain(r.shown_path, width - 5, fg="blue"))
    return lines


def _list_lines(s: TUIState, height: int, width: int) -> list:
    if s.searched_query is None:
        intro = ["Type what you remember of a meme (words in it, who is in it, its template)",
                 "and press Enter. F1 shows the keys."]
        return [_plain(t, width) for t in intro]
    if not s.rows:
        return [_plain(f"no match for “{clean_line(s.searched_query)}”", width, bold=True),
                _plain("Nothing in the library is close enough; try other words.", width)]
    per = 3 if height >= 3 * len(s.rows) else 2
    visible = max(1, height // per)
    first = max(0, min(s.selected - visible + 1, len(s.rows) - visible))
    out = []
    for i, r in enumerate(s.rows[first:first + visible], first):
        out.extend(_row_lines(r, width, i == s.selected, s.focus == "list", per == 3))
    return out


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
    return [caption, *preview_lines(p, width, height - 1, s.truecolor)]


def _status_text(s: TUIState) -> str:
    parts = []
    if s.shown_seq:
        parts.append(f"{len(s.rows)} result{'s' if len(s.rows) != 1 else ''}" if s.rows else "no match")
        if s.search_ms is not None:
            parts.append(f"{s.search_ms:.1f} ms" if s.search_ms < 10 else f"{s.search_ms:.0f} ms")
        if s.used_system:
            parts.append(s.used_system + (f" v{s.used_version}" if s.used_version else ""))
    else:
        parts.append(s.system)
    model = {"loading": f"model loading… ({TUI_LOADING_SYSTEM} meanwhile)" if not s.wait_ready
             else "model loading…", "ready": f"model ready ({s.system})",
             "failed": "model failed: lexical only", "unused": "lexical system"}.get(s.model, s.model)
    parts.append(model)
    return " " + " · ".join(parts)


def paint(state: TUIState, rows: int, cols: int) -> Any:
    """The screen for a state: a rows x cols FSArray. Pure: same state and size, same screen."""
    from curtsies import FSArray, fmtstr

    s = state
    if rows <= 0 or cols <= 0:
        return FSArray(max(0, rows), max(0, cols))
    if rows < TUI_MIN_ROWS or cols < TUI_MIN_COLS:
        msg = (f"MamboMeme needs a terminal of at least {TUI_MIN_COLS}x{TUI_MIN_ROWS}; this one is "
               f"{cols}x{rows}. Enlarge it, or press Esc to quit.")
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
            arr[top + i:top + i + 1, 0:cols] = [_plain(t, cols, bold=True)]
        return arr

    lines: list = []
    # Query line, with a drawn cursor when it has the focus.
    label = " Search: "
    hint = " F1 help " if s.focus == "query" else " ? help "
    qw = cols - len(label) - len(hint)
    q = clean_line(s.query) if "\x1b" in s.query else s.query
    cur = min(s.cursor, len(q))
    start = cur  # scrolled so that the cursor stays visible
    while start > 0 and _width(q[start - 1:cur]) <= qw - 2:
        start -= 1
    shown = q[start:]
    cpos = cur - start
    qline = fmtstr(label, bold=True)
    if s.focus == "query":
        before, at, after = shown[:cpos], shown[cpos:cpos + 1] or " ", shown[cpos + 1:]
        if _cw(at) == 0:
            at = " "
        used = _width(before) + _width(at)
        qline = qline + (_plain(before, _width(before)) if before else fmtstr(""))
        qline = qline + fmtstr(at, invert=True) + _plain(after, max(0, qw - used))
    else:
        qline = qline + _plain(shown, qw, dark=True)
    lines.append(qline + fmtstr(hint, dark=True))
    title = ""
    if s.searched_query is not None:
        title = f" results for “{clean_line(s.searched_query)}” "
    lines.append(fmtstr("─" * 2) + _plain(_clip(title, cols - 2), _width(_clip(title, cols - 2)), bold=True)
                 + fmtstr("─" * max(0, cols - 2 - _width(_clip(title, cols - 2)))))

    body_h = rows - 4
    if s.show_help:
        body = [_plain("  " + t, cols) for t in HELP_LINES[:body_h]]
    elif s.show_preview:
        lw = cols // 2
        pw = cols - lw - 1
        left = _list_lines(s, body_h, lw)
        right = _preview_pane(s, body_h, pw)
        body = []
        for i in range(body_h):
            lft = left[i] if i < len(left) else _plain("", lw)
            rgt = right[i] if i < len(right) else _plain("", pw)
            body.append(lft + fmtstr("│", dark=True) + rgt)
    else:
        body = _list_lines(s, body_h, cols)
    body = body[:body_h] + [_plain("", cols)] * (body_h - len(body[:body_h]))
    lines.extend(body)

    if s.message:
        msg = _plain(" " + clean_line(s.message), cols, fg="green")
    elif s.focus == "list" and s.rows:
        msg = _plain(" Enter choose · o open · c copy · p/Tab preview · ? help · Esc quit",
                     cols, dark=True)
    else:
        msg = _plain(" Enter search · Down results · Tab preview · F1 help · Esc quit", cols, dark=True)
    lines.append(msg)
    # The status line is one chunk so its text arrives in one piece ("search #N" marks each answer).
    counter = f"search #{s.shown_seq} " if s.shown_seq else ""
    status = _clip(_status_text(s), cols - len(counter) - 1)
    lines.append(fmtstr(status + " " * (cols - _width(status) - len(counter)) + counter, invert=True))

    arr = FSArray(rows, cols)
    for i, line in enumerate(lines[:rows]):
        arr[i:i + 1, 0:cols] = [line]
    return arr


# -- The shell: owns the terminal, performs effects --------------------------------------------


@dataclass
class _Envelope:
    event: Any


class _Signalled(BaseException):
    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


@contextlib.contextmanager
def _stderr_aside():
    """While the screen is ours, stray stderr writes (library warnings from the model loading in
    the background) go to a temporary file; they are shown after the terminal is restored."""
    import tempfile

    if not os.isatty(2):
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield
        finally:
            with contextlib.suppress(Exception):
                sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            text = tmp.read().decode("utf-8", "replace")
            if text.strip():
                with contextlib.suppress(OSError):
                    sys.stderr.write(text)
                    sys.stderr.flush()


def _enter_quietly(stack: contextlib.ExitStack, cm: Any) -> Any:
    """Enter cm on stack; on the way out, a terminal that is gone (SIGHUP: writes and tcsetattr
    fail) must not replace the reason we are leaving."""
    import termios

    value = cm.__enter__()

    def leave(*exc: Any) -> bool:
        try:
            return bool(cm.__exit__(*exc))
        except (OSError, termios.error):
            return False

    stack.push(leave)
    return value


def _open_terminal() -> tuple[Any, Any]:
    """The terminal to draw on: /dev/tty, so stdout stays free for the chosen path."""
    try:
        fin = open("/dev/tty", encoding="utf-8")  # closed by the shell
        fout = open("/dev/tty", "w", encoding="utf-8")
        return fin, fout
    except OSError:
        if sys.stdin.isatty() and sys.stdout.isatty():
            return sys.stdin, sys.stdout
        raise MamboError("the search screen needs a terminal; give a QUERY to search without one") from None


class _Shell:
    def __init__(self, db: DB, system: str, *, limit: int, record_events: bool, wait_ready: bool):
        self.db, self.system, self.limit = db, system, limit
        cfg = system_config(db, system)  # an unknown system fails here, before the screen changes
        self.needs_model = needs_model(cfg)
        self.versions: dict[str, int | None] = {}
        setting = None
        with contextlib.suppress(Exception):
            got = _tq(db, "setting", {"key": "interaction_events"})
            setting = got[0][0] if got else None
        self.recording = (record_events or setting == "on") and not db.readonly
        self.session = uuid.uuid4().hex
        self.render_t: float | None = None
        self.children: list[subprocess.Popen] = []
        self.post: Any = None
        self.win: Any = None
        self.state = TUIState(
            system=system, model="loading" if self.needs_model else "unused", wait_ready=wait_ready,
            truecolor=os.environ.get("COLORTERM", "").lower() in ("truecolor", "24bit"))
        self.chosen: str | None = None
        self.quit = False
        self._records: list[Record] = []

    def version(self, name: str) -> int | None:
        if name not in self.versions:
            row = self.db.q1("system_by_name", {"name": name})
            self.versions[name] = int(row[2]) if row else None
        return self.versions[name]

    # -- background
    def _load_model(self) -> None:
        try:
            get_embedder()
        except BaseException as e:  # reported on the status line, lexical goes on
            self.post(event=ModelStatus("failed", clean_line(f"{type(e).__name__}: {e}")[:200]))
        else:
            self.post(event=ModelStatus("ready"))

    # -- effects
    def search(self, query: str, seq: int) -> Searched:
        system, embedder = self.system, None
        if self.needs_model:
            if self.state.model == "ready":
                embedder = get_embedder()
            else:
                system = TUI_LOADING_SYSTEM
        t0 = time.perf_counter()
        try:
            results = Searcher(self.db, embedder).search(query, system, self.limit)
        except MamboError as e:
            return Searched(seq, query, (), 0.0, system, None, error=clean_line(e.format_message()))
        rows = tuple(row_from_result(r, query) for r in results)
        ms = (time.perf_counter() - t0) * 1000
        return Searched(seq, query, rows, ms, system, self.version(system))

    def load_preview(self, item_id: int) -> PreviewLoaded:
        row = self.db.q1("preview", {"item_id": item_id})
        if not row:
            return PreviewLoaded(item_id, None)
        try:
            return PreviewLoaded(item_id, decode_preview(bytes(row[3])))
        except Exception:  # a damaged preview is "no preview", not a crash
            return PreviewLoaded(item_id, None)

    def open_file(self, path: str, shown: str) -> Message:
        if not Path(path).exists():
            return Message(f"file not found: {shown}")
        opener = os.environ.get("MAMBO_OPENER") or "xdg-open"
        self.children = [c for c in self.children if c.poll() is None]  # reap finished openers
        try:
            cmd = shlex.split(opener)
            self.children.append(subprocess.Popen(
                [*cmd, path], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True, close_fds=True))
        except (OSError, ValueError) as e:
            return Message(f"cannot open with {clean_line(opener)!r}: {clean_line(str(e))}")
        return Message(f"opened: {shown}")

    def copy(self, path: str) -> None:
        # OSC 52: the terminal puts the text on the clipboard (where it allows it); the status line
        # shows the path too, for terminals that do not.
        self.win.write("\x1b]52;c;" + base64.b64encode(path.encode("utf-8", "surrogateescape")).decode() + "\x07")

    def record(self, r: Record) -> None:
        if not self.recording:
            return
        s = self.state
        ms = 0.0 if r.kind == "render" or self.render_t is None else (time.perf_counter() - self.render_t) * 1000
        with self.db.write():
            _tq(self.db, "insert_interaction_event", {
                "session": self.session, "kind": r.kind, "query": r.query, "item_id": r.item_id,
                "rank": r.rank, "ms_since_render": round(ms, 1), "system": s.used_system or s.system,
                "system_version": s.used_version, "interface_version": TUI_INTERFACE_VERSION})

    def handle(self, event: Any) -> None:
        """Feed one event through process_event and perform what it asks, following up on the
        events that effects produce."""
        queue = [event]
        while queue and not self.quit:
            self.state, effects = process_event(self.state, queue.pop(0))
            for e in effects:
                if isinstance(e, DoSearch):
                    queue.append(self.search(e.query, e.seq))
                elif isinstance(e, LoadPreview):
                    queue.append(self.load_preview(e.item_id))
                elif isinstance(e, OpenFile):
                    queue.append(self.open_file(e.path, e.shown))
                elif isinstance(e, CopyPath):
                    self.copy(e.path)
                elif isinstance(e, Record):
                    self._records.append(e)
                elif isinstance(e, Choose):
                    self.chosen, self.quit = e.path, True
                elif isinstance(e, Quit):
                    self.quit = True

    def render(self) -> None:
        h, w = self.win.height, self.win.width
        self.win.render_to_terminal(paint(self.state, h, w))
        for r in self._records:
            if r.kind == "render":
                self.render_t = time.perf_counter()
            self.record(r)
        self._records.clear()

    def run(self) -> int:
        from curtsies import FullscreenWindow, Input
        from curtsies.events import PasteEvent, SigIntEvent

        fin, fout = _open_terminal()
        handlers = {}

        def on_signal(signum: int, frame: Any) -> None:
            raise _Signalled(signum)

        def on_winch(signum: int, frame: Any) -> None:
            if self.post is not None:
                self.post(event=Resized())

        code = 130
        try:
            with _stderr_aside(), contextlib.ExitStack() as stack:
                for sig in (signal.SIGTERM, signal.SIGHUP):
                    handlers[sig] = signal.signal(sig, on_signal)
                self.win = _enter_quietly(stack, FullscreenWindow(fout))
                inp = _enter_quietly(stack, Input(fin, sigint_event=True))
                self.post = inp.threadsafe_event_trigger(_Envelope)
                handlers[signal.SIGWINCH] = signal.signal(signal.SIGWINCH, on_winch)
                if self.needs_model:
                    threading.Thread(target=self._load_model, name="mambo-model", daemon=True).start()
                self.render()
                while not self.quit:
                    ev = inp.send(None)
                    if ev is None:
                        continue
                    if isinstance(ev, _Envelope):
                        ev = ev.event
                    if isinstance(ev, Resized):
                        self.win.write(self.win.t.clear)
                        self.win.on_terminal_size_change(self.win.height, self.win.width)
                    elif isinstance(ev, SigIntEvent):
                        self.handle(Interrupt())
                    elif isinstance(ev, PasteEvent):
                        for e in ev.events:
                            self.handle(e)
                    else:
                        self.handle(ev)
                    if not self.quit:
                        self.render()
                    else:
                        for r in self._records:  # the choose event
                            self.record(r)
                        self._records.clear()
                code = 0 if self.chosen is not None else 130
        except _Signalled as e:
            code = 128 + e.signum
        except KeyboardInterrupt:
            code = 130
        finally:
            for sig, old in handlers.items():
                with contextlib.suppress(Exception):
                    signal.signal(sig, old)
            for f in (fin, fout):
                if f not in (sys.stdin, sys.stdout):
                    with contextlib.suppress(Exception):
                        f.close()
            for child in self.children:
                child.poll()
        if self.chosen is not None:
            out = self.chosen if not sys.stdout.isatty() else show_path(self.chosen)
            sys.stdout.write(out + "\n")
            sys.stdout.flush()
        return code


def run_tui(db: DB, system: str = DEFAULT_SYSTEM, *, limit: int = 10, record_events: bool = False,
            wait_ready: bool = False) -> int:
    """The full-screen search. Returns the exit status: 0 when a result was chosen (its path is
    printed on stdout), 130 when the user quit, 128+N after signal N."""
    return _Shell(db, system, limit=limit, record_events=record_events, wait_ready=wait_ready).run()


# -- Submit-to-render latency, measured in a real PTY ------------------------------------------


def _tui_argv(db_path: Path | str, system: str, *extra: str) -> list[str]:
    """How to start the TUI as its own process. On merge: [sys.executable, mambo.py, "--db", db,
    "search", "--system", system, *extra]."""
    app = Path(__file__).resolve().parent / "tests" / "tui_app.py"
    return [sys.executable, str(app), "--db", str(db_path), "--system", system, *extra]


def measure_latency(db_path: Path | str, queries: list[str], n: int = 1000, warmups: int = 20,
                    system: str = DEFAULT_SYSTEM, seed: int = 0) -> dict[str, Any]:
    """Submit-to-render time of the real TUI in an 80x24 PTY: for each search, type the query,
    send Enter, and time from that send until the status line with the new "search #N" arrives
    (the status line is drawn last, so the whole list is on screen by then). The app is started
    with --wait-ready and measuring begins once the model is ready. Also returns the search time
    the app itself reports, to separate search from drawing."""
    import random
    import statistics

    import pexpect

    rng = random.Random(seed)
    env = {**os.environ, "TERM": "xterm-256color", "BLESSED_QUERY_TIMEOUT_SECONDS": "0", "COLUMNS": "80",
           "LINES": "24"}
    argv = _tui_argv(db_path, system, "--wait-ready")
    child = pexpect.spawn(argv[0], argv[1:], env=env, dimensions=(24, 80), encoding="utf-8", timeout=120)
    child.delaybeforesend = None
    t_start = time.perf_counter()
    try:
        child.expect(["model ready", "lexical system"], timeout=180)
        ready_s = time.perf_counter() - t_start
        times, app_ms, counts = [], [], []
        status_re = re.compile(r"(no match|\d+ results?) · ([\d.]+) ms[^\n]*?search #(\d+) ")
        q = ""
        for i in range(warmups + n):
            # Never the same query twice in a row: its query line would not change, so there
            # would be nothing to wait for before sending Enter.
            q = rng.choice([x for x in queries if x != q] or queries)
            child.send("\x15")  # Ctrl-U: back to the query line, emptied
            child.send(q)
            # Wait until the query line shows the typed text, so Enter is its own keypress.
            child.expect_exact(q[-12:], timeout=30)
            seq = i + 1
            t0 = time.perf_counter()
            child.send("\r")
            while True:
                child.expect(status_re, timeout=30)
                if int(child.match.group(3)) == seq:
                    break
            dt = (time.perf_counter() - t0) * 1000
            if i >= warmups:
                times.append(dt)
                app_ms.append(float(child.match.group(2)))
                counts.append(child.match.group(1))
        child.send("\x1b")
        child.expect(pexpect.EOF, timeout=30)
    finally:
        if child.isalive():
            child.terminate(force=True)

    def pct(xs: list[float], p: float) -> float:
        xs = sorted(xs)
        return round(xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))], 2)

    return {
        "n": len(times), "warmups": warmups, "system": system, "seed": seed, "queries": len(queries),
        "startup_to_model_ready_s": round(ready_s, 2),
        "submit_to_render_ms": {"p50": pct(times, 50), "p95": pct(times, 95), "p99": pct(times, 99),
                                "mean": round(statistics.fmean(times), 2), "max": round(max(times), 2)},
        "app_search_ms": {"p50": pct(app_ms, 50), "p95": pct(app_ms, 95)},
        "no_match_share": round(sum(c == "no match" for c in counts) / max(1, len(counts)), 3),
    }
