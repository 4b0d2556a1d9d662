#!/usr/bin/env python3
"""Near-identical groups on templates that carry fixed words: a generated set and its measurement.

    python benchdata/make_group_pairs.py render OUT          # recipe (OUT/recipe.jsonl) + images
    ./mambo --db LIB add -q --no-sidecars OUT                # real OCR and template recognition
    python benchdata/make_group_pairs.py measure LIB OUT/recipe.jsonl [--json]
    python benchdata/make_group_pairs.py measure V1LIB benchdata/v1/corpus.jsonl      # any recipe

Real templates often print words of their own: a sign under the joke, a label on an object, a
notice's fixed line. Memes on one such template share those words, so a caption check that reads
them as agreement joins different jokes. This set holds 18 templates made of development drawings
(benchmark v1's `dev` pool, public domain, Debian openclipart-svg) with fixed words the team wrote,
drawn identically on every meme of the template, as a real template picture is:

* `sign`: the joke written on a sign above the sign's fixed line;
* `plate`: top/bottom captions over a drawing that carries a fixed plate;
* `notice`: a text-layout notice, "<fixed words> <joke>" on one line (one of them uses the words
  of the catalogue's `marked-safe-from` anchor, so recognition and its anchors take part);
* `label`: a fixed label above the drawing, the joke on a label below it.

Each template has six memes: a short joke; the same joke with a tail (the short one's words are all
in it); two one-word captions (the text read is mostly the fixed words); another short joke; another
long one. Five near copies per template (re-encoded JPEG q60, resized, cropped, watermarked; of the
short, the long and a one-word meme) are the true pairs. `measure` groups the library's items in the
order ingest met them with the current rule (mambomeme.images.assign_groups, the fixed words the
library knows of each item's recognised template: mambomeme.templates.known_text) and reports
pairwise precision and recall against the recipe (`variant.of`, `truth.near_dup_of`,
`truth.exact_dup_of`), the wrong pairs by kind, and the stored groups. Run it with another tree's
mambomeme first on PYTHONPATH to measure that tree's rule (docs/grouping.md).

Deterministic: every choice comes from SEED; the renderer is benchdata/render.py (Pillow 13.0.0,
rsvg-convert 2.54.7, the fonts of benchdata/v1/pins.json).
"""

from __future__ import annotations

import argparse
import collections
import json
import random
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import make_corpus as mc  # noqa: E402  (benchdata helper modules, not the app)
import render  # noqa: E402

SEED = 20261202
FIXED_FONT = mc.FONTS["dejavu"]

# Drawings from benchmark v1's development pool (make_corpus: dev template groups).
DRAWINGS = [
    "people/fireman_enrique_meza_c_01.svg",
    "animals/birds/crow_01.svg",
    "people/groom1_jarno_vasamaa_01.svg",
    "recreation/toys/simple_teddy_bear_gerald_01.svg",
    "animals/mammals/cartoon_squirrel_mike_sm1.svg",
    "people/backpacker_ganson.svg",
    "animals/birds/emperor_penguin_ralf_ste_01.svg",
    "animals/sailor_monkey_nicu_bucul_01.svg",
    "food/fruit/banana_mateya_01.svg",
    "tools/tools_nicu_buculei_01.svg",
    "computer/pc_speaker_joel_montes_d_01.svg",
    "office/mailbox1.svg",
    "food/desserts/pie_apple.svg",
    "transportation/car_jamin_ellis_.svg",
    "recreation/music/guitar_profile_philippe__01.svg",
    "electronics/bulb/lightbulb_lit_benji_park_.svg",
]
# (layout, fixed words, drawing index or None for a text-layout notice)
TEMPLATES = [
    ("sign", "FIGHT ME ON THIS", 0),
    ("sign", "HOT TAKE OF THE DAY", 1),
    ("sign", "DEBATE ME", 2),
    ("sign", "NOBODY ASKED BUT", 3),
    ("sign", "THIS IS A FACT", 4),
    ("sign", "UNPOPULAR OPINION", 5),
    ("plate", "DO NOT DISTURB", 6),
    ("plate", "EMERGENCY SNACKS", 7),
    ("plate", "EMPLOYEE OF THE MONTH", 8),
    ("plate", "OUT OF ORDER", 9),
    ("plate", "LOST AND FOUND", 10),
    ("plate", "WET PAINT", 11),
    ("notice", "Marked safe from", None),
    ("notice", "Officially excused from", None),
    ("label", "FACTS NOBODY ASKED FOR", 12),
    ("label", "WARNING LABEL", 13),
    ("label", "THINGS I WILL NEVER SAY", 14),
    ("label", "OFFICIAL RULES", 15),
]
SHORT = [
    "cereal is soup",
    "naps count as cardio",
    "socks go with sandals",
    "meetings could be emails",
    "cold pizza is breakfast",
    "mondays are optional",
    "cats run the house",
    "tea beats coffee",
    "the printer knows fear",
    "group chats need rules",
    "leftovers taste better",
    "winter is a scam",
    "alarms are a suggestion",
    "plants hear gossip",
    "the fridge light lies",
    "dogs understand taxes",
    "elevators need music",
    "pens vanish on purpose",
    "rain fixes everything",
    "snacks are a food group",
    "hoodies are formal wear",
    "wifi is a human right",
    "umbrellas never work",
    "spoons beat forks",
    "pillows need names",
    "ducks are suspicious",
    "soup is a drink",
    "parking is a sport",
    "stairs are a trap",
    "laundry never ends",
    "toast deserves respect",
    "weekends are too short",
    "clocks are rude",
    "bread is a hobby",
    "emails can wait",
    "sand is overrated",
]
TAILS = [
    "and i will not be taking questions",
    "ask anyone in my family",
    "my grandma agrees with me",
    "this is my final answer",
    "and the science is settled",
    "i wrote a whole essay about it",
    "do not argue with me after lunch",
    "and i have charts to prove it",
    "the group chat already voted",
    "my cat signed the petition",
]
WORDS = [
    "mondays",
    "naps",
    "laundry",
    "deadlines",
    "spiders",
    "traffic",
    "homework",
    "meetings",
    "alarms",
    "taxes",
    "dentists",
    "printers",
    "chores",
    "rain",
    "emails",
    "weddings",
    "cardio",
    "receipts",
    "queues",
    "passwords",
    "tuesdays",
    "gravy",
    "puddles",
    "coworkers",
    "sprouts",
    "karaoke",
    "budgets",
    "dishes",
    "ringtones",
    "sunburn",
    "flights",
    "parking",
    "updates",
    "voicemail",
    "pigeons",
    "socks",
]
BG = ["#f4a261", "#8ecae6", "#e9c46a", "#caffbf", "#ffd6a5", "#bdb2ff", "#ffc6ff", "#d0f4de", "#a8dadc", "#fde2e4"]
OPS = ["reencode", "resize", "crop", "watermark"]
KINDS = ("short", "long", "word", "word2", "other", "other-long")


# ----------------------------------------------------------------------------- layouts
# The template's own part (drawing, its placement and tint, the fixed words) is drawn from the
# template's seed, so it is the same picture on every meme; only the joke differs.


def _fixed_line(ctx, d, text, cx, top, max_w, size):
    font, lines, lh, _ = render.fit_text(ctx, d, text, FIXED_FONT, max_w, size + 8, size, 16)
    return render.draw_block(d, lines, font, lh, cx, top, "black")


@render.layout("sign")
def sign(ctx, line, rng):
    """A drawing holding a sign: the joke on the sign, the template's fixed line under it."""
    t = line["template"]
    trng = random.Random(t["seed"])
    W, H = 500, 500
    c = render.Image.new("RGBA", (W, H), render.tinted_bg(trng, t["bg"]) + (255,))
    render.paste_drawing(ctx, c, t, (0, 0, W, int(H * 0.6)), trng)
    d = render.ImageDraw.Draw(c)
    x0, y0, x1, y1 = 50, int(H * 0.56), W - 50, H - 18
    d.rectangle([x0, y0, x1, y1], fill="white", outline="black", width=4)
    font, lines, lh, _ = render.fit_text(ctx, d, line["captions"][0], line["font"], x1 - x0 - 30, 120, 30, 18)
    render.draw_block(d, lines, font, lh, W // 2, y0 + 12, "black")
    _fixed_line(ctx, d, t["fixed"], W // 2, y1 - 48, x1 - x0 - 30, 30)
    return c


@render.layout("plate")
def plate(ctx, line, rng):
    """Top/bottom captions over a drawing that carries a fixed plate (a sign on the wall, a tag)."""
    t = line["template"]
    trng = random.Random(t["seed"])
    W, H = 500, 500
    c = render.Image.new("RGBA", (W, H), render.tinted_bg(trng, t["bg"]) + (255,))
    render.paste_drawing(ctx, c, t, (0, 0, W, H), trng)
    d = render.ImageDraw.Draw(c)
    font = ctx.font(FIXED_FONT, 24)
    tw = int(d.textlength(t["fixed"], font=font))
    px, py = (W - tw) // 2 + trng.randint(-60, 60), int(H * trng.uniform(0.42, 0.55))
    d.rectangle([px - 12, py - 8, px + tw + 12, py + 34], fill="white", outline="black", width=3)
    d.text((px, py), t["fixed"], font=font, fill="black")
    caps = [x.upper() for x in line["captions"]] + ["", ""]
    for slot, text in (("top", caps[0]), ("bottom", caps[1])):
        if not text:
            continue
        f, lines, lh, stroke = render.fit_text(
            ctx, d, text, line["font"], W - 28, int(H * 0.3), 46, 26, stroke_ratio=0.08, sep="  "
        )
        top = 14 if slot == "top" else H - 14 - lh * len(lines)
        render.draw_block(d, lines, f, lh, W // 2, top, "white", stroke, "black")
    return c


@render.layout("notice")
def notice(ctx, line, rng):
    """A text-layout notice: an icon, "<fixed words> <joke>" as one bold text, a small grey word."""
    t = line["template"]
    trng = random.Random(t["seed"])
    W, H = 620, 500
    c = render.Image.new("RGBA", (W, H), (255, 255, 255, 255))
    d = render.ImageDraw.Draw(c)
    d.rectangle((300, 50, 306, 160), fill=(90, 90, 90))
    d.polygon([(306, 52), (380, 70), (306, 100)], fill=render.hex_rgb(trng.choice(["#4267b2", "#2a9d8f", "#e76f51"])))
    font, lines, lh, _ = render.fit_text(ctx, d, f"{t['fixed']} {line['captions'][0]}", FIXED_FONT, W - 60, 170, 34, 20)
    render.draw_block(d, lines, font, lh, W // 2, 205, "black")
    d.text((270, 420), "Today", font=ctx.font(FIXED_FONT, 24), fill=(120, 120, 120))
    return c


@render.layout("label")
def label(ctx, line, rng):
    """A fixed label over the drawing (the template's words), the joke on a label under it."""
    t = line["template"]
    trng = random.Random(t["seed"])
    W, H = 500, 520
    c = render.Image.new("RGBA", (W, H), render.tinted_bg(trng, t["bg"]) + (255,))
    render.paste_drawing(ctx, c, t, (0, 70, W, H - 120), trng)
    d = render.ImageDraw.Draw(c)
    d.rectangle([30, 12, W - 30, 64], fill="white", outline="black", width=3)
    _fixed_line(ctx, d, t["fixed"], W // 2, 22, W - 80, 28)
    d.rectangle([30, H - 112, W - 30, H - 12], fill="white", outline="black", width=3)
    font, lines, lh, _ = render.fit_text(ctx, d, line["captions"][0], line["font"], W - 90, 84, 32, 18)
    render.draw_block(d, lines, font, lh, W // 2, H - 104 + (84 - lh * len(lines)) // 2, "black")
    return c


# ----------------------------------------------------------------------------- recipe


def drawing_specs() -> dict[str, dict]:
    """The development drawings, as benchmark v1's recipe pins them (path, SHA-256, creator)."""
    out = {}
    for ln in (json.loads(x) for x in (HERE / "v1" / "corpus.jsonl").read_text(encoding="utf-8").splitlines()):
        t = ln.get("template")
        if t and t["svg"] in DRAWINGS:
            assert t["pool"] == "dev", t["svg"]
            out[t["svg"]] = {k: t[k] for k in ("svg", "svg_sha256", "dc_title", "dc_creator", "licence")}
    assert set(out) == set(DRAWINGS), set(DRAWINGS) - set(out)
    return out


def build_recipe() -> list[dict]:
    rng = random.Random(SEED)
    specs = drawing_specs()
    short, tails, words = rng.sample(SHORT, len(SHORT)), rng.sample(TAILS, len(TAILS)), rng.sample(WORDS, len(WORDS))
    lines: list[dict] = []
    for n, (layout, fixed, drawing) in enumerate(TEMPLATES):
        key = f"t{n:02d}-{layout}"
        tpl = {"key": key, "fixed": fixed, "seed": rng.randrange(1, 2**31), "bg": rng.choice(BG)}
        if drawing is not None:
            tpl |= specs[DRAWINGS[drawing]]
        s1, s2 = short[2 * n % len(short)], short[(2 * n + 1) % len(short)]
        t1, t2 = tails[n % len(tails)], tails[(n + 3) % len(tails)]
        w1, w2 = words[2 * n % len(words)], words[(2 * n + 1) % len(words)]
        if layout == "plate":  # the long version adds a bottom line to the short one's top line
            captions = [[s1], [s1, t1], [w1], [w2], [s2], [s2, t2]]
        else:
            captions = [[s1], [f"{s1} {t1}"], [w1], [w2], [s2], [f"{t2} {s2}"]]
        font = (
            mc.FONTS[rng.choice(["liberation", "dejavu", "spartan", "narrow"])]
            if layout != "plate"
            else mc.FONTS[rng.choice(["dejavu", "spartan", "narrow"])]
        )
        memes = []
        for kind, caps in zip(KINDS, captions, strict=True):
            memes.append(
                {
                    "id": f"{key}-{kind}",
                    "group": key,
                    "seed": rng.randrange(1, 2**31),
                    "template": tpl,
                    "layout": layout,
                    "captions": caps,
                    "font": font,
                    "out": {"file": f"{key}/{kind}.png", "format": "PNG"},
                    "sidecar": "none",
                    "truth": {"kind": kind, "near_dup_of": None},
                }
            )
        lines += memes
        copies = [
            (memes[0], OPS[n % 4]),
            (memes[0], OPS[(n + 1) % 4]),
            (memes[1], OPS[(n + 2) % 4]),
            (memes[1], OPS[(n + 3) % 4]),
            (memes[2], OPS[(n + 1) % 4]),
        ]
        for k, (b, op) in enumerate(copies):
            v = {"of": b["id"], "op": op}
            fmt, quality = "PNG", None
            if op == "resize":
                v["scale"] = rng.choice([0.6, 0.7, 0.8])
            elif op == "reencode":
                fmt, quality = "JPEG", 60
            elif op == "crop":
                v["frac"] = rng.choice([0.05, 0.07, 0.09])
            else:
                v |= {"text": rng.choice(mc.WATERMARKS), "corner": rng.choice(["tl", "tr", "bl", "br"]), "size": 16}
            out = {"file": f"{key}/{b['truth']['kind']}-{op}-{k}.{'jpg' if fmt == 'JPEG' else 'png'}", "format": fmt}
            if quality:
                out["quality"] = quality
            lines.append(
                {
                    "id": f"{b['id']}-{op}-{k}",
                    "group": key,
                    "seed": rng.randrange(1, 2**31),
                    "variant": v,
                    "font": b["font"],
                    "out": out,
                    "sidecar": "none",
                    "truth": {"kind": f"copy-{op}", "near_dup_of": b["id"]},
                }
            )
    return lines


def cmd_render(out: Path, jobs: int) -> None:
    lines = build_recipe()
    out.mkdir(parents=True, exist_ok=True)
    recipe = out / "recipe.jsonl"
    recipe.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), encoding="utf-8")
    render.render_all(recipe, out, render.Ctx(Path(render.SVG_ROOT_DEFAULT), verify=True), jobs=jobs)


# ----------------------------------------------------------------------------- measure


def truth_of(recipe: Path) -> dict[str, tuple[str, str]]:
    """file -> (the meme it is a copy of, or itself; what it is: the caption kind or the copy's op)."""
    lines = [json.loads(x) for x in recipe.read_text(encoding="utf-8").splitlines() if x.strip()]
    by_id = {ln["id"]: ln for ln in lines}

    def original(ln: dict) -> str:
        t = ln.get("truth") or {}
        src = t.get("exact_dup_of") or t.get("near_dup_of") or (ln.get("variant") or {}).get("of")
        return original(by_id[src]) if src else ln["id"]

    def kind(ln: dict) -> str:
        if ln.get("variant"):
            return f"copy-{ln['variant']['op']}"
        return (ln.get("truth") or {}).get("kind") or ln.get("layout", "meme")

    return {ln["out"]["file"]: (original(ln), kind(ln)) for ln in lines}


def cmd_measure(lib: Path, recipe: Path, as_json: bool, no_known: bool = False) -> None:
    import time

    from mambomeme.lab.bench import group_quality
    from mambomeme.lab.product import DB, assign_groups

    files = truth_of(recipe)
    db = DB(lib, create=False)
    rows = db.con.execute(
        "SELECT f.item_id, f.rel_path, i.phash, i.ocr_text, i.perceptual_group "
        "FROM files f JOIN items i USING (item_id) ORDER BY f.item_id, f.file_id"
    ).fetchall()
    truth: dict[int, str] = {}
    kind: dict[int, str] = {}
    meme_kind = {orig: k for orig, k in files.values() if not k.startswith("copy-")}
    stored: dict[int, int] = {}
    inputs: dict[int, tuple] = {}
    for item_id, rel, phash, text, group in rows:
        key = next((k for k in (rel, "/".join(rel.split("/")[-2:])) if k in files), None)
        if key is None or item_id in truth:
            continue
        truth[item_id], kind[item_id] = files[key]
        stored[item_id] = group
        inputs[item_id] = (item_id, phash, text)
    try:  # the rule of a tree that knows templates' fixed words
        from mambomeme.lab.product import known_text
    except ImportError:
        known_text = None
    if no_known:
        known_text = None
    t0 = time.perf_counter()
    ordered = [inputs[i] for i in sorted(inputs)]
    if known_text is None:
        rule = assign_groups(ordered)
    else:
        try:  # a tree whose rule also compares the pictures
            from mambomeme.lab.product import item_look
        except ImportError:
            rule = assign_groups(ordered, known=lambda a, b: known_text(db, a, b))
        else:
            rule = assign_groups(ordered, known=lambda a, b: known_text(db, a, b), look_of=lambda i: item_look(db, i))
    seconds = time.perf_counter() - t0
    wrong = collections.Counter()
    missed = collections.Counter()
    members: dict[int, list[int]] = collections.defaultdict(list)
    for item, g in rule.items():
        members[g].append(item)
    for m in members.values():
        for n, a in enumerate(m):
            for b in m[n + 1 :]:
                if truth[a] != truth[b]:  # by what the two memes are, whichever copies carried them
                    wrong[" + ".join(sorted((meme_kind[truth[a]], meme_kind[truth[b]])))] += 1
    by_meme: dict[str, list[int]] = collections.defaultdict(list)
    for item, t in truth.items():
        by_meme[t].append(item)
    for m in by_meme.values():
        for n, a in enumerate(m):
            for b in m[n + 1 :]:
                if rule[a] != rule[b]:
                    missed[" + ".join(sorted((kind[a], kind[b])))] += 1  # the copy's op, or the original
    report = {
        "library": str(lib),
        "recipe": str(recipe),
        "items": len(truth),
        "memes": len(by_meme),
        "rule": group_quality(rule, truth),
        "stored": group_quality(stored, truth),
        "rule_seconds": round(seconds, 2),
        "known_text": known_text is not None,
        "wrong_pairs": dict(wrong.most_common()),
        "missed_pairs": dict(missed.most_common()),
    }
    if as_json:
        print(json.dumps(report, indent=2))
        return
    r, s = report["rule"], report["stored"]
    print(
        f"{report['items']} items, {report['memes']} memes, {r['true_pairs']} true pairs "
        f"(templates' known text given to the rule: {'yes' if report['known_text'] else 'no'})"
    )
    print(
        f"rule:   {r['groups']} groups, precision {r['precision']:.3f}, recall {r['recall']:.3f} "
        f"({r['pairs']} pairs grouped, {seconds:.1f} s)"
    )
    print(f"stored: {s['groups']} groups, precision {s['precision']:.3f}, recall {s['recall']:.3f}")
    for name, c in (("wrongly joined", wrong), ("missed", missed)):
        if c:
            print(f"{name}: " + ", ".join(f"{k} {v}" for k, v in c.most_common()))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("render", help="write the recipe and render the images into OUT")
    r.add_argument("out", type=Path)
    r.add_argument("--jobs", type=int, default=2)
    m = sub.add_parser("measure", help="pairwise precision and recall of a library's items against a recipe")
    m.add_argument("library", type=Path)
    m.add_argument("recipe", type=Path)
    m.add_argument("--json", action="store_true")
    m.add_argument("--no-known", action="store_true", help="the rule without the templates' known text")
    args = ap.parse_args(argv)
    if args.cmd == "render":
        cmd_render(args.out, args.jobs)
    else:
        cmd_measure(args.library, args.recipe, args.json, args.no_known)
    return 0


if __name__ == "__main__":
    sys.exit(main())
