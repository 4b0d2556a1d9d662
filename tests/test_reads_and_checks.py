"""Reading a library and checking it, through the real CLI on real library files.

A label is written in one transaction (its words, vectors and vocabulary together, so a kill -9
cannot leave a meme that bm25 finds and dense search cannot); `mambo check` notices text embedded
under other words, a stale vocabulary and every schema object that is missing, extra or altered,
and `mambo add` finishes what an interrupted write left. `mambo sql` fits wide rows to the
terminal. Reading (search, status, sql, check) works on a full disk and leaves no -wal or -shm
file beside the library. Errors about the library file are one line that says what to do."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import apsw
import apsw.unicode
import pexpect
import pytest

from helpers import REPO, invoke, run_process
from mambomeme.embed import EMBED_MODEL_NAME, embed_text


def side_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(("-wal", "-shm", "-journal")))


def rows(path: Path, sql: str) -> list[tuple]:
    """Rows read beside the CLI; a read-write connection that writes nothing, so closing it (the
    last one) leaves no -wal or -shm file."""
    con = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READWRITE)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def stale_embeddings(path: Path) -> list[int]:
    """Items whose all-fields text is not the text their vector was computed from (its SHA-256)."""
    found = rows(
        path,
        "SELECT e.item_id, e.text_sha256, x.title, x.template_text, x.entities, x.tags, "
        "x.description, x.ocr_text FROM item_embeddings e JOIN item_effective x USING (item_id) "
        f"JOIN embedding_models m USING (model_id) WHERE m.name = '{EMBED_MODEL_NAME}'",
    )
    assert found
    return [
        item
        for item, sha, title, template, entities, tags, description, ocr in found
        if hashlib.sha256(
            embed_text(title, template, json.loads(entities), json.loads(tags), description, ocr).encode()
        ).hexdigest()
        != sha
    ]


def one_item(path: Path) -> int:
    """A meme shown by search whose sidecar gives no tags (a sidecar's own value beats a label's)."""
    return rows(
        path, "SELECT min(item_id) FROM items WHERE tags = '[]' AND item_id IN (SELECT item_id FROM servable_items)"
    )[0][0]


# ─────────────────────────────────────────────────────────────────────────────
# Every write that changes what is searchable: one transaction, or finished by the next add
# ─────────────────────────────────────────────────────────────────────────────


@pytest.mark.slow
def test_a_label_killed_mid_write_is_searchable_in_every_route_or_none(library_copy: tuple[Path, Path]) -> None:
    db, _images = library_copy
    item = one_item(db)
    assert stale_embeddings(db) == []
    proc = subprocess.Popen(
        [
            sys.executable,
            str(REPO / "mambo.py"),
            "--db",
            str(db),
            "label",
            str(item),
            "--tag",
            "zebracorn",
            "--group",
            "item",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    seen = False
    try:
        # kill -9 the moment the label is committed: its embedding must be in that same commit
        deadline = time.monotonic() + 120
        while proc.poll() is None and time.monotonic() < deadline:
            if rows(db, "SELECT count(*) FROM labels WHERE value LIKE '%zebracorn%'")[0][0]:
                seen = True
                proc.send_signal(signal.SIGKILL)
                break
            time.sleep(0.002)
    finally:
        proc.kill()
        proc.communicate()
    assert seen or proc.returncode == 0
    assert rows(db, "SELECT count(*) FROM items_fts WHERE items_fts MATCH 'zebracorn'") == [(1,)]
    assert stale_embeddings(db) == []
    assert rows(db, "SELECT count(*) FROM vocabulary WHERE term = 'zebracorn'") == [(1,)]
    assert invoke("--db", db, "check", "--no-files").output.strip().splitlines()[-1] == "ok"


def test_check_finds_text_changed_after_embedding_and_add_embeds_it_again(library_copy: tuple[Path, Path]) -> None:
    db, images = library_copy
    item = one_item(db)
    # The words change and the vectors do not (a write of the words alone, as a kill between two
    # transactions leaves it): bm25 finds the new title, the dense route cannot.
    invoke("--db", db, "sql", "--write", f"UPDATE items SET title = 'zebracorn parade' WHERE item_id = {item}")
    assert stale_embeddings(db) == [item]
    result = invoke("--db", db, "check", "--no-files", expect=2)
    problems = [line for line in result.output.splitlines() if "embedded" in line]
    assert len(problems) == 1 and f"items {item})" in problems[0] and "`mambo add`" in problems[0], result.output
    invoke("--db", db, "add", "-q", images)
    assert stale_embeddings(db) == []
    assert invoke("--db", db, "check", "--no-files").output.strip().splitlines()[-1] == "ok"


def test_check_finds_a_stale_vocabulary_and_add_makes_it_again(library_copy: tuple[Path, Path]) -> None:
    db, images = library_copy
    before = rows(db, "SELECT term, docs FROM vocabulary ORDER BY term")
    invoke("--db", db, "sql", "--write", "DELETE FROM vocabulary WHERE term = (SELECT max(term) FROM vocabulary)")
    result = invoke("--db", db, "check", "--no-files", expect=2)
    assert [line for line in result.output.splitlines() if "vocabulary" in line] == [
        'problem: the vocabulary (typo corrections, "no match") is not the word index\'s: `mambo add` on the '
        "library's folder makes it again"
    ], result.output
    invoke("--db", db, "add", "-q", images)
    assert rows(db, "SELECT term, docs FROM vocabulary ORDER BY term") == before
    assert invoke("--db", db, "check", "--no-files").output.strip().splitlines()[-1] == "ok"


# ─────────────────────────────────────────────────────────────────────────────
# The schema `mambo check` expects: schema.sql, read when it runs
# ─────────────────────────────────────────────────────────────────────────────


def test_check_reports_each_missing_extra_or_altered_schema_object(library_copy: tuple[Path, Path]) -> None:
    db, _images = library_copy
    assert invoke("--db", db, "check", "--no-files").output.strip().splitlines()[-1] == "ok"
    invoke(
        "--db",
        db,
        "sql",
        "--write",
        input="DROP VIEW hidden_items;\nDROP TRIGGER item_vectors_servable;\n"
        "CREATE TABLE scratch(x);\nDROP INDEX items_template_group;\n"
        "CREATE INDEX items_template_group ON items(template_group, item_id);\n",
    )
    result = invoke("--db", db, "check", "--no-files", expect=2)
    schema = [line for line in result.output.splitlines() if line.startswith("problem: schema:")]
    assert schema == [
        "problem: schema: view hidden_items is missing: restore the library from a backup",
        "problem: schema: trigger item_vectors_servable is missing: restore the library from a backup",
        "problem: schema: table scratch is not part of the library's schema: unless you made it on purpose, drop "
        'it (mambo sql --write "DROP TABLE scratch")',
        "problem: schema: index items_template_group differs from the one schema.sql makes: restore the library "
        "from a backup",
    ], result.output
    # (steps that read the dropped view report that too: each problem is a line, none stops the check)
    assert result.output.splitlines()[-1].endswith("problem(s) found")


def test_check_compares_with_schema_sql_as_it_is_when_it_runs(
    library_copy: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db, _images = library_copy
    # A schema.sql that gained an index the library lacks (as a new migration would add one).
    schema = tmp_path / "schema.sql"
    schema.write_text(
        (REPO / "schema.sql").read_text(encoding="utf-8") + "\nCREATE INDEX items_by_title ON items(title);\n",
        encoding="utf-8",
    )
    monkeypatch.setattr("mambomeme.upkeep.SCHEMA_FILE", schema)
    result = invoke("--db", db, "check", "--no-files", expect=2)
    assert "problem: schema: index items_by_title is missing: restore the library from a backup" in result.output
    # Spacing and comments are not differences: the same index written another way is the same.
    invoke("--db", db, "sql", "--write", "CREATE  INDEX items_by_title ON items (\n  title -- the title\n)")
    assert invoke("--db", db, "check", "--no-files").output.strip().splitlines()[-1] == "ok"


# ─────────────────────────────────────────────────────────────────────────────
# `mambo sql` fits wide rows to the terminal
# ─────────────────────────────────────────────────────────────────────────────


def widest(output: str) -> int:
    return max(apsw.unicode.text_width(line) for line in output.splitlines())


def test_sql_fits_wide_rows_to_the_terminal(fixture_library: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    for statement in ("SELECT * FROM library", "SELECT * FROM items"):
        out = invoke("--db", fixture_library, "sql", statement).stdout
        assert widest(out) <= 100 and "…" in out, out[:2000]
        assert "-[ row 1 ]" in out and "ocr_text" in out  # too many columns for a table: one value a line
    # Few columns: a table, its long cells cut with an ellipsis, every row on one line.
    n = rows(fixture_library, "SELECT count(*) FROM library")[0][0]
    out = invoke("--db", fixture_library, "sql", "SELECT item_id, path, ocr_text, description FROM library").stdout
    assert widest(out) <= 100 and "…" in out
    assert len(out.splitlines()) == n + 4 and out.startswith("╭")
    # The shell's box mode too (80 wide when not on a terminal).
    out = invoke("--db", fixture_library, "sql", input=".mode box\nSELECT * FROM items LIMIT 2;\n").stdout
    assert widest(out) <= 80 and "-[ row 2 ]" in out, out


@pytest.mark.slow
def test_the_interactive_shell_fits_wide_rows(fixture_library: Path, tmp_path: Path) -> None:
    env = {**os.environ, "TERM": "xterm-256color", "HOME": str(tmp_path), "PYTHONPATH": str(REPO)}
    child = pexpect.spawn(
        sys.executable,
        [str(REPO / "mambo.py"), "--db", str(fixture_library), "sql"],
        env=env,
        dimensions=(24, 100),
        encoding="utf-8",
        timeout=30,
    )
    child.delaybeforesend = None
    try:
        child.expect("mambo sql> ")
        child.sendline("SELECT * FROM library LIMIT 1;")
        child.expect("mambo sql> ")
        shown = child.before
        assert "can't be fit" not in shown and "-[ row 1 ]" in shown, shown
        assert widest(shown) <= 100
        child.sendline("SELECT item_id, ocr_text FROM library LIMIT 3;")
        child.expect("mambo sql> ")
        assert "│ item_id │" in child.before and widest(child.before) <= 100, child.before
        child.sendline(".exit")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0


# ─────────────────────────────────────────────────────────────────────────────
# Reading needs no space and leaves nothing behind
# ─────────────────────────────────────────────────────────────────────────────


@pytest.mark.slow
def test_read_commands_leave_no_side_files(library_copy: tuple[Path, Path]) -> None:
    db, _images = library_copy
    folder = db.parent
    assert side_files(folder) == []
    for args in (
        ["sql", "SELECT count(*) FROM items"],
        ["status"],
        ["search", "robot"],
        ["check", "--no-files"],
        ["systems"],
    ):
        result = run_process("--db", db, *args)
        assert result.returncode == 0, result.stderr
        assert side_files(folder) == [], args
    result = run_process("--db", db, "sql", input="SELECT count(*) FROM items;\n")
    assert result.returncode == 0 and side_files(folder) == []


@contextlib.contextmanager
def mounted_tmpfs(where: Path, options: str) -> Iterator[Path]:
    """A small file system of the test's own (filling it fills nothing else), or a skip saying why."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root; run as root to test a full disk for real")
    where.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)], capture_output=True, text=True)
    if done.returncode:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip()}): the full disk is not tested")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def fill(folder: Path) -> None:
    """Write until the file system has not one byte left."""
    fd = os.open(folder / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        for size in (1 << 20, 4096, 1):
            with contextlib.suppress(OSError):
                while True:
                    os.write(fd, b"\0" * size)
    finally:
        os.close(fd)
    with pytest.raises(OSError) as full:
        (folder / "more").write_bytes(b"\0" * 4096)
    assert full.value.errno == errno.ENOSPC
    (folder / "more").unlink(missing_ok=True)


@pytest.mark.slow
def test_reading_works_on_a_full_disk(library_copy: tuple[Path, Path], tmp_path: Path) -> None:
    source, _images = library_copy
    with mounted_tmpfs(tmp_path / "disk", f"size={source.stat().st_size + (4 << 20)}") as disk:
        db = disk / "library.sqlite"
        shutil.copy(source, db)
        fill(disk)
        before = hashlib.sha256(db.read_bytes()).hexdigest()
        for args in (
            ["search", "robot"],
            ["search", "--json", "-s", "dense", "a robot"],
            ["status"],
            ["sql", "SELECT count(*) FROM items"],
            ["check", "--no-files"],
            ["roots", "list"],
            ["templates", "list"],
        ):
            result = run_process("--db", db, *args)
            assert result.returncode == 0, (args, result.stderr)
            assert result.stdout.strip(), args
            assert sorted(p.name for p in disk.iterdir()) == ["filler", "library.sqlite"], args
        shell = run_process("--db", db, "sql", input="SELECT count(*) FROM items;\n")
        assert shell.returncode == 0 and shell.stdout.strip().isdigit()
        # The search screen, in a real terminal.
        env = {**os.environ, "TERM": "xterm-256color", "BLESSED_QUERY_TIMEOUT_SECONDS": "0", "PYTHONPATH": str(REPO)}
        child = pexpect.spawn(
            sys.executable,
            [str(REPO / "mambo.py"), "--db", str(db), "search", "--wait-ready"],
            env=env,
            dimensions=(24, 80),
            encoding="utf-8",
            timeout=60,
        )
        try:
            child.expect("Search:")
            child.send("robot\x13")  # Ctrl-S: search without choosing
            child.expect(r"\d+\+? results · [\d.]+ ms")
            child.send("\x1b")
            child.expect(pexpect.EOF)
        finally:
            child.close(force=True)
        assert child.exitstatus == 130  # Esc: quit without choosing
        assert sorted(p.name for p in disk.iterdir()) == ["filler", "library.sqlite"]
        # Writing cannot work: one line that says so, and what to do.
        for args in (["add", disk], ["label", "1", "--tag", "x"], ["sql", "--write", "DELETE FROM settings"]):
            result = run_process("--db", db, *args)
            lines = result.stderr.strip().splitlines()
            assert (
                result.returncode == 2
                and len(lines) == 1
                and "the disk is full" in lines[0]
                and "free some space" in lines[0]
            ), (args, result.stderr)
        assert hashlib.sha256(db.read_bytes()).hexdigest() == before
        assert sorted(p.name for p in disk.iterdir()) == ["filler", "library.sqlite"]


# ─────────────────────────────────────────────────────────────────────────────
# One line that says what to do
# ─────────────────────────────────────────────────────────────────────────────


def test_a_device_is_not_a_library_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAMBO_DB", "/dev/null")
    for args in (["status"], ["search", "x"], ["add", REPO / "benchdata" / "fixture" / "images"]):
        result = invoke(*args, expect=2)  # an error is 2 for every command (1 is "no match")
        assert result.output.strip().splitlines() == [
            "Error: /dev/null is a device or other special file, not a library file: give a library file with --db "
            "(or $MAMBO_DB), or a new file name to create one there"
        ], args
    result = invoke("sql", "SELECT 1", expect=2)
    assert result.output.strip().splitlines() == [
        "Error: /dev/null is a device or other special file, not a library file: give the library's path with --db"
    ]


def test_a_library_cannot_be_made_in_a_read_only_folder(tmp_path: Path) -> None:
    images = tmp_path / "images"
    shutil.copytree(REPO / "benchdata" / "fixture" / "images", images, ignore=lambda d, names: names[3:])
    if os.geteuid() == 0:
        folder = mounted_tmpfs(tmp_path / "ro", "ro,size=1m")  # root writes anywhere chmod forbids
    else:
        (tmp_path / "ro").mkdir(mode=0o555)
        folder = contextlib.nullcontext(tmp_path / "ro")
    with folder as ro:
        result = invoke("--db", ro / "library.sqlite", "add", "-q", images, expect=2)
        assert result.output.strip().splitlines() == [
            f"Error: cannot create a library in {ro}: the folder is not writable; choose a writable folder with "
            "--db (or $MAMBO_DB), or make it writable"
        ]
        assert list(ro.iterdir()) == []
