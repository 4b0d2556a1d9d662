"""Images: decoding under size limits, content and perceptual hashes, WebP previews, and the
perceptual-hash index that groups near-duplicates."""

from __future__ import annotations

import functools
import hashlib
import io
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from mambomeme.library import clean_line
from mambomeme.query_plan import edit_distance, normalise_query

PIL_FORMATS = {"PNG": "png", "JPEG": "jpeg", "MPO": "jpeg", "GIF": "gif", "WEBP": "webp"}

# Decompression bombs: Pillow only warns between 89 and 179 megapixels. No meme is that large;
# 40 MP (e.g. 8000x5000) is already far above any real meme, so anything bigger is refused.
MAX_IMAGE_PIXELS = 40_000_000
# Work per image is bounded before anything is decoded. Past 100 MB a file is not read (a 40 MP PNG of
# noise is ~60-90 MB; real memes are under ~10 MB). Past 1:32 an image is a banner, strip or spacer
# (tall screenshots run to ~1:17); at 1:32 the 400 px wide picture that template recognition makes is
# at most 5 MP. See docs/decisions.md#image-limits.
MAX_FILE_BYTES = 100_000_000
MAX_ASPECT = 32

# Previews live inside the database so a copied file still shows them. The TUI draws them with
# half-block characters: an 80x24 pane is at most ~40x44 "pixels", a 200-column terminal ~100x110,
# so 160 px on the longest side covers large terminals. WebP q=60 keeps a typical meme at ~4-7 KB,
# i.e. ~60 MB of previews for a 10,000-meme library (measured: see `mambo status`).
PREVIEW_SIDE = 160
PREVIEW_QUALITY = 60

# Near-identical means the same meme: the picture AND the caption agree. pHash is dominated by the
# template picture (other captions on one picture are 0-34 bits apart, a crop of one meme 2-26), so
# the caption decides, on the words that vary: the known text of the template either item was
# recognised as (templates.known_text: anchors, name, aliases) is left out of both first, then the
# caption with less text must be found in the other line by line. Calibration: docs/grouping.md.
NEAR_DUP_BITS = 4              # this close: the same meme if its lines are (mostly) in the other's text
NEAR_DUP_CONTAINMENT = 0.75    # ...the least-contained line's share of letters found (OCR noise)
NEAR_DUP_BITS_CROPPED = 20     # up to this far (crops): the same meme only if the captions agree well
NEAR_DUP_CONTAINMENT_CROPPED = 0.9  # 0.85 joined "dj drum" and "dj bat refuses to elaborate" (v1)
NEAR_DUP_MIN_LETTERS = 20      # ...and the smaller caption has this many letters and digits that vary
NEAR_DUP_LINE_LETTERS = 4      # OCR lines shorter than this are noise (a stray "3", a symbol)
# Comparing two captions takes ~0.8 ms, and v1 has 68,660 pairs within 20 bits. Captions that share
# under half of the smaller one's letter trigrams are rejected before that: every pair the rule
# joins shares >= 0.83 of them (v1).
NEAR_DUP_TRIGRAMS = 0.5
TEMPLATE_BITS = 10           # an unlabelled image joins the template group of a picture this close


# ─────────────────────────────────────────────────────────────────────────────
# Images: decoding, hashes and previews
# ─────────────────────────────────────────────────────────────────────────────


class BadInput(Exception):
    """A file that cannot be ingested; `kind` is a short machine-readable reason."""

    def __init__(self, kind: str, message: str):
        super().__init__(kind, message)  # both in args, so it pickles across worker processes
        self.kind = kind
        self.message = message


@dataclass
class ImageFacts:
    sha256: str
    byte_size: int
    format: str
    width: int
    height: int
    phash: int
    dhash: int
    preview: bytes
    preview_size: tuple[int, int]
    rgb: Any  # numpy uint8 HxWx3, for OCR


def _signed64(h: Any) -> int:
    """imagehash bits -> a signed 64-bit integer (SQLite INTEGER)."""
    v = int(str(h), 16)
    return v - (1 << 64) if v >= (1 << 63) else v


def check_shape(w: int, h: int) -> None:
    """Refuse, from the header alone, a picture too thin to be a meme (see MAX_ASPECT)."""
    if min(w, h) < 1 or max(w, h) > MAX_ASPECT * min(w, h):
        raise BadInput("shape", f"image is {w}x{h} pixels, thinner than 1:{MAX_ASPECT}: a banner or spacer, "
                                "not a meme")


def read_image(data: bytes, name: str) -> ImageFacts:
    import imagehash
    import numpy as np
    from PIL import Image, ImageOps, UnidentifiedImageError

    Image.MAX_IMAGE_PIXELS = MAX_IMAGE_PIXELS
    if not data:
        raise BadInput("empty", "empty file (0 bytes)")
    if len(data) > MAX_FILE_BYTES:
        raise BadInput("too-large", f"file is over {MAX_FILE_BYTES // 1_000_000} MB: not a meme")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            img = Image.open(io.BytesIO(data))
            fmt = PIL_FORMATS.get(img.format or "")
            if fmt is None:
                raise BadInput("format", f"unsupported image format {img.format}: use png, jpg, gif or webp")
            w, h = img.size
            if w * h > MAX_IMAGE_PIXELS:
                raise BadInput("bomb", f"image is {w}x{h} pixels, over the {MAX_IMAGE_PIXELS:,} limit")
            check_shape(w, h)
            if getattr(img, "n_frames", 1) > 1:
                img.seek(0)  # animated GIF/WebP: the first frame stands for the meme
            img.load()
            img = ImageOps.exif_transpose(img)
    except BadInput:
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as e:
        # Pillow's own message names its hard limit (twice ours): say the limit this tool applies.
        raise BadInput("bomb", f"image is over the {MAX_IMAGE_PIXELS // 1_000_000} MP limit "
                               f"({MAX_IMAGE_PIXELS:,} pixels): not a meme") from e
    except UnidentifiedImageError as e:
        raise BadInput("not-image", "not an image Pillow can read (png, jpg, gif, webp)") from e
    except (OSError, SyntaxError, ValueError, EOFError) as e:
        raise BadInput("corrupt", f"corrupt or truncated image ({clean_line(e)})") from e
    if img.mode in ("RGBA", "LA", "PA") or (img.mode == "P" and "transparency" in img.info):
        rgba = img.convert("RGBA")
        rgb = Image.new("RGB", rgba.size, (255, 255, 255))
        rgb.paste(rgba, mask=rgba.getchannel("A"))
    else:
        rgb = img.convert("RGB")
    prev = rgb.copy()
    prev.thumbnail((PREVIEW_SIDE, PREVIEW_SIDE), Image.Resampling.LANCZOS)
    buf = io.BytesIO()
    prev.save(buf, format="WEBP", quality=PREVIEW_QUALITY, method=4)
    return ImageFacts(
        sha256=hashlib.sha256(data).hexdigest(),
        byte_size=len(data),
        format=fmt,
        width=rgb.width,
        height=rgb.height,
        phash=_signed64(imagehash.phash(rgb)),
        dhash=_signed64(imagehash.dhash(rgb)),
        preview=buf.getvalue(),
        preview_size=prev.size,
        rgb=np.asarray(rgb),
    )


def hamming(a: int, b: int) -> int:
    return ((a ^ b) & ((1 << 64) - 1)).bit_count()


@dataclass(frozen=True)
class Caption:
    """An item's OCR text as the near-identity rule reads it: the words of each line (normalised
    like queries; lines with fewer than NEAR_DUP_LINE_LETTERS letters are noise), the letters of all
    lines joined, and the joined text's letter trigrams."""

    lines: tuple[tuple[str, ...], ...]
    joined: str
    trigrams: frozenset[str]


def _caption(lines: Iterable[tuple[str, ...]]) -> Caption:
    lines = tuple(line for line in lines if line)
    joined = "".join("".join(line) for line in lines)
    return Caption(lines, joined, frozenset(joined[i:i + 3] for i in range(len(joined) - 2)))


@functools.lru_cache(maxsize=8192)
def caption(text: str) -> Caption:
    words = (tuple(normalise_query(x)) for x in text.split("\n"))
    return _caption(w for w in words if sum(map(len, w)) >= NEAR_DUP_LINE_LETTERS)


def known_phrases(texts: Iterable[str]) -> tuple[str, ...]:
    """A template's known text (anchors' words, names) as the letters of each phrase: what
    varying() leaves out. Single words are not phrases: a name such as "Fixed" or "Seven" is a
    word any caption may hold."""
    out = {"".join(w) for t in texts if len(w := normalise_query(t)) >= 2}
    return tuple(sorted(out, key=len, reverse=True))


@functools.lru_cache(maxsize=8192)
def varying(cap: Caption, phrases: tuple[str, ...]) -> Caption:
    """The caption without the template's known phrases (known_phrases): each run of words whose
    letters are a phrase's, one edit in eight letters allowed (OCR merges "HOT TAKE" into "HOTTAKE",
    drops or swaps a letter), goes, on one line."""
    lines = []
    for line in cap.lines:
        words = list(line)
        for phrase in phrases:
            bound = max(1, len(phrase) // 8)
            start = 0
            while start < len(words):
                run, end = "", start
                while end < len(words) and len(run) < len(phrase) + bound:
                    run += words[end]
                    end += 1
                    if abs(len(run) - len(phrase)) <= bound and edit_distance(run, phrase, bound) <= bound:
                        del words[start:end]
                        break
                else:
                    start += 1
        lines.append(tuple(words))
    return _caption(lines)


def caption_containment(a: Caption, b: Caption) -> tuple[float, int]:
    """(share of letters of the least-contained line of the caption with fewer letters that are
    found, in order, in the other caption; that caption's letter count). (1.0, 0): no caption.
    Captions sharing under NEAR_DUP_TRIGRAMS of the smaller one's trigrams are (0.0, n) at once."""
    import difflib

    if len(a.joined) > len(b.joined):
        a, b = b, a
    if not a.lines:
        return 1.0, 0
    if len(a.trigrams & b.trigrams) < NEAR_DUP_TRIGRAMS * len(a.trigrams):
        return 0.0, len(a.joined)
    least = 1.0
    for line in a.lines:
        letters = "".join(line)
        if letters:
            found = difflib.SequenceMatcher(None, letters, b.joined, autojunk=False).get_matching_blocks()
            least = min(least, sum(m.size for m in found) / len(letters))
    return least, len(a.joined)


def near_identical(distance: int, text_a: str, text_b: str, known: Iterable[str] = ()) -> bool:
    """Whether two items are one meme: pHash `distance` bits apart and captions agreeing on the
    words that vary (see NEAR_DUP_BITS). `known`: the known text of the templates the items were
    recognised as (templates.known_text), left out of both captions."""
    if distance > NEAR_DUP_BITS_CROPPED:
        return False
    a, b = caption(text_a), caption(text_b)
    if phrases := known_phrases(known):
        a, b = varying(a, phrases), varying(b, phrases)
        if bool(a.lines) != bool(b.lines):
            return False  # one says nothing beside the template's own words, the other says something
    contained, letters = caption_containment(a, b)
    if distance <= NEAR_DUP_BITS and contained >= NEAR_DUP_CONTAINMENT:
        return True
    return contained >= NEAR_DUP_CONTAINMENT_CROPPED and letters >= NEAR_DUP_MIN_LETTERS


class PhashIndex:
    """All items' pHashes in one numpy array: a new image's distances to 100,000 items are one
    vectorised XOR + popcount (~1 ms) instead of a Python loop (~50 ms)."""

    def __init__(self, rows: Iterable[tuple[int, int, int | None, int | None]]):
        import numpy as np

        rows = list(rows)
        self.ids = np.array([r[0] for r in rows], dtype=np.int64)
        self.hashes = np.array([r[1] for r in rows], dtype=np.int64)
        self.groups: dict[int, tuple[int | None, int | None]] = {r[0]: (r[2], r[3]) for r in rows}

    def add(self, item_id: int, phash: int, perceptual: int | None, template: int | None) -> None:
        import numpy as np

        self.ids = np.append(self.ids, np.int64(item_id))
        self.hashes = np.append(self.hashes, np.int64(phash))
        self.groups[item_id] = (perceptual, template)

    def near(self, phash: int, max_bits: int) -> list[tuple[int, int]]:
        """(distance, item_id) of items within max_bits, nearest first."""
        import numpy as np

        if not len(self.ids):
            return []
        d = np.bitwise_count(np.bitwise_xor(self.hashes, np.int64(phash)))
        idx = np.nonzero(d <= max_bits)[0]
        return sorted((int(d[i]), int(self.ids[i])) for i in idx)


def assign_groups(items: Iterable[tuple[int, int, str]],
                  known: Callable[[int, int], Iterable[str]] | None = None) -> dict[int, int]:
    """Near-identical groups of (item_id, phash, ocr_text) rows as ingest makes them one item at a
    time, in the order given: each item joins the group of the nearest earlier item it is
    near-identical to. `known(item, other)`: the known text of their templates (near_identical).
    Returns item_id -> the group's first item."""
    import numpy as np

    rows = list(items)
    hashes = np.array([r[1] for r in rows], dtype=np.int64)
    first: dict[int, int] = {}
    for n, (item_id, phash, text) in enumerate(rows):
        d = np.bitwise_count(np.bitwise_xor(hashes[:n], np.int64(phash)))
        group = item_id
        for k in sorted(np.nonzero(d <= NEAR_DUP_BITS_CROPPED)[0], key=lambda k: (int(d[k]), rows[k][0])):
            other = rows[k][0]
            if near_identical(int(d[k]), text, rows[k][2], known(item_id, other) if known else ()):
                group = first[other]
                break
        first[item_id] = group
    return first
