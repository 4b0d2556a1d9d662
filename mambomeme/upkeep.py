"""Library upkeep: status, check (integrity, checksums, consistency of every index) and prune."""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mambomeme.dense_index import index_state, maintain_vector_index
from mambomeme.embed import WRITE_BATCH, Embedder, embed_items, items_with_changed_text, waiting_note
from mambomeme.library import DB, SCHEMA_FILE, Q, item_count, list_roots, load_sqlite_vec, root_by_name
from mambomeme.output import MamboError, clean_line, show_path
from mambomeme.sidecars import IMAGE_SUFFIXES, SidecarFinder
from mambomeme.state import apply_item_state, restate, same_readings
from mambomeme.vocabulary import refresh_vocabulary, vocabulary_is_stale

# ─────────────────────────────────────────────────────────────────────────────
# Library upkeep: status, check, prune, roots
# ─────────────────────────────────────────────────────────────────────────────


def library_status(db: DB) -> dict[str, Any]:
    counts = db.rows("status_counts")[0]
    size = db.path.stat().st_size
    wal = Path(str(db.path) + "-wal")
    return {
        "database": str(db.path),
        "schema_version": db.user_version(),
        "bytes": size + (wal.stat().st_size if wal.exists() else 0),
        **counts,
        "safety": {r[0]: r[1] for r in db.q("safety_counts")},
        "templates": {r[0]: r[1] for r in db.q("template_counts")},
        **db.rows("recognised_counts")[0],
        "models": db.rows("models_in_use"),
        "ocr_engines": db.rows("ocr_engines_in_use"),
        "roots": [{"name": r[1], "path": r[2], "files": r[3]} for r in list_roots(db)],
        "recent_errors": db.rows("recent_errors", {"limit": 5}),
        "vector_index": index_state(db),
    }


# `mambo check` reads each indexed file with a time bound: a file on a dying disk or a network
# mount that stopped answering is reported, not waited for. 30 s reads ~1.5 GB on a slow disk, far
# more than any image the ingest accepts (images.MAX_FILE_BYTES).
CHECK_SECONDS_PER_FILE = 30.0


def _hash_regular(path: Path, expected_size: int, deadline_s: float = CHECK_SECONDS_PER_FILE) -> str | None:
    """The SHA-256 of a regular file, read with a deadline; None when its size already says it
    changed. Raises FileNotFoundError, OSError, or TimeoutError. Only regular files are read: a
    FIFO would block `open` and /dev/zero never ends (O_NONBLOCK, then fstat, before reading)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with open(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise IsADirectoryError(0, "not a regular file")
        if st.st_size != expected_size:
            return None
        h = hashlib.sha256()
        t0 = time.monotonic()
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
            if time.monotonic() - t0 > deadline_s:
                raise TimeoutError(0, f"reading took over {deadline_s:.0f} s")
    return h.hexdigest()


def check_library(db: DB, *, verify_files: bool = True) -> tuple[list[str], list[str]]:
    """(problems, notes). Problems make `mambo check` exit non-zero. Every step runs whatever the
    steps before it found: damage is reported as a list, never as an error that stops the check."""
    problems: list[str] = []
    notes: list[str] = []

    def step(what: str, fn: Callable[[], None]) -> None:
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - a damaged library makes any step fail: report, go on
            problems.append(f"{what}: {clean_line(e)}")

    def integrity() -> None:
        found = [r[0] for r in db.q("integrity_check")]
        if found != ["ok"]:
            problems.extend(f"integrity: {clean_line(x)}" for x in found[:10])

    def foreign_keys() -> None:
        fk = db.q("foreign_key_check")
        if fk:
            problems.append(f"{len(fk)} broken foreign key reference(s)")

    def fts() -> None:
        for table, query in (("items_fts", "items_fts_integrity"), ("items_trigram", "items_trigram_integrity")):
            try:
                db.q(query)
            except Exception as e:  # noqa: BLE001 - reported, the next index is still checked
                problems.append(f"full-text index {table}: {clean_line(e)}")

    def consistency() -> None:
        counts = consistency_counts(db)
        # Memes with no vector, no bit vector and no embedding record wait to be embedded (a library
        # from before schema 15, whose all-MiniLM-L6-v2 vectors the migration removed, or a re-embed
        # that was interrupted): every route but the dense one finds them, and `mambo add` embeds them.
        waiting = {"items_without_vector", "items_without_bit_vector", "items_without_embedding_record"}
        n_waiting = counts.get("items_without_vector", 0)
        if n_waiting and all(counts.get(k) == n_waiting for k in waiting):
            notes.append(waiting_note(n_waiting))
            counts = {k: v for k, v in counts.items() if k not in waiting}
        for key, n in counts.items():
            if n:
                problems.append(f"{n} {key.replace('_', ' ')}")

    def vectors() -> None:
        # A flipped byte in a vector page passes integrity_check (the B-tree is intact) but changes
        # what dense search finds: each vector (or a large library's int8 code) is checked against
        # the SHA-256 stored beside it.
        for query, what, since in (("vector_checksums", "vector", 7), ("code_checksums", "int8 code", 20)):
            bad, unchecked = [], 0
            for item_id, want, blob in db.q(query):
                if want is None:
                    unchecked += 1
                elif blob is None or hashlib.sha256(blob).hexdigest() != want:
                    bad.append(item_id)
            if bad:
                problems.append(
                    f"{len(bad)} {what}(s) differ from their stored checksum (items "
                    f"{', '.join(map(str, bad[:10]))}{' ...' if len(bad) > 10 else ''}): the library is "
                    "damaged; restore it from a backup, or remove those items' files and `mambo add` them"
                )
            if unchecked:
                notes.append(f"{unchecked} {what}(s) written before schema {since} have no checksum to verify")
        n = db.q1("bit_vectors_not_from_floats")[0]
        if n:
            problems.append(f"{n} bit vector(s) are not the quantized float vector")

    def embedded_text() -> None:
        stale = items_with_changed_text(db)
        if stale:
            problems.append(
                f"{len(stale)} item(s) changed their text after they were embedded (items "
                f"{', '.join(map(str, stale[:10]))}{' ...' if len(stale) > 10 else ''}): the dense route "
                "misses their new words; `mambo add` on the library's folder embeds them again"
            )

    def state() -> None:
        # A state column changed behind mambo's back (a flipped byte, an edit by another tool) would
        # show a meme its files or decisions withhold: every item's state is derived again, compared
        # and rolled back.
        if db.readonly:
            notes.append("item states not re-derived: the library is open read-only")
            return
        differ = states_not_derived(db)
        if differ:
            problems.append(
                f"{len(differ)} item(s) whose stored safety, rights or privacy is not what their files, "
                f"decisions and signals give (items {', '.join(map(str, differ[:10]))}"
                f"{' ...' if len(differ) > 10 else ''}): `mambo add` on the library's folder repairs it"
            )

    def vocabulary() -> None:
        if vocabulary_is_stale(db):
            problems.append(
                'the vocabulary (typo corrections, "no match") is not the word index\'s: `mambo add` on '
                "the library's folder makes it again"
            )

    for what, fn in (
        ("integrity", integrity),
        ("schema", lambda: problems.extend(schema_differences(db))),
        ("foreign keys", foreign_keys),
        ("consistency", consistency),
        ("vectors", vectors),
        ("embedded text", embedded_text),
        ("item state", state),
        ("vocabulary", vocabulary),
    ):
        step(what, fn)
    if not db.readonly:
        step("full-text index", fts)
    if verify_files:
        step("files", lambda: _check_files(db, problems, notes))
    return problems, notes


def consistency_counts(db: DB) -> dict[str, int]:
    """Each kind of half-written or inconsistent row (upkeep.sql consistency) and how many there are."""
    return db.rows("consistency")[0]


def states_not_derived(db: DB) -> list[int]:
    """The items whose stored state differs from what state.sql apply_item_state derives now from
    their inputs (the rows its UPDATE changes); nothing is changed: it runs in a savepoint rolled
    back."""
    db.con.execute("SAVEPOINT check_state")
    try:
        changed = sorted(int(row[0]) for row in apply_item_state(db, None))
    finally:
        db.con.execute("ROLLBACK TO check_state")
        db.con.execute("RELEASE check_state")
    return changed


def finish_pending(db: DB, model: Callable[[], tuple[Embedder, int]]) -> tuple[int, bool]:
    """Finish what an interrupted write left undone, in batches of their own transactions: the items
    whose text changed after they were embedded are embedded again (the model loaded before the
    write lock is taken), and a stale vocabulary is made again. Returns (items embedded again,
    whether the vocabulary was made again)."""
    stale = items_with_changed_text(db)
    if stale:
        embedder, model_row = model()
        for start in range(0, len(stale), WRITE_BATCH):
            with db.write():
                embed_items(db, stale[start : start + WRITE_BATCH], embedder, model_row)
    refresh = bool(stale) or vocabulary_is_stale(db)
    if refresh:
        with db.write():
            refresh_vocabulary(db)
    return len(stale), refresh


_SQL_TOKEN = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|`[^`]*`|\[[^\]]*\]|--[^\n]*|/\*.*?(?:\*/|$)|\w+|\S", re.S)


def normalise_sql(sql: str | None) -> str:
    """A schema object's SQL with what does not change its meaning taken out: comments, spacing,
    the case of keywords and names, and the quotes around names. String literals stay exact."""
    out = []
    for token in _SQL_TOKEN.findall(sql or ""):
        if token.startswith(("--", "/*")):
            continue
        if token[0] in '"`[':
            token = token[1:-1]
        out.append(token if token.startswith("'") else token.lower())
    return " ".join(out)


def expected_schema() -> dict[str, tuple[str, str]]:
    """name -> (type, normalised SQL) of every table, view, trigger and index that schema.sql makes,
    built now in memory (with sqlite-vec, whose tables make shadow tables of their own)."""
    import apsw

    con = apsw.Connection(":memory:")
    try:
        load_sqlite_vec(con)
        con.execute(SCHEMA_FILE.read_text(encoding="utf-8"))
        return {name.lower(): (kind, normalise_sql(sql)) for kind, name, sql in con.execute(Q["schema_objects"])}
    finally:
        con.close()


def schema_differences(db: DB) -> list[str]:
    """One line for each schema object the library lacks, holds beyond schema.sql, or holds with
    other SQL: a dropped view or trigger passes SQLite's integrity check, yet without hidden_items
    every search fails and without a servable trigger hidden memes' vectors stay searchable."""
    want = expected_schema()
    have = {name.lower(): (kind, normalise_sql(sql)) for kind, name, sql in db.q("schema_objects")}
    backup = "restore the library from a backup"
    out = []
    for name in sorted(want.keys() - have.keys()):
        out.append(f"schema: {want[name][0]} {name} is missing: {backup}")
    for name in sorted(have.keys() - want.keys()):
        kind = have[name][0]
        out.append(
            f"schema: {kind} {name} is not part of the library's schema: unless you made it on purpose, "
            f'drop it (mambo sql --write "DROP {kind.upper()} {name}")'
        )
    for name in sorted(want.keys() & have.keys()):
        if want[name] != have[name]:
            out.append(f"schema: {have[name][0]} {name} differs from the one schema.sql makes: {backup}")
    return out


def _check_files(db: DB, problems: list[str], notes: list[str]) -> None:
    missing = 0
    for _fid, _item, _root, root_path, rel, sha, size in db.q("all_files"):
        p = Path(root_path) / rel
        try:
            actual = _hash_regular(p, size)
        except FileNotFoundError:
            missing += 1
            continue
        except (OSError, TimeoutError) as e:
            problems.append(f"{show_path(p)}: unreadable ({clean_line(e.strerror or e)})")
            continue
        if actual != sha:
            problems.append(f"{show_path(p)}: content changed since it was indexed (run `mambo add` on it)")
    if missing:
        notes.append(
            f"{missing} file(s) not present on this machine (previews still work; "
            "re-point roots with `mambo roots move` or drop them with `mambo prune`)"
        )
    # What each file's metadata said, against its sidecars and manifest lines on disk now: a stored
    # reading changed behind mambo's back (privacy zeroed in the file) is found here.
    finder = SidecarFinder()
    changed = []
    for r in db.rows("file_readings"):
        root = Path(r["root_path"])
        image = root / r["rel_path"]
        if not image.exists():
            continue
        sha, meta, _err = finder.find(image, root)
        stored = (r["metadata"], r["safety"], r["rights"], r["private"], r["stated"])
        if sha == r["sidecar_sha256"].removeprefix("error:") and not same_readings(stored, meta):
            changed.append(image)
    if changed:
        problems.append(
            f"{len(changed)} file(s) whose stored metadata is not what their sidecars or manifest lines "
            f"say ({', '.join(show_path(p) for p in changed[:3])}{' ...' if len(changed) > 3 else ''}): "
            "`mambo add` on the library's folder reads them again"
        )


class PruneRefused(Exception):
    """A prune that looks like an unmounted drive or an emptied folder, not deleted memes."""

    def __init__(self, roots: list[tuple[str, int, int]]):
        super().__init__(roots)
        self.roots = roots  # (root name, files gone, files in it)


def prune(db: DB, *, force: bool = False) -> tuple[int, int, list[str], int]:
    """Forget files that are gone, and items left with no file. A root whose folder is missing
    entirely is skipped: that is a moved library, not deleted memes. A root that would lose more
    than half of its files (every file included) refuses the whole prune unless `force`: an empty
    mount point or a half-synced folder looks the same as deleted memes. Labels of removed items
    are kept by SHA-256 (kept_labels) and come back when the content is indexed again."""
    skipped_roots = sorted({r[1] for r in list_roots(db) if not Path(r[2]).is_dir()})
    files = [
        (fid, root) for fid, _item, root, root_path, rel, _sha, _size in db.q("all_files") if root not in skipped_roots
    ]
    gone = [
        (fid, root)
        for fid, _item, root, root_path, rel, _sha, _size in db.q("all_files")
        if root not in skipped_roots and not (Path(root_path) / rel).exists()
    ]
    per_root: dict[str, list[int]] = {}
    for _fid, root in files:
        per_root.setdefault(root, [0, 0])[1] += 1
    for _fid, root in gone:
        per_root[root][0] += 1
    # Why "more than half": a real clean-up deletes some memes of a folder; a
    # drive that is not mounted, or a folder emptied by a sync client, loses all of them at once.
    risky = [(root, n_gone, n) for root, (n_gone, n) in sorted(per_root.items()) if n_gone and 2 * n_gone > n]
    if risky and not force:
        raise PruneRefused(risky)
    before = item_count(db)
    held = forget_files(db, [fid for fid, _root in gone])
    return len(gone), before - item_count(db), skipped_roots, held


def delete_orphan_items(db: DB) -> None:
    """Delete the items left without any file (their only file changed content or was forgotten)."""
    db.q("delete_orphan_items")


def forget_files(db: DB, file_ids: list[int]) -> int:
    """Forget these files (and the items left without one), in one transaction, as if they were
    never added: states, the vocabulary and the vector index follow. Returns how many memes stay
    private because a forgotten file's metadata said so (upkeep.sql hold_private)."""
    with db.write():
        touched = {int(db.q1("item_of_file", {"file_id": fid})[0]) for fid in file_ids}
        private = db.rows("private_files_of", {"file_ids": json.dumps(file_ids)})
        for fid in file_ids:
            db.q("delete_file", {"file_id": fid})
        delete_orphan_items(db)
        # Privacy is sticky over renames: metadata that said private keeps the content it described
        # private after its file is gone (a sidecar left behind names no file), until the owner says.
        held = 0
        for r in private:
            db.q(
                "hold_private",
                {
                    "sha256": r["sha256"],
                    "source": f"{r['source']} of {r['path']}",
                    "note": f"{r['path']} was private by its metadata and is gone",
                },
            )
            held += db.con.changes()
        # A removed copy may have held its item or its group: every state is computed again.
        restate(db, sorted(touched))
        restate(db, None)
        refresh_vocabulary(db)
    maintain_vector_index(db)
    return held


def raw_integrity(path: Path) -> list[str]:
    """What SQLite's own integrity check says about a library too damaged to open as one (read-only,
    nothing written)."""
    import apsw

    try:
        con = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
        try:
            found = [r[0] for r in con.execute(Q["integrity_check"])]
        finally:
            con.close()
    except apsw.Error as e:
        return [f"integrity: {clean_line(e)}"]
    return [] if found == ["ok"] else [f"integrity: {clean_line(x)}" for x in found[:10]]


# `mambo roots move` looks at this many of the root's files (spread over the root) in the new folder.
ROOT_MOVE_SAMPLE = 50


# ...and looks through at most this many entries of the new folder for image files of its own.
ROOT_MOVE_SCAN = 5000


def _holds_images(folder: Path, limit: int = ROOT_MOVE_SCAN) -> bool:
    seen = 0
    for _dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        for name in filenames:
            if os.path.splitext(name)[1].lower() in IMAGE_SUFFIXES:
                return True
        seen += len(filenames) + len(dirnames)
        if seen > limit:
            break
    return False


def root_matches(db: DB, name: str, new_path: Path) -> tuple[int, int, bool]:
    """(sampled files of root `name` found in `new_path` with the same relative path and size,
    files sampled, whether the folder holds other images). A folder holding different files is not
    where the images were moved; a folder holding no images at all is fine (a database copied to a
    machine without its images still searches, with previews)."""
    rows = db.q("root_files", {"name": name})
    if not rows:
        return 0, 0, False
    step = max(1, len(rows) // ROOT_MOVE_SAMPLE)
    sample = rows[::step][:ROOT_MOVE_SAMPLE]
    present, differ = 0, 0
    for rel, size in sample:
        try:
            st = (new_path / rel).stat()
        except OSError:
            continue
        same = stat.S_ISREG(st.st_mode) and st.st_size == size
        present += same
        differ += not same
    return present, len(sample), bool(differ) or _holds_images(new_path)


def move_root(db: DB, name: str, new_path: Path, *, force: bool = False) -> Path:
    """Point root `name` at `new_path` (its images were moved, or the database was copied); a folder
    that does not hold the root's files is refused unless `force`. Returns the resolved path."""
    if not root_by_name(db, name):
        raise MamboError(f"no root named {clean_line(name)!r}: see `mambo roots list`")
    target = new_path.resolve()
    present, sampled, other_images = root_matches(db, name, target)
    if sampled and 2 * present < sampled and other_images and not force:
        raise MamboError(
            f"{show_path(target)} holds only {present} of {sampled} sampled files of root "
            f"{clean_line(name)!r} (same name and size): is it the right folder? To move anyway, add "
            "--force"
        )
    with db.write():
        db.q("move_root", {"name": name, "path": str(target)})
    return target
