"""Real pictures on the search screen (tui_images): the protocol chosen from the environment and
the terminal's replies, and what is written decoded back: a kitty APC's PNG, an iTerm2 OSC 1337
PNG, a sixel DCS parsed to its pixels, half-blocks where nothing answers, in a real PTY."""

from __future__ import annotations

import base64
import dataclasses
import io
import os
import re
import sys
import time
from pathlib import Path

import pexpect
import pytest
from PIL import Image

from helpers import REPO, db_scalar, search
from mambomeme import tui, tui_images
from mambomeme.output import MamboError

ESC = "\x1b"
APC = re.compile(r"\x1b_G([^;\x1b]*);([A-Za-z0-9+/=]*)\x1b\\")
OSC_FILE = re.compile(r"\x1b\]1337;File=([^:\x07]*):([A-Za-z0-9+/=]*)\x07")
DCS = re.compile(r"\x1bP([0-9;]*)q(.*?)\x1b\\", re.S)


# -- choosing the protocol ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "env,expected",
    [
        ({"TERM": "xterm-kitty", "KITTY_WINDOW_ID": "1"}, "kitty"),
        ({"TERM": "xterm-256color", "TERM_PROGRAM": "WezTerm"}, "kitty"),
        ({"TERM": "xterm-256color", "WEZTERM_PANE": "0"}, "kitty"),
        ({"TERM": "xterm-ghostty", "TERM_PROGRAM": "ghostty"}, "kitty"),
        ({"TERM": "xterm-256color", "TERM_PROGRAM": "iTerm.app"}, "iterm"),
        ({"TERM": "xterm-256color", "LC_TERMINAL": "iTerm2"}, "iterm"),
        ({"TERM": "foot"}, "sixel"),
        ({"TERM": "mlterm"}, "sixel"),
        ({"TERM": "xterm-kitty", "TMUX": "/tmp/tmux-0/default,1,0"}, "blocks"),
        ({"TERM": "screen-256color"}, "blocks"),
        ({"TERM": "dumb"}, "blocks"),
        ({"TERM": "xterm-256color"}, None),  # only the terminal can tell
    ],
)
def test_the_environment_names_the_protocol(env: dict[str, str], expected: str | None) -> None:
    assert tui_images.from_environment(env) == expected


def test_the_replies_name_the_protocol_and_a_wrong_choice_is_an_error() -> None:
    assert tui_images.from_replies(b"\x1b_Gi=31;OK\x1b\\\x1b[?62;22c") == "kitty"
    assert tui_images.from_replies(b"\x1b[?62;4;22c") == "sixel"
    assert tui_images.from_replies(b"\x1b[?64;1;2;6;9;15;22c") == "blocks"
    assert tui_images.from_replies(b"") == "blocks"
    assert tui_images.chosen({}) == "auto"
    assert tui_images.chosen({"MAMBO_IMAGES": "Sixel"}) == "sixel"
    with pytest.raises(MamboError, match="MAMBO_IMAGES must be one of"):
        tui_images.chosen({"MAMBO_IMAGES": "png"})


def test_a_late_reply_never_becomes_keys() -> None:
    late = tui_images.LateReplies(armed=True)
    # as curtsies reads the replies, in the order the terminal sends them: kitty's, then DA1's
    keys = ["<Esc+_>", "G", "i", "=", "3", "1", ";", "O", "K", "<Esc+\\>", "\x1b[?", "6", "2", ";", "4", "c", "c", "a"]
    assert [k for k in keys if late.keep(k)] == ["c", "a"]
    assert late.keep("\x1b[?")  # once DA1's reply is in, nothing more is dropped
    assert all(tui_images.LateReplies(armed=False).keep(k) for k in keys)


# -- encoding ----------------------------------------------------------------------------------


def test_a_picture_fits_its_cells_and_keeps_its_shape() -> None:
    place = tui_images.fit(160, 80, (3, 40, 20, 30), (10, 20))  # wide: as wide as the rect
    assert (place.cols, place.rows, place.width_px, place.height_px) == (30, 8, 300, 150)
    assert (place.row, place.col) == (3 + 6, 40)
    tall = tui_images.fit(80, 160, (3, 40, 20, 30), (10, 20))  # tall: as high as the rect
    assert (tall.rows, tall.height_px, tall.cols) == (20, 400, 20)


def sixel_pixels(body: str) -> tuple[int, int, int, set[int], set[int]]:
    """A sixel body parsed: (declared width, declared height, bands, colours defined, colours used);
    every band's lines end within the declared width."""
    m = re.match(r'"1;1;(\d+);(\d+)', body)
    assert m, body[:40]
    width, height = int(m.group(1)), int(m.group(2))
    defined, used, bands, x = set(), set(), 0, 0
    i = m.end()
    while i < len(body):
        c = body[i]
        if c == "#":
            d = re.match(r"#(\d+)(;2;(\d+);(\d+);(\d+))?", body[i:])
            assert d
            (defined if d.group(2) else used).add(int(d.group(1)))
            assert not d.group(2) or all(0 <= int(d.group(k)) <= 100 for k in (3, 4, 5))
            i += d.end()
            continue
        if c == "!":
            r = re.match(r"!(\d+)([?-~])", body[i:])
            assert r
            x += int(r.group(1))
            i += r.end()
        elif c == "$":
            x, i = 0, i + 1
        elif c == "-":
            bands, x, i = bands + 1, 0, i + 1
        else:
            assert "?" <= c <= "~", repr(c)
            x, i = x + 1, i + 1
        assert x <= width
    return width, height, bands, defined, used


def test_sixel_encodes_the_placed_size() -> None:
    im = Image.new("RGB", (160, 90), (200, 30, 30))
    im.paste((20, 20, 220), (40, 20, 120, 70))
    place = tui_images.fit(160, 90, (0, 0, 19, 39), tui_images.CELL_PX)
    m = DCS.fullmatch(tui_images.sixel(160, 90, im.tobytes(), place))
    assert m
    width, height, bands, defined, used = sixel_pixels(m.group(2))
    assert (width, height) == (place.width_px, place.height_px - place.height_px % 6)
    assert bands == height // 6 and used <= defined and len(defined) >= 2


def test_kitty_and_iterm_carry_the_png() -> None:
    data = tui_images.png(*_picture(300, 40))
    place = tui_images.fit(300, 40, (3, 50, 30, 40), tui_images.CELL_PX)
    seq = tui_images.kitty(data, place)
    chunks = APC.findall(seq)
    assert len(chunks) > 1 and all(len(payload) <= tui_images.KITTY_CHUNK for _, payload in chunks)
    assert chunks[0][0].startswith("a=T,f=100,") and "q=2" in chunks[0][0] and chunks[-1][0] == "m=0"
    assert Image.open(io.BytesIO(base64.b64decode("".join(p for _, p in chunks)))).size == (300, 40)
    osc = OSC_FILE.fullmatch(tui_images.iterm(data, place))
    assert osc and f"width={place.cols};height={place.rows}" in osc.group(1)
    assert base64.b64decode(osc.group(2)) == data


def _picture(w: int, h: int) -> tuple[int, int, bytes]:
    noise = Image.effect_noise((w, h), 60).convert("RGB")  # incompressible: several 4096-byte chunks
    return w, h, noise.tobytes()


def test_paint_leaves_the_pictures_cells_blank() -> None:
    w, h, rgb = 160, 120, Image.new("RGB", (160, 120), (250, 0, 0)).tobytes()
    row = tui.Row(7, 1, "A meme", (), "", (), "/m/a.png", "a.png", False, 0, "L", True)
    base = tui.TUIState(
        rows=(row,), searched_query="a", query="a", previews={7: tui.Preview(w, h, rgb)}, model="unused"
    )
    for images in ("kitty", "iterm", "sixel"):
        s = dataclasses.replace(base, images=images)
        pic = tui.picture(s, 40, 120)
        assert pic is not None and pic.item_id == 7
        top, left, rows, cols = pic.rect
        lines = [str(line) for line in tui.paint(s, 40, 120)]
        assert "A meme" in lines[top - 1][left:]
        assert all(not _visible(line)[left : left + cols].strip() for line in lines[top : top + rows])
    assert tui.picture(base, 40, 120) is None  # half-blocks: painted as text
    blocks = "".join(str(line) for line in tui.paint(base, 40, 120))
    assert "▀" in blocks
    # the help, a screen too small for the preview pane: no picture
    assert tui.picture(dataclasses.replace(base, images="kitty", show_help=True), 40, 120) is None
    assert tui.picture(dataclasses.replace(base, images="kitty"), 20, 70) is None


def _visible(line: str) -> str:
    return re.sub(r"\x1b\[[\d;]*m", "", line)


# -- in a real PTY -----------------------------------------------------------------------------


def spawn_screen(db: Path, env: dict[str, str], rows: int = 40, cols: int = 120) -> pexpect.spawn:
    """The search screen in a PTY of rows x cols, as a user starts it; MAMBO_IMAGES unset unless given."""
    full = {k: v for k, v in os.environ.items() if k not in ("MAMBO_IMAGES", "NO_COLOR", "TMUX", "COLORTERM")}
    full |= {"TERM": "xterm-256color", "BLESSED_QUERY_TIMEOUT_SECONDS": "0", "PYTHONPATH": str(REPO), **env}
    for k in [k for k in full if k.startswith(("KITTY_", "WEZTERM_", "TERM_PROGRAM", "LC_TERMINAL"))]:
        del full[k]
    argv = [str(REPO / "mambo.py"), "--db", str(db), "search", "--system", "bm25"]
    child = pexpect.spawn(
        sys.executable, argv, env=full, dimensions=(rows, cols), encoding="utf-8", timeout=30, cwd=str(REPO)
    )
    child.delaybeforesend = None
    child.logfile_read = io.StringIO()
    return child


def quit_screen(child: pexpect.spawn) -> str:
    child.send(ESC)
    child.expect(pexpect.EOF)
    child.close()
    return child.logfile_read.getvalue()


def first_results(db: Path, query: str) -> list[int]:
    from mambomeme.library import DB
    from mambomeme.search import Searcher

    d = DB(db, create=False)
    try:
        return [r.item_id for r in Searcher(d, None).search(query, "bm25", 10)]
    finally:
        d.close()


def preview_size(db: Path, item_id: int) -> tuple[int, int]:
    w = db_scalar(db, "SELECT width FROM previews WHERE item_id = ?", (item_id,))
    h = db_scalar(db, "SELECT height FROM previews WHERE item_id = ?", (item_id,))
    return int(w), int(h)


def kitty_images(raw: str) -> list[tuple[str, tuple[int, int]]]:
    """Each kitty image transmitted (a=T, then its chunks to m=0): its control keys and PNG size."""
    out, keys, payload = [], None, []
    for control, data in APC.findall(raw):
        if control.startswith("a=T"):
            keys, payload = control, [data]
        elif keys is not None and control.startswith("m="):
            payload.append(data)
        if keys is not None and control.endswith("m=0"):
            png = base64.b64decode("".join(payload))
            assert png.startswith(b"\x89PNG")
            out.append((keys, Image.open(io.BytesIO(png)).size))
            keys = None
    return out


@pytest.mark.slow
def test_kitty_shows_the_stored_preview_and_replaces_it(fixture_library: Path) -> None:
    ids = first_results(fixture_library, "john cena")
    child = spawn_screen(fixture_library, {"MAMBO_IMAGES": "kitty"})
    child.expect("Search:")
    search(child, "john cena", 1)
    child.expect(r"\x1b_Gm=0;[A-Za-z0-9+/=]*\x1b\\")
    child.send("\x1b[B")  # Down: the second meme's picture replaces the first
    child.expect("› 2. ")
    child.expect(r"\x1b_Gm=0;[A-Za-z0-9+/=]*\x1b\\")
    raw = quit_screen(child)
    shown = kitty_images(raw)
    assert [size for _, size in shown[:2]] == [preview_size(fixture_library, i) for i in ids[:2]]
    for keys, _ in shown:
        c, r = (int(re.search(rf"{k}=(\d+)", keys).group(1)) for k in ("c", "r"))
        assert 0 < c <= 47 and 0 < r <= 35 and "q=2" in keys and "C=1" in keys
    delete = f"{ESC}_Ga=d,d=I,i={tui_images.KITTY_IMAGE_ID},q=2{ESC}\\"
    second = raw.index("a=T", raw.index("a=T") + 1)
    assert delete in raw[:second]  # replaced: deleted by id first
    assert raw.rindex(delete) < raw.rindex(f"{ESC}[?1049l")  # and deleted before leaving the screen


@pytest.mark.slow
def test_iterm_and_sixel_draw_the_picture(fixture_library: Path) -> None:
    first = first_results(fixture_library, "john cena")[0]
    child = spawn_screen(fixture_library, {"MAMBO_IMAGES": "iterm"})
    child.expect("Search:")
    search(child, "john cena", 1)
    child.expect(OSC_FILE)
    assert "inline=1" in child.match.group(1)
    png = base64.b64decode(child.match.group(2))
    assert Image.open(io.BytesIO(png)).size == preview_size(fixture_library, first)
    quit_screen(child)

    child = spawn_screen(fixture_library, {"MAMBO_IMAGES": "sixel"})
    child.expect("Search:")
    search(child, "john cena", 1)
    child.expect(DCS)
    width, height, bands, defined, used = sixel_pixels(child.match.group(2))
    pw, ph = preview_size(fixture_library, first)
    assert bands == height // 6 and used <= defined
    assert abs(width / height - pw / ph) < 0.1  # the picture's shape, at the pane's size
    assert width <= 47 * tui_images.CELL_PX[0] and height <= 35 * tui_images.CELL_PX[1]
    quit_screen(child)


@pytest.mark.slow
def test_auto_asks_the_terminal_and_falls_back_to_half_blocks(fixture_library: Path) -> None:
    # A terminal that does not answer: half-blocks, the screen drawn once the wait is over.
    child = spawn_screen(fixture_library, {})
    t0 = time.monotonic()
    child.expect_exact(tui_images.KITTY_QUERY + tui_images.DA1_QUERY)
    child.expect("Search:")
    assert time.monotonic() - t0 < 2.0  # QUERY_SECONDS (0.1 s) and a busy machine's first frame
    # its answer comes too late: dropped, never typed into the query
    child.send("\x1b[?62;4;22c" + "abc")
    child.send("\x13")
    child.expect(r"(no match for|results for) “abc”")
    search(child, "john cena", 2)
    raw = quit_screen(child)
    assert "▀" in raw.split("search #2", 1)[0].rsplit("search #1", 1)[1]  # the answer's frame
    assert "\x1b_Ga=T" not in raw and "\x1b]1337" not in raw and "62;4" not in raw.split("Search:", 1)[1]

    # A terminal that answers the kitty query: kitty pictures.
    child = spawn_screen(fixture_library, {})
    child.expect_exact(tui_images.KITTY_QUERY + tui_images.DA1_QUERY)
    child.send("\x1b_Gi=31;OK\x1b\\\x1b[?62;22c")
    child.expect("Search:")
    search(child, "john cena", 1)
    child.expect(r"\x1b_Ga=T,f=100")
    quit_screen(child)

    # DA1 with attribute 4: sixel.
    child = spawn_screen(fixture_library, {})
    child.expect_exact(tui_images.DA1_QUERY)
    child.send("\x1b[?62;4;22c")
    child.expect("Search:")
    search(child, "john cena", 1)
    child.expect(DCS)
    quit_screen(child)

    # Inside tmux: half-blocks, and the terminal is not asked.
    child = spawn_screen(fixture_library, {"TMUX": "/tmp/tmux-0/default,1,0", "TERM": "tmux-256color"})
    child.expect("Search:")
    search(child, "john cena", 1)
    raw = quit_screen(child)
    assert "▀" in raw and tui_images.DA1_QUERY not in raw


@pytest.mark.slow
def test_no_color_draws_monochrome_blocks_and_still_shows_a_real_picture(fixture_library: Path) -> None:
    # NO_COLOR is about coloured text: the half-block preview is drawn in one ink (tui.MONO_RAMP) ...
    child = spawn_screen(fixture_library, {"NO_COLOR": "1", "MAMBO_IMAGES": "blocks"})
    child.expect("Search:")
    search(child, "john cena", 1)
    raw = quit_screen(child)
    assert re.search(r"[.:=+*#%@-]{6}", raw.split("search #1", 1)[0])
    assert not re.search(r"\x1b\[[\d;]*(38|48);[25];", raw) and "▀" not in raw
    # ... and a terminal that shows pictures still shows the meme itself, which is not text colour.
    child = spawn_screen(fixture_library, {"NO_COLOR": "1", "MAMBO_IMAGES": "kitty"})
    child.expect("Search:")
    search(child, "john cena", 1)
    child.expect(r"\x1b_Ga=T,f=100")
    raw = quit_screen(child)
    assert not re.search(r"\x1b\[[\d;]*(38|48);[25];", raw)


def test_f3_shows_the_preview_large_and_esc_goes_back() -> None:
    w, h, rgb = 160, 120, Image.new("RGB", (160, 120), (0, 200, 0)).tobytes()
    row = tui.Row(7, 1, "A meme", (), "", (), "/m/a.png", "a.png", False, 0, "L", True)
    s = tui.TUIState(rows=(row,), searched_query="a", query="a", model="unused", screen=(24, 80))
    assert not tui._preview_on(s, 24, 80)  # at 80x24 the preview is off until asked for
    s, effects = tui.process_event(s, "<F3>")
    assert s.large and effects == [tui.LoadPreview(7)]
    s, _ = tui.process_event(s, tui.PreviewLoaded(7, tui.Preview(w, h, rgb)))
    lines = [_visible(str(line)) for line in tui.paint(s, 24, 80)]
    assert "A meme" in lines[2] and "│" not in "".join(lines[2:20])  # the whole width, no list beside it
    drawn = [line for line in lines[3:20] if "▀" in line]
    assert drawn and max(len(line.strip()) for line in drawn) > 40  # wider than half the screen
    assert "F3 or Esc back to the list" in lines[22]
    assert tui.picture(dataclasses.replace(s, images="kitty"), 24, 80) == tui.Picture(7, (3, 0, 19, 80))
    s, effects = tui.process_event(s, "<ESC>")  # back to the list, not quit
    assert not s.large and not any(isinstance(e, tui.Quit) for e in effects)
    assert "│" not in "".join(_visible(str(line)) for line in tui.paint(s, 24, 80))
    _, effects = tui.process_event(s, "<ESC>")
    assert any(isinstance(e, tui.Quit) for e in effects)
