"""Real pictures on the search screen: which image protocol the terminal speaks, and a stored
preview written in it (kitty graphics, iTerm2 inline images, sixel); half-blocks elsewhere.

The choice: $MAMBO_IMAGES (kitty, iterm, sixel, blocks) forces one; `auto` (the default) reads the
environment first (TERM, TERM_PROGRAM, KITTY_WINDOW_ID, WEZTERM_*, LC_TERMINAL; inside tmux or
screen, which pass no pictures through unless configured to, half-blocks), then asks a terminal it
does not know (a kitty graphics query, then DA1, which every terminal answers) and reads the
replies for at most QUERY_SECONDS. Only escape sequences made here reach the terminal: a picture
is its preview's pixels re-encoded (PNG or sixel), never bytes from a file."""

from __future__ import annotations

import base64
import contextlib
import functools
import io
import os
import re
import select
import struct
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from mambomeme.output import MamboError

PROTOCOLS = ("kitty", "iterm", "sixel", "blocks")
IMAGES_ENV = "MAMBO_IMAGES"
# The longest a start waits for the terminal's replies. A local terminal answers DA1 in ~1 ms and
# the wait ends there; this bounds a terminal (or a slow link) that does not answer.
QUERY_SECONDS = 0.1
# kitty's documented support query: a 1x1 RGB image, id 31, query only (nothing stored or shown).
KITTY_QUERY = "\x1b_Gi=31,s=1,v=1,a=q,t=d,f=24;AAAA\x1b\\"
DA1_QUERY = "\x1b[c"
KITTY_OK = b"\x1b_Gi=31;OK"
DA1_REPLY = re.compile(rb"\x1b\[\?([0-9;]*)c")
# The id of the screen's one kitty image: replaced (deleted by id, sent again) when the picture
# changes. Any number works; one the query above does not use.
KITTY_IMAGE_ID = 7314
# kitty's protocol splits a payload into chunks of at most 4096 bytes of base64.
KITTY_CHUNK = 4096
# A terminal that reports no pixel size (TIOCGWINSZ's xpixel/ypixel 0): cells taken as 10x20 px,
# the shape the half-block preview assumes too (one cell, two square pixels).
CELL_PX = (10, 20)


def chosen(env: Mapping[str, str]) -> str:
    """$MAMBO_IMAGES: one of PROTOCOLS, or "auto" (unset or empty); anything else is an error."""
    value = env.get(IMAGES_ENV, "").strip().lower() or "auto"
    if value not in (*PROTOCOLS, "auto"):
        raise MamboError(f"{IMAGES_ENV} must be one of auto, {', '.join(PROTOCOLS)} (not {value!r})")
    return value


def from_environment(env: Mapping[str, str]) -> str | None:
    """The protocol the environment names, or None when only asking the terminal can tell."""
    term, program = env.get("TERM", ""), env.get("TERM_PROGRAM", "")
    if env.get("TMUX") or env.get("STY") or term.startswith(("screen", "tmux")):
        return "blocks"  # a multiplexer draws the screen itself: no pass-through by default
    if term in ("", "dumb", "linux", "vt100", "vt220"):
        return "blocks"  # no graphics, and perhaps no answer to a query
    if env.get("KITTY_WINDOW_ID") or term in ("xterm-kitty", "xterm-ghostty") or program in ("ghostty", "kitty"):
        return "kitty"
    if program == "WezTerm" or any(k.startswith("WEZTERM_") for k in env):
        return "kitty"
    if program == "iTerm.app" or env.get("LC_TERMINAL") == "iTerm2":
        return "iterm"
    if term.startswith(("foot", "mlterm")) or program == "mlterm":
        return "sixel"
    return None


def from_replies(data: bytes) -> str:
    """What the terminal's replies to KITTY_QUERY + DA1_QUERY say it shows."""
    if KITTY_OK in data:
        return "kitty"
    m = DA1_REPLY.search(data)
    if m and "4" in m.group(1).decode().split(";"):
        return "sixel"  # DA1 attribute 4: sixel graphics
    return "blocks"


def ask_terminal(fd: int, write: Callable[[str], None], timeout: float = QUERY_SECONDS) -> tuple[str, bytes, bool]:
    """Send the queries and read the replies (the terminal already in non-echoing cbreak mode):
    the protocol, the bytes read that were not replies (keys typed meanwhile, to be handed on),
    and whether DA1 was answered (if not, its reply may still come: the caller drops it)."""
    write(KITTY_QUERY + DA1_QUERY)
    data, end = b"", time.monotonic() + timeout
    while not DA1_REPLY.search(data):
        left = end - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            break
        chunk = os.read(fd, 1024)
        if not chunk:
            break
        data += chunk
    answered = DA1_REPLY.search(data) is not None
    protocol = from_replies(data)
    rest = DA1_REPLY.sub(b"", re.sub(rb"\x1b_G[^\x1b]*\x1b\\\\", b"", data))
    return protocol, rest, answered


def cell_pixels(fd: int) -> tuple[float, float]:
    """One cell's width and height in pixels (TIOCGWINSZ), else CELL_PX."""
    import fcntl
    import termios

    with contextlib.suppress(OSError):
        rows, cols, xpx, ypx = struct.unpack("4H", fcntl.ioctl(fd, termios.TIOCGWINSZ, b"\0" * 8))
        if rows and cols and xpx and ypx:
            return xpx / cols, ypx / rows
    return CELL_PX


@dataclass(frozen=True)
class Placed:
    """A picture fitted in a cell rectangle: its top-left cell (0-based) and size in cells and pixels."""

    row: int
    col: int
    rows: int
    cols: int
    width_px: int
    height_px: int


def fit(width: int, height: int, rect: tuple[int, int, int, int], cell: tuple[float, float]) -> Placed:
    """An image of width x height pixels, as large as it fits in rect (row, col, rows, cols),
    its shape kept, centred."""
    row, col, rows, cols = rect
    cw, ch = cell
    scale = min(cols * cw / width, rows * ch / height)
    wpx, hpx = max(1, int(width * scale)), max(1, int(height * scale))
    c, r = min(cols, max(1, round(wpx / cw))), min(rows, max(1, round(hpx / ch)))
    return Placed(row + (rows - r) // 2, col + (cols - c) // 2, r, c, wpx, hpx)


def at(place: Placed, sequence: str) -> str:
    """The sequence written with the cursor at the picture's top-left cell, the cursor then put back."""
    return f"\x1b7\x1b[{place.row + 1};{place.col + 1}H{sequence}\x1b8"


@functools.lru_cache(maxsize=8)
def png(width: int, height: int, rgb: bytes) -> bytes:
    """A preview's pixels as PNG (the stored preview is WebP, which no terminal protocol takes)."""
    from PIL import Image

    out = io.BytesIO()
    Image.frombytes("RGB", (width, height), rgb).save(out, format="PNG", compress_level=6)
    return out.getvalue()


def kitty(data: bytes, place: Placed) -> str:
    """kitty graphics: transmit the PNG and show it scaled to the placed cells, the cursor left
    where it is (C=1) and every reply suppressed (q=2: nothing comes back into the keys)."""
    payload = base64.b64encode(data).decode("ascii")
    chunks = [payload[i : i + KITTY_CHUNK] for i in range(0, len(payload), KITTY_CHUNK)] or [""]
    head = f"a=T,f=100,i={KITTY_IMAGE_ID},c={place.cols},r={place.rows},C=1,q=2"
    out = []
    for n, chunk in enumerate(chunks):
        more = int(n < len(chunks) - 1)
        out.append(f"\x1b_G{head if n == 0 else ''}{',' if n == 0 else ''}m={more};{chunk}\x1b\\")
    return "".join(out)


def kitty_delete() -> str:
    """Delete the screen's kitty image and its placements by id (its data freed: d=I)."""
    return f"\x1b_Ga=d,d=I,i={KITTY_IMAGE_ID},q=2\x1b\\"


def iterm(data: bytes, place: Placed) -> str:
    """iTerm2's inline image (OSC 1337 File=), sized in cells, its shape kept."""
    payload = base64.b64encode(data).decode("ascii")
    return (
        f"\x1b]1337;File=inline=1;size={len(data)};width={place.cols};height={place.rows};"
        f"preserveAspectRatio=1:{payload}\x07"
    )


# The sixel palette: the 6x6x6 colour cube (levels 0, 20 ... 100 %), fixed, so a picture is
# quantised in Pillow's C code (with Floyd-Steinberg dithering) and no palette is computed per image.
SIXEL_LEVELS = 6


@functools.cache
def _cube() -> Any:
    from PIL import Image

    step = 255 // (SIXEL_LEVELS - 1)
    colours = [(r * step, g * step, b * step) for r in range(6) for g in range(6) for b in range(6)]
    pal = Image.new("P", (1, 1))
    pal.putpalette([v for c in colours for v in c] + [0] * 3 * (256 - len(colours)))
    return pal


@functools.lru_cache(maxsize=8)
def sixel(width: int, height: int, rgb: bytes, place: Placed) -> str:
    """The picture as sixel at the placed size in pixels (its height a multiple of 6, so the last
    band does not spill into the line below). Quantised at the stored preview's own size (no
    dithering: flat areas stay flat runs), then enlarged pixel by pixel, so each colour's line of
    a band is a few runs: 17-21 ms of CPU a meme at 80x24 and 120x40 panes, 42-53 KB (PNG for kitty:
    7 ms, 35 KB; benchdata/experiments/sixel_cost.py and its -result.txt)."""
    import numpy as np
    from PIL import Image

    w, h = place.width_px, max(6, place.height_px - place.height_px % 6)
    small = Image.frombytes("RGB", (width, height), rgb).quantize(palette=_cube(), dither=Image.Dither.NONE)
    idx = np.asarray(small.resize((w, h), Image.Resampling.NEAREST), dtype=np.uint8)
    step = 100 // (SIXEL_LEVELS - 1)
    out = [f'\x1bP0;1;0q"1;1;{w};{h}']
    out += [f"#{c};2;{c // 36 * step};{c // 6 % 6 * step};{c % 6 * step}" for c in np.unique(idx).tolist()]
    weights = (1 << np.arange(6, dtype=np.uint8))[:, None]
    for top in range(0, h, 6):
        band = idx[top : top + 6]
        colours = np.unique(band)
        bits = ((band[None] == colours[:, None, None]) * weights[None, : len(band)]).sum(axis=1) + 63
        out.append(_band(colours.tolist(), bits.astype(np.uint8)))
    out.append("\x1b\\")
    return "".join(out)


def _band(colours: list[int], bits: Any) -> str:
    """One band of six pixel rows: each colour's line of sixels (`#c`, then runs: `!N` + the sixel
    when four or more repeat; a line's empty end dropped), lines joined by `$`, ended by `-`."""
    import numpy as np

    k, w = bits.shape
    flat = bits.ravel()
    change = np.ones(k * w, dtype=bool)
    change[1:] = flat[1:] != flat[:-1]
    change[::w] = True  # every colour's line starts a run
    starts = np.flatnonzero(change)
    ends = np.append(starts[1:], k * w)
    values = flat[starts]
    keep = ~((values == 63) & (ends % w == 0))  # "?" (nothing drawn) to the end of a line
    parts, line = [], -1
    for b, e, v in zip(starts[keep].tolist(), ends[keep].tolist(), values[keep].tolist(), strict=True):
        if b // w != line:
            line = b // w
            parts.append(f"{'$' if parts else ''}#{colours[line]}")
        parts.append(chr(v) * (e - b) if e - b < 4 else f"!{e - b}{chr(v)}")
    return "".join(parts) + "-"


def erase(rect: tuple[int, int, int, int]) -> str:
    """Blank a rectangle of cells (ECH on each line): a sixel or iTerm2 picture lives in the cells,
    and the screen's painter, which drew spaces there, would not clear it."""
    row, col, rows, cols = rect
    return "\x1b7" + "".join(f"\x1b[{row + i + 1};{col + 1}H\x1b[{cols}X" for i in range(rows)) + "\x1b8"


class LateReplies:
    """Drops the terminal's replies to the start-up queries when they arrive after the wait, as
    curtsies reads them ('\\x1b[?' then the DA1 reply's characters up to 'c'; '<Esc+_>' up to
    '<Esc+\\\\>'), so that they never become keys typed into the query."""

    def __init__(self, armed: bool) -> None:
        self.armed, self._until = armed, ""

    def keep(self, key: Any) -> bool:
        if not self.armed or not isinstance(key, str):
            return True
        if self._until:
            if key == self._until:
                self._until = ""
                self.armed = False if key == "c" else self.armed
            return False
        if key == "\x1b[?":
            self._until = "c"
            return False
        if key == "<Esc+_>":
            self._until = "<Esc+\\>"
            return False
        return True
