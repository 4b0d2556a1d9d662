"""Finding the files to ingest: the library root of each given path, and the image files under it."""

from __future__ import annotations

import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from mambomeme.images import BadInput
from mambomeme.library import DB, insert_root, list_roots, root_by_name
from mambomeme.output import clean_line
from mambomeme.sidecars import IMAGE_SUFFIXES


@dataclass
class Found:
    """A file to ingest: which root it belongs to and where it is."""

    root_id: int
    path: Path
    rel_path: str
    root: Path | None = None


def find_root(db: DB, path: Path) -> tuple[int, Path]:
    """The library root for `path`: the deepest existing root containing it, else a new root at
    the folder (or a file's parent). Looked up and created in one write transaction, so two
    `mambo add`s of one new folder at the same time agree on one root."""
    with db.write():
        best = None
        for root_id, _name, rpath, _n in list_roots(db):
            rp = Path(rpath)
            if path == rp or rp in path.parents:
                if best is None or len(str(rp)) > len(str(best[1])):
                    best = (int(root_id), rp)
        if best:
            return best
        folder = path if path.is_dir() else path.parent
        base = clean_line(folder.name) or "root"
        name, n = base, 1
        while root_by_name(db, name):
            n += 1
            name = f"{base}-{n}"
        root_id = insert_root(db, name, str(folder))
    return root_id, folder


def utf8_path(path: Path | str) -> bool:
    """Whether a path is valid UTF-8 (Python keeps other bytes as lone surrogates)."""
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def walk(paths: Iterable[Path], on_error: Callable[[Path, BadInput], None]) -> Iterator[Path]:
    """Image files under `paths`, in sorted order. Directory symlinks are followed once each
    (a loop is reported, not followed); unreadable entries are reported and skipped."""
    seen_dirs: set[tuple[int, int]] = set()
    for p in paths:
        yield from _visit(p, True, seen_dirs, on_error)


def _visit(
    p: Path, explicit: bool, seen_dirs: set[tuple[int, int]], on_error: Callable[[Path, BadInput], None]
) -> Iterator[Path]:
    try:
        st = p.stat()
    except OSError as e:
        kind = "symlink-loop" if e.errno == 40 else "unreadable"
        why = "symlink loop" if e.errno == 40 else (e.strerror or str(e))
        on_error(p, BadInput(kind, f"cannot open: {why}"))
        return
    if stat.S_ISDIR(st.st_mode):
        key = (st.st_dev, st.st_ino)
        if key in seen_dirs:
            if p.is_symlink():
                on_error(p, BadInput("symlink-loop", "symlink loop: folder already visited, skipped"))
            return
        seen_dirs.add(key)
        try:
            children = sorted(p.iterdir())
        except OSError as e:
            on_error(p, BadInput("unreadable", f"cannot list folder: {e.strerror}"))
            return
        for child in children:
            if child.name.startswith("."):
                continue
            yield from _visit(child, False, seen_dirs, on_error)
    elif stat.S_ISREG(st.st_mode):
        if p.suffix.lower() in IMAGE_SUFFIXES and not utf8_path(p):
            # The library stores paths as SQLite TEXT (UTF-8): a name in another encoding
            # cannot be stored faithfully, and a lossy copy would not find the file again.
            on_error(p, BadInput("bad-name", "file name is not valid UTF-8: rename the file"))
        elif p.suffix.lower() in IMAGE_SUFFIXES:
            yield p
        elif explicit:
            on_error(p, BadInput("not-image", "not an image file: expected .png, .jpg, .gif or .webp"))
    elif explicit:
        on_error(p, BadInput("not-file", "not a regular file"))
