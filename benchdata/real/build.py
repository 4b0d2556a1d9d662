#!/usr/bin/env python3
"""Build the real-style development folder from the ImgFlip575K snapshot (schesa/ImgFlip575K_Dataset on GitHub).

    python benchdata/real/build.py SNAPSHOT OUT          # build OUT, verify it against manifest.sha256
    python benchdata/real/build.py --check OUT          # verify an already built OUT (no snapshot needed)
    python benchdata/real/build.py SNAPSHOT OUT --record    # a new folder version: rewrite pins, manifest, truth

SNAPSHOT is the snapshot's bare git directory or a checkout (or $MAMBO_IMGFLIP). Development captions
(benchdata/real/snapshot.py has the split rule) are drawn on the snapshot's template pictures in the
site's look, then saved the way phones and browsers save them: downloads, chat-app copies, phone
screenshots, exact copies, near copies and a few stacked two-panel pictures. Only ids, file names and
layouts are committed (truth.jsonl); caption text stays in the snapshot and is read at run time.
"""

from __future__ import annotations

import argparse
import io
import json
import random
import shutil
import sys
import time
from multiprocessing import Pool
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw, ImageFont

sys.path.insert(0, str(Path(__file__).resolve().parent))
from snapshot import (  # noqa: E402  (run as a script, beside its helper)
    HERE,
    PINS,
    Snapshot,
    SnapshotError,
    check_pins,
    clean_boxes,
    dev_entries,
    load_pins,
    open_snapshot,
    sha256_hex,
    template_key,
)

SEED = 575
PER_TEMPLATE = 18  # 88 templates x 18 = 1,584 memes: balanced, and ingested in about 6 minutes
EXACT_COPIES = 0.05  # shares of the memes that get a byte copy / a near copy (as in v1: 2-5 %)
NEAR_COPIES = 0.08
STACKS = 24
MAX_WIDTH = 600  # the site serves pictures about 500-600 px wide
MIN_WIDTH = 360
MANIFEST = HERE / "manifest.sha256"
TRUTH = HERE / "truth.jsonl"
LAYOUTS = HERE / "layouts.json"

FONT_PACKAGE = "@fontsource/anton@5.3.0"
FONT_FILE = "@fontsource/anton/files/anton-latin-400-normal.woff"
FONT_ROOTS = ("/usr/local/lib/node_modules", "/usr/lib/node_modules", str(HERE.parents[1] / "node_modules"))
SMALL_FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf"  # fonts-dejavu-core


def find_font() -> Path:
    for root in FONT_ROOTS:
        p = Path(root) / FONT_FILE
        if p.is_file():
            return p
    raise SnapshotError(f"caption font missing: run `npm install -g {FONT_PACKAGE}` (Anton, SIL OFL 1.1)")


# ─────────────────────────────────────────────────────────────────── choosing the memes


def pinned_files(snap: Snapshot, pins: dict[str, Any]) -> list[str]:
    """The snapshot files the folder is made from: the pinned list, or (recording) every template and
    caption file this copy of the snapshot holds."""
    if pins.get("snapshot", {}).get("files"):
        return sorted(pins["snapshot"]["files"])
    rels = [*snap.list("dataset/templates"), *snap.list("dataset/templates/img"), *snap.list("dataset/memes")]
    return sorted(r for r in rels if r.endswith((".json", ".jpg", ".png")) and snap.read(r) is not None)


def choose(blobs: dict[str, bytes], layouts: dict[str, Any], seed: int) -> list[dict[str, Any]]:
    """Up to PER_TEMPLATE usable dev captions per template, in a seeded order of their post ids."""
    pictures = {template_key(r): r for r in blobs if r.startswith("dataset/templates/img/")}
    chosen = []
    for rel in sorted(r for r in blobs if r.startswith("dataset/memes/")):
        key = template_key(rel)
        if key not in pictures:
            continue
        table = layouts.get(key, layouts["_default"])
        usable: dict[str, tuple[str, list[str]]] = {}
        seen_text = set()
        for pid, boxes in dev_entries(blobs[rel]):
            clean = clean_boxes(boxes)
            if clean is None or str(len(clean)) not in table:
                continue
            text = "\n".join(clean).upper()
            if text in seen_text or pid in usable:
                continue
            seen_text.add(text)
            usable[pid] = (pid, clean)
        order = sorted(usable, key=lambda p: sha256_hex(f"{seed}:{key}:{p}".encode()))
        for pid in order[:PER_TEMPLATE]:
            chosen.append(
                {
                    "post": pid,
                    "template": key,
                    "picture": pictures[key],
                    "boxes": usable[pid][1],
                    "layout": "table" if key in layouts else "default",
                }
            )
    return chosen


# ─────────────────────────────────────────────────────────────────── how people's folders hold them

FOLDERS = {  # presentation -> (folder, weight)
    "download": ("Downloads", 34),
    "whatsapp": ("WhatsApp Images", 16),
    "messenger": ("Messenger", 10),
    "screenshot": ("Screenshots", 18),
    "camera": ("Camera", 10),
    "saved": ("memes", 12),
}


class Namer:
    """File names as browsers, chat apps and phones give them, unique within the folder."""

    def __init__(self) -> None:
        self.used: set[str] = set()
        self.counters: dict[str, int] = {}

    def _next(self, key: str) -> int:
        self.counters[key] = self.counters.get(key, 0) + 1
        return self.counters[key]

    def claim(self, path: str) -> str:
        stem, dot, ext = path.rpartition(".")
        n, cand = 1, path
        while cand.lower() in self.used:
            cand = f"{stem} ({n}){dot}{ext}"
            n += 1
        self.used.add(cand.lower())
        return cand

    def name(self, kind: str, rng: random.Random, ext: str) -> str:
        folder = FOLDERS[kind][0]
        day = f"2024{rng.randint(1, 12):02d}{rng.randint(1, 28):02d}"
        clock = f"{rng.randint(0, 23):02d}{rng.randint(0, 59):02d}{rng.randint(0, 59):02d}"
        if kind == "download":
            n = self._next("download")
            pick = rng.random()
            if pick < 0.45:
                base = "download" if n == 1 else f"download ({n - 1})"
            elif pick < 0.7:
                base = f"images ({self._next('images')})"
            else:
                base = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(6))
        elif kind == "whatsapp":
            base = f"IMG-{day}-WA{self._next('wa' + day):04d}"
        elif kind == "messenger":
            base = "received_" + "".join(rng.choice("0123456789") for _ in range(16))
        elif kind == "screenshot":
            base = f"Screenshot_{day}-{clock}"
        elif kind == "camera":
            base = f"IMG_{day}_{clock}"
        else:
            base = (
                rng.choice(["image", "Untitled", "meme"]) + f" ({self._next('saved')})"
                if rng.random() < 0.6
                else "FB_IMG_1" + "".join(rng.choice("0123456789") for _ in range(12))
            )
        return self.claim(f"{folder}/{base}.{ext}")


def save_plan(kind: str, rng: random.Random) -> dict[str, Any]:
    if kind == "screenshot":
        return {
            "as": kind,
            "format": "PNG",
            "dark": rng.random() < 0.5,
            "clock": rng.randint(0, 1439),
            "battery": rng.randint(5, 100),
        }
    if kind == "messenger" and rng.random() < 0.4:
        return {"as": kind, "format": "PNG"}
    quality = {
        "download": (72, 95),
        "whatsapp": (55, 72),
        "messenger": (70, 85),
        "camera": (85, 95),
        "saved": (75, 92),
    }[kind]
    return {
        "as": kind,
        "format": "JPEG",
        "quality": rng.randint(*quality),
        "scale": round(rng.uniform(0.7, 0.9), 3) if kind == "whatsapp" else 1.0,
    }


def plan(chosen: list[dict[str, Any]], seed: int) -> list[dict[str, Any]]:
    """Every output file: the memes, then their exact copies, near copies and stacks."""
    rng = random.Random(seed)
    namer = Namer()
    kinds = list(FOLDERS)
    weights = [FOLDERS[k][1] for k in kinds]
    lines: list[dict[str, Any]] = []
    for m in chosen:
        r = random.Random(f"{seed}:{m['post']}")
        kind = r.choices(kinds, weights)[0]
        save = save_plan(kind, r)
        ext = {"PNG": "png", "JPEG": "jpg"}[save["format"]]
        if kind == "messenger" and ext == "jpg":
            ext = "jpeg"
        lines.append(
            {
                "file": namer.name(kind, r, ext),
                "kind": "meme",
                "post": m["post"],
                "template": m["template"],
                "boxes": len(m["boxes"]),
                "layout": m["layout"],
                "watermark": r.random() < 0.8,
                "save": save,
                "seed": r.randrange(1 << 30),
            }
        )
    memes = list(lines)
    for src in rng.sample(memes, round(EXACT_COPIES * len(memes))):
        stem, _, ext = src["file"].rpartition(".")
        target = namer.claim(f"{stem} (1).{ext}") if rng.random() < 0.6 else namer.name("download", rng, ext)
        lines.append(
            {
                "file": target,
                "kind": "copy",
                "of": src["file"],
                "post": src["post"],
                "template": src["template"],
                "op": "bytes",
            }
        )
    ops = ["resize", "lowq", "crop", "rewatermark", "screenshot"]
    for src in rng.sample(memes, round(NEAR_COPIES * len(memes))):
        op = rng.choice(ops if src["save"]["as"] != "screenshot" else ops[:4])
        r = random.Random(f"{seed}:near:{src['file']}")
        if op == "screenshot":
            target = namer.name("screenshot", r, "png")
        else:
            stem = src["file"].rpartition(".")[0]
            target = namer.claim(f"{stem}-{ {'resize': 'small', 'lowq': 'lowq', 'crop': 'crop'}.get(op, 'wm') }.jpg")
        lines.append(
            {
                "file": target,
                "kind": "near",
                "of": src["file"],
                "post": src["post"],
                "template": src["template"],
                "op": op,
                "seed": r.randrange(1 << 30),
            }
        )
    for _ in range(STACKS):
        a, b = rng.sample(memes, 2)
        r = random.Random(f"{seed}:stack:{a['post']}:{b['post']}")
        lines.append(
            {
                "file": namer.name("saved", r, "jpg"),
                "kind": "stack",
                "parts": [a["file"], b["file"]],
                "posts": [a["post"], b["post"]],
                "templates": [a["template"], b["template"]],
                "seed": r.randrange(1 << 30),
            }
        )
    return lines


# ─────────────────────────────────────────────────────────────────── drawing

_W: dict[str, Any] = {}  # per worker: pictures, layouts, captions, fonts


def _init(
    blobs: dict[str, bytes], layouts: dict[str, Any], captions: dict[str, list[str]], font: str, out: str
) -> None:
    _W.update(
        blobs=blobs,
        layouts=layouts,
        captions=captions,
        font=font,
        out=Path(out),
        pics={},
        fonts={},
        pictures={template_key(r): r for r in blobs},
    )


def _font(size: int, small: bool = False) -> ImageFont.FreeTypeFont:
    key = (size, small)
    if key not in _W["fonts"]:
        _W["fonts"][key] = ImageFont.truetype(SMALL_FONT if small else _W["font"], size)
    return _W["fonts"][key]


def picture(rel: str) -> Image.Image:
    if rel not in _W["pics"]:
        im = Image.open(io.BytesIO(_W["blobs"][rel])).convert("RGB")
        w = max(MIN_WIDTH, min(MAX_WIDTH, im.width))
        _W["pics"][rel] = im.resize((w, round(im.height * w / im.width)), Image.LANCZOS)
    return _W["pics"][rel].copy()


def wrap(draw: ImageDraw.ImageDraw, text: str, font: ImageFont.FreeTypeFont, width: int) -> list[str] | None:
    lines: list[str] = []
    for word in text.split():
        if draw.textlength(word, font=font) > width:
            return None
        if lines and draw.textlength(lines[-1] + " " + word, font=font) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines


def draw_box(im: Image.Image, text: str, region: list[Any]) -> None:
    """Impact-style caption: upper case, white with a black outline, the largest size that fits."""
    text = text.upper().strip()
    if not text:
        return
    x0, y0, x1, y1 = (round(region[i] * (im.width if i % 2 == 0 else im.height)) for i in range(4))
    draw = ImageDraw.Draw(im)
    size = max(12, min(y1 - y0, im.width // 8))
    while True:
        font = _font(size)
        lines = wrap(draw, text, font, x1 - x0)
        line_h = round(size * 1.08)
        if lines is not None and (line_h * len(lines) <= y1 - y0 or size <= 12):
            break
        size -= 2 if size > 24 else 1
        if size < 12:
            font, lines, line_h = _font(12), [text], 13
            break
    block = line_h * len(lines)
    top = {"t": y0, "b": y1 - block}.get(region[4], y0 + (y1 - y0 - block) // 2)
    stroke = max(1, size // 14)
    for i, line in enumerate(lines):
        w = draw.textlength(line, font=font)
        draw.text(
            ((x0 + x1 - w) / 2, top + i * line_h),
            line,
            font=font,
            fill="white",
            stroke_width=stroke,
            stroke_fill="black",
        )


def corner_text(im: Image.Image, text: str, corner: str, size: int) -> None:
    """A small watermark band, as sharing sites stamp their pictures."""
    draw = ImageDraw.Draw(im, "RGBA")
    font = _font(size, small=True)
    w = round(draw.textlength(text, font=font)) + 8
    h = size + 6
    x = 0 if corner.endswith("l") else im.width - w
    y = 0 if corner.startswith("t") else im.height - h
    draw.rectangle([x, y, x + w, y + h], fill=(0, 0, 0, 150))
    draw.text((x + 4, y + 2), text, font=font, fill=(255, 255, 255, 230))


def render_meme(line: dict[str, Any]) -> Image.Image:
    key = line["template"]
    im = picture(_W["pictures"][key])
    boxes = _W["captions"][line["post"]]
    table = _W["layouts"].get(key, _W["layouts"]["_default"])
    for text, region in zip(boxes, table[str(len(boxes))], strict=True):
        draw_box(im, text, region)
    if line.get("watermark"):
        corner_text(im, "imgflip.com", "bl", 11)
    return im


def phone_screenshot(meme: Image.Image, dark: bool, clock: int, battery: int) -> Image.Image:
    """A 720 x 1520 phone screenshot of the meme in an app: status bar, app bar, padding, nav bar."""
    W, H = 720, 1520
    bg, fg = ((0, 0, 0), (235, 235, 235)) if dark else ((250, 250, 250), (20, 20, 20))
    shot = Image.new("RGB", (W, H), bg)
    d = ImageDraw.Draw(shot)
    f = _font(22, small=True)
    d.text((24, 10), f"{clock // 60 % 12 or 12}:{clock % 60:02d}", font=f, fill=fg)
    d.text((W - 90, 10), f"{battery}%", font=f, fill=fg)
    d.rectangle([W - 128, 14, W - 100, 32], outline=fg, width=2)
    d.rectangle([W - 126, 16, W - 126 + round(24 * battery / 100), 30], fill=fg)
    for i in range(4):
        d.rectangle([W - 180 + i * 9, 30 - i * 5, W - 174 + i * 9, 32], fill=fg)
    d.line([(24, 88), (40, 72), (24, 88), (40, 104)], fill=fg, width=4)
    for i in range(3):
        d.ellipse([W - 40, 74 + i * 12, W - 32, 82 + i * 12], fill=fg)
    scaled = meme.resize((W, round(meme.height * W / meme.width)), Image.LANCZOS)
    if scaled.height > H - 260:
        scaled = meme.resize((round(meme.width * (H - 260) / meme.height), H - 260), Image.LANCZOS)
    shot.paste(scaled, ((W - scaled.width) // 2, 130 + (H - 260 - scaled.height) // 2))
    for i in range(3):
        cx = W // 4 * (i + 1)
        d.ellipse([cx - 12, H - 62, cx + 12, H - 38], outline=fg, width=3)
    return shot


def encode(im: Image.Image, save: dict[str, Any]) -> bytes:
    if save.get("scale", 1.0) != 1.0:
        im = im.resize((round(im.width * save["scale"]), round(im.height * save["scale"])), Image.LANCZOS)
    buf = io.BytesIO()
    if save["format"] == "PNG":
        im.save(buf, "PNG", optimize=False)
    else:
        im.save(buf, "JPEG", quality=save["quality"])
    return buf.getvalue()


def make(line: dict[str, Any]) -> tuple[str, str]:
    """Write one output file; returns (file, SHA-256)."""
    out: Path = _W["out"]
    rng = random.Random(line.get("seed", 0))
    if line["kind"] == "meme":
        im = render_meme(line)
        s = line["save"]
        if s["as"] == "screenshot":
            im = phone_screenshot(im, s["dark"], s["clock"], s["battery"])
        data = encode(im, s)
    elif line["kind"] == "copy":
        data = (out / line["of"]).read_bytes()
    elif line["kind"] == "near":
        im = Image.open(out / line["of"]).convert("RGB")
        op = line["op"]
        quality = 85
        if op == "resize":
            f = rng.uniform(0.6, 0.8)
            im = im.resize((round(im.width * f), round(im.height * f)), Image.LANCZOS)
        elif op == "lowq":
            quality = rng.randint(30, 50)
        elif op == "crop":
            fx, fy = rng.uniform(0.05, 0.09), rng.uniform(0.05, 0.09)
            im = im.crop(
                (
                    round(im.width * fx),
                    round(im.height * fy),
                    im.width - round(im.width * fx),
                    im.height - round(im.height * fy),
                )
            )
        elif op == "rewatermark":
            corner_text(
                im,
                rng.choice(["@meme.dump", "@daily.memez", "saved from my feed", "@lol_vault"]),
                rng.choice(["tl", "tr", "br"]),
                rng.randint(12, 16),
            )
        else:
            im = phone_screenshot(im, rng.random() < 0.5, rng.randint(0, 1439), rng.randint(5, 100))
        data = encode(im, {"format": "PNG"} if op == "screenshot" else {"format": "JPEG", "quality": quality})
    else:
        parts = [render_meme(p) for p in line["_parts"]]
        w = max(p.width for p in parts)
        parts = [p.resize((w, round(p.height * w / p.width)), Image.LANCZOS) for p in parts]
        gap = 12
        im = Image.new("RGB", (w, sum(p.height for p in parts) + gap), "white")
        im.paste(parts[0], (0, 0))
        im.paste(parts[1], (0, parts[0].height + gap))
        data = encode(im, {"format": "JPEG", "quality": rng.randint(70, 90)})
    target = out / line["file"]
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    return line["file"], sha256_hex(data)


# ─────────────────────────────────────────────────────────────────── manifest, truth, check


def manifest_text(rows: dict[str, str]) -> str:
    return "".join(f"{sha}  {path}\n" for path, sha in sorted(rows.items()))


SAFETY = HERE / "safety.jsonl"
SEVERITY = ("safe", "sensitive", "unsafe", "critical")


def truth_text(lines: list[dict[str, Any]]) -> str:
    """One line per file, ids only. `id`, `out.file`, `variant.of`, `group` and `truth.safety` are the
    recipe keys of benchmark v1 (v1/FORMAT.md, "Items"), so the lab's recipe readers (exact-target
    groups, the recipe-truth and helper annotators' safety class) read this file as they read v1's."""
    keep = (
        "file",
        "kind",
        "post",
        "template",
        "boxes",
        "layout",
        "watermark",
        "save",
        "of",
        "op",
        "parts",
        "posts",
        "templates",
    )
    safety = {}
    if SAFETY.is_file():
        safety = {r["post"]: r["class"] for r in map(json.loads, SAFETY.read_text().splitlines()) if r}
    by_file = {ln["file"]: ln for ln in lines}

    def ident(ln: dict[str, Any]) -> str:
        if ln["kind"] == "stack":
            return "stack:" + "+".join(ln["posts"])
        return ln["post"] if ln["kind"] == "meme" else f"{ln['post']}:{ln['kind']}:{ln['file']}"

    out = []
    for ln in sorted(lines, key=lambda x: x["file"]):
        rec = {k: ln[k] for k in keep if k in ln}
        posts = ln.get("posts") or [ln["post"]]
        rec.update(
            id=ident(ln),
            out={"file": ln["file"]},
            truth={"safety": max((safety.get(p, "safe") for p in posts), key=SEVERITY.index)},
        )
        if "template" in ln:
            rec["group"] = ln["template"]
        if "of" in ln:
            rec["variant"] = {"of": ident(by_file[ln["of"]]), "op": ln["op"]}
        out.append(json.dumps(rec, sort_keys=True, ensure_ascii=True))
    return "\n".join(out) + "\n"


def scan(out: Path) -> dict[str, str]:
    return {p.relative_to(out).as_posix(): sha256_hex(p.read_bytes()) for p in sorted(out.rglob("*")) if p.is_file()}


def check(out: Path) -> int:
    want = {}
    for line in MANIFEST.read_text(encoding="utf-8").splitlines():
        sha, _, path = line.partition("  ")
        want[path] = sha
    got = scan(out)
    differ = sorted(p for p in want if p in got and got[p] != want[p])
    missing = sorted(p for p in want if p not in got)
    extra = sorted(p for p in got if p not in want)
    if differ or missing or extra:
        ex = (differ or missing or extra)[0]
        print(
            f"ARTIFACT INTEGRITY FAILURE: {out}: {len(differ)} changed, {len(missing)} missing, "
            f"{len(extra)} unlisted file(s), e.g. {ex}"
        )
        return 1
    print(f"ok: {len(got)} files of {out} match {MANIFEST.relative_to(HERE.parents[1])}")
    return 0


def stats(lines: list[dict[str, Any]]) -> str:
    from collections import Counter

    kinds = Counter(ln["kind"] for ln in lines)
    saves = Counter(ln["save"]["as"] for ln in lines if ln["kind"] == "meme")
    ops = Counter(ln["op"] for ln in lines if ln["kind"] == "near")
    fmts = Counter(ln["file"].rsplit(".", 1)[-1].lower() for ln in lines)
    templates = len({ln["template"] for ln in lines if ln["kind"] == "meme"})
    return (
        f"{len(lines)} files: {kinds['meme']} memes on {templates} templates, {kinds['copy']} exact copies, "
        f"{kinds['near']} near copies ({dict(sorted(ops.items()))}), {kinds['stack']} stacks; "
        f"saved as {dict(sorted(saves.items()))}; extensions {dict(sorted(fmts.items()))}"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("paths", nargs="+", metavar="[SNAPSHOT] OUT")
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--jobs", type=int, default=2, help="processes (at most 2)")
    ap.add_argument("--check", action="store_true", help="only verify OUT against manifest.sha256")
    ap.add_argument("--record", action="store_true", help="rewrite pins.json, manifest.sha256 and truth.jsonl")
    ap.add_argument("--allow-other-snapshot", action="store_true")
    a = ap.parse_args(argv)
    if a.check:
        return check(Path(a.paths[-1]))
    out = Path(a.paths[-1])
    started = time.monotonic()
    try:
        font = find_font()
        snap = open_snapshot(a.paths[0] if len(a.paths) > 1 else None)
        pins = {} if a.record else load_pins()
        rels = pinned_files(snap, pins)
        blobs = {r: b for r in rels if (b := snap.read(r)) is not None}
        if pins:
            check_pins(snap, blobs, pins, a.allow_other_snapshot)
            if pins.get("font", {}).get("sha256") != sha256_hex(font.read_bytes()):
                raise SnapshotError(f"{font} differs from the pinned caption font: run `npm install -g {FONT_PACKAGE}`")
    except SnapshotError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    layouts = json.loads(LAYOUTS.read_text(encoding="utf-8"))
    chosen = choose(blobs, layouts, a.seed)
    lines = plan(chosen, a.seed)
    captions = {m["post"]: m["boxes"] for m in chosen}
    by_file = {ln["file"]: ln for ln in lines}
    for ln in lines:
        if ln["kind"] == "stack":
            ln["_parts"] = [by_file[f] for f in ln["parts"]]
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    images = {r: b for r, b in blobs.items() if r.startswith("dataset/templates/img/")}
    rows: dict[str, str] = {}
    jobs = max(1, min(2, a.jobs))
    init = (images, layouts, captions, str(font), str(out))
    first = [ln for ln in lines if ln["kind"] in ("meme", "stack")]
    later = [ln for ln in lines if ln["kind"] in ("copy", "near")]
    if jobs == 1:
        _init(*init)
        rows.update(make(ln) for ln in first + later)
    else:
        with Pool(jobs, initializer=_init, initargs=init) as pool:
            rows.update(pool.imap_unordered(make, first, chunksize=8))
            rows.update(pool.imap_unordered(make, later, chunksize=8))
    elapsed = time.monotonic() - started
    print(stats(lines))
    print(f"built {out} in {elapsed:.0f} s with {jobs} process(es)")
    text, truth = manifest_text(rows), truth_text(lines)
    if a.record:
        PINS.write_text(
            json.dumps(
                {
                    "snapshot": {
                        "name": "ImgFlip575K (schesa/ImgFlip575K_Dataset)",
                        "commit": snap.commit,
                        "files": {r: sha256_hex(b) for r, b in sorted(blobs.items())},
                    },
                    "font": {"package": FONT_PACKAGE, "file": FONT_FILE, "sha256": sha256_hex(font.read_bytes())},
                    "small_font": {
                        "package": "fonts-dejavu-core",
                        "file": SMALL_FONT,
                        "sha256": sha256_hex(Path(SMALL_FONT).read_bytes()),
                    },
                    "pillow": Image.__version__,
                    "seed": a.seed,
                },
                indent=1,
                sort_keys=True,
            )
            + "\n",
            encoding="utf-8",
        )
        MANIFEST.write_text(text, encoding="utf-8")
        TRUTH.write_text(truth, encoding="utf-8")
        print(f"recorded {PINS.name}, {MANIFEST.name} ({len(rows)} files), {TRUTH.name}")
        return 0
    if truth != TRUTH.read_text(encoding="utf-8"):
        print("ARTIFACT INTEGRITY FAILURE: the plan differs from the committed truth.jsonl (seed, snapshot or code)")
        return 1
    return check(out)


if __name__ == "__main__":
    sys.exit(main())
