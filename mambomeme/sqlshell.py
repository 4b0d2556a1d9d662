"""`mambo sql`: SQL over the library file with every table working.

The stock `sqlite3` shell and Datasette stop at the vec0 tables ("no such module: vec0"), and this
machine's Python cannot load extensions. Here the connection is apsw's, sqlite-vec is loaded into
it, the library's named queries are at hand (the `mambo_queries` table, `.queries`, `.query NAME`),
and apsw's own shell does the rest. The file is opened read-only unless --write is given; it is
never migrated, and a file that is not a MamboMeme library is refused before anything can change it.
Values are data from images and files: they reach the terminal only through `clean_text`."""

from __future__ import annotations

import contextlib
import csv
import os
import re
import shutil
import sys
import urllib.parse
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

import apsw
import apsw.ext
import apsw.shell
import apsw.unicode
import click

from mambomeme.library import (
    QUERY_FILES,
    SCHEMA_VERSION,
    Q,
    disk_full_message,
    load_named_queries,
    load_sqlite_vec,
    no_library,
    read_as_immutable,
    tidy_side_files,
)
from mambomeme.output import MamboError, NoLibrary, clean_line, clean_text, json_line, show_path

FORMATS = ("table", "json", "csv")
READ_ONLY_HINT = "the library is open read-only: run `mambo sql --write` to change it"

# Comments, whitespace and semicolons: what may follow the one statement of `mambo sql "..."`.
_NOTHING_SQL = re.compile(r"--[^\n]*|/\*.*?(\*/|$)|[\s;]+", re.S)


# ─────────────────────────────────────────────────────────────────────────────
# Opening the file
# ─────────────────────────────────────────────────────────────────────────────


def _connect(path: Path, *, write: bool) -> apsw.Connection:
    """A connection with sqlite-vec loaded. Read-only is SQLite's own SQLITE_OPEN_READONLY: no
    statement, trigger or dot-command can write through it. Never SQLITE_OPEN_CREATE: a missing
    file is an error, not a new empty library. A WAL-mode library that cannot get its -shm file (a
    read-only folder, a full disk) is read as immutable, as library.DB reads it."""
    why = read_as_immutable(path)
    if write and why == "full":
        raise MamboError(disk_full_message(path))
    if why and not write:
        uri = "file:" + urllib.parse.quote(str(path.resolve())) + "?immutable=1"
        con = apsw.Connection(uri, flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
        _immutable.add(con)
    else:
        con = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READWRITE if write else apsw.SQLITE_OPEN_READONLY)
    try:
        con.execute(Q["sql_library_marks"]).fetchall()  # the first read: where a bad file shows
    except apsw.Error as e:
        close(con)
        # A -shm file in a read-only folder that SQLite cannot use (left by a crash): as when there
        # is none, the file alone is the library unless a -wal holds changes.
        wal = Path(f"{path}-wal")
        if (
            write
            or not isinstance(e, (apsw.ReadOnlyError, apsw.CantOpenError))
            or os.access(path.parent, os.W_OK)
            or (wal.exists() and wal.stat().st_size)
        ):
            raise
        con = apsw.Connection(
            "file:" + urllib.parse.quote(str(path.resolve())) + "?immutable=1",
            flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI,
        )
        _immutable.add(con)
    con.set_busy_timeout(10_000)
    load_sqlite_vec(con)
    return con


# The connections read as immutable: they made no side file, so closing them leaves nothing to tidy.
_immutable: weakref.WeakSet[apsw.Connection] = weakref.WeakSet()


def mambo_queries() -> Iterator[tuple[str, str, str]]:
    """The `mambo_queries` table: every named query of mambomeme/*.sql, its file and its SQL."""
    for path in QUERY_FILES:
        for name, sql in load_named_queries(path).items():
            yield name, path.name, sql


mambo_queries.columns = ("name", "file", "sql")  # type: ignore[attr-defined]
mambo_queries.column_access = apsw.ext.VTColumnAccess.By_Index  # type: ignore[attr-defined]


# What `mambo sql --write` may not change: the state columns are computed by one rule from a meme's
# files, decisions and signals (state.sql apply_item_state), so an edit there would be undone by the
# next `add` or trusted until then; each names the command that changes what the rule reads.
_DERIVED = {
    ("items", "private"): "items.private is computed from the meme's files and decisions: use `mambo private ID` "
    "(`--clear` to take it back)",
    ("items", "safety"): "items.safety is computed from the meme's signals, sidecars and decisions: use "
    "`mambo safety set ID CLASS`",
    ("items", "safety_source"): "items.safety_source is computed: use `mambo safety set ID CLASS`",
    ("items", "rights"): "items.rights is computed from the meme's sidecars and manifest lines: edit them, then "
    "run `mambo add`",
    ("items", "stated"): "items.stated is computed from the meme's files: edit their sidecars, then run `mambo add`",
    ("items", "inherited"): "items.inherited is computed from the meme's copies: use `mambo private` or "
    "`mambo safety set`",
}
_READINGS = ("metadata", "safety", "rights", "private", "stated", "sidecar_sha256")
_DECISION_TABLES = {
    "safety_decisions": "safety decisions are made with `mambo safety set ID CLASS` and `mambo safety clear ID`",
    "privacy_decisions": "privacy decisions are made with `mambo private ID` and `mambo private ID --clear`",
    "safety_signals": "safety signals are what the detectors found: `mambo safety recheck` runs them again",
}
_refusals: weakref.WeakKeyDictionary[apsw.Connection, str] = weakref.WeakKeyDictionary()


def _guard(con: apsw.Connection) -> None:
    """Refuse, through SQLite's authorizer, every write that would change what may be shown other
    than by the rule's own inputs, and every new trigger (it would run inside mambo's own writes)."""

    def authorize(op: int, one: str | None, two: str | None, _db: str | None, _trigger: str | None) -> int:
        why = None
        if op == apsw.SQLITE_UPDATE and one is not None:
            why = _DERIVED.get((one, two or ""))
            if one == "files" and two in _READINGS:
                why = f"files.{two} is what the file's sidecar or manifest line says: edit that, then run `mambo add`"
        # (A meme deleted takes its signals with it: SQLite's cascade is authorised as a plain DELETE.)
        if (
            op in (apsw.SQLITE_INSERT, apsw.SQLITE_UPDATE) or op == apsw.SQLITE_DELETE and one != "safety_signals"
        ) and one in _DECISION_TABLES:
            why = _DECISION_TABLES[one]
        if op in (apsw.SQLITE_CREATE_TRIGGER, apsw.SQLITE_CREATE_TEMP_TRIGGER):
            why = "a trigger would run inside mambo's own writes: not in a library"
        if why is None:
            return apsw.SQLITE_OK
        _refusals[con] = why
        return apsw.SQLITE_DENY

    con.authorizer = authorize


def refusal(con: apsw.Connection, error: BaseException) -> str | None:
    """The one-line reason a statement was refused by the guard, or None."""
    return _refusals.pop(con, None) if isinstance(error, apsw.AuthError) else None


def open_for_sql(path: Path, *, write: bool) -> tuple[apsw.Connection, str | None]:
    """The library at `path` for SQL, and a note to show (an older or newer schema) or None.

    The file is first opened read-only and checked: a file that is not a library, or a library
    whose schema this mambo does not write, is refused without having been opened for writing."""
    where = show_path(path)
    if not path.exists():
        raise NoLibrary(no_library(path, "run `mambo add FOLDER` first, or give the library's path with --db"))
    if not path.is_file():
        kind = "a folder" if path.is_dir() else "a device or other special file"
        raise MamboError(f"{where} is {kind}, not a library file: give the library's path with --db")
    con = None
    try:
        con = _connect(path, write=False)
        version, marks = con.execute(Q["sql_library_marks"]).fetchall()[0]
    except apsw.NotADBError as e:
        if con is not None:
            con.close()
        raise MamboError(
            f"{where} is not a MamboMeme library (not an SQLite file): give the library's path with --db"
        ) from e
    except apsw.CantOpenError as e:
        raise MamboError(f"cannot open {where}: check that it and its folder exist and are readable") from e
    if marks < 5 or version < 1:
        con.close()
        raise MamboError(
            f"{where} is an SQLite file but not a MamboMeme library (no mambo schema): left "
            "unchanged; give the library's path with --db"
        )
    note = None
    if version != SCHEMA_VERSION:
        newer = version > SCHEMA_VERSION
        if write:
            con.close()
            raise MamboError(
                f"{where} has schema {version}, this mambo writes schema {SCHEMA_VERSION}: "
                + ("upgrade mambo to change it" if newer else "run `mambo status` once to upgrade it, then --write")
            )
        note = (
            f"{where} has schema {version} ({'newer' if newer else 'older'} than this mambo's "
            f"{SCHEMA_VERSION}); it is shown as it is, not migrated"
        )
    if write:
        con.close()
        if not (os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)):
            raise MamboError(f"{where} is read-only (the file or its folder): make both writable to use --write")
        con = _connect(path, write=True)
        # Foreign keys on, as on every mambo connection: ON DELETE CASCADE keeps an item's rows together.
        con.execute(Q["sql_foreign_keys_on"])
        _guard(con)
    apsw.ext.make_virtual_module(con, "mambo_queries", mambo_queries)
    return con, note


def close(con: apsw.Connection) -> None:
    """Fold the WAL back in after writing, so the library is one file again (as library.DB does);
    after reading, remove the -wal and -shm files the read-only connection made (tidy_side_files)."""
    path, readonly = Path(con.filename), True
    with contextlib.suppress(apsw.Error):
        readonly = con.readonly("main")
        if not readonly and con.total_changes():
            con.execute(Q["sql_checkpoint"]).fetchall()
    immutable = con in _immutable
    con.close()
    if readonly and not immutable and path.is_file():
        tidy_side_files(path)


# ─────────────────────────────────────────────────────────────────────────────
# One statement: `mambo sql "SELECT ..."`
# ─────────────────────────────────────────────────────────────────────────────


def _cell_text(value: str) -> str:
    return clean_text(value, keep_newlines=True)


# ─────────────────────────────────────────────────────────────────────────────
# A table that fits the terminal
# ─────────────────────────────────────────────────────────────────────────────

ELLIPSIS = "…"
# The narrowest column a table gives (two characters and the ellipsis). Rows with more columns than
# fit at that width are shown one value a line, as psql's expanded display (`SELECT * FROM items`
# has 33 columns: 133 characters of borders alone).
MIN_COLUMN = 3
BOXES = {True: ("╭─┬╮", "├─┼┤", "╰─┴╯", "│"), False: ("+-++", "+-++", "+-++", "|")}


def _width(text: str) -> int:
    return max(apsw.unicode.text_width(text), 0)


def _cut(text: str, width: int) -> str:
    """`text` in at most `width` terminal columns: cut at a character boundary, ending in an ellipsis."""
    if _width(text) <= width:
        return text
    return apsw.unicode.text_width_substr(text, max(width - 1, 0))[1] + ELLIPSIS


def _pad(text: str, width: int, *, right: bool = False) -> str:
    fill = " " * (width - _width(text))
    return fill + text if right else text + fill


def _shown(value: Any, *, null: str, quote: bool) -> str:
    """A value as one line of terminal-safe text (a cell's newlines become spaces)."""
    if quote:
        text = apsw.format_sql_value(value)
    elif value is None:
        text = null
    elif isinstance(value, bytes):
        text = f"[ {len(value)} bytes ]"
    else:
        text = str(value)
    return " ".join(_cell_text(text).splitlines())


def _share(natural: list[int], room: int) -> list[int]:
    """Column widths within `room`: narrow columns keep their width, the others share what is left
    equally (each at least MIN_COLUMN, which the caller made sure fits)."""
    if sum(natural) <= room:
        return natural
    widths = list(natural)
    left = room
    order = sorted(range(len(natural)), key=natural.__getitem__)
    for k, i in enumerate(order):
        widths[i] = min(natural[i], left // (len(order) - k))
        left -= widths[i]
    return widths


def fit_table(
    names: list[str], rows: list[Any], width: int, *, null: str = "NULL", quote: bool = False, use_unicode: bool = True
) -> str:
    """Rows as a table at most `width` columns wide, each row on one line, a cell too wide for its
    column cut with an ellipsis (--json and --csv give the exact values)."""
    width = max(width, 20)
    heads = [_shown(n, null=null, quote=False) for n in names]
    cells = [[_shown(v, null=null, quote=quote) for v in row] for row in rows]
    numeric = [bool(rows) and all(isinstance(r[i], (int, float)) for r in rows) for i in range(len(names))]
    room = width - (3 * len(names) + 1)
    if room < MIN_COLUMN * len(names):
        return _records(heads, cells, width, BOXES[use_unicode][3])
    natural = [max([_width(h), 1, *(_width(r[i]) for r in cells)]) for i, h in enumerate(heads)]
    widths = _share(natural, room)
    top, middle, bottom, bar = BOXES[use_unicode]

    def rule(chars: str) -> str:
        return chars[0] + chars[2].join(chars[1] * (w + 2) for w in widths) + chars[3]

    def line(values: list[str], *, header: bool = False) -> str:
        return (
            bar
            + bar.join(
                f" {_pad(_cut(v, w), w, right=numeric[i] and not header)} "
                for i, (v, w) in enumerate(zip(values, widths, strict=True))
            )
            + bar
        )

    out = [rule(top), line(heads, header=True), rule(middle), *(line(r) for r in cells), rule(bottom)]
    return "\n".join(out) + "\n"


def _records(heads: list[str], cells: list[list[str]], width: int, bar: str) -> str:
    """Each row as a block of `column | value` lines, for rows too wide for a table."""
    name_width = min(max(_width(h) for h in heads), width // 3)
    value_width = width - name_width - 3
    out = []
    for n, row in enumerate(cells, 1):
        title = f"-[ row {n} ]"
        out.append(title + "-" * (width - len(title)))
        out += [
            f"{_pad(_cut(h, name_width), name_width)} {bar} {_cut(v, value_width)}"
            for h, v in zip(heads, row, strict=True)
        ]
    return "\n".join(out or [_cut(f" {bar} ".join(heads), width)]) + "\n"


def _plain(value: Any) -> Any:
    """A value for JSON or CSV: blobs (vectors, previews) as hex, as SQLite's hex() writes them."""
    return value.hex().upper() if isinstance(value, bytes) else value


def run_statement(con: apsw.Connection, sql: str, *, write: bool, fmt: str, out: TextIO) -> int:
    """Run exactly one statement and print its rows; the number of rows it changed is returned
    (not counting the index rows its triggers changed)."""
    if not _NOTHING_SQL.sub("", sql):
        raise MamboError("no SQL statement given: give one, or run `mambo sql` alone for the shell")
    try:
        info = apsw.ext.query_info(con, sql)
    except apsw.AuthError as e:
        raise MamboError(f"refused: {refusal(con, e) or clean_line(str(e))}") from e
    except apsw.SQLError as e:
        raise MamboError(f"SQL error: {clean_line(str(e))}") from e
    if info.query_remaining and _NOTHING_SQL.sub("", info.query_remaining):
        raise MamboError("one statement at a time: run the others separately, or pipe them into `mambo sql`")
    if not info.is_readonly and not write:
        raise MamboError(f"refused: this statement would change the library, and {READ_ONLY_HINT}")
    before = con.total_changes()
    try:
        if fmt == "table":
            names = [d[0] for d in info.description or ()]
            rows = con.execute(info.first_query).fetchall()
            if names:
                out.write(fit_table(names, rows, shutil.get_terminal_size((100, 24)).columns))
        else:
            cur = con.execute(info.first_query)
            writer = csv.writer(out, lineterminator="\n") if fmt == "csv" else None
            names: list[str] | None = None
            for row in cur:
                if names is None:
                    names = [d[0] for d in cur.get_description()]  # readable only while rows remain
                    if writer:
                        writer.writerow([_cell_text(n) for n in names])
                if writer:
                    writer.writerow([_cell_text(v) if isinstance(v, str) else _plain(v) for v in row])
                else:
                    # json_line writes control and bidi characters as \u escapes: exact and terminal-safe.
                    out.write(json_line(dict(zip(names, map(_plain, row), strict=True))) + "\n")
    except apsw.ReadOnlyError as e:
        raise MamboError(f"refused: {READ_ONLY_HINT}") from e
    except apsw.AuthError as e:
        raise MamboError(f"refused: {refusal(con, e) or clean_line(str(e))}") from e
    except apsw.Error as e:
        # The file's own troubles (busy, full, damaged) get the command line's one-line messages;
        # anything else is the statement's doing (a constraint, ATTACH of a missing file, ...).
        if isinstance(
            e, (apsw.BusyError, apsw.LockedError, apsw.FullError, apsw.IOError, apsw.CorruptError, apsw.NotADBError)
        ):
            raise
        raise MamboError(f"SQL error: {clean_line(str(e))}") from e
    return con.changes() if con.total_changes() > before else 0


# ─────────────────────────────────────────────────────────────────────────────
# The shell: `mambo sql`
# ─────────────────────────────────────────────────────────────────────────────


class _TerminalSafe:
    """A text stream that lets no escape sequence or control character through (tabs and newlines
    are the shell's own layout). Every output mode of apsw's shell writes through it, so OCR text
    in list, line, csv or any other mode is drawn, never interpreted. `.output FILE` bypasses it:
    a file gets the exact values."""

    def __init__(self, stream: TextIO):
        self._stream = stream

    def write(self, text: str) -> int:
        clean = "\n".join("\t".join(clean_text(part) for part in line.split("\t")) for line in text.split("\n"))
        return self._stream.write(clean)

    def __getattr__(self, name: str) -> Any:  # isatty, fileno, flush, encoding: the real stream's
        return getattr(self._stream, name)


# The plain-named views README.md documents (its "SQL" table; tests/test_sqlshell.py keeps the two
# equal): what `.tables` lists, the ~100 FTS5 shadow, vec0 and benchmark tables only with --all.
DOCUMENTED_VIEWS = (
    "library",
    "item_effective",
    "item_search_text",
    "duplicate_files",
    "servable_items",
    "hidden_items",
    "recent_errors",
    "current_systems",
    "current_corpus_version",
    "no_match_audit_status",
    "current_judgement_sets",
    "judgement_pairs",
    "final_judgements",
    "adjudication_queue",
    "runs_needing_rescore",
    "run_judged_results",
    "query_ideal_dcg",
    "query_metrics",
    "slice_metrics",
    "run_diagnostics",
    "run_components",
    "published_scorecard",
)


class LibraryShell(apsw.shell.Shell):
    """apsw's SQLite shell on one library connection, with the library's named queries as dot-commands."""

    def __init__(
        self, con: apsw.Connection, path: Path, *, writable: bool, stdin: TextIO, stdout: TextIO, stderr: TextIO
    ):
        self.errors = 0
        super().__init__(stdin=stdin, stdout=_TerminalSafe(stdout), stderr=_TerminalSafe(stderr), db=con)
        self.writable = writable
        self.library_path = path
        self.command_colour(["off"])  # colour codes would be stripped by _TerminalSafe anyway
        if getattr(self, "box_options", None):
            # Clean each value before the box is measured, so the columns line up.
            self.box_options["string_sanitize"] = _cell_text
        self.prompt, self.moreprompt = "mambo sql> ", "       ..> "
        self.history_file = "~/.mambo_sql_history"

    def output_box(self, column_names: list[str], rows: list[Any]) -> None:
        """box, table and qbox modes: fitted to the terminal's width (or `.mode box --width N`),
        cells cut with an ellipsis (fit_table), where apsw's own formatter fails on wide rows."""
        opts = getattr(self, "box_options", None) or {}
        width = opts.get("text_width") or self._terminal_width(32)
        self.write(
            self.stdout,
            fit_table(
                list(column_names),
                list(rows),
                width,
                null=opts.get("null", "NULL"),
                quote=bool(opts.get("quote")),
                use_unicode=opts.get("use_unicode", True),
            ),
        )

    output_box.all_at_once = True  # type: ignore[attr-defined]

    def command_queries(self, cmd: list[str]) -> None:
        """queries ?PATTERN?: List the library's named queries (names containing PATTERN)

        Each is a statement mambo itself runs, named in mambomeme/*.sql. Run one with
        `.query NAME` after setting its parameters with `.parameter set NAME VALUE`; read its
        SQL with `SELECT sql FROM mambo_queries WHERE name = 'NAME';`.
        """
        pattern = cmd[0].lower() if cmd else ""
        for name, file, sql in mambo_queries():
            if pattern in name.lower():
                params = sorted(set(re.findall(r"[:$](\w+)", re.sub(r"'[^']*'", "", sql))))
                self.write(self.stdout, f"{name:32} {file:24} {' '.join(':' + p for p in params)}\n")

    def command_query(self, cmd: list[str]) -> None:
        """query NAME: Run the library's named query NAME

        Its parameters (:name) come from `.parameter set`, for example:

          .parameter set name 'memes'
          .query root_by_name
        """
        if len(cmd) != 1:
            raise self.Error("give one query name: .query NAME (`.queries` lists them)")
        if cmd[0] not in Q:
            raise self.Error(f"no named query {cmd[0]!r}: `.queries` lists them")
        self.process_sql(Q[cmd[0]], self.bindings)

    def command_tables(self, cmd: list[str]) -> None:
        """tables ?--all? ?PATTERN?: The library's documented views (--all: every table and view)

        Without --all: the views README.md describes, one a line (start with `library`, a meme a
        row). With --all: every table and view, the full-text and vector indexes' own tables too.
        """
        if cmd and cmd[0] == "--all":
            return super().command_tables(cmd[1:])
        pattern = cmd[0].lower() if cmd else ""
        have = {r[0] for r in self.db.execute(Q["sql_views"])}
        for name in DOCUMENTED_VIEWS:
            if name in have and pattern in name:
                self.write(self.stdout, name + "\n")
        total = self.db.execute(Q["sql_tables_and_views"]).fetchone()[0]
        self.write(self.stdout, f"(.tables --all lists all {total} tables and views)\n")

    def command_open(self, cmd: list[str]) -> None:
        """open FILE: Not here: `mambo sql` works on its one library

        apsw's .open would reopen a file read-write (and `.open --wipe` deletes one), without
        sqlite-vec: run `mambo --db OTHER.sqlite sql` for another library.
        """
        raise self.Error("`mambo sql` works on one library: run `mambo --db OTHER.sqlite sql` to open another")

    def handle_exception(self) -> None:
        error = sys.exc_info()[1]
        if not isinstance(error, SystemExit):
            self.errors += 1
        if isinstance(error, apsw.ReadOnlyError) and not self.writable:
            # "attempt to write a readonly database" does not say what to do.
            self.write(self.stderr, f"refused: {READ_ONLY_HINT}\n")
            error._handle_exception_saw_this = True  # type: ignore[union-attr]
        elif isinstance(error, apsw.AuthError) and (why := refusal(self.db, error)):
            self.write(self.stderr, f"refused: {why}\n")
            error._handle_exception_saw_this = True  # type: ignore[union-attr]
        super().handle_exception()

    def intro(self, note: str | None) -> str:
        import sqlite_vec

        mode = "read-write" if self.writable else "read-only"
        lines = [
            f"MamboMeme library {show_path(self.library_path)} ({mode}), SQLite {apsw.sqlite_lib_version()}, "
            f"sqlite-vec {sqlite_vec.__version__}",
            "Start with the library view, a meme a row: SELECT * FROM library LIMIT 5;",
            "views: .tables (.tables --all: everything); named queries: .queries, .query NAME, or "
            "SELECT * FROM mambo_queries; help: .help",
        ]
        return "\n".join(([note] if note else []) + lines) + "\n"


def run_shell(con: apsw.Connection, path: Path, *, writable: bool, note: str | None) -> int:
    """The interactive shell (statements piped on stdin are run in turn); the exit status."""
    shell = LibraryShell(con, path, writable=writable, stdin=sys.stdin, stdout=sys.stdout, stderr=sys.stderr)
    if note and not shell.interactive:
        click.echo(f"mambo: {note}", err=True)
    shell.cmdloop(intro=shell.intro(note))
    # A script with a failed statement exits non-zero, so a pipeline notices: 2, as every mambo error.
    return 2 if shell.errors and not shell.interactive else 0
