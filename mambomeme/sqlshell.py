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
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

import apsw
import apsw.ext
import apsw.shell
import click

from mambomeme.library import (
    QUERY_FILES,
    SCHEMA_VERSION,
    MamboError,
    Q,
    clean_line,
    clean_text,
    json_line,
    load_named_queries,
    show_path,
)

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
    file is an error, not a new empty library."""
    import sqlite_vec

    flags = apsw.SQLITE_OPEN_READWRITE if write else apsw.SQLITE_OPEN_READONLY
    con = apsw.Connection(str(path), flags=flags)
    try:
        con.execute(Q["sql_library_marks"]).fetchall()  # the first read: where a bad file shows
    except apsw.NotADBError:
        con.close()
        raise
    except (apsw.ReadOnlyError, apsw.CantOpenError):
        # A WAL-mode library in a folder we cannot write (a mounted backup): SQLite cannot create
        # the -shm file it reads through. As in library.DB: with no -wal beside it, the file alone
        # is the whole library and nothing can change it, so it is read as immutable.
        con.close()
        wal = Path(f"{path}-wal")
        if write or os.access(path.parent, os.W_OK) or (wal.exists() and wal.stat().st_size):
            raise
        uri = "file:" + urllib.parse.quote(str(path.resolve())) + "?immutable=1"
        con = apsw.Connection(uri, flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
    con.set_busy_timeout(10_000)
    con.enable_load_extension(True)
    con.load_extension(sqlite_vec.loadable_path())
    con.enable_load_extension(False)
    return con


def mambo_queries() -> Iterator[tuple[str, str, str]]:
    """The `mambo_queries` table: every named query of mambomeme/*.sql, its file and its SQL."""
    for path in QUERY_FILES:
        for name, sql in load_named_queries(path).items():
            yield name, path.name, sql


mambo_queries.columns = ("name", "file", "sql")  # type: ignore[attr-defined]
mambo_queries.column_access = apsw.ext.VTColumnAccess.By_Index  # type: ignore[attr-defined]


def open_for_sql(path: Path, *, write: bool) -> tuple[apsw.Connection, str | None]:
    """The library at `path` for SQL, and a note to show (an older or newer schema) or None.

    The file is first opened read-only and checked: a file that is not a library, or a library
    whose schema this mambo does not write, is refused without having been opened for writing."""
    where = show_path(path)
    if not path.exists():
        raise MamboError(f"no library at {where}: run `mambo add FOLDER` first, or give the library's path with --db")
    if path.is_dir():
        raise MamboError(f"{where} is a folder, not a library file: give the library's path with --db")
    con = None
    try:
        con = _connect(path, write=False)
        version, marks = con.execute(Q["sql_library_marks"]).fetchall()[0]
    except apsw.NotADBError as e:
        if con is not None:
            con.close()
        raise MamboError(f"{where} is not a MamboMeme library (not an SQLite file): give the library's path "
                         "with --db") from e
    except apsw.CantOpenError as e:
        raise MamboError(f"cannot open {where}: check that it and its folder exist and are readable") from e
    if marks < 5 or version < 1:
        con.close()
        raise MamboError(f"{where} is an SQLite file but not a MamboMeme library (no mambo schema): left "
                         "unchanged; give the library's path with --db")
    note = None
    if version != SCHEMA_VERSION:
        newer = version > SCHEMA_VERSION
        if write:
            con.close()
            raise MamboError(
                f"{where} has schema {version}, this mambo writes schema {SCHEMA_VERSION}: "
                + ("upgrade mambo to change it" if newer else "run `mambo status` once to upgrade it, then --write"))
        note = (f"{where} has schema {version} ({'newer' if newer else 'older'} than this mambo's "
                f"{SCHEMA_VERSION}); it is shown as it is, not migrated")
    if write:
        con.close()
        if not (os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)):
            raise MamboError(f"{where} is read-only (the file or its folder): make both writable to use --write")
        con = _connect(path, write=True)
        # Foreign keys on, as on every mambo connection: ON DELETE CASCADE keeps an item's rows together.
        con.execute(Q["sql_foreign_keys_on"])
    apsw.ext.make_virtual_module(con, "mambo_queries", mambo_queries)
    return con, note


def close(con: apsw.Connection) -> None:
    """Fold the WAL back in after writing, so the library is one file again (as library.DB does)."""
    with contextlib.suppress(apsw.Error):
        if not con.readonly("main") and con.total_changes():
            con.execute(Q["sql_checkpoint"]).fetchall()
    con.close()


# ─────────────────────────────────────────────────────────────────────────────
# One statement: `mambo sql "SELECT ..."`
# ─────────────────────────────────────────────────────────────────────────────


def _cell_text(value: str) -> str:
    return clean_text(value, keep_newlines=True)


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
    except apsw.SQLError as e:
        raise MamboError(f"SQL error: {clean_line(str(e))}") from e
    if info.query_remaining and _NOTHING_SQL.sub("", info.query_remaining):
        raise MamboError("one statement at a time: run the others separately, or pipe them into `mambo sql`")
    if not info.is_readonly and not write:
        raise MamboError(f"refused: this statement would change the library, and {READ_ONLY_HINT}")
    before = con.total_changes()
    try:
        if fmt == "table":
            width = shutil.get_terminal_size((100, 24)).columns
            out.write(apsw.ext.format_query_table(con, info.first_query, string_sanitize=_cell_text,
                                                  null="NULL", text_width=max(width, 40)))
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
    except apsw.Error as e:
        # The file's own troubles (busy, full, damaged) get the command line's one-line messages;
        # anything else is the statement's doing (a constraint, ATTACH of a missing file, ...).
        if isinstance(e, (apsw.BusyError, apsw.LockedError, apsw.FullError, apsw.IOError, apsw.CorruptError,
                          apsw.NotADBError)):
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


class LibraryShell(apsw.shell.Shell):
    """apsw's SQLite shell on one library connection, with the library's named queries as dot-commands."""

    def __init__(self, con: apsw.Connection, path: Path, *, writable: bool, stdin: TextIO, stdout: TextIO,
                 stderr: TextIO):
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
        super().handle_exception()

    def intro(self, note: str | None) -> str:
        import sqlite_vec

        mode = "read-write" if self.writable else "read-only"
        lines = [f"MamboMeme library {show_path(self.library_path)} ({mode}), SQLite {apsw.sqlite_lib_version()}, "
                 f"sqlite-vec {sqlite_vec.__version__}",
                 "Views: .tables; named queries: .queries, .query NAME, or SELECT * FROM mambo_queries; "
                 "help: .help"]
        return "\n".join(([note] if note else []) + lines) + "\n"


def run_shell(con: apsw.Connection, path: Path, *, writable: bool, note: str | None) -> int:
    """The interactive shell (statements piped on stdin are run in turn); the exit status."""
    shell = LibraryShell(con, path, writable=writable, stdin=sys.stdin, stdout=sys.stdout, stderr=sys.stderr)
    if note and not shell.interactive:
        click.echo(f"mambo: {note}", err=True)
    shell.cmdloop(intro=shell.intro(note))
    # As the sqlite3 shell: a script with a failed statement exits 1, so a pipeline notices.
    return 1 if shell.errors and not shell.interactive else 0
