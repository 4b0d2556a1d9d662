"""The full-screen search: painting tested headless, behaviour in a real 80x24 PTY.

The PTY tests run the app under `bash -c 'APP; echo RC=$?; stty -a'`, so every way out is
checked for a restored terminal: alternate screen left, cursor shown, `icanon` and `echo` back on.
Most use the lexical system (`--system bm25`), which never loads the embedding model; the model
tests use hybrid."""

from __future__ import annotations

import base64
import dataclasses
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pexpect
import pytest

from helpers import (
    ESC,
    REPO,
    TUI_MODULE,
    app_cmd,
    assert_restored,
    expect_ready,
    finish,
    forget_vectors,
    invoke,
    output,
    run_app,
    screen_text,
    search,
    spawn,
)
from mambomeme import tui
from mambomeme.library import DB
from mambomeme.search import Searcher


def header(query: str) -> str:
    """The results header for `query` (its title, then the rule or the N/10 counter), not the
    "no match for" line: at 80 columns a long path leaves room for the quoted query only."""
    return re.escape(f"“{query}”") + r" (\x1b\[[\d;]*m)*(─| \d+/)"


def app_pid(shell_pid: int) -> int:
    """The app's process id: the python child of the wrapping bash."""
    deadline = time.time() + 5
    while time.time() < deadline:
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == shell_pid:
                return int(stat.parent.name)
        time.sleep(0.05)
    raise AssertionError("app process not found")


def expected_paths(db: Path, query: str, system: str = "bm25") -> list[str]:
    d = DB(db, create=False)
    try:
        return [
            str(Path(r.details["root_path"]) / r.details["rel_path"])
            for r in Searcher(d, None).search(query, system, 10)
        ]
    finally:
        d.close()


def events(db: Path) -> list[dict]:
    d = DB(db, create=False)
    try:
        cur = d.con.execute("SELECT * FROM interaction_events ORDER BY event_id")
        cols = None
        out = []
        for row in cur:
            cols = cols or [c[0] for c in cur.getdescription()]
            out.append(dict(zip(cols, row, strict=True)))
        return out
    finally:
        d.close()


# -- headless: state and painting --------------------------------------------------------------


def fake_result(
    n: int,
    *,
    title: str = "",
    ocr: str = "",
    safety: str = "safe",
    dups: int = 0,
    lex: int | None = 1,
    vec: int | None = None,
    evidence: str = "words",
) -> SimpleNamespace:
    details = {
        "title": title or f"Meme number {n}",
        "template": "Anvil Champ",
        "entities": '["john cena"]',
        "tags": '["wrestling"]',
        "description": "",
        "ocr_text": ocr or f"you can't see me {n}",
        "safety": safety,
        "root_path": "/memes",
        "rel_path": f"cena-{n:02}.png",
        "duplicate_count": dups,
        "has_preview": 1,
    }
    return SimpleNamespace(
        item_id=n, rank=n, lexical_rank=lex, fuzzy_rank=None, dense_rank=vec, details=details, evidence=evidence
    )


def screen(state: tui.TUIState, rows: int = 24, cols: int = 80) -> tuple[list[str], str]:
    arr = tui.paint(state, rows, cols)
    assert (arr.height, arr.width) == (rows, cols)
    return [line.s for line in arr], "\n".join(str(line) for line in arr)


def feed(state: tui.TUIState, *keys: object) -> tuple[tui.TUIState, list]:
    effects: list = []
    for k in keys:
        state, eff = tui.process_event(state, k)
        effects.extend(eff)
    return state, effects


def searched_state(n: int = 10, **kw: object) -> tui.TUIState:
    results = [
        fake_result(i, safety="sensitive" if i == 2 else "safe", dups=3 if i == 3 else 0, vec=i if i % 2 else None)
        for i in range(1, n + 1)
    ]
    rows = tuple(tui.row_from_result(r, "see me") for r in results)
    s = tui.TUIState(system="hybrid", model="loading", **kw)
    s, _ = feed(s, *"see", "<SPACE>", *"me")
    s, eff = feed(s, "<Ctrl-s>")
    assert eff == [tui.DoSearch("see me", 1)]
    s, eff = feed(s, tui.Searched(1, "see me", rows, 4.2, "bm25", 1))
    assert eff == [tui.Record("render", "see me")]
    return s


def test_layout_80x24_shows_query_ten_results_badges_and_status():
    text, raw = screen(searched_state())
    assert text[0].startswith(" Search: see me")
    ranks = [int(m.group(1)) for line in text for m in [re.match(r"[ ›]\s?(\d+)\. ", line)] if m]
    assert ranks == list(range(1, 11))
    assert "› 1. Meme number 1" in text[2]
    assert "you can't see me 1" in text[3]
    assert "[LD]" in text[2] and "sensitive" in text[4] and "[L]" in text[4]
    assert "+3 dup" in text[6]
    status = text[23]
    assert "10 results" in status and "4.2 ms" in status and "bm25 v1" in status
    assert "model loading" in status and "search #1" in status
    # the matched words are highlighted (bold yellow) in the snippet
    assert f"{ESC}[33m{ESC}[1msee{ESC}[0m" in raw.replace(f"{ESC}[39m", "")


def test_no_match_and_start_screen():
    s = tui.TUIState(system="hybrid", model="ready")
    text, _ = screen(s)
    assert "Type what you remember" in "\n".join(text)
    s, _ = feed(s, *"zzqx", "<Ctrl-s>", tui.Searched(1, "zzqx", (), 1.0, "hybrid", 2))
    text, _ = screen(s)
    assert "no match for “zzqx”" in text[2]
    assert "no match" in text[23] and "hybrid v2" in text[23] and "model ready" in text[23]
    assert s.focus == "query"


def test_no_match_says_how_many_memes_are_withheld_never_which():
    note = "1 meme that holds these words is withheld: private, withdrawn or unsafe; see `mambo safety`"
    s, _ = feed(
        tui.TUIState(system="bm25", model="unused"),
        *"tandlewick",
        "<Ctrl-s>",
        tui.Searched(1, "tandlewick", (), 1.0, "bm25", 1, withheld=note),
    )
    text, _ = screen(s)
    assert "no match for “tandlewick”" in text[2] and text[3].strip() + " " + text[4].strip() == note + "."
    text, _ = screen(s, 10, 40)  # the compact list wraps it
    assert re.sub(r"\s+", " ", " ".join(text[3:7])).startswith(note)
    s, _ = feed(s, "<Ctrl-u>", *"zzqx", "<Ctrl-s>", tui.Searched(2, "zzqx", (), 1.0, "bm25", 1))
    assert "withheld" not in "\n".join(screen(s)[0]) and "close enough" in screen(s)[0][3]


@pytest.mark.parametrize("rows,cols", [(9, 40), (10, 39), (8, 30), (3, 5), (1, 1), (0, 0), (1, 200)])
def test_smaller_than_40x10_says_so(rows, cols):
    arr = tui.paint(searched_state(), rows, cols)
    assert (arr.height, arr.width) == (rows, cols)
    if rows >= 3 and cols >= 30:
        assert "needs a terminal of at least 40x10" in re.sub(r"\s+", " ", " ".join(line.s for line in arr))


@pytest.mark.parametrize("rows,cols", [(10, 40), (20, 100), (23, 80), (24, 79)])
def test_a_small_terminal_gets_the_compact_list(rows, cols):
    s, _ = feed(searched_state(), "<DOWN>", "<DOWN>", "<Ctrl-/>")  # the preview asked for: no room for it
    text, _ = screen(s, rows, cols)
    assert text[0].startswith(" Search: see me") and "search #1" in text[-1]
    assert "3/10" in text[1] and "› 3. Meme number 3" in "\n".join(text)  # the selected row is on screen
    assert "▀" not in "\n".join(text) and "preview needs 80x24" in text[-2]
    assert "▀" in "\n".join(screen(dataclass_replace(s, previews={3: tui.Preview(2, 2, bytes(12))}), 24, 80)[0])


def test_the_header_keeps_the_counter_and_the_querys_start_and_end():
    query = "the quick brown fox jumps over the lazy dog and then some more words at the end"
    results = tuple(tui.row_from_result(fake_result(i), query) for i in range(1, 11))
    s, _ = feed(tui.TUIState(), *query.replace(" ", "\0"), "<Ctrl-s>")
    s = dataclass_replace(s, query=query)
    s, _ = feed(s, tui.Searched(1, query, results, 1.0, "bm25", 1))
    for cols in (80, 40):
        header = screen(s, 24 if cols == 80 else 10, cols)[0][1]
        assert len(header) == cols and "1/10" in header
        assert "“the" in header and "end”" in header and "…" in header, header


def test_a_scrolled_query_marks_its_hidden_start():
    query = "x" * 30 + " the end of a long query that does not fit on the line"
    s = tui.TUIState(query=query, cursor=len(query))
    line = screen(s, 10, 40)[0][0]
    assert line.startswith(" Search: …") and "fit on the line" in line
    assert screen(tui.TUIState(query="short", cursor=5), 10, 40)[0][0].startswith(" Search: short")


def test_ctrl_u_clears_the_list_too():
    s = searched_state()
    s, effects = feed(s, "<Ctrl-u>")
    assert s.query == "" and s.rows == () and s.searched_query is None
    assert "Type what you remember" in "\n".join(screen(s)[0])
    # an answer to the cleared query, arriving late, is dropped
    late, _ = feed(s, tui.Searched(1, "see me", (tui.row_from_result(fake_result(1), "see me"),), 1.0, "bm25", 1))
    assert late.rows == ()


def test_no_color_paints_no_colour():
    s = searched_state()
    coloured = screen(s)[1]
    plain_state = dataclass_replace(s, color=False, show_preview=True, previews={1: tui.Preview(2, 2, bytes(12))})
    text, raw = screen(plain_state)
    assert re.search(r"\x1b\[3\dm", coloured) and not re.search(r"\x1b\[(3|4)\d(;|m)", raw)
    assert f"{ESC}[7m" in raw  # inverse stays: the status line
    assert "▀" not in raw and "@@" in "\n".join(text)  # a black picture, in the darkest character


def test_larger_terminal_adds_paths():
    text, _ = screen(searched_state(), 40, 120)
    assert "/memes/cena-01.png" in text[4]
    assert "search #1" in text[39]


def test_focus_and_keys():
    s = searched_state()
    assert s.focus == "list" and s.selected == 0
    s, _ = feed(s, "<DOWN>", "<DOWN>", "<PAGEDOWN>")
    assert s.selected == 7
    s, _ = feed(s, "<PAGEDOWN>")
    assert s.selected == 9
    s, _ = feed(s, "<PAGEUP>", "<UP>")
    assert s.selected == 3
    # Actions are keys that are not letters (fzf), so typing always edits the query
    s, eff = feed(s, "<Ctrl-y>")
    assert eff == [tui.Record("copy", "see me", 4, 4), tui.CopyPath("/memes/cena-04.png", 4)]
    assert s.message == "copied: /memes/cena-04.png"
    s, eff = feed(s, "<Ctrl-o>")
    assert eff == [tui.Record("open", "see me", 4, 4), tui.OpenFile("/memes/cena-04.png", "/memes/cena-04.png", 4)]
    s, eff = feed(s, "<Ctrl-/>")
    assert s.show_preview and eff == [tui.Record("preview", "see me", 4, 4), tui.LoadPreview(4)]
    s, eff = feed(s, "<F2>")
    assert not s.show_preview and eff == []
    s, _ = feed(s, "<F1>")
    assert s.show_help and "MamboMeme search: keys" in screen(s)[0][2]
    s, eff = feed(s, "<ESC>")  # any key closes the help; Esc does not quit from it
    assert not s.show_help and eff == []
    # every letter (o, c, p and ? too) goes back to the query and types itself
    for key in ("x", "o", "c", "p", "?"):
        t, eff = feed(s, key)
        assert (t.focus, t.query, eff) == ("query", "see me" + key, [tui.Typed(t.edits)]), key
    s, eff = feed(s, "x")
    assert (s.focus, s.query) == ("query", "see mex")
    s, _ = feed(s, "<BACKSPACE>", "<DOWN>")
    assert (s.focus, s.selected, s.query) == ("list", 4, "see me")
    s, _ = feed(s, *["<UP>"] * 5)
    assert (s.focus, s.selected) == ("query", 0)
    s, eff = feed(s, "<DOWN>", "<Ctrl-m>")  # Down from the query line moves too: Enter picks the second
    assert eff == [tui.Record("choose", "see me", 2, 2), tui.Choose(("/memes/cena-02.png",), (2,))]
    for key in ("<ESC>", "<Ctrl-c>", "<Ctrl-d>", tui.Interrupt()):
        assert feed(s, key)[1] == [tui.Quit()]
        assert feed(dataclass_replace(s, focus="query"), key)[1] == [tui.Quit()]


def test_fzf_keys_move_mark_and_pick_with_one_enter():
    """Ctrl-J/Ctrl-N and Ctrl-K/Ctrl-P move as Down and Up; with -m, Tab marks and moves down,
    Shift-Tab marks and moves up; Enter picks at once when the list shows the typed query (every
    marked meme, in the order marked), and searches first when it does not; Ctrl-G quits."""
    rows = tuple(tui.row_from_result(fake_result(i), "cena") for i in range(1, 6))
    single, _ = feed(
        tui.TUIState(system="bm25", model="unused"),
        *"cena",
        tui.Paused(4),
        tui.Searched(0, "cena", rows, 1.0, "bm25", 1, live=1),
        "<DOWN>",
    )
    hints = screen(single)[0][22]
    assert "Enter choose" in hints and "Tab mark" not in hints
    single, _ = feed(single, "<TAB>")
    assert single.marked == () and "mambo search -m" in screen(single)[0][22]  # as fzf: marks need -m
    s, _ = feed(tui.TUIState(system="bm25", model="unused", multi=True), *"cena", tui.Paused(4))
    s, eff = feed(s, tui.Searched(0, "cena", rows, 1.0, "bm25", 1, live=1))
    assert s.focus == "query" and s.rows == rows
    s, eff = feed(s, "<Ctrl-m>")  # one Enter: the list already answers "cena"
    assert eff == [tui.Record("choose", "cena", 1, 1), tui.Choose(("/memes/cena-01.png",), (1,))]
    for down, up in (("<Ctrl-j>", "<Ctrl-k>"), ("<Ctrl-n>", "<Ctrl-p>"), ("<DOWN>", "<UP>")):
        t, _ = feed(s, down, down, down)
        assert (t.focus, t.selected) == ("list", 3), down
        t, _ = feed(t, up)
        assert t.selected == 2 and t.query == "cena", up
    s, _ = feed(s, "<TAB>", "<TAB>", "<TAB>", "<Shift-TAB>", "<Shift-TAB>")
    assert [r.item_id for r in s.marked] == [1, 2, 4] and s.selected == 1  # 3 marked, then unmarked
    text, _ = screen(s)
    assert "3 marked" in text[23] and re.match(r" +1\. \* Meme number 1", text[2])
    s, eff = feed(s, "<Ctrl-m>")
    assert eff == [
        tui.Record("choose", "cena", 1, 1),
        tui.Record("choose", "cena", 2, 2),
        tui.Record("choose", "cena", 4, 4),
        tui.Choose(("/memes/cena-01.png", "/memes/cena-02.png", "/memes/cena-04.png"), (1, 2, 4)),
    ]
    # the query changed since the list was drawn: Enter searches it and picks from its answer
    s, eff = feed(s, "x", "<Ctrl-m>")
    assert eff[-1] == tui.DoSearch("cenax", 1) and s.queued == ("<Ctrl-m>",)
    t, eff = feed(s, tui.Searched(1, "cenax", rows, 1.0, "bm25", 1))
    assert eff[-1] == tui.Choose(("/memes/cena-01.png", "/memes/cena-02.png", "/memes/cena-04.png"), (1, 2, 4))
    assert feed(s, "<Ctrl-g>")[1] == [tui.Quit()]
    # Ctrl-S searches without choosing; Ctrl-Q is a key, not flow control: it changes nothing
    t, eff = feed(t, "<Ctrl-s>")
    assert eff == [tui.DoSearch("cenax", 2)] and t.queued == ()
    assert feed(s, "<Ctrl-q>") == (s, [])


def dataclass_replace(s: tui.TUIState, **kw: object) -> tui.TUIState:
    import dataclasses

    return dataclasses.replace(s, **kw)


def test_a_bracketed_paste_is_text_without_controls_or_escapes():
    """Between ESC[200~ and ESC[201~ (curtsies reads each marker as "\x1b[200" then "~") keys are
    text: a pasted BEL is not Ctrl-G, an escape sequence is dropped whole (`\x1b[31mred` is `red`)."""
    s, eff = feed(
        tui.TUIState(system="bm25", model="unused"),
        *"ab",
        "\x1b[200",
        "~",
        "x",
        "<Ctrl-g>",
        "<SPACE>",
        "\x1b[31",
        *"mred",
        "<Ctrl-j>",
        "<ESC>",
        "<Ctrl-m>",
        "\x1b[201",
        "~",
    )
    assert (s.query, s.cursor, s.paste) == ("abx red", 7, None)
    assert eff == [tui.Typed(1), tui.Typed(2), tui.Typed(3)]
    s, eff = feed(s, "<Ctrl-g>")  # after the paste, keys are keys again
    assert eff == [tui.Quit()]
    # a paste that never ends stops being one at PASTE_MAX characters
    s, _ = feed(tui.TUIState(), "\x1b[200", "~", *("q" * tui.PASTE_MAX))
    assert s.paste is None and s.query == "q" * tui.PASTE_MAX  # the rest were typed as keys


def test_a_changed_library_asks_the_list_again_and_a_meme_no_longer_servable_is_not_chosen():
    s, _ = feed(searched_state(), "<DOWN>")  # "see me" submitted; meme 2 highlighted
    assert (s.focus, s.rows[s.selected].item_id) == ("list", 2)
    s, eff = feed(s, tui.LibraryChanged())
    assert eff == [tui.DoSearch("see me", 1, 1, exact=True, limit=10)]  # a submit's query: its last word whole
    s, _ = feed(s, tui.Searched(1, "see me", tuple(r for r in s.rows if r.item_id != 1), 1.0, "bm25", 1, live=1))
    assert (s.focus, s.rows[s.selected].item_id, len(s.rows)) == ("list", 2, 9)  # meme 2 stays highlighted
    s, eff = feed(s, "<Ctrl-m>")
    assert eff[-1] == tui.Choose(("/memes/cena-02.png",), (2,))
    # the shell found meme 2 no longer servable: it leaves the list, nothing is chosen, the status line says so
    s, eff = feed(s, tui.Unservable((2,)))
    assert eff == [tui.DoSearch("see me", 1, 2, exact=True, limit=8)] and 2 not in [r.item_id for r in s.rows]
    assert "that meme is no longer shown (private, withdrawn or unsafe): nothing chosen" in screen(s)[0][22]
    s, _ = feed(s, tui.Unservable((3,), "opened"))  # Ctrl-O on a meme just made private: not opened
    assert "that meme is no longer shown (private, withdrawn or unsafe): nothing opened" in screen(s)[0][22]
    # a live list is asked again as a live search (its last word a prefix); nothing shown, nothing asked
    live, _ = feed(tui.TUIState(system="bm25", model="unused"), *"cen", tui.Paused(3))
    assert feed(live, tui.LibraryChanged())[1] == [tui.DoSearch("cen", 0, 2)]
    assert feed(tui.TUIState(), tui.LibraryChanged())[1] == []


def test_query_line_editing():
    s, _ = feed(tui.TUIState(), *"helo", "<LEFT>", "l", "<HOME>", "<DELETE>", "<END>", "<SPACE>", *"wor")
    assert (s.query, s.cursor) == ("ello wor", 8)
    s, _ = feed(s, "<Ctrl-w>")
    assert s.query == "ello "
    s, _ = feed(s, "<Ctrl-u>")
    assert s.query == ""
    s, eff = feed(s, "<Ctrl-m>")
    assert eff == [] and "type what you remember" in s.message


def test_a_pasted_combining_accent_joins_its_letter_and_the_screen_draws():
    """A decomposed accent (as file names from some systems have it) arrives as a letter and a
    zero-width combining mark: the mark joins the letter before it, or is dropped where no single
    character holds both (searching ignores accents); a zero-width character in the query line
    made the screen fail."""
    for keys, want in (("cafe\u0301", "café"), ("x\u0301y", "xy"), ("\u0301a", "a"), ("e\u0301\u0301", "é")):
        s, _ = feed(tui.TUIState(system="bm25", model="unused"), *keys)
        assert (s.query, s.cursor) == (want, len(want))
        for focus in ("query", "list"):
            screen = tui.paint(dataclasses.replace(s, focus=focus), 24, 80)
            assert want in str(screen.rows[0])
    s, _ = feed(tui.TUIState(), *"ab", "<LEFT>", "\u0308")
    assert (s.query, s.cursor) == ("äb", 1)


def test_wait_ready_holds_the_search_until_the_model_is_ready():
    s, eff = feed(tui.TUIState(wait_ready=True), *"cena", tui.Paused(4), "<Ctrl-s>")
    assert eff == [tui.Typed(1), tui.Typed(2), tui.Typed(3), tui.Typed(4)] and s.pending == "cena"
    s, eff = feed(s, tui.ModelStatus("ready"))
    assert eff == [tui.DoSearch("cena", 1)] and s.model == "ready"


def test_a_model_that_failed_says_why_over_the_answer_it_let_go():
    """--wait-ready: the model fails, the held search goes to the words, and its answer keeps the
    reason on the message line; the next submit's answer clears it (the status line still says
    "model failed")."""
    s, _ = feed(tui.TUIState(system="hybrid", wait_ready=True), *"cena", "<Ctrl-s>")
    s, eff = feed(s, tui.ModelStatus("failed", "ImportError: import numpy failed"))
    assert eff == [tui.DoSearch("cena", 1)] and s.pending is None
    rows = tuple(tui.row_from_result(fake_result(i), "cena") for i in range(1, 3))
    s, _ = feed(s, tui.Searched(1, "cena", rows, 2.0, "bm25", 1))
    text, _ = screen(s)
    assert text[22].startswith(" the model failed to load (ImportError: import numpy failed); searching by")
    assert "bm25 v1 · model failed: lexical only" in text[23]
    s, eff = feed(s, "<Ctrl-u>", *"cat", "<Ctrl-s>")
    s, _ = feed(s, tui.Searched(2, "cat", rows, 2.0, "bm25", 1))
    assert s.message == "" and "model failed: lexical only" in screen(s)[0][23]


def test_results_follow_the_typing_and_stale_answers_are_dropped():
    s, eff = feed(tui.TUIState(system="hybrid", model="ready"), *"cena")
    assert eff == [tui.Typed(1), tui.Typed(2), tui.Typed(3), tui.Typed(4)]
    s, eff = feed(s, "<LEFT>", "<RIGHT>")  # the cursor moved, the query did not change
    assert eff == [] and s.edits == 4
    assert feed(s, tui.Paused(3))[1] == []  # typing went on after that pause began
    s, eff = feed(s, tui.Paused(4))
    assert eff == [tui.DoSearch("cena", 0, 1)]
    assert feed(s, tui.Paused(4))[1] == []  # asked already
    rows = tuple(tui.row_from_result(fake_result(i), "cena") for i in range(1, 4))
    s, eff = feed(s, tui.Searched(0, "cena", rows, 3.0, "hybrid", 2, live=1))
    assert eff == [] and s.rows == rows and s.focus == "query" and s.searched_query == "cena"
    text, _ = screen(s)
    assert "3 results" in text[23] and "search #" not in text[23] and "Meme number 1" in text[2]
    # newer typing: the older live answer arriving late is dropped
    s, _ = feed(s, *" x", tui.Paused(6))
    assert s.asked == (0, 2) and s.asked_query == "cena x"
    late = tui.Searched(0, "cena", rows[:1], 3.0, "hybrid", 2, live=1)
    assert feed(s, late) == (s, [])
    # Ctrl-S searches at once (the scored submit) and supersedes the live search in flight
    s, eff = feed(s, "<Ctrl-s>")
    assert eff == [tui.DoSearch("cena x", 1)] and s.asked == (1, 0)
    assert feed(s, tui.Searched(0, "cena x", rows, 3.0, "hybrid", 2, live=2)) == (s, [])
    s, eff = feed(s, tui.Searched(1, "cena x", rows, 3.0, "hybrid", 2))
    assert eff == [tui.Record("render", "cena x")] and s.focus == "list"
    assert feed(s, tui.Paused(6))[1] == []  # the pause after Enter: searched already
    assert "search #1" in screen(s)[0][23]


def test_model_ready_reruns_what_the_lexical_stand_in_answered():
    s, eff = feed(tui.TUIState(system="hybrid", model="loading"), *"cena", "<Ctrl-s>")
    rows = tuple(tui.row_from_result(fake_result(i), "cena") for i in range(1, 3))
    s, _ = feed(s, tui.Searched(1, "cena", rows, 2.0, "bm25", 1))
    s, eff = feed(s, tui.ModelStatus("ready"))
    assert eff == [tui.DoSearch("cena", 1, 1)] and s.focus == "list"
    s, eff = feed(s, tui.Searched(1, "cena", rows[::-1], 2.0, "hybrid", 2, live=1))
    assert s.used_system == "hybrid" and s.rows == rows[::-1] and s.focus == "list"
    assert feed(tui.TUIState(system="hybrid"), tui.ModelStatus("ready"))[1] == []  # nothing asked yet


def test_the_model_ready_answer_keeps_the_openers_news():
    """Ctrl-O while the model loads: the opener fails, then the model-ready answer to the same
    query arrives; the status line still says the opener failed. A new query's answer clears it."""
    s, _ = feed(tui.TUIState(system="hybrid", model="loading"), *"cena", "<Ctrl-s>")
    rows = tuple(tui.row_from_result(fake_result(i), "cena") for i in range(1, 3))
    s, eff = feed(s, tui.Searched(1, "cena", rows, 2.0, "bm25", 1), "<Ctrl-o>")
    assert any(isinstance(e, tui.OpenFile) for e in eff)
    s, eff = feed(s, tui.Message("the opener failed (`false` exit 1)"), tui.ModelStatus("ready"))
    s, _ = feed(s, tui.Searched(1, "cena", rows, 2.0, "hybrid", 2, live=1))
    assert s.used_system == "hybrid" and screen(s)[0][22].startswith(" the opener failed")
    s, _ = feed(s, *" x", tui.Paused(s.edits), tui.Searched(1, "cena x", rows, 2.0, "hybrid", 2, live=2))
    assert s.message == ""


def test_the_selected_path_is_always_on_screen_and_the_help_hint_stays():
    s = searched_state()
    text, _ = screen(s)
    assert all("/memes/" not in line for line in text[2:22])  # ten results: no room for path lines
    assert text[1].rstrip().endswith("1/10 /memes/cena-01.png") and "results for “see me”" in text[1]
    s, _ = feed(s, "<DOWN>", "<DOWN>")
    assert screen(s)[0][1].rstrip().endswith("3/10 /memes/cena-03.png")
    assert "F1 help" in screen(s)[0][0] and "F1 help" in screen(dataclass_replace(s, focus="query"))[0][0]
    long = fake_result(1)
    long.details["rel_path"] = "a-very-long-folder-name/" * 6 + "the-file.png"
    s, _ = feed(tui.TUIState(), *"x", "<Ctrl-s>", tui.Searched(1, "x", (tui.row_from_result(long, "x"),), 1, "bm25", 1))
    line = screen(s)[0][1]
    assert len(line) == 80 and line.rstrip().endswith("the-file.png") and "…" in line


def test_preview_drawn_in_half_blocks():
    s = searched_state()
    s, eff = feed(s, "<Ctrl-/>")
    assert tui.LoadPreview(1) in eff
    text, _ = screen(s)
    assert "loading preview" in text[3]
    img = bytes([255, 0, 0] * 8 + [0, 0, 255] * 8)  # 8x2: red row over a blue row
    s, _ = feed(s, tui.PreviewLoaded(1, tui.Preview(8, 2, img)))
    text, raw = screen(s)
    blocks = [line for line in text if "▀" in line]
    assert blocks and all(line.index("│") == 40 < line.index("▀") for line in blocks)
    assert f"{ESC}[38;5;196m" in raw and f"{ESC}[48;5;21m" in raw  # red over blue, 256 colours
    _, raw = screen(dataclass_replace(s, truecolor=True))
    assert f"{ESC}[38;2;255;0;0m" in raw and f"{ESC}[48;2;0;0;255m" in raw
    s, eff = feed(s, "<DOWN>")
    assert eff == [tui.LoadPreview(2)]
    s, _ = feed(s, tui.PreviewLoaded(2, None))
    assert "no preview stored" in screen(s)[0][3]


def test_hostile_and_wide_text_is_drawn_harmlessly():
    evil = f"evil {ESC}]0;pwned\x07 {ESC}[2J text \u202e{ESC}P1;2|x{ESC}\\ 漢字かな é\u0301 \x9b31m"
    r = fake_result(1, title=f"title{ESC}[31m red", ocr=evil)
    r.details["rel_path"] = f"bad{ESC}[2Jname.png"
    row = tui.row_from_result(r, "text")
    for s_ in (row.name, row.snippet, row.shown_path):
        assert ESC not in s_ and "\x07" not in s_ and "\x9b" not in s_ and "\u202e" not in s_
    assert row.path.endswith(f"bad{ESC}[2Jname.png")  # the real name, for opening/printing only
    s, _ = feed(tui.TUIState(), *"text", "<Ctrl-s>", tui.Searched(1, "text", (row,) * 10, 1.0, "bm25", 1))
    for rows, cols in ((24, 80), (24, 81), (30, 97)):
        _, raw = screen(s, rows, cols)
        assert "pwned" not in raw and f"{ESC}[2J" not in raw and f"{ESC}]" not in raw
    text, _ = screen(s)
    assert "evil" in text[3] and "漢字" in text[3]


# -- end to end, in a real PTY -----------------------------------------------------------------


@pytest.mark.slow
def test_search_navigate_and_choose_prints_the_path(fixture_library: Path):
    paths = expected_paths(fixture_library, "john cena")
    assert len(paths) >= 3
    # stdout captured by $(...), as in `xdg-open "$(mambo search)"`: the UI still draws on the tty
    child = spawn(f'p="$({app_cmd(fixture_library, "--system", "bm25")})"; echo "RC=$? CHOSEN=[$p]"; stty -a')
    child.expect("Search:")
    status = search(child, "john cena", 1)
    assert re.match(rf" {len(paths)} results · [\d.]+ ms · bm25 v\d+ · lexical system ", status)
    child.send("\x1b[B\x1b[B")  # Down, Down
    child.expect("› 3. ")
    child.send("\x1b[A")  # Up
    child.expect("› 2. ")
    child.send("\r")
    child.expect(r"RC=(\d+) CHOSEN=\[(.*)\]\r\n")
    assert (child.match.group(1), child.match.group(2)) == ("0", paths[1])
    child.expect(pexpect.EOF)
    assert_restored(output(child))


@pytest.mark.slow
def test_chosen_path_printed_after_leaving_the_screen(fixture_library: Path):
    paths = expected_paths(fixture_library, "john cena")
    child = run_app(fixture_library, "--system", "bm25")
    search(child, "john cena", 1)
    child.send("\r")
    rc, raw = finish(child)
    assert rc == 0
    assert raw.index(f"{ESC}[?1049l") < raw.index(paths[0] + "\r\n")
    assert_restored(raw)


@pytest.mark.slow
def test_a_library_waiting_to_be_embedded_says_so_and_finds_by_words(library_copy: tuple[Path, Path]):
    """A library an older version embedded (migration 015 emptied its vectors): the screen says how
    many memes wait and what to run, and "john cena" is still found, by its words."""
    db_path, _images = library_copy
    items = forget_vectors(db_path)
    child = run_app(db_path, "--system", "hybrid")
    child.expect_exact(f"{items} memes wait to be embedded")
    assert "results" in search(child, "john cena", 1)
    child.send("\x1b")
    rc, raw = finish(child)
    assert rc == 130 and "cena" in raw.lower()


@pytest.mark.slow
def test_no_match(fixture_library: Path):
    child = run_app(fixture_library, "--system", "bm25")
    assert search(child, "qwzx vbnm", 1).startswith(" no match · ")
    child.send("\x1b")
    rc, raw = finish(child)
    assert rc == 130
    assert "no match for “qwzx vbnm”" in raw


@pytest.mark.slow
def test_no_match_on_the_screen_counts_the_withheld(fixture_library: Path):
    # "Debt collection" (its sidecar says critical) names him: the screen says one meme is withheld
    child = run_app(fixture_library, "--system", "bm25")
    assert search(child, "morris tandlewick", 1).startswith(" no match · ")
    assert "1 meme that holds these words is withheld" in output(child)  # drawn before the status line
    child.send("\x1b")
    rc, raw = finish(child)
    assert rc == 130 and "Debt collection" not in raw and "owes me" not in raw


@pytest.mark.slow
def test_every_answer_on_the_screen_counts_the_withheld(fixture_library: Path):
    # results shown, and the status line says how many memes holding the words are withheld
    child = run_app(fixture_library, "--system", "bm25")
    status = search(child, "officer bumble", 1)
    assert re.search(r"^ \d+ results? · [\d.]+ ms · bm25 v\d+ · 2 withheld · ", status), status
    child.send("\x1b")
    rc, raw = finish(child)
    assert rc == 130


@pytest.mark.slow
def test_preview_copy_and_open(fixture_library: Path, tmp_path: Path):
    paths = expected_paths(fixture_library, "john cena")
    opened = tmp_path / "opened.txt"
    opener = tmp_path / "opener.sh"
    opener.write_text(f'#!/bin/sh\necho "$1" > {shlex.quote(str(opened))}\necho noise; echo noise >&2\n')
    opener.chmod(0o755)
    child = run_app(fixture_library, "--system", "bm25", env={"MAMBO_OPENER": str(opener)})
    search(child, "john cena", 1)
    child.send("\x1f")  # Ctrl-/: the preview
    child.expect(r"\x1b\[38;5;\d+m\x1b\[48;5;\d+m▀")  # a half block in 256 colours
    child.send("\x19")  # Ctrl-Y
    child.expect_exact(f"{ESC}]52;c;{base64.b64encode(paths[0].encode()).decode()}\x07")
    child.expect_exact(f"copied: {paths[0]}"[:70])
    child.send("\x0f")  # Ctrl-O
    child.expect("opened: ")
    deadline = time.time() + 5
    while not (opened.exists() and opened.read_text().strip()) and time.time() < deadline:
        time.sleep(0.05)
    assert opened.read_text().strip() == paths[0]
    # the screen is intact afterwards: the opener's output went nowhere, keys still work
    child.send("\x1b[B")
    child.expect("› 2. ")
    child.send("\x1b")
    rc, raw = finish(child)
    assert rc == 130 and "noise" not in raw
    assert_restored(raw)


@pytest.mark.slow
def test_results_follow_typing_without_enter(fixture_library: Path):
    paths = expected_paths(fixture_library, "john cena")
    child = run_app(fixture_library, "--system", "bm25")
    child.expect("Search:")
    child.send("john cena")  # no Enter: the list follows once typing pauses
    child.expect(header("john cena"))
    child.expect(rf"\x1b\[7m {len(paths)} results · [\d.]+ ms · bm25 v\d+")
    assert "search #" not in child.before + child.after
    child.send("\x15cat")  # a new query; letters type themselves (`c` is not "copy")
    child.expect(header("cat"))
    child.send("\x1b[B")  # Down from the query moves to the second; Enter chooses it
    child.expect("› 2. ")
    child.send("\r")
    rc, raw = finish(child)
    assert rc == 0 and f"{ESC}]52;" not in raw  # nothing was copied
    assert expected_paths(fixture_library, "cat")[1] + "\r\n" in raw
    assert_restored(raw)


@pytest.mark.slow
def test_ctrl_z_suspends_and_restores_the_terminal(fixture_library: Path):
    child = run_app(fixture_library, "--system", "bm25")
    search(child, "john cena", 1)
    pid = app_pid(child.pid)
    start = len(output(child))
    child.send("\x1a")  # Ctrl-Z
    child.expect_exact(f"{ESC}[?1049l")  # the main screen is back
    deadline = time.time() + 5
    while Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "T" and time.time() < deadline:
        time.sleep(0.05)
    assert Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "T", "not stopped"
    stopped = output(child)[start:]
    assert stopped.rfind(f"{ESC}[?25h") > stopped.rfind(f"{ESC}[?25l")  # cursor shown while stopped
    os.kill(pid, signal.SIGCONT)  # what `fg` does
    child.expect_exact(f"{ESC}[?1049h")
    child.expect("Search:")  # redrawn whole
    search(child, "cat", 2)  # and working
    child.send("\x1b")
    rc, raw = finish(child)
    assert rc == 130
    assert_restored(raw)


@pytest.mark.slow
@pytest.mark.parametrize("how", ["esc", "ctrl-c", "ctrl-d", "sigterm", "sighup", "exception"])
def test_every_way_out_restores_the_terminal(fixture_library: Path, how: str):
    if how == "exception":
        code = (
            f"import sys\nimport {TUI_MODULE} as t\nfrom mambomeme.library import DB\n"
            "orig = t.paint\n"
            "def paint(s, r, c):\n"
            "    if s.query == 'boom': raise RuntimeError('boom in paint')\n"
            "    return orig(s, r, c)\n"
            "t.paint = paint\n"
            f"db = DB({str(fixture_library)!r}, create=False)\n"
            "sys.exit(t.run_tui(db, 'bm25'))\n"
        )
        child = spawn(f'{shlex.join([sys.executable, "-c", code])}; echo "RC=$?"; stty -a')
    else:
        child = run_app(fixture_library, "--system", "bm25")
    search(child, "john cena", 1)
    if how == "esc":
        child.send("\x1b")
    elif how == "ctrl-c":
        child.send("\x03")
    elif how == "ctrl-d":
        child.send("\x04")
    elif how == "sigterm":
        os.kill(app_pid(child.pid), signal.SIGTERM)
    elif how == "sighup":
        os.kill(app_pid(child.pid), signal.SIGHUP)
    else:
        child.send("\x15boom")
    rc, raw = finish(child)
    assert rc == {"sigterm": 128 + signal.SIGTERM, "sighup": 128 + signal.SIGHUP, "exception": 1}.get(how, 130)
    assert_restored(raw)
    if how == "exception":
        after = raw[raw.rindex(f"{ESC}[?1049l") :]
        assert "RuntimeError: boom in paint" in after  # the traceback, on the restored terminal


@pytest.mark.slow
def test_resize(fixture_library: Path):
    child = run_app(fixture_library, "--system", "bm25")
    search(child, "john cena", 1)
    child.setwinsize(30, 100)
    child.expect(r"\x1b\[30;1H[^\n]*search #1 ")  # the status line, now on row 30
    child.setwinsize(20, 60)  # the compact list (tests/test_tui.py::test_a_40x10_split...)
    child.setwinsize(8, 30)
    child.expect("needs a terminal")
    child.setwinsize(24, 80)
    child.expect(r"\x1b\[24;1H[^\n]*search #1 ")
    search(child, "cat", 2)
    child.send("\x1b")
    rc, raw = finish(child)
    assert rc == 130
    assert_restored(raw)


@pytest.mark.slow
def test_hostile_ocr_text_never_reaches_the_terminal(library_copy: tuple[Path, Path]):
    db_path, _ = library_copy
    hostile = f"evil {ESC}]0;pwned\x07 {ESC}[2J text"
    d = DB(db_path, create=False)
    with d.write():
        item = d.con.execute("SELECT item_id FROM items WHERE entities LIKE '%john cena%' LIMIT 1").fetchall()[0][0]
        d.con.execute(
            "UPDATE items SET ocr_text = ?, title = ? WHERE item_id = ?",
            (hostile, f"cena {ESC}[31mred{ESC}]52;c;aGk=\x07", item),
        )
    d.close()
    child = run_app(db_path, "--system", "bm25")
    child.expect("Search:")
    search(child, "john cena", 1)
    assert "evil" in output(child)
    child.send("\x1b")
    rc, raw = finish(child)
    assert rc == 130
    assert "pwned" not in raw and f"{ESC}]0;" not in raw
    assert f"{ESC}[2J" not in raw  # nothing in this session clears the screen but that text
    assert f"{ESC}]52;c;aGk=" not in raw and re.search(r"cena(\x1b\[[\d;]*m)* red", raw)


def _act(child: pexpect.spawn) -> None:
    """search, preview, copy, open, choose."""
    search(child, "john cena", 1)
    child.send("\x1f")  # Ctrl-/
    child.expect("▀")
    child.send("\x19")  # Ctrl-Y
    child.expect("copied: ")
    child.send("\x0f")  # Ctrl-O
    child.expect("opened: ")
    child.send("\x1b[B\r")


@pytest.mark.slow
@pytest.mark.parametrize("opt_in", ["off", "flag", "setting"])
def test_interaction_events_only_with_opt_in(library_copy: tuple[Path, Path], opt_in: str):
    db_path, _ = library_copy
    if opt_in == "setting":
        d = DB(db_path, create=False)
        with d.write():
            d.con.execute("INSERT OR REPLACE INTO settings(key, value) VALUES ('interaction_events', 'on')")
        d.close()
    flags = ["--system", "bm25"] + (["--record-events"] if opt_in == "flag" else [])
    child = run_app(db_path, *flags, env={"MAMBO_OPENER": shutil.which("true") or "true"})
    _act(child)
    rc, raw = finish(child)
    assert rc == 0
    assert_restored(raw)
    got = events(db_path)
    if opt_in == "off":
        assert got == []
        return
    assert [e["kind"] for e in got] == ["render", "preview", "copy", "open", "choose"]
    assert {e["query"] for e in got} == {"john cena"}
    assert len({e["session"] for e in got}) == 1
    assert [e["rank"] for e in got] == [None, 1, 1, 1, 2]
    assert all(e["system"] == "bm25" and e["system_version"] >= 1 for e in got)
    assert all(e["interface_version"] == tui.TUI_INTERFACE_VERSION for e in got)
    ms = [e["ms_since_render"] for e in got]
    assert ms[0] == 0 and all(b >= a >= 0 for a, b in zip(ms, ms[1:], strict=False))


@pytest.mark.slow
def test_usable_at_once_while_the_model_loads_then_hybrid(fixture_library: Path):
    t0 = time.monotonic()
    child = run_app(fixture_library, "--system", "hybrid", timeout=60)
    status = search(child, "john cena", 1)
    first = time.monotonic() - t0
    assert re.search(r"results · [\d.]+ ms · bm25 v\d+ · model loading…", status)
    assert first < 5, f"first answer after {first:.1f} s"  # ~0.5 s when the machine is idle
    expect_ready(child, timeout=90)
    # The list shown by the stand-in is asked again of the full system, without a key
    child.expect(r"results · [\d.]+ ms · hybrid v\d+ · model ready[^\n]*search #1 ")
    assert re.search(r"results · [\d.]+ ms · hybrid v\d+ · model ready", search(child, "cena", 2))
    child.send("\x1b")
    rc, raw = finish(child)
    assert rc == 130
    assert "[LFD]" in raw or "[LD]" in raw  # the dense route answered too
    assert_restored(raw)


def held_search_then_quit(child: pexpect.spawn, *, says_waiting: bool) -> tuple[int, str]:
    """A search submitted while the model loads (`--wait-ready`) is held (`says_waiting`: and the
    screen says so), then answered by hybrid itself once the model is ready as search #1; Esc
    quits. Returns finish()'s (exit code, raw output)."""
    child.expect("model loading…")
    child.send("john cena\x13")  # Ctrl-S: search without choosing
    if says_waiting:
        child.expect("waiting for the model")
    expect_ready(child)
    child.expect(r"search #1 ")
    assert re.search(r"results · [\d.]+ ms · hybrid v\d+ · model ready[^\n]*search #1 ", output(child))
    child.send("\x1b")
    return finish(child)


@pytest.mark.slow
def test_wait_ready_and_quit_while_loading(fixture_library: Path):
    child = run_app(fixture_library, "--system", "hybrid", "--wait-ready", timeout=90)
    rc, raw = held_search_then_quit(child, says_waiting=True)
    assert rc == 130
    assert "bm25 v" not in raw
    # quitting while the model is still loading is quick and clean
    child = run_app(fixture_library, "--system", "hybrid", timeout=30)
    child.expect("model loading…")
    t0 = time.monotonic()
    child.send("\x1b")
    rc, raw = finish(child)
    assert rc == 130 and time.monotonic() - t0 < 5
    assert "Traceback" not in raw
    assert_restored(raw)


# The app's sitecustomize in the next test: the model's thread waits until the screen's vector-matrix
# thread is inside its import of numpy (numpy/_globals.py, numpy's import lock held), which waits in
# turn until the model's thread waits on an import lock, then both go on; $HOLD_MARK says how it went.
HOLD_NUMPY_IMPORT = """
import os, sys, threading, time

in_numpy = threading.Event()

def _hold(frame, event, arg):
    me = threading.current_thread().name
    if me == "mambo-model":
        sys.settrace(None)
        in_numpy.wait(30)
    elif me != "mambo-vector-matrix":
        sys.settrace(None)
    elif frame.f_code.co_name == "<module>" and frame.f_code.co_filename.endswith("numpy/_globals.py"):
        sys.settrace(None)
        in_numpy.set()
        model = next(t for t in threading.enumerate() if t.name == "mambo-model")
        deadline, waited = time.monotonic() + 30, False
        while not waited and model.is_alive() and time.monotonic() < deadline:
            top = sys._current_frames().get(model.ident)
            waited = top is not None and top.f_code.co_name == "acquire" and "importlib" in top.f_code.co_filename
            time.sleep(0.001)
        with open(os.environ["HOLD_MARK"], "w") as f:
            f.write("the model's thread waited" if waited else "the model's thread never waited")

threading.settrace(_hold)
"""


@pytest.mark.slow
def test_the_model_loads_while_another_thread_imports_numpy(fixture_library: Path, tmp_path: Path):
    """The screen loads the model on one thread and its vector matrix on another, both importing
    numpy first. onnxruntime's extension imports a numpy submodule before numpy itself, so against a
    numpy import under way on the other thread both imports failed ("ImportError: import numpy
    failed": "model failed: lexical only", now and then on a busy machine). The overlap is made
    every time here; the model must load, and nothing may be said of it after the screen."""
    (tmp_path / "sitecustomize.py").write_text(HOLD_NUMPY_IMPORT)
    mark = tmp_path / "held.txt"
    child = run_app(
        fixture_library,
        "--system",
        "hybrid",
        "--wait-ready",
        timeout=90,
        env={"PYTHONPATH": f"{REPO}{os.pathsep}{tmp_path}", "HOLD_MARK": str(mark)},
    )
    rc, raw = held_search_then_quit(child, says_waiting=False)
    assert rc == 130
    assert mark.exists(), "the vector-matrix thread was not the first to import numpy: no overlap was made"
    assert mark.read_text() == "the model's thread waited"
    after = raw[raw.rindex(f"{ESC}[?1049l") :]
    assert "failed" not in after and "Traceback" not in after
    assert_restored(raw)


@pytest.mark.slow
def test_a_model_that_cannot_load_says_why_after_the_screen(fixture_library: Path, tmp_path: Path):
    """A model that cannot load (its cache folder is a file here) leaves the screen searching by
    words, and its reason, on the message line until the next message, is said again on stderr
    once the screen is gone."""
    cache = tmp_path / "not-a-folder"
    cache.write_text("")
    child = run_app(fixture_library, "--system", "hybrid", env={"MAMBO_MODEL_CACHE": str(cache)})
    child.expect("model failed: lexical only")
    assert re.search(r"bm25 v\d+ · model failed: lexical only", search(child, "john cena", 1))
    child.send("\x1b")
    rc, raw = finish(child)
    assert rc == 130
    after = screen_text(raw[raw.rindex(f"{ESC}[?1049l") : raw.rindex("RC=")])
    assert re.search(
        r"mambo: the embedding model failed to load \(\w+Error: .*not-a-folder.*\); the search "
        r"screen searched by words only",
        after,
    ), after
    assert_restored(raw)


@pytest.mark.slow
def test_terminal_hangup_ends_the_app(fixture_library: Path):
    """The terminal itself going away (SIGHUP, every write failing) ends the app cleanly."""
    env = {**os.environ, "TERM": "xterm-256color", "BLESSED_QUERY_TIMEOUT_SECONDS": "0", "PYTHONPATH": str(REPO)}
    argv = shlex.split(app_cmd(fixture_library, "--system", "bm25"))
    child = pexpect.spawn(argv[0], argv[1:], env=env, dimensions=(24, 80), encoding="utf-8", timeout=20)
    child.delaybeforesend = None
    search(child, "john cena", 1)
    os.close(child.child_fd)  # hang up
    child.ptyproc.closed = child.closed = True
    _, status = os.waitpid(child.pid, 0)
    child.ptyproc.terminated = child.terminated = True
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 128 + signal.SIGHUP


def test_encoding_ahead_while_typing_changes_no_ranking(fixture_library: Path):
    """The TUI encodes the query line while the user types (terminal._EncodeAhead), so a
    submit finds its vector ready. The submit's search still runs every route afresh: its results
    are exactly those of a search that encodes after the submit, and a vector typed for another
    text is never used."""
    import functools
    import json

    from mambomeme.embed import get_embedder
    from mambomeme.query_plan import plan_query
    from mambomeme.tui_shell import _EncodeAhead

    queries = [
        json.loads(line)["query"]
        for line in (REPO / "benchdata" / "fixture" / "queries.jsonl").read_text().splitlines()
        if line.strip()
    ]
    db = DB(fixture_library, create=False, readonly=True)
    embedder = get_embedder()
    ahead = _EncodeAhead(
        embedder,
        lambda: DB(fixture_library, create=False, readonly=True),
        functools.partial(plan_query, aliases=True, correct=True),
    )
    plain, early = Searcher(db, embedder), Searcher(db, ahead)

    def ranking(results):
        return [(r.item_id, r.score, r.lexical_rank, r.dense_rank, r.similarity, r.coverage) for r in results]

    try:
        for q in queries:
            plan = plan_query(db, q)
            ahead.ask(q)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:  # the encoder thread finishes "typing" first
                done = ahead._done
                if not plan.tokens or (done is not None and done[0] == plan.dense_query):
                    break
                time.sleep(0.005)
            hits = ahead.hits
            assert ranking(early.search(q, "hybrid")) == ranking(plain.search(q, "hybrid")), q
            if plan.tokens:
                assert ahead.hits == hits + 1, f"{q!r} was encoded again after the submit"
            ahead.ask(f"{q} or something else")  # typed, then not submitted: its vector is not used
            assert ranking(early.search(q, "dense")) == ranking(plain.search(q, "dense")), q
        vec = ahead.encode(["a text nobody typed"])
        assert vec.tobytes() == embedder.encode(["a text nobody typed"]).tobytes()
    finally:
        ahead.close()
        db.close()


def test_bench_tui_takes_turns_between_systems_on_a_topped_up_copy(fixture_library: Path):
    """`mambo bench tui` measures several systems in turns (their ratio holds on a busy machine) and,
    with --items, on a copy of the library topped up with synthetic items; the library is untouched."""
    import json

    from helpers import invoke

    db = DB(fixture_library, create=False, readonly=True)
    before = db.q1("status_counts")[0]
    db.close()
    out = invoke(
        "--db",
        fixture_library,
        "bench",
        "tui",
        "--searches",
        "12",
        "--warmups",
        "2",
        "--items",
        "300",
        "--system",
        "hybrid",
        "--system",
        "bm25",
    ).output
    report = json.loads(out[out.index("{") :])
    assert set(report["systems"]) == {"hybrid", "bm25"}
    for name, r in report["systems"].items():
        assert r["system"] == name and r["n"] == 12 and r["warmups"] == 2
        assert 0 < r["submit_to_render_ms"]["p50"] <= r["submit_to_render_ms"]["p95"]
    assert set(report["ratios"]) == {"hybrid/bm25"}
    assert report["library"]["items"] == 300
    assert len(report["machine"]["load_average_before"]) == 3
    db = DB(fixture_library, create=False, readonly=True)
    assert db.q1("status_counts")[0] == before
    db.close()


@pytest.mark.slow
def test_typing_a_prefix_shows_its_words_and_one_enter_picks(fixture_library: Path):
    """As in fzf: "ca" (not yet "cat") already lists the cats, Ctrl-S does not freeze the screen,
    Ctrl-J moves down, and one Enter on the list that answers the typed query picks."""
    cats = expected_paths(fixture_library, "cat")
    child = run_app(fixture_library, "--system", "bm25")
    child.expect("Search:")
    child.send("\x13")  # Ctrl-S: with XON/XOFF on, the terminal would stop drawing here
    child.send("ca")
    child.expect(header("ca"))
    child.expect(r"\x1b\[7m \d+\+? results · ")
    assert "no match" not in output(child)
    child.send("\x0a\x0a")  # Ctrl-J: down (fzf), not Enter
    child.expect("› 3. ")
    child.send("\r")
    rc, raw = finish(child)
    assert rc == 0
    assert printed(raw)[0] in cats
    assert_restored(raw)


@pytest.mark.slow
def test_query_option_opens_with_the_query_and_marked_memes_are_all_printed(fixture_library: Path):
    paths = expected_paths(fixture_library, "john cena")
    child = run_app(fixture_library, "--system", "bm25", "--query", "john cena", "-m")
    child.expect(header("john cena"))
    child.send("\t\t")  # mark the first two (Tab: mark and move down)
    child.expect("2 marked")
    child.send("\r")
    rc, raw = finish(child)
    assert rc == 0
    assert printed(raw) == paths[:2]
    assert_restored(raw)


@pytest.mark.slow
def test_a_paste_is_read_as_text_not_keys(fixture_library: Path):
    child = run_app(fixture_library, "--system", "bm25")
    child.expect("Search:")
    # BEL, Ctrl-C and Ctrl-Z read as keys (or signals) would quit or suspend the screen
    child.send("\x1b[200~john\x07\x03\x1a \x1b[31mcena\x1b[201~")
    child.expect(re.escape("john cena") + r"(\x1b\[[\d;]*m)*\x1b\[7m")
    child.send("\x13")  # Ctrl-S: search without choosing
    child.expect(r"search #1 ")
    child.send("\x1b")
    rc, raw = finish(child)
    assert rc == 130
    assert raw.index(f"{ESC}[?2004h") < raw.index("search #1") < raw.rindex(f"{ESC}[?2004l") < raw.rindex("RC=")
    assert "mcena" not in screen_text(raw)
    assert_restored(raw)


def served_results(db: Path, query: str) -> list[tuple[int, str]]:
    d = DB(db, create=False)
    try:
        return [
            (r.item_id, str(Path(r.details["root_path"]) / r.details["rel_path"]))
            for r in Searcher(d, None).search(query, "bm25", 100)
        ]
    finally:
        d.close()


@pytest.mark.slow
def test_the_screen_follows_the_library_and_never_chooses_a_meme_made_unsafe(library_copy: tuple[Path, Path]):
    db, _images = library_copy
    before = served_results(db, "john cena")
    child = run_app(db, "--system", "bm25", "-n", "100")
    assert search(child, "john cena", 1).startswith(f" {len(before)} results ")
    # another process makes the top meme unsafe: with no key pressed, the list follows
    invoke("--db", db, "safety", "set", before[0][0], "unsafe", "--by", "x")
    after = served_results(db, "john cena")
    assert before[0] not in after and after
    child.expect(rf"\x1b\[7m {len(after)} results? · ")
    # the next top made unsafe, Enter at once: it is never printed (refused, or already gone)
    invoke("--db", db, "safety", "set", after[0][0], "unsafe", "--by", "x")
    last = served_results(db, "john cena")
    child.send("\r")
    if child.expect([r"RC=\d+", "no longer shown"]) == 1:
        child.send("\r")  # the refreshed list's top
    child.expect(pexpect.EOF)
    raw = output(child)
    assert printed(raw) == [last[0][1]]
    assert_restored(raw)


def printed(raw: str) -> list[str]:
    """The lines the app printed on stdout after leaving the screen (before the wrapper's RC=)."""
    tail = re.sub(r"\x1b\[[\d;?]*[a-zA-Z]", "", raw[raw.rindex(f"{ESC}[?1049l") : raw.rindex("RC=")])
    return [line for line in tail.split("\r\n") if line]


@pytest.mark.slow
def test_a_40x10_split_searches_in_the_compact_layout(fixture_library: Path):
    child = run_app(fixture_library, "--system", "bm25")
    child.expect("Search:")
    child.setwinsize(10, 40)
    child.expect(r"\x1b\[10;1H")  # redrawn for 10 rows
    search(child, "john cena", 1)
    assert re.search(r"1/\d+ ", output(child).rsplit("\x1b[10;1H", 1)[0])  # the header keeps the counter
    child.send("\x1f")  # Ctrl-/: no room for the preview, and it says so
    child.expect("preview needs 80x24")
    child.send("\x1b")
    rc, raw = finish(child)
    assert rc == 130 and "needs a terminal of at least" not in raw and "▀" not in raw
    assert_restored(raw)


@pytest.mark.slow
def test_no_color_on_the_real_screen(fixture_library: Path):
    child = run_app(fixture_library, "--system", "bm25", env={"NO_COLOR": "1"})
    search(child, "john cena", 1)
    child.send("\x1f")  # Ctrl-/: the preview in characters of one ink
    child.expect(r"│[^\n]*[.:=+*#%@-]{4}")
    child.send("\x1b")
    rc, raw = finish(child)
    assert rc == 130 and not re.search(r"\x1b\[(3|4)\dm|\x1b\[38;5;", raw)  # no colour at all
    assert f"{ESC}[7m" in raw  # inverse still marks the status line
    assert_restored(raw)  # NO_COLOR is no colour, not no terminal: the alternate screen is left


@pytest.mark.slow
@pytest.mark.parametrize("system", ["bm25", "hybrid"])
def test_a_failed_opener_is_said_on_the_status_line(fixture_library: Path, system: str):
    child = run_app(fixture_library, "--system", system, env={"MAMBO_OPENER": "false"})
    search(child, "john cena", 1)  # hybrid: at once, while the model may still be loading
    child.send("\x0f")  # Ctrl-O with an opener that exits 1
    child.expect(r"the opener failed \(`false` exit 1\)")
    if system == "hybrid":
        expect_ready(child, r"hybrid v\d+ · model ready")  # the model-ready answer (or Enter's, if it was ready)
        time.sleep(0.5)
        later = output(child)[output(child).rindex("the opener failed") :]
        assert "Enter choose" not in later  # the status line was not given back to the key hints
    child.send("\x1b")
    rc, raw = finish(child)
    assert rc == 130 and "opened:" not in raw
    assert_restored(raw)


@pytest.mark.slow
def test_query_option_is_the_screen_wherever_stdin_and_stdout_go(fixture_library: Path, tmp_path: Path):
    """-q opens the screen on the terminal (fzf's --query) even with stdin and stdout redirected;
    with no terminal at all it says how to search without one, and prints no list."""
    out = tmp_path / "chosen"
    child = spawn(
        f'{app_cmd(fixture_library, "--system", "bm25", "-q", "cat")} < /dev/null > "{out}"; echo "RC=$?"; stty -a'
    )
    child.expect(header("cat"))
    child.send("\r")
    rc, raw = finish(child)
    assert rc == 0 and out.read_text() == expected_paths(fixture_library, "cat")[0] + "\n"
    assert_restored(raw)
    argv = shlex.split(app_cmd(fixture_library, "--system", "bm25", "-q", "cat"))
    alone = subprocess.run(
        argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, start_new_session=True, timeout=120
    )
    assert alone.returncode == 2 and alone.stdout == ""
    assert "the search screen needs a terminal; give a QUERY to print its results" in alone.stderr


def test_json_with_the_screen_is_an_error(tmp_path: Path):
    child = run_app(tmp_path / "lib.sqlite", "--json")
    rc, raw = finish(child)
    assert rc == 2 and "--json prints the results of a QUERY" in raw
    assert not (tmp_path / "lib.sqlite").exists()
