"""Fail closed: privacy on any sidecar doubt, no foreign database touched, no labels lost,
no file able to stop an ingest, checks that check. One regression test per finding, plus a property
test over sidecar and manifest mutations. Real SQLite file, OCR engine, model and processes."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import apsw
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image

from helpers import IMAGES, REPO, errors_of, folder_with, invoke, open_db, run_process, served

PICS = ["cat-01.png", "duck-01.png", "mug-01.png", "bot-01.png"]


# ── 1. One invalid value must not discard privacy, rights or safety ─────────────────────────────


def test_invalid_values_keep_private_withdrawn_and_a_bom_is_read(tmp_path: Path) -> None:
    folder = folder_with(tmp_path, {"a.png": PICS[0], "b.png": PICS[1], "c.png": PICS[2], "d.png": PICS[3]})
    (folder / "a.json").write_text(json.dumps({"title": "Zanzibar quokka", "private": True, "safety": "Safe"}))
    (folder / "b.json").write_text(json.dumps({"rights": "withdrawn", "private": "yes"}))
    (folder / "c.json").write_bytes(b"\xef\xbb\xbf" + json.dumps({"title": "x", "private": True}).encode())
    (folder / "d.json").write_text(json.dumps({"title": "Private duck", "private": True}))
    db = tmp_path / "lib.sqlite"
    invoke("--db", db, "add", "-q", folder)
    for name in ("a.png", "b.png", "c.png", "d.png"):
        assert not served(db, name), name
    # Served by no search route either.
    assert "Zanzibar" not in invoke("--db", db, "search", "-s", "bm25", "zanzibar quokka", expect=None).output
    errs = {name: msg for name, _k, msg in errors_of(db)}
    assert "private" in errs["b.png"] and "c.png" not in errs  # the field is named; a BOM is no error
    # A private item whose sidecar later gains an unrelated type error stays private.
    (folder / "d.json").write_text(json.dumps({"title": "Private duck", "private": True, "tags": 5}))
    res = invoke("--db", db, "add", "-q", folder)
    assert "d.png" in res.stderr and "'tags'" in res.stderr
    assert not served(db, "d.png")
    assert (
        open_db(db).scalar("SELECT title FROM items i JOIN files f USING (item_id) WHERE rel_path = 'd.png'")
        == "Private duck"
    )  # the rest of the sidecar is still read


# ── 2. Two manifest lines for one file ───────────────────────────────────────────────────────────


def test_two_manifest_lines_for_one_file_keep_the_stricter_and_say_so(tmp_path: Path) -> None:
    folder = folder_with(tmp_path, {"c.png": PICS[0]})
    (folder / "mambo.jsonl").write_text(
        json.dumps({"file": "c.png", "title": "Secret", "private": True})
        + "\n"
        + json.dumps({"file": "./c.png", "title": "Public", "private": False})
        + "\n"
    )
    db = tmp_path / "lib.sqlite"
    res = invoke("--db", db, "add", "-q", folder)
    assert not served(db, "c.png")
    assert "described twice" in res.stderr and "private" in res.stderr
    assert [k for name, k, _m in errors_of(db) if name == "c.png"] == ["sidecar"]


def test_a_sidecar_symlink_out_of_the_folder_is_not_read(tmp_path: Path) -> None:
    folder = folder_with(tmp_path, {"a.png": PICS[0]})
    (tmp_path / "secret.json").write_text(json.dumps({"title": "Someone else's secret"}))
    (folder / "a.json").symlink_to(tmp_path / "secret.json")
    db = tmp_path / "lib.sqlite"
    res = invoke("--db", db, "add", "-q", folder)
    assert "outside its folder" in res.stderr
    d = open_db(db)
    assert d.scalar("SELECT count(*) FROM items WHERE title LIKE '%secret%'") == 0
    assert not served(db, "a.png")  # metadata that cannot be read holds it private


# ── 3. Perceptual duplicates of a private item ───────────────────────────────────────────────────


def test_a_reencoded_copy_of_a_private_item_is_held_unless_its_own_sidecar_says(tmp_path: Path) -> None:
    folder = folder_with(tmp_path, {"orig.png": "cat-01.png"})
    (folder / "orig.json").write_text(json.dumps({"title": "Family cat", "private": True}))
    src = Image.open(IMAGES / "cat-01.png").convert("RGB")
    src.resize((src.width * 9 // 10, src.height * 9 // 10)).save(folder / "copy.jpg", quality=70)
    src.save(folder / "mine.jpg", quality=60)
    (folder / "mine.json").write_text(json.dumps({"title": "my own copy", "private": False}))
    db = tmp_path / "lib.sqlite"
    invoke("--db", db, "add", "-q", folder)
    d = open_db(db)
    groups = dict(d.con.execute("SELECT f.rel_path, i.perceptual_group FROM files f JOIN items i USING (item_id)"))
    assert groups["orig.png"] == groups["copy.jpg"] == groups["mine.jpg"]  # true near-duplicates
    assert not served(db, "orig.png") and not served(db, "copy.jpg")
    assert served(db, "mine.jpg")  # a person's decision on the copy itself wins
    # The private original made public again: its copy follows, as it now inherits nothing.
    (folder / "orig.json").write_text(json.dumps({"title": "Family cat", "private": False}))
    invoke("--db", db, "add", "-q", folder)
    assert served(db, "copy.jpg")


# ── 4. Foreign databases are refused untouched ──────────────────────────────────────────────────


@pytest.mark.parametrize("version", [0, 3])
def test_a_foreign_sqlite_database_is_refused_untouched(tmp_path: Path, version: int) -> None:
    path = tmp_path / "other-app.sqlite"
    con = apsw.Connection(str(path))
    con.execute(
        f"CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT); INSERT INTO notes(body) VALUES ('hi');"
        f"PRAGMA user_version = {version};"
    )
    con.close()
    before = path.read_bytes()
    for args in (["search", "-s", "bm25", "cat"], ["status"], ["add", "-q", IMAGES / "cat-01.png"]):
        res = invoke("--db", path, *args, expect=2)  # an error is 2 for every command (1 is "no match")
        assert "not a MamboMeme library" in res.output and "untouched" in res.output
        assert len(res.output.strip().splitlines()) == 1
    assert path.read_bytes() == before
    assert not Path(str(path) + "-wal").exists()


# ── 5. Prune of an emptied root; labels outlive their items ─────────────────────────────────────


def test_prune_refuses_an_emptied_root_and_labels_come_back_with_the_file(tmp_path: Path) -> None:
    folder = folder_with(tmp_path, {"a.png": PICS[0], "b.png": PICS[1]})
    db = tmp_path / "lib.sqlite"
    invoke("--db", db, "add", "-q", folder)
    invoke("--db", db, "label", folder / "a.png", "--entity", "zorblax the great", "--group", "item")
    away = tmp_path / "away"
    shutil.move(folder, away)
    folder.mkdir()  # the mount point of a drive that is not mounted
    res = invoke("--db", db, "prune", expect=2)
    assert "nothing pruned" in res.output and "--force" in res.output
    assert open_db(db).scalar("SELECT count(*) FROM items") == 2
    assert "pruned 2 file(s), 2 item(s)" in invoke("--db", db, "prune", "--force").output
    folder.rmdir()
    shutil.move(away, folder)
    invoke("--db", db, "add", "-q", folder)
    hits = [json.loads(x) for x in invoke("--db", db, "search", "-s", "bm25", "--json", "zorblax").stdout.splitlines()]
    assert hits and hits[0]["path"].endswith("a.png")


def test_prune_still_forgets_a_few_deleted_files(tmp_path: Path) -> None:
    folder = folder_with(tmp_path, {"a.png": PICS[0], "b.png": PICS[1], "c.png": PICS[2]})
    db = tmp_path / "lib.sqlite"
    invoke("--db", db, "add", "-q", folder)
    (folder / "c.png").unlink()
    assert "pruned 1 file(s), 1 item(s)" in invoke("--db", db, "prune").output


# ── 6-7. No file can stop or swamp an ingest ────────────────────────────────────────────────────


def test_a_spacer_gif_a_thin_strip_and_a_huge_sparse_file_are_one_error_each(tmp_path: Path) -> None:
    folder = folder_with(tmp_path, {"fine.png": PICS[0]})
    Image.new("P", (600, 1)).save(folder / "spacer.gif")
    Image.new("L", (10, 45000), 255).save(folder / "strip.png")
    with open(folder / "huge.png", "wb") as fh:
        fh.truncate(1_500_000_000)  # sparse: no disk used
    db = tmp_path / "lib.sqlite"
    t0 = time.monotonic()
    res = invoke("--db", db, "add", "-q", folder, expect=2)  # 2: files skipped, the rest indexed
    assert time.monotonic() - t0 < 120
    kinds = {name: k for name, k, _m in errors_of(db)}
    assert kinds == {"spacer.gif": "shape", "strip.png": "shape", "huge.png": "too-large"}
    assert "errors 3" in res.stdout and served(db, "fine.png")
    res = invoke("--db", db, "templates", "add", folder / "spacer.gif", "--name", "Spacer", expect=2)
    assert "thinner than" in res.output and "Traceback" not in res.output


def test_any_analysis_failure_is_that_files_error(fixture_library: Path) -> None:
    """What ORB raises on the spacer (an OpenCV error, not BadInput) becomes one ingest error."""
    from mambomeme.images import BadInput
    from mambomeme.ingest.analyse import _stage
    from mambomeme.templates import TemplateIndex

    index = TemplateIndex.load(open_db(fixture_library))
    with pytest.raises(BadInput) as e:
        _stage("template recognition", index.recognise, np.zeros((1, 600, 3), np.uint8), [])
    assert e.value.kind == "analysis" and "template recognition failed" in e.value.message


# ── 8-9. Checks that check ──────────────────────────────────────────────────────────────────────


@pytest.mark.slow
def test_check_does_not_hang_on_a_fifo_or_a_device(tmp_path: Path) -> None:
    folder = folder_with(tmp_path, {"a.png": PICS[0], "b.png": PICS[1], "c.png": PICS[2]})
    db = tmp_path / "lib.sqlite"
    invoke("--db", db, "add", "-q", folder)
    (folder / "a.png").unlink()
    os.mkfifo(folder / "a.png")
    (folder / "b.png").unlink()
    (folder / "b.png").symlink_to("/dev/zero")
    res = run_process("--db", db, "check", timeout=120)
    assert res.returncode == 2
    problems = [line for line in res.stdout.splitlines() if line.startswith("problem:")]
    assert len(problems) == 2 and all("not a regular file" in p for p in problems)


def test_check_finds_a_flipped_byte_in_a_vector_and_reports_a_list(tmp_path: Path) -> None:
    folder = folder_with(tmp_path, {"a.png": PICS[0], "b.png": PICS[1]})
    (folder / "a.json").write_text(json.dumps({"entities": ["qwertyzork"]}))
    db = tmp_path / "lib.sqlite"
    invoke("--db", db, "add", "-q", folder)
    d = open_db(db)
    vec = d.scalar("SELECT embedding FROM item_vectors ORDER BY item_id LIMIT 1")
    d.close()
    data = bytearray(db.read_bytes())
    at = data.find(vec[:64])
    assert at > 0 and data.find(vec[:64], at + 1) < 0
    data[at + 10] ^= 0x40  # one bit of one float: the page's structure is intact
    db.write_bytes(bytes(data))
    res = invoke("--db", db, "check", "--no-files", expect=2)
    assert "differ from their stored checksum" in res.output
    # A damaged JSON value (one byte of the item's row) stops no step: every problem is a line.
    data = db.read_bytes()
    # The item's own column (its file's metadata holds the list too, inside a JSON object).
    column = [m.start() for m in re.finditer(rb'\["qwertyzork"\]', data) if data[m.start() - 2 : m.start()] != b": "]
    assert len(column) == 1
    db.write_bytes(data[: column[0]] + b'["qwertyzork"}' + data[column[0] + 14 :])
    res = invoke("--db", db, "check", "--no-files", expect=2)
    problems = [line for line in res.output.splitlines() if line.startswith("problem:")]
    assert any("malformed JSON" in p for p in problems) and any("stored checksum" in p for p in problems)


# ── 10. Two processes creating one new library ──────────────────────────────────────────────────


@pytest.mark.slow
def test_processes_creating_one_new_library_at_once_all_succeed(tmp_path: Path) -> None:
    code = (
        "import sys, time; from mambomeme.library import DB\n"
        "t = float(sys.argv[2])\nwhile time.time() < t: pass\nDB(sys.argv[1]).close()\n"
    )
    for attempt in range(4):
        path = tmp_path / f"new-{attempt}.sqlite"
        start = time.time() + 1.5
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", code, str(path), str(start)],
                cwd=REPO,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(4)
        ]
        for p in procs:
            _out, err = p.communicate(timeout=120)
            assert p.returncode == 0, err
        assert open_db(path).scalar("SELECT count(*) FROM library_roots") == 0


# ── Smaller findings ────────────────────────────────────────────────────────────────────────────


def test_piped_queries_honour_json(fixture_library: Path) -> None:
    res = invoke("--db", fixture_library, "search", "-s", "bm25", "--json", input="anvil\nzzqqxxnothing\n", expect=1)
    lines = [json.loads(x) for x in res.stdout.splitlines()]
    assert lines and all(x["query"] in ("anvil", "zzqqxxnothing") for x in lines)
    assert any("asset_id" in x for x in lines) and {"query": "zzqqxxnothing", "no_match": True} in lines


def test_roots_move_refuses_a_folder_of_other_files(tmp_path: Path) -> None:
    folder = folder_with(tmp_path, {"a.png": PICS[0], "b.png": PICS[1]})
    db = tmp_path / "lib.sqlite"
    invoke("--db", db, "add", "-q", folder)
    other = tmp_path / "other"
    other.mkdir()
    shutil.copy(IMAGES / PICS[2], other / "unrelated.png")
    res = invoke("--db", db, "roots", "move", "memes", other, expect=2)
    assert "right folder" in res.output and "--force" in res.output
    moved = tmp_path / "moved"
    shutil.copytree(folder, moved)
    invoke("--db", db, "roots", "move", "memes", moved)
    invoke("--db", db, "roots", "move", "memes", other, "--force")


def test_the_damaged_message_does_not_send_you_in_a_circle() -> None:
    from mambomeme.library import db_error_message

    msg = db_error_message(apsw.CorruptError("database disk image is malformed"), "lib.sqlite")
    assert "lists what is damaged" in msg


# ── The property: no sidecar or manifest mutation serves a hidden item ──────────────────────────

HIDDEN = [
    {"private": True},
    {"rights": "withdrawn"},
    {"safety": "unsafe"},
    {"safety": "critical"},
    {"private": True, "rights": "withdrawn"},
]
JUNK = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.text(max_size=8),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)
KEYS = ["title", "template", "entities", "tags", "description", "source_url", "creator", "licence", "license"]


def _mutations() -> st.SearchStrategy:
    """(kind, argument) pairs: corruptions of the metadata, never a readable change of its meaning."""
    return st.one_of(
        st.tuples(st.just("junk-field"), st.tuples(st.sampled_from(KEYS), JUNK)),
        st.tuples(
            st.just("bad-strict-value"),
            JUNK.filter(
                lambda v: (
                    v not in (True, False)
                    and not (
                        isinstance(v, str)
                        and v.strip().casefold()
                        in ("safe", "sensitive", "unsafe", "critical", "cleared", "unknown", "withdrawn")
                    )
                )
            ),
        ),
        st.tuples(st.just("bom"), st.none()),
        st.tuples(st.just("truncate"), st.integers(1, 60)),
        st.tuples(st.just("bad-utf8"), st.integers(0, 40)),
        st.tuples(st.just("not-an-object"), st.none()),
        st.tuples(st.just("conflicting-manifest-line"), st.sampled_from(["a.png", "./a.png", "sub/../a.png"])),
        st.tuples(st.just("manifest-twice"), st.sampled_from(["a.png", "./a.png"])),
        st.tuples(st.just("broken-manifest-line"), st.integers(1, 30)),
    )


_STATE: dict[str, object] = {}


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@pytest.mark.slow
@given(base=st.sampled_from(HIDDEN), mutations=st.lists(_mutations(), min_size=1, max_size=3))
def test_no_sidecar_or_manifest_mutation_serves_a_hidden_item(
    tmp_path_factory: pytest.TempPathFactory, base: dict, mutations: list
) -> None:
    if not _STATE:  # one library for every example: each example is a metadata-only re-ingest
        root = tmp_path_factory.mktemp("property")
        folder = folder_with(root, {"a.png": PICS[0]})
        _STATE.update(folder=folder, db=root / "lib.sqlite", n=0)
        (folder / "a.json").write_text(json.dumps({"title": "Control"}))
        invoke("--db", _STATE["db"], "add", "-q", folder)
        assert served(_STATE["db"], "a.png")  # the control: a plain sidecar is served
    folder, db = _STATE["folder"], _STATE["db"]
    _STATE["n"] = n = _STATE["n"] + 1
    meta = {"title": "Hidden one", "tags": ["x"], "nonce": n} | base  # nonce: the bytes always change
    strict_key = next(iter(base))
    side: bytes | None = None
    manifest: list[str] = []
    obj: object = dict(meta)
    for kind, arg in mutations:
        if kind == "junk-field" and isinstance(obj, dict):
            obj[arg[0]] = arg[1]
        elif kind == "bad-strict-value" and isinstance(obj, dict):
            obj[strict_key] = arg
        elif kind == "not-an-object":
            obj = [obj]
        elif kind == "conflicting-manifest-line":
            manifest.append(json.dumps({"file": arg, "private": False, "rights": "cleared", "safety": "safe"}))
        elif kind == "manifest-twice":
            manifest.append(json.dumps({"file": arg} | (obj if isinstance(obj, dict) else {})))
    side = json.dumps(obj).encode()
    for kind, arg in mutations:
        if kind == "bom":
            side = b"\xef\xbb\xbf" + side
        elif kind == "truncate":
            side = side[: max(1, len(side) - arg)]
        elif kind == "bad-utf8":
            at = min(arg, len(side))
            side = side[:at] + b"\xff\xfe" + side[at:]
        elif kind == "broken-manifest-line" and manifest:
            manifest[-1] = manifest[-1][:arg]
    (folder / "a.json").write_bytes(side)
    if manifest:
        (folder / "mambo.jsonl").write_text("\n".join(manifest) + "\n", encoding="utf-8")
    elif (folder / "mambo.jsonl").exists():
        (folder / "mambo.jsonl").unlink()
    res = invoke("--db", db, "add", "-q", folder)
    assert "Traceback" not in res.output
    assert not served(db, "a.png"), (base, mutations, side[:200], manifest)
