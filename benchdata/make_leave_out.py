"""Leave-out no-match queries for calibrating and checking "no match" (benchmark v1, dev material only).

A dev template group or a dev named person, franchise or town is left out of the library (its memes
pruned from a copy, as if never added: `benchdata/experiments/leave_out_report.py`), and its own names become
queries the way people type them: the template's name and aliases, with and without "meme", a
character's or person's name with "meme" or "pic", and a line of its captions (a catchphrase). In
the library without those memes the right answer is "no match"; every other query stays answerable.

Every query is audited by the same code against every servable item left in the library (both
pools; reserve items are counted, never named): it is kept only when no remaining item holds all of
its content words in any canonical field, and a one-word query only when no remaining item holds the
word in a naming field (title, template name or aliases, drawing title, entities). Units are dealt
into FOLDS folds by a seeded shuffle: a fold's units are left out together, and "held out by
template" means fitting on the other folds' units.

    python3 benchdata/make_leave_out.py            # writes v1/leave-out.jsonl
    python3 benchdata/make_leave_out.py --check    # a fresh build equals the committed file; exit 1 if not
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_corpus as mc  # noqa: E402
import make_dev_v2 as m2  # noqa: E402

OUT = m2.V1 / "leave-out.jsonl"
SEED = 35
FOLDS = 5
PER_UNIT = 3  # queries drawn per left-out unit (seeded), from its candidate forms
NAMING = ("title", "template", "entities")
ENTITY_KINDS = ("person", "franchise", "place")  # characters leave with their template group


def units(c: m2.Corpus) -> list[dict]:
    """Dev template groups (with their characters) and dev people, franchises and towns: each a set
    of recipe lines to leave out and the names that identify it."""
    out = []
    kinds = {k.lower(): v for k, v in c.info["entities"].items()}
    for key, t in sorted(c.info["templates"].items()):
        if t["pool"] != "dev":
            continue
        ids = sorted(ln["id"] for ln in c.lines if c.src(ln)["group"] == key)
        chars = sorted(
            {
                e
                for ln in c.lines
                if ln["id"] in ids
                for e in c.src(ln)["truth"]["entities"]
                if kinds.get(e.lower(), {}).get("template") == key
            }
        )
        caps = sorted({cap for i in ids for cap in c.src(c.by_id[i])["captions"]})
        aliases = [a for a in t["aliases"] if a.lower() != t["_subject"].lower()]
        out.append(
            {"kind": "group", "key": key, "ids": ids, "names": [t["name"], *aliases], "people": chars, "captions": caps}
        )
    for name, e in sorted(c.info["entities"].items()):
        if e["pool"] != "dev" or e["kind"] not in ENTITY_KINDS:
            continue
        ids = sorted(ln["id"] for ln in c.lines if name in c.src(ln)["truth"]["entities"])
        # a person whose memes sit in a reserve template group is reserve material there: not used
        if ids and all(c.pool(c.by_id[i]) == "dev" for i in ids):
            caps = sorted({cap for i in ids for cap in c.src(c.by_id[i])["captions"] if name.lower() in cap.lower()})
            out.append({"kind": "entity", "key": name, "ids": ids, "names": [], "people": [name], "captions": caps})
    return out


def catchphrase(caption: str, rng: random.Random) -> str | None:
    """Five to seven words of a caption, as a person remembers a line (one panel of a two-line meme)."""
    words = re.findall(r"[a-z0-9']+", caption.lower())
    if len(words) < 4:
        return None
    n = min(len(words), rng.randint(5, 7))
    start = rng.randint(0, len(words) - n)
    return " ".join(words[start : start + n])


def forms(u: dict, rng: random.Random) -> list[tuple[str, str]]:
    """(form, query) candidates for one unit, in a fixed order before the seeded draw."""
    out = []
    for n in u["names"]:
        low = n.lower()
        out.append(("name" if "meme" not in low else "name-meme", low))
        if "meme" not in low:
            out.append(("name-meme", f"{low} meme"))
    for p in u["people"]:
        out += [("person", p.lower()), ("person-meme", f"{p.lower()} {rng.choice(['meme', 'pic', 'memes'])}")]
    for cap in u["captions"][:4]:
        line = catchphrase(cap, rng)
        if line:
            out.append(("catchphrase", line))
    return list(dict.fromkeys(out))


def audit(c: m2.Corpus, query: str, left_out: set[str]) -> tuple[bool, str]:
    """Whether no remaining servable item holds the query, and what the remaining items share."""
    qs = mc.content_stems(query) - m2.FILLER
    if not qs:
        return False, "no content words"
    full = naming = 0
    shared: dict[str, int] = {}
    for ln in c.servable:
        if ln["id"] in left_out:
            continue
        f = c._fields[ln["id"]]
        hit = {w for w in qs if any(w in f[k] for k in m2.FIELDS)}
        for w in hit:
            shared[w] = shared.get(w, 0) + 1
        full += hit == qs
        naming += len(qs) == 1 and any(w in f[k] for w in qs for k in NAMING)
    ok = full == 0 and naming == 0
    return ok, (
        f"content words {sorted(qs)} (stemmed) against caption, title, template name and aliases, drawing "
        f"title, entities, tags, description and creator of every remaining servable item (both pools): "
        f"{full} hold all"
        + (f", {naming} name the word" if len(qs) == 1 else "")
        + "; items sharing a word: "
        + (", ".join(f"{w!r} {n}" for w, n in sorted(shared.items())) or "none")
    )


def build(c: m2.Corpus) -> list[dict]:
    rng = random.Random(SEED)
    us = units(c)
    order = list(range(len(us)))
    rng.shuffle(order)
    fold = {i: n % FOLDS for n, i in enumerate(order)}
    rows = []
    for i, u in enumerate(us):
        left = set(u["ids"])
        cands = forms(u, rng)
        rng.shuffle(cands)
        kept = 0
        for form, query in cands:
            if kept >= PER_UNIT:
                break
            ok, method = audit(c, query, left)
            if not ok:
                continue
            kept += 1
            rows.append(
                {
                    "query": query,
                    "form": form,
                    "unit": {"kind": u["kind"], "key": u["key"]},
                    "fold": fold[i],
                    "leave_out": sorted(c.by_id[j]["out"]["file"] for j in u["ids"]),
                    "audit": {"method": method, "checked_by": "benchdata/make_leave_out.py"},
                }
            )
    rows.sort(key=lambda r: (r["fold"], r["unit"]["kind"], r["unit"]["key"], r["query"]))
    for n, r in enumerate(rows, 1):
        r["id"] = f"lo-{n:03d}"
    return [{"id": r.pop("id"), **r} for r in rows]


def dump(rows: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="a fresh build equals the committed file")
    args = ap.parse_args(argv)
    c = m2.Corpus()
    rows = build(c)
    reserve = [r for r in rows if any(c.pool(c.files[f]) != "dev" for f in r["leave_out"])]
    if reserve:
        print(f"{len(reserve)} queries leave out reserve material", file=sys.stderr)
        return 1
    text = dump(rows)
    if args.check:
        same = OUT.exists() and OUT.read_text(encoding="utf-8") == text
        print(f"{len(rows)} queries; committed file {'equal' if same else 'DIFFERS'}")
        return 0 if same else 1
    OUT.write_text(text, encoding="utf-8")
    kinds: dict[str, int] = {}
    for r in rows:
        kinds[r["form"]] = kinds.get(r["form"], 0) + 1
    print(
        f"{len(rows)} queries from {len({(r['unit']['kind'], r['unit']['key']) for r in rows})} units "
        f"-> {OUT}; forms {kinds}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
