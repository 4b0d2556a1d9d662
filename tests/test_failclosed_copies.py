"""Fail closed across copies, edits, names and decisions: a meme is as private as its strictest
copy whatever order files and sidecars arrive in; metadata in doubt (a key given twice, a key or a
file name that almost matches, a line in a parent folder's manifest) holds the image and is one
error naming the file and the field. Real SQLite file, OCR engine, model and CLI."""

from __future__ import annotations

import json
import shutil
import unicodedata
from pathlib import Path

import pytest
from PIL import Image

from helpers import IMAGES, db_scalar, errors_of, folder_with, invoke, open_db, served


def add(db: Path, folder: Path, *args: str):
    res = invoke("--db", db, "add", "-q", *args, folder, expect=None)
    assert res.exit_code in (0, 2), res.output  # 2: some files were skipped, the rest indexed
    return res


def vocabulary_has(db: Path, word: str) -> bool:
    return bool(db_scalar(db, "SELECT count(*) FROM vocabulary WHERE term = ?", (word,)))


# ── Exact copies: every file's metadata counts ──────────────────────────────────────────────────


@pytest.mark.slow
def test_a_later_sidecar_on_the_other_exact_copy_keeps_the_item_private(tmp_path: Path) -> None:
    folder = folder_with(tmp_path, {"a.png": "cat-01.png", "b.png": "cat-01.png"})
    (folder / "a.json").write_text(json.dumps({"title": "Family cat", "private": True}))
    db = tmp_path / "lib.sqlite"
    add(db, folder)
    assert not served(db, "a.png") and not served(db, "b.png")
    for sidecar in ({"tags": ["cats"]}, {"title": "just a cat"}):
        (folder / "b.json").write_text(json.dumps(sidecar))
        add(db, folder)
        assert not served(db, "a.png") and not served(db, "b.png"), sidecar
        add(db, folder)  # nothing changed: it stays held
        assert not served(db, "b.png")
    # The descriptive fields of both copies are merged: the original's first.
    d = open_db(db)
    title, tags = d.con.execute("SELECT title, tags FROM items").fetchone()
    assert (title, json.loads(tags)) == ("Family cat", [])
    # The private sidecar goes: the item follows what is left.
    (folder / "a.json").unlink()
    add(db, folder)
    assert served(db, "a.png")


@pytest.mark.slow
def test_editing_the_public_copys_sidecar_does_not_publish_the_private_one(tmp_path: Path) -> None:
    folder = folder_with(tmp_path, {"a.png": "duck-01.png", "b.png": "duck-01.png"})
    (folder / "a.json").write_text(json.dumps({"private": True}))
    (folder / "b.json").write_text(json.dumps({"private": False, "title": "duck"}))
    db = tmp_path / "lib.sqlite"
    add(db, folder)
    assert not served(db, "b.png")
    (folder / "b.json").write_text(json.dumps({"private": False, "title": "a duck, edited"}))
    add(db, folder)
    assert not served(db, "a.png") and not served(db, "b.png")


@pytest.mark.slow
def test_a_copy_made_private_leaves_the_vocabulary(tmp_path: Path) -> None:
    folder = folder_with(tmp_path, {"a.png": "mug-01.png"})
    (folder / "a.json").write_text(json.dumps({"title": "Zorblaxian mug"}))
    db = tmp_path / "lib.sqlite"
    add(db, folder)
    assert vocabulary_has(db, "zorblaxian")
    shutil.copy(folder / "a.png", folder / "b.png")
    (folder / "b.json").write_text(json.dumps({"private": True}))
    add(db, folder)
    assert not served(db, "a.png")
    assert not vocabulary_has(db, "zorblaxian")


@pytest.mark.slow
def test_a_bare_run_keeps_what_the_sidecars_said(tmp_path: Path) -> None:
    folder = folder_with(tmp_path, {"a.png": "bot-01.png"})
    (folder / "a.json").write_text(json.dumps({"private": True}))
    db = tmp_path / "lib.sqlite"
    add(db, folder)
    add(db, folder, "--no-sidecars")
    assert not served(db, "a.png")


# ── A key given twice ───────────────────────────────────────────────────────────────────────────


@pytest.mark.slow
def test_a_key_given_twice_is_an_error_and_the_stricter_reading(tmp_path: Path) -> None:
    folder = folder_with(
        tmp_path,
        {
            "p.png": "cat-01.png",
            "s.png": "duck-01.png",
            "r.png": "mug-01.png",
            "m.png": "bot-01.png",
            "f1.png": "chef-03.png",
            "f2.png": "cat-03.png",
        },
    )
    (folder / "p.json").write_text('{"private": true, "private": false}')
    (folder / "s.json").write_text('{"safety": "critical", "safety": "safe"}')
    (folder / "r.json").write_text('{"rights": "withdrawn", "rights": "cleared"}')
    (folder / "mambo.jsonl").write_text(
        '{"file": "m.png", "private": true, "private": false}\n{"file": "f1.png", "file": "f2.png", "private": true}\n'
    )
    db = tmp_path / "lib.sqlite"
    res = add(db, folder)
    for name in ("p.png", "s.png", "r.png", "m.png", "f1.png", "f2.png"):
        assert not served(db, name), name
    errs = {name: msg for name, _k, msg in errors_of(db)}
    assert "'private' given 2 times" in errs["p.png"] and "'safety' given 2 times" in errs["s.png"]
    assert "'rights' given 2 times" in errs["r.png"] and "'private' given 2 times" in errs["m.png"]
    assert "'file' given 2 times" in res.stderr
    d = open_db(db)
    assert d.scalar("SELECT i.safety FROM items i JOIN files f USING (item_id) WHERE rel_path = 's.png'") == "critical"


# ── A parent folder's manifest ───────────────────────────────────────────────────────────────────


@pytest.mark.slow
def test_a_parent_manifest_line_for_a_file_in_a_subfolder_is_applied(tmp_path: Path) -> None:
    folder = folder_with(tmp_path, {"top.png": "duck-01.png"})
    (folder / "sub").mkdir()
    shutil.copy(IMAGES / "cat-01.png", folder / "sub" / "x.png")
    (folder / "mambo.jsonl").write_text(
        json.dumps({"file": "sub/x.png", "title": "Nested cat", "private": True}) + "\n"
    )
    db = tmp_path / "lib.sqlite"
    add(db, folder)
    assert not served(db, "sub/x.png") and served(db, "top.png")
    d = open_db(db)
    assert (
        d.scalar("SELECT title FROM items i JOIN files f USING (item_id) WHERE rel_path = 'sub/x.png'") == "Nested cat"
    )


# ── Names and keys that almost match ─────────────────────────────────────────────────────────────


@pytest.mark.slow
def test_keys_that_differ_only_by_case_or_spaces_hold_the_image(tmp_path: Path) -> None:
    pics = {"a.png": "cat-01.png", "b.png": "duck-01.png", "c.png": "mug-01.png", "d.png": "bot-01.png"}
    folder = folder_with(tmp_path, pics)
    (folder / "a.json").write_text(json.dumps({"Private": True}))
    (folder / "b.json").write_text(json.dumps({"PRIVATE": True}))
    (folder / "c.json").write_text(json.dumps({" private": True}))
    (folder / "d.json").write_text(json.dumps({"PRIVATE": False}))
    db = tmp_path / "lib.sqlite"
    add(db, folder)
    errs = {name: msg for name, _k, msg in errors_of(db)}
    for name in pics:
        assert not served(db, name), name
        assert "is not 'private'" in errs[name], name


@pytest.mark.slow
def test_file_names_that_match_only_loosely_hold_the_image(tmp_path: Path) -> None:
    nfd = unicodedata.normalize("NFD", "café.png")
    pics = {"photo.png": "cat-01.png", "spaced.png": "duck-01.png", nfd: "mug-01.png", "img.png": "bot-01.png"}
    folder = folder_with(tmp_path, pics)
    (folder / "mambo.jsonl").write_text(
        json.dumps({"file": "Photo.png", "private": True})
        + "\n"
        + json.dumps({"file": "spaced.png ", "private": True})
        + "\n"
        + json.dumps({"file": unicodedata.normalize("NFC", "café.png"), "private": True}, ensure_ascii=False)
        + "\n"
    )
    (folder / "img.PNG.json").write_text(json.dumps({"private": True}))
    db = tmp_path / "lib.sqlite"
    add(db, folder)
    errs = {unicodedata.normalize("NFC", name): msg for name, _k, msg in errors_of(db)}
    for name in pics:
        assert not served(db, name), name
    for name in ("photo.png", "spaced.png", "café.png"):
        assert "only by case, spaces or Unicode form" in errs[name], name
    assert "named like img.png's sidecar but not exactly" in errs["img.png"]


@pytest.mark.slow
def test_a_manifest_line_for_a_symlink_out_of_the_folder_holds_the_image(tmp_path: Path) -> None:
    folder = folder_with(tmp_path, {"a.png": "cat-01.png"})
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    shutil.copy(IMAGES / "duck-01.png", outside / "real.png")
    (folder / "link.png").symlink_to(outside / "real.png")
    (folder / "mambo.jsonl").write_text(json.dumps({"file": "link.png", "private": True}) + "\n")
    db = tmp_path / "lib.sqlite"
    res = add(db, folder)
    assert "symlink to a file outside the folder" in res.stderr
    assert not served(db, "link.png") and served(db, "a.png")


@pytest.mark.slow
def test_a_line_break_inside_a_manifest_string_stays_one_line(tmp_path: Path) -> None:
    folder = folder_with(tmp_path, {"a.png": "cat-01.png"})
    line = json.dumps({"file": "a.png", "title": "one\u2028two", "private": True}, ensure_ascii=False)
    (folder / "mambo.jsonl").write_text(line + "\n", encoding="utf-8")
    db = tmp_path / "lib.sqlite"
    add(db, folder)
    assert not served(db, "a.png")
    assert errors_of(db) == []


# ── Decisions hold the near-identical copies at once ─────────────────────────────────────────────


@pytest.mark.slow
def test_a_safety_decision_holds_the_near_identical_copies_at_once(tmp_path: Path) -> None:
    folder = folder_with(tmp_path, {"orig.png": "cat-01.png"})
    src = Image.open(IMAGES / "cat-01.png").convert("RGB")
    src.resize((src.width * 9 // 10, src.height * 9 // 10)).save(folder / "copy.jpg", quality=70)
    db = tmp_path / "lib.sqlite"
    add(db, folder)
    d = open_db(db)
    groups = dict(d.con.execute("SELECT f.rel_path, i.perceptual_group FROM files f JOIN items i USING (item_id)"))
    d.close()
    assert groups["orig.png"] == groups["copy.jpg"]
    invoke("--db", db, "safety", "set", folder / "orig.png", "unsafe", "--by", "alex")
    assert not served(db, "orig.png") and not served(db, "copy.jpg")
    invoke("--db", db, "safety", "clear", folder / "orig.png")
    assert served(db, "orig.png") and served(db, "copy.jpg")


# ── Errors: one row per file and problem, and what they say ──────────────────────────────────────


@pytest.mark.slow
def test_errors_are_kept_once_per_file_and_problem(tmp_path: Path) -> None:
    folder = folder_with(tmp_path, {"a.png": "cat-01.png"})
    (folder / "empty.png").write_bytes(b"")
    (folder / "empty2.png").write_bytes(b"")
    Image.new("L", (9000, 9000)).save(folder / "huge.png")
    db = tmp_path / "lib.sqlite"
    res = add(db, folder)
    assert "empty file (0 bytes)" in res.stderr and "could not be read" not in res.stderr
    assert "over the 40 MP limit" in res.stderr and "80,000,000" not in res.stderr
    first = errors_of(db)
    add(db, folder)
    assert sorted(errors_of(db)) == sorted(first) and len(first) == 3
