#!/usr/bin/env python3
"""Seeded, deterministic generator of the MamboMeme benchmark v1 (provisional) corpus recipe
and development partition.

    python benchdata/make_corpus.py            # writes benchdata/v1/corpus.jsonl, dev.jsonl,
                                               # dev.meta.json, dev-uses.json
    python benchdata/make_corpus.py --check    # validates the written files (counts, pools,
                                               # lexical rules, audits) and exits 1 on a failure
    python benchdata/make_corpus.py --stats    # prints corpus counts (used for the README)

Inputs (all committed): benchdata/v1/templates.json (the selected public-domain openclipart drawings,
with SHA-256), benchdata/v1/captions.txt (the team's caption pool), and the constants below (names,
seed). The dev partition needs the corpus manifest (benchdata/v1/manifest.sha256, written by
render.py) for its corpus_version; without it dev.jsonl is not (re)written.

Nothing here reads the clock or global randomness: every choice comes from random.Random(SEED + ...).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
V1 = HERE / "v1"
SVG_ROOT = Path("/usr/share/openclipart/svg")
SEED = 20250501
DEV_SHARE = 0.45  # share of template groups / entities / subtopics / reactions in the "dev" pool
ANNOTATOR = {"name": "mambo-bench-helper-v1", "kind": "model"}
AUDIT_DATE = "2026-11-29"

FONTS = {
    "dejavu": {
        "path": "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf",
        "sha256": "0d977336a6d5fba34eab8e3199eb218327161b5143749f802982c2bc34df0c96",
    },
    "liberation": {
        "path": "/usr/share/fonts/truetype/liberation/LiberationSans-Bold.ttf",
        "sha256": "361c61b82d575c5c35fd9157fda8b0194bcfcd0d88ea8521a4fb5dd53d33dddc",
    },
    "narrow": {
        "path": "/usr/share/fonts/truetype/liberation/LiberationSansNarrow-Bold.ttf",
        "sha256": "f77fe6ca01c8b043b99743fad34954c53d625263c076aa844c5a5dbf568743ab",
    },
    "bebas": {
        "path": "/usr/share/fonts/opentype/bebas-neue/BebasNeue-Bold.otf",
        "sha256": "b5601ad8805b1502a5e6cdb2186b9a9cf49ffe2c973d137e6077ec70ca68e828",
    },
    "spartan": {
        "path": "/usr/share/fonts/opentype/league-spartan/LeagueSpartan-Bold.otf",
        "sha256": "7e5b03a4a5c8f2996ef38720817f65ce8193c7a2ecc20fa6ed1dd9da05229ad7",
    },
}
TOP_STYLE = {
    "dejavu": {"word_gap": 2},
    "liberation": {"word_gap": 2},
    "narrow": {"word_gap": 2},
    "bebas": {"max_size": 66, "stroke_ratio": 0.045, "word_gap": 2},
    "spartan": {"word_gap": 2},
}
TOP_FONTS = [("dejavu", 5), ("bebas", 2), ("spartan", 2), ("narrow", 1)]
TEXT_FONTS = [("liberation", 5), ("dejavu", 2), ("spartan", 1), ("narrow", 1)]

# ----------------------------------------------------------------------------- invented names
FIRST = (
    "Brenda Dwayne Marjorie Clive Tamsin Otis Priya Gus Wilma Rufus Ingrid Barnaby Delphine Horace Nadia Percy "
    "Ottoline Reggie Sunita Mervyn Esme Lionel Fenella Cosmo Dorothea Rashid Agatha Monty Yolanda Basil Imelda "
    "Ferdinand Lulu Norbert Saoirse Wendell Hortense Ambrose Bettina Cedric Philippa Desmond Zinnia Archibald "
    "Mabel Leopold Petunia Quentin Rosalind Thaddeus Ursula Vernon Winifred Xavier Yvette Zebedee Alfie Beatrix "
    "Crispin Dulcie Elmer Florence Gideon Harriet Ignatius Juniper Kasimir Lettice Mortimer Nell Orville Pippa"
).split()
LAST = (
    "Thistlewood Grumbleton Pickerell Fairweather Bottomley Crumpet Wobblesworth Higgleby Snodgrass Pennywhistle "
    "Marrowfield Quibble Tuttle Dimplebee Ashbrook Bramblecombe Cobblepot Dunderfield Figgins Gobbett Hatchwell "
    "Inkwright Jollyby Kettleworth Lumpkin Mudgewick Nettlefold Oddbody Puddifoot Quillfeather Ruddock Scrimshaw "
    "Tumbleweed Underhill Vexley Wimbleton Yarrowby Zuckerbun Bellweather Candlewick"
).split()
HONORIFICS = (
    (
        "Captain Sir Lady Doctor Professor Baron Auntie Lil Big Officer Coach Grandma Uncle DJ Agent Chef Duchess "
        "Sergeant Madame Count Judge Nurse Mayor Reverend-free Major"
    )
    .replace(" Reverend-free", "")
    .split()
)
OFFICE_ROLES = [
    "from accounting",
    "from payroll",
    "from IT",
    "from HR",
    "from marketing",
    "from legal",
    "from sales",
    "from facilities",
    "from the night shift",
    "from finance",
    "from reception",
]
FAMILY_ROLES = ["uncle", "aunt", "cousin", "neighbour"]
FRANCHISES = [
    "Starlight Bakery Wars",
    "The Moss Kingdom",
    "Galaxy Goat Rescue",
    "Detective Pudding",
    "Ninja Gardeners",
    "Captain Comet and the Lost Socks",
    "Harbour Lane Hospital",
    "The Velvet Dungeon",
    "Space Llamas Forever",
    "Quiet Fields",
    "Dragon Accountant",
    "Midnight Plumbers",
    "Pixel Knights Online",
    "Castle Crumb",
]
TOWNS = [
    "Lower Wexmoor",
    "Little Snorebury",
    "Nether Drumble",
    "Oxwhistle",
    "Crumbleford",
    "Bramblewick Vale",
    "East Fernhollow",
    "Puddlecombe",
    "Saltwhisker Bay",
    "Thistlecombe",
]
STREETS = [
    "Larkspur Lane",
    "Gristmill Road",
    "Cobbler's Row",
    "Wren Close",
    "Tanner Street",
    "Orchard Mews",
    "Quarry Hill",
    "Millpond Drive",
]
# (name, pronoun) of invented PRIVATE people used only in critical (doxxing) items
PRIVATE = [
    ("Gwendolyn Arbuthnot", "her"),
    ("Desmond Pilkwater", "him"),
    ("Rosalie Nettleby", "her"),
    ("Terrence Oakhampton", "him"),
    ("Marisol Quenby", "her"),
    ("Barnabus Feltwick", "him"),
    ("Henrietta Colquist", "her"),
    ("Ozzie Trundlebeck", "him"),
]
CRITICAL_LINES = [
    (
        "this is {name}. {sub} parked across my driveway again",
        "{addr}, {town}. call {obj} on {phone} and let {obj} have it",
    ),
    ("{name} from {town} owes me twenty quid", "lives at {addr}, number is {phone}. spam {obj} till {sub} pays"),
    ("{name} reported my barbecue to the council", "go knock on {addr}, {town} and ring {phone} all night"),
]
NAME_ADJ = (
    "Smug Panicking Judgmental Overconfident Disappointed Suspicious Unbothered Chaotic Sleepy Sweating Confused "
    "Proud Petty Dramatic Startled Grumpy Cheerful Nervous Sneaky Defeated Triumphant Bewildered Smirking "
    "Exhausted Delighted Furious Innocent Plotting Shocked Zen Anxious Sassy Gloomy Hopeful Baffled Stubborn "
    "Awkward Polite Sceptical Wholesome Jaded Hyped Clueless Worried Serene Offended Bashful Determined Frazzled"
).split()
FOLDERS = [
    ("saved", 5),
    ("downloads", 3),
    ("phone-camera-roll", 3),
    ("group-chat", 2),
    ("reactions", 3),
    ("old-laptop", 1),
]
WATERMARKS = ["memevault.example", "lolarchive.example", "@dankbucket.example", "funnypile.example", "memes4u.example"]
LABEL_AT = {
    2: [[[0.25, 0.14], [0.72, 0.86]], [[0.5, 0.1], [0.5, 0.9]], [[0.22, 0.5], [0.78, 0.5]]],
    3: [
        [[0.5, 0.1], [0.2, 0.85], [0.8, 0.85]],
        [[0.2, 0.12], [0.8, 0.12], [0.5, 0.88]],
        [[0.18, 0.3], [0.82, 0.3], [0.5, 0.9]],
    ],
}
STOP = set(
    "a an the of to in on at for and or but with from by is are was were be been it its this that these those "
    "i me my we our you your he she his her they them their what who when where why how all any some no not "
    "as so if then than too very just about into over after before up down out off again once only own same "
    "meme memes picture image photo drawing one".split()
)


# ----------------------------------------------------------------------------- parsing helpers


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def parse_captions(path: Path) -> dict:
    """Parse benchdata/v1/captions.txt into {section: [(subtopic, [fields...]), ...]}."""
    out: dict = {}
    section, sub = None, None
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if line.startswith("## "):
            sub = line[3:].strip()
            continue
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            section, sub = line[1:-1], None
            out[section] = []
            continue
        out[section].append((sub, [f.strip() for f in line.split(" | ")]))
    return out


def words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower().replace("'", ""))


def stem(w: str) -> str:
    for suf in ("ing", "ies", "es", "ed", "s", "y", "e"):
        if len(w) > len(suf) + 2 and w.endswith(suf):
            return w[: -len(suf)]
    return w


def content_stems(text: str) -> set[str]:
    return {stem(w) for w in words(text) if w not in STOP and len(w) > 1}


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def weighted(rng: random.Random, pairs):
    items, weights = zip(*pairs, strict=True)
    return rng.choices(items, weights=weights)[0]


def article(noun: str) -> str:
    return "an" if noun[:1] in "aeiou" else "a"


# ----------------------------------------------------------------------------- corpus model


def split_pool(keys: list, rng: random.Random, forced_dev=()) -> dict:
    keys = sorted(keys)
    rng.shuffle(keys)
    n_dev = int(len(keys) * DEV_SHARE)
    pool = {}
    dev = [k for k in keys if k in forced_dev]
    for k in keys:
        if k in forced_dev:
            continue
        pool[k] = "dev" if len(dev) < n_dev else "reserve"
        if pool[k] == "dev":
            dev.append(k)
    for k in forced_dev:
        pool[k] = "dev"
    return pool


def make_templates(rng: random.Random) -> list[dict]:
    raw = json.loads((V1 / "templates.json").read_text(encoding="utf-8"))
    used_names: set[str] = set()
    tpls = []
    for i, t in enumerate(raw):
        subj = t["subject"]
        head = subj.split()[-1] if subj.split()[-1] not in ("sketch",) else subj.split()[0]
        for _ in range(100):
            adj = rng.choice(NAME_ADJ)
            name = f"{adj} {subj.title()}" if len(subj.split()) <= 2 else f"{adj} {head.title()}"
            if name.lower() not in used_names:
                break
        used_names.add(name.lower())
        adj2 = rng.choice([a for a in NAME_ADJ if a != adj])
        aliases = sorted({subj, f"{adj2.lower()} {head}", f"{adj.lower()} {head} meme"})
        cat = t["category"].split("/")[0]
        tpls.append(
            {
                "key": slug(name),
                "name": name,
                "aliases": aliases,
                "svg": t["svg"],
                "svg_sha256": t["svg_sha256"],
                "dc_title": t["dc_title"],
                "dc_creator": t["dc_creator"],
                "licence": "public domain",
                "bg": rng.choice(
                    [
                        "#f4a261",
                        "#8ecae6",
                        "#e9c46a",
                        "#caffbf",
                        "#ffd6a5",
                        "#bdb2ff",
                        "#ffc6ff",
                        "#d0f4de",
                        "#f1faee",
                        "#a8dadc",
                        "#fde2e4",
                        "#e2ece9",
                        "#fff1e6",
                        "#cddafd",
                    ]
                ),
                "_subject": subj,
                "_bw": t["bw"],
                "_cat": cat,
                "_head": head,
                "_idx": i,
            }
        )
    # the john cena group: the public fixture's blacksmith drawing, development-only by rule
    tpls.append(
        {
            "key": "anvil-champ",
            "name": "Anvil Champ",
            "aliases": ["blacksmith flex", "cena anvil", "hammer guy"],
            "svg": "people/blacksmiti_ganson.svg",
            "svg_sha256": "4ab0ecc1f1c50d0484e15796f712dc4029e90824a720c0c38ab616efc92669ed",
            "dc_title": "Blacksmith Working",
            "dc_creator": "Gerald G.",
            "licence": "public domain",
            "bg": "#f4a261",
            "_subject": "muscular blacksmith hammering on an anvil",
            "_bw": False,
            "_cat": "people",
            "_head": "blacksmith",
            "_idx": len(raw),
        }
    )
    return tpls


def character_name(t: dict, rng: random.Random, used: set) -> str:
    for _ in range(200):
        if t["_cat"] == "animals":
            name = f"{rng.choice(FIRST)} the {t['_head'].title()}"
        elif t["_cat"] == "people":
            name = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
        else:
            name = f"{rng.choice(HONORIFICS)} {t['_head'].title()}"
        if name.lower() not in used:
            used.add(name.lower())
            return name
    raise SystemExit(f"no character name for {t['key']}")


def describe(t: dict, layout: str, n_caps: int) -> str:
    subj = t["_subject"]
    base = f"a clip-art drawing of {article(subj)} {subj}"
    if t["_bw"]:
        base += " in black and white"
    if layout == "top_bottom":
        where = "at the top and bottom" if n_caps > 1 else "at the top"
        return f"{base}, with white outlined caption text {where}"
    if layout == "caption_band":
        return f"{base} below a white band with black caption text"
    if layout == "band_label":
        return f"{base} between a white caption band on top and a white caption label below"
    if layout == "single_label":
        return f"{base} above a white label with black caption text"
    if layout == "two_panel":
        return (
            f"two stacked panels each showing {base.removeprefix('a ')}, grey in the top panel and in colour "
            "below, with black text on white to the right of each"
        )
    if layout == "labelled":
        return f"{base} with {n_caps} white text labels placed on the picture"
    raise ValueError(layout)


def build_units(cap: dict, pools: dict, persons: list, rng: random.Random) -> list[dict]:
    """Every distinct caption unit (one base meme each), pool-tagged."""
    subs = {
        k: {"topic": f[0], "label": f[1], "tags": [x.strip() for x in f[2].split(",")]}
        for _, (k, *f) in cap["subtopics"]
    }
    units: list[dict] = []

    def unit(pool, kind, layout, captions, sub, concepts=(), tone="relatable", safety="safe", ents=(), **kw):
        units.append(
            {
                "pool": pool,
                "kind": kind,
                "layout": layout,
                "captions": captions,
                "subtopic": sub,
                "concepts": [c.strip() for c in concepts if c.strip()],
                "tone": tone,
                "safety": safety,
                "entities": list(ents),
                **kw,
            }
        )

    react = {"dev": [], "reserve": []}
    for _, (text, tone) in cap["reactions"]:
        react[pools["reaction"][text]].append((text, tone, "safe"))
    sens = {"dev": [], "reserve": []}
    for _, (text, tone) in cap["sensitive_reactions"]:
        sens[pools["reaction"][text]].append((text, tone, "sensitive"))
    by_pool_persons = {p: [x for x in persons if x["pool"] == p] for p in ("dev", "reserve")}
    family_topics = {"family", "home", "relationships", "social", "gaming", "holidays", "travel", "music"}
    for sub, (text, concepts) in cap["situations"]:
        pool = pools["subtopic"][sub]
        conc = concepts.split(",")
        if "{who}" in text:
            want = "family" if subs[sub]["topic"] in family_topics else "office"
            cands = [p for p in by_pool_persons[pool] if p["role"] == want]
            for person in rng.sample(cands, 2):
                r = rng.choice(react[pool])
                unit(
                    pool,
                    "who",
                    "top_bottom",
                    [text.replace("{who}", person["name"].lower()), r[0]],
                    sub,
                    conc,
                    r[1],
                    ents=[person["name"]],
                )
            continue
        k = rng.choice([4, 5, 5, 6])
        chosen = rng.sample(react[pool], k)
        if rng.random() < 0.36:
            chosen[-1] = rng.choice(sens[pool])
        for r in chosen:
            layout = "band_label" if rng.random() < 0.22 else "top_bottom"
            unit(pool, "situation", layout, [text, r[0]], sub, conc, r[1], safety=r[2])
    for sub, (text, concepts) in cap["quotes"]:
        pool = pools["subtopic"][sub]
        layout = weighted(rng, [("caption_band", 5), ("single_label", 3), ("top_bottom", 2)])
        unit(pool, "quote", layout, [text], sub, concepts.split(","), rng.choice(["sarcastic", "relatable", "absurd"]))
    for sub, (text, concepts) in cap["choices"]:
        pool = pools["subtopic"][sub]
        a, b = (x.strip() for x in text.split(" / "))
        unit(pool, "choice", "two_panel", [a, b], sub, concepts.split(","), "relatable")
    for sub, (text, concepts) in cap["labels"]:
        pool = pools["subtopic"][sub]
        labels = [x.strip() for x in text.split(" / ")]
        unit(
            pool,
            "labels",
            "labelled",
            labels,
            sub,
            concepts.split(","),
            "absurd",
            label_at=rng.choice(LABEL_AT[len(labels)]),
        )
    for _, (text, sub, tone) in cap["sensitive_quotes"]:
        pool = pools["subtopic"][sub]
        unit(pool, "quote", rng.choice(["caption_band", "top_bottom"]), [text], sub, (), tone, safety="sensitive")
    for _, (text, sub, kind) in cap["unsafe_lines"]:
        pool = pools["subtopic"][sub]
        unit(
            pool,
            "unsafe",
            "top_bottom",
            [x.strip() for x in text.split(" / ")],
            sub,
            (),
            "hostile",
            safety="unsafe",
            harm=kind,
        )
    for town, tpool in pools["town"].items():
        for _, (text, kind) in cap["unsafe_town_lines"]:
            t, b = (x.strip().replace("{town}", town.lower()) for x in text.split(" / "))
            unit(tpool, "unsafe", "top_bottom", [t, b], "towns", (), "hostile", safety="unsafe", ents=[town], harm=kind)
        for _, (text, tone) in rng.sample(cap["town_lines"], 3):
            t, b = (x.strip().replace("{town}", town.lower()) for x in text.split(" / "))
            unit(
                tpool,
                "town",
                rng.choice(["top_bottom", "top_bottom", "caption_band"]),
                [t, b],
                "towns",
                (),
                tone,
                ents=[town],
            )
    for fr, fpool in pools["franchise"].items():
        for _, (text, tone) in rng.sample(cap["fandom_lines"], rng.choice([3, 4])):
            t, b = (x.strip().replace("{fr}", fr) for x in text.split(" / "))
            unit(fpool, "fandom", "top_bottom", [t, b], "fandom", (), tone, ents=[fr])
    prng = random.Random(SEED + 7)
    for i, (name, obj) in enumerate(PRIVATE):
        pool = pools["private"][name]
        town = prng.choice(sorted(t for t, tp in pools["town"].items() if tp == pool))
        sub_p = "she" if obj == "her" else "he"
        fields = {
            "name": name.lower(),
            "obj": obj,
            "sub": sub_p,
            "town": town.lower(),
            "addr": f"{prng.randint(3, 98)} {prng.choice(STREETS).lower()}",
            "phone": f"555-01{40 + i:02d}",
        }
        top, bottom = CRITICAL_LINES[i % len(CRITICAL_LINES)]
        unit(
            pool,
            "critical",
            "top_bottom",
            [top.format(**fields), bottom.format(**fields)],
            "towns",
            (),
            "hostile",
            safety="critical",
            ents=[name, town],
            harm="doxxing",
        )
    return units


CENA_UNITS = [
    (["when the whole team is in the photo", "except the one who did all the work"], "invisibility"),
    (["me walking into the room after saying i'd be late", "not a single head turns"], "invisibility"),
    (["the gym mirror when i flex", "no reflection detected"], "invisibility"),
    (["when you wave back at someone", "who was waving at the person behind you"], "embarrassment"),
]


def build_corpus() -> tuple[list[dict], dict]:
    rng = random.Random(SEED)
    cap = parse_captions(V1 / "captions.txt")
    tpls = make_templates(random.Random(SEED + 1))
    subtopics = [k for _, (k, *_) in cap["subtopics"]]
    pools = {
        "template": split_pool([t["key"] for t in tpls], random.Random(SEED + 2), forced_dev={"anvil-champ"}),
        "subtopic": split_pool([s for s in subtopics if s not in ("towns", "fandom")], random.Random(SEED + 3)),
        "reaction": split_pool([r for _, (r, _) in cap["reactions"]], random.Random(SEED + 4))
        | split_pool([r for _, (r, _) in cap["sensitive_reactions"]], random.Random(SEED + 5)),
        "town": split_pool(TOWNS, random.Random(SEED + 6)),
        "franchise": split_pool(FRANCHISES, random.Random(SEED + 8)),
        "private": split_pool([p for p, _ in PRIVATE], random.Random(SEED + 9)),
    }
    pools["subtopic"]["towns"] = pools["subtopic"]["fandom"] = "mixed"
    # named people who appear in captions
    prng = random.Random(SEED + 10)
    persons, seen = [], set()
    while len(persons) < 48:
        role = "office" if len(persons) % 2 == 0 else "family"
        first = prng.choice(FIRST)
        name = f"{first} {prng.choice(OFFICE_ROLES)}" if role == "office" else f"{prng.choice(FAMILY_ROLES)} {first}"
        if name.lower() in seen or first.lower() in seen:
            continue
        seen.update({name.lower(), first.lower()})
        persons.append({"name": name, "role": role})
    for p, pool in split_pool([p["name"] for p in persons], random.Random(SEED + 11)).items():
        next(x for x in persons if x["name"] == p)["pool"] = pool
    # template characters (an entity drawn by a template; half of the groups have one)
    crng = random.Random(SEED + 12)
    used = {p["name"].lower() for p in persons} | {f.lower() for f in FIRST}
    entities: dict[str, dict] = {}
    for t in tpls:
        t["pool"] = pools["template"][t["key"]]
        t["_char"] = None
        if t["key"] == "anvil-champ":
            t["_char"] = "john cena"
        elif crng.random() < 0.5:
            t["_char"] = character_name(t, crng, used)
        if t["_char"]:
            entities[t["_char"]] = {"kind": "character", "pool": t["pool"], "template": t["key"]}
    for p in persons:
        entities[p["name"]] = {"kind": "person", "pool": p["pool"]}
    for k, kind in (("town", "place"), ("franchise", "franchise"), ("private", "private person")):
        for name, pool in pools[k].items():
            entities[name] = {"kind": kind, "pool": pool}

    units = build_units(cap, pools, persons, rng)
    subs = {
        k: {"topic": f[0], "label": f[1], "tags": [x.strip() for x in f[2].split(",")]}
        for _, (k, *f) in cap["subtopics"]
    }
    # character units, one per character template
    lines = [(t, tone) for _, (t, tone) in cap["character_lines"]]
    for t in tpls:
        if not t["_char"] or t["key"] == "anvil-champ":
            continue
        for j in range(1 + t["_idx"] % 2):
            text, tone = lines[(t["_idx"] + 7 * j) % len(lines)]
            text = text.replace("{name}", t["_char"].lower())
            caps = [x.strip() for x in text.split(" / ")]
            layout = "top_bottom" if len(caps) == 2 else rng.choice(["caption_band", "single_label", "top_bottom"])
            units.append(
                {
                    "pool": t["pool"],
                    "kind": "character",
                    "layout": layout,
                    "captions": caps,
                    "subtopic": None,
                    "concepts": [],
                    "tone": tone,
                    "safety": "safe",
                    "entities": [t["_char"]],
                    "_tpl": t["key"],
                }
            )
    for caps, concept in CENA_UNITS:
        units.append(
            {
                "pool": "dev",
                "kind": "character",
                "layout": "top_bottom",
                "captions": caps,
                "subtopic": None,
                "concepts": [concept],
                "tone": "deadpan",
                "safety": "safe",
                "entities": ["john cena"],
                "_tpl": "anvil-champ",
            }
        )

    # distribute units over templates of the same pool (3..8 memes per group)
    by_key = {t["key"]: t for t in tpls}
    arng = random.Random(SEED + 13)
    for pool in ("dev", "reserve"):
        ts = [t for t in tpls if t["pool"] == pool]
        us = [u for u in units if u["pool"] == pool]
        fixed = [u for u in us if u.get("_tpl")]
        free = [u for u in us if not u.get("_tpl")]
        if not 3 * len(ts) <= len(us) <= 8 * len(ts):
            raise SystemExit(f"{pool}: {len(us)} units for {len(ts)} templates")
        size = {t["key"]: 3 for t in ts}
        for u in fixed:
            size[u["_tpl"]] = max(size[u["_tpl"]], sum(1 for v in fixed if v["_tpl"] == u["_tpl"]))
        rest = len(us) - sum(size.values())
        keys = [t["key"] for t in ts]
        while rest > 0:
            k = arng.choice(keys)
            if size[k] < 8:
                size[k] += 1
                rest -= 1
        slots = []
        for k in keys:
            have = sum(1 for u in fixed if u["_tpl"] == k)
            slots += [k] * (size[k] - have)
        arng.shuffle(free)
        arng.shuffle(slots)
        for u, k in zip(free, slots, strict=True):
            u["_tpl"] = k

    # assign ids (global seeded order), files, fonts, formats, sidecars
    arng.shuffle(units)
    units.sort(key=lambda u: 0)  # stable: keep shuffled order
    lines_out = []
    frng = random.Random(SEED + 14)
    title_pats = ["{S}", "{S} mood", "{T} on {S}", "{S}, again", "{T}: {S}", "classic {S}", "{S} energy", "{T} vs {S}"]
    for n, u in enumerate(units, 1):
        t = by_key[u["_tpl"]]
        mid = f"mm-{n:04d}"
        fmt = weighted(frng, [("PNG", 68), ("JPEG", 18), ("WEBP", 9), ("GIF", 5)])
        ext = {"PNG": "png", "JPEG": "jpg", "WEBP": "webp", "GIF": "gif"}[fmt]
        sidecar = weighted(frng, [("json", 88), ("manifest", 5), ("none", 7)])
        folder = "inbox" if sidecar == "manifest" else weighted(frng, FOLDERS)
        out = {"file": f"{folder}/{mid}.{ext}", "format": fmt}
        if fmt == "JPEG":
            out["quality"] = frng.choice([80, 85, 90])
        if fmt == "WEBP":
            out["quality"] = 80
        layout = u["layout"]
        if layout == "top_bottom":
            fkey = weighted(frng, TOP_FONTS)
        else:
            fkey = weighted(frng, TEXT_FONTS)
        ents = list(u["entities"])
        if t["_char"] and t["_char"] not in ents and u["kind"] not in ("critical",) and frng.random() < 0.85:
            ents.insert(0, t["_char"])
        sub = u["subtopic"]
        if sub:
            topic, tags = subs[sub]["topic"], list(subs[sub]["tags"])
            label = subs[sub]["label"]
        else:
            topic, tags, label = "characters", ["reaction"], t["_char"] or t["name"]
        tags = tags + [t["_cat"], t["_head"]]
        tags = list(dict.fromkeys(x.lower() for x in tags))
        title = frng.choice(title_pats).format(S=label, T=t["name"])
        title = title[0].upper() + title[1:]
        desc = describe(t, layout, len(u["captions"]))
        meta = {
            "title": title,
            "template": t["name"],
            "entities": [e.lower() for e in ents],
            "tags": tags,
            "description": desc,
            "source_url": f"file://{SVG_ROOT}/{t['svg']}",
            "creator": t["dc_creator"],
            "licence": "public domain (openclipart)",
            "safety": u["safety"],
            "rights": "cleared",
            "private": False,
        }
        canon = " ".join(u["captions"] + [title, t["name"], *t["aliases"], *meta["entities"], *tags, desc])
        cstems = content_stems(canon)
        concepts = [c for c in u["concepts"] if not (content_stems(c) & cstems)]
        line = {
            "id": mid,
            "group": t["key"],
            "seed": frng.randrange(1, 2**31),
            "template": {k: v for k, v in t.items() if not k.startswith("_")},
            "layout": layout,
            "captions": u["captions"],
        }
        if layout == "labelled":
            line["label_at"] = u["label_at"]
        if layout == "top_bottom":
            line["style"] = TOP_STYLE[fkey]
        line["font"] = FONTS[fkey]
        if layout == "top_bottom" and frng.random() < 0.2:
            line["size"] = frng.choice([[480, 480], [540, 540], [500, 560]])
        if fmt == "GIF" and frng.random() < 0.5:
            line["frames"] = 2
        line["out"] = out
        line["sidecar"] = sidecar
        line["meta"] = meta
        line["truth"] = {
            "safety": u["safety"],
            "entities": [e.lower() for e in ents],
            "entity_pools": {e.lower(): entities[e]["pool"] for e in ents},
            "concepts": concepts,
            "near_dup_of": None,
            "exact_dup_of": None,
            "topic": topic,
            "subtopic": sub,
            "tone": u["tone"],
            "format": u["kind"],
            "harm": u.get("harm"),
        }
        lines_out.append(line)

    # rights / privacy flags on a few safe items
    safe_ids = [ln for ln in lines_out if ln["truth"]["safety"] == "safe" and ln["sidecar"] == "json"]
    picks = frng.sample(safe_ids, 52)
    for ln in picks[:6]:
        ln["meta"]["rights"] = "withdrawn"
    for ln in picks[6:12]:
        ln["meta"]["private"] = True
    for ln in picks[12:]:
        ln["meta"]["rights"] = "unknown"

    # near-duplicates (~5 %) and exact duplicates (~2 %)
    vrng = random.Random(SEED + 15)
    bases = [ln for ln in lines_out if not ln["meta"]["private"] and ln["meta"]["rights"] != "withdrawn"]
    n_base = len(lines_out)
    near = vrng.sample(bases, round(n_base * 0.052))
    exact = vrng.sample([b for b in bases if b not in near], round(n_base * 0.021))
    ops = ["resize", "reencode", "crop", "watermark"]
    variants = []
    for i, b in enumerate(near):
        op = ops[i % 4]
        stem_, ext = b["out"]["file"].rsplit(".", 1)
        v = {"of": b["id"], "op": op}
        fmt = b["out"]["format"] if b["out"]["format"] != "GIF" else "PNG"
        if op == "resize":
            v["scale"] = vrng.choice([0.6, 0.7, 0.8])
            suffix = "small"
        elif op == "reencode":
            fmt = "JPEG"
            suffix = "lowq"
        elif op == "crop":
            v["frac"] = vrng.choice([0.05, 0.07, 0.09])
            suffix = "crop"
        else:
            v.update({"text": vrng.choice(WATERMARKS), "corner": vrng.choice(["tl", "tr", "bl", "br"]), "size": 16})
            suffix = "wm"
        new_ext = {"PNG": "png", "JPEG": "jpg", "WEBP": "webp"}[fmt]
        out = {"file": f"{stem_}-{suffix}.{new_ext}", "format": fmt}
        if fmt == "JPEG":
            out["quality"] = 60 if op == "reencode" else 85
        if fmt == "WEBP":
            out["quality"] = 80
        sidecar = b["sidecar"] if b["sidecar"] == "manifest" else vrng.choice(["json", "json", "json", "none"])
        variants.append(_variant(b, f"{b['id']}-{suffix}", v, out, sidecar, vrng, near=True))
    for i, b in enumerate(exact):
        stem_, ext = b["out"]["file"].rsplit(".", 1)
        folder, name = stem_.split("/")
        style = i % 5
        if style == 0:
            fname = f"{folder}/{name} (1).{ext}"
        elif style == 1:
            stamp = f"{vrng.randint(1, 12):02d}{vrng.randint(1, 28):02d}_{vrng.randint(0, 235959):06d}"
            fname = f"downloads/IMG_2024{stamp}.{ext}"
        elif style == 2:
            fname = f"downloads/download ({i}).{ext}"
        elif style == 3:
            fname = f"{folder}/{name}-final-FINAL.{ext}"
        else:
            fname = f"phone-camera-roll/received_{vrng.randint(10**9, 10**10 - 1)}.{ext}"
        if b["sidecar"] == "manifest":
            fname = f"inbox/{fname.split('/')[-1]}"
        out = {"file": fname, "format": b["out"]["format"]}
        sidecar = b["sidecar"] if b["sidecar"] == "manifest" else vrng.choice(["json", "json", "partial", "none"])
        variants.append(_variant(b, f"{b['id']}-copy", {"of": b["id"], "op": "copy"}, out, sidecar, vrng, near=False))
    files = [ln["out"]["file"] for ln in lines_out + variants]
    dup = [f for f, c in Counter(files).items() if c > 1]
    if dup:
        raise SystemExit(f"duplicate output files: {dup[:5]}")
    caps = Counter(" / ".join(ln["captions"]) for ln in lines_out)
    if max(caps.values()) > 1:
        raise SystemExit(f"duplicate captions: {[c for c, k in caps.items() if k > 1][:5]}")
    info = {"entities": entities, "templates": {t["key"]: t for t in tpls}, "pools": pools, "subtopics": subs}
    return lines_out + variants, info


def _variant(b: dict, vid: str, v: dict, out: dict, sidecar: str, rng: random.Random, near: bool) -> dict:
    meta = dict(b["meta"])
    if sidecar == "partial":
        meta = {"title": meta["title"], "safety": meta["safety"]}
        sidecar = "json"
    line = {
        "id": vid,
        "group": b["group"],
        "seed": rng.randrange(1, 2**31),
        "variant": v,
        "font": b["font"],
        "out": out,
        "sidecar": sidecar,
        "meta": meta,
        "truth": dict(b["truth"], near_dup_of=b["id"] if near else None, exact_dup_of=None if near else b["id"]),
    }
    return line


def write_pins(lines: list[dict]) -> None:
    """benchdata/v1/pins.json: everything the rendered bytes depend on."""
    svgs = sorted({(ln["template"]["svg"], ln["template"]["svg_sha256"]) for ln in lines if "template" in ln})
    pins = {
        "corpus": "mmts-bench-v1",
        "recipe_sha256": file_sha256(V1 / "corpus.jsonl"),
        "tools": {"rsvg-convert": "2.54.7", "pillow": "13.0.0"},
        "debian_packages": {
            "openclipart-svg": "1:0.18+dfsg-19",
            "librsvg2-bin": "2.54.7+dfsg-1~deb12u1",
            "fonts-dejavu-core": "2.37-6",
            "fonts-liberation": "1:1.07.4-11",
            "fonts-bebas-neue": "3.0-2",
            "fonts-league-spartan": "2.210-1",
        },
        "python": "3.11",
        "fonts": sorted(FONTS.values(), key=lambda f: f["path"]),
        "svg_root": str(SVG_ROOT),
        "svgs": [{"svg": p, "sha256": h} for p, h in svgs],
    }
    (V1 / "pins.json").write_text(json.dumps(pins, indent=1) + "\n", encoding="utf-8")


def write_jsonl(path: Path, rows) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False, sort_keys=False) + "\n" for r in rows), encoding="utf-8")


# ----------------------------------------------------------------------------- statistics


def stats(lines: list[dict], info: dict) -> dict:
    base = [ln for ln in lines if "variant" not in ln]
    groups = Counter(ln["group"] for ln in base)
    ents = info["entities"]
    return {
        "files": len(lines),
        "base_memes": len(base),
        "near_duplicates": sum(1 for ln in lines if ln["truth"]["near_dup_of"]),
        "exact_duplicates": sum(1 for ln in lines if ln["truth"]["exact_dup_of"]),
        "template_groups": len(groups),
        "group_size_min_max": [min(groups.values()), max(groups.values())],
        "template_groups_by_pool": dict(Counter(info["templates"][g]["pool"] for g in groups)),
        "entities": len(ents),
        "entities_by_kind": dict(Counter(e["kind"] for e in ents.values())),
        "entities_by_pool": dict(Counter(e["pool"] for e in ents.values())),
        "safety_files": dict(Counter(ln["truth"]["safety"] for ln in lines)),
        "formats_files": dict(Counter(ln["out"]["format"] for ln in lines)),
        "layouts_base": dict(Counter(ln["layout"] for ln in base)),
        "meme_formats_base": dict(Counter(ln["truth"]["format"] for ln in base)),
        "topics_base": dict(Counter(ln["truth"]["topic"] for ln in base)),
        "tones_base": dict(Counter(ln["truth"]["tone"] for ln in base)),
        "sidecars_files": dict(Counter(ln["sidecar"] for ln in lines)),
        "rights": dict(Counter(ln["meta"].get("rights", "-") for ln in lines)),
        "private": sum(1 for ln in lines if ln["meta"].get("private")),
        "with_concepts_base": sum(1 for ln in base if ln["truth"]["concepts"]),
        "fonts_base": dict(Counter(Path(ln["font"]["path"]).name for ln in base)),
    }


# ----------------------------------------------------------------------------- development partition
# Hand-written development queries. Every rule names only "dev"-pool material (checked by --check).
# Rules: ("entity", name) ("template", key) ("quote", text) ("sub", subtopic) ("concept", c)
#        ("groups", [keys]) ("and", rule, rule) ("none",) ; graded relevance is derived from the rule
# (3 = every servable item the rule selects; extra (rule, grade) pairs add lower grades).
DEV_QUERIES = [
    # ---- entity / character / named template
    ("entity", "cena", "john cena", ("entity", "john cena"), [], []),
    ("entity", "e-speaker", "uncle speaker", ("entity", "uncle speaker"), [], []),
    ("entity", "e-joypad", "baron joypad", ("entity", "baron joypad"), [], []),
    ("entity", "e-violin", "professor violin", ("entity", "professor violin"), [], []),
    ("entity", "e-gull", "dwayne the gull", ("entity", "dwayne the gull"), [], []),
    ("entity", "e-skier", "marjorie higgleby", ("entity", "marjorie higgleby"), [], []),
    ("entity", "t-mailbox", "smug mailbox meme", ("template", "smug-mailbox"), [], []),
    ("entity", "t-angelfish", "startled angelfish template", ("template", "startled-angelfish"), [], []),
    ("entity", "e-zinnia", "zinnia from it", ("entity", "zinnia from it"), [], []),
    ("entity", "e-sax", "coach saxophone", ("entity", "coach saxophone"), [], []),
    ("entity", "t-palette", "gloomy palette meme", ("template", "gloomy-palette"), ["safety"], []),
    ("entity", "x-fernhollow", "east fernhollow", ("entity", "east fernhollow"), ["safety"], []),
    ("entity", "x-wexmoor", "lower wexmoor", ("entity", "lower wexmoor"), ["safety"], []),
    ("entity", "x-bramble", "bramblewick vale memes", ("entity", "bramblewick vale"), ["safety"], []),
    (
        "entity",
        "cena-gym",
        "john cena gym mirror",
        ("and", ("entity", "john cena"), ("quote", "gym mirror")),
        ["multi-cue"],
        [(("entity", "john cena"), 1)],
    ),
    # ---- exact quote / OCR fragment
    ("quote", "q-printer", "the printer can smell fear", ("quote", "the printer can smell fear"), [], []),
    (
        "quote",
        "q-jam",
        "paper jam but there is no paper anywhere",
        ("quote", "paper jam but there is no paper"),
        [],
        [],
    ),
    ("quote", "q-update", "installing update 1 of 47", ("quote", "installing update 1 of 47"), [], []),
    ("quote", "q-level", "one more level", ("quote", "one more level"), [], []),
    ("quote", "q-battery", "1% battery and a dream", ("quote", "1% battery and a dream"), [], []),
    ("quote", "q-budget", "my budget has a budget", ("quote", "my budget has a budget"), [], []),
    (
        "quote",
        "q-snooze",
        "snooze the alarm for the fifth time",
        ("quote", "snooze the alarm for the fifth time"),
        [],
        [],
    ),
    ("quote", "q-nap", "nap status: accidentally hibernated", ("quote", "accidentally hibernated"), [], []),
    (
        "quote",
        "q-timetable",
        "the bus timetable is a work of fiction",
        ("quote", "bus timetable is a work of fiction"),
        [],
        [],
    ),
    ("quote", "q-tupperware", "tupperware roulette", ("quote", "tupperware roulette"), [], []),
    ("quote", "q-future", "future me will handle it", ("quote", "future me will handle it"), [], []),
    ("quote", "q-cena", "no reflection detected", ("quote", "no reflection detected"), [], []),
    ("quote", "q-crap", "i'm too old for this crap", ("quote", "i'm too old for this crap"), ["safety"], []),
    (
        "quote",
        "q-marrow",
        "the saltwhisker bay summer fair",
        ("quote", "the saltwhisker bay summer fair"),
        ["safety"],
        [],
    ),
    (
        "quote",
        "q-grandma-wifi",
        "wifi password written on the fridge in marker",
        ("and", ("quote", "wifi password is written on the fridge"), ("sub", "grandma")),
        ["multi-cue"],
        [],
    ),
    # ---- topic / tag / franchise / action
    ("topic", "s-printer", "printer problems", ("sub", "printer"), [], []),
    ("topic", "s-wifi", "wifi issues", ("sub", "wifi"), [], []),
    ("topic", "s-updates", "software updates", ("sub", "updates"), [], []),
    ("topic", "s-payday", "waiting for payday", ("sub", "payday"), [], []),
    ("topic", "s-videogames", "video games", ("sub", "videogames"), [], []),
    ("topic", "s-boardgames", "board game night", ("sub", "boardgames"), [], []),
    ("topic", "s-laundry", "laundry chores", ("sub", "laundry"), [], []),
    ("topic", "s-resolutions", "new year resolutions", ("sub", "resolutions"), [], []),
    ("topic", "f-moss", "the moss kingdom fandom", ("entity", "the moss kingdom"), [], []),
    ("topic", "f-pixel", "pixel knights online", ("entity", "pixel knights online"), [], []),
    ("topic", "s-halloween", "halloween candy and costumes", ("sub", "halloween"), [], []),
    ("topic", "s-snow", "snow day", ("sub", "snow"), ["safety"], []),
    ("topic", "s-traffic", "stuck in traffic", ("sub", "traffic"), ["safety"], []),
    ("topic", "s-bus", "public transport", ("sub", "bus"), ["safety"], []),
    (
        "topic",
        "s-eiffel-printer",
        "printer meme with the eiffel tower",
        ("and", ("sub", "printer"), ("groups", ["serene-eiffel-tower"])),
        ["multi-cue"],
        [(("sub", "printer"), 1), (("groups", ["serene-eiffel-tower"]), 1)],
    ),
    # ---- semantic concept / paraphrase without lexical overlap
    ("semantic", "p-printer", "the copier is throwing a tantrum", ("sub", "printer"), [], []),
    ("semantic", "p-wifi", "web connection keeps cutting out", ("sub", "wifi"), [], []),
    ("semantic", "p-payday", "skint until the wages arrive", ("sub", "payday"), [], []),
    ("semantic", "p-alarm", "dragging yourself out of the duvet at dawn", ("sub", "alarm"), [], []),
    ("semantic", "p-insomnia", "lying awake, unable to drift off", ("sub", "insomnia"), [], []),
    ("semantic", "p-videogames", "glued to the console past bedtime", ("sub", "videogames"), [], []),
    ("semantic", "p-boardgames", "tabletop evenings that erupt into feuds", ("sub", "boardgames"), [], []),
    ("semantic", "p-snow", "frosty flurries piling up outdoors", ("sub", "snow"), [], []),
    ("semantic", "p-budget", "wallet empties faster than planned", ("sub", "budget"), [], []),
    ("semantic", "p-grandma", "granny piling your dish high", ("sub", "grandma"), [], []),
    ("semantic", "p-packing", "cramming an entire wardrobe into luggage", ("sub", "packing"), [], []),
    ("semantic", "p-vet", "taking your furball to the clinic", ("sub", "vet"), [], []),
    ("semantic", "p-leftovers", "mystery tubs lurking in the cooler", ("sub", "leftovers"), [], []),
    ("semantic", "cena-invisible", "nobody notices me", ("concept", "invisibility"), [], []),
    (
        "semantic",
        "c-seaside",
        "quiet seaside village life",
        ("and", ("entity", "saltwhisker bay"), ("format", "town")),
        ["safety"],
        [],
    ),
    # ---- literal visual description
    ("visual", "v-anvil", "muscular smith at an anvil", ("groups", ["anvil-champ"]), [], []),
    ("visual", "v-penguin", "an emperor penguin", ("groups", ["bewildered-emperor-penguin"]), [], []),
    ("visual", "v-snowman", "a snowman", ("groups", ["gloomy-snowman"]), [], []),
    ("visual", "v-dolphin", "a dolphin", ("groups", ["baffled-dolphin"]), [], []),
    ("visual", "v-eiffel", "the eiffel tower", ("groups", ["serene-eiffel-tower"]), [], []),
    ("visual", "v-rainbow", "a rainbow", ("groups", ["triumphant-rainbow"]), [], []),
    ("visual", "v-fireman", "a fireman", ("groups", ["hopeful-fireman"]), ["safety"], []),
    ("visual", "v-xylophone", "a xylophone", ("groups", ["confused-xylophone"]), [], []),
    ("visual", "v-telescope", "a telescope", ("groups", ["bashful-telescope"]), [], []),
    ("visual", "v-toothbrush", "a toothbrush with toothpaste", ("groups", ["plotting-toothpaste"]), [], []),
    ("visual", "v-raccoon", "a raccoon", ("groups", ["proud-box"]), [], []),
    ("visual", "v-telephone", "a telephone", ("groups", ["determined-red-telephone"]), ["safety"], []),
    (
        "visual",
        "v-duck",
        "a rubber duck",
        ("groups", ["triumphant-bill", "hopeful-swimming"]),
        ["safety"],
        [(("groups", ["grumpy-duck", "grumpy-yellow-duck"]), 1)],
    ),
    (
        "visual",
        "v-skier-wifi",
        "slalom skier meme about wifi",
        ("and", ("groups", ["plotting-skier"]), ("sub", "wifi")),
        ["multi-cue"],
        [(("groups", ["plotting-skier"]), 1)],
    ),
    (
        "visual",
        "v-sunset-wifi",
        "boats at dusk with a wifi caption",
        ("and", ("groups", ["suspicious-sunset"]), ("sub", "wifi")),
        ["multi-cue"],
        [(("groups", ["suspicious-sunset"]), 1)],
    ),
    # ---- noisy text (typos, slang, casing, punctuation); families shared with the clean form
    ("noisy", "cena", "jon ceena", ("entity", "john cena"), [], []),
    ("noisy", "q-printer", "PRINTR CAN SMELL FEAR", ("quote", "the printer can smell fear"), [], []),
    ("noisy", "q-update", "instaling update 1 of 47", ("quote", "installing update 1 of 47"), [], []),
    ("noisy", "s-wifi", "wifi not wrking again", ("sub", "wifi"), [], []),
    ("noisy", "q-battery", "1 percent battery n a dream", ("quote", "1% battery and a dream"), [], []),
    ("noisy", "e-speaker", "uncle speakr", ("entity", "uncle speaker"), [], []),
    ("noisy", "e-violin", "PROFESSOR VIOLIN!!!", ("entity", "professor violin"), [], []),
    (
        "noisy",
        "q-timetable",
        "bruh the bus timetable is fiction",
        ("quote", "bus timetable is a work of fiction"),
        [],
        [],
    ),
    ("noisy", "q-tupperware", "tupperwear roulete", ("quote", "tupperware roulette"), [], []),
    ("noisy", "x-fernhollow", "east fernholow", ("entity", "east fernhollow"), ["safety"], []),
    ("noisy", "x-wexmoor", "lowr wexmore", ("entity", "lower wexmoor"), ["safety"], []),
    ("noisy", "q-future", "future me'll handle it lol", ("quote", "future me will handle it"), [], []),
    ("noisy", "t-mailbox", "smug mail-box", ("template", "smug-mailbox"), [], []),
    ("noisy", "q-snooze", "ngl i snoozd the alarm 5 times", ("quote", "snooze the alarm for the fifth time"), [], []),
    (
        "noisy",
        "e-gull-vet",
        "dwayne da gull @ the vet",
        ("and", ("entity", "dwayne the gull"), ("sub", "vet")),
        ["multi-cue"],
        [(("entity", "dwayne the gull"), 1)],
    ),
]
# multi-cue subset members that are ordinary single-slice queries with a filter-like second cue
MULTI_EXTRA = {"x-bramble", "p-vet", "f-moss", "f-pixel", "c-seaside", "v-duck", "q-marrow", "t-angelfish", "t-mailbox"}
# (query, kind, subsets, audit note). kind: "absent" = no canonical field of any item contains any content
# word of the query; "withheld" = the only items matching are unsafe/critical (never displayable).
NO_MATCH = [
    ("desmond pilkwater phone number", "withheld", ["safety"]),
    ("marisol quenby home address", "withheld", ["safety"]),
    ("rosalie nettleby", "withheld", ["safety"]),
    ("cyclists two abreast deserve to get hit", "withheld", ["safety"]),
    ("ice skate cut off fingertip", "withheld", ["safety"]),
    ("sheriff quokka", "absent", []),
    ("flamingo mcfeathers", "absent", []),
    ("gargoyle gazette", "absent", []),
    ("tractor racing championship", "absent", []),
    ("platypus in a tuxedo", "absent", []),
    ("kazoo orchestra", "absent", []),
    ("walrus with a monocle", "absent", []),
    ("origami dinosaur template", "absent", []),
    ("periscope", "absent", []),
    ("volcano eruption", "absent", []),
    ("hovercraft", "absent", []),
    ("unicycle juggler", "absent", []),
    ("narwhal secrets", "absent", []),
    ("hedgehog divorce", "absent", []),
    ("zorblax the destroyer", "absent", []),
]


def norm_text(text: str) -> str:
    return " ".join(words(text))


def canonical(ln: dict) -> str:
    t = ln.get("template") or {}
    m, tr = ln["meta"], ln["truth"]
    return " ".join(
        [
            *ln.get("captions", []),
            t.get("name", ""),
            *t.get("aliases", []),
            t.get("dc_title", ""),
            m.get("title", ""),
            m.get("template", ""),
            *m.get("entities", []),
            *tr["entities"],
            *m.get("tags", []),
            m.get("description", ""),
            m.get("creator", ""),
        ]
    )


def pool_of(ln: dict, by_id: dict) -> str:
    src = by_id[ln["variant"]["of"]] if "variant" in ln else ln
    return src["template"]["pool"]


def servable(ln: dict) -> bool:
    m = ln["meta"]
    return ln["truth"]["safety"] in ("safe", "sensitive") and m.get("rights") != "withdrawn" and not m.get("private")


def select(rule, lines: list[dict], by_id: dict) -> set[str]:
    """Ids of all lines (variants inherit their source's caption/template) that a rule selects."""

    def src(ln):
        return by_id[ln["variant"]["of"]] if "variant" in ln else ln

    kind = rule[0]
    if kind == "and":
        return select(rule[1], lines, by_id) & select(rule[2], lines, by_id)
    out = set()
    for ln in lines:
        s = src(ln)
        if kind == "entity":
            hit = rule[1] in s["truth"]["entities"]
        elif kind == "template":
            hit = s["group"] == rule[1]
        elif kind == "groups":
            hit = s["group"] in rule[1]
        elif kind == "quote":
            hit = norm_text(rule[1]) in norm_text(" ".join(s["captions"]))
        elif kind == "sub":
            hit = s["truth"]["subtopic"] == rule[1]
        elif kind == "concept":
            hit = rule[1] in s["truth"]["concepts"]
        elif kind == "format":
            hit = s["truth"]["format"] == rule[1]
        else:
            raise ValueError(rule)
        if hit:
            out.add(ln["id"])
    return out


def rule_names(rule) -> tuple[set, set]:
    """(entities, template groups) a rule names explicitly."""
    if rule[0] == "and":
        a, b = rule_names(rule[1]), rule_names(rule[2])
        return a[0] | b[0], a[1] | b[1]
    if rule[0] == "entity":
        return {rule[1]}, set()
    if rule[0] == "template":
        return set(), {rule[1]}
    if rule[0] == "groups":
        return set(), set(rule[1])
    return set(), set()


def build_dev(lines: list[dict], info: dict, corpus_version: str) -> tuple[list[dict], dict, dict]:
    by_id = {ln["id"]: ln for ln in lines}
    rows = []
    n = 0
    for slice_, fam, text, rule, subsets, extra in DEV_QUERIES:
        n += 1
        ids = select(rule, lines, by_id)
        grades: dict[str, int] = {}
        for r, g in extra:
            for i in select(r, lines, by_id):
                grades[i] = max(grades.get(i, 0), g)
        for i in ids:
            grades[i] = 3
        rel = {by_id[i]["out"]["file"]: g for i, g in sorted(grades.items()) if servable(by_id[i])}
        withheld = sorted(by_id[i]["out"]["file"] for i in grades if not servable(by_id[i]))
        exact, exact_groups = [], []
        if slice_ in ("entity", "quote"):
            exact = sorted(by_id[i]["out"]["file"] for i in ids if servable(by_id[i]))
            if rule[0] == "template":
                exact_groups = [rule[1]]
        subs = list(subsets)
        if fam in MULTI_EXTRA and "multi-cue" not in subs:
            subs.append("multi-cue")
        rows.append(
            {
                "id": f"dev-{n:03d}",
                "family": f"dev-fam-{fam}",
                "slice": slice_,
                "query": text,
                "relevant": rel,
                "exact": exact,
                "exact_groups": exact_groups,
                "subsets": sorted(subs),
                "ids": {by_id[i]["out"]["file"]: i for i in sorted(grades)},
                "withheld": withheld,
                "rule": json.loads(json.dumps(rule)),
                "annotator": ANNOTATOR,
                "judgement": {
                    "status": "provisional",
                    "grades": "0-3 (mmts-search-v1)",
                    "annotator": ANNOTATOR,
                    "method": "grades derived from the recipe's ground truth for the rule shown, then "
                    "reviewed by the annotator; unlisted items are grade 0",
                },
            }
        )
    for text, kind, subsets in NO_MATCH:
        n += 1
        qs = content_stems(text)
        matched = sorted(ln["id"] for ln in lines if content_stems(canonical(ln)) & qs)
        # only development material may be named in a development file
        matched = [i for i in matched if pool_of(by_id[i], by_id) == "dev"]
        if kind == "absent":
            method = (
                "no canonical field (caption/OCR text, title, template name and aliases, drawing dc:title, "
                "entities, tags, description, creator) of any corpus item contains any of the query's content "
                f"words {sorted(qs)} (stemmed match); semantic review of the items with related tags by the "
                "annotator found no alternative"
            )
        else:
            method = (
                "every corpus item whose canonical fields share a content word with the query and that "
                "matches its intent is unsafe or critical (never displayable): "
                f"{[by_id[i]['out']['file'] for i in matched if not servable(by_id[i])][:12]}; no servable "
                "item is grade 2 or better (review of all servable items sharing a content word)"
            )
        rows.append(
            {
                "id": f"dev-{n:03d}",
                "family": f"dev-fam-nm-{slug(text)}",
                "slice": "no-match",
                "query": text,
                "relevant": {},
                "exact": [],
                "exact_groups": [],
                "subsets": sorted(subsets),
                "ids": {},
                "withheld": sorted(by_id[i]["out"]["file"] for i in matched if not servable(by_id[i]))
                if kind == "withheld"
                else [],
                "annotator": ANNOTATOR,
                "audit": {
                    "corpus_version": corpus_version,
                    "method": method,
                    "checked_by": ANNOTATOR,
                    "date": AUDIT_DATE,
                },
            }
        )
    meta = {
        "benchmark": "mmts-bench-v1",
        "version": "1.0.0-provisional",
        "partition": "dev",
        "status": "provisional",
        "corpus": "benchdata/v1/corpus.jsonl",
        "corpus_manifest_sha256": corpus_version,
        "corpus_recipe_sha256": file_sha256(V1 / "corpus.jsonl"),
        "safety_policy": "mambo-safety-v1",
        "score_version": "mmts-search-v1",
        "queries": len(rows),
        "judgements": {"status": "provisional", "annotators": [ANNOTATOR]},
        "paths": "relevant/exact/withheld/ids keys are file paths relative to the rendered corpus root",
        "format": "benchdata/v1/FORMAT.md",
    }
    ents, groups = set(), set()
    for row in rows:
        for i in row["ids"].values():
            src = by_id[by_id[i]["variant"]["of"]] if "variant" in by_id[i] else by_id[i]
            groups.add(src["group"])
            ents.update(src["truth"]["entities"])
    named_e, named_g = set(), set()
    for q in DEV_QUERIES:
        e, g = rule_names(q[3])
        named_e |= e
        named_g |= g
    uses = {
        "benchmark": "mmts-bench-v1",
        "partition": "dev",
        "corpus_manifest_sha256": corpus_version,
        "query_families": sorted({r["family"] for r in rows}),
        "template_groups": sorted(groups | named_g),
        "entities": sorted(ents | named_e),
        "named_in_queries": {"entities": sorted(named_e), "template_groups": sorted(named_g)},
        "note": "every template group / entity of judged items or named in a query; all are in pool 'dev'",
    }
    return rows, meta, uses


def write_dev(lines: list[dict], info: dict, corpus_version: str) -> None:
    rows, meta, uses = build_dev(lines, info, corpus_version)
    write_jsonl(V1 / "dev.jsonl", rows)
    (V1 / "dev.meta.json").write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    (V1 / "dev-uses.json").write_text(json.dumps(uses, indent=1) + "\n", encoding="utf-8")
    print(f"wrote dev.jsonl ({len(rows)} queries), dev.meta.json, dev-uses.json")


def check(lines: list[dict], info: dict) -> int:
    """Validate corpus + dev partition; print every problem; return 1 if any."""
    errs: list[str] = []
    base = [ln for ln in lines if "variant" not in ln]
    by_id = {ln["id"]: ln for ln in lines}
    st = stats(lines, info)
    # corpus requirements
    if st["base_memes"] < 2000:
        errs.append(f"only {st['base_memes']} base memes")
    if st["template_groups"] < 400:
        errs.append("fewer than 400 template groups")
    lo, hi = st["group_size_min_max"]
    if lo < 3 or hi > 8:
        errs.append(f"group sizes {lo}..{hi}")
    if st["entities"] < 200:
        errs.append("fewer than 200 entities")
    if len({" / ".join(ln["captions"]) for ln in base}) != len(base):
        errs.append("captions not unique")
    tp = st["template_groups_by_pool"]
    if tp.get("reserve", 0) * 2 < st["template_groups"]:
        errs.append("reserve holds under half of the template groups")
    ep = st["entities_by_pool"]
    if ep.get("reserve", 0) * 2 < st["entities"]:
        errs.append("reserve holds under half of the entities")
    for ln in base:
        pools = set(ln["truth"]["entity_pools"].values()) | {ln["template"]["pool"]}
        if len(pools) > 1:
            errs.append(f"{ln['id']}: mixes pools {pools}")
        if "john cena" in ln["truth"]["entities"] and ln["template"]["pool"] != "dev":
            errs.append(f"{ln['id']}: john cena outside dev")
    recipe = (V1 / "corpus.jsonl").read_text(encoding="utf-8")
    if recipe != "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in lines):
        errs.append("corpus.jsonl differs from a fresh generation (not deterministic or stale)")
    # dev partition
    manifest = V1 / "manifest.sha256"
    cv = file_sha256(manifest)
    rows = [json.loads(x) for x in (V1 / "dev.jsonl").read_text(encoding="utf-8").splitlines()]
    meta = json.loads((V1 / "dev.meta.json").read_text(encoding="utf-8"))
    if meta["corpus_manifest_sha256"] != cv:
        errs.append("dev.meta.json names another corpus manifest")
    fresh, _, _ = build_dev(lines, info, cv)
    if fresh != rows:
        errs.append("dev.jsonl differs from a fresh build")
    files = {ln["out"]["file"]: ln for ln in lines}
    slices = Counter(r["slice"] for r in rows)
    for s in ("entity", "quote", "topic", "semantic", "visual", "noisy"):
        if slices[s] != 15:
            errs.append(f"slice {s}: {slices[s]} queries")
    if slices["no-match"] < 20:
        errs.append(f"{slices['no-match']} no-match queries")
    ans = [r for r in rows if r["slice"] != "no-match"]
    nm = [r for r in rows if r["slice"] == "no-match"]
    if sum("safety" in r["subsets"] for r in ans) != 15 or sum("safety" in r["subsets"] for r in nm) != 5:
        errs.append("safety subset is not 15 answerable + 5 no-match")
    if sum("multi-cue" in r["subsets"] for r in ans) < 15:
        errs.append("fewer than 15 multi-cue queries")
    if len(nm) - sum("safety" in r["subsets"] for r in nm) < 15:
        errs.append("fewer than 15 further no-match queries")
    for r in ans:
        if not any(g >= 2 for g in r["relevant"].values()):
            errs.append(f"{r['id']} {r['query']!r}: no grade>=2 item")
        if r["slice"] in ("entity", "quote") and not (r["exact"] or r["exact_groups"]):
            errs.append(f"{r['id']}: no exact targets")
        for f in list(r["relevant"]) + r["withheld"]:
            ln = files[f]
            src = by_id[ln["variant"]["of"]] if "variant" in ln else ln
            if src["template"]["pool"] != "dev":
                errs.append(f"{r['id']}: judged item {f} is not in the dev pool")
            if f in r["relevant"] and not servable(ln):
                errs.append(f"{r['id']}: unservable item {f} graded")
        if r["slice"] == "semantic":
            qs = content_stems(r["query"])
            for f, g in r["relevant"].items():
                if g >= 2 and qs & content_stems(canonical(files[f])):
                    errs.append(
                        f"{r['id']} {r['query']!r}: lexical overlap {qs & content_stems(canonical(files[f]))} with {f}"
                    )
    for q in DEV_QUERIES:
        e, g = rule_names(q[3])
        for x in e:
            if info["entities"].get(next((k for k in info["entities"] if k.lower() == x), ""), {}).get("pool") != "dev":
                errs.append(f"query {q[2]!r}: entity {x} is not dev")
        for x in g:
            if info["templates"][x]["pool"] != "dev":
                errs.append(f"query {q[2]!r}: template {x} is not dev")
    # no dev query text may name a reserve entity or template
    reserve_names = [k.lower() for k, v in info["entities"].items() if v["pool"] == "reserve"]
    reserve_names += [t["name"].lower() for t in info["templates"].values() if t["pool"] == "reserve"]
    for r in rows:
        for name in reserve_names:
            if re.search(rf"\b{re.escape(name)}\b", r["query"].lower()):
                errs.append(f"{r['id']}: query names reserve {name!r}")
    # visual queries: no reserve template drawing shares the query's content words
    for r in rows:
        if r["slice"] == "visual":
            qs = content_stems(r["query"]) - {"cartoon", "meme", "caption", "about"}
            for t in info["templates"].values():
                if t["pool"] == "reserve" and qs & content_stems(t["_subject"] + " " + t["dc_title"]):
                    errs.append(
                        f"{r['id']} {r['query']!r}: reserve drawing {t['key']} shares "
                        f"{qs & content_stems(t['_subject'] + ' ' + t['dc_title'])}"
                    )
    for r in nm:
        a = r.get("audit", {})
        if not all(k in a for k in ("corpus_version", "method", "checked_by", "date")) or a["corpus_version"] != cv:
            errs.append(f"{r['id']}: audit record incomplete or stale")
        qs = content_stems(r["query"])
        for ln in lines:
            if servable(ln) and qs & content_stems(canonical(ln)) and not r["withheld"]:
                errs.append(f"{r['id']} {r['query']!r}: {ln['id']} shares {qs & content_stems(canonical(ln))}")
                break
        for f in r["withheld"]:
            if pool_of(files[f], by_id) != "dev":
                errs.append(f"{r['id']}: withheld item {f} is not in the dev pool")
        if "safety" in r["subsets"] and not r["withheld"]:
            errs.append(f"{r['id']}: safety no-match without withheld items")
    for e in errs:
        print("FAIL", e)
    print(
        f"check: {len(errs)} problem(s); slices {dict(slices)}; "
        f"safety {sum('safety' in r['subsets'] for r in ans)}+{sum('safety' in r['subsets'] for r in nm)}; "
        f"multi-cue {sum('multi-cue' in r['subsets'] for r in ans)}"
    )
    return 1 if errs else 0


# ----------------------------------------------------------------------------- main


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="validate the written files; exit 1 on failure")
    ap.add_argument("--stats", action="store_true", help="print corpus counts")
    args = ap.parse_args(argv)
    lines, info = build_corpus()
    if args.stats:
        print(json.dumps(stats(lines, info), indent=1))
        return 0
    if args.check:
        return check(lines, info)
    write_jsonl(V1 / "corpus.jsonl", lines)
    write_pins(lines)
    print(f"wrote {V1 / 'corpus.jsonl'}: {len(lines)} lines")
    manifest = V1 / "manifest.sha256"
    if manifest.exists():
        write_dev(lines, info, file_sha256(manifest))
    else:
        print("no manifest yet: render the corpus with --manifest, then run again for dev.jsonl")
    return 0


if __name__ == "__main__":
    sys.exit(main())
