"""The thin terminal shell of the full-screen search: it owns the terminal (curtsies), runs searches and
preview decoding on threads, feeds events to the pure state machine in tui.py and paints what it
returns; every way out restores the terminal. Also the PTY driver that measures submit-to-render."""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import functools
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mambomeme.dense_memory import InMemoryVectors
from mambomeme.embed import get_embedder, waiting_note, waiting_to_embed
from mambomeme.library import DB, db_error_message, get_setting
from mambomeme.output import MamboError, clean_line, clean_text, path_bytes, start_viewer, viewer
from mambomeme.query_plan import QueryPlan
from mambomeme.search import DEFAULT_SYSTEM, Searcher, load_system, needs_model, plan_for, system_version
from mambomeme.tui import (
    TUI_INTERFACE_VERSION,
    TUI_LIVE_PAUSE_S,
    TUI_LOADING_SYSTEM,
    Alike,
    Choose,
    CopyPath,
    DoSearch,
    Interrupt,
    LibraryChanged,
    LoadPreview,
    Message,
    ModelStatus,
    MoreLike,
    OpenFile,
    Paused,
    Picture,
    PreviewLoaded,
    Quit,
    Record,
    Resized,
    Searched,
    Sized,
    Suspended,
    TUIState,
    Typed,
    Unservable,
    decode_preview,
    paint,
    picture,
    process_event,
    row_from_result,
)
from mambomeme.tui_images import (
    CELL_PX,
    LateReplies,
    ask_terminal,
    at,
    cell_pixels,
    chosen,
    erase,
    fit,
    from_environment,
    iterm,
    kitty,
    kitty_delete,
    png,
    sixel,
)

# -- The shell: owns the terminal, performs effects --------------------------------------------


@dataclass
class _Envelope:
    event: Any


@dataclass
class _Failed:
    error: Exception


class _Searches:
    """The search thread: runs the newest search asked, on its own connection to the library (an
    apsw connection must not be used by two threads at once, and the main thread keeps its own
    for previews and events), and posts each answer back as an event. A search asked while
    another runs replaces any that waits: keys are never blocked and stale searches never run."""

    def __init__(self, run: Any, post: Any) -> None:
        self._run, self._post = run, post
        self._cv = threading.Condition()
        self._job: DoSearch | None = None
        self._closed = False
        self._thread = threading.Thread(target=self._loop, name="mambo-search", daemon=True)
        self._thread.start()

    def ask(self, job: DoSearch) -> None:
        with self._cv:
            self._job = job
            self._cv.notify()

    def close(self) -> None:
        with self._cv:
            self._closed = True
            self._cv.notify()

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)

    def running(self) -> bool:
        return self._thread.is_alive()

    def _loop(self) -> None:
        while True:
            with self._cv:
                while self._job is None and not self._closed:
                    self._cv.wait()
                if self._closed:
                    return
                job, self._job = self._job, None
            try:
                answer: Any = self._run(job)
            except Exception as e:  # a bug: raised again on the main thread, where it surfaces
                answer = _Failed(e)
            with contextlib.suppress(Exception):  # the screen may be gone already
                self._post(event=answer)


class _Pause:
    """One thread that posts Paused(gen) once no key has changed the query for TUI_LIVE_PAUSE_S
    (a key costs a lock and a notify, not a timer thread: a paste is dozens of keys at once)."""

    def __init__(self, post: Any) -> None:
        self._post = post
        self._cv = threading.Condition()
        self._gen: int | None = None
        self._due = 0.0
        self._closed = False
        threading.Thread(target=self._loop, name="mambo-pause", daemon=True).start()

    def poke(self, gen: int) -> None:
        with self._cv:
            self._gen, self._due = gen, time.monotonic() + TUI_LIVE_PAUSE_S
            self._cv.notify()

    def close(self) -> None:
        with self._cv:
            self._closed = True
            self._cv.notify()

    def _loop(self) -> None:
        while True:
            with self._cv:
                while not self._closed and (self._gen is None or time.monotonic() < self._due):
                    self._cv.wait(None if self._gen is None else max(0.0, self._due - time.monotonic()))
                if self._closed:
                    return
                gen, self._gen = self._gen, None
            with contextlib.suppress(Exception):  # the screen may be gone already
                self._post(event=Paused(gen))


class _EncodeAhead:
    """The query's encoding, computed while the user types: the TUI's embedder. Each change of the
    query line (asked once the keys already read are handled) is planned here, on this thread's own
    connection, and its dense text encoded, newest change first; a search asking for that text then
    finds its vector ready (or waits for the encoding already under way, never running it twice)
    instead of spending the model's ~4.5 ms after the submit. Only the encoding is kept, of one text,
    made since the query line last changed: every search, a submit too, still plans the query and
    runs both routes, fusion and the empty rule afresh (the PTY protocol: no result caching). Same
    call on the same text, same vector: a search's ranking is what it would be without this
    (tests/test_tui.py)."""

    def __init__(self, embedder: Any, open_db: Any, plan: Any) -> None:
        self.embedder, self._open_db, self._plan = embedder, open_db, plan
        self._cv = threading.Condition()
        self._query: str | None = None  # the newest query line asked for, not yet planned
        self._running: set[str] = set()  # texts being encoded now (here or by a search)
        self._done: tuple[str, Any] | None = None  # (text, its vector): the latest encoded
        self._gen = 0  # changes of the query line asked: an encoding begun before one is not kept
        self._closed = False
        self.hits = 0  # searches that found their text encoded or under way (tests, diagnostics)
        self._thread = threading.Thread(target=self._loop, name="mambo-encode-ahead", daemon=True)
        self._thread.start()

    def ask(self, query: str) -> None:
        """The query line changed: encode it. What was encoded before is forgotten, so a search
        only ever uses an encoding made after the last change of the query line (the same query
        typed again is encoded again)."""
        with self._cv:
            self._query, self._done, self._gen = query, None, self._gen + 1
            self._cv.notify_all()

    def close(self, timeout: float = 2.0) -> None:
        """Stop, letting an encoding under way finish: a process that exits while onnxruntime runs in
        another thread may abort in its C++ destructors (see run)."""
        with self._cv:
            self._closed = True
            self._cv.notify_all()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def encode(self, texts: list[str], *, ahead: bool = False) -> Any:
        """The embedder's encode: one text already encoded (or being encoded) is not encoded again."""
        if len(texts) != 1:
            return self.embedder.encode(texts)
        text = texts[0]
        with self._cv:
            while text in self._running:
                self._cv.wait()
            if self._done is not None and self._done[0] == text:
                self.hits += not ahead
                return self._done[1].copy()
            self._running.add(text)
            gen = self._gen
        try:
            vec = self.embedder.encode([text])
        finally:
            with self._cv:
                self._running.discard(text)
                self._cv.notify_all()
        with self._cv:
            if gen == self._gen:
                self._done = (text, vec)
        return vec.copy()

    def _loop(self) -> None:
        db = None
        try:
            while True:
                with self._cv:
                    while self._query is None and not self._closed:
                        self._cv.wait()
                    if self._closed:
                        return
                    query, self._query = self._query, None
                if not query.strip():
                    continue
                with contextlib.suppress(Exception):  # only a head start: the search encodes what it needs
                    db = db or self._open_db()
                    plan = self._plan(db, query)
                    if plan.tokens:
                        self.encode([plan.dense_query], ahead=True)
        finally:
            if db is not None:
                with contextlib.suppress(Exception):
                    db.close()


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
                with contextlib.suppress(OSError):  # library warnings: shown, but never as escapes
                    sys.stderr.write(clean_text(text, keep_newlines=True))
                    sys.stderr.flush()


@functools.cache
def _window_class() -> type:
    """curtsies' FullscreenWindow, drawing each frame with one write. Its render_to_terminal writes
    and flushes every changed line and cursor move apart (~50 writes a frame here): the terminal
    (and the PTY harness) saw a frame arrive in pieces, the query line first, and the main thread
    spent ~0.8 ms a frame in write calls (cProfile, 300 PTY searches)."""
    from curtsies import FullscreenWindow

    class Window(FullscreenWindow):
        _frame: list[str] | None = None
        rewritten: frozenset[int] = frozenset()  # the rows the last frame wrote (a picture in them is gone)

        def write(self, msg: str) -> None:
            if self._frame is None:
                super().write(msg)
            else:
                self._frame.append(msg)

        def render_to_terminal(self, array: Any, cursor_pos: tuple[int, int] = (0, 0)) -> None:
            last = self._last_lines_by_row
            self.rewritten = frozenset(i for i, line in enumerate(array) if line != last.get(i))
            self._frame = []
            try:
                super().render_to_terminal(array, cursor_pos)
            finally:
                frame, self._frame = "".join(self._frame), None
                if frame:
                    super().write(frame)

    return Window


def _without_no_color(window: type, fout: Any) -> Any:
    """The window, made while NO_COLOR is out of the environment: blessed reads NO_COLOR as "no
    terminal capabilities at all", so the screen would neither enter nor leave the alternate screen
    nor hide its cursor. The screen's own colour switch (TUIState.color) honours NO_COLOR."""
    saved = os.environ.pop("NO_COLOR", None)
    try:
        return window(fout)
    finally:
        if saved is not None:
            os.environ["NO_COLOR"] = saved


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


def _ids(effect: OpenFile | CopyPath | Choose) -> tuple[int, ...]:
    """The memes an effect shows outside the screen (printed, opened, copied)."""
    if isinstance(effect, Choose):
        return effect.item_ids
    return () if effect.item_id is None else (effect.item_id,)


@contextlib.contextmanager
def _bracketed_paste(win: Any):
    """Bracketed paste while the screen is ours: a paste is read as text (tui._paste_key)."""
    win.write(PASTE_ON)
    try:
        yield
    finally:
        win.write(PASTE_OFF)


def _open_terminal() -> tuple[Any, Any]:
    """The terminal to draw on: /dev/tty, so stdout stays free for the chosen path."""
    try:
        fin = open("/dev/tty", encoding="utf-8")  # closed by the shell
        fout = open("/dev/tty", "w", encoding="utf-8")
        return fin, fout
    except OSError:
        if sys.stdin.isatty() and sys.stdout.isatty():
            return sys.stdin, sys.stdout
        raise MamboError(
            "the search screen needs a terminal; give a QUERY to print its results "
            "(`mambo search cat`), or pipe queries in, one a line"
        ) from None


def _raw_keys(fin: Any) -> None:
    """Keys as fzf reads them: Enter (CR) apart from Ctrl-J (NL), and Ctrl-S / Ctrl-Q keys rather
    than flow control that freezes the screen (IXON). Ctrl-C, Ctrl-Z and Ctrl-\\ are keys too, not
    signals (ISIG), so a paste holding them is text; as keys, Ctrl-C quits and Ctrl-Z suspends.
    curtsies' cbreak mode keeps all three; leaving restores the terminal as it was found (Input
    saves it first)."""
    import termios

    with contextlib.suppress(termios.error):
        attrs = termios.tcgetattr(fin)
        attrs[0] &= ~(termios.ICRNL | termios.IXON)
        attrs[3] &= ~termios.ISIG
        termios.tcsetattr(fin, termios.TCSANOW, attrs)


# How often an idle screen asks whether another process changed the library (`PRAGMA data_version`,
# a few microseconds): a meme made private or unsafe leaves the list within this.
LIBRARY_POLL_S = 0.5
# Bracketed paste on and off (xterm): a paste arrives between ESC[200~ and ESC[201~ (tui.PASTE_START).
PASTE_ON, PASTE_OFF = "\x1b[?2004h", "\x1b[?2004l"

# How long Ctrl-O waits to hear whether the opener failed (xdg-open fails in ~0.1 s; a viewer it
# starts keeps running and is not waited for).
OPENER_WATCH_S = 5.0


class _Shell:
    def __init__(
        self,
        db: DB,
        system: str,
        *,
        limit: int,
        record_events: bool,
        wait_ready: bool,
        query: str = "",
        multi: bool = False,
        null: bool = False,
    ):
        self.db, self.system, self.limit, self.null = db, system, limit, null
        cfg = load_system(db, system)  # an unknown system fails here, before the screen changes
        self.needs_model = needs_model(cfg)
        self.cfg = cfg
        # The dense route's vectors in memory for this session's searches (dense_memory.py),
        # loaded beside the model; until then, and for a library too large, the SQL scan answers.
        self.vectors = InMemoryVectors(db.path) if self.needs_model else None
        setting = None
        with contextlib.suppress(Exception):
            setting = get_setting(db, "interaction_events")
        self.recording = (record_events or setting == "on") and not db.readonly
        self.session = uuid.uuid4().hex
        self.render_t: float | None = None
        self.children: list[subprocess.Popen] = []
        self.post: Any = None
        self.win: Any = None
        # A library an older version embedded (migration 015): its words answer until `mambo add`.
        waiting = waiting_to_embed(db) if self.needs_model else 0
        self.state = TUIState(
            system=system,
            model="loading" if self.needs_model else "unused",
            wait_ready=wait_ready,
            truecolor=os.environ.get("COLORTERM", "").lower() in ("truecolor", "24bit"),
            color=not os.environ.get("NO_COLOR"),  # no-color.org: set and not empty
            message=waiting_note(waiting) if waiting else "",
            query=clean_line(query),
            cursor=len(clean_line(query)),
            multi=multi,
        )
        self.chosen: tuple[str, ...] | None = None
        self.data_version: int | None = None  # the library's, when the list was last asked for
        self.quit = False
        self._records: list[Record] = []
        self.model_ready = False  # set by the loading thread, read by the search thread
        self.ahead: _EncodeAhead | None = None  # set by the loading thread before model_ready
        self._ahead_query: str | None = None
        self.versions: dict[str, int | None] = {}  # system versions, read on the search thread
        self.searches: _Searches | None = None
        self._search_db: DB | None = None
        self._pause: _Pause | None = None
        self.inp: Any = None
        # Pictures (tui_images): as asked ($MAMBO_IMAGES; a wrong value fails before the screen
        # opens), settled when the screen opens; the one on screen, and the terminal's cell size.
        self.images = chosen(os.environ)
        self.shown: Picture | None = None
        self.cell = CELL_PX
        self.late = LateReplies(armed=False)

    # -- background
    def _load_model(self) -> None:
        try:
            embedder = get_embedder()
            embedder.encode(["warm up"])  # the first run allocates: not a user's search
            plan = functools.partial(plan_for, cfg=self.cfg)
            self.ahead = _EncodeAhead(embedder, lambda: DB(self.db.path, create=False, readonly=True), plan)
        except BaseException as e:  # reported on the status line, lexical goes on
            self.post(event=ModelStatus("failed", clean_line(f"{type(e).__name__}: {e}")[:200]))
        else:
            self.model_ready = True
            self.post(event=ModelStatus("ready"))

    # -- effects
    def search(self, job: DoSearch, on_thread: bool = True) -> Searched:
        """A live search on the search thread (see _Searches), with its own connection; a submit
        (Enter, Ctrl-S) and a search keys wait for (DoSearch.now) here on the main thread: a
        hand-over to another thread cost the submit ~5 ms at p50 in the PTY harness (bm25 p50
        10.4 ms vs 4.1 ms of search: the painter and the search thread took turns at the GIL).
        One row more than asked is looked for, to say whether the list has more ("10+"). A nearest
        job (Ctrl-R on a "no match") is the search without its "no match" rule."""
        query, seq, live = job.query, job.seq, job.live
        system, embedder = self.system, None
        if self.needs_model:
            if self.model_ready:
                embedder = self.ahead or get_embedder()
            else:
                system = TUI_LOADING_SYSTEM
        t0 = time.perf_counter()
        import apsw

        try:
            if on_thread and self._search_db is None:
                self._search_db = DB(self.db.path, create=False, readonly=self.db.readonly)
            db = self._search_db if on_thread else self.db
            limit = max(job.limit, self.limit)
            answer = Searcher(db, embedder, vectors=self.vectors).answer(
                query, system, limit + 1, empty_rule=not job.nearest, live=live > 0 and not job.exact
            )
            more, results = len(answer.results) > limit, answer.results[:limit]
            if system not in self.versions:
                self.versions[system] = system_version(db, system)
            version = self.versions[system]
            withheld = self.withheld(db, answer.plan)
        except MamboError as e:
            return Searched(seq, query, (), 0.0, system, None, error=clean_line(e.format_message()), live=live)
        except apsw.Error as e:  # e.g. a lock held too long by an ingest: say so, keep the screen
            return Searched(seq, query, (), 0.0, system, None, error=db_error_message(e, self.db.path), live=live)
        rows = tuple(row_from_result(r, query) for r in results)
        ms = (time.perf_counter() - t0) * 1000
        return Searched(
            seq,
            query,
            rows,
            ms,
            system,
            version,
            live=live,
            withheld=withheld,
            more=more,
            extend=job.extend,
            nearest=job.nearest,
        )

    def more_like(self, job: MoreLike) -> Alike:
        """Ctrl-T: the highlighted meme's copies, template and similar captions (by_image), each
        row's badge its reason; without the model (still loading) the similar captions wait."""
        import apsw

        from mambomeme.by_image import more_like, withheld_note

        t0 = time.perf_counter()
        embedder = (self.ahead or get_embedder()) if self.needs_model and self.model_ready else None
        try:
            searcher = Searcher(self.db, embedder, vectors=self.vectors) if embedder is not None else None
            answer = more_like(self.db, job.row.item_id, self.limit, searcher)
        except MamboError as e:
            return Alike(job.seq, job.row, (), 0.0, error=clean_line(e.format_message()))
        except apsw.Error as e:
            return Alike(job.seq, job.row, (), 0.0, error=db_error_message(e, self.db.path))
        rows = tuple(dataclasses.replace(row_from_result(r, ""), routes=r.details["reason"]) for r in answer.results)
        said = withheld_note(answer.withheld) if answer.withheld else ""
        return Alike(job.seq, job.row, rows, (time.perf_counter() - t0) * 1000, withheld=said)

    @staticmethod
    def withheld(db: DB, plan: QueryPlan) -> str:
        """Every answer says, as the command line does, how many withheld memes hold the words."""
        from mambomeme.safety_review import withheld_matches, withheld_note

        n = withheld_matches(db, plan)
        return withheld_note(n) if n else ""

    def typed(self, gen: int) -> None:
        """The query changed: tell the state when typing has paused for TUI_LIVE_PAUSE_S."""
        if self._pause is None:
            self._pause = _Pause(self.post)
        self._pause.poke(gen)

    def encode_ahead(self) -> None:
        """Once the keys read so far are handled (a paste, or a burst of keys, is one query line),
        start encoding the query line if it changed (see _EncodeAhead)."""
        if self.ahead is not None and self.state.query != self._ahead_query and not self.inp.unprocessed_bytes:
            self._ahead_query = self.state.query
            self.ahead.ask(self.state.query)

    def suspend(self, fin: Any) -> None:
        """Ctrl-Z: give the terminal back as it was (main screen, cursor, cooked mode), stop, and on
        `fg` take it again and redraw everything."""
        import termios

        cbreak = termios.tcgetattr(fin)
        self.forget_picture()
        self.win.write(PASTE_OFF + self.win.t.normal_cursor + self.win.t.exit_fullscreen)
        with contextlib.suppress(termios.error):
            termios.tcsetattr(fin, termios.TCSADRAIN, self.inp.original_stty)
        os.kill(os.getpid(), signal.SIGSTOP)  # continues here on SIGCONT (`fg`)
        with contextlib.suppress(termios.error):
            termios.tcsetattr(fin, termios.TCSANOW, cbreak)
        self.win.write(self.win.t.enter_fullscreen + self.win.t.hide_cursor + self.win.t.clear + PASTE_ON)
        self.win.on_terminal_size_change(self.win.height, self.win.width)

    def load_preview(self, item_id: int) -> PreviewLoaded:
        try:
            row = self.db.q1("preview", {"item_id": item_id})
            return PreviewLoaded(item_id, decode_preview(bytes(row[3])) if row else None)
        except Exception:  # a damaged preview (or a busy library) is "no preview", not a crash
            return PreviewLoaded(item_id, None)

    def open_file(self, path: str, shown: str) -> Message:
        if not Path(path).exists():
            return Message(f"file not found: {shown}")
        opener = viewer()
        self.children = [c for c in self.children if c.poll() is None]  # reap finished openers
        try:
            child = start_viewer(path)
        except (OSError, ValueError) as e:
            return Message(f"cannot open with {clean_line(opener)!r}: {clean_line(str(e))}")
        self.children.append(child)
        threading.Thread(
            target=self._watch_opener, args=(child, opener, shown), name="mambo-opener", daemon=True
        ).start()
        return Message(f"opening: {shown}")

    def _watch_opener(self, child: subprocess.Popen, opener: str, shown: str) -> None:
        """Say whether the opener worked: xdg-open without a handler (or a wrong $MAMBO_OPENER)
        exits non-zero at once; one that keeps running (a viewer) has done its job."""
        try:
            code = child.wait(timeout=OPENER_WATCH_S)
        except subprocess.TimeoutExpired:
            return
        text = (
            f"opened: {shown}"
            if code == 0
            else f"the opener failed (`{clean_line(opener)}` exit {code}): set $MAMBO_OPENER, or Ctrl-Y copies the path"
        )
        with contextlib.suppress(Exception):  # the screen may be gone already
            self.post(event=Message(text))

    def copy(self, path: str) -> None:
        # OSC 52: the terminal puts the text on the clipboard (where it allows it); the status line
        # shows the path too, for terminals that do not.
        self.win.write("\x1b]52;c;" + base64.b64encode(path.encode("utf-8", "surrogateescape")).decode() + "\x07")

    def record(self, r: Record) -> None:
        if not self.recording:
            return
        s = self.state
        ms = 0.0 if r.kind == "render" or self.render_t is None else (time.perf_counter() - self.render_t) * 1000
        import apsw

        # An event that cannot be written (a disk full, a lock held past the busy timeout by an
        # ingest) is dropped: it must never take the search screen down.
        with contextlib.suppress(apsw.Error), self.db.write():
            self.db.q(
                "insert_interaction_event",
                {
                    "session": self.session,
                    "kind": r.kind,
                    "query": r.query,
                    "item_id": r.item_id,
                    "rank": r.rank,
                    "ms_since_render": round(ms, 1),
                    "system": s.used_system or s.system,
                    "system_version": s.used_version,
                    "interface_version": TUI_INTERFACE_VERSION,
                },
            )

    def handle(self, event: Any) -> None:
        """Feed one event through process_event and perform what it asks, following up on the
        events that effects produce."""
        queue = [event]
        while queue and not self.quit:
            self.state, effects = process_event(self.state, queue.pop(0))
            for e in effects:
                if isinstance(e, DoSearch):
                    if e.live and not e.now and self.searches is not None:
                        self.searches.ask(e)
                    else:  # a submit, or keys wait for it: answered here, then drawn once
                        queue.append(self.search(e, on_thread=False))
                elif isinstance(e, MoreLike):
                    queue.append(self.more_like(e))
                elif isinstance(e, Typed):
                    self.typed(e.gen)
                elif isinstance(e, LoadPreview):
                    queue.append(self.load_preview(e.item_id))
                elif isinstance(e, OpenFile | CopyPath | Choose) and (gone := self.unservable(_ids(e))):
                    # made private or unsafe since it was listed: never printed, opened or copied
                    self._records = [r for r in self._records if r.item_id not in gone]
                    queue.append(
                        Unservable(
                            gone,
                            "chosen" if isinstance(e, Choose) else "opened" if isinstance(e, OpenFile) else "copied",
                        )
                    )
                elif isinstance(e, OpenFile):
                    queue.append(self.open_file(e.path, e.shown))
                elif isinstance(e, CopyPath):
                    self.copy(e.path)
                elif isinstance(e, Record):
                    self._records.append(e)
                elif isinstance(e, Choose):
                    self.chosen, self.quit = e.paths, True
                elif isinstance(e, Quit):
                    self.quit = True

    def unservable(self, item_ids: tuple[int, ...]) -> tuple[int, ...]:
        """Which of the memes chosen the library no longer serves (another process made them private,
        withdrawn or unsafe after they were listed). A library that cannot answer serves none."""
        import apsw

        try:
            servable = {int(r[0]) for r in self.db.q("servable_among", {"ids": json.dumps(list(item_ids))})}
        except apsw.Error:
            return tuple(item_ids)
        return tuple(i for i in item_ids if i not in servable)

    def follow_library(self) -> bool:
        """Whether another connection committed to the library since the last look (its data_version
        changes then, never for this connection's own writes): if so, the list's search runs again."""
        import apsw

        try:
            version = self.db.data_version()
        except apsw.Error:  # busy or damaged: the next search says so
            return False
        changed = self.data_version is not None and version != self.data_version
        self.data_version = version
        if changed:
            self.handle(LibraryChanged())
        return changed

    def render(self) -> None:
        h, w = self.win.height, self.win.width
        want = picture(self.state, h, w)
        if self.shown is not None and want != self.shown:
            self.forget_picture()
        self.win.render_to_terminal(paint(self.state, h, w))
        self.show_picture(want)
        for r in self._records:
            if r.kind == "render":
                self.render_t = time.perf_counter()
            self.record(r)
        self._records.clear()

    # -- pictures (tui_images): written after curtsies' frame, which knows nothing of them
    def settle_images(self, fin: Any, fout: Any) -> None:
        """The protocol the screen uses: as forced, else as the environment says, else as the
        terminal answers (keys typed meanwhile are handed to curtsies; a late reply is dropped)."""
        mode = self.images if self.images != "auto" else from_environment(os.environ)
        if mode is None:
            mode, typed, answered = ask_terminal(fin.fileno(), self.win.write)
            self.inp.unprocessed_bytes.extend(typed[i : i + 1] for i in range(len(typed)))
            self.late = LateReplies(armed=not answered)
        self.cell = cell_pixels(fout.fileno())
        self.state = dataclasses.replace(self.state, images=mode)

    def show_picture(self, want: Picture | None) -> None:
        """Draw the picture paint left room for: when it changed, or, for a picture that lives in
        the cells (sixel, iTerm2), when the frame rewrote a line it covers."""
        mode = self.state.images
        if want is None or want.item_id not in self.state.previews:
            return
        row, _, rows, _ = want.rect
        covered = not self.win.rewritten.isdisjoint(range(row, row + rows))
        if want == self.shown and (mode == "kitty" or not covered):
            return
        p = self.state.previews[want.item_id]
        if p is None:
            return
        place = fit(p.width, p.height, want.rect, self.cell)
        if mode == "kitty":
            seq = kitty_delete() + kitty(png(p.width, p.height, p.rgb), place)
        elif mode == "iterm":
            seq = iterm(png(p.width, p.height, p.rgb), place)
        else:
            seq = sixel(p.width, p.height, p.rgb, place)
        self.win.write(at(place, seq))
        self.shown = want

    def forget_picture(self) -> None:
        """Take the picture off the screen (kitty: deleted by id; sixel, iTerm2: its cells blanked)."""
        if self.shown is None:
            return
        with contextlib.suppress(OSError, ValueError):  # a terminal already gone
            self.win.write(kitty_delete() if self.state.images == "kitty" else erase(self.shown.rect))
        self.shown = None

    def run(self) -> int:
        from curtsies import Input
        from curtsies.events import PasteEvent, SigIntEvent

        fin, fout = _open_terminal()
        handlers = {}

        def on_signal(signum: int, frame: Any) -> None:
            raise _Signalled(signum)

        def on_winch(signum: int, frame: Any) -> None:
            if self.post is not None:
                self.post(event=Resized())

        def on_tstp(signum: int, frame: Any) -> None:
            if self.post is not None:
                self.post(event=Suspended())

        code = 130
        try:
            with _stderr_aside(), contextlib.ExitStack() as stack:
                for sig in (signal.SIGTERM, signal.SIGHUP):
                    handlers[sig] = signal.signal(sig, on_signal)
                self.win = _enter_quietly(stack, _without_no_color(_window_class(), fout))
                _enter_quietly(stack, _bracketed_paste(self.win))
                inp = self.inp = _enter_quietly(stack, Input(fin, sigint_event=True))
                _raw_keys(fin)
                self.post = inp.threadsafe_event_trigger(_Envelope)
                handlers[signal.SIGWINCH] = signal.signal(signal.SIGWINCH, on_winch)
                handlers[signal.SIGTSTP] = signal.signal(signal.SIGTSTP, on_tstp)
                self.searches = _Searches(self.search, self.post)
                stack.callback(self.searches.close)
                if self.needs_model:
                    # Not a daemon: a process that exits while onnxruntime builds its session in a
                    # daemon thread aborts in its C++ destructors (exit status 134). Quitting still
                    # leaves the screen at once; the process ends when the load does (< 1 s idle).
                    threading.Thread(target=self._load_model, name="mambo-model", daemon=False).start()
                if self.vectors is not None:
                    self.vectors.start()
                # Asked once the model loads: a terminal that does not answer costs the first frame
                # QUERY_SECONDS, not the model.
                self.settle_images(fin, fout)
                stack.callback(self.forget_picture)  # before the screen is left
                self.follow_library()
                self.handle(Sized(self.win.height, self.win.width))
                if self.state.query.strip():  # --query: the list answers it as if typed
                    self.handle(Paused(self.state.edits))
                self.render()
                while not self.quit:
                    ev = inp.send(LIBRARY_POLL_S)
                    if ev is None:
                        if self.follow_library():
                            self.render()
                        continue
                    if isinstance(ev, (str, PasteEvent)):
                        self.follow_library()  # before choosing: Enter must not pick a meme just made private
                    if isinstance(ev, _Envelope):
                        ev = ev.event
                    if isinstance(ev, str) and not self.late.keep(ev):
                        continue  # the terminal's late answer to the start-up query, not a key
                    if isinstance(ev, PasteEvent):
                        ev.events = [e for e in ev.events if self.late.keep(e)]
                    if isinstance(ev, Resized):
                        self.forget_picture()
                        self.win.write(self.win.t.clear)
                        self.win.on_terminal_size_change(self.win.height, self.win.width)
                        self.cell = cell_pixels(fout.fileno())
                        self.handle(Sized(self.win.height, self.win.width))
                    elif isinstance(ev, Suspended) or (ev == "<Ctrl-z>" and self.state.paste is None):
                        self.suspend(fin)
                    elif isinstance(ev, _Failed):
                        raise ev.error
                    elif isinstance(ev, SigIntEvent):
                        self.handle(Interrupt())
                    elif isinstance(ev, PasteEvent):
                        for e in ev.events:
                            self.handle(e)
                    else:
                        self.handle(ev)
                    if not self.quit:
                        self.follow_library()
                        self.encode_ahead()  # before drawing: the encoding runs while the screen is drawn
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
            if self._pause is not None:
                self._pause.close()
            if self.ahead is not None:
                self.ahead.close()
            if self.searches is not None:
                self.searches.close()
                self.searches.join(timeout=2)
                if self._search_db is not None and not self.searches.running():
                    with contextlib.suppress(Exception):
                        self._search_db.close()
            for sig, old in handlers.items():
                with contextlib.suppress(Exception):
                    signal.signal(sig, old)
            for f in (fin, fout):
                if f not in (sys.stdin, sys.stdout):
                    with contextlib.suppress(Exception):
                        f.close()
            for child in self.children:
                child.poll()
        if self.state.model == "failed":  # the screen's message line is gone: say why where it stays
            with contextlib.suppress(OSError):
                sys.stderr.write(
                    f"mambo: the embedding model failed to load ({self.state.model_detail}); "
                    "the search screen searched by words only\n"
                )
                sys.stderr.flush()
        if self.chosen is not None:  # exact bytes, as `search -l` prints them (path_bytes)
            data = path_bytes(self.chosen, null=self.null, tty=sys.stdout.isatty())
            sys.stdout.flush()
            out = getattr(sys.stdout, "buffer", sys.stdout)
            out.write(data if out is not sys.stdout else data.decode("utf-8", "surrogateescape"))
            out.flush()
        return code


def run_tui(
    db: DB,
    system: str = DEFAULT_SYSTEM,
    *,
    limit: int = 10,
    record_events: bool = False,
    wait_ready: bool = False,
    query: str = "",
    multi: bool = False,
    null: bool = False,
) -> int:
    """The full-screen search, opened with `query` typed in (fzf's --query). Returns the exit
    status: 0 when results were chosen (their paths are printed on stdout, one a line, or each
    ended by NUL with `null`), 130 when the user quit, 128+N after signal N. A chosen path that
    cannot be printed exactly (a newline without `null`) raises MamboError once the screen is gone."""
    return _Shell(
        db, system, limit=limit, record_events=record_events, wait_ready=wait_ready, query=query, multi=multi, null=null
    ).run()
