"""The caption-meaning safety signal on a bare library (no sidecars, real OCR, the real model): a
caption that wishes violence on a group in words the text rules do not list is withheld, a
harmless caption with the same words is shown, every signal's score is in the review list, and a
person's "safe" wins. Also the shipped weights are what the trainer says they are."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from helpers import REPO, invoke, open_db, served, wrap_words
from mambomeme.safety_meaning import meaning_model
from mambomeme.safety_text import detect_safety

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf"
# Written for this test (in no training or benchmark set): a wish of violence on a group the text
# rules do not catch, and harmless captions that share its words.
VIOLENT = ("PEOPLE WHO HOG THE LAUNDRETTE", "SHOULD HAVE THEIR RIBS STOMPED IN")
HARMLESS = ("PEOPLE WHO HOG THE LAUNDRETTE", "SHOULD HAVE THEIR OWN WASHING MACHINE")
IDIOM = ("THIS LAUNDRETTE QUEUE", "IS ABSOLUTE MURDER")


def _meme(path: Path, top: str, bottom: str, colour: tuple[int, int, int]) -> None:
    """A plain meme: a coloured picture, the caption in black on white bands above and below."""
    from PIL import Image, ImageDraw, ImageFont

    img = Image.new("RGB", (640, 480), colour)
    d = ImageDraw.Draw(img)
    d.ellipse((220, 140, 420, 340), fill=(250, 230, 120), outline="black", width=5)
    font = ImageFont.truetype(FONT, 22)
    for y, text in ((10, top), (400, bottom)):
        d.rectangle((0, y - 10, 640, y + 60), fill="white")
        for n, t in enumerate(wrap_words(d, text, font, 600)):
            d.text((320, y + 28 * n), t, font=font, fill="black", anchor="mt")
    img.save(path)


@pytest.mark.slow
def test_unseen_violence_withheld_same_words_shown_and_a_person_wins(tmp_path: Path) -> None:
    # The text rules alone would show all three: the meaning signal is what withholds the first.
    for top, bottom in (VIOLENT, HARMLESS, IDIOM):
        found = detect_safety(f"{top} / {bottom}")
        assert found is None or found.safety not in ("unsafe", "critical"), found
    folder = tmp_path / "memes"
    folder.mkdir()
    _meme(folder / "violent.png", *VIOLENT, (120, 170, 220))
    _meme(folder / "harmless.png", *HARMLESS, (200, 120, 160))
    _meme(folder / "idiom.png", *IDIOM, (130, 200, 140))
    db = tmp_path / "lib.sqlite"
    invoke("--db", db, "add", "-q", "--no-sidecars", folder)
    d = open_db(db)
    signals = {
        Path(p).name: (s, r, sc)
        for p, s, r, sc in d.con.execute(
            "SELECT f.rel_path, m.safety, m.rule, m.score FROM safety_signals m JOIN files f USING (item_id) "
            "WHERE m.signal = 'meaning'"
        )
    }
    d.close()
    assert signals["violent.png"][:2] == ("unsafe", "violence"), signals
    assert signals["violent.png"][2] >= meaning_model().unsafe_bar
    assert signals["harmless.png"][2] < meaning_model().unsafe_bar and signals["harmless.png"][0] != "unsafe"
    assert signals["idiom.png"][2] < meaning_model().unsafe_bar, signals
    assert not served(db, "violent.png")
    assert served(db, "harmless.png") and served(db, "idiom.png")
    assert "1 meme that holds these words is withheld" in invoke("--db", db, "search", "ribs stomped", expect=1).output
    # The review list shows the signal, its score and the bars.
    out = invoke("--db", db, "safety", "--json").output
    listed = {Path(r["path"]).name: r for r in map(json.loads, out.splitlines())}
    assert (
        listed["violent.png"]["meaning_rule"] == "violence"
        and listed["violent.png"]["safety_source"] == "meaning:violence"
    )
    text = invoke("--db", db, "safety").output
    assert "meaning unsafe: violence, score" in text and "withholds" in text
    # A person's "safe" wins, and survives a recheck of every signal.
    invoke("--db", db, "safety", "set", folder / "violent.png", "safe", "--by", "alex")
    assert served(db, "violent.png")
    assert "changed class" in invoke("--db", db, "safety", "recheck").output
    assert served(db, "violent.png")
    st = json.loads(invoke("--db", db, "status", "--json").output)["safety_review"]
    assert st["meaning_scored"] == 3 and st["meaning_hidden"] == 1 and not st["text_rules_stale"]


def test_recheck_gives_an_existing_library_the_meaning_signal(library_copy: tuple[Path, Path]) -> None:
    db, _images = library_copy
    d = open_db(db)
    with d.write():  # as a library checked before the signal existed
        d.con.execute("DELETE FROM safety_signals WHERE signal = 'meaning'")
        d.con.execute("UPDATE settings SET value = 'mambo-text-rules-2' WHERE key = 'safety_text_rules'")
    items = d.scalar("SELECT count(*) FROM items WHERE trim(ocr_text) <> ''")
    d.close()
    assert "older caption signals" in invoke("--db", db, "status").output
    out = invoke("--db", db, "safety", "recheck").output
    assert f"({items} captions scored)" in out
    d = open_db(db)
    scores = [r[0] for r in d.con.execute("SELECT score FROM safety_signals WHERE signal = 'meaning'")]
    hidden_harmless = d.scalar(
        "SELECT count(*) FROM safety_signals m JOIN items i USING (item_id) WHERE m.signal = 'meaning' "
        "AND m.safety IN ('unsafe', 'critical') AND i.item_id IN (SELECT item_id FROM files WHERE rel_path IN "
        "(SELECT value FROM json_each(?)))",
        (json.dumps(_fixture_shown()),),
    )
    d.close()
    assert len(scores) == items and all(0.0 <= s <= 1.0 for s in scores)
    assert hidden_harmless <= 0.01 * len(_fixture_shown())  # false hides on the fixture
    assert "older caption signals" not in invoke("--db", db, "status").output


def _fixture_shown() -> list[str]:
    rows = [json.loads(x) for x in (REPO / "benchdata" / "fixture" / "recipe.jsonl").read_text().splitlines() if x]
    return [r["out"]["file"] for r in rows if r["truth"]["safety"] in ("safe", "sensitive")]


def test_shipped_weights_name_their_model_and_bars() -> None:
    from mambomeme.embed import EMBED_DIM, EMBED_MODEL_NAME, WEIGHTS_SHA256

    m = meaning_model()
    assert m.model == {
        "name": EMBED_MODEL_NAME,
        "weights_sha256": WEIGHTS_SHA256,
        "vector": "caption",
        "dimensions": EMBED_DIM,
    }
    # the vector, then one prototype similarity a class
    assert m.weights.shape == (len(m.classes), EMBED_DIM + len(m.classes)) and m.classes[0] == "harmless"
    assert 0 < m.sensitive_bar <= m.unsafe_bar < 1
    for k, protos in enumerate(m.prototypes):  # unit vectors: each prototype meets its own class at 1.0
        assert protos.shape[0] >= 5 and protos.shape[1] == EMBED_DIM
        assert np.allclose(m.features(protos)[:, EMBED_DIM + k], 1.0, atol=1e-4)


def test_detect_shows_both_caption_signals() -> None:
    out = invoke("safety", "detect", "--json", " / ".join(VIOLENT), " / ".join(IDIOM)).output.splitlines()
    # (stderr is mixed in: the first use in a fresh cache says it prepares the model)
    violent, idiom = (json.loads(x) for x in out if x.startswith("{"))
    assert (violent["safety"], violent["text_safety"], violent["meaning_rule"]) == ("unsafe", "safe", "violence")
    assert violent["meaning_score"] >= meaning_model().unsafe_bar > idiom["meaning_score"]
    assert idiom["safety"] == "safe"
    line = invoke("safety", "detect", " / ".join(VIOLENT)).output
    found = re.search(r"^unsafe .* meaning (\d\.\d\d) violence ", line)
    assert found and float(found[1]) >= round(meaning_model().unsafe_bar, 2), line
