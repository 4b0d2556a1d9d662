#!/usr/bin/env python3
"""Deterministic meme renderer for the MamboMeme fixture and benchmark.

Reads a recipe JSONL (one JSON object per meme) and writes the meme images plus
their metadata sidecars (``<stem>.json`` beside the image, or one ``mambo.jsonl``
manifest per folder, or nothing at all, as each recipe line says).

Usage
-----
    python benchdata/render.py benchdata/fixture/recipe.jsonl --out benchdata/fixture/images
    python benchdata/render.py benchdata/fixture/recipe.jsonl --out benchdata/fixture/images \
        --bad benchdata/fixture/bad          # also (re)build the broken-files folder
    python benchdata/render.py RECIPE --out DIR --only cena-01,cena-02   # subset

What it needs installed (versions used to render the committed fixture)
----------------------------------------------------------------------
Debian 12 (bookworm) packages::

    apt-get install -y openclipart-svg librsvg2-bin fonts-dejavu-core \
        fonts-liberation fonts-bebas-neue fonts-league-spartan
    # openclipart-svg 1:0.18+dfsg-19   -> /usr/share/openclipart/svg (public domain drawings)
    # librsvg2-bin    2.54.7           -> rsvg-convert (SVG rasteriser)
    # fonts-dejavu-core 2.37-6, fonts-liberation 1:1.07.4-11,
    # fonts-bebas-neue 3.0-2 (OFL), fonts-league-spartan 2.210-1 (OFL)

Python (3.11) packages::

    pip install "pillow==13.0.0"     # built with FreeType, WebP, zlib, libjpeg

No other Python dependency; the standard library does the rest.  Impact is NOT
used (proprietary); captions are set in DejaVu Sans Bold, Liberation Sans Bold,
Bebas Neue or League Spartan.

Determinism
-----------
* Every recipe line pins its template drawing (path relative to --svg-root plus
  SHA-256) and its font file (absolute path plus SHA-256); the renderer refuses
  to run when a hash differs (``--no-verify`` overrides, for experiments only).
* The only randomness is ``random.Random(line["seed"])`` (drawing scale/offset
  jitter, background tint, watermark corner); there is no global RNG use.
* Output bytes are stable for fixed versions of rsvg-convert, Pillow, zlib,
  libjpeg and libwebp.  A different version may change bytes (not content).

Recipe line (keys; see benchdata/fixture/README.md for the full description)
---------------------------------------------------------------------------
    id          unique id, e.g. "cena-01"
    template    {key, name, aliases, svg, svg_sha256, dc_title, dc_creator,
                 licence, bg}                     (omitted for "copy" variants)
    layout      top_bottom | caption_band | two_panel | labelled | single_label
    captions    list of caption strings, in layout order (top, bottom / panels / labels)
    label_at    for "labelled": [[x, y], ...] label centres as fractions of the canvas
    font        {path, sha256}
    size        [width, height] of the canvas (default [500, 500])
    style       optional {max_size, stroke_ratio, word_gap} for top_bottom text
                (condensed fonts such as Bebas Neue need a wider word gap)
    frames      2 -> animated GIF whose first frame is the full meme
    variant     {of: id, op: resize|reencode|crop|watermark|copy, ...}
    out         {file: path relative to --out, format: PNG|JPEG|WEBP|GIF, quality}
    sidecar     json | manifest | none
    meta        the sidecar object (title, template, entities, tags, description,
                source_url, creator, licence, safety, rights, private)
    truth       ground truth that is never written to a sidecar (concepts, ...)
    seed        integer seed for this line
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import time
import zlib
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont, ImageOps

SVG_ROOT_DEFAULT = "/usr/share/openclipart/svg"
LAYOUTS = {}
SIDECAR_KEYS = (
    "title",
    "template",
    "entities",
    "tags",
    "description",
    "source_url",
    "creator",
    "licence",
    "safety",
    "rights",
    "private",
)


# --------------------------------------------------------------------------- helpers


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 16), b""):
            h.update(chunk)
    return h.hexdigest()


class Ctx:
    def __init__(self, svg_root: Path, verify: bool):
        self.svg_root = svg_root
        self.verify = verify
        self._raster: dict = {}
        self._verified: set = set()

    def check_hash(self, path: Path, expected: str | None) -> None:
        if not self.verify or not expected or path in self._verified:
            return
        got = file_sha256(path)
        if got != expected:
            raise SystemExit(f"hash mismatch for {path}: recipe {expected}, file {got}")
        self._verified.add(path)

    def font(self, spec: dict, size: int) -> ImageFont.FreeTypeFont:
        p = Path(spec["path"])
        self.check_hash(p, spec.get("sha256"))
        return ImageFont.truetype(str(p), size)

    def drawing(self, tpl: dict, box_w: int, box_h: int) -> Image.Image:
        """Rasterise the template SVG to fit inside box_w x box_h (RGBA, transparent bg)."""
        p = self.svg_root / tpl["svg"]
        self.check_hash(p, tpl.get("svg_sha256"))
        key = (str(p), box_w, box_h)
        if key not in self._raster:
            png = subprocess.run(
                [
                    "rsvg-convert",
                    "--width",
                    str(box_w),
                    "--height",
                    str(box_h),
                    "--keep-aspect-ratio",
                    "--format",
                    "png",
                    str(p),
                ],
                check=True,
                capture_output=True,
            ).stdout
            im = Image.open(io.BytesIO(png)).convert("RGBA")
            im.load()
            self._raster[key] = im
        return self._raster[key].copy()


def hex_rgb(s: str) -> tuple:
    s = s.lstrip("#")
    return tuple(int(s[i : i + 2], 16) for i in (0, 2, 4))


def tinted_bg(rng: random.Random, base: str) -> tuple:
    r, g, b = hex_rgb(base)
    d = rng.randint(-12, 12)
    return tuple(max(0, min(255, c + d)) for c in (r, g, b))


def wrap(draw, text: str, font, max_w: int, sep: str = " ") -> list[str]:
    lines, cur = [], ""
    for word in text.split():
        trial = f"{cur}{sep}{word}" if cur else word
        if draw.textlength(trial, font=font) <= max_w or not cur:
            cur = trial
        else:
            lines.append(cur)
            cur = word
    if cur:
        lines.append(cur)
    return lines


def fit_text(ctx, draw, text, font_spec, max_w, max_h, start, minimum, stroke_ratio=0.0, sep=" "):
    """Largest font size (start..minimum) whose wrapped text fits max_w x max_h."""
    size = start
    while True:
        font = ctx.font(font_spec, size)
        stroke = max(2, round(size * stroke_ratio)) if stroke_ratio else 0
        lines = wrap(draw, text, font, max_w - 2 * stroke, sep)
        asc, desc = font.getmetrics()
        line_h = asc + desc + 2 * stroke
        widest = max((draw.textlength(ln, font=font) for ln in lines), default=0) + 2 * stroke
        if (len(lines) * line_h <= max_h and widest <= max_w) or size <= minimum:
            return font, lines, line_h, stroke
        size -= 2


def draw_block(draw, lines, font, line_h, cx, top, fill, stroke=0, stroke_fill=None):
    y = top
    for ln in lines:
        draw.text((cx, y + stroke), ln, font=font, fill=fill, anchor="mt", stroke_width=stroke, stroke_fill=stroke_fill)
        y += line_h
    return y


def paste_drawing(ctx, canvas, tpl, box, rng, transform=None):
    """Paste the template drawing centred (with seeded jitter) inside box=(x0,y0,x1,y1)."""
    x0, y0, x1, y1 = box
    scale = rng.uniform(0.86, 0.96)
    w, h = int((x1 - x0) * scale), int((y1 - y0) * scale)
    im = ctx.drawing(tpl, w, h)
    if transform == "gray":
        a = im.getchannel("A")
        im = ImageOps.grayscale(im.convert("RGB")).convert("RGBA")
        im.putalpha(a)
    elif transform == "mirror":
        im = ImageOps.mirror(im)
    jx = rng.randint(-6, 6)
    jy = rng.randint(-6, 6)
    px = x0 + (x1 - x0 - im.width) // 2 + jx
    py = y0 + (y1 - y0 - im.height) // 2 + jy
    canvas.alpha_composite(im, (max(x0, px), max(y0, py)))


def layout(name):
    def deco(fn):
        LAYOUTS[name] = fn
        return fn

    return deco


# --------------------------------------------------------------------------- layouts
# Each layout: (ctx, line, rng) -> RGBA canvas.


@layout("top_bottom")
def top_bottom(ctx, line, rng):
    """Classic: drawing fills the canvas, white caps caption with black outline top and bottom."""
    W, H = line.get("size", [500, 500])
    c = Image.new("RGBA", (W, H), tinted_bg(rng, line["template"]["bg"]) + (255,))
    paste_drawing(ctx, c, line["template"], (0, 0, W, H), rng)
    d = ImageDraw.Draw(c)
    caps = [t.upper() for t in line["captions"]] + ["", ""]
    margin = 14
    for slot, text in (("top", caps[0]), ("bottom", caps[1])):
        if not text:
            continue
        st = line.get("style", {})
        font, lines, lh, stroke = fit_text(
            ctx,
            d,
            text,
            line["font"],
            W - 2 * margin,
            int(H * 0.30),
            st.get("max_size", 52),
            26,
            stroke_ratio=st.get("stroke_ratio", 0.08),
            sep=" " * st.get("word_gap", 1),
        )
        block_h = lh * len(lines)
        top = margin if slot == "top" else H - margin - block_h
        draw_block(d, lines, font, lh, W // 2, top, "white", stroke, "black")
    return c


@layout("caption_band")
def caption_band(ctx, line, rng):
    """Modern: white band on top with black sentence-case text, drawing below."""
    W, H_img = line.get("size", [500, 420])
    probe = ImageDraw.Draw(Image.new("RGB", (W, 10)))
    pad = 16
    font, lines, lh, _ = fit_text(ctx, probe, line["captions"][0], line["font"], W - 2 * pad, 200, 34, 24)
    band = lh * len(lines) + 2 * pad
    c = Image.new("RGBA", (W, band + H_img), "white")
    bg = Image.new("RGBA", (W, H_img), tinted_bg(rng, line["template"]["bg"]) + (255,))
    c.alpha_composite(bg, (0, band))
    paste_drawing(ctx, c, line["template"], (0, band, W, band + H_img), rng)
    d = ImageDraw.Draw(c)
    draw_block(d, lines, font, lh, W // 2, pad, "black")
    return c


@layout("single_label")
def single_label(ctx, line, rng):
    """Drawing with one black-on-white label band underneath."""
    W, H_img = line.get("size", [500, 420])
    probe = ImageDraw.Draw(Image.new("RGB", (W, 10)))
    pad = 14
    font, lines, lh, _ = fit_text(ctx, probe, line["captions"][0], line["font"], W - 2 * pad, 150, 38, 24)
    band = lh * len(lines) + 2 * pad
    c = Image.new("RGBA", (W, H_img + band), "white")
    bg = Image.new("RGBA", (W, H_img), tinted_bg(rng, line["template"]["bg"]) + (255,))
    c.alpha_composite(bg, (0, 0))
    paste_drawing(ctx, c, line["template"], (0, 0, W, H_img), rng)
    d = ImageDraw.Draw(c)
    d.line([(0, H_img), (W, H_img)], fill="black", width=3)
    draw_block(d, lines, font, lh, W // 2, H_img + pad, "black")
    return c


@layout("band_label")
def band_label(ctx, line, rng):
    """Modern two-caption: white band with black text on top, drawing, black-on-white label below."""
    W, H_img = line.get("size", [500, 400])
    probe = ImageDraw.Draw(Image.new("RGB", (W, 10)))
    pad = 14
    f1, l1, lh1, _ = fit_text(ctx, probe, line["captions"][0], line["font"], W - 2 * pad, 160, 32, 22)
    f2, l2, lh2, _ = fit_text(ctx, probe, line["captions"][1], line["font"], W - 2 * pad, 140, 34, 22)
    top = lh1 * len(l1) + 2 * pad
    bottom = lh2 * len(l2) + 2 * pad
    c = Image.new("RGBA", (W, top + H_img + bottom), "white")
    bg = Image.new("RGBA", (W, H_img), tinted_bg(rng, line["template"]["bg"]) + (255,))
    c.alpha_composite(bg, (0, top))
    paste_drawing(ctx, c, line["template"], (0, top, W, top + H_img), rng)
    d = ImageDraw.Draw(c)
    d.line([(0, top + H_img), (W, top + H_img)], fill="black", width=3)
    draw_block(d, l1, f1, lh1, W // 2, pad, "black")
    draw_block(d, l2, f2, lh2, W // 2, top + H_img + pad, "black")
    return c


@layout("two_panel")
def two_panel(ctx, line, rng):
    """Two stacked rows: drawing (grey, then colour) on the left, black label on white right."""
    W, row_h = line.get("size", [520, 240])
    c = Image.new("RGBA", (W, 2 * row_h), "white")
    d = ImageDraw.Draw(c)
    half = W // 2
    bgc = tinted_bg(rng, line["template"]["bg"])
    for i, text in enumerate(line["captions"][:2]):
        y0 = i * row_h
        d.rectangle([0, y0, half, y0 + row_h], fill=bgc + (255,))
        paste_drawing(ctx, c, line["template"], (0, y0, half, y0 + row_h), rng, transform="gray" if i == 0 else None)
        font, lines, lh, _ = fit_text(ctx, d, text, line["font"], half - 24, row_h - 24, 34, 22)
        block_h = lh * len(lines)
        draw_block(d, lines, font, lh, half + half // 2, y0 + (row_h - block_h) // 2, "black")
    d.line([(0, row_h), (W, row_h)], fill="black", width=3)
    d.line([(half, 0), (half, 2 * row_h)], fill="black", width=3)
    return c


@layout("labelled")
def labelled(ctx, line, rng):
    """Drawing with 2-3 black-on-white labels placed on it ("labelled objects" format)."""
    W, H = line.get("size", [500, 500])
    c = Image.new("RGBA", (W, H), tinted_bg(rng, line["template"]["bg"]) + (255,))
    paste_drawing(ctx, c, line["template"], (0, 0, W, H), rng)
    d = ImageDraw.Draw(c)
    for text, (fx, fy) in zip(line["captions"], line["label_at"], strict=True):
        font, lines, lh, _ = fit_text(ctx, d, text, line["font"], int(W * 0.46), 120, 32, 22)
        bw = int(max(d.textlength(ln, font=font) for ln in lines)) + 20
        bh = lh * len(lines) + 14
        cx, cy = int(fx * W), int(fy * H)
        x0 = max(4, min(W - bw - 4, cx - bw // 2))
        y0 = max(4, min(H - bh - 4, cy - bh // 2))
        d.rectangle([x0, y0, x0 + bw, y0 + bh], fill="white", outline="black", width=3)
        draw_block(d, lines, font, lh, x0 + bw // 2, y0 + 7, "black")
    return c


# --------------------------------------------------------------------------- output


def encode(img: Image.Image, out: dict, extra_frames=None) -> bytes:
    fmt = out.get("format", "PNG").upper()
    buf = io.BytesIO()
    if fmt == "PNG":
        img.convert("RGB").save(buf, "PNG", optimize=True)
    elif fmt == "JPEG":
        img.convert("RGB").save(buf, "JPEG", quality=out.get("quality", 85))
    elif fmt == "WEBP":
        img.convert("RGB").save(buf, "WEBP", quality=out.get("quality", 80), method=4)
    elif fmt == "GIF":
        frames = [img] + list(extra_frames or [])
        pal = [
            f.convert("RGB").quantize(colors=255, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
            for f in frames
        ]
        if len(pal) > 1:
            pal[0].save(buf, "GIF", save_all=True, append_images=pal[1:], duration=out.get("duration_ms", 700), loop=0)
        else:
            pal[0].save(buf, "GIF")
    else:
        raise SystemExit(f"unknown format {fmt}")
    return buf.getvalue()


def second_frame(img: Image.Image, rng: random.Random) -> Image.Image:
    """Frame 2 of an animated meme: the same picture slightly shifted and darkened."""
    f = img.convert("RGB").point(lambda v: int(v * 0.85))
    dx = rng.randint(4, 10)
    return f.transform(f.size, Image.Transform.AFFINE, (1, 0, -dx, 0, 1, 0), fillcolor=(0, 0, 0))


def apply_variant(ctx, line, base_img: Image.Image, base_bytes: bytes, rng) -> bytes:
    v = line["variant"]
    op = v["op"]
    if op == "copy":
        return base_bytes
    img = base_img.convert("RGB")
    if op == "resize":
        s = v.get("scale", 0.7)
        img = img.resize((round(img.width * s), round(img.height * s)), Image.Resampling.LANCZOS)
    elif op == "crop":
        f = v.get("frac", 0.08)
        dx, dy = round(img.width * f), round(img.height * f)
        img = img.crop((dx, dy, img.width - dx, img.height - dy))
    elif op == "watermark":
        img = img.convert("RGBA")
        layer = Image.new("RGBA", img.size, (0, 0, 0, 0))
        d = ImageDraw.Draw(layer)
        font = ctx.font(line["font"], v.get("size", 16))
        tw = int(d.textlength(v["text"], font=font))
        corner = v.get("corner") or rng.choice(["tl", "tr", "bl", "br"])
        x = 8 if corner[1] == "l" else img.width - tw - 8
        y = 8 if corner[0] == "t" else img.height - v.get("size", 16) - 10
        d.text((x, y), v["text"], font=font, fill=(255, 255, 255, 170), stroke_width=1, stroke_fill=(0, 0, 0, 170))
        img = Image.alpha_composite(img, layer)
    elif op == "reencode":
        pass
    else:
        raise SystemExit(f"{line['id']}: unknown variant op {op}")
    return encode(img, line["out"])


def render_line(ctx, line, done):
    rng = random.Random(line.get("seed", 0))
    if "variant" in line:
        base = done[line["variant"]["of"]]
        data = apply_variant(ctx, line, base[0], base[1], rng)
        img = Image.open(io.BytesIO(data))
        img.load()
        return img, data
    fn = LAYOUTS[line["layout"]]
    img = fn(ctx, line, rng)
    extra = [second_frame(img, rng)] if line.get("frames", 1) == 2 else None
    data = encode(img, line["out"], extra)
    return img, data


def sidecar_obj(line) -> dict:
    meta = line.get("meta", {})
    bad = set(meta) - set(SIDECAR_KEYS)
    if bad:
        raise SystemExit(f"{line['id']}: unknown sidecar keys {sorted(bad)}")
    return {k: meta[k] for k in SIDECAR_KEYS if k in meta}


def load_recipe(path: Path) -> list[dict]:
    lines = []
    for n, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        raw = raw.strip()
        if not raw or raw.startswith("//"):
            continue
        try:
            lines.append(json.loads(raw))
        except json.JSONDecodeError as e:
            raise SystemExit(f"{path}:{n}: {e}") from e
    ids = [ln["id"] for ln in lines]
    dup = {i for i in ids if ids.count(i) > 1}
    if dup:
        raise SystemExit(f"duplicate ids: {sorted(dup)}")
    return lines


def order_lines(lines):
    """Base memes first, then variants once their source is available."""
    by_id = {ln["id"]: ln for ln in lines}
    out, seen = [], set()

    def visit(ln, stack=()):
        if ln["id"] in seen:
            return
        if ln["id"] in stack:
            raise SystemExit(f"variant cycle at {ln['id']}")
        if "variant" in ln:
            visit(by_id[ln["variant"]["of"]], stack + (ln["id"],))
        seen.add(ln["id"])
        out.append(ln)

    for ln in lines:
        visit(ln)
    return out


_WORKER_CTX: Ctx | None = None


def _worker_init(svg_root: Path, verify: bool) -> None:
    global _WORKER_CTX
    _WORKER_CTX = Ctx(svg_root, verify)


def _render_base(job):
    """A worker renders one base meme; the unencoded image comes back only when a variant needs it."""
    line, keep = job
    img, data = render_line(_WORKER_CTX, line, {})
    return line["id"], (img if keep else None), data


def render_bases(lines, ctx: Ctx, jobs: int) -> dict:
    """Base memes (no variant) rendered by `jobs` processes. Every line draws from its own seed and
    the drawing cache is deterministic, so the bytes do not depend on the order or the worker
    (the manifest check proves it)."""
    import multiprocessing

    needed = {ln["variant"]["of"] for ln in lines if "variant" in ln}
    work = [(ln, ln["id"] in needed) for ln in lines if "variant" not in ln]
    with multiprocessing.get_context("fork").Pool(jobs, _worker_init, (ctx.svg_root, ctx.verify)) as pool:
        return {i: (img, data) for i, img, data in pool.imap(_render_base, work, chunksize=8)}


def render_all(recipe: Path, out_dir: Path, ctx: Ctx, only=None, written_out=None, jobs: int = 1) -> dict:
    lines = order_lines(load_recipe(recipe))
    done, manifests, written = {}, {}, []
    rendered = render_bases(lines, ctx, jobs) if jobs > 1 else {}
    for line in lines:
        img, data = rendered.pop(line["id"]) if line["id"] in rendered else render_line(ctx, line, done)
        done[line["id"]] = (img, data)
        dest = out_dir / line["out"]["file"]
        mode = line.get("sidecar", "json")
        if mode == "manifest":  # manifests always list every item of their folder
            obj = {"file": dest.name, **sidecar_obj(line)}
            manifests.setdefault(dest.parent, []).append(obj)
        if only and line["id"] not in only:
            continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(data)
        written.append(dest)
        if mode == "json":
            dest.with_suffix(".json").write_text(
                json.dumps(sidecar_obj(line), ensure_ascii=False, indent=2) + "\n", encoding="utf-8"
            )
            if written_out is not None:
                written_out.append(dest.with_suffix(".json"))
        elif mode not in ("manifest", "none"):
            raise SystemExit(f"{line['id']}: unknown sidecar mode {mode}")
    for folder, objs in manifests.items():
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "mambo.jsonl").write_text(
            "".join(json.dumps(o, ensure_ascii=False) + "\n" for o in objs), encoding="utf-8"
        )
        if written_out is not None:
            written_out.append(folder / "mambo.jsonl")
    if written_out is not None:
        written_out.extend(written)
    total = sum(p.stat().st_size for p in written)
    print(f"rendered {len(written)} images ({total / 1e6:.2f} MB) into {out_dir}")
    return done


# --------------------------------------------------------------------------- bad/ folder

FINE_RECIPE = {
    "id": "bad-fine",
    "seed": 7,
    "layout": "top_bottom",
    "template": {
        "svg": "food/fruit/bananas_nicu_buculei_01.svg",
        "bg": "#8ecae6",
        "svg_sha256": "f0cde7c1f5743917effc118f058684c58dc2d3b60a151b9d1343957a15fc1e59",
    },
    "captions": ["one good file", "in a folder of bad ones"],
    "font": {
        "path": "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf",
        "sha256": "0d977336a6d5fba34eab8e3199eb218327161b5143749f802982c2bc34df0c96",
    },
    "size": [360, 360],
    "out": {"file": "fine.png", "format": "PNG"},
}
FINE_SIDECAR = {
    "title": "Lone Banana",
    "template": "Lone Banana",
    "entities": [],
    "tags": ["test", "fruit"],
    "description": "a cartoon bunch of yellow bananas on a light blue background",
    "creator": "Nicu Buculei",
    "licence": "public domain (openclipart)",
    "safety": "safe",
    "rights": "cleared",
    "private": False,
}


def png_chunk(kind: bytes, payload: bytes) -> bytes:
    return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", zlib.crc32(kind + payload) & 0xFFFFFFFF)


def make_bomb(width=60000, height=60000) -> bytes:
    """1-bit greyscale PNG header declaring width x height pixels (3.6 gigapixels) with a
    valid but short zlib IDAT (the first 64 rows): tiny on disk, enormous if decoded."""
    ihdr = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    row = b"\x00" + b"\x00" * ((width + 7) // 8)
    idat = zlib.compress(row * 64, 9)
    return b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", ihdr) + png_chunk(b"IDAT", idat) + png_chunk(b"IEND", b"")


def build_bad(bad_dir: Path, ctx: Ctx) -> None:
    bad_dir.mkdir(parents=True, exist_ok=True)
    rng = random.Random(1234)
    img, fine_png = render_line(ctx, FINE_RECIPE, {})
    (bad_dir / "fine.png").write_bytes(fine_png)
    (bad_dir / "fine.json").write_text(json.dumps(FINE_SIDECAR, indent=2) + "\n", encoding="utf-8")
    (bad_dir / "truncated.png").write_bytes(fine_png[: len(fine_png) // 2])
    jpeg = io.BytesIO()
    img.convert("RGB").save(jpeg, "JPEG", quality=85)
    header = jpeg.getvalue()[:20]  # SOI + APP0/JFIF segment start
    (bad_dir / "corrupt.jpg").write_bytes(header + rng.randbytes(4000))
    (bad_dir / "empty.png").write_bytes(b"")
    (bad_dir / "notes.png").write_text(
        "shopping list: oat milk, batteries, birthday card for Sam.\n"
        "This is a plain text file that happens to be named .png.\n",
        encoding="utf-8",
    )
    (bad_dir / "bomb.png").write_bytes(make_bomb())
    (bad_dir / "broken-sidecar.png").write_bytes(encode(img.convert("RGB").rotate(180), {"format": "PNG"}))
    (bad_dir / "broken-sidecar.json").write_text(
        '{"title": "Upside-down bananas", "tags": ["fruit", "test"], "safety": "sa', encoding="utf-8"
    )
    print(f"wrote bad files into {bad_dir}")


# --------------------------------------------------------------------------- manifest / pins


def tool_versions() -> dict:
    import PIL

    out = subprocess.run(["rsvg-convert", "--version"], check=True, capture_output=True, text=True).stdout
    return {"rsvg-convert": out.split()[-1], "pillow": PIL.__version__}


def check_pins(pins_path: Path) -> list[str]:
    """Compare the pinned tool versions, fonts and drawings with this machine; return the differences."""
    pins = json.loads(pins_path.read_text(encoding="utf-8"))
    problems = []
    for tool, have in tool_versions().items():
        want = pins.get("tools", {}).get(tool)
        if want and want != have:
            problems.append(f"{tool}: pinned {want}, installed {have}")
    for spec in pins.get("fonts", []):
        p = Path(spec["path"])
        if not p.exists() or file_sha256(p) != spec["sha256"]:
            problems.append(f"font {p}: missing or SHA-256 differs")
    root = Path(pins.get("svg_root", SVG_ROOT_DEFAULT))
    for spec in pins.get("svgs", []):
        p = root / spec["svg"]
        if not p.exists() or file_sha256(p) != spec["sha256"]:
            problems.append(f"drawing {p}: missing or SHA-256 differs")
    return problems


def manifest_lines(out_dir: Path, paths) -> list[str]:
    rels = sorted({str(Path(p).relative_to(out_dir)) for p in paths})
    return [f"{file_sha256(out_dir / r)}  {r}" for r in rels]


def read_manifest(path: Path) -> dict:
    entries = {}
    for raw in path.read_text(encoding="utf-8").splitlines():
        if raw.strip():
            digest, rel = raw.split("  ", 1)
            entries[rel] = digest
    return entries


def compare_manifest(expected: dict, out_dir: Path, extra_ok=False) -> list[str]:
    problems = []
    for rel, digest in sorted(expected.items()):
        p = out_dir / rel
        if not p.is_file():
            problems.append(f"missing   {rel}")
        elif file_sha256(p) != digest:
            problems.append(f"MISMATCH  {rel}")
    if not extra_ok:
        for p in sorted(out_dir.rglob("*")):
            if p.is_file() and str(p.relative_to(out_dir)) not in expected:
                problems.append(f"unlisted  {p.relative_to(out_dir)}")
    return problems


def fail_integrity(problems: list[str], what: str) -> None:
    print(f"ARTIFACT INTEGRITY FAILURE: {len(problems)} {what}", file=sys.stderr)
    for p in problems[:50]:
        print("  " + p, file=sys.stderr)
    if len(problems) > 50:
        print(f"  ... and {len(problems) - 50} more", file=sys.stderr)
    raise SystemExit(1)


# --------------------------------------------------------------------------- main


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("recipe", type=Path)
    ap.add_argument("--out", type=Path, required=True, help="output folder for images + sidecars")
    ap.add_argument("--svg-root", type=Path, default=Path(SVG_ROOT_DEFAULT))
    ap.add_argument("--bad", type=Path, help="also build the broken-files folder here")
    ap.add_argument("--only", help="comma-separated ids to write (sources are still rendered)")
    ap.add_argument("--no-verify", action="store_true", help="skip SVG/font SHA-256 checks")
    ap.add_argument("--manifest", type=Path, help="SHA-256 manifest of every rendered file (sha256sum format)")
    ap.add_argument(
        "--verify",
        action="store_true",
        help="with --manifest: compare the rendered files with the manifest and fail loudly on any "
        "difference (default: write the manifest)",
    )
    ap.add_argument(
        "--check-only",
        action="store_true",
        help="with --manifest: do not render, only check the files already in --out",
    )
    ap.add_argument("--pins", type=Path, help="pins JSON (tool versions, font/SVG SHA-256) to check first")
    ap.add_argument(
        "--jobs",
        type=int,
        default=os.cpu_count() or 1,
        help="render processes (default: one per core; the bytes do not depend on it)",
    )
    args = ap.parse_args(argv)
    if (args.verify or args.check_only) and not args.manifest:
        raise SystemExit("--verify/--check-only need --manifest")
    if args.check_only:
        problems = compare_manifest(read_manifest(args.manifest), args.out)
        if problems:
            fail_integrity(problems, f"difference(s) between {args.out} and {args.manifest}")
        print(f"OK: {len(read_manifest(args.manifest))} files in {args.out} match {args.manifest}")
        return 0
    if not shutil.which("rsvg-convert"):
        raise SystemExit("rsvg-convert not found: apt-get install -y librsvg2-bin")
    if args.pins:
        problems = check_pins(args.pins)
        if problems:
            fail_integrity(problems, f"difference(s) from the pins in {args.pins}")
    ctx = Ctx(args.svg_root, verify=not args.no_verify)
    only = set(args.only.split(",")) if args.only else None
    t0 = time.perf_counter()
    written: list = []
    render_all(args.recipe, args.out, ctx, only, written_out=written, jobs=max(1, args.jobs))
    print(f"render time {time.perf_counter() - t0:.1f} s")
    if args.bad:
        build_bad(args.bad, ctx)
    if args.manifest:
        lines = manifest_lines(args.out, written)
        if args.verify:
            expected = read_manifest(args.manifest)
            got = dict(ln.split("  ", 1)[::-1] for ln in lines)
            problems = [f"MISMATCH  {r}" for r in sorted(expected) if r in got and got[r] != expected[r]]
            problems += [f"missing   {r}" for r in sorted(expected) if r not in got]
            problems += [f"unlisted  {r}" for r in sorted(got) if r not in expected]
            if problems:
                fail_integrity(problems, f"difference(s) between the rendered files and {args.manifest}")
            print(f"OK: all {len(expected)} rendered files match {args.manifest}")
        else:
            args.manifest.write_text("".join(ln + "\n" for ln in lines), encoding="utf-8")
            print(f"wrote {args.manifest} ({len(lines)} files)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
