"""Words as real memes hold them and people type them: a caption whose words OCR ran together is
found by its separate words (and a query typed run together finds the words apart), slang is
searched as typed and as its expansion, and a word that is a word is never corrected into another."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from helpers import invoke, open_db
from mambomeme.query_plan import plan_query
from mambomeme.words import caption_splits, spaced_text, split_glued, split_words

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf"
# Captions drawn without the spaces OCR loses on tightly set text; each with a line of its own.
MEMES = {
    "glued.png": ("NOBODYGETSONLINE", "ON A SUNDAY"),
    "wifi.png": ("NO WIFIHERE", "SEND HELP"),
    "feeling.png": ("THAT FEELING WHEN", "THE BUILD PASSES"),
    "wife.png": ("MY WIFE SAYS", "THE GARDEN IS DONE"),
    # the same words, side by side in one and apart in the other
    "together.png": ("WE BAKE", "BREAD TODAY"),
    "apart.png": ("BREAD CRUMBS", "BAKE THE CAKE"),
}


def _meme(lines: tuple[str, str], path: Path) -> None:
    from PIL import Image, ImageDraw, ImageFont

    img = Image.new("RGB", (640, 360), "white")
    d = ImageDraw.Draw(img)
    d.rectangle((250, 140, 390, 220), fill=(230, 120, 60), outline="black", width=4)  # a picture
    font = ImageFont.truetype(FONT, 40)
    d.text((320, 30), lines[0], font=font, fill="black", anchor="mt")
    d.text((320, 300), lines[1], font=font, fill="black", anchor="mt")
    img.save(path)


@pytest.fixture(scope="module")
def words_library(fixture_library: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture library with four rendered memes added: run-together captions, a slang phrase,
    and a caption one edit from a slang word."""
    d = tmp_path_factory.mktemp("words-lib")
    images = d / "images"
    shutil.copytree(fixture_library.parent / "images", images)
    db = d / "library.sqlite"
    shutil.copy(fixture_library, db)
    invoke("--db", db, "roots", "move", "images", images)
    (images / "words").mkdir()
    for name, lines in MEMES.items():
        _meme(lines, images / "words" / name)
    invoke("--db", db, "add", "-q", images / "words")
    return db


def _first(db: Path, query: str) -> dict:
    out = invoke("--db", db, "search", "--json", "-n", "3", query).stdout
    rows = [json.loads(x) for x in out.splitlines()]
    assert rows and not rows[0].get("no_match"), (query, rows)
    return rows[0]


def test_run_together_words_are_split_into_words_and_only_then() -> None:
    assert split_glued("nobodygetsonlinetoday") == ["nobody", "gets", "online", "today"]
    assert split_glued("thefifth") == ["the", "fifth"]
    assert split_words(caption_splits("THEFIFTH WALL")) == "the fifth"
    # English, too short, or a piece that is no word ("s tonks"): left whole
    assert split_glued("wall") == split_glued("stonks") == split_glued("ifi") == []
    # a word of the library (many documents, not a meme's few copies) is a word of its own
    assert split_glued("itis", {"itis": 3}) == ["it", "is"]
    assert split_glued("itis", {"itis": 40}) == []
    # slang the English list lacks is kept whole inside a split, and never split itself
    assert split_glued("wifihere") == []  # "wi fi here": pieces no English list counts as words
    assert split_glued("wifihere", {}, {"wifi"}) == ["wifi", "here"]
    assert split_glued("imho", {}, {"imho"}) == []


def test_a_caption_ocr_ran_together_is_found_by_its_separate_words(words_library: Path) -> None:
    db = open_db(words_library)
    ocr, words, spaced = db.con.execute(
        "SELECT ocr_text, ocr_words, ocr_spaced FROM items WHERE item_id = "
        "(SELECT item_id FROM files WHERE rel_path = 'words/glued.png')"
    ).fetchone()
    db.close()
    assert "NOBODYGETSONLINE" in ocr.replace(" ", "").upper() and "nobody gets online" in words, (ocr, words)
    # the words stand where the glued token stands, the rest of the caption as OCR read it
    assert "nobody gets online" in spaced and spaced.replace(" nobody gets online", "") == ocr, spaced
    # the glued token stays searchable, its words are searched too, and a query typed run together
    # finds the caption whose words are apart
    for query in ("nobody gets online", "nobodygetsonline sunday"):
        assert _first(words_library, query)["path"].endswith("words/glued.png"), query
    db = open_db(words_library)
    plan = plan_query(db, "nobodygetsonline sunday")
    db.close()
    assert plan.glued == {"nobodygetsonline": ["nobody", "gets", "online"]}
    assert _first(words_library, "no wifi")["path"].endswith("words/wifi.png")


def test_a_query_typed_run_together_is_read_as_its_words_typed_apart(words_library: Path) -> None:
    db = open_db(words_library)
    glued, spaced = plan_query(db, "nobodygetsonline sunday"), plan_query(db, "nobody gets online sunday")
    # the words, as if typed apart: coverage, "no match" and the typed share see them ...
    assert glued.tokens == spaced.tokens == ["nobody", "gets", "online", "sunday"]
    assert glued.content == spaced.content and glued.unknown == [] and not glued.guesses
    assert glued.text == "nobodygetsonline sunday"
    # ... and a caption holding the glued word still matches it, each of its words through it
    assert '"nobodygetsonline"' in glued.word_match and '"nobody gets online sunday"' in glued.word_match
    assert ["nobodygetsonline"] in glued.alternatives["online"]
    # a split with a piece that is no word ("a in t nobody") gives way to the library's words
    assert split_glued("aintnobody", {"aint": 3, "nobody": 3}) == []
    assert split_glued("aintnobody", {"aint": 3, "nobody": 3}, words_only=True) == ["aint", "nobody"]
    assert split_glued("megamind", {}, words_only=True) == []  # a word the English list holds whole
    # a typed query keeps a long word wordninja knows though no other list counts it ("kentucky"),
    # and a contraction typed without its apostrophe is a word ("wasnt")
    assert split_glued("herecomesthekentucky", {}, words_only=True) == ["here", "comes", "the", "kentucky"]
    assert split_glued("daythoughwasntshortened", {}) == ["day", "though", "wasnt", "shortened"]
    db.close()


def test_a_glued_token_s_words_sit_beside_the_caption_words_around_it() -> None:
    splits = split_glued("thefifth")
    assert spaced_text("THEFIFTH WALL!", {"thefifth": splits}) == "THEFIFTH the fifth WALL!"
    assert spaced_text("no glue here", {}) == ""


def test_a_phrase_across_a_glued_token_matches_as_a_phrase(words_library: Path) -> None:
    """ "nobody gets online on a sunday" holds "online on" side by side only when the caption's words
    stand where its glued token stands (the caption's lines are read as one text)."""
    db = open_db(words_library)
    match = """SELECT count(*) FROM items_fts WHERE items_fts MATCH 'ocr_text : "online on"'"""
    assert db.con.execute(match).fetchone()[0] == 1
    db.close()


def test_words_side_by_side_rank_above_the_same_words_apart(words_library: Path) -> None:
    for query in ("bake bread", "bakebread"):
        out = invoke("--db", words_library, "search", "--json", "-n", "10", query).stdout
        paths = [json.loads(x)["path"] for x in out.splitlines()]
        assert paths[0].endswith("words/together.png"), (query, paths)
        assert any(p.endswith("words/apart.png") for p in paths), (query, paths)


def test_a_hyphenated_compound_matches_the_word_and_the_model_reads_a_glued_one_once(words_library: Path) -> None:
    db = open_db(words_library)
    assert db.con.execute("SELECT docs FROM vocabulary WHERE term = 'keyboard'").fetchone()[0] >= 2
    # hyphenated, the words the library holds as one word match it; the dense text is as typed
    plan = plan_query(db, "key-board")
    assert plan.alternatives["key"] == plan.alternatives["board"] == [["keyboard"]], plan.alternatives
    assert '"keyboard"' in plan.word_match and plan.dense_text == "key board"
    # typed apart, they stay apart (OCR runs common words together: "hotright")
    assert plan_query(db, "key board").alternatives == {"key": [], "board": []}
    # a word run together is split for the word route; the dense text follows it with its words
    # only when the model does not read it as those words itself ("sundaybread": sunday bread)
    sunday, bake = plan_query(db, "sundaybread"), plan_query(db, "bakebread")
    assert sunday.glued == {"sundaybread": ["sunday", "bread"]} and sunday.dense_text == "sundaybread"
    assert bake.glued == {"bakebread": ["bake", "bread"]} and bake.dense_text == "bakebread bake bread"
    holders = {i for (i,) in db.con.execute("SELECT rowid FROM items_fts WHERE items_fts MATCH 'keyboard'")}
    db.close()
    first = _first(words_library, "key-board")  # a meme holding "keyboard", holding the query by it
    assert first["meme_id"] in holders and first["coverage"] == 1.0, first


def test_slang_is_searched_as_typed_and_as_its_expansion(words_library: Path) -> None:
    db = open_db(words_library)
    plan = plan_query(db, "tfw the build passes")
    assert ["that", "feeling", "when"] in plan.alternatives["tfw"] and not plan.guesses.get("tfw")
    assert plan.unknown == [] and "tfw" in plan.dense_text and "feeling" in plan.dense_text
    db.close()
    assert _first(words_library, "tfw build passes")["path"].endswith("words/feeling.png")


def test_a_word_that_is_a_word_is_never_corrected_into_another(words_library: Path) -> None:
    db = open_db(words_library)
    assert db.con.execute("SELECT docs FROM vocabulary WHERE term = 'wife'").fetchone()  # one edit from "wifi"
    for query, word in (("wifi", "wifi"), ("no wifi", "wifi"), ("ngl", "ngl"), ("smh", "smh")):
        plan = plan_query(db, query)
        assert ["wife"] not in plan.alternatives[word] and not plan.guesses.get(word), (query, plan.alternatives)
    db.close()
    assert _first(words_library, "wifi")["path"].endswith("words/wifi.png")


def test_an_older_library_gets_split_words_on_its_next_add_without_ocr(words_library: Path, tmp_path: Path) -> None:
    """A library made before split words existed holds NULL (migrations 023, 024): the next `mambo
    add` splits every stored caption, with no file read again, and both indexes hold the words."""
    db_path = tmp_path / "old.sqlite"
    shutil.copy(words_library, db_path)
    db = open_db(db_path)
    with db.write():
        db.con.execute("UPDATE items SET ocr_words = NULL, ocr_spaced = NULL")
    before = dict(db.con.execute("SELECT item_id, ocr_text FROM items"))
    match = "SELECT count(*) FROM items_fts WHERE items_fts MATCH 'ocr_text : nobody'"
    assert db.con.execute(match).fetchone()[0] == 0
    db.close()
    images = words_library.parent / "images"
    out = invoke("--db", db_path, "add", images / "words").output
    assert "added 0" in out and f"unchanged {len(MEMES)}" in out, out
    db = open_db(db_path)
    assert dict(db.con.execute("SELECT item_id, ocr_text FROM items")) == before
    assert db.con.execute("SELECT count(*) FROM items WHERE ocr_words IS NULL OR ocr_spaced IS NULL").fetchone()[0] == 0
    assert db.con.execute(match).fetchone()[0] == 1
    db.close()
