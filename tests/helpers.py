"""Helpers the tests share: the real CLI in-process and as a process, the library file, the
fixture's recipe and queries, a benchmark partition over the fixture, and the full-screen app in
a real PTY. Fixtures are in conftest.py; no test module imports another."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pexpect
from click.testing import CliRunner

import mambo
from mambomeme.library import DB

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "benchdata" / "fixture"
IMAGES = FIXTURE / "images"
BENCH = "fx-bench"


def recipe() -> list[dict]:
    return [json.loads(line) for line in (FIXTURE / "recipe.jsonl").read_text().splitlines() if line.strip()]


def invoke(*args: str, input: str | None = None, expect: int | None = 0):
    """Run the real click CLI in-process (models stay loaded between calls)."""
    result = CliRunner().invoke(mambo.cli, [str(a) for a in args], input=input, catch_exceptions=False)
    if expect is not None:
        assert result.exit_code == expect, f"exit {result.exit_code}\n{result.output}"
    return result


def run_process(*args: str, timeout: float = 300, **kw) -> subprocess.CompletedProcess:
    """Run mambo.py as its own process, as a user would."""
    return subprocess.run(
        [sys.executable, str(REPO / "mambo.py"), *map(str, args)], capture_output=True, text=True, timeout=timeout, **kw
    )


def open_db(path: Path) -> DB:
    return DB(path, create=False)


def forget_vectors(path: Path) -> int:
    """Make a library look as an older version's does after migration 015: no embedding of the
    current model (the triggers drop the rest). Returns how many items it holds."""
    db = open_db(path)
    with db.write():
        db.con.execute("DELETE FROM item_embeddings")
        db.con.execute("DELETE FROM item_vectors")
    items = int(db.scalar("SELECT count(*) FROM items"))
    db.close()
    return items


def db_scalar(db_path: Path, sql: str, params: tuple = ()) -> Any:
    """One value read from a library file (opened and closed for it)."""
    db = open_db(db_path)
    try:
        return db.scalar(sql, params)
    finally:
        db.close()


def served(db_path: Path, name: str) -> bool:
    """Whether the file's item is in servable_items: the one definition of what search may show."""
    db = open_db(db_path)
    try:
        return bool(
            db.scalar(
                "SELECT count(*) FROM servable_items s JOIN files f ON f.item_id = s.item_id WHERE f.rel_path = ?",
                (name,),
            )
        )
    finally:
        db.close()


def errors_of(db_path: Path) -> list[tuple[str, str, str]]:
    db = open_db(db_path)
    try:
        return [(Path(p).name, k, m) for p, k, m in db.con.execute("SELECT path, kind, message FROM ingest_errors")]
    finally:
        db.close()


def folder_with(tmp_path: Path, pics: dict[str, str]) -> Path:
    folder = tmp_path / "memes"
    folder.mkdir(exist_ok=True)
    for name, src in pics.items():
        shutil.copy(IMAGES / src, folder / name)
    return folder


# ── Benchmark partitions over the fixture ──


def fixture_queries() -> list[dict]:
    return [json.loads(x) for x in (FIXTURE / "queries.jsonl").read_text().splitlines() if x.strip()]


def write_manifest(images: Path, out: Path) -> str:
    lines = sorted(
        f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {p.relative_to(images).as_posix()}\n"
        for p in images.rglob("*")
        if p.is_file()
    )
    out.write_text("".join(lines))
    return hashlib.sha256(out.read_bytes()).hexdigest()


def write_partition(
    d: Path, images: Path, queries: list[dict], *, partition: str = "dev", version: str = "1", name: str | None = None
) -> Path:
    """A partition in the benchdata/v1/FORMAT.md format over the fixture library, with its manifest."""
    d.mkdir(parents=True, exist_ok=True)
    manifest_sha = write_manifest(images, d / "manifest.sha256")
    path = d / f"{name or partition}.jsonl"
    with path.open("w") as f:
        for q in queries:
            q = dict(q)
            if q["slice"] == "no-match":
                q["audit"] = {
                    "corpus_version": manifest_sha,
                    "method": "fixture audit",
                    "date": "2026-11-30",
                    "checked_by": {"name": "fixture-author", "kind": "person"},
                }
            f.write(json.dumps(q) + "\n")
    path.with_name(path.name.removesuffix(".jsonl") + ".meta.json").write_text(
        json.dumps(
            {
                "benchmark": BENCH,
                "version": version,
                "partition": partition,
                "status": "provisional",
                "corpus_manifest_sha256": manifest_sha,
                "safety_policy": "mambo-safety-v1",
            }
        )
    )
    return path


# ── The full-screen app in a PTY ──

# The shell looks `paint` up in its own module: the exception test replaces it there.
TUI_MODULE = "mambomeme.tui_shell"
ESC = "\x1b"


def app_cmd(db: Path, *flags: str) -> str:
    """The TUI as a shell command line, exactly as a user starts it."""
    argv = [sys.executable, str(REPO / "mambo.py"), "--db", str(db), "search", *flags]
    return shlex.join(argv)


def spawn(script: str, env: dict[str, str] | None = None, timeout: float = 20) -> pexpect.spawn:
    full_env = {
        **os.environ,
        "TERM": "xterm-256color",
        "BLESSED_QUERY_TIMEOUT_SECONDS": "0",
        "PYTHONPATH": str(REPO),
        **(env or {}),
    }
    full_env.pop("COLORTERM", None)
    child = pexpect.spawn(
        "bash", ["-c", script], env=full_env, dimensions=(24, 80), encoding="utf-8", timeout=timeout, cwd=str(REPO)
    )
    child.delaybeforesend = None
    child.logfile_read = io.StringIO()
    return child


def run_app(db: Path, *flags: str, env: dict[str, str] | None = None, timeout: float = 20) -> pexpect.spawn:
    return spawn(f'{app_cmd(db, *flags)}; echo "RC=$?"; stty -a', env=env, timeout=timeout)


def output(child: pexpect.spawn) -> str:
    return child.logfile_read.getvalue()


def search(child: pexpect.spawn, query: str, seq: int) -> str:
    """Type a query, press Ctrl-S (search without choosing), wait for its answer; returns the status line."""
    child.send("\x15" + query)
    # the app's own query line (its drawn cursor follows), not the terminal's echo of keys typed
    # before the app took the terminal: a key sent then would arrive as the terminal mapped it
    child.expect(re.escape(query) + r"(\x1b\[[\d;]*m)*\x1b\[7m")
    child.send("\x13")
    child.expect(rf"\x1b\[7m([^\x1b\n]*)search #{seq} ")
    return child.match.group(1)


def screen_text(raw: str) -> str:
    """What the app drew, readable: each cursor move to a row starts a line, other sequences dropped."""
    text = re.sub(r"\x1b\[\d+;\d+H", "\n", raw)
    return re.sub(r"\x1b\[[\d;?]*[a-zA-Z]|\x1b\][^\x07]*\x07|\x1b[=>]", "", text)


def expect_ready(child: pexpect.spawn, ready: str = "model ready", timeout: float = -1) -> None:
    """Wait for `ready` (a pattern of the status line once the model is loaded). A model that fails
    to load fails the test with its reason (the message line, and the note the app leaves on stderr
    on its way out) and the whole screen, which the next message would otherwise hide."""
    try:
        if child.expect([ready, "model failed"], timeout=timeout) == 0:
            return
        what = "the model failed to load"
    except pexpect.TIMEOUT:
        what = f"no {ready!r} on the screen"
    child.send("\x1b")
    with contextlib.suppress(pexpect.ExceptionPexpect):
        child.expect(pexpect.EOF, timeout=10)
    raw = output(child)
    reasons = re.findall(r"model failed to load \(([^\n]*)", screen_text(raw))
    raise AssertionError(f"{what}: {reasons}\n--- everything the app drew ---\n{screen_text(raw)}")


def finish(child: pexpect.spawn) -> tuple[int, str]:
    """Wait for the wrapper to end; returns the app's exit status and everything it printed."""
    child.expect(r"RC=(\d+)")
    rc = int(child.match.group(1))
    child.expect(pexpect.EOF)
    child.close()
    return rc, output(child)


def assert_restored(raw: str) -> None:
    tail = raw[raw.rindex("RC=") :]
    before = raw[: raw.rindex("RC=")]
    assert f"{ESC}[?1049l" in before, "alternate screen not left"
    assert before.rfind(f"{ESC}[?25h") > before.rfind(f"{ESC}[?25l"), "cursor left hidden"
    assert re.search(r"(?<![-\w])icanon\b", tail), "terminal left without icanon"
    assert re.search(r"(?<![-\w])echo\b", tail), "terminal left without echo"


def wrap_words(draw, text: str, font, width: float) -> list[str]:
    """Greedy word wrap for test pictures: the lines of TEXT that each fit WIDTH pixels in FONT."""
    lines, line = [], ""
    for word in text.split():
        if line and draw.textlength(f"{line} {word}", font=font) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    return [*lines, line]
