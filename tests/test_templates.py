"""Known templates: fingerprints, the bundled catalogue, recognition at ingest, user templates,
group labels, and search through derived fields on a library without sidecars."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import apsw
import numpy as np
import pytest
import sqlite_vec

from helpers import IMAGES, REPO, invoke, open_db, recipe
from mambomeme.embed import get_embedder
from mambomeme.library import DB, SCHEMA_VERSION
from mambomeme.templates import (
    TemplateIndex,
    _area_sums,
    color_layout,
    dhash64,
    phash64,
    recognise_existing,
    slugify,
    sync_catalogue,
    templates_revision,
)

# Fixture drawings as templates: one meme of each known group is the template picture (a user
# template made from a captioned meme, as people do); held-out groups have no template at all.
KNOWN = {
    "anvil-champ": "cena-01.png",
    "chair-thinker": "think-01.png",
    "strutting-cat": "cat-01.png",
    "retro-desktop": "pc-01.png",
    "debug-duck": "duck-01.png",
    "bottomless-mug": "mug-01.png",
}
HELD_OUT = {"bonked-monkey", "chef-stir", "chaos-mom", "stop-officer", "coin-counter"}


def _groups() -> dict[str, dict]:
    out: dict[str, dict] = {}
    for line in recipe():
        g = out.setdefault(line["group"], {"files": [], "template": None, "description": ""})
        g["files"].append(line["out"]["file"])
        if "template" in line and g["template"] is None:
            g["template"] = line["template"]
            g["description"] = line["meta"]["description"].split(", with")[0].split(", under")[0]
    return out


@pytest.fixture(scope="module")
def bare_library(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, dict]]:
    """(database, images, groups): memes of the known and held-out groups WITH their sidecars on
    disk but ingested bare (--no-sidecars), after the known groups' templates were added."""
    d = tmp_path_factory.mktemp("bare")
    groups = _groups()
    images = d / "images"
    for key in [*KNOWN, *HELD_OUT]:
        for f in groups[key]["files"]:
            (images / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(IMAGES / f, images / f)
            for side in (IMAGES / f).with_suffix(".json"), (IMAGES / f).parent / "mambo.jsonl":
                if side.exists():
                    shutil.copy(side, images / Path(f).parent / side.name)
    db = d / "library.sqlite"
    for key, picture in KNOWN.items():
        t = groups[key]["template"]
        invoke(
            "--db",
            db,
            "templates",
            "add",
            "-q",
            IMAGES / picture,
            "--name",
            t["name"],
            *[x for a in t["aliases"] for x in ("--alias", a)],
            "--description",
            groups[key]["description"],
        )
    invoke("--db", db, "add", "-q", "--no-sidecars", images)
    return db, images, groups


def _recognised(db_path: Path) -> dict[str, tuple[str | None, str | None]]:
    db = open_db(db_path)
    try:
        return {
            path: (tpl, src)
            for path, tpl, src in db.con.execute("SELECT path, recognised_template, template_source FROM library")
        }
    finally:
        db.close()


def _writable(bare_library, tmp_path: Path) -> tuple[Path, Path, dict]:
    """(database, images, groups): a copy of the bare library this test may change."""
    db, images, groups = bare_library
    copy = tmp_path / "lib.sqlite"
    shutil.copy(db, copy)
    invoke("--db", copy, "roots", "move", "images", images)
    return copy, images, groups


def _search(db: Path, query: str, system: str = "bm25") -> list[dict]:
    """Lexical by default: exactly the memes whose (derived) fields hold the words."""
    out = invoke("--db", db, "search", "--json", "-n", "20", "--system", system, query, expect=None).stdout
    return [r for r in map(json.loads, out.splitlines()) if "asset_id" in r]  # no match: one no_match line


# -- fingerprints (catalogue README, version 1) -------------------------------------------------


def test_hashes_follow_the_documented_algorithm() -> None:
    ramp = np.tile(np.arange(0, 256, 2, dtype=np.int64), (64, 1)) * 1000  # brighter to the right
    assert dhash64(ramp) == "ffffffffffffffff"
    assert dhash64(ramp[:, ::-1]) == "0000000000000000"
    flat = np.full((50, 70), 128_000, np.int64)
    assert phash64(flat) == "0000000000000000"  # all coefficients tie: the 1e-6 margin gives 0
    # area resampling is exact block means when the sizes divide
    rng = np.random.default_rng(1)
    y = rng.integers(0, 255_001, (64, 96)).astype(np.int64)
    sums = _area_sums(y, 32, 32)
    assert np.array_equal(sums, y.reshape(32, 2, 32, 3).sum(axis=(1, 3)) * 32 * 32)
    # pHash of a picture and of itself scaled 2x (exact pixel copies) agree bit for bit
    assert phash64(y) == phash64(np.kron(y, np.ones((2, 2), np.int64)))


def test_colour_layout_is_cielab_per_cell() -> None:
    white = np.full((40, 40, 3), 255, np.uint8)
    assert color_layout(white) == [[100, 0, 0]] * 16
    red = np.zeros((40, 40, 3), np.uint8)
    red[..., 0] = 255
    assert color_layout(red)[0] == [53, 80, 67]


# -- the catalogue --------------------------------------------------------------------------------


def test_catalogue_is_shipped_loaded_once_and_packaged(tmp_path: Path) -> None:
    lines = [json.loads(x) for x in (REPO / "templates" / "catalogue.jsonl").read_text().splitlines() if x.strip()]
    db = DB(tmp_path / "lib.sqlite")
    assert sync_catalogue(db) == len(lines)
    assert sync_catalogue(db) == 0  # unchanged file: nothing to do
    assert db.scalar("SELECT count(*) FROM templates WHERE source = 'catalogue'") == len(lines)
    assert db.scalar("SELECT count(*) FROM template_views") == sum(len(e["views"]) for e in lines)
    drake = db.rows("template_by_name", {"name": "drakeposting"})  # found by an alias, not only the name
    assert drake and "drake" in drake[0]["name"].lower()
    assert '"templates" = "mambo_data/templates"' in (REPO / "pyproject.toml").read_text()


def test_catalogue_change_is_incremental(tmp_path: Path) -> None:
    """A changed catalogue: unchanged entries keep their revision, a changed entry gets a new one,
    a dropped entry is removed."""
    src = [x for x in (REPO / "templates" / "catalogue.jsonl").read_text().splitlines() if x.strip()]
    cat = tmp_path / "catalogue.jsonl"
    cat.write_text("\n".join(src[:5]) + "\n")
    db = DB(tmp_path / "lib.sqlite")
    assert sync_catalogue(db, cat) == 5
    first = dict(db.con.execute("SELECT slug, revision FROM templates"))
    changed = json.loads(src[1]) | {"description": "a different description"}
    cat.write_text("\n".join([src[0], json.dumps(changed), *src[2:4]]) + "\n")
    assert sync_catalogue(db, cat) == 2  # one changed, one dropped
    now = dict(db.con.execute("SELECT slug, revision FROM templates"))
    assert set(now) == set(first) - {json.loads(src[4])["id"]}
    assert now[json.loads(src[0])["id"]] == first[json.loads(src[0])["id"]]
    assert now[changed["id"]] > first[changed["id"]]
    # Anchors added to an entry with the same pictures: it changes in place, and items recognised
    # before are checked against its anchors only (no view is new to them: no pixels are read).
    views = dict(db.con.execute("SELECT view_id, template_id FROM template_views"))
    before = templates_revision(db)
    anchored = json.loads(src[0]) | {"anchors": [{"text": "fixed words", "region": [0, 0, 1, 0.3]}]}
    cat.write_text("\n".join([json.dumps(anchored), json.dumps(changed), *src[2:4]]) + "\n")
    assert sync_catalogue(db, cat) == 1
    assert dict(db.con.execute("SELECT view_id, template_id FROM template_views")) == views
    index = TemplateIndex.load(db, before)
    assert len(index) == 0 and [a for _t, a in index.anchors] == [anchored["anchors"]]


def test_shipped_catalogue_anchors_load(tmp_path: Path) -> None:
    """The project's copy of the catalogue: every entry loads, and the text-layout entries' anchors
    (fixed words and their region, templates/README.md) are well formed and reach the index."""
    lines = [json.loads(x) for x in (REPO / "templates" / "catalogue.jsonl").read_text().splitlines() if x.strip()]
    anchored = {e["id"]: e["anchors"] for e in lines if e.get("anchors")}
    assert {"marked-safe-from", "who-would-win"} <= set(anchored)
    for anchors in anchored.values():
        for a in anchors:
            x0, y0, x1, y1 = a["region"]
            assert a["text"].strip() and 0 <= x0 < x1 <= 1 and 0 <= y0 < y1 <= 1
    db = DB(tmp_path / "lib.sqlite")
    assert sync_catalogue(db) == len(lines)
    index = TemplateIndex.load(db)
    slugs = dict(db.con.execute("SELECT template_id, slug FROM templates"))
    assert {slugs[t]: a for t, a in index.anchors} == anchored


@pytest.mark.slow
def test_sparse_views_are_recognised_by_a_bar_that_scales_with_them() -> None:
    """Each known fixture drawing fingerprinted with only its 11 strongest keypoints (the
    catalogue's sparsest view has 11): no meme can reach MIN_INLIERS against it, yet most memes of
    those templates are recognised (real OCR masks their captions), none as another template, and
    no meme of a held-out template is recognised."""
    from PIL import Image

    from mambomeme.ocr import get_ocr
    from mambomeme.templates import MIN_INLIERS, fingerprint_view

    ocr = get_ocr()

    def load(name: str) -> tuple[np.ndarray, list[list[int]]]:
        rgb = np.asarray(Image.open(IMAGES / name).convert("RGB"))
        return rgb, ocr.read_boxes(rgb)[1]

    names = list(KNOWN)
    views = []
    for n, picture in enumerate(KNOWN.values()):
        v = fingerprint_view(*load(picture), features=11)
        views.append((n, n, v["orb_xy"], v["orb_desc"], v["origin"]["h"]))
    index = TemplateIndex(views)
    groups = _groups()
    known = {f: key for key in KNOWN for f in groups[key]["files"] if f not in KNOWN.values()}
    got = {f: index.recognise(*load(f)) for f in known}
    assert all(r is None or r.inliers < MIN_INLIERS for r in got.values())
    right = [f for f, r in got.items() if r is not None and names[r.template_id] == known[f]]
    assert len(right) >= len(known) / 2, {f: r for f, r in got.items()}
    assert all(r is None or names[r.template_id] == known[f] for f, r in got.items())
    held = [f for key in HELD_OUT for f in groups[key]["files"]]
    assert [f for f in held if index.recognise(*load(f)) is not None] == []


def _marked_safe(path: Path, words: str, centre_y: float) -> None:
    """A made-up "marked safe" style banner: a flag on a pole, one bold line of text, a small word."""
    from PIL import Image, ImageDraw, ImageFont

    img = Image.new("RGB", (620, 500), "white")
    d = ImageDraw.Draw(img)
    d.rectangle((300, 60, 306, 170), fill=(90, 90, 90))
    d.polygon([(306, 62), (380, 80), (306, 110)], fill=(66, 103, 178))
    font = ImageFont.truetype("/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf", 34)
    line = f"Marked safe from {words}"
    d.text(((620 - d.textlength(line, font=font)) / 2, 500 * centre_y - 17), line, font=font, fill="black")
    d.text(
        (270, 400),
        "Today",
        font=ImageFont.truetype("/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf", 24),
        fill=(120, 120, 120),
    )
    w, h = img.size
    img.crop((20, 15, w - 25, h - 10)).resize((500, 396)).save(path, quality=70)  # a crop, rescaled, JPEG


def test_text_layout_template_is_recognised_by_its_words(tmp_path: Path) -> None:
    """Real OCR on rendered memes, through `mambo add`: a banner whose fixed words stand where the
    catalogue's anchor says is "Marked Safe From" (its aliases become searchable); the same words
    in the wrong place, or other words there, name no template."""
    images = tmp_path / "images"
    images.mkdir()
    _marked_safe(images / "banner.jpg", "group projects", 0.5)
    _marked_safe(images / "too-low.jpg", "group projects", 0.97)  # a caption at the bottom edge
    _marked_safe(images / "other.jpg", "group projects", 0.5)
    from PIL import Image, ImageDraw, ImageFont

    img = Image.open(images / "other.jpg")
    ImageDraw.Draw(img).rectangle((0, 150, 500, 250), fill="white")
    ImageDraw.Draw(img).text(
        (40, 180),
        "Marked as read from home",
        fill="black",
        font=ImageFont.truetype("/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf", 30),
    )
    img.save(images / "other.jpg", quality=70)
    db = tmp_path / "lib.sqlite"
    invoke("--db", db, "add", "-q", "--no-sidecars", images)
    got = {Path(k).name: v for k, v in _recognised(db).items()}
    assert got["banner.jpg"] == ("marked-safe-from", "catalogue")
    assert got["too-low.jpg"][0] is None and got["other.jpg"][0] is None
    found = {Path(r["path"]).name for r in _search(db, "facebook safe")}  # an alias, not in the caption
    assert "banner.jpg" in found and "other.jpg" not in found


# -- recognition on a bare library ----------------------------------------------------------------


def test_known_templates_are_recognised_and_unknown_ones_get_none(bare_library) -> None:
    db, _images, groups = bare_library
    got = _recognised(db)
    slugs = {key: slugify(groups[key]["template"]["name"]) for key in KNOWN}
    known = [(f, slugs[k]) for k in KNOWN for f in groups[k]["files"] if f in got]
    right = [f for f, slug in known if got[f][0] == slug]
    assert len(right) / len(known) >= 0.95, {f: got[f] for f, _ in known}
    held = [f for k in HELD_OUT for f in groups[k]["files"] if f in got]
    assert held and not [f for f in held if got[f][0] is not None], {f: got[f] for f in held}
    assert {got[f][1] for f in right} == {"user"}  # derived, and says from where


def test_template_name_and_visual_description_find_bare_memes(bare_library) -> None:
    db, _images, groups = bare_library
    cena = set(groups["anvil-champ"]["files"])
    res = [json.loads(x) for x in invoke("--db", db, "search", "--json", "anvil champ").output.splitlines()]
    assert res and {Path(r["path"]).name for r in res[:5]} <= cena
    assert res[0]["template"] == "Anvil Champ" and res[0]["template_source"] == "user"
    res = [json.loads(x) for x in invoke("--db", db, "search", "--json", "hammer guy").output.splitlines()]
    assert res and Path(res[0]["path"]).name in cena  # an alias
    # a literal description of the picture, lexically and densely
    for system in ("bm25", "dense"):
        res = [
            json.loads(x)
            for x in invoke(
                "--db",
                db,
                "search",
                "--json",
                "-s",
                system,
                "rubber duck on a computer desk" if system == "bm25" else "a yellow rubber duck",
            ).output.splitlines()
        ]
        assert res and Path(res[0]["path"]).name in set(groups["debug-duck"]["files"]), (system, res[:3])
        assert res[0]["derived"]["description"]["source"] == "user"


def test_sidecar_metadata_wins_over_derived(bare_library, tmp_path: Path) -> None:
    db, images, _groups = bare_library
    copy = tmp_path / "lib.sqlite"
    shutil.copy(db, copy)
    side = images / "cena-02.json"
    stored = json.loads(side.read_text())
    assert stored["template"] == "Anvil Champ"
    invoke("--db", copy, "roots", "move", "images", images)
    invoke("--db", copy, "add", "-q", images / "cena-02.png")  # now with its sidecar
    con = open_db(copy)
    row = con.rows(
        "results_details", {"ids": json.dumps([con.scalar("SELECT item_id FROM files WHERE rel_path = 'cena-02.png'")])}
    )[0]
    assert row["template_source"] == "sidecar" and row["description"] == stored["description"]
    assert json.loads(row["derived"])["template"]["source"] == "user"  # still known, just not shown
    con.close()


# -- user templates: add, list, remove; incremental re-recognition ------------------------------


def test_templates_list_add_remove_rerecognise(bare_library, tmp_path: Path) -> None:
    copy, images, groups = _writable(bare_library, tmp_path)
    out = invoke("--db", copy, "templates", "list", "--source", "user").output
    assert "anvil-champ" in out and "Anvil Champ" in out
    con = open_db(copy)
    before = dict(con.con.execute("SELECT item_id, template_score FROM items WHERE template_id IS NOT NULL"))
    con.close()
    # A new template (a held-out group) is matched against the library: only that template.
    monkey = groups["bonked-monkey"]
    out = invoke("--db", copy, "templates", "add", "-q", IMAGES / "monkey-01.png", "--name", "Bonked Monkey").output
    assert "re-recognised" in out
    got = _recognised(copy)
    assert [f for f in monkey["files"] if got[f][0] == "bonked-monkey"] == monkey["files"]
    con = open_db(copy)
    after = dict(con.con.execute("SELECT item_id, template_score FROM items WHERE template_id IS NOT NULL"))
    revision = templates_revision(con)
    assert {k: after[k] for k in before} == before  # the others were not matched again
    assert con.scalar("SELECT count(*) FROM items WHERE recognised_revision <> ?", (revision,)) == 0
    assert recognise_existing(con, lambda: (get_embedder(), 0)) == (0, 0, 0)  # nothing left to do
    con.close()
    res = [json.loads(x) for x in invoke("--db", copy, "search", "--json", "bonked monkey").output.splitlines()]
    assert res and Path(res[0]["path"]).name in monkey["files"]
    invoke("--db", copy, "templates", "remove", "-q", "bonked-monkey")
    got = _recognised(copy)
    assert not [f for f in monkey["files"] if got[f][0] is not None]
    assert "no match" in invoke("--db", copy, "search", "bonked monkey", expect=1).stderr


def test_label_as_template_brings_the_lookalikes(bare_library, tmp_path: Path) -> None:
    # A template the catalogue lacks: --template alone labels the meme and its copies, and says how
    # to name all its lookalikes; --as-template makes the meme's picture a template they follow.
    copy, images, groups = _writable(bare_library, tmp_path)
    monkey = groups["bonked-monkey"]["files"]
    first = images / monkey[0]
    said = invoke("--db", copy, "label", first, "--template", "Bonked Monkey")
    assert "labelled 1 meme(s) (perceptual)" in said.stdout
    assert "--template 'Bonked Monkey' --as-template" in said.stderr
    assert {Path(r["path"]).name for r in _search(copy, "bonked monkey")} == {monkey[0]}
    invoke("--db", copy, "label", first, "--clear")
    res = invoke("--db", copy, "label", first, "--template", "Bonked Monkey", "--as-template", "--tag", "bonk")
    out = res.stdout
    assert "added template bonked-monkey from this meme" in out and "labelled" in out
    # matching every meme again takes a while: it says so, and its progress, on stderr (not a terminal: lines)
    assert "matching the library's memes against the templates again" in res.stderr
    assert re.search(r"\[[#-]{24}\] \d+/\d+ ", res.stderr)
    got = _recognised(copy)
    assert [f for f in monkey if got[f][0] == "bonked-monkey"] == monkey
    # monkey-04 wishes violence on cyclists (unsafe, fixture README): the caption-meaning signal
    # withholds it on a bare library too, so its lookalikes are found and it is not
    shown = set(monkey) - {"monkey-04.png"}
    assert {Path(r["path"]).name for r in _search(copy, "bonked monkey")} == shown
    assert {Path(r["path"]).name for r in _search(copy, "bonk")} == shown
    said = invoke("--db", copy, "label", first, "--template", "Bonked Monkey", "--as-template", expect=2)
    assert "already exists" in said.stderr


def test_label_says_when_a_sidecar_still_wins(library_copy) -> None:
    db, images = library_copy  # the fixture's sidecars name cena-03's template
    said = invoke(
        "--db", db, "label", images / "cena-03.png", "--template", "Forge Hero", "--tag", "forging", "--group", "item"
    )
    assert "labelled 1 meme(s)" in said.stdout
    assert "note: 1 of them show their sidecar's template" in said.stderr
    assert "note: 1 of them show their sidecar's tags" in said.stderr
    assert not _search(db, "forge hero")  # the sidecar's template is what shows


@pytest.mark.parametrize(
    "args, message",
    [
        (["templates", "add", "{missing}", "--name", "X"], "no such file"),
        (["templates", "add", "{notimage}", "--name", "X"], "cannot read"),
        (["templates", "add", "{image}", "--name", "!!!"], "--name needs"),
        (["templates", "remove", "no-such-template"], "no template 'no-such-template'"),
        (["templates", "remove", "drake-hotline-bling"], "cannot be removed"),
        (["label", "999999", "--tag", "x"], "no meme '999999'"),
        (["label", "1"], "nothing to label"),
    ],
)
def test_bad_template_and_label_input_is_one_clear_line(tmp_path: Path, args: list[str], message: str) -> None:
    db = tmp_path / "lib.sqlite"
    (tmp_path / "notes.png").write_text("not an image")
    invoke("--db", db, "add", "-q", IMAGES / "cena-01.png")
    subst = {
        "{missing}": str(tmp_path / "nope.png"),
        "{notimage}": str(tmp_path / "notes.png"),
        "{image}": str(IMAGES / "cena-01.png"),
    }
    res = invoke("--db", db, *[subst.get(a, a) for a in args], expect=2)
    lines = [x for x in res.output.splitlines() if x.strip()]
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in res.output, res.output


def test_duplicate_template_name_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "lib.sqlite"
    invoke("--db", db, "templates", "add", "-q", IMAGES / "cena-01.png", "--name", "Anvil Champ")
    res = invoke("--db", db, "templates", "add", "-q", IMAGES / "cena-02.png", "--name", "anvil champ", expect=2)
    assert "already exists" in res.output


# -- group labels -----------------------------------------------------------------------------------


def test_label_reaches_the_whole_template_group(bare_library, tmp_path: Path) -> None:
    copy, images, groups = _writable(bare_library, tmp_path)
    cena = groups["anvil-champ"]["files"]
    assert "no match" in invoke("--db", copy, "search", "hephaestus", expect=1).stderr
    out = invoke("--db", copy, "label", images / "cena-03.png", "--entity", "Hephaestus", "--tag", "forging").output
    assert "labelled" in out
    res = _search(copy, "hephaestus")
    assert {Path(r["path"]).name for r in res} == set(cena)
    con = open_db(copy)
    sources = {}
    for name in cena:
        row = con.rows(
            "results_details",
            {"ids": json.dumps([con.scalar("SELECT item_id FROM files WHERE rel_path = ?", (name,))])},
        )[0]
        assert json.loads(row["entities"]) == ["Hephaestus"]
        sources[name] = row["entities_source"]
    con.close()
    assert sources.pop("cena-03.png") == "label" and set(sources.values()) == {"propagated"}
    # a meme that joins the group later gets the label too
    shutil.copy(IMAGES / "cena-02.png", images / "cena-02-again.png")
    from PIL import Image

    Image.open(images / "cena-02-again.png").convert("RGB").save(images / "cena-02-again.jpg", quality=70)
    (images / "cena-02-again.png").unlink()
    invoke("--db", copy, "add", "-q", "--no-sidecars", images / "cena-02-again.jpg")
    res = _search(copy, "hephaestus")
    assert "cena-02-again.jpg" in {Path(r["path"]).name for r in res}
    invoke("--db", copy, "label", images / "cena-03.png", "--clear")
    assert "no match" in invoke("--db", copy, "search", "hephaestus", expect=1).stderr


# -- schema 1 files and bare ingest -------------------------------------------------------------------


def test_schema_1_library_with_items_is_migrated(tmp_path: Path) -> None:
    path = tmp_path / "v1.sqlite"
    con = apsw.Connection(str(path))
    con.enable_load_extension(True)
    con.load_extension(sqlite_vec.loadable_path())
    con.execute((REPO / "migrations" / "001_initial.sql").read_text())
    con.execute(
        "INSERT INTO items(sha256, format, width, height, byte_size, phash, dhash, title, ocr_text) "
        "VALUES (?, 'png', 1, 1, 1, 0, 0, 'old meme', 'caption words')",
        ("a" * 64,),
    )
    con.close()
    db = DB(path)
    assert db.user_version() == SCHEMA_VERSION
    assert db.scalar("SELECT derived FROM items") == "{}"
    assert db.scalar("SELECT recognised_revision FROM items") == 0  # recognised at the next `mambo add`
    assert db.scalar("SELECT rowid FROM items_fts WHERE items_fts MATCH 'caption'") == 1
    db.con.execute(
        "UPDATE items SET derived = ?", ('{"template": {"name": "X", "text": "Xylo ; xy", "source": "catalogue"}}',)
    )
    assert db.scalar("SELECT rowid FROM items_fts WHERE items_fts MATCH 'xylo'") == 1


def test_no_sidecars_ingests_bare(tmp_path: Path) -> None:
    db = tmp_path / "lib.sqlite"
    invoke("--db", db, "add", "-q", "--no-sidecars", IMAGES / "cena-01.png")
    con = open_db(db)
    assert con.rows("item_metadata", {"item_id": 1})[0]["metadata_source"] == "none"
    assert con.scalar("SELECT title FROM items") == ""
    con.close()
