"""Search by image (`mambo search --image FILE`) and the screen's "more like this" (Ctrl-T): the real
CLI on the fixture library (real OCR, model and SQLite file), the screen headless and in a PTY."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest
from test_tui import feed, screen, searched_state

from helpers import assert_restored, db_scalar, expect_ready, finish, invoke, output, run_app, search
from mambomeme import tui
from mambomeme.by_image import same_caption

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf"


def image_search(db: Path, image: Path, *flags: str, expect: int | None = 0):
    return invoke("--db", db, "search", "--image", image, *flags, expect=expect)


def phone_screenshot(meme: Path, out: Path) -> Path:
    """The meme as a phone shows it: on a larger dark canvas under a status bar reading "12:34 87%",
    the whole screenshot then cropped a little (a few pixels of the meme's edges go too)."""
    from PIL import Image, ImageDraw, ImageFont

    picture = Image.open(meme).convert("RGB")
    w, h = picture.size
    canvas = Image.new("RGB", (w + 60, h + 220), (18, 18, 18))
    draw = ImageDraw.Draw(canvas)
    draw.text((20, 14), "12:34", font=ImageFont.truetype(FONT, 26), fill=(240, 240, 240))
    draw.text((w - 60, 14), "87%", font=ImageFont.truetype(FONT, 26), fill=(240, 240, 240))
    canvas.paste(picture, (30, 110))
    canvas.crop((36, 20, w + 54, h + 200)).save(out)
    return out


# -- the command line ------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_file_of_the_library_is_its_exact_copy_then_its_group_and_each_result_says_why(fixture_library: Path):
    images = fixture_library.parent / "images"
    out = image_search(fixture_library, images / "cat-01.png", "-n", "5").stdout
    first = out.split("\n")[0]
    assert re.match(r" 1\. .+ \(exact copy\)", first), out
    assert str(images / "cat-01.png") in out.split("\n")[2]
    # its re-encoded copy (cat-01-lowq.jpg) is a near copy, right after it
    lines = [json.loads(x) for x in image_search(fixture_library, images / "cat-01.png", "--json").stdout.splitlines()]
    assert [x["reason"] for x in lines[:2]] == ["exact copy", "near copy"]
    assert lines[1]["path"] == str(images / "cat-01-lowq.jpg")
    assert all(x["image"].endswith("cat-01.png") and x["reason"] in REASONS for x in lines)
    assert [x["rank"] for x in lines] == list(range(1, len(lines) + 1))
    # -l: the paths alone, best first; -0 ends each with NUL
    paths = image_search(fixture_library, images / "cat-01.png", "-l", "-n", "2").stdout.splitlines()
    assert paths == [str(images / "cat-01.png"), str(images / "cat-01-lowq.jpg")]
    nul = image_search(fixture_library, images / "cat-01-lowq.jpg", "-0", "-n", "2").stdout_bytes
    assert nul.split(b"\0")[:2] == [str(images / "cat-01-lowq.jpg").encode(), str(images / "cat-01.png").encode()]


REASONS = {"exact copy", "near copy", "same caption", "same template", "similar caption"}


@pytest.mark.slow
def test_a_phone_screenshot_of_a_meme_finds_it_first(fixture_library: Path, tmp_path: Path):
    """A status bar ("12:34 87%"), a larger canvas and a crop change every hash: the caption's words
    still name the meme, found at rank 1 as the same caption."""
    original = fixture_library.parent / "images" / "cena-01.png"
    shot = phone_screenshot(original, tmp_path / "Screenshot_20260101-123400.png")
    lines = [json.loads(x) for x in image_search(fixture_library, shot, "--json", "-n", "3").stdout.splitlines()]
    assert lines[0]["path"] == str(original), lines
    assert lines[0]["reason"] == "same caption"


@pytest.mark.slow
def test_nothing_found_is_no_match_and_nothing_is_written(fixture_library: Path, tmp_path: Path):
    """A picture unlike any meme (noise, no words): "no match", exit 1, as a query's answer; the
    library is only read."""
    import numpy as np
    from PIL import Image

    noise = tmp_path / "noise.png"
    Image.fromarray(np.random.default_rng(7).integers(0, 255, (240, 320, 3), dtype=np.uint8)).save(noise)
    before = db_scalar(fixture_library, "SELECT count(*) || ':' || total(item_id) FROM items")
    result = image_search(fixture_library, noise, expect=1)
    assert result.stdout == "" and result.stderr.strip() == "no match"
    lines = image_search(fixture_library, noise, "--json", expect=1).stdout.splitlines()
    assert [json.loads(x) for x in lines] == [{"image": str(noise), "no_match": True}]
    assert db_scalar(fixture_library, "SELECT count(*) || ':' || total(item_id) FROM items") == before


@pytest.mark.slow
def test_bad_input_is_one_line_and_exit_2(fixture_library: Path, tmp_path: Path):
    text = tmp_path / "notes.png"
    text.write_text("not a picture\n")
    empty = tmp_path / "empty.jpg"
    empty.write_bytes(b"")
    for path, said in (
        (tmp_path / "missing.png", "cannot read"),
        (text, "not an image"),
        (empty, "empty file"),
        (tmp_path, "Is a directory"),
    ):
        result = image_search(fixture_library, path, expect=2)
        assert result.stdout == "" and len(result.stderr.strip().splitlines()) == 1, result.stderr
        assert said in result.stderr and "Traceback" not in result.stderr
    result = invoke("--db", fixture_library, "search", "--image", text, "cat", expect=2)
    assert "--image searches by a picture" in result.stderr


@pytest.mark.slow
def test_a_withheld_copy_is_counted_never_shown(library_copy: tuple[Path, Path]):
    """A copy made private takes its copies with it (`mambo private`): searching by the file finds
    neither, and says that two memes matching the picture are withheld."""
    db, images = library_copy
    invoke("--db", db, "private", images / "cat-01-lowq.jpg")
    result = image_search(db, images / "cat-01.png")
    assert "cat-01" not in result.stdout
    assert "note: 2 memes that match this picture are withheld: private" in result.stderr
    last = json.loads(image_search(db, images / "cat-01.png", "--json").stdout.splitlines()[-1])
    assert last["withheld"] == 2


def test_the_same_caption_either_way_round():
    """A screenshot's status bar adds words, a crop cuts some: the caption held in either direction."""
    caption = "WHEN THE BOSS ASKS WHO BROKE THE BUILD\nYOU CAN'T SEE ME"
    assert same_caption("12:34 87%\n" + caption, caption) == 1.0
    assert same_caption("WHEN THE BOSS ASKS WHO BROKE THE BUILD", caption) == 1.0
    assert same_caption("WHEN THE BOSS ASKS FOR A RAISE\nYOU CAN'T SEE ME", caption) < 0.8
    assert same_caption("BUILD", caption) == 0.0  # too few letters to say it is the same caption


# -- the screen ------------------------------------------------------------------------------------


def alike_rows(n: int = 3) -> tuple[tui.Row, ...]:
    base = searched_state().rows
    return tuple(
        dataclasses.replace(r, item_id=100 + i, rank=i + 1, name=f"Look-alike {i}", routes=reason)
        for i, (r, reason) in enumerate(zip(base, ("near copy", "same template", "similar caption")[:n], strict=False))
    )


def test_ctrl_t_lists_the_highlighted_memes_look_alikes_and_esc_or_backspace_go_back():
    s, _ = feed(searched_state(), "<DOWN>")
    liked = s.rows[1]
    s, eff = feed(s, "<Ctrl-t>")
    assert eff == [tui.MoreLike(liked, 2)]
    rows = alike_rows()
    t, _ = feed(s, tui.Alike(2, liked, rows, 12.0))
    assert t.like == liked and t.rows == rows and (t.selected, t.focus) == (0, "list")
    text, _ = screen(t)
    assert f"more like “{liked.name}” (Esc: back)" in text[1]
    assert "[near copy]" in text[2] and "[same template]" in "\n".join(text)
    assert "3 results" in text[23]
    # Enter picks a look-alike
    _, eff = feed(t, "<Ctrl-m>")
    assert eff[-1] == tui.Choose((rows[0].path,), (rows[0].item_id,))
    # Esc and Backspace go back to the query's list as it was, the same meme highlighted; Esc then quits
    for key in ("<ESC>", "<BACKSPACE>"):
        u, eff = feed(t, key)
        assert eff == [] and u.like is None and u.rows == s.rows and u.selected == 1 and u.query == "see me"
        assert "results for “see me”" in screen(u)[0][1]
    _, eff = feed(u, "<ESC>")
    assert eff == [tui.Quit()]


def test_more_like_this_of_a_look_alike_goes_back_to_the_query_and_stale_answers_are_dropped():
    s, _ = feed(searched_state(), "<Ctrl-t>")
    s, _ = feed(s, tui.Alike(2, s.rows[0], alike_rows(), 5.0))
    s, eff = feed(s, "<DOWN>", "<Ctrl-t>")
    assert eff[-1] == tui.MoreLike(s.rows[1], 3)
    s, _ = feed(s, tui.Alike(3, s.rows[1], alike_rows(2), 5.0))
    assert len(s.rows) == 2
    s, _ = feed(s, "<ESC>")
    assert s.like is None and s.rows == searched_state().rows  # the query's list, not the first look-alikes
    # typing after Ctrl-T: its answer comes too late and is dropped; a new query leaves the look-alikes
    s, eff = feed(searched_state(), "<Ctrl-t>", "x")
    s, eff = feed(s, tui.Paused(s.edits))
    assert eff[-1] == tui.DoSearch("see mex", 2, 1)
    s, _ = feed(s, tui.Alike(2, s.rows[0], alike_rows(), 5.0))
    assert s.like is None and s.rows == searched_state().rows
    # nothing like it: the list stays, a message says so
    s, _ = feed(searched_state(), "<Ctrl-t>")
    t, _ = feed(s, tui.Alike(2, s.rows[0], (), 5.0))
    assert t.rows == s.rows and t.like is None and "nothing else in the library is like" in t.message


def test_ctrl_t_is_in_the_help():
    assert any("Ctrl-T" in line and "more like this" in line for line in tui.HELP_LINES)


@pytest.mark.slow
def test_ctrl_t_in_a_pty_shows_the_look_alikes_and_esc_goes_back(fixture_library: Path):
    """The real screen: search "cat", Ctrl-T on the first meme lists its near copy and memes of its
    template, each with its reason; Esc goes back to the query's list, Esc again quits."""
    child = run_app(fixture_library, "--system", "hybrid", timeout=90)
    expect_ready(child, timeout=90)
    assert re.match(r" \d+\+? results? · ", search(child, "cat", 1))
    child.send("\x14")  # Ctrl-T
    child.expect(r"\x1b\[7m([^\x1b\n]*)search #2 ")
    drawn = output(child)[output(child).rindex("search #1") :]
    assert "like “" in drawn  # "more like “NAME” (Esc: back)", cut to "like “NAME”" beside a long path
    assert re.search(r"\[(near copy|same caption|same template|similar caption)\]", drawn), drawn
    child.send("\x1b")
    child.expect("“cat”")  # the query's list again (its header, cut or not)
    child.send("\x1b")
    rc, raw = finish(child)
    assert rc == 130
    assert_restored(raw)
