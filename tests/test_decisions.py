"""Decisions that follow the meme: the owner's privacy as a decision that every recomputation keeps,
decisions that hold near copies added later and outlive the bytes they were made on, privacy that
holds over renames, state columns that `sql --write` cannot change, `check` re-deriving what was
derived and `add` repairing it, and the manifest size cap. Real SQLite file, OCR engine and model."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import apsw
import pytest
from PIL import Image

from helpers import IMAGES, REPO, db_scalar, errors_of, folder_with, invoke, served

pytestmark = pytest.mark.slow  # each test ingests a small folder


def item_of(db: Path, name: str) -> int:
    return int(db_scalar(db, "SELECT item_id FROM files WHERE rel_path = ?", (name,)))


def listed(db: Path, query: str) -> str:
    return invoke("--db", db, "search", "-s", "bm25", "-l", query, expect=None).stdout


def raw_write(db: Path, sql: str) -> None:
    """A write by another tool, behind mambo's back (sqlite-vec loaded for the schema's triggers)."""
    import sqlite_vec

    con = apsw.Connection(str(db))
    con.enable_load_extension(True)
    con.load_extension(sqlite_vec.loadable_path())
    con.execute(sql)
    con.close()


def test_private_is_a_decision_that_add_and_safety_set_keep(tmp_path: Path) -> None:
    folder = folder_with(tmp_path, {"cat.png": "cat-01.png", "duck.png": "duck-01.png"})
    db = tmp_path / "lib.sqlite"
    invoke("--db", db, "add", "-q", folder)
    cat = item_of(db, "cat.png")
    # The state columns are computed: editing one is refused with the command to use.
    res = invoke("--db", db, "sql", "--write", f"UPDATE items SET private = 1 WHERE item_id = {cat}", expect=2)
    assert "mambo private" in res.output and "Traceback" not in res.output
    for sql in (
        "UPDATE files SET private = 0",
        "UPDATE items SET safety = 'safe'",
        "DELETE FROM privacy_decisions",
        "DELETE FROM safety_decisions",
        "CREATE TRIGGER t AFTER INSERT ON files BEGIN SELECT 1; END",
    ):
        assert "refused" in invoke("--db", db, "sql", "--write", sql, expect=2).output, sql
    assert served(db, "cat.png")
    assert "private" in invoke("--db", db, "private", str(cat)).output
    assert not served(db, "cat.png") and "cat.png" not in listed(db, "coffee table")
    # Every recomputation keeps it: an unchanged add, a changed sidecar, a safety decision, a recheck.
    invoke("--db", db, "add", "-q", folder)
    (folder / "cat.json").write_text(json.dumps({"title": "Coffee cat", "private": False}))
    invoke("--db", db, "add", "-q", folder)
    invoke("--db", db, "safety", "set", str(cat), "safe", "--by", "alex")
    invoke("--db", db, "safety", "recheck")
    assert not served(db, "cat.png") and "cat.png" not in listed(db, "coffee table")
    # The path form works as well as the id; --clear takes the decision back.
    assert "not private" in invoke("--db", db, "private", str(folder / "cat.png"), "--clear").output
    assert served(db, "cat.png")
    # A sidecar that says private still holds after --clear, and the command says which file.
    invoke("--db", db, "private", str(cat))
    (folder / "cat.json").write_text(json.dumps({"private": True}))
    invoke("--db", db, "add", "-q", folder)
    out = invoke("--db", db, "private", str(cat), "--clear").output
    assert "still private" in out and "cat.png" in out
    assert not served(db, "cat.png")
    assert served(db, "duck.png")


def test_a_decision_follows_a_resaved_copy_after_the_original_is_gone(tmp_path: Path) -> None:
    folder = folder_with(tmp_path, {"duck.png": "duck-01.png", "cat.png": "cat-01.png"})
    db = tmp_path / "lib.sqlite"
    invoke("--db", db, "add", "-q", folder)
    duck, cat = item_of(db, "duck.png"), item_of(db, "cat.png")
    invoke("--db", db, "safety", "set", str(duck), "unsafe", "--by", "alex")
    invoke("--db", db, "private", str(cat))
    # Re-saved with the same pixels (an optimiser): other bytes, the same meme, in place.
    for name in ("duck.png", "cat.png"):
        before = (folder / name).read_bytes()
        Image.open(folder / name).save(folder / name, compress_level=1)
        assert (folder / name).read_bytes() != before
    invoke("--db", db, "add", "-q", folder)
    assert db_scalar(db, "SELECT count(*) FROM items") == 2  # the old contents are gone
    assert item_of(db, "duck.png") != duck and item_of(db, "cat.png") != cat
    assert not served(db, "duck.png") and not served(db, "cat.png")
    assert "duck.png" not in listed(db, "explained the bug to the duck")
    # A copy added later (re-encoded, resized) joins the group and is held by the decision too.
    src = Image.open(IMAGES / "duck-01.png").convert("RGB")
    src.resize((src.width * 9 // 10, src.height * 9 // 10)).save(folder / "duck-small.jpg", quality=70)
    invoke("--db", db, "add", "-q", folder)
    assert not served(db, "duck-small.jpg")
    # Taking the decision back on the new copy takes back the decision it follows.
    invoke("--db", db, "safety", "clear", str(item_of(db, "duck.png")))
    assert served(db, "duck.png") and served(db, "duck-small.jpg")


def test_a_followed_safe_decision_never_lowers_a_copys_own_sidecar(tmp_path: Path) -> None:
    folder = folder_with(tmp_path, {"duck.png": "duck-01.png"})
    src = Image.open(IMAGES / "duck-01.png").convert("RGB")
    src.resize((src.width * 9 // 10, src.height * 9 // 10)).save(folder / "copy.jpg", quality=70)
    (folder / "copy.json").write_text(json.dumps({"safety": "unsafe"}))
    db = tmp_path / "lib.sqlite"
    invoke("--db", db, "add", "-q", folder)
    invoke("--db", db, "safety", "set", str(item_of(db, "duck.png")), "safe", "--by", "alex")
    assert served(db, "duck.png")  # the person's word on the meme decided
    assert not served(db, "copy.jpg")  # the copy's own sidecar still holds it


def test_privacy_holds_over_a_rename_and_add_warns(tmp_path: Path) -> None:
    folder = folder_with(tmp_path, {"x.png": "cat-01.png", "y.png": "duck-01.png", "other.png": "mug-01.png"})
    (folder / "x.json").write_text(json.dumps({"private": True}))
    (folder / "mambo.jsonl").write_text(json.dumps({"file": "y.png", "private": True}) + "\n")
    db = tmp_path / "lib.sqlite"
    invoke("--db", db, "add", "-q", folder)
    assert not served(db, "x.png") and not served(db, "y.png")
    (folder / "x.png").rename(folder / "x2.png")
    (folder / "y.png").rename(folder / "y2.png")
    res = invoke("--db", db, "add", "-q", folder)
    assert "x.json" in res.stderr and "mambo.jsonl" in res.stderr and "y.png" in res.stderr
    assert "errors 2" in res.stdout  # both named, as warnings
    assert {k for _n, k, _m in errors_of(db)} >= {"orphan-metadata"}
    pruned = invoke("--db", db, "prune", "--force").output
    assert "kept private: 2" in pruned
    for name in ("x2.png", "y2.png"):
        assert not served(db, name), name
    assert "x2.png" not in listed(db, "coffee table") and "y2.png" not in listed(db, "duck")
    # The owner decides otherwise.
    invoke("--db", db, "private", str(item_of(db, "x2.png")), "--clear")
    assert served(db, "x2.png") and not served(db, "y2.png")


def test_check_rederives_state_and_readings_and_add_repairs_them(tmp_path: Path) -> None:
    folder = folder_with(tmp_path, {"x.png": "cat-01.png", "y.png": "duck-01.png"})
    (folder / "x.json").write_text(json.dumps({"private": True, "rights": "withdrawn"}))
    db = tmp_path / "lib.sqlite"
    invoke("--db", db, "add", "-q", folder)
    assert "ok" in invoke("--db", db, "check").output
    raw_write(db, "UPDATE files SET private = 0, rights = NULL")
    out = invoke("--db", db, "check", expect=2).output
    assert "stored metadata is not what their sidecars" in out and "x.png" in out
    invoke("--db", db, "add", "-q", folder)
    assert "ok" in invoke("--db", db, "check").output and not served(db, "x.png")
    y = item_of(db, "y.png")
    invoke("--db", db, "safety", "set", str(y), "unsafe", "--by", "alex")
    raw_write(db, f"UPDATE items SET safety = 'safe', private = 0, rights = 'cleared' WHERE item_id = {y}")
    out = invoke("--db", db, "check", expect=2).output
    assert f"items {y}" in out and "safety, rights or privacy" in out
    invoke("--db", db, "add", "-q", folder)
    assert "ok" in invoke("--db", db, "check").output and not served(db, "y.png")


def test_a_manifest_over_the_sidecar_cap_is_one_error_and_holds_the_folder(tmp_path: Path) -> None:
    folder = folder_with(tmp_path, {"a.png": "cat-01.png"})
    line = json.dumps({"file": "a.png", "title": "fine"}) + "\n"
    (folder / "mambo.jsonl").write_text(line * (1_000_000 // len(line) + 1))
    db = tmp_path / "lib.sqlite"
    res = invoke("--db", db, "add", "-q", folder)
    said = [line for line in res.stderr.splitlines() if line.startswith(("mambo: skipped", "mambo: warning"))]
    assert len(said) == 2 and "mambo.jsonl" in said[0] and "over 1,000,000 bytes: split it" in said[0]
    assert "a.png" in said[1] and "split it" not in said[1]  # its one image, held: a short line
    assert not served(db, "a.png")


def test_a_touched_file_is_not_read_again_and_add_does_not_fail(tmp_path: Path) -> None:
    """A file whose time changed but not its bytes (touch, a sync client) is only touched."""
    folder = folder_with(tmp_path, {"a.png": "cat-01.png"})
    db = tmp_path / "lib.sqlite"
    invoke("--db", db, "add", "-q", folder)
    shutil.copystat(IMAGES / "duck-01.png", folder / "a.png")
    (folder / "a.png").touch()
    assert "unchanged 1" in invoke("--db", db, "add", "-q", folder).stdout


def test_a_meme_made_private_leaves_the_vocabulary_in_the_same_transaction(tmp_path: Path) -> None:
    """`add` killed right after the batch that made a meme private: typo correction must not know
    its words (the vocabulary is refreshed at the end of a run, and also in that batch)."""
    folder = folder_with(tmp_path, {"x.png": "cat-01.png", "y.png": "duck-01.png"})
    db = tmp_path / "lib.sqlite"
    invoke("--db", db, "add", "-q", folder)
    assert db_scalar(db, "SELECT count(*) FROM vocabulary WHERE term = 'coffee'") == 1
    (folder / "x.json").write_text(json.dumps({"private": True}))
    # A real `mambo add`, killed (SIGKILL) as soon as its first batch has committed.
    script = (
        "import os, signal, sys\n"
        f"sys.path.insert(0, {str(REPO)!r})\n"
        "from mambomeme import ingest\n"
        "finish = ingest.Ingester._finish_batch\n"
        "def finish_then_die(self, b):\n"
        "    finish(self, b)\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
        "ingest.Ingester._finish_batch = finish_then_die\n"
        "import mambo\n"
        f"mambo.cli(['--db', {str(db)!r}, 'add', '-q', {str(folder)!r}])\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert not served(db, "x.png")
    assert db_scalar(db, "SELECT count(*) FROM vocabulary WHERE term = 'coffee'") == 0
    assert db_scalar(db, "SELECT count(*) FROM vocabulary WHERE term = 'duck'") == 1


def test_a_decision_takes_every_path_a_listing_prints_and_needs_no_by(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = folder_with(tmp_path, {"x.png": "cat-01.png", "y.png": "duck-01.png"})
    db = tmp_path / "lib.sqlite"
    invoke("--db", db, "add", "-q", folder)
    for var in ("USER", "USERNAME"):
        monkeypatch.delenv(var, raising=False)
    # `mambo safety` prints ROOT/rel: that form works as the id does, without --by.
    root = db_scalar(db, "SELECT name FROM library_roots")
    out = invoke("--db", db, "safety", "set", f"{root}/x.png", "unsafe").output
    assert f"meme {item_of(db, 'x.png')}: unsafe" in out and "decided by" in out
    assert not served(db, "x.png")
    listing = invoke("--db", db, "safety").output
    assert f"{root}/x.png" in listing
    # Each listed meme shows its caption on one line and the command that decides it.
    x = item_of(db, "x.png")
    assert "caption: KNOCKS YOUR COFFEE" in listing and f"decide: mambo safety set {x} safe|" in listing
    # The absolute path of a file renamed away still names its meme (as `mambo private` takes it).
    (folder / "y.png").rename(folder / "y2.png")
    assert "private" in invoke("--db", db, "private", str(folder / "y.png")).output
    invoke("--db", db, "add", "-q", folder)
    assert not served(db, "y2.png")
