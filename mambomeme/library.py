"""The library: opening the one SQLite file, migrations, named queries, settings and roots.

Everything else in the package builds on this module and on output.py (what reaches a person), and
it imports no other."""

from __future__ import annotations

import contextlib
import functools
import os
import re
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from mambomeme.output import MamboError, NoLibrary, clean_line, show_path

__version__ = "0.1.0"

# ─────────────────────────────────────────────────────────────────────────────
# Constants and errors
# ─────────────────────────────────────────────────────────────────────────────

# The package's folder (its named-query files sit beside the modules that run them) and the folder
# that holds it: the checkout, or site-packages when pip-installed.
PACKAGE = Path(__file__).resolve().parent
ROOT = PACKAGE.parent


def data_path(repo_rel: str, wheel_rel: str) -> Path:
    """A shipped data file: in the checkout beside mambo.py, under mambo_data/ when pip-installed."""
    repo = ROOT / repo_rel
    return repo if repo.exists() else ROOT / "mambo_data" / wheel_rel


SCHEMA_FILE = data_path("schema.sql", "schema.sql")
MIGRATIONS_DIR = data_path("migrations", "migrations")
FIXTURE_DIR = data_path("benchdata/fixture", "fixture")
SAFETY_CLASSES = ("safe", "sensitive", "unsafe", "critical")
RIGHTS_STATUSES = ("cleared", "unknown", "withdrawn")
SAFETY_POLICY_VERSION = "mambo-safety-v1"
# Tables every MamboMeme library has had since schema 1: a database without them is not one.
MAMBO_TABLES = frozenset({"library_roots", "items", "files", "ingest_runs"})


# ─────────────────────────────────────────────────────────────────────────────
# Database and migrations
# ─────────────────────────────────────────────────────────────────────────────


def load_named_queries(path: Path) -> dict[str, str]:
    queries: dict[str, str] = {}
    name = None
    lines: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        m = re.match(r"--\s*name:\s*(\w+)\s*$", line)
        if m:
            if name:
                queries[name] = "\n".join(lines).strip()
            name, lines = m.group(1), []
        elif name is not None:
            lines.append(line)
    if name:
        queries[name] = "\n".join(lines).strip()
    return queries


def load_query_files(paths: Iterable[Path]) -> dict[str, str]:
    """One namespace for every named-query file: a name defined in two files would silently replace
    the other's statement, so it stops the program instead."""
    queries: dict[str, str] = {}
    owner: dict[str, str] = {}
    for path in paths:
        for name, sql in load_named_queries(path).items():
            if name in queries:
                raise RuntimeError(f"{path.name} redefines the named query {name!r} of {owner[name]}")
            queries[name], owner[name] = sql, path.name
    return queries


QUERY_FILES = sorted([*PACKAGE.glob("*.sql"), *(PACKAGE / "ingest").glob("*.sql"), *(PACKAGE / "lab").glob("*.sql")])
Q = load_query_files(QUERY_FILES)


def migrations() -> list[tuple[int, str, Path]]:
    out = []
    for p in sorted(MIGRATIONS_DIR.glob("[0-9][0-9][0-9]_*.sql")):
        out.append((int(p.name[:3]), p.stem[4:], p))
    return out


SCHEMA_VERSION = max(n for n, _, _ in migrations())


def load_sqlite_vec(con: Any) -> None:
    """Load sqlite-vec into an apsw connection (the vec0 tables need it, the schema's triggers too)."""
    con.enable_load_extension(True)
    con.load_extension(sqlite_vec_path())
    con.enable_load_extension(False)


@functools.cache
def sqlite_vec_path() -> str:
    """The sqlite-vec extension's file, found without importing the package: its __init__ imports
    numpy (~0.1 s), which a lexical search never needs."""
    import importlib.util

    spec = importlib.util.find_spec("sqlite_vec")
    if spec is None or not spec.submodule_search_locations:
        raise MamboError("sqlite-vec is not installed: reinstall mambo (`pip install sqlite-vec`)")
    return os.path.join(next(iter(spec.submodule_search_locations)), "vec0")


# SQLite reads a WAL-mode file through its -shm file: 32 KiB (8 pages of 4 KiB), made by the first
# connection. In a read-only folder or on a full disk it cannot be made, and then no one can write
# the library either (a writer needs the same file): the file alone is the whole library.
SHM_BYTES = 32 * 1024


def _in_wal_mode(path: Path) -> bool:
    """The file's header says WAL (read and write versions 2): reading it needs a -shm file."""
    try:
        with open(path, "rb") as fh:
            return fh.read(20)[18:20] == b"\x02\x02"
    except OSError:
        return False


def read_as_immutable(path: Path) -> str | None:
    """Why the library at `path` must be read as an immutable file ("folder": a read-only folder,
    "full": too little space for the -shm file), or None when SQLite reads it as usual. Read so, it
    takes no lock and makes no file beside it; raises when a -wal file holds changes the file
    alone lacks."""
    if Path(f"{path}-shm").exists() or not _in_wal_mode(path):
        return None
    if not os.access(path.parent, os.W_OK):
        reason = "folder"
    elif hasattr(os, "statvfs"):
        st = os.statvfs(path.parent)
        # root may write into the blocks a file system keeps back; anyone else may not
        blocks = st.f_bfree if getattr(os, "geteuid", lambda: 1)() == 0 else st.f_bavail
        no_inodes = st.f_files > 0 and st.f_favail == 0  # (some file systems report no inode counts)
        if blocks * st.f_frsize >= SHM_BYTES and not no_inodes:
            return None
        reason = "full"
    else:
        return None
    wal = Path(f"{path}-wal")
    if wal.exists() and wal.stat().st_size > 0:
        where = (
            "its folder is read-only: open it once where the folder is writable"
            if reason == "folder"
            else "its disk is full: free some space, then run the same command again"
        )
        raise MamboError(f"{show_path(path)} has changes in {show_path(wal)} not yet folded into it, and {where}")
    return reason


def disk_full_message(path: Path | str | None) -> str:
    where = show_path(path) if path else "the library"
    return (
        f"cannot write to {where}: the disk is full (or the file reached its size limit); free some space, "
        "then run the same command again (everything saved before is intact)"
    )


def tidy_side_files(path: Path) -> None:
    """Remove the -wal and -shm files a read-only connection made and left: SQLite deletes them when
    the last connection closes, but only a connection that may write can. A read-write connection
    that writes nothing does it when it is the last one (else it leaves them to the last)."""
    import apsw

    if not (Path(f"{path}-wal").exists() or Path(f"{path}-shm").exists()):
        return
    if not (os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)):
        return
    with contextlib.suppress(apsw.Error, MamboError):
        if read_as_immutable(path) is not None:
            return
        con = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READWRITE)
        try:
            con.execute(Q["first_read"]).fetchall()  # opens the WAL, so closing folds and removes it
        finally:
            con.close()


def default_db_path() -> Path:
    import platformdirs

    return Path(platformdirs.user_data_dir("mambomeme", appauthor=False)) / "library.sqlite"


def no_library(path: Path, what: str = "run `mambo add FOLDER` first") -> str:
    """ "no library at PATH", what to do, and where `mambo demo` left its library if it did (beside
    the default library, as demo.sqlite): a first search after the demo finds nothing at the
    default path."""
    msg = f"no library at {show_path(path)}: {what}"
    demo = default_db_path().with_name("demo.sqlite")
    if demo.is_file() and demo != path:
        import shlex

        shown = show_path(demo)
        msg += f"; the demo's library is {shown}: search it with `mambo --db {shlex.quote(shown)} search ...`"
    return msg


class DB:
    """One library file: an apsw connection with sqlite-vec loaded and the schema current."""

    def __init__(self, path: Path | str, *, create: bool = True, readonly: bool = False):
        import apsw

        self.path = Path(path)
        where = show_path(self.path)
        if not self.path.exists() and not create:
            raise NoLibrary(no_library(self.path))
        if self.path.exists() and not self.path.is_file():
            kind = "a folder" if self.path.is_dir() else "a device or other special file"
            raise MamboError(
                f"{where} is {kind}, not a library file: give a library file with --db (or "
                "$MAMBO_DB), or a new file name to create one there"
            )
        if not self.path.exists():
            folder = next(p for p in self.path.parents if p.exists())
            if not os.access(folder, os.W_OK | os.X_OK):
                raise MamboError(
                    f"cannot create a library in {show_path(folder)}: the folder is not writable; "
                    "choose a writable folder with --db (or $MAMBO_DB), or make it writable"
                )
        # A file we may not write, or a folder where the WAL and shared-memory files cannot be
        # created (a read-only copy, a mounted backup): open it for reading only.
        if (
            not readonly
            and self.path.exists()
            and not (os.access(self.path, os.W_OK) and os.access(self.path.parent, os.W_OK))
        ):
            readonly = True
        # ...and a WAL-mode file that cannot get its -shm file (that folder, or a full disk) is read
        # as immutable: searching needs no space, and such a file leaves none behind.
        why = read_as_immutable(self.path) if self.path.exists() else None
        self.immutable, self.full_disk = why is not None, why == "full"
        self.readonly = readonly = readonly or self.immutable
        self._reader: tuple[DB, Any] | None = None  # see reader()
        if not readonly:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.con = self._connect(readonly)
            self._migrate()
            if not readonly:
                # Only now, once the file is known to be a mambo library: WAL mode changes the file
                # (its header), and a foreign database must be left exactly as it was.
                self._wal()
                self.con.execute(Q["synchronous_normal"])
        except apsw.NotADBError as e:
            raise MamboError(f"{show_path(self.path)} is not a MamboMeme library (not an SQLite file)") from e
        except apsw.BusyError as e:
            raise MamboError(f"{show_path(self.path)} is locked by another program; try again shortly") from e
        except apsw.CantOpenError as e:
            raise MamboError(
                f"cannot open {show_path(self.path)}: check that it and its folder exist and are readable"
            ) from e

    def _wal(self) -> None:
        """Switch a new library to WAL mode. The switch needs the file to itself: when several
        processes create one library at once, SQLite answers "busy" at once rather than wait (two
        connections each holding a shared lock would deadlock), so try again for up to the busy
        timeout; a library already in WAL mode returns at the first try."""
        import apsw

        deadline = time.monotonic() + 10
        while True:
            try:
                self.con.execute(Q["journal_mode_wal"])
                return
            except apsw.BusyError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def _connect(self, readonly: bool) -> Any:
        import apsw

        if self.immutable:
            # mambo folds the WAL back into the file when a command ends, and read_as_immutable
            # refused a -wal holding changes: the file alone is the whole library.
            import urllib.parse

            uri = "file:" + urllib.parse.quote(str(self.path.resolve())) + "?immutable=1"
            con = apsw.Connection(uri, flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
            if self.full_disk:
                con.execute(Q["temp_in_memory"])  # a large sort must not need the full disk
        else:
            flags = apsw.SQLITE_OPEN_READONLY if readonly else apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE
            con = apsw.Connection(str(self.path), flags=flags)
            if readonly and not os.access(self.path.parent, os.W_OK):
                try:
                    con.execute(Q["first_read"]).fetchall()
                except (apsw.ReadOnlyError, apsw.CantOpenError):
                    # A -shm file in a read-only folder that SQLite cannot use (left by a crash): as
                    # when there is none, the file alone is the library unless a -wal holds changes.
                    con.close()
                    wal = Path(f"{self.path}-wal")
                    if wal.exists() and wal.stat().st_size > 0:
                        raise MamboError(
                            f"{show_path(self.path)} has changes in {show_path(wal)} not yet folded "
                            "into it, and its folder is read-only: open it once where the folder "
                            "is writable"
                        ) from None
                    self.immutable = True
                    return self._connect(readonly)
        # A writer waits up to a minute for another's transaction: an ingest batch embeds its memes
        # inside its transaction (every item is searchable in every route or in none), and with
        # all-mpnet-base-v2 a batch of 16 memes a sidecar describes at length takes ~5 s on one core
        # (10 s was enough for MiniLM; two `mambo add`s of one folder then timed out).
        con.set_busy_timeout(60_000)
        load_sqlite_vec(con)
        con.execute(Q["foreign_keys_on"])
        # No memory map here: vector scans run on the reader connection, which maps the file
        # (see reader); a map on both would count the vectors' pages twice in resident memory.
        return con

    # -- queries
    def q(self, name: str, params: dict[str, Any] | None = None) -> list[tuple]:
        return list(self.con.execute(Q[name], params or {}))

    def q1(self, name: str, params: dict[str, Any] | None = None) -> tuple | None:
        rows = self.q(name, params)
        return rows[0] if rows else None

    def rows(self, name: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        cur = self.con.execute(Q[name], params or {})
        out: list[dict[str, Any]] = []
        cols: list[str] = []
        for row in cur:
            cols = cols or [d[0] for d in cur.getdescription()]  # only readable while rows remain
            out.append(dict(zip(cols, row, strict=True)))
        return out

    def scalar(self, sql: str, params: Any = None) -> Any:
        for row in self.con.execute(sql, params or ()):
            return row[0]
        return None

    def data_version(self) -> int:
        """A number that changes when another connection commits a change to the file (SQLite's
        data_version): what a long-lived reader compares to know it must read again."""
        return int(self.q1("data_version")[0])

    @contextlib.contextmanager
    def write(self) -> Iterator[None]:
        """One IMMEDIATE transaction: takes the write lock up front, so a concurrent writer waits
        (busy timeout) instead of failing half-way."""
        import apsw

        if self.full_disk:  # read as immutable (see __init__): say why nothing can be written
            raise MamboError(disk_full_message(self.path))
        self.con.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            # After SQLITE_FULL or an I/O error SQLite may already have rolled the transaction
            # back; a second ROLLBACK would fail and hide the real error.
            if not self.con.in_transaction:
                raise
            with contextlib.suppress(apsw.Error):
                self.con.execute("ROLLBACK")
            raise
        else:
            self.con.execute("COMMIT")

    # -- schema
    def user_version(self) -> int:
        return int(self.q1("user_version")[0])

    def _refuse_foreign(self) -> None:
        """Open only mambo libraries: a non-empty database without the mambo schema is refused
        before anything is written to it (no tables, no user_version, no WAL switch). The version
        and the tables are read in one statement: read apart, another process creating the library
        between the two reads made a new library look foreign (tables, but version 0)."""
        rows = self.con.execute(Q["version_and_schema_names"])
        found = [(int(v), name) for v, name in rows]
        names = {name for _v, name in found}
        version = found[0][0] if found else 0
        if names and (version == 0 or not MAMBO_TABLES <= names):
            raise MamboError(
                f"{show_path(self.path)} is an SQLite database but not a MamboMeme library; it was "
                "left untouched: choose another file with --db (or $MAMBO_DB)"
            )

    def _migrate(self) -> None:
        self._refuse_foreign()
        version = self.user_version()
        if version > SCHEMA_VERSION:
            raise MamboError(
                f"{show_path(self.path)} was written by a newer MamboMeme (schema {version}, this is "
                f"{SCHEMA_VERSION}): upgrade mambo to open it"
            )
        if version == SCHEMA_VERSION:
            return
        if self.full_disk:
            raise MamboError(
                f"{show_path(self.path)} needs a schema upgrade ({version} -> {SCHEMA_VERSION}) and "
                "its disk is full: free some space, then run the same command again"
            )
        if self.readonly:
            raise MamboError(
                f"{show_path(self.path)} needs a schema upgrade ({version} -> {SCHEMA_VERSION}) but is "
                "read-only: open it once where it is writable"
            )
        with self.write():
            # Looked at again under the write lock: two `mambo add`s creating one new library both
            # saw it empty, and the second must not create the tables a second time.
            self._refuse_foreign()
            version = self.user_version()
            if version == SCHEMA_VERSION:
                return
            empty = self.q1("first_read")[0] == 0
            if empty:
                self.con.execute(SCHEMA_FILE.read_text(encoding="utf-8"))
            else:
                for number, _name, path in migrations():
                    if number > version:
                        self.con.execute(path.read_text(encoding="utf-8"))
                        self.con.execute(f"PRAGMA user_version = {number}")
            if self.user_version() != SCHEMA_VERSION:
                raise MamboError(f"schema files disagree: reached version {self.user_version()}")

    def close(self) -> None:
        """Fold the WAL back into the main file, so the library is ONE file again (copyable)."""
        import apsw

        # Only after writing: a TRUNCATE checkpoint waits (busy timeout) for other writers and
        # blocks new ones meanwhile, so a search ending while `mambo add` runs would stall both.
        # A reader's close still folds a leftover WAL in when it is the last connection (SQLite).
        if self._reader is not None:
            reader, thread = self._reader
            thread.shutdown(wait=True)
            reader.con.close()
            self._reader = None
        if not self.readonly and self.con.total_changes():
            with contextlib.suppress(apsw.Error):
                self.con.execute(Q["fold_wal"])
        self.con.close()
        if self.readonly and not self.immutable:
            tidy_side_files(self.path)

    def reader(self) -> tuple[DB, Any]:
        """The vector scans' own read-only connection to this library and the one thread that uses
        it, made on first use and shared by every Searcher of this DB (one of each, however many
        searches); closed with this one. It maps the whole file (up to 1 GiB): memory-mapped reads
        cut vec0 float32 scans by ~40% (100k vectors: 99 -> 59 ms), and with a 256 MiB map the
        vector chunks of a 100k-item library (~290 MB) past it were read through pread
        (coarse-index scan p50 31 -> 19 ms with all of it mapped). Only this connection maps, so
        the pages count once in resident memory."""
        if self._reader is None:
            from concurrent.futures import ThreadPoolExecutor

            other = DB.__new__(DB)
            other.path, other.readonly, other._reader = self.path, True, None
            other.immutable, other.full_disk = self.immutable, self.full_disk
            other.con = other._connect(True)
            other.con.execute(Q["map_whole_file"])
            self._reader = (other, ThreadPoolExecutor(1, thread_name_prefix="mambo-vectors"))
        return self._reader


# ─────────────────────────────────────────────────────────────────────────────
# Roots, settings and counts: the library's own rows every room reads
# ─────────────────────────────────────────────────────────────────────────────


def list_roots(db: DB) -> list[tuple]:
    """Every root folder: (root_id, name, path, number of files), by name."""
    return db.q("roots")


def root_by_name(db: DB, name: str) -> tuple | None:
    """(root_id, name, path) of the root called `name`, or None."""
    return db.q1("root_by_name", {"name": name})


def insert_root(db: DB, name: str, path: str) -> int:
    """A new root folder's id (call inside db.write())."""
    return int(db.q1("insert_root", {"name": name, "path": path})[0])


def item_count(db: DB) -> int:
    """How many memes (items) the library holds."""
    return int(db.q1("item_count")[0])


def get_setting(db: DB, key: str) -> str | None:
    """A library setting's value, or None when it was never set."""
    row = db.q1("setting", {"key": key})
    return row[0] if row else None


def set_setting(db: DB, key: str, value: str) -> None:
    """Set (or replace) a library setting (call inside db.write())."""
    db.q("set_setting", {"key": key, "value": value})


def db_error_message(e: Exception, path: Path | str | None) -> str:
    """One actionable line for an SQLite failure that reached the command line. Every write is a
    transaction, so a failed one is rolled back whole: what was saved before is intact."""
    import apsw

    where = show_path(path) if path else "the library"
    again = "then run the same command again (everything saved before is intact)"
    if isinstance(e, apsw.FullError):
        return disk_full_message(path)
    if isinstance(e, apsw.IOError):
        return f"cannot write to {where}: input/output error ({clean_line(str(e))}); check the disk, {again}"
    if isinstance(e, apsw.ReadOnlyError):
        return (
            f"{where} is read-only: searching it works, changing it does not; make the file and its "
            "folder writable, or copy it somewhere writable and use --db"
        )
    if isinstance(e, (apsw.BusyError, apsw.LockedError)):
        return f"{where} is busy: another program is writing to it; {again} when it has finished"
    if isinstance(e, apsw.CantOpenError):
        return f"cannot open {where}: check that it and its folder exist and are readable"
    if isinstance(e, (apsw.CorruptError, apsw.NotADBError)):
        return (
            f"{where} is damaged ({clean_line(str(e))}): restore it from a backup; `mambo check` lists what is damaged"
        )
    return f"database error on {where}: {clean_line(str(e))}; `mambo check` lists what is wrong with the library"


def file_sha256(path: Path) -> str:
    import hashlib

    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
