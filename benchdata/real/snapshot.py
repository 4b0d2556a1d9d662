"""Reading the ImgFlip575K snapshot (schesa/ImgFlip575K_Dataset on GitHub) at run time.

Nothing read here is ever written to the repository: the builder, the query maker and the no-match
audit all take the snapshot's path (a bare git directory or a checkout) and keep captions in memory.

The split is fixed: a caption is development material only when the first hex digit of
SHA-256(post id) is 0-7; the post id is the last path segment of its `post` URL. `dev_entries`
drops every other caption on its post id alone, before its `boxes` are touched, so the captions
kept for hidden sets are never rendered, counted or looked at.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEV_DIGITS = frozenset("01234567")
ENV_VAR = "MAMBO_IMGFLIP"
HERE = Path(__file__).resolve().parent
PINS = HERE / "pins.json"


class SnapshotError(Exception):
    """A one-line, user-facing reason the snapshot cannot be used."""


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def post_id(post_url: str) -> str:
    return post_url.rstrip("/").rsplit("/", 1)[-1]


def is_dev(pid: str) -> bool:
    return sha256_hex(pid.encode("ascii", "replace"))[0] in DEV_DIGITS


@dataclass
class Snapshot:
    """A bare git directory (read with `git show COMMIT:path`) or a plain checkout."""

    path: Path
    git: bool
    commit: str | None

    def read(self, rel: str) -> bytes | None:
        """The file's bytes, or None when this copy does not hold it (a partial mirror)."""
        if not self.git:
            p = self.path / rel
            return p.read_bytes() if p.is_file() else None
        r = subprocess.run(
            ["git", "--git-dir", str(self.path), "show", f"{self.commit}:{rel}"], capture_output=True, check=False
        )
        return r.stdout if r.returncode == 0 else None

    def list(self, folder: str) -> list[str]:
        if not self.git:
            base = self.path / folder
            return sorted(f"{folder}/{p.name}" for p in base.iterdir() if p.is_file()) if base.is_dir() else []
        r = subprocess.run(
            ["git", "--git-dir", str(self.path), "ls-tree", "--name-only", str(self.commit), folder + "/"],
            capture_output=True,
            text=True,
            check=False,
        )
        return sorted(r.stdout.split())


def open_snapshot(arg: str | None) -> Snapshot:
    raw = arg or os.environ.get(ENV_VAR)
    if not raw:
        raise SnapshotError(f"give the ImgFlip575K snapshot path (argument or ${ENV_VAR})")
    path = Path(raw)
    if (path / "dataset" / "templates").is_dir():
        commit = None
        if (path / ".git").exists():
            r = subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True)
            commit = r.stdout.strip() or None
        return Snapshot(path, False, commit)
    r = subprocess.run(["git", "--git-dir", str(path), "rev-parse", "HEAD"], capture_output=True, text=True)
    if r.returncode != 0:
        raise SnapshotError(f"{path} is neither a checkout of the ImgFlip575K snapshot nor its git directory")
    return Snapshot(path, True, r.stdout.strip())


def load_pins() -> dict[str, Any]:
    return json.loads(PINS.read_text(encoding="utf-8")) if PINS.is_file() else {}


def check_pins(snap: Snapshot, blobs: dict[str, bytes], pins: dict[str, Any], allow_other: bool) -> list[str]:
    """Differences between the files read from this snapshot and the pinned ones (empty when identical)."""
    want = pins.get("snapshot", {})
    problems = []
    if want.get("commit") and snap.commit and snap.commit != want["commit"]:
        problems.append(f"snapshot commit {snap.commit[:12]} differs from the pinned {want['commit'][:12]}")
    for rel, sha in sorted(want.get("files", {}).items()):
        data = blobs.get(rel)
        got = sha256_hex(data) if data is not None else None
        if got != sha:
            problems.append(f"{rel}: " + ("missing" if got is None else f"SHA-256 {got[:12]}, pinned {sha[:12]}"))
    if problems and not allow_other:
        raise SnapshotError(
            f"not the pinned snapshot ({len(problems)} difference(s), e.g. {problems[0]}); "
            "pass --allow-other-snapshot to build from it anyway"
        )
    return problems


# Curly quotes and dashes are how phones type ' " and -; everything else outside printable ASCII
# (emoji, other scripts) is outside the caption font, so such captions are not used.
_FOLD = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u2013": "-",
        "\u2014": "-",
        "\u2026": "...",
        "\u00a0": " ",
    }
)
_URL = re.compile(r"https?:|www\.|\.(com|net|org|ly|gg)\b|imgflip", re.I)
MAX_CHARS = 200


def clean_boxes(boxes: list[Any]) -> list[str] | None:
    """The caption's boxes as rendered, or None when the caption is not used (empty, a URL,
    longer than MAX_CHARS in all, or characters outside the font)."""
    if not isinstance(boxes, list) or not all(isinstance(b, str) for b in boxes):
        return None
    out = [" ".join(b.translate(_FOLD).split()) for b in boxes]
    total = "".join(out)
    if not total.strip() or len(total) > MAX_CHARS or _URL.search(total):
        return None
    if any(not (32 <= ord(ch) < 127) for ch in total):
        return None
    return out


def template_key(rel: str) -> str:
    return rel.rsplit("/", 1)[-1].rsplit(".", 1)[0]


def dev_entries(data: bytes) -> list[tuple[str, list[Any]]]:
    """(post id, boxes) of the development captions of one caption file, in file order."""
    out = []
    for entry in json.loads(data):
        pid = post_id(str(entry.get("post", "")))
        if not pid or not is_dev(pid):
            continue  # reserved for hidden sets: decided on the post id alone, boxes never read
        out.append((pid, entry.get("boxes")))
    return out


def words(text: str) -> list[str]:
    """Lower-case word tokens (apostrophes dropped: "don't" -> "dont"), as the audits compare them."""
    return re.findall(r"[a-z0-9]+", text.lower().replace("'", ""))
