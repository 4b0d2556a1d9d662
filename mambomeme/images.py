"""Images: decoding under size limits, content and perceptual hashes, WebP previews, and the
near-identity rule (pHash index, caption text, caption pixels) that groups near-duplicates."""

from __future__ import annotations

import functools
import hashlib
import io
import os
import stat
import time
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mambomeme.output import clean_line
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
# caption with less text must be found in the other line by line, and the caption boxes' pixels
# must agree (NEAR_DUP_PIXELS). Calibration: docs/grouping.md.
NEAR_DUP_BITS = 4  # this close: the same meme if its lines are (mostly) in the other's text
NEAR_DUP_CONTAINMENT = 0.75  # ...the least-contained line's share of letters found (OCR noise)
NEAR_DUP_BITS_CROPPED = 20  # up to this far (crops): the same meme only if the captions agree well
NEAR_DUP_CONTAINMENT_CROPPED = 0.8  # 0.75-0.9 keep precision (pixels decide); 0.8 finds 1 more v1 crop
NEAR_DUP_MIN_LETTERS = 20  # ...and the smaller caption has this many letters and digits that vary
NEAR_DUP_LINE_LETTERS = 4  # OCR lines shorter than this are noise (a stray "3", a symbol)
# Comparing two captions takes ~0.8 ms, and v1 has 68,660 pairs within 20 bits. Captions that share
# under half of the smaller one's letter trigrams are rejected before that: every pair the rule
# joins shares >= 0.83 of them (v1).
NEAR_DUP_TRIGRAMS = 0.5
# Captions that agree as text can still be two jokes on a template that prints words of its own (a
# sign, a label): the pictures decide. One preview is aligned onto the other and every caption box
# of either must look the same in both (normalised correlation of its pixels). Copies score >= 0.53
# (a crop that cuts a line), other jokes <= 0.43 but one pair at 0.62 (docs/grouping.md).
NEAR_DUP_PIXELS = 0.5
# A box only one copy has is a watermark when it is one short line in a corner: within 4 % of two
# edges, at most 45 % of the width and 6 % of the height (v1 and the fixed-words set: 0.03-0.05 high,
# 0.11-0.42 wide, all within 0.04 of a corner).
WATERMARK_BAND, WATERMARK_WIDTH, WATERMARK_HEIGHT = 0.04, 0.45, 0.06
TEMPLATE_BITS = 10  # an unlabelled image joins the template group of a picture this close


# ─────────────────────────────────────────────────────────────────────────────
# Images: decoding, hashes and previews
# ─────────────────────────────────────────────────────────────────────────────


class BadInput(Exception):
    """A file that cannot be ingested; `kind` is a short machine-readable reason."""

    def __init__(self, kind: str, message: str):
        super().__init__(kind, message)  # both in args, so it pickles across worker processes
        self.kind = kind
        self.message = message


def read_regular(path: Path, limit: int) -> bytes:
    """A regular file's bytes, at most `limit` of them. O_NONBLOCK, then fstat: a file that became
    a FIFO or a device since the folder was listed would block or never end."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with open(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise BadInput("not-file", "not a regular file")
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise BadInput("too-large", f"file is over {limit // 1_000_000} MB: not a meme")
    return data


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
    cpu_ms: dict[str, float] = field(default_factory=dict)  # this process's CPU by stage (bench ingest)


def _signed64(h: Any) -> int:
    """imagehash bits -> a signed 64-bit integer (SQLite INTEGER)."""
    v = int(str(h), 16)
    return v - (1 << 64) if v >= (1 << 63) else v


def check_shape(w: int, h: int) -> None:
    """Refuse, from the header alone, a picture too thin to be a meme (see MAX_ASPECT)."""
    if min(w, h) < 1 or max(w, h) > MAX_ASPECT * min(w, h):
        raise BadInput("shape", f"image is {w}x{h} pixels, thinner than 1:{MAX_ASPECT}: a banner or spacer, not a meme")


def read_image(data: bytes, name: str) -> ImageFacts:
    import imagehash
    import numpy as np
    from PIL import Image, ImageOps, UnidentifiedImageError

    Image.MAX_IMAGE_PIXELS = MAX_IMAGE_PIXELS
    start = time.process_time()
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
        raise BadInput(
            "bomb",
            f"image is over the {MAX_IMAGE_PIXELS // 1_000_000} MP limit ({MAX_IMAGE_PIXELS:,} pixels): not a meme",
        ) from e
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
    decoded = time.process_time()
    prev = rgb.copy()
    prev.thumbnail((PREVIEW_SIDE, PREVIEW_SIDE), Image.Resampling.LANCZOS)
    buf = io.BytesIO()
    prev.save(buf, format="WEBP", quality=PREVIEW_QUALITY, method=4)
    facts = ImageFacts(
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
    facts.cpu_ms = {"decode": (decoded - start) * 1000, "hashes and preview": (time.process_time() - decoded) * 1000}
    return facts


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
    return Caption(lines, joined, frozenset(joined[i : i + 3] for i in range(len(joined) - 2)))


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


def near_identical(
    distance: int,
    text_a: str,
    text_b: str,
    known: Iterable[str] = (),
    looks: Callable[[], tuple[Look | None, Look | None]] | None = None,
) -> bool:
    """Whether two items are one meme: pHash `distance` bits apart, captions agreeing on the
    words that vary (see NEAR_DUP_BITS) and, where `looks` gives both items' previews and caption
    boxes, caption pixels that agree (same_caption_pixels). `known`: the known text of the templates
    the items were recognised as (templates.known_text), left out of both captions."""
    if not _captions_agree(distance, text_a, text_b, known):
        return False
    a, b = looks() if looks else (None, None)
    return a is None or b is None or same_caption_pixels(a, b)


def _captions_agree(distance: int, text_a: str, text_b: str, known: Iterable[str]) -> bool:
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


@dataclass(frozen=True, eq=False)
class Look:
    """What the pixel check sees of an item: its preview in grey (0-1) and its caption boxes in
    preview pixels (x0, y0, x1, y1)."""

    gray: Any
    boxes: tuple[tuple[float, float, float, float], ...]


def look(preview: bytes, width: int, height: int, boxes: Iterable[Iterable[float]]) -> Look:
    """A Look from a stored preview and the OCR boxes in the image's own pixels."""
    import numpy as np
    from PIL import Image

    gray = np.asarray(Image.open(io.BytesIO(preview)).convert("L"), dtype=np.float32) / 255.0
    sx, sy = gray.shape[1] / width, gray.shape[0] / height
    return Look(gray, tuple((x0 * sx, y0 * sy, x1 * sx, y1 * sy) for x0, y0, x1, y1 in boxes))


def _fit(inner: Any, outer: Any) -> tuple[Any, float]:
    """The affine map of `inner` into `outer` (a crop's place in its original, or the same frame):
    the best uniform scale 0.7-1.0 and offset by normalised template matching at half size, then
    refined (separate scales, a shear) by OpenCV's ECC. Returns (2x3 map, matching score)."""
    import cv2
    import numpy as np

    best: tuple[float, tuple[float, int, int] | None] = (-2.0, None)
    if min(*inner.shape, *outer.shape) < 16:
        return None, best[0]  # a strip or a speck: nothing to align
    half = cv2.resize(outer, (outer.shape[1] // 2, outer.shape[0] // 2), interpolation=cv2.INTER_AREA)
    for k in np.linspace(0.7, 1.0, 16):
        tw, th = round(inner.shape[1] * k / 2), round(inner.shape[0] * k / 2)
        if not (8 <= tw <= half.shape[1] and 8 <= th <= half.shape[0]):
            continue
        scores = cv2.matchTemplate(
            half, cv2.resize(inner, (tw, th), interpolation=cv2.INTER_AREA), cv2.TM_CCOEFF_NORMED
        )
        _, top, _, at = cv2.minMaxLoc(scores)
        if top > best[0]:
            best = (top, (float(k), at[0] * 2, at[1] * 2))
    if best[1] is None:
        return None, best[0]
    k, x, y = best[1]
    warp = np.array([[k, 0, x], [0, k, y]], dtype=np.float32)
    try:
        _, warp = cv2.findTransformECC(
            inner, outer, warp, cv2.MOTION_AFFINE, (cv2.TERM_CRITERIA_EPS | cv2.TERM_CRITERIA_COUNT, 50, 1e-4), None, 1
        )
    except cv2.error:
        pass  # no convergence: the matched scale and offset stand
    return warp, best[0]


def _box_agreement(a: Look, b_gray: Any, warp: Any) -> list[float]:
    """Normalised correlation of each of a's caption boxes with b's pixels there (warp: a -> b);
    boxes under 4 preview pixels, mostly outside b's frame, or a watermark's are left out."""
    import cv2
    import numpy as np

    h, w = a.gray.shape
    seen = cv2.warpAffine(
        b_gray,
        warp,
        (w, h),
        flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP,
        borderMode=cv2.BORDER_CONSTANT,
        borderValue=-1,
    )
    out = []
    for x0, y0, x1, y1 in a.boxes:
        if x1 - x0 < 4 or y1 - y0 < 4 or _watermark(x0 / w, y0 / h, x1 / w, y1 / h):
            continue
        xa, ya, xb, yb = max(0, int(x0) - 1), max(0, int(y0) - 1), min(w, int(x1) + 2), min(h, int(y1) + 2)
        inside = seen[ya:yb, xa:xb] >= 0
        if inside.size == 0 or inside.mean() < 0.6:
            continue
        p = a.gray[ya:yb, xa:xb][inside]
        q = seen[ya:yb, xa:xb][inside]
        p, q = p - p.mean(), q - q.mean()
        norm = float(np.sqrt((p * p).sum() * (q * q).sum()))
        out.append(float((p * q).sum()) / norm if norm > 1e-6 else 1.0)
    return out


def _watermark(x0: float, y0: float, x1: float, y1: float) -> bool:
    """A box (in fractions of its frame) that is one short line in a corner."""
    band = WATERMARK_BAND
    return (
        (x0 <= band or x1 >= 1 - band)
        and (y0 <= band or y1 >= 1 - band)
        and x1 - x0 <= WATERMARK_WIDTH
        and y1 - y0 <= WATERMARK_HEIGHT
    )


def same_caption_pixels(a: Look, b: Look) -> bool:
    """Whether the captions of two near pictures are drawn the same: one preview aligned onto the
    other (whichever fits inside the other best), each caption box of both (a crop's cut-off boxes
    and a watermark left out) correlates >= NEAR_DUP_PIXELS with the other's pixels. Previews that
    cannot be aligned leave the decision to the text."""
    import cv2

    into_b, score_b = _fit(a.gray, b.gray)
    into_a, score_a = _fit(b.gray, a.gray)
    if into_b is None and into_a is None:
        return True
    warp = (
        into_b if into_a is None or (into_b is not None and score_b >= score_a) else cv2.invertAffineTransform(into_a)
    )
    agreement = _box_agreement(a, b.gray, warp) + _box_agreement(b, a.gray, cv2.invertAffineTransform(warp))
    return min(agreement, default=1.0) >= NEAR_DUP_PIXELS


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


def assign_groups(
    items: Iterable[tuple[int, int, str]],
    known: Callable[[int, int], Iterable[str]] | None = None,
    look_of: Callable[[int], Look | None] | None = None,
) -> dict[int, int]:
    """Near-identical groups of (item_id, phash, ocr_text) rows as ingest makes them one item at a
    time, in the order given: each item joins the group of the nearest earlier item it is
    near-identical to. `known(item, other)`: the known text of their templates; `look_of(item)`:
    its preview and caption boxes (near_identical). Returns item_id -> the group's first item."""
    import numpy as np

    rows = list(items)
    hashes = np.array([r[1] for r in rows], dtype=np.int64)
    first: dict[int, int] = {}
    for n, (item_id, phash, text) in enumerate(rows):
        d = np.bitwise_count(np.bitwise_xor(hashes[:n], np.int64(phash)))
        group = item_id
        for k in sorted(np.nonzero(d <= NEAR_DUP_BITS_CROPPED)[0], key=lambda k: (int(d[k]), rows[k][0])):
            other = rows[k][0]
            looks = (lambda a=item_id, b=other: (look_of(a), look_of(b))) if look_of else None
            if near_identical(int(d[k]), text, rows[k][2], known(item_id, other) if known else (), looks):
                group = first[other]
                break
        first[item_id] = group
    return first
