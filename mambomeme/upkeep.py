"""Library upkeep: status, check (integrity, checksums, consistency of every index) and prune."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mambomeme.library import DB, _file_sha256, clean_line, show_path
from mambomeme.vectors import maintain_vector_index

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
        "roots": [{"name": r[1], "path": r[2], "files": r[3]} for r in db.q("roots")],
        "recent_errors": db.rows("recent_errors", {"limit": 5}),
        "vector_index": (db.rows("vector_index") or [None])[0],
    }


def check_library(db: DB, *, verify_files: bool = True) -> tuple[list[str], list[str]]:
    """(problems, notes). Problems make `mambo check` exit non-zero."""
    problems, notes = [], []
    integrity = [r[0] for r in db.con.execute("PRAGMA integrity_check")]
    if integrity != ["ok"]:
        problems += [f"integrity: {clean_line(x)}" for x in integrity[:10]]
    fk = list(db.con.execute("PRAGMA foreign_key_check"))
    if fk:
        problems.append(f"{len(fk)} broken foreign key reference(s)")
    if not db.readonly:
        try:
            db.con.execute("INSERT INTO items_fts(items_fts) VALUES ('integrity-check')")
        except Exception as e:  # noqa: BLE001 - any FTS failure is a problem to report, not a crash
            problems.append(f"full-text index: {clean_line(e)}")
    for key, n in db.rows("consistency")[0].items():
        if n:
            problems.append(f"{n} {key.replace('_', ' ')}")
    if verify_files:
        missing = 0
        for _fid, _item, _root, root_path, rel, sha in db.q("all_files"):
            p = Path(root_path) / rel
            try:
                actual = _file_sha256(p)
            except FileNotFoundError:
                missing += 1
                continue
            except OSError as e:
                problems.append(f"{show_path(p)}: unreadable ({e.strerror})")
                continue
            if actual != sha:
                problems.append(f"{show_path(p)}: content changed since it was indexed (run `mambo add` on it)")
        if missing:
            notes.append(f"{missing} file(s) not present on this machine (previews still work; "
                         "re-point roots with `mambo roots move` or drop them with `mambo prune`)")
    return problems, notes


def prune(db: DB) -> tuple[int, int, list[str]]:
    """Forget files that are gone, and items left with no file. A root whose folder is missing
    entirely is skipped: that is a moved library, not deleted memes."""
    skipped_roots = sorted({r[1] for r in db.q("roots") if not Path(r[2]).is_dir()})
    gone = [fid for fid, _item, root, root_path, rel, _sha in db.q("all_files")
            if root not in skipped_roots and not (Path(root_path) / rel).exists()]
    before = int(db.scalar("SELECT count(*) FROM items"))
    with db.write():
        for fid in gone:
            db.q("delete_file", {"file_id": fid})
        db.q("delete_orphan_items")
        db.q("refresh_vocabulary")
    maintain_vector_index(db)
    return len(gone), before - int(db.scalar("SELECT count(*) FROM items")), skipped_roots
