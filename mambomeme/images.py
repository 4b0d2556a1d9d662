"""Images: decoding under size limits, content and perceptual hashes, WebP previews, and the
perceptual-hash index that groups near-duplicates."""

from __future__ import annotations

import hashlib
import io
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from mambomeme.library import clean_line, normalise_query

PIL_FORMATS = {"PNG": "png", "JPEG": "jpeg", "MPO": "jpeg", "GIF": "gif", "WEBP": "webp"}

# Decompression bombs: Pillow only warns between 89 and 179 megapixels. No meme is that large;
# 40 MP (e.g. 8000x5000) is already far above any real meme, so anything bigger is refused.
MAX_IMAGE_PIXELS = 40_000_000
# Work per image is bounded before anything is decoded (issue 22):
# - file size: a 40 MP image as PNG of photographic noise is ~120 MB raw, ~60-90 MB compressed;
#   real memes are under ~10 MB. Past 100 MB a file is not read at all (a 1.5 GB sparse "image"
#   was read whole and copied to the workers, 4.3 GB, only to be "not an image").
# - aspect: template recognition scales every picture to 400 px wide (templates.ORB_WIDTH), so a
#   10x45,000 strip (3.4 KB) became 400x1,800,000 and ORB's pyramid took 4.6 GB, and a 600x1
#   spacer GIF became one row, which ORB rejects with an OpenCV error. Tall screenshots and comics
#   run to ~1:17 (1080x18,000); past 1:32 an image is a banner, strip or spacer, and at 1:32 the
#   scaled picture is at most 400x12,800 (5 MP).
MAX_FILE_BYTES = 100_000_000
MAX_ASPECT = 32

# Previews live inside the database so a copied file still shows them. The TUI draws them with
# half-block characters: an 80x24 pane is at most ~40x44 "pixels", a 200-column terminal ~100x110,
# so 160 px on the longest side covers large terminals. WebP q=60 keeps a typical meme at ~4-7 KB,
# i.e. ~60 MB of previews for a 10,000-meme library (measured: see `mambo status`).
PREVIEW_SIDE = 160
PREVIEW_QUALITY = 60

# Grouping by 64-bit pHash (Hamming distance in bits), calibrated on the fixture's variants
# (tests/test_ingest.py::test_near_duplicates_share_a_group and the table in benchdata/fixture/README.md):
#   resized / re-encoded / watermarked copies: 0-2 bits; an 8 % crop: 18 bits;
#   other captions on the same template picture: 4-10 bits; different pictures: 14-32 bits.
# The picture alone cannot tell a crop from a re-captioned template, so near-identity also asks
# the caption: the shorter OCR text's words must mostly occur in the other's.
NEAR_DUP_BITS = 3            # this close: near-identical if the captions agree at all
NEAR_DUP_BITS_CROPPED = 20   # up to this far (crops): near-identical only if the captions agree well
NEAR_DUP_MIN_WORDS = 5       # ...and there is enough caption text to compare
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
        raise BadInput("bomb", f"decompression bomb refused ({e})") from e
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


def caption_overlap(a: str, b: str) -> tuple[float, int]:
    """(share of the shorter caption's words found in the other, that caption's word count)."""
    wa, wb = set(normalise_query(a)), set(normalise_query(b))
    n = min(len(wa), len(wb))
    return (len(wa & wb) / n if n else 0.0), n


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
