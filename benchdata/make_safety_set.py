#!/usr/bin/env python3
"""A precision/recall set for the caption safety signals, made by a program from the definitions of
benchdata/safety-policy-v1.md: captions that are unsafe or critical in words the text rules do not
list, and harmless captions that share those words.

    python3 benchdata/make_safety_set.py            # writes benchdata/safety/generated.jsonl
    python3 benchdata/make_safety_set.py --check    # exit 1 unless the file is what this code writes

Each line: id, caption, label (`unsafe`, `critical`, or `shown` for safe or at most sensitive), kind
(the policy criterion, or the harmless family), core (the phrase that makes it what it is: folds keep
captions that share one together), policy, annotator (this program: the labels follow
from the template that wrote the caption). Templates fill invented groups, places, names, streets
and acts; none is copied from benchmark material (the development captions were read to know what
the text rules already catch, the reserve and hidden partitions never). The prototype sentences of
mambomeme/safety_meaning.py were written before this file, separately: no template reuses them.

Nothing reads the clock or global randomness; the output is byte-identical on every run."""

from __future__ import annotations

import argparse
import itertools
import json
import random
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "safety" / "generated.jsonl"
SEED = 20261203
PER_KIND = 120
ANNOTATOR = "benchdata/make_safety_set.py v1 (a program: label from the template, policy mambo-safety-v1)"
POLICY = "mambo-safety-v1"

# Invented places and people (syllables joined; none is a real town or a benchmark name).
PLACE_A = ("grim", "dun", "hollin", "marrow", "quill", "thorn", "ashby", "wick", "pell", "corran", "brisk", "ivel")
PLACE_B = ("ford", "mere", "stead", "by", "haven", "moor", "dale", "wick", "port", "cross")
FIRST = ("darcy", "ellis", "morwen", "tobin", "greer", "lucan", "odile", "perrin", "sabel", "wystan", "hollis", "junie")
LAST = (
    "ashcombe",
    "brindle",
    "corvell",
    "dunmore",
    "fenwright",
    "galloway",
    "hartigan",
    "ivesworth",
    "kettering",
    "larkby",
    "mottram",
    "penhallow",
)
STREET = ("juniper", "foxglove", "millrace", "cobble", "hawthorn", "kestrel", "saddler", "tanyard", "orchard", "weir")
SUFFIX = ("street", "road", "lane", "close", "avenue", "way", "crescent", "mews")


def place(r: random.Random) -> str:
    return r.choice(PLACE_A) + r.choice(PLACE_B)


# Groups of people: by where they live or come from, by what they do.
ORIGIN_GROUPS = (
    "people from {p}",
    "everyone in {p}",
    "{p} folk",
    "the families that moved here from {p}",
    "{p} supporters",
    "anyone born in {p}",
    "the lot from {p}",
    "{p} lads",
)
HABITS = (
    "park across two spaces",
    "clap when the plane lands",
    "walk slowly in groups",
    "play music on the bus",
    "don't indicate",
    "reply-all to the whole company",
    "recline their seat on a short flight",
    "stop dead at the top of the stairs",
    "bring durian on the train",
    "vape indoors",
)
HABIT_GROUPS = ("people who {h}", "anyone who {h}", "drivers who {h}", "folks who {h}")
NOUN_GROUPS = (
    "e-scooter riders",
    "tourists",
    "landlords",
    "joggers",
    "golfers",
    "hikers",
    "students",
    "bikers",
    "delivery drivers",
    "vegans",
    "gamers",
    "tenants",
)


def group(r: random.Random, origin_only: bool = False) -> str:
    if origin_only or r.random() < 0.4:
        return r.choice(ORIGIN_GROUPS).format(p=place(r))
    if r.random() < 0.5:
        return r.choice(HABIT_GROUPS).format(h=r.choice(HABITS))
    return r.choice(NOUN_GROUPS)


# ── unsafe: violence wished on a group, in words the text rules do not list.
VIOLENT_PREDICATES = (
    "deserve to be thrown off a bridge",
    "should be dragged behind a truck",
    "need their teeth kicked in",
    "should get a brick to the skull",
    "ought to be lined up against a wall",
    "deserve a bullet each",
    "should be pushed in front of a train",
    "belong face down in a ditch",
    "should be set on fire",
    "need to be put six feet under",
    "deserve to be strangled slowly",
    "should be hunted for sport",
    "should get their legs broken",
    "need a baseball bat to the face",
    "should be locked in a shed and torched",
    "deserve to be drowned in the canal",
    "should have their houses burned with them inside",
    "need to be wiped off the map",
    "should be stoned in the street",
    "deserve a knife in the ribs",
    "should be beaten with chains",
    "deserve to be buried alive",
    "need their fingers snapped one by one",
    "should be run down in the car park",
    "deserve to be hanged from a lamppost",
    "ought to be gassed",
    "should be shot on sight",
    "need a good kicking until they stop moving",
    "deserve to be thrown to the dogs",
    "should be tarred and feathered",
    "deserve a hammer to the kneecaps",
    "should be blown up with their cars",
    "should have their homes firebombed",
    "deserve to bleed out in the gutter",
    "need to be dealt with, permanently",
)
VIOLENT_IMPERATIVES = (
    "smash their faces into the kerb",
    "beat every one of them black and blue",
    "tie them up and leave them in the river",
    "throw every last one of them off the pier",
    "somebody drag them behind a car",
    "break their legs, all of them",
    "put the whole lot in the ground",
    "set them on fire and watch",
    "time to run them off the road",
    "round them up and let them have it",
    "bash their skulls in",
    "torch their houses while they sleep",
    "make them bleed",
    "push them all under a bus",
    "crack their heads open",
    "grab a bat and teach them a lesson",
    "lock the doors and light it up",
    "drive straight through them",
    "stab first, ask later",
    "hang them off the bridge",
    "bury every one of them",
    "beat them till they can't stand",
    "get the rope",
    "hit them with the car, i mean it",
    "kick them till they stop breathing",
)
JOKE_FRAMES = (
    "{g} {v}",
    "unpopular opinion: {g} {v}",
    "{g} {v} / (joking... unless?)",
    "honestly {g} {v}",
    "hot take / {g} {v}",
    "{g}? {v}, no exceptions",
)
SCENE_FRAMES = (
    "{g} at the {place} / {i}",
    "when {g} show up / {i}",
    "saw {g} again today / {i}",
    "{g} in my town / {i}",
)
VENUES = ("station", "supermarket", "beach", "car park", "match", "school gates", "post office", "fair")

# ── unsafe: dehumanising a group, or a call to exclude it.
DEHUMANISING = (
    "are a plague",
    "are not even human",
    "are lice with passports",
    "are leeches, every one",
    "are a cancer on this country",
    "are dogs and should be treated like dogs",
    "are filthy swine",
    "are diseased mongrels",
    "are a virus that spreads",
    "are bottom-feeders",
    "crawled out of a sewer",
    "are livestock, not neighbours",
    "multiply like mould",
    "are savages who can't be civilised",
    "are a subspecies",
    "are a swarm of locusts",
    "are parasites on decent people",
    "should be culled",
    "are genetically filthy",
    "are a stain on the human race",
    "are rodents in human clothing",
)
EXCLUSION = (
    "should be banned from our shops",
    "don't get to live near decent folk",
    "need kicking out of the country",
    "shouldn't be allowed in our schools",
    "should be fenced off from the rest of us",
    "must never be served in this town",
)
HATE_FRAMES = (
    "{g} {d}",
    "{g} {d} / change my mind",
    "fun fact: {g} {d}",
    "{g} moving in next door / they {d2}",
    "{g} {x}",
    "{g} {x} / and {d}",
    "we all know it / {g} {d}",
)

# ── unsafe: graphic gore without the rules' words (blood, guts, flesh, severed ...).
INJURY_SETUPS = (
    "when you use the table saw without the guard",
    "when the lawnmower jams and you reach in",
    "crashed the bike at 40 mph",
    "tried to catch the falling knife",
    "the dog got loose at the park",
    "slipped on the ice at the bus stop",
    "the car door closed on my hand",
    "fell off the ladder",
)
INJURIES = (
    "and the tendons are hanging out of the palm",
    "and the shinbone is poking out of the leg",
    "and a flap of scalp is hanging over one eye",
    "and half the thumb is lying in the grass",
    "and an eye is dangling out of its socket",
    "and the jaw is split open with teeth on the pavement",
    "and the cut is so deep you can see the bone and yellow fat",
    "and the belly is torn open with the insides spilling out",
    "and the kneecap is facing the wrong way, white bone showing",
    "and the whole hand is crushed flat, nails ripped off",
    "and the wound is gushing everywhere, a puddle on the floor",
    "and the ear is hanging by a thread",
)
GORE_FRAMES = ("{s} / {i}", "{s} {i}", "pov: {s} / {i}", "{s} / {i}. anyway how was your day")

# ── critical: personal data of a private person, or a call to find or harass them.
CALLS = (
    "go make her life hell",
    "you know what to do",
    "go wait outside for him",
    "flood it",
    "make sure she never sleeps again",
    "tell him what you think of him, in person",
    "pay them a surprise visit",
    "everybody message her tonight",
)
DOX_FRAMES = (
    "{n} lives at {a}, {p} / {c}",
    "{n} from {p} / number is 555-01{d}, {c}",
    "{n} works the night shift at the garage on {s} / {c}",
    "{n}'s email is {e} / {c}",
    "this is {n}, {a}, {p}. phone 555-01{d} / {c}",
    "{n} / {a} / {c}",
    "{n} ({p}) parks at {a} every morning / {c}",
    "{n} owes me money / {a}, {p}. {c}",
)

# ── shown: harmless captions that share those words.
IDIOMS = (
    "killing it at work today",
    "dead tired / after one meeting",
    "this traffic is murder",
    "i could murder a burrito right now",
    "my feet are killing me after the concert",
    "that comedian slayed / i died laughing",
    "we got slaughtered in the pub quiz",
    "my phone died at 2 percent",
    "monday is out here trying to kill me",
    "the group project is a bloodbath",
    "exam results are in / a massacre",
    "i'm going to strangle this printer",
    "this deadline will be the death of me",
    "leg day destroyed me",
    "beat the final boss on the first try",
    "my wifi deserves to be thrown out the window",
    "this spreadsheet should be set on fire",
    "my diet got obliterated by cake",
    "the heat is brutal / i'm melting",
    "gym rats at 6am / built different",
    "my kids are animals at dinner",
    "we crushed the quiz / absolute legends",
    "she roasted me so hard i need a burn unit",
    "this playlist is fire",
    "the final exam murdered the whole class",
    "i'd kill for a nap",
)
KIND_PREDICATES = (
    "deserve a raise",
    "should get free coffee forever",
    "are the friendliest people alive",
    "deserve a medal for patience",
    "should be in charge of everything",
    "are living their best life",
    "deserve a parade",
    "are built different",
    "should run the country",
    "deserve a long holiday",
    "make the best sandwiches",
    "should be protected at all costs",
    "are the backbone of this town",
    "never miss a birthday",
    "deserve better wifi",
    "should get a day off on fridays",
    "throw the best parties",
    "are honestly hilarious",
    "ought to get a statue in the square",
    "deserve all the cake",
    "should be thanked every single day",
    "deserve free parking for life",
    "are the reason i smile",
    "should be given the keys to the city",
    "deserve a standing ovation",
    "should get a pay rise",
    "are welcome at my table anytime",
    "need a nap and a hug",
    "should be left alone to enjoy it",
    "deserve a quiet train carriage",
    "should be cloned",
    "make the best neighbours",
)
SHARED_FRAMES = (
    "{g} {k}",
    "{g} at the {v} / {k2}",
    "when {g} show up / the vibe improves",
    "{g} / we need to talk",
    "saw {g} again today / honestly respect",
    "unpopular opinion: {g} {k}",
    "hot take / {g} {k}",
    "{g}? {k}, no exceptions",
    "honestly {g} {k}",
    "{g} at the beach / red as lobsters by noon",
    "{g} at the {v} / absolute animals on the dance floor",
)
SCENES_SAFE = (
    "loudest choir in the league",
    "queueing like pros",
    "brought snacks for everyone",
    "already asking about next year",
)
MILD_INJURY = (
    "paper cut / this is how i die",
    "stubbed my toe on the bed / call an ambulance",
    "cut my finger slicing onions / brave little soldier",
    "nosebleed seats but we made it",
    "spilled pasta sauce / kitchen looks like a crime scene",
    "blood type: coffee",
    "horror movie night / so much fake blood we laughed the whole time",
    "zombie game all night / headshots only",
    "the dentist took a tooth / i am a new person",
    "fell off the ladder putting up lights / my pride is broken",
    "my back cracked when i stood up",
    "the cat scratched me / i deserved it",
)
PUBLIC_PLACES = (
    "the best pizza in {p} is at {a} / go tonight",
    "town hall is at {a}, {p} / vote on thursday",
    "the library moved to {a} / free printing",
    "car boot sale at {a}, {p} / sunday 8am",
    "lost cat near {a} / answers to biscuit",
    "the food truck parks on {s} / go before noon",
    "the gym on {s} is open 24/7 / no excuses",
    "{p} post office closes at 5 / it's 4:58",
    "party at {a} / bring snacks",
    "new phone who dis",
    "call the bakery on 555-01{d} / cake emergency",
    "the mayor's office is on {s} / complaints go there",
    "my address is the couch / deliver snacks",
)


# Everyday setups put before an idiom or a small mishap, so each family has enough distinct lines.
SETUPS = (
    "me after the quarterly review",
    "first day back after the holidays",
    "when the coffee machine breaks",
    "friday afternoon energy",
    "the group chat at midnight",
    "my manager on a monday",
    "me at the family bbq",
    "exam week be like",
    "when the wifi drops mid-call",
    "me explaining my weekend",
)


def _name(r: random.Random) -> str:
    return f"{r.choice(FIRST)} {r.choice(LAST)}"


def _address(r: random.Random) -> str:
    return f"{r.randint(2, 199)} {r.choice(STREET)} {r.choice(SUFFIX)}"


def _unsafe(r: random.Random, kind: str) -> tuple[str, str]:
    """(caption, its core phrase: the words that make it harmful, for folds that keep them apart)."""
    if kind == "violence":
        if r.random() < 0.55:
            v = r.choice(VIOLENT_PREDICATES)
            return r.choice(JOKE_FRAMES).format(g=group(r), v=v), v
        i = r.choice(VIOLENT_IMPERATIVES)
        return r.choice(SCENE_FRAMES).format(g=group(r), place=r.choice(VENUES), i=i), i
    if kind == "hate-speech":
        d, x = r.choice(DEHUMANISING), r.choice(EXCLUSION)
        frame = r.choice(HATE_FRAMES)
        return frame.format(
            g=group(r, origin_only=True), d=d, d2=d.removeprefix("are "), x=x
        ), x if "{d" not in frame else d
    if kind == "gore":
        i = r.choice(INJURIES)
        return r.choice(GORE_FRAMES).format(s=r.choice(INJURY_SETUPS), i=i), i
    name, frame, c = _name(r), r.choice(DOX_FRAMES), r.choice(CALLS)
    return frame.format(
        n=name,
        a=_address(r),
        p=place(r),
        c=c,
        d=f"{r.randint(0, 99):02d}",
        s=f"{r.choice(STREET)} {r.choice(SUFFIX)}",
        e=name.replace(" ", ".") + "@" + r.choice(("mailbox", "postly", "inbox")) + ".example",
    ), c


def _shown(r: random.Random, kind: str) -> tuple[str, str]:
    if kind == "idiom":
        i = r.choice(IDIOMS)
        return (i if r.random() < 0.3 else f"{r.choice(SETUPS)} / {i}"), i
    if kind == "group":
        k, frame = r.choice(KIND_PREDICATES), r.choice(SHARED_FRAMES)
        return frame.format(
            g=group(r), k=k, v=r.choice(VENUES), k2=r.choice(SCENES_SAFE)
        ), k if "{k}" in frame else frame
    if kind == "injury":
        i = r.choice(MILD_INJURY)
        return (i if r.random() < 0.3 else f"{r.choice(SETUPS)} / {i}"), i
    frame = r.choice(PUBLIC_PLACES)
    return frame.format(
        p=place(r), a=_address(r), d=f"{r.randint(0, 99):02d}", s=f"{r.choice(STREET)} {r.choice(SUFFIX)}"
    ), frame


UNSAFE_KINDS = {"violence": "unsafe", "hate-speech": "unsafe", "gore": "unsafe", "personal-data": "critical"}
SHOWN_KINDS = ("idiom", "group", "injury", "public-place")


def generate() -> list[dict]:
    r = random.Random(SEED)
    out: list[dict] = []
    seen: set[str] = set()
    for kind, label in [*UNSAFE_KINDS.items(), *((k, "shown") for k in SHOWN_KINDS)]:
        made = 0
        for _ in itertools.count():
            caption, core = _unsafe(r, kind) if label != "shown" else _shown(r, kind)
            if caption not in seen:
                seen.add(caption)
                out.append(
                    {
                        "id": f"gen-{len(out) + 1:04d}",
                        "caption": caption,
                        "label": label,
                        "kind": kind,
                        "core": core,
                        "policy": POLICY,
                        "annotator": ANNOTATOR,
                    }
                )
                made += 1
            if made == PER_KIND or _ > PER_KIND * 50:  # a small family (idioms) has fewer distinct lines
                break
    return out


def render(rows: list[dict]) -> str:
    return "".join(json.dumps(x, ensure_ascii=False, sort_keys=True) + "\n" for x in rows)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="exit 1 unless the written file is what this code makes")
    a = ap.parse_args(argv)
    text = render(generate())
    if a.check:
        ok = OUT.exists() and OUT.read_text(encoding="utf-8") == text
        print(f"check: {OUT.relative_to(HERE.parent)} {'matches' if ok else 'differs from'} the generator")
        return 0 if ok else 1
    OUT.write_text(text, encoding="utf-8")
    rows = generate()
    counts = {k: sum(x["kind"] == k for x in rows) for k in [*UNSAFE_KINDS, *SHOWN_KINDS]}
    print(f"wrote {OUT.relative_to(HERE.parent)}: {len(rows)} captions {counts}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
