"""Templates: perceptual fingerprints, the bundled catalogue and user templates, recognition (ORB
features with the caption masked, an LSH shortlist, ratio test and RANSAC homography), and the
derived fields a recognised template and group labels give an item."""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mambomeme.embed import WRITE_BATCH, Embedder, embed_items
from mambomeme.library import DB, data_path, file_sha256, get_setting, set_setting
from mambomeme.output import MamboError, clean_line, show_path
from mambomeme.progress import Progress
from mambomeme.query_plan import normalise_query
from mambomeme.state import template_group_id
from mambomeme.vocabulary import refresh_vocabulary

# ─────────────────────────────────────────────────────────────────────────────
# Templates: fingerprints, the catalogue and recognition
# ─────────────────────────────────────────────────────────────────────────────

# The bundled catalogue of known templates (names, aliases, descriptions, fingerprints; no images):
# templates/README.md gives its provenance and the fingerprint algorithms implemented below.
CATALOGUE_FILE = data_path("templates/catalogue.jsonl", "templates/catalogue.jsonl")
FINGERPRINT_VERSION = 1
ORB_WIDTH = 400  # catalogue README: ORB runs on the picture resized to 400 px wide
ORB_TEMPLATE_FEATURES = 300  # ...with 300 features for a template (as the catalogue was computed)
# A meme's side gets more features: even with its caption masked out, crops and rescaling move
# keypoints between pyramid levels. 1000 is the README's suggestion; ORB takes ~10 ms for it.
ORB_QUERY_FEATURES = 1000
ORB_FEW_FEATURES = 200  # a masked meme with fewer features than this is searched again...
ORB_FEW_FAST = 10  # ...with this FAST threshold (OpenCV's default is 20)
# Caption text attracts most ORB keypoints of a meme (every letter is corners), and none of them
# are in the template. Masking the boxes OCR found (grown by this many px of the 400-px picture)
# raised top-1 recognition on the bench from 0.45 to 0.95 (`mambo bench templates`).
TEXT_MASK_PAD = 4
# Shortlist: one index over every template view's descriptors. Locality-sensitive hashing (LSH_TABLES
# tables keyed by LSH_BITS random descriptor bits) finds candidate neighbours; a candidate within
# LSH_MAX_DIST bits (of 256) votes for its view; the SHORTLIST views with most votes go to geometric
# verification. A brute-force match of 1000 query descriptors against all ~74k catalogue descriptors
# took 1.3 s and FLANN-LSH 250 ms on this machine; this index takes a few ms. The correct view was in
# the shortlist for 99 % of bench memes.
LSH_TABLES = 8
LSH_BITS = 16
LSH_MAX_DIST = 64
LSH_MAX_BUCKET = 64
SHORTLIST = 6
SHORTLIST_SPARSE = 2  # ...and the views with most votes per keypoint of their own, given SPARSE_VOTES
SPARSE_VOTES = 3
SPARSE_VIEW = 100  # a view with fewer keypoints is matched against every meme descriptor
FULL_VERIFY = 2
RATIO = 0.75  # Lowe's ratio test, as in the catalogue README
RANSAC_PX = 5.0  # cv2.findHomography reprojection threshold (px of the 400-px pictures)
# Acceptance: a template is recognised when its best view keeps at least MIN_INLIERS RANSAC inliers
# under a plausible homography (_plausible). `mambo bench templates` (2026-11-30): held-out memes
# reached at most 6 inliers; 15 keeps a 2.5x margin for 0.003 of top-1 (0.962 vs 0.965 at 8-12), no
# false recognition at any bar. See docs/decisions.md#template-inliers.
MIN_INLIERS = 15
# A view with few keypoints of its own (flat clip art: 11 in the catalogue) can never show 15 inliers:
# its bar is SPARSE_SHARE of its keypoints, never under SPARSE_MIN_INLIERS, with stricter geometry
# (`verify`). Chance reached 6 inliers, so the floor is 7: top-1 0.901, sparse views 0.695, no false
# recognition. A spread requirement only lost (0.0: off). See docs/decisions.md#template-inliers.
SPARSE_SHARE = 0.3
SPARSE_MIN_INLIERS = 7
SPARSE_SPREAD = 0.0


def required_inliers(keypoints: int, share: float = SPARSE_SHARE, floor: int = SPARSE_MIN_INLIERS) -> int:
    """The inliers a view with this many keypoints must show: MIN_INLIERS, or for a sparse view
    `share` of its keypoints, never under `floor`."""
    return max(floor, min(MIN_INLIERS, math.ceil(share * keypoints)))


def accepted(
    r: Recognition, share: float = SPARSE_SHARE, floor: int = SPARSE_MIN_INLIERS, spread: float = SPARSE_SPREAD
) -> bool:
    """Whether a candidate is recognised (the bench passes other constants to calibrate them)."""
    need = required_inliers(r.keypoints, share, floor)
    return r.inliers >= need and (r.inliers >= MIN_INLIERS or r.spread >= spread)


def _strength(r: Recognition) -> float:
    """How far a candidate is past its own bar: candidates of sparse and rich views compare."""
    return r.inliers / required_inliers(r.keypoints)


# Text-layout templates (a "marked safe from" banner, a panel of text) are known by their fixed
# words, not their picture: their captions are masked out of ORB and little else is left. A
# catalogue entry's `anchors` name those words and the region of the picture (fractions
# [x0, y0, x1, y1]) where the centre of the words must lie; every anchor must be found on one OCR
# line, in order, each word of ANCHOR_FUZZY_LETTERS or more letters within one edit (OCR drops or
# swaps a letter), shorter words exactly. The region is grown by ANCHOR_MARGIN of the picture on
# each side: crops of up to 10 % per side move the words that much (bench templates' `degrade`).
ANCHOR_FUZZY_LETTERS = 4
ANCHOR_MARGIN = 0.1


def _near_word(a: str, b: str) -> bool:
    """Equal, or (both ANCHOR_FUZZY_LETTERS or longer) one insertion, deletion or substitution apart."""
    if a == b:
        return True
    if min(len(a), len(b)) < ANCHOR_FUZZY_LETTERS or abs(len(a) - len(b)) > 1:
        return False
    i = 0
    while i < min(len(a), len(b)) and a[i] == b[i]:
        i += 1
    return a[i + 1 :] == b[i + 1 :] or a[i + 1 :] == b[i:] or a[i:] == b[i + 1 :]


def _ocr_lines(words: list[tuple[list[int], str]]) -> list[list[tuple[str, list[int]]]]:
    """OCR boxes grouped into lines (a box starting above the middle of the previous one joins its
    line), each line's words left to right with their box."""
    lines: list[list[tuple[float, str, list[int]]]] = []
    last_bottom = -1e9
    for rect, text in sorted(words, key=lambda w: (w[0][1], w[0][0])):
        toks = normalise_query(text)
        if not toks:
            continue
        top, bottom = rect[1], rect[3]
        if not (lines and top < last_bottom - (bottom - top) / 2):
            lines.append([])
        lines[-1] += [(rect[0] + k, t, rect) for k, t in enumerate(toks)]
        last_bottom = bottom
    return [[(t, r) for _x, t, r in sorted(line, key=lambda x: x[0])] for line in lines]


def anchor_found(anchor: dict[str, Any], lines: list[list[tuple[str, list[int]]]], width: int, height: int) -> bool:
    """Whether an anchor's words stand on one OCR line, in order, with their centre in its region."""
    want = normalise_query(anchor["text"])
    x0, y0, x1, y1 = anchor.get("region", [0, 0, 1, 1])
    for line in lines:
        for start in range(len(line) - len(want) + 1):
            got = line[start : start + len(want)]
            if not all(_near_word(w, t) for w, (t, _r) in zip(want, got, strict=True)):
                continue
            rects = [r for _t, r in got]
            cx = (min(r[0] for r in rects) + max(r[2] for r in rects)) / 2 / max(1, width)
            cy = (min(r[1] for r in rects) + max(r[3] for r in rects)) / 2 / max(1, height)
            if x0 - ANCHOR_MARGIN <= cx <= x1 + ANCHOR_MARGIN and y0 - ANCHOR_MARGIN <= cy <= y1 + ANCHOR_MARGIN:
                return True
    return False


def match_anchors(
    anchors: list[tuple[int, list[dict[str, Any]]]], words: list[tuple[list[int], str]], width: int, height: int
) -> Recognition | None:
    """The text-layout template all of whose anchors OCR found in place (the one with most anchors
    when several are), or None."""
    if not anchors or not words:
        return None
    lines = _ocr_lines(words)
    found = [(len(a), -t, t) for t, a in anchors if a and all(anchor_found(x, lines, width, height) for x in a)]
    return Recognition(max(found)[2], 0, anchors=max(found)[0]) if found else None


def anchor_words_in(anchors: list[dict[str, Any]], text: str) -> bool:
    """Whether a caption holds every anchor's words at all (positions unknown): worth reading again."""
    lines = [[(t, [0, 0, 0, 0]) for t in normalise_query(line)] for line in text.split("\n")]
    return all(anchor_found({"text": a["text"]}, lines, 1, 1) for a in anchors)


def known_text(db: DB, *item_ids: int) -> tuple[str, ...]:
    """What the templates these items were recognised as print or are called: their anchors' words,
    name and aliases. Memes of one template share it, so near-identity (images.near_identical)
    judges their captions without it."""
    out: list[str] = []
    for item_id in dict.fromkeys(item_ids):
        for name, aliases, anchors in db.q("item_template_text", {"item_id": item_id}):
            out += [name, *json.loads(aliases), *(a["text"] for a in json.loads(anchors))]
    return tuple(dict.fromkeys(out))


def fingerprint_rgb(img: Any) -> Any:
    """A Pillow image decoded as the catalogue README says: first frame, transparency over white,
    8-bit RGB, EXIF orientation NOT applied."""
    import numpy as np
    from PIL import Image

    if getattr(img, "n_frames", 1) > 1:
        img.seek(0)
    if img.mode in ("RGBA", "LA", "PA") or (img.mode == "P" and "transparency" in img.info):
        rgba = img.convert("RGBA")
        img = Image.alpha_composite(Image.new("RGBA", rgba.size, (255, 255, 255, 255)), rgba)
    return np.asarray(img.convert("RGB"))


def _area_sums(y: Any, h: int, w: int) -> Any:
    """Exact area resampling sums S = R . Y . C^T (catalogue README). float64 BLAS is exact here:
    every product and partial sum is an integer below 2^53 for any image under MAX_IMAGE_PIXELS."""
    import numpy as np

    def weights(n: int, size: int) -> Any:
        i = np.arange(n)[:, None]
        k = np.arange(size)[None, :]
        return np.maximum(0, np.minimum((k + 1) * n, (i + 1) * size) - np.maximum(k * n, i * size)).astype(np.float64)

    big_h, big_w = y.shape
    return np.rint(weights(h, big_h) @ y.astype(np.float64) @ weights(w, big_w).T)


def _hex64(bits: Any) -> str:
    v = 0
    for b in bits.ravel():
        v = (v << 1) | int(b)
    return f"{v:016x}"


@functools.cache
def _dct32() -> Any:
    import numpy as np

    k = np.arange(32)[:, None]
    n = np.arange(32)[None, :]
    d = np.cos(np.pi * (2 * n + 1) * k / 64) * np.sqrt(2 / 32)
    d[0, :] = np.sqrt(1 / 32)
    return d


def phash64(y: Any) -> str:
    """pHash of integer luma Y = 299R + 587G + 114B: 32x32 area means, orthonormal DCT-II, the
    8x8 block F[1..8][1..8], bits above its median (1e-6 tie margin)."""
    import numpy as np

    p = _area_sums(y, 32, 32) / (1000.0 * y.shape[0] * y.shape[1])
    f = _dct32() @ p @ _dct32().T
    b = f[1:9, 1:9]
    return _hex64((b - float(np.median(b))) > 1e-6)


def dhash64(y: Any) -> str:
    s = _area_sums(y, 8, 9)
    return _hex64(s[:, 1:] > s[:, :-1])


def color_layout(rgb: Any) -> list[list[int]]:
    """Mean CIELAB (D65) of each cell of a 4x4 grid, rounded half up."""
    import numpy as np

    c = rgb.astype(np.float64) / 255.0
    lin = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    m = np.array(
        [[0.4124564, 0.3575761, 0.1804375], [0.2126729, 0.7151522, 0.0721750], [0.0193339, 0.1191920, 0.9503041]]
    )
    xyz = lin @ m.T / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > 216 / 24389, np.cbrt(xyz), (24389 / 27 * xyz + 16) / 116)
    lab = np.stack([116 * f[..., 1] - 16, 500 * (f[..., 0] - f[..., 1]), 200 * (f[..., 1] - f[..., 2])], -1)
    h, w = rgb.shape[:2]
    cells = []
    for r in range(4):
        for col in range(4):
            cell = lab[r * h // 4 : (r + 1) * h // 4, col * w // 4 : (col + 1) * w // 4].reshape(-1, 3)
            cells.append([int(np.floor(v + 0.5)) for v in cell.mean(axis=0)])
    return cells


def orb_features(rgb: Any, nfeatures: int, text_boxes: Iterable[Any] = ()) -> tuple[Any, Any, int]:
    """(keypoints as float32 [x, y] px of the 400-px-wide picture, n x 32 uint8 descriptors, its
    height). Caption boxes (pixel quadrilaterals of `rgb`) are masked out of the detection."""
    import cv2
    import numpy as np

    gray = cv2.cvtColor(np.ascontiguousarray(rgb), cv2.COLOR_RGB2GRAY)
    big_h, big_w = gray.shape
    h = max(1, round(ORB_WIDTH * big_h / big_w))
    small = cv2.resize(gray, (ORB_WIDTH, h), interpolation=cv2.INTER_AREA)
    mask = None
    boxes = list(text_boxes)
    if boxes:
        mask = np.full(small.shape, 255, np.uint8)
        sx, sy = ORB_WIDTH / big_w, h / big_h
        for box in boxes:
            pts = np.asarray(box, np.float64).reshape(-1, 2)
            x0, y0 = np.floor(pts.min(0) * (sx, sy)).astype(int) - TEXT_MASK_PAD
            x1, y1 = np.ceil(pts.max(0) * (sx, sy)).astype(int) + TEXT_MASK_PAD
            mask[max(0, y0) : max(0, y1), max(0, x0) : max(0, x1)] = 0
    kps, desc = cv2.ORB_create(nfeatures=nfeatures).detectAndCompute(small, mask)
    if mask is not None and len(kps) < ORB_FEW_FEATURES:
        # Flat clip art under big captions leaves few corners at FAST's default threshold (20);
        # the weaker ones still match the template (bench: 0 -> 16 inliers on such a meme).
        kps, desc = cv2.ORB_create(nfeatures=nfeatures, fastThreshold=ORB_FEW_FAST).detectAndCompute(small, mask)
    if desc is None or not kps:
        return np.zeros((0, 2), np.float32), np.zeros((0, 32), np.uint8), h
    return np.array([k.pt for k in kps], np.float32).reshape(-1, 2), desc, h


def fingerprint_view(
    rgb: Any, text_boxes: list[list[int]] | None = None, features: int = ORB_TEMPLATE_FEATURES
) -> dict[str, Any]:
    """One template view's fingerprints, computed as the catalogue's (fingerprint version 1). A
    user's template picture is often a meme itself: its caption's boxes are masked out of ORB, as
    on the meme side, or its 300 features would mostly be letters no other meme has."""
    import cv2
    import numpy as np

    y = rgb[..., 0].astype(np.int64) * 299 + rgb[..., 1].astype(np.int64) * 587 + rgb[..., 2].astype(np.int64) * 114
    h_img, w_img = y.shape
    band = y[h_img // 4 : (3 * h_img) // 4]
    xy, desc, h = orb_features(rgb, features, text_boxes or [])
    return {
        "fingerprint_version": FINGERPRINT_VERSION,
        "width": w_img,
        "height": h_img,
        "phash64": phash64(y),
        "dhash64": dhash64(y),
        "band_phash64": phash64(band) if len(band) else phash64(y),
        "band_dhash64": dhash64(band) if len(band) else dhash64(y),
        "color_layout": color_layout(rgb),
        "orb_xy": xy.astype(np.float32).tobytes(),
        "orb_desc": desc.tobytes(),
        "origin": {"opencv": cv2.__version__, "w": ORB_WIDTH, "h": h, "text_masked": len(text_boxes or [])},
    }


def catalogue_view(view: dict[str, Any]) -> dict[str, Any]:
    """A catalogue view as a template_views row."""
    import numpy as np

    orb = view["orb"]
    xy = np.array([[k[0] * orb["w"], k[1] * orb["h"]] for k in orb["kp"]], np.float32).reshape(-1, 2)
    return {
        "fingerprint_version": FINGERPRINT_VERSION,
        "width": view["width"],
        "height": view["height"],
        **{k: view[k] for k in ("phash64", "dhash64", "band_phash64", "band_dhash64")},
        "color_layout": view["color_layout"],
        "orb_xy": xy.tobytes(),
        "orb_desc": base64.b64decode(orb["desc_b64"]),
        "origin": {
            "source": view["source"],
            "kind": view["kind"],
            "image": view["image"],
            "opencv": orb.get("opencv"),
            "w": orb["w"],
            "h": orb["h"],
        },
    }


def slugify(name: str) -> str:
    """The catalogue's id rule: lower case, apostrophes dropped, other runs of non [a-z0-9] -> '-'."""
    s = re.sub(r"['\u2019]", "", name.lower())
    return re.sub(r"[^a-z0-9]+", "-", s).strip("-")


@dataclass
class Recognition:
    template_id: int
    inliers: int
    keypoints: int = 0  # the matched view's own ORB keypoints
    spread: float = 0.0  # share of the view's picture inside the hull of the inlier keypoints
    anchors: int = 0  # recognised by this many anchors (its fixed words), not by ORB


def _plausible(h: Any, query_h: int, view_h: int) -> bool:
    """A homography a crop/rescale/caption layout can produce: template corners land in a convex
    quadrilateral of sane size, near-affine. Random matches give wild, folded or tiny maps."""
    import cv2
    import numpy as np

    if h is None or not np.all(np.isfinite(h)):
        return False
    try:
        inv = np.linalg.inv(h)  # h maps the meme's points to the template's; corners go back
    except np.linalg.LinAlgError:
        return False
    corners = np.array([[[0, 0]], [[ORB_WIDTH, 0]], [[ORB_WIDTH, view_h]], [[0, view_h]]], np.float64)
    quad = cv2.perspectiveTransform(corners, inv).reshape(-1, 2)
    if not np.all(np.isfinite(quad)):
        return False
    area = cv2.contourArea(quad.astype(np.float32))
    if not cv2.isContourConvex(quad.astype(np.float32)):
        return False
    # The template covers between 4 % and 25x the meme's picture (crops enlarge it, caption bands
    # and panels shrink it); its sides keep their proportions within 4:1 (no extreme shear).
    meme_area = float(ORB_WIDTH * query_h)
    sides = np.linalg.norm(quad - np.roll(quad, 1, axis=0), axis=1)
    stretch = sides / np.maximum(np.array([view_h, ORB_WIDTH, view_h, ORB_WIDTH], np.float64), 1)
    return 0.04 * meme_area <= area <= 25 * meme_area and stretch.max() <= 4 * stretch.min()


class TemplateIndex:
    """Every view's ORB descriptors in one LSH index (see LSH_TABLES), then ratio-tested matches and
    a RANSAC homography against the shortlisted views."""

    def __init__(
        self,
        views: list[tuple[int, int, bytes, bytes, int]],
        anchors: list[tuple[int, list[dict[str, Any]]]] | None = None,
    ):
        """views: (view_id, template_id, orb_xy blob, orb_desc blob, picture height at 400 px);
        anchors: (template_id, its anchors) of text-layout templates."""
        import numpy as np

        self.anchors = anchors or []

        self.view_template = np.array([v[1] for v in views], np.int64)
        self.xy = [np.frombuffer(v[2], np.float32).reshape(-1, 2) for v in views]
        self.desc = [np.frombuffer(v[3], np.uint8).reshape(-1, 32) for v in views]
        self.view_h = [int(v[4]) for v in views]
        self.sizes = np.array([len(d) for d in self.desc], np.int64)
        self.payload = (views, self.anchors)
        self.owner = np.repeat(np.arange(len(views)), [len(d) for d in self.desc]).astype(np.int64)
        all_desc = np.vstack(self.desc) if views else np.zeros((0, 32), np.uint8)
        self.d64 = np.ascontiguousarray(all_desc).view(np.uint64).reshape(-1, 4)
        rng = np.random.default_rng(20261130)  # fixed: the same tables in every process
        self.positions = [rng.choice(256, LSH_BITS, replace=False) for _ in range(LSH_TABLES)]
        self.weights = (1 << np.arange(LSH_BITS)).astype(np.int64)
        bits = np.unpackbits(all_desc, axis=1)
        self.tables = []
        for pos in self.positions:
            keys = bits[:, pos].astype(np.int64) @ self.weights
            order = np.argsort(keys, kind="stable")
            self.tables.append((keys[order], order))

    def __len__(self) -> int:
        return len(self.desc)

    @classmethod
    def load(cls, db: DB, after_revision: int = 0) -> TemplateIndex:
        return cls(
            [tuple(r) for r in db.q("template_index", {"after_revision": after_revision})],
            [(int(t), json.loads(a)) for t, a in db.q("template_anchors", {"after_revision": after_revision})],
        )

    def __bool__(self) -> bool:
        return bool(len(self) or self.anchors)

    def shortlist(self, q: Any) -> list[tuple[int, Any]]:
        """The SHORTLIST views most meme descriptors have a near neighbour in, each with the indexes
        of those descriptors (the only ones worth matching against that view)."""
        import numpy as np

        n_desc, m = len(self.owner), len(q)
        if not n_desc or not m:
            return []
        bits = np.unpackbits(q, axis=1)
        qs, ds = [], []
        for pos, (keys_sorted, order) in zip(self.positions, self.tables, strict=True):
            keys = bits[:, pos].astype(np.int64) @ self.weights
            lo = np.searchsorted(keys_sorted, keys, "left")
            n = np.searchsorted(keys_sorted, keys, "right") - lo
            n[n > LSH_MAX_BUCKET] = 0  # a crowded key (flat or repetitive patches) says nothing
            total = int(n.sum())
            if total:
                qs.append(np.repeat(np.arange(m), n))
                ds.append(order[np.repeat(lo - np.cumsum(n) + n, n) + np.arange(total)])
        if not qs:
            return []
        qi, di = np.concatenate(qs), np.concatenate(ds)
        q64 = np.ascontiguousarray(q).view(np.uint64).reshape(-1, 4)
        near = np.bitwise_count(q64[qi] ^ self.d64[di]).sum(axis=1) <= LSH_MAX_DIST
        # one vote per (view, meme descriptor)
        pairs = np.unique(self.owner[di[near]] * m + qi[near])
        views = pairs // m
        votes = np.bincount(views, minlength=len(self.desc))
        chosen = [int(v) for v in np.argsort(-votes, kind="stable")[:SHORTLIST] if votes[v] > 0]
        # A sparse view (11 keypoints) cannot collect as many votes as a rich one collects by chance:
        # the views with the largest share of their own keypoints voted for are verified too.
        share = np.where(votes >= SPARSE_VOTES, votes / np.maximum(1, self.sizes), 0.0)
        chosen += [
            int(v)
            for v in np.argsort(-share, kind="stable")[:SHORTLIST_SPARSE]
            if share[v] > 0 and int(v) not in chosen
        ]
        return [(v, pairs[views == v] % m) for v in chosen]

    def verify(self, view: int, qxy: Any, q: Any, query_h: int) -> tuple[int, float]:
        """RANSAC inliers of the ratio-tested matches between meme descriptors and one view, and
        their spread: the share of the view's picture inside the convex hull of the inlier
        keypoints ((0, 0.0): fewer than 4 matches, or an implausible homography)."""
        import cv2
        import numpy as np

        d = self.desc[view]
        if len(d) < 2 or len(q) < 4:
            return 0, 0.0
        if len(d) < SPARSE_VIEW:
            # A sparse view: the ratio test against its few descriptors lets many meme
            # descriptors onto each keypoint (32 pairs for 10 keypoints, RANSAC found nothing), so
            # matches must be mutual nearest neighbours, and the map a similarity (4 degrees of
            # freedom: crops and rescales), which chance matches fit far less often than a homography.
            matches = cv2.BFMatcher(cv2.NORM_HAMMING, crossCheck=True).match(q, d)
            if len(matches) < 3:
                return 0, 0.0
            src = qxy[[m.queryIdx for m in matches]]
            dst = self.xy[view][[m.trainIdx for m in matches]]
            a, mask = cv2.estimateAffinePartial2D(src, dst, method=cv2.RANSAC, ransacReprojThreshold=RANSAC_PX)
            h = None if a is None else np.vstack([a, [0.0, 0.0, 1.0]])
        else:
            pairs = [
                p
                for p in cv2.BFMatcher(cv2.NORM_HAMMING).knnMatch(q, d, k=2)
                if len(p) == 2 and p[0].distance < RATIO * p[1].distance
            ]
            if len(pairs) < 4:
                return 0, 0.0
            src = qxy[[p[0].queryIdx for p in pairs]]
            dst = self.xy[view][[p[0].trainIdx for p in pairs]]
            h, mask = cv2.findHomography(src, dst, cv2.RANSAC, RANSAC_PX)
        if mask is None or not _plausible(h, query_h, self.view_h[view]):
            return 0, 0.0
        inl = dst[mask.ravel().astype(bool)].astype(np.float32)
        hull = cv2.contourArea(cv2.convexHull(inl)) if len(inl) >= 3 else 0.0
        return int(mask.sum()), float(hull) / float(ORB_WIDTH * max(1, self.view_h[view]))

    def match(self, qxy: Any, q: Any, query_h: int) -> list[Recognition]:
        """Candidate templates, best first (one per template: its best view)."""
        best: dict[int, Recognition] = {}
        scored = []
        for rank, (v, voters) in enumerate(self.shortlist(q)):
            if self.sizes[v] < SPARSE_VIEW:  # cheap to match whole, and few of its matches vote
                voters = slice(None)
            scored.append((*self.verify(v, qxy[voters], q[voters], query_h), -rank, v))
        # The two most promising views are matched again with every descriptor: the LSH voters
        # miss some true matches (bench: 124 -> 147 inliers, 0 -> 9 on a sparse one), at ~5 ms each.
        promising = sorted(scored, reverse=True)[:FULL_VERIFY]
        full = [(*self.verify(v, qxy, q, query_h), rank, v) for _n, _s, rank, v in promising]
        for n, spread, _rank, v in [*full, *scored]:
            t = int(self.view_template[v])
            rec = Recognition(t, n, len(self.desc[v]), spread)
            if n > 0 and (t not in best or _strength(rec) > _strength(best[t])):
                best[t] = rec
        return sorted(best.values(), key=lambda r: (-_strength(r), -r.inliers, r.template_id))

    def recognise(
        self, rgb: Any, text_boxes: Iterable[Any] = (), words: list[tuple[list[int], str]] | None = None
    ) -> Recognition | None:
        """The template of a meme: its picture by ORB (see `accepted`), else a text-layout
        template by its anchors in the OCR `words` (box, text); None when neither is found."""
        if len(self):
            qxy, q, h = orb_features(rgb, ORB_QUERY_FEATURES, text_boxes)
            found = self.match(qxy, q, h)
            if found and accepted(found[0]):
                return found[0]
        return match_anchors(self.anchors, words or [], rgb.shape[1], rgb.shape[0])


def templates_revision(db: DB) -> int:
    rev = get_setting(db, "templates_revision")
    return int(rev) if rev is not None else 0


def next_templates_revision(db: DB) -> int:
    """A new, never reused revision number (call inside a write transaction)."""
    rev = templates_revision(db) + 1
    set_setting(db, "templates_revision", str(rev))
    return rev


def insert_template_view(db: DB, template_id: int, v: dict[str, Any]) -> None:
    db.q(
        "insert_template_view",
        v
        | {
            "template_id": template_id,
            "color_layout": json.dumps(v["color_layout"]),
            "origin": json.dumps(v["origin"], sort_keys=True),
        },
    )


def forget_template(db: DB, template_id: int) -> None:
    """Delete a template; the items it was recognised on are recognised again from scratch."""
    db.q("reset_items_of_template", {"template_id": template_id})
    db.q("delete_template", {"template_id": template_id})


def read_template_picture(image: Path) -> dict[str, Any]:
    """The fingerprint of a picture a person gives as a template (a blank template or any meme on
    it), with its caption boxes masked; a picture that cannot be one is a MamboError."""
    from PIL import Image, UnidentifiedImageError

    from mambomeme.images import MAX_FILE_BYTES, MAX_IMAGE_PIXELS, BadInput, check_shape
    from mambomeme.ocr import get_ocr

    try:
        Image.MAX_IMAGE_PIXELS = MAX_IMAGE_PIXELS
        if image.stat().st_size > MAX_FILE_BYTES:
            raise MamboError(f"{show_path(image)} is over {MAX_FILE_BYTES // 1_000_000} MB: not a template picture")
        with Image.open(image) as img:
            check_shape(*img.size)
            rgb = fingerprint_rgb(img)
    except FileNotFoundError as e:
        raise MamboError(f"no such file: {show_path(image)}") from e
    except BadInput as e:
        raise MamboError(f"{show_path(image)}: {e.message}") from None
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError, EOFError, Image.DecompressionBombError) as e:
        raise MamboError(f"cannot read {show_path(image)} as an image (png, jpg, gif, webp)") from e
    try:
        view = fingerprint_view(rgb, get_ocr().read_boxes(rgb)[1])
    except Exception as e:  # noqa: BLE001 - OpenCV or the OCR engine failing on this picture
        raise MamboError(
            f"cannot fingerprint {show_path(image)} ({type(e).__name__}); try another picture of the template"
        ) from None
    if len(view["orb_desc"]) < 32 * 20:
        raise MamboError(f"{show_path(image)} has too little texture to recognise (under 20 ORB features)")
    view["origin"] |= {"file": image.name, "sha256": file_sha256(image)}
    return view


def user_template_slug(name: str) -> str:
    """The id a person's template named `name` gets."""
    if not (slug := slugify(clean_line(name)[:200])):
        raise MamboError("--name needs at least one letter or digit")
    return slug


def insert_template(db: DB, fields: dict[str, Any]) -> int:
    """A new template row (slug, name, aliases, description, source, source_url, entry_sha256,
    revision, anchors); its id. Its views are inserted with insert_template_view."""
    return int(db.q1("insert_template", fields)[0])


def add_user_template(db: DB, name: str, view: dict[str, Any], aliases: tuple[str, ...], description: str) -> str:
    """Add the picture read as `view` as the person's template `name`; returns its id (slug)."""
    name = clean_line(name)[:200]
    slug = user_template_slug(name)
    if db.q1("template_by_slug", {"slug": slug}):
        raise MamboError(f"a template {slug!r} already exists: choose another --name or remove it first")
    alias_list = list(dict.fromkeys(a for a in (" ".join(clean_line(x).lower().split()) for x in aliases) if a))
    with db.write():
        rev = next_templates_revision(db)
        tid = insert_template(
            db,
            {
                "slug": slug,
                "name": name,
                "aliases": json.dumps(alias_list, ensure_ascii=False),
                "description": clean_line(description)[:2000],
                "source": "user",
                "source_url": "",
                "entry_sha256": "",
                "revision": rev,
                "anchors": "[]",
            },
        )
        insert_template_view(db, tid, view)
    return slug


def remove_user_template(db: DB, slug: str) -> None:
    """Remove the person's template `slug` (a catalogue entry cannot be removed)."""
    row = db.q1("template_by_slug", {"slug": slug})
    if not row:
        raise MamboError(f"no template {clean_line(slug)!r}: see `mambo templates list`")
    if row[3] == "catalogue":
        raise MamboError(f"{clean_line(slug)!r} is from the bundled catalogue and cannot be removed")
    with db.write():
        forget_template(db, int(row[0]))
        next_templates_revision(db)


def sync_catalogue(db: DB, path: Path = CATALOGUE_FILE) -> int:
    """Load the bundled catalogue into the library when it changed since the last load: new and
    changed entries get a new templates revision, entries gone from it are removed. Returns how
    many entries were added or changed."""
    if db.readonly or not path.is_file():
        return 0
    data = path.read_bytes()
    sha = hashlib.sha256(data).hexdigest()
    if get_setting(db, "catalogue_sha256") == sha:
        return 0
    changed = 0
    with db.write():
        known = {r[1]: (int(r[0]), r[2], r[3]) for r in db.q("templates_brief")}
        rev = next_templates_revision(db)
        seen = set()
        for line in data.decode("utf-8").splitlines():
            if not line.strip():
                continue
            entry_sha = hashlib.sha256(line.encode()).hexdigest()
            e = json.loads(line)
            if e.get("fingerprint_version") != FINGERPRINT_VERSION:
                continue
            seen.add(e["id"])
            have = known.get(e["id"])
            if have and have[1] == "user":
                continue  # the user's own template of that name stays; theirs wins
            if have and have[2] == entry_sha:
                continue
            fields = {
                "name": e["name"],
                "aliases": json.dumps(e.get("aliases", []), ensure_ascii=False),
                "description": e.get("description", ""),
                "source_url": e.get("source_url") or "",
                "entry_sha256": entry_sha,
                "revision": rev,
                "anchors": json.dumps(e.get("anchors", []), ensure_ascii=False),
            }
            views = [catalogue_view(v) for v in e["views"]]
            prints = [(v["phash64"], v["orb_xy"], v["orb_desc"]) for v in views]
            if have and [tuple(r) for r in db.q("template_view_prints", {"template_id": have[0]})] == prints:
                # Same pictures: the entry changes in place and no item's pixels are read again for
                # it (only its anchors, if any, are new to the items; derive picks up its names).
                db.q("update_template_fields", fields | {"template_id": have[0]})
                changed += 1
                continue
            if have:
                forget_template(db, have[0])
            tid = insert_template(db, fields | {"slug": e["id"], "source": "catalogue"})
            for v in views:
                insert_template_view(db, tid, v)
            changed += 1
        for slug, (tid, source, _sha) in known.items():
            if source == "catalogue" and slug not in seen:
                forget_template(db, tid)
                changed += 1
        set_setting(db, "catalogue_sha256", sha)
    return changed


def derive(db: DB, item_ids: Iterable[int]) -> list[int]:
    """Recompute items' derived fields from their recognised template and the group labels that
    reach them; returns the items whose derived fields changed (their text needs re-embedding).
    Precedence: a label on the item itself, then a label propagated from its group (newest first),
    then the recognised template. Sidecar values beat all of them (item_effective, schema.sql)."""
    changed = []
    for item_id in item_ids:
        row = db.rows("derive_inputs", {"item_id": item_id})
        if not row:
            continue
        it = row[0]
        derived: dict[str, Any] = {}
        if it["template_id"] is not None:
            names = [it["t_name"], *json.loads(it["t_aliases"])]
            derived["template"] = {
                "name": it["t_name"],
                "text": " ; ".join(names),
                "source": it["t_source"],
                "template": it["t_slug"],
                "score": it["template_score"],
            }
            if it["t_description"]:
                derived["description"] = {
                    "text": it["t_description"],
                    "source": it["t_source"],
                    "template": it["t_slug"],
                }
        labels = db.rows(
            "labels_for_item",
            {"item_id": item_id, "perceptual_group": it["perceptual_group"], "template_group": it["template_group"]},
        )
        # own labels first, then propagated ones; newest first within each
        labels.sort(key=lambda lab: (lab["item_id"] != item_id, -lab["label_id"]))
        lists: dict[str, list[str]] = {"entities": [], "tags": []}
        list_source: dict[str, dict[str, Any]] = {}
        template_done = False
        for lab in labels:
            src = {
                "source": "label" if lab["item_id"] == item_id else "propagated",
                "label": lab["label_id"],
                "from_item": lab["item_id"],
                "scope": lab["scope"],
            }
            if lab["field"] == "template" and not template_done:
                template_done = True
                known = db.rows("template_by_name", {"name": lab["value"]})
                if known:
                    t = known[0]
                    derived["template"] = src | {
                        "name": t["name"],
                        "template": t["slug"],
                        "text": " ; ".join([t["name"], *json.loads(t["aliases"])]),
                    }
                    if t["description"]:
                        derived["description"] = src | {"text": t["description"], "template": t["slug"]}
                else:
                    derived["template"] = src | {"name": lab["value"], "text": lab["value"]}
                    if derived.get("description", {}).get("source") in ("catalogue", "user"):
                        del derived["description"]  # the recognised template's, no longer the named one
            elif lab["field"] in lists:
                for v in json.loads(lab["value"]):
                    if v not in lists[lab["field"]]:
                        lists[lab["field"]].append(v)
                list_source.setdefault(lab["field"], src)
        for key, values in lists.items():
            if values:
                derived[key] = list_source[key] | {"values": values}
        text = json.dumps(derived, sort_keys=True, ensure_ascii=False)
        if text != it["derived"]:
            db.q("set_derived", {"item_id": item_id, "derived": text})
            changed.append(item_id)
    return changed


def items_in_scope(db: DB, scope: str, item_id: int, group_id: int | None) -> set[int]:
    """The memes a label of `scope` on this meme (and its group `group_id`) reaches."""
    return {r[0] for r in db.q("items_in_scope", {"scope": scope, "item_id": item_id, "group_id": group_id})}


def template_name(db: DB, template_id: int) -> str:
    return db.q1("template_name", {"template_id": template_id})[0]


# ─────────────────────────────────────────────────────────────────────────────
# Re-recognition after the catalogue changes
# ─────────────────────────────────────────────────────────────────────────────


def recognise_existing(
    db: DB, model: Callable[[], tuple[Embedder, int]], *, quiet: bool = True
) -> tuple[int, int, int]:
    """Incremental re-recognition after the templates changed: each item recognised at revision R
    is matched only against templates added or changed after R (items whose template was removed
    are at 0: all templates). Returns (items checked, items whose template changed, items whose
    files are missing). Items with missing files keep their old revision and are retried later."""
    revision = templates_revision(db)
    todo = db.rows("items_to_recognise", {"revision": revision})
    if not todo:
        return 0, 0, 0
    indexes: dict[int, TemplateIndex] = {}
    changed: list[int] = []
    missing = 0
    progress = Progress(len(todo), enabled=not quiet)
    for start in range(0, len(todo), WRITE_BATCH):
        updates, absent = _recognise_batch(db, todo[start : start + WRITE_BATCH], indexes)
        missing += len(absent)
        if updates or absent:
            model()  # loaded before the write lock is taken: their derived fields may change
        changed += _write_recognitions(db, updates, absent, revision, model)
        progress.update(min(start + WRITE_BATCH, len(todo)), f"{len(changed)} changed")
    if changed:
        with db.write():
            refresh_vocabulary(db)
    return len(todo), len(changed), missing


def _recognise_batch(
    db: DB, batch: list[dict[str, Any]], indexes: dict[int, TemplateIndex]
) -> tuple[list[tuple[dict[str, Any], Recognition | None, list[list[int]] | None]], list[int]]:
    """Each item matched against the templates newer than its revision: (item, a better
    recognition or None, caption boxes read again or None) per item whose files were found, and
    the ids of those whose files were not."""
    updates, absent = [], []
    for it in batch:
        after = it["recognised_revision"]
        if after not in indexes:
            indexes[after] = TemplateIndex.load(db, after)
        again = _recognise_again(db, it, indexes[after])
        if again is None:
            absent.append(it["item_id"])  # a removed template must still leave its fields
            continue
        found, boxes = again
        # A picture recognised by more inliers wins; anchors only name an item with no template.
        better = found is not None and (
            it["template_id"] is None or (not found.anchors and found.inliers > (it["template_score"] or 0))
        )
        updates.append((it, found if better else None, boxes))
    return updates, absent


def _recognise_again(
    db: DB, it: dict[str, Any], index: TemplateIndex
) -> tuple[Recognition | None, list[list[int]] | None] | None:
    """One item against one index: (what it was recognised as, caption boxes read again or None);
    None when its pixels are needed and none of its files is on this machine."""
    # Anchored (text-layout) templates need each OCR box's text, which is not stored: the
    # item is read again only when its caption holds every anchor's words somewhere.
    anchored = any(anchor_words_in(a, it["ocr_text"]) for _t, a in index.anchors)
    if not (len(index) or anchored):
        return None, None
    rgb = _item_pixels(db, it["item_id"])
    if rgb is None:
        return None
    boxes, words = None, None
    if it["ocr_boxes"] is None or anchored:  # items from schema 1 have no caption boxes yet
        from mambomeme.ocr import get_ocr

        _text, boxes, texts = get_ocr().read_lines(rgb)
        words = list(zip(boxes, texts, strict=True))
    try:
        found = index.recognise(rgb, boxes if boxes is not None else json.loads(it["ocr_boxes"]), words)
    except Exception:  # noqa: BLE001 - a picture recognition fails on (an OpenCV error) is recognised as nothing
        found = None
    return found, boxes


def _write_recognitions(
    db: DB,
    updates: list[tuple[dict[str, Any], Recognition | None, list[list[int]] | None]],
    absent: list[int],
    revision: int,
    model: Callable[[], tuple[Embedder, int]],
) -> list[int]:
    """One batch's recognitions, derived fields and vectors in one transaction; returns the items
    whose derived fields changed."""
    with db.write():
        for it, found, boxes in updates:
            tid = found.template_id if found else it["template_id"]
            score = found.inliers if found else it["template_score"]
            db.q(
                "set_recognition",
                {
                    "item_id": it["item_id"],
                    "template_id": tid,
                    "template_score": score,
                    "recognised_revision": revision,
                    "ocr_boxes": None if boxes is None else json.dumps(boxes),
                },
            )
            if found and not it["template"]:
                group = template_group_id(db, template_name(db, found.template_id))
                db.q("set_template_group", {"item_id": it["item_id"], "template_group": group})
        now = derive(db, [it["item_id"] for it, _f, _b in updates] + absent)
        if now:
            embedder, model_row = model()
            embed_items(db, now, embedder, model_row)
    return now


def item_files(db: DB, item_id: int) -> list[tuple]:
    """(root path, relative path) of every file of an item."""
    return db.q("item_files", {"item_id": item_id})


def _item_pixels(db: DB, item_id: int) -> Any:
    """The decoded pixels of an item's first readable file, or None when none is on this machine."""
    from mambomeme.images import MAX_FILE_BYTES, BadInput, read_image, read_regular

    for root_path, rel in item_files(db, item_id):
        try:
            data = read_regular(Path(root_path) / rel, MAX_FILE_BYTES)
            return read_image(data, rel).rgb
        except (OSError, BadInput):
            continue
        except Exception:  # noqa: BLE001 - a file that cannot be decoded is not there for recognition
            continue
    return None
