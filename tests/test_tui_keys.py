"""The search screen's keys as fzf's: every key acts on the list of the query typed before it, Down
moves from anywhere, one Enter picks, and every match is reachable (the list grows past its first
page). Headless through process_event and paint, then in a real PTY on the fixture library."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from test_tui import (
    dataclass_replace,
    expected_paths,
    fake_result,
    feed,
    printed,
    screen,
    searched_state,
    served_results,
)

from helpers import assert_restored, expect_ready, finish, output, run_app, screen_text, search
from mambomeme import tui

# -- headless ----------------------------------------------------------------------------------


def test_a_key_pressed_before_the_answer_acts_on_it():
    """fzf's Down always moves: keys pressed before the list answers the typed query wait for that
    answer (asked at once, answered before the next key is read), then act on it in order."""
    rows = tuple(tui.row_from_result(fake_result(i), "cat") for i in range(1, 6))
    s, eff = feed(tui.TUIState(system="bm25", model="unused"), *"cat", "<DOWN>")
    assert eff[-1] == tui.DoSearch("cat", 0, 1, now=True) and s.queued == ("<DOWN>",)
    s, eff = feed(s, tui.Searched(0, "cat", rows, 1.0, "bm25", 1, live=1))
    assert (s.focus, s.selected, s.queued) == ("list", 1, ())
    s, eff = feed(s, "<Ctrl-m>")
    assert eff == [tui.Record("choose", "cat", 2, 2), tui.Choose(("/memes/cena-02.png",), (2,))]
    # with -m: Down, Tab, Tab marks the second and the third
    s, _ = feed(tui.TUIState(system="bm25", model="unused", multi=True), *"cat", "<DOWN>", "<TAB>", "<TAB>")
    assert s.queued == ("<DOWN>", "<TAB>", "<TAB>")
    s, _ = feed(s, tui.Searched(0, "cat", rows, 1.0, "bm25", 1, live=1))
    assert [r.item_id for r in s.marked] == [2, 3] and s.selected == 3
    # wherever the cursor is on the query line, Up/Down and Ctrl-N/Ctrl-P move the selection
    for keys in (("<LEFT>",), ("<HOME>",), ("<LEFT>", "<LEFT>")):
        t, _ = feed(s, *keys, "<DOWN>")
        assert (t.selected, t.focus) == (4, "list"), keys
        t, _ = feed(t, *keys, "<Ctrl-p>", "<Ctrl-p>")
        assert t.selected == 2, keys
        t, _ = feed(t, *keys, "<Ctrl-n>")
        assert t.selected == 3, keys
    # --wait-ready: the keys wait for the model, then for the answer
    s, eff = feed(tui.TUIState(system="hybrid", wait_ready=True), *"cat", "<DOWN>", "<Ctrl-m>")
    assert s.pending == "cat" and s.queued == ("<DOWN>", "<Ctrl-m>")
    assert not any(isinstance(e, tui.DoSearch) for e in eff)
    s, eff = feed(s, tui.ModelStatus("ready"))
    assert eff == [tui.DoSearch("cat", 1)]
    s, eff = feed(s, tui.Searched(1, "cat", rows, 1.0, "hybrid", 2))
    assert eff[-1] == tui.Choose(("/memes/cena-02.png",), (2,))
    # a query typed after the keys drops them: they were for a query no longer typed
    s, _ = feed(tui.TUIState(system="hybrid", wait_ready=True), *"cat", "<DOWN>", "s")
    assert s.queued == ()


def test_one_enter_picks_from_the_answer_to_the_typed_query():
    """Enter on a query the list does not answer yet searches it (a submit, its last word whole)
    and picks that answer's first meme; a query with no match leaves the screen open."""
    rows = tuple(tui.row_from_result(fake_result(i), "cat") for i in range(1, 4))
    s, eff = feed(tui.TUIState(system="bm25", model="unused"), *"cat", "<Ctrl-m>")
    assert eff[-1] == tui.DoSearch("cat", 1) and s.queued == ("<Ctrl-m>",)
    s, eff = feed(s, tui.Searched(1, "cat", rows, 1.0, "bm25", 1))
    assert eff == [
        tui.Record("render", "cat"),
        tui.Record("choose", "cat", 1, 1),
        tui.Choose(("/memes/cena-01.png",), (1,)),
    ]
    s, eff = feed(tui.TUIState(system="bm25", model="unused"), *"zzqx", "<Ctrl-m>")
    s, eff = feed(s, tui.Searched(1, "zzqx", (), 1.0, "bm25", 1))
    assert eff == [tui.Record("render", "zzqx")] and s.queued == () and "no match" in screen(s)[0][23]


def test_the_list_grows_past_its_first_page_and_says_it_has_more():
    results = [fake_result(i) for i in range(1, 31)]
    rows = tuple(tui.row_from_result(r, "homework") for r in results)
    s, _ = feed(
        tui.TUIState(system="bm25", model="unused"),
        *"homework",
        "<Ctrl-s>",
        tui.Searched(1, "homework", rows[:10], 1.0, "bm25", 1, more=True),
    )
    text, _ = screen(s)
    assert "10+ results" in text[23] and " 1/10+ " in text[1]
    s, eff = feed(s, "<PAGEDOWN>")  # to the 6th: not yet near the end
    assert s.selected == 5 and eff == []
    s, eff = feed(s, "<DOWN>", "<DOWN>")  # the 8th, 3 from the end: twice as many asked, at once
    assert eff == [tui.DoSearch("homework", 1, 1, exact=True, now=True, limit=20, extend=True)]
    s, _ = feed(s, tui.Searched(1, "homework", rows[:20], 1.0, "bm25", 1, live=1, more=True, extend=True))
    assert len(s.rows) == 20 and s.selected == 7 and s.rows[19].rank == 20
    s, eff = feed(s, *["<PAGEDOWN>"] * 2)  # the 18th: 20 more asked
    assert s.selected == 17 and eff[-1].limit == 40
    s, _ = feed(s, tui.Searched(1, "homework", rows, 1.0, "bm25", 1, live=2, more=False, extend=True))
    s, eff = feed(s, *["<PAGEDOWN>"] * 4)
    assert (len(s.rows), s.selected, eff) == (30, 29, [])  # all 30: nothing more to ask
    text, _ = screen(s)
    assert "30 results" in text[23] and " 30/30 " in text[1] and "›30. Meme number 30" in "\n".join(text)


def test_the_help_fits_an_80x24_screen():
    s, _ = feed(searched_state(), "<F1>")
    text, _ = screen(s)
    body = [line.strip() for line in text[2:22]]
    for line in tui.HELP_LINES:
        assert line.strip() in body, line


def test_ctrl_r_shows_the_nearest_memes_of_a_no_match_under_not_confident():
    """A "no match" offers Ctrl-R (its text, the hint line, F1): the typed query searched without the
    "no match" rule, its rows under a "not confident" line, Enter picks from them; a new query
    typed is answered as usual."""
    rows = tuple(tui.row_from_result(fake_result(i), "zzqx") for i in range(1, 4))
    s, _ = feed(tui.TUIState(system="hybrid", model="ready"), *"zzqx", "<Ctrl-s>")
    s, eff = feed(s, tui.Searched(1, "zzqx", (), 1.0, "hybrid", 2))
    text, _ = screen(s)
    assert "no match for “zzqx”" in text[2] and "Ctrl-R shows the nearest memes" in text[4]
    assert "Ctrl-R the nearest memes" in text[22]
    s, eff = feed(s, "<Ctrl-r>")
    assert eff == [tui.DoSearch("zzqx", 2, nearest=True)]
    s, eff = feed(s, tui.Searched(2, "zzqx", rows, 3.0, "hybrid", 2, nearest=True))
    text, _ = screen(s)
    assert text[2].startswith("not confident: nothing fits “zzqx” well") and "› 1. Meme number 1" in text[3]
    assert "3 nearest, not confident" in text[23] and s.focus == "list"
    s, eff = feed(s, "<DOWN>")
    t, eff = feed(s, "<Ctrl-y>")
    assert eff[-1] == tui.CopyPath("/memes/cena-02.png", 2)
    t, eff = feed(s, "<Ctrl-m>")
    assert eff[-1] == tui.Choose(("/memes/cena-02.png",), (2,))
    # the list grows, and the library changing asks again, without the rule too
    t, eff = feed(dataclass_replace(s, more=True), "<DOWN>")
    assert eff[-1].extend and eff[-1].nearest
    assert feed(s, tui.LibraryChanged())[1][-1].nearest
    # a new query typed: answered as usual
    s, eff = feed(s, "s", tui.Paused(s.edits + 1))
    assert eff[-1] == tui.DoSearch("zzqxs", 2, 1)
    s, _ = feed(s, tui.Searched(2, "zzqxs", (), 1.0, "hybrid", 2, live=1))
    assert not s.nearest and "Ctrl-R shows the nearest memes" in screen(s)[0][4]
    # Ctrl-R typed with the query, before its answer: it waits for it, then asks for the nearest
    s, eff = feed(tui.TUIState(system="hybrid", model="ready"), *"zzqx", "<Ctrl-r>", "<Ctrl-m>")
    assert eff[-1] == tui.DoSearch("zzqx", 1) and s.queued == ("<Ctrl-r>", "<Ctrl-m>")
    s, eff = feed(s, tui.Searched(1, "zzqx", (), 1.0, "hybrid", 2))
    assert eff[-1] == tui.DoSearch("zzqx", 2, nearest=True) and s.queued == ("<Ctrl-m>",)
    s, eff = feed(s, tui.Searched(2, "zzqx", rows, 3.0, "hybrid", 2, nearest=True))
    assert eff[-1] == tui.Choose(("/memes/cena-01.png",), (1,))
    # a list that answers confidently: Ctrl-R says what it is for, and asks nothing
    s, eff = feed(searched_state(), "<Ctrl-r>")
    assert eff == [] and "no match" in s.message
    assert any("Ctrl-R" in line for line in tui.HELP_LINES)


def test_a_weaker_matches_line_divides_the_list_and_the_keys_move_across_it():
    """Results whose evidence is much weaker than the first's sit under a "weaker matches" line;
    it is not a row: Down moves from the last strong result to the first weaker one, Up back, and
    Enter picks the weaker one highlighted."""
    results = [fake_result(i, evidence="weaker" if i > 3 else "words") for i in range(1, 9)]
    rows = tuple(tui.row_from_result(r, "see me") for r in results)
    assert [r.weaker for r in rows] == [False] * 3 + [True] * 5 and tui.divider_index(rows) == 3
    s, _ = feed(tui.TUIState(system="bm25", model="unused"), *"see me", "<Ctrl-s>")
    s, _ = feed(s, tui.Searched(1, "see me", rows, 1.0, "bm25", 1))
    text, _ = screen(s)
    at = [i for i, line in enumerate(text) if "weaker matches" in line]
    assert len(at) == 1 and text[at[0]].strip().startswith("─") and text[at[0]].rstrip().endswith("─")
    above = [line for line in text[: at[0]] if re.match(r"[› ] ?\d+\. ", line)]
    below = [line for line in text[at[0] :] if re.match(r"[› ] ?\d+\. ", line)]
    assert [line.split(".")[0][-1] for line in above] == ["1", "2", "3"] and below[0].startswith("  4. ")
    s, _ = feed(s, "<DOWN>", "<DOWN>", "<DOWN>")  # from the 1st across the line to the 4th
    assert s.selected == 3 and "› 4. Meme number 4" in "\n".join(screen(s)[0])
    t, eff = feed(s, "<Ctrl-m>")
    assert eff[-1] == tui.Choose(("/memes/cena-04.png",), (4,))
    s, _ = feed(s, "<UP>")
    assert s.selected == 2
    # scrolled to the end of a long list the line stays where the weaker results start, and every
    # row still fits: the screen keeps a line for it
    s, _ = feed(s, *["<DOWN>"] * 10)
    text, _ = screen(s)
    assert s.selected == 7 and "› 8. Meme number 8" in "\n".join(text) and text[23].startswith(" 8 results")
    # no weaker result: no line (nor for a first result that is weaker, which search never gives)
    plain = tuple(tui.row_from_result(fake_result(i), "see me") for i in range(1, 4))
    assert tui.divider_index(plain) is None
    s, _ = feed(tui.TUIState(system="bm25", model="unused"), *"see me", "<Ctrl-s>")
    s, _ = feed(s, tui.Searched(1, "see me", plain, 1.0, "bm25", 1))
    assert not any("weaker matches" in line for line in screen(s)[0])


def test_the_preview_is_on_where_it_fits_beside_a_readable_list():
    s = searched_state()
    t, eff = feed(s, tui.Sized(24, 80))
    assert eff == [] and "│" not in "".join(screen(t)[0][2:22])  # 80x24: the list alone; Ctrl-/ asks
    t, eff = feed(s, tui.Sized(40, 120))
    assert eff == [tui.LoadPreview(1)]
    t, _ = feed(t, tui.PreviewLoaded(1, tui.Preview(4, 4, bytes(range(48)))))
    text, raw = screen(t, 40, 120)
    assert text[2].index("│") == 72 and "Meme number 1" in text[2][73:] and "▀" in raw
    t, eff = feed(t, "<Ctrl-/>")  # off, as asked, whatever the size
    assert t.show_preview is False and "│" not in "".join(screen(t, 40, 120)[0][2:38])
    # NO_COLOR: the picture in characters, never colour codes
    black = tui.Preview(2, 2, bytes(12))
    mono, _ = feed(dataclass_replace(s, color=False), tui.Sized(40, 120), tui.PreviewLoaded(1, black))
    text, raw = screen(mono, 40, 120)
    assert any("@@" in line[73:] for line in text) and "▀" not in raw


# -- in a real PTY ------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("size", [(24, 80), (40, 120)])
@pytest.mark.parametrize(
    ("keys", "multi", "want"),
    [
        ("cat\x1b[B\r", False, [1]),  # Down at once after typing, then Enter: the second
        ("cat\x1b[D\x1b[H\x1b[B\r", False, [1]),  # Left and Home first: Down still moves
        ("cat\x1b[B\t\t\r", True, [1, 2]),  # with -m, Down, Tab, Tab marks the second and the third
        ("cat\r", False, [0]),  # one Enter picks the typed query's best match
    ],
)
def test_keys_typed_at_once_act_on_the_typed_querys_list(
    fixture_library: Path, size: tuple[int, int], keys: str, multi: bool, want: list[int]
):
    cats = expected_paths(fixture_library, "cat")
    child = run_app(fixture_library, "--system", "bm25", *(["-m"] if multi else []))
    child.setwinsize(*size)
    child.expect("Search:")
    child.send(keys)
    rc, raw = finish(child)
    assert rc == 0
    assert printed(raw) == [cats[i] for i in want]
    assert_restored(raw)


@pytest.mark.slow
def test_every_match_is_reachable_past_the_first_page(fixture_library: Path):
    served = served_results(fixture_library, "john cena")
    assert len(served) >= 4
    child = run_app(fixture_library, "--system", "bm25", "-n", "2")
    assert search(child, "john cena", 1).startswith(" 2+ results ")
    assert " 1/2+ " in output(child)  # the header: more than the two shown
    child.send("\x1b[B" * (len(served) - 1))
    child.expect(rf" {len(served)}/{len(served)} ")
    child.send("\r")
    rc, raw = finish(child)
    assert rc == 0 and printed(raw) == [served[-1][1]]
    assert_restored(raw)


@pytest.mark.slow
def test_the_nearest_memes_past_no_match_on_one_key(fixture_library: Path):
    """A query with no match, then Ctrl-R: the nearest memes under "not confident"; Enter prints one."""
    child = run_app(fixture_library, "--system", "hybrid", timeout=90)
    expect_ready(child, timeout=90)
    assert search(child, "qwzx vbnm", 1).startswith(" no match · ")
    child.send("\x12")  # Ctrl-R
    child.expect(r"\x1b\[7m([^\x1b\n]*)search #2 ")
    assert re.match(r" 10\+? nearest, not confident · ", child.match.group(1))
    assert "not confident: nothing fits “qwzx vbnm” well" in output(child)
    child.send("\r")
    rc, raw = finish(child)
    assert rc == 0 and len(printed(raw)) == 1 and Path(printed(raw)[0]).is_file()
    assert_restored(raw)


@pytest.mark.slow
def test_the_screen_divides_john_cena_from_the_weaker_matches(fixture_library: Path):
    """In a PTY with the model: "john cena" draws its five memes, a "weaker matches" line, then the
    weaker ones; Down five times crosses the line to the sixth, which Enter prints."""
    from mambomeme.embed import get_embedder
    from mambomeme.library import DB
    from mambomeme.search import Searcher

    d = DB(fixture_library, create=False)
    try:
        results = Searcher(d, get_embedder()).search("john cena", "hybrid", 10)
    finally:
        d.close()
    weaker = [i for i, r in enumerate(results) if r.evidence == "weaker"]
    assert weaker and weaker[0] == 5
    child = run_app(fixture_library, "--system", "hybrid", timeout=90)
    expect_ready(child, timeout=90)
    assert re.match(r" 10\+? results · ", search(child, "john cena", 1))
    drawn = screen_text(output(child))
    drawn = drawn[drawn.rindex("“john cena”") :]
    assert drawn.index(" 5. ") < drawn.index("── weaker matches ──") < drawn.index(" 6. ")
    child.send("\x1b[B" * 5)
    child.expect(r" 6/10\+? ")
    child.send("\r")
    rc, raw = finish(child)
    want = str(Path(results[5].details["root_path"]) / results[5].details["rel_path"])
    assert rc == 0 and printed(raw) == [want]
    assert_restored(raw)
