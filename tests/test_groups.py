"""Near-identical (perceptual) groups: one meme and its copies. A recognised template's known text
(anchors, name, aliases) is left out of both captions before they are compared, so its fixed words
never make two jokes agree, and a meme saying nothing beside them joins no meme that says more;
copies with OCR slips, watermarks and crops still join. docs/grouping.md has the measurements."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import invoke, open_db, wrap_words
from mambomeme.images import near_identical
from mambomeme.templates import known_text

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf"
FIXED = "FIGHT ME ON THIS"


def _sign_meme(joke: str):
    """A made-up sign template: the same picture on every meme, the joke on a sign above its fixed line."""
    from PIL import Image, ImageDraw, ImageFont

    img = Image.new("RGB", (500, 500), (142, 202, 230))
    d = ImageDraw.Draw(img)
    d.ellipse((170, 40, 330, 200), fill=(240, 200, 160), outline="black", width=4)  # a head
    d.rectangle((150, 200, 350, 300), fill=(60, 90, 160))  # a sweater
    d.rectangle((0, 230, 60, 500), fill=(150, 70, 60))  # a brick pillar
    d.rectangle((50, 280, 450, 482), fill="white", outline="black", width=4)
    font = ImageFont.truetype(FONT, 28)
    for n, text in enumerate(wrap_words(d, joke, font, 360)):
        d.text((250, 295 + 36 * n), text, font=font, fill="black", anchor="mt")
    d.text((250, 430), FIXED, font=ImageFont.truetype(FONT, 30), fill="black", anchor="mt")
    return img


@pytest.mark.parametrize(
    ("distance", "a", "b", "known", "same"),
    [
        # a recognised template's known text is left out: what is left must agree
        (2, "LOST AND FOUND", "RINGTONES\nLOST AND FOUND", ("Lost and Found",), False),
        (2, "Marked safe from cardio\nToday", "Marked safe from tuesdays\nToday", ("marked safe from",), False),
        (2, "Marked safe from cardio\nToday", "-\nMarked safe from cardio\nToday", ("marked safe from",), True),
        # copies: OCR slips, a watermark, a crop that lost the top label
        (
            0,
            "THE FRIDGE\nLGHT LES\nWET PAINT\nTHIS IS MY\nFINAL ANSWER",
            "THE FRIDGE\nLIGHT LIES\nWET PAINT\nTHIS IS MY\nFINAL ANSWER",
            (),
            True,
        ),
        (2, "EMAILS CAN WAT\nOUT OF ORDER", "EMAILS CAN WAIT\nOUT OF ORDER", (), True),
        (
            2,
            "cereal is soup this is my final\nanswer\nHOT TAKE OF THE DAY",
            "cereal is soup this is my final\nanswer\nHOT TAKE OF THE DAY\nmemevault.example",
            (),
            True,
        ),
        (
            12,
            "stairs are a trap my cat signed\nthe petition",
            "WARNING LABEL\nstairs are a trap my cat signed\nthe petition",
            (),
            True,
        ),
        (0, "HOTTAKE OF THEDAY", "HOT TAKE OF THE DAY", ("hot take of the day",), True),
    ],
)
def test_near_identity_reads_the_words_that_vary(
    distance: int, a: str, b: str, known: tuple[str, ...], same: bool
) -> None:
    assert near_identical(distance, a, b, known) is same
    assert near_identical(distance, b, a, known) is same


def test_known_text_is_the_recognised_templates(tmp_path: Path) -> None:
    """An item recognised as a text-layout template by its anchors: its name, aliases and anchor
    words are the known text near-identity leaves out; an unrecognised item has none."""
    from PIL import Image, ImageDraw, ImageFont

    images = tmp_path / "images"
    images.mkdir()
    img = Image.new("RGB", (620, 500), "white")
    d = ImageDraw.Draw(img)
    d.rectangle((300, 60, 306, 170), fill=(90, 90, 90))
    d.polygon([(306, 62), (380, 80), (306, 110)], fill=(66, 103, 178))
    font = ImageFont.truetype(FONT, 34)
    d.text((310, 250), "Marked safe from mondays", font=font, fill="black", anchor="mm")
    d.text((270, 400), "Today", font=ImageFont.truetype(FONT, 24), fill=(120, 120, 120))
    img.save(images / "notice.png")
    _sign_meme("naps").save(images / "sign.png")
    db_path = tmp_path / "lib.sqlite"
    invoke("--db", db_path, "add", "-q", "--no-sidecars", images)
    db = open_db(db_path)
    try:
        ids = {Path(rel).name: i for rel, i in db.con.execute("SELECT rel_path, item_id FROM files")}
        text = known_text(db, ids["notice.png"])
        assert "marked safe from" in [t.lower() for t in text], text
        assert known_text(db, ids["sign.png"]) == ()
        assert known_text(db, ids["notice.png"], ids["sign.png"]) == text
    finally:
        db.close()


def test_other_jokes_on_a_fixed_words_template_are_other_memes(tmp_path: Path) -> None:
    """A template the catalogue does not know prints its own words on every meme: a short joke and
    its longer version, or two one-word jokes, agree as text; their caption pixels differ, so they
    are other memes. A watermarked copy and a crop still join, and a private copy holds only its
    own meme."""
    from PIL import ImageDraw, ImageFont

    images = tmp_path / "images"
    images.mkdir()
    memes = {
        "short": "cereal is soup",
        "long": "cereal is soup and milk is just cold gravy",
        "word": "naps",
        "word2": "taxes",
    }
    for name, joke in memes.items():
        _sign_meme(joke).save(images / f"{name}.png")
    marked = _sign_meme(memes["short"])
    ImageDraw.Draw(marked).text(
        (488, 492), "memevault.example", font=ImageFont.truetype(FONT, 14), fill=(250, 250, 250), anchor="rb"
    )
    marked.save(images / "short-watermark.png")
    _sign_meme(memes["short"]).save(images / "short-reencode.jpg", quality=60)
    _sign_meme(memes["long"]).crop((35, 35, 465, 465)).save(images / "long-crop.png")
    (images / "long.png.json").write_text('{"private": true}')
    db_path = tmp_path / "lib.sqlite"
    invoke("--db", db_path, "add", "-q", images)
    db = open_db(db_path)
    try:
        group = dict(db.con.execute("SELECT f.rel_path, i.perceptual_group FROM files f JOIN items i USING (item_id)"))
        private = {
            rel
            for (rel,) in db.con.execute("SELECT f.rel_path FROM files f JOIN items i USING (item_id) WHERE i.private")
        }
    finally:
        db.close()
    assert group["short.png"] == group["short-watermark.png"] == group["short-reencode.jpg"], group
    assert group["long.png"] == group["long-crop.png"], group
    assert len({group["short.png"], group["long.png"], group["word.png"], group["word2.png"]}) == 4, group
    assert private == {"long.png", "long-crop.png"}
