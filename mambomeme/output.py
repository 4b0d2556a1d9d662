"""What reaches a person or another program: text with its escape sequences removed, paths
escaped for a terminal or as their exact bytes for a pipe, the one-line error a user sees, and a
file handed to the person's viewer."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import unicodedata
from collections.abc import Iterable
from pathlib import Path
from typing import Any


class MamboError(Exception):
    """A one-line, actionable error for the user: the command line prints it and exits 2 (as ripgrep
    does for an error; 1 is "no match")."""

    exit_code = 2

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def format_message(self) -> str:
        return clean_line(self.message)


class NoLibrary(MamboError):
    """The library file does not exist (and the command only reads): exit status 2, as every error."""


# ESC/CSI/OSC sequences and every other control character: text from images, file names and
# sidecars must never reach a terminal with its escape sequences intact.
_ANSI_RE = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)?|[@-Z\\-_])")


def clean_text(text: str, *, keep_newlines: bool = False) -> str:
    """Remove escape sequences and control/format characters (bidi overrides included)."""
    if text.isprintable():  # nothing to remove: control, format, private-use, unassigned and
        return text  # surrogate characters are not printable (nor ESC, tabs, newlines); the common case
    text = _ANSI_RE.sub("", text)
    out = []
    for ch in text:
        if ch == "\n" and keep_newlines:
            out.append(ch)
        elif ch in "\t\n\r":
            out.append(" ")
        elif unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co", "Cn"):
            continue
        else:
            out.append(ch)
    return "".join(out)


def clean_line(text: str) -> str:
    return " ".join(clean_text(str(text)).split())


def json_line(obj: Any) -> str:
    """One line of JSON that is safe on a terminal: readable Unicode kept (not \\u-escaped), but
    control, format (bidi) and surrogate characters written as \\u escapes. JSON escapes only
    C0 controls itself, so a C1 CSI or a right-to-left override in a title would pass through."""
    text = json.dumps(obj, ensure_ascii=False)
    return "".join(
        json.dumps(c)[1:-1] if unicodedata.category(c) in ("Cc", "Cf", "Cs", "Zl", "Zp") else c for c in text
    )


def show_path(path: Path | str) -> str:
    """A path as it may be printed: control characters escaped, never interpreted."""
    s = str(path)
    if s.isprintable():  # the common case: nothing to escape
        return s
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in s)


def path_bytes(paths: Iterable[str], *, null: bool = False, tty: bool = False) -> bytes:
    """Paths printed for other programs (`search -l`, the picker's choice): each path's exact bytes
    and a newline, or NUL with `null` (for `xargs -0`); on a terminal, escaped visibly (show_path),
    as ripgrep does. Removing an escape sequence, or splitting a name at its newline, would print
    the path of another file: a path a newline cannot end is an error, never a different path."""
    out = []
    for p in paths:
        if tty and not null:
            out.append(show_path(p).encode("utf-8", "backslashreplace") + b"\n")
            continue
        if not null and "\n" in p:
            raise MamboError(f"path holds a newline: use -0/--null ({show_path(p)})")
        try:
            out.append(p.encode("utf-8", "surrogateescape") + (b"\0" if null else b"\n"))
        except UnicodeEncodeError:
            raise MamboError(f"path is not valid UTF-8 and cannot be printed exactly: {show_path(p)}") from None
    return b"".join(out)


def viewer() -> str:
    """The command that opens a file for the person: $MAMBO_OPENER, else xdg-open."""
    return os.environ.get("MAMBO_OPENER") or "xdg-open"


def start_viewer(path: str) -> subprocess.Popen:
    """Hand `path` to the viewer, detached (its own session, no stdin or output of ours), so it
    outlives this process and never writes over a screen. Raises OSError when the command cannot
    start and ValueError when $MAMBO_OPENER cannot be split into words."""
    return subprocess.Popen(
        [*shlex.split(viewer()), path],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        close_fds=True,
    )
