#!/usr/bin/env python3
"""Deterministic builder of the development partition version 2 (provisional) of mmts-bench-v1.

    python3 benchdata/make_dev_v2.py            # writes benchdata/v1/dev-v2.jsonl, dev-v2.meta.json,
                                                # dev-v2-uses.json
    python3 benchdata/make_dev_v2.py --check    # validates the written files; exit 1 on any failure
    python3 benchdata/make_dev_v2.py --explain "shrek meme"   # audit helper: which corpus items share
                                                # a content word with a query, in which field

Dev v2 = every line of dev v1 (benchdata/v1/dev.jsonl, unchanged, ids dev-001..dev-110) followed by the
hand-written queries of benchdata/v1/dev-v2-source.jsonl (ids dev-111...). The source holds, per line:
`family`, `slice`, `query`, `subsets`, `kind` (what the line is for: `no-match` kinds `famous-meme`,
`person`, `character`, `quote`, `topic`; answerable kinds `style` — typed the way the no-match queries
are — and `visual-rewrite`), and either `rule` (+ optional `extra` partial-credit rules, as in
make_corpus.DEV_QUERIES) or, for a no-match line, `incidental`: {stem: why an item sharing that
word is still not relevant}. Grades, exact targets, withheld files and audits are computed here from
the recipe (benchdata/v1/corpus.jsonl), never typed by hand.

No-match audit (recorded in each line's `audit`): the query's content words (make_corpus.content_stems,
minus the words people add: meme, pic, gif, ...) are matched against the canonical fields of every
servable corpus item of both pools (caption text, title, template name, aliases, drawing dc:title,
entities, tags, description, creator). The line is accepted only if (a) no servable item contains all
of its content words, (b) every word that some servable item does contain is listed in `incidental`
with the reviewer's reason, and (c) it names no entity, template name or alias of either pool. The
method string records the counts per shared word and field (reserve items are counted, never named).

Nothing reads the clock or global randomness; the output is byte-identical on every run.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import make_corpus as mc  # noqa: E402  (benchdata helper module, not the app)

V1 = HERE / "v1"
SOURCE = V1 / "dev-v2-source.jsonl"
OUT = V1 / "dev-v2.jsonl"
META = V1 / "dev-v2.meta.json"
USES = V1 / "dev-v2-uses.json"
VERSION = "2.0.0-provisional"
AUDIT_DATE = "2026-11-30"
ANNOTATOR = mc.ANNOTATOR  # {"name": "mambo-bench-helper-v1", "kind": "model"}, as dev v1
# words people add to a query that ask for a meme and nothing else (grading guide: a meme matching
# only on such a word is grade 0); never counted as content words of a no-match query
FILLER = {"pic", "pics", "gif", "template", "meme", "memes", "lol", "lmao", "that", "one", "pls", "ur", "guy"}
NM_KINDS = {"famous-meme", "person", "character", "quote", "topic"}
ANS_KINDS = {"style", "visual-rewrite"}
SLICES = ("entity", "quote", "topic", "semantic", "visual", "noisy")
FIELDS = ("caption", "title", "template", "entities", "tags", "description", "creator")
# generic words a visual query may share with a reserve drawing without pointing at it
VISUAL_GENERIC = {
    "cartoon",
    "meme",
    "caption",
    "about",
    "big",
    "little",
    "small",
    "colour",
    "colourful",
    "white",
    "black",
    "red",
    "blue",
    "green",
    "yellow",
    "grey",
    "gold",
    "orange",
    "thing",
    "with",
}


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


class Corpus:
    def __init__(self):
        self.lines, self.info = mc.build_corpus()
        self.by_id = {ln["id"]: ln for ln in self.lines}
        self.files = {ln["out"]["file"]: ln for ln in self.lines}
        self.servable = [ln for ln in self.lines if mc.servable(ln)]
        self._fields = {ln["id"]: self.field_stems(ln) for ln in self.servable}
        ents, tpls = self.info["entities"], self.info["templates"].values()
        # names: entity names, template names and the invented aliases ("sneaky bacon", "x meme"); an
        # alias that is only the drawing's generic subject ("bacon", "ballpoint pen") is not a name
        self.names = {
            pool: sorted(
                {k.lower() for k, v in ents.items() if v["pool"] == pool}
                | {t["name"].lower() for t in tpls if t["pool"] == pool}
                | {
                    a.lower()
                    for t in tpls
                    if t["pool"] == pool
                    for a in t["aliases"]
                    if a.lower() != t["_subject"].lower()
                }
            )
            for pool in ("dev", "reserve")
        }
        # the drawings' generic subjects, for no-match queries (which must name no corpus picture either)
        self.subjects = sorted({t["_subject"].lower() for t in tpls})

    def src(self, ln: dict) -> dict:
        return self.by_id[ln["variant"]["of"]] if "variant" in ln else ln

    def field_stems(self, ln: dict) -> dict[str, set]:
        s = self.src(ln)
        t, m, tr = s.get("template") or {}, ln["meta"], s["truth"]
        text = {
            "caption": " ".join(s["captions"]),
            "title": m.get("title", ""),
            "template": " ".join(
                [t.get("name", ""), *t.get("aliases", []), t.get("dc_title", ""), m.get("template", "")]
            ),
            "entities": " ".join([*m.get("entities", []), *tr["entities"]]),
            "tags": " ".join(m.get("tags", [])),
            "description": m.get("description", ""),
            "creator": m.get("creator", ""),
        }
        return {k: mc.content_stems(v) for k, v in text.items()}

    def pool(self, ln: dict) -> str:
        return mc.pool_of(ln, self.by_id)

    def named(self, text: str, pool: str) -> list[str]:
        low = text.lower()
        return [n for n in self.names[pool] if re.search(rf"(?<![a-z0-9]){re.escape(n)}(?![a-z0-9])", low)]

    def shared(self, query: str) -> tuple[set, dict, list]:
        """(content stems, {stem: Counter(field -> items)}, [ids of servable items holding every stem])."""
        qs = mc.content_stems(query) - FILLER
        per: dict[str, Counter] = {}
        full = []
        for ln in self.servable:
            f = self._fields[ln["id"]]
            hit = set()
            for w in qs:
                for k in FIELDS:
                    if w in f[k]:
                        per.setdefault(w, Counter())[k] += 1
                        hit.add(w)
            if qs and hit == qs:
                full.append(ln["id"])
        return qs, per, full


# ----------------------------------------------------------------------------- build


def answerable_row(c: Corpus, n: int, q: dict) -> dict:
    lines, by_id = c.lines, c.by_id
    rule = q["rule"]
    ids = mc.select(rule, lines, by_id)
    grades: dict[str, int] = {}
    for r, g in q.get("extra", []):
        for i in mc.select(r, lines, by_id):
            grades[i] = max(grades.get(i, 0), g)
    for i in ids:
        grades[i] = 3
    rel = {by_id[i]["out"]["file"]: g for i, g in sorted(grades.items()) if mc.servable(by_id[i])}
    withheld = sorted(by_id[i]["out"]["file"] for i in grades if not mc.servable(by_id[i]))
    exact, exact_groups = [], []
    if q["slice"] in ("entity", "quote"):
        exact = sorted(by_id[i]["out"]["file"] for i in ids if mc.servable(by_id[i]))
        if rule[0] == "template":
            exact_groups = [rule[1]]
    return {
        "id": f"dev-{n:03d}",
        "family": q["family"],
        "slice": q["slice"],
        "query": q["query"],
        "relevant": rel,
        "exact": exact,
        "exact_groups": exact_groups,
        "subsets": sorted(q.get("subsets", [])),
        "ids": {by_id[i]["out"]["file"]: i for i in sorted(grades)},
        "withheld": withheld,
        "rule": rule,
        "annotator": ANNOTATOR,
        "judgement": {
            "status": "provisional",
            "grades": "0-3 (mmts-search-v1)",
            "annotator": ANNOTATOR,
            "method": "dev v2 (" + q["kind"] + "): grades derived from the recipe's ground truth for the "
            "rule shown (3 = satisfies the rule, extra rules give the partial grade shown); "
            "unlisted items are grade 0; to be replaced by pooled blind judging",
        },
    }


def audit_method(c: Corpus, q: dict) -> str:
    qs, per, full = c.shared(q["query"])
    words = ", ".join(f"{w!r}: " + " ".join(f"{k} {n}" for k, n in sorted(per[w].items())) for w in sorted(per))
    inc = "; ".join(f"{w!r}: {q.get('incidental', {}).get(w, 'NOT REVIEWED')}" for w in sorted(per))
    return (
        f"dev v2 {q['kind']} no-match, audited against every servable item of the corpus (both pools): content "
        f"words {sorted(qs)} (stemmed; the added words {sorted(FILLER)} ignored) checked against caption/OCR "
        "text, title, template name and aliases, drawing dc:title, entities, tags, description and creator; "
        f"no item holds all of them ({len(full)}); the query names no entity, template or alias of either pool; "
        + (
            f"words shared with some items (field: items) — {words}; each reviewed as incidental: {inc}"
            if per
            else "no item shares any content word"
        )
        + "; no servable item is grade 2 or better"
    )


def build(c: Corpus, cv: str) -> tuple[list[dict], dict, dict]:
    v1 = read_jsonl(V1 / "dev.jsonl")
    src = read_jsonl(SOURCE)
    rows = list(v1)
    n = len(v1)
    for q in src:
        n += 1
        if q["slice"] == "no-match":
            rows.append(
                {
                    "id": f"dev-{n:03d}",
                    "family": q["family"],
                    "slice": "no-match",
                    "query": q["query"],
                    "relevant": {},
                    "exact": [],
                    "exact_groups": [],
                    "subsets": sorted(q.get("subsets", [])),
                    "ids": {},
                    "withheld": [],
                    "annotator": ANNOTATOR,
                    "audit": {
                        "corpus_version": cv,
                        "method": audit_method(c, q),
                        "checked_by": ANNOTATOR,
                        "date": AUDIT_DATE,
                    },
                }
            )
        else:
            rows.append(answerable_row(c, n, q))
    v1meta = json.loads((V1 / "dev.meta.json").read_text(encoding="utf-8"))
    kinds = Counter(q["kind"] for q in src)
    meta = dict(v1meta) | {
        "version": VERSION,
        "queries": len(rows),
        "corpus_manifest_sha256": cv,
        "corpus_recipe_sha256": file_sha256(V1 / "corpus.jsonl"),
        "derived_from": {
            "version": v1meta["version"],
            "file": "benchdata/v1/dev.jsonl",
            "sha256": file_sha256(V1 / "dev.jsonl"),
            "queries": len(v1),
        },
        "source": {
            "file": "benchdata/v1/dev-v2-source.jsonl",
            "sha256": file_sha256(SOURCE),
            "builder": "benchdata/make_dev_v2.py",
            "added": dict(sorted(kinds.items())),
        },
        "slices": dict(sorted(Counter(r["slice"] for r in rows).items())),
    }
    uses_v1 = json.loads((V1 / "dev-uses.json").read_text(encoding="utf-8"))
    groups, ents = set(uses_v1["template_groups"]), set(uses_v1["entities"])
    named_e = set(uses_v1["named_in_queries"]["entities"])
    named_g = set(uses_v1["named_in_queries"]["template_groups"])
    for r in rows[len(v1) :]:
        for i in r["ids"].values():
            s = c.src(c.by_id[i])
            groups.add(s["group"])
            ents.update(s["truth"]["entities"])
        if "rule" in r:
            e, g = mc.rule_names(r["rule"])
            named_e |= e
            named_g |= g
    uses = {
        "benchmark": "mmts-bench-v1",
        "partition": "dev",
        "version": VERSION,
        "corpus_manifest_sha256": cv,
        "query_families": sorted({r["family"] for r in rows}),
        "template_groups": sorted(groups | named_g),
        "entities": sorted(ents | named_e),
        "named_in_queries": {"entities": sorted(named_e), "template_groups": sorted(named_g)},
        "note": "every template group / entity of judged items or named in a query of dev v2; all are in pool 'dev'",
    }
    return rows, meta, uses


def write(c: Corpus) -> None:
    cv = file_sha256(V1 / "manifest.sha256")
    rows, meta, uses = build(c, cv)
    mc.write_jsonl(OUT, rows)
    META.write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    USES.write_text(json.dumps(uses, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {OUT.name} ({len(rows)} queries), {META.name}, {USES.name}")


# ----------------------------------------------------------------------------- check


def check(c: Corpus) -> int:
    errs: list[str] = []
    cv = file_sha256(V1 / "manifest.sha256")
    v1 = read_jsonl(V1 / "dev.jsonl")
    src = read_jsonl(SOURCE)
    rows = read_jsonl(OUT)
    meta = json.loads(META.read_text(encoding="utf-8"))
    fresh, fmeta, fuses = build(c, cv)
    if rows != fresh:
        errs.append("dev-v2.jsonl differs from a fresh build (stale: run make_dev_v2.py)")
    if meta != fmeta:
        errs.append("dev-v2.meta.json differs from a fresh build")
    if json.loads(USES.read_text(encoding="utf-8")) != fuses:
        errs.append("dev-v2-uses.json differs from a fresh build")
    if meta.get("corpus_manifest_sha256") != cv:
        errs.append("dev-v2.meta.json names another corpus manifest")
    if rows[: len(v1)] != v1:
        errs.append("dev v1 lines are not carried over unchanged")
    new = fresh[len(v1) :]
    # ids, families, queries
    if len({r["id"] for r in fresh}) != len(fresh):
        errs.append("duplicate ids")
    seen = {mc.norm_text(r["query"]) for r in v1}
    for r in new:
        if mc.norm_text(r["query"]) in seen:
            errs.append(f"{r['id']} {r['query']!r}: duplicate query text")
        seen.add(mc.norm_text(r["query"]))
    v1fam = {r["family"]: r["slice"] for r in v1}
    for q, r in zip(src, new, strict=True):
        where = f"{r['id']} {r['query']!r}"
        if not r["family"].startswith("dev-fam-"):
            errs.append(f"{where}: family outside the dev namespace")
        if q["slice"] == "no-match":
            if q.get("kind") not in NM_KINDS:
                errs.append(f"{where}: no-match kind {q.get('kind')!r}")
            if r["family"] in v1fam or sum(x["family"] == r["family"] for x in fresh) != 1:
                errs.append(f"{where}: a no-match family must be its own")
        else:
            if q.get("kind") not in ANS_KINDS:
                errs.append(f"{where}: answerable kind {q.get('kind')!r}")
            if r["slice"] not in SLICES:
                errs.append(f"{where}: slice {r['slice']!r}")
            if r["family"] in v1fam and v1fam[r["family"]] == "no-match":
                errs.append(f"{where}: joins a no-match family")
    # answerable lines: grades, exact targets, pools, lexical rules
    for r in new:
        if r["slice"] == "no-match":
            continue
        where = f"{r['id']} {r['query']!r}"
        if not any(g >= 2 for g in r["relevant"].values()):
            errs.append(f"{where}: no grade>=2 item")
        if r["slice"] in ("entity", "quote") and not (r["exact"] or r["exact_groups"]):
            errs.append(f"{where}: no exact targets")
        for f in r["exact"]:
            if f not in c.files or f not in r["relevant"]:
                errs.append(f"{where}: exact target {f} is not a graded corpus file")
        for g in r["exact_groups"]:
            if g not in c.info["templates"] or c.info["templates"][g]["pool"] != "dev":
                errs.append(f"{where}: exact group {g} is not a dev template group")
        for f in list(r["relevant"]) + r["withheld"]:
            ln = c.files.get(f)
            if ln is None:
                errs.append(f"{where}: {f} is not in the corpus")
                continue
            if c.pool(ln) != "dev":
                errs.append(f"{where}: judged item {f} is not in the dev pool")
            if f in r["relevant"] and not mc.servable(ln):
                errs.append(f"{where}: unservable item {f} graded")
        e, g = mc.rule_names(r["rule"])
        for x in e:
            ent = next((v for k, v in c.info["entities"].items() if k.lower() == x), None)
            if not ent or ent["pool"] != "dev":
                errs.append(f"{where}: entity {x} is not dev")
        for x in g:
            if c.info["templates"][x]["pool"] != "dev":
                errs.append(f"{where}: template {x} is not dev")
        if r["slice"] == "semantic":
            qs = mc.content_stems(r["query"]) - FILLER
            for f, gr in r["relevant"].items():
                ov = qs & mc.content_stems(mc.canonical(c.src(c.files[f]))) if gr >= 2 else set()
                if ov:
                    errs.append(f"{where}: semantic query shares {sorted(ov)} with {f}")
        if r["slice"] == "visual":
            qs = mc.content_stems(r["query"]) - {mc.stem(w) for w in VISUAL_GENERIC}
            for t in c.info["templates"].values():
                ov = qs & mc.content_stems(t["_subject"] + " " + t["dc_title"])
                if t["pool"] == "reserve" and ov:
                    errs.append(f"{where}: a reserve drawing shares {sorted(ov)}")
    # every query (old and new): no reserve name
    for r in fresh:
        hit = c.named(r["query"], "reserve")
        if hit:
            errs.append(f"{r['id']} {r['query']!r}: names {len(hit)} reserve entity/template name(s)")
    # no-match audits
    for q, r in zip(src, new, strict=True):
        if r["slice"] != "no-match":
            continue
        where = f"{r['id']} {r['query']!r}"
        a = r.get("audit", {})
        if not all(k in a for k in ("corpus_version", "method", "checked_by", "date")) or a["corpus_version"] != cv:
            errs.append(f"{where}: audit record incomplete or stale")
        if r["relevant"] or r["exact"] or r["exact_groups"] or r["withheld"]:
            errs.append(f"{where}: no-match line with labels")
        qs, per, full = c.shared(r["query"])
        if not qs:
            errs.append(f"{where}: no content word to audit")
        if full:
            errs.append(
                f"{where}: {len(full)} servable item(s) hold every content word, e.g. "
                f"{[i for i in full if c.pool(c.by_id[i]) == 'dev'][:3] or '(reserve only)'}"
            )
        inc = q.get("incidental", {})
        for w in sorted(set(per) - set(inc)):
            errs.append(f"{where}: shares {w!r} with {sum(per[w].values())} field hits {dict(per[w])}: not reviewed")
        for w in sorted(set(inc) - set(per)):
            errs.append(f"{where}: incidental note for {w!r}, which no item shares (stale note)")
        low = r["query"].lower()
        hit = c.named(r["query"], "dev") + [
            x for x in c.subjects if re.search(rf"(?<![a-z0-9]){re.escape(x)}(?![a-z0-9])", low)
        ]
        if hit:
            errs.append(f"{where}: no-match query names corpus entity/template {hit}")
    # counts
    slices = Counter(r["slice"] for r in fresh)
    nm_new = [r for r in new if r["slice"] == "no-match"]
    style = [q for q in src if q.get("kind") == "style"]
    rewrites = [q for q in src if q.get("kind") == "visual-rewrite"]
    if len(nm_new) < 45:
        errs.append(f"only {len(nm_new)} new no-match queries (need 45)")
    if len(style) < 20:
        errs.append(f"only {len(style)} new answerable style queries (need 20)")
    old_visual = {r["family"] for r in v1 if r["slice"] == "visual"}
    missing = old_visual - {q["family"] for q in rewrites}
    if missing:
        errs.append(f"visual families without a rewrite: {sorted(missing)}")
    for s in SLICES:
        if slices[s] < 15:
            errs.append(f"slice {s}: {slices[s]} queries")
    for e in errs:
        print("FAIL", e)
    ans = [r for r in fresh if r["slice"] != "no-match"]
    nm = [r for r in fresh if r["slice"] == "no-match"]
    print(
        f"check: {len(errs)} problem(s); {len(fresh)} queries ({len(new)} new: {len(nm_new)} no-match, "
        f"{len(style)} style, {len(rewrites)} visual rewrites); slices {dict(sorted(slices.items()))}; "
        f"new by slice {dict(sorted(Counter(r['slice'] for r in new).items()))}; "
        f"safety {sum('safety' in r['subsets'] for r in ans)}+{sum('safety' in r['subsets'] for r in nm)}; "
        f"multi-cue {sum('multi-cue' in r['subsets'] for r in ans)}"
    )
    return 1 if errs else 0


def explain(c: Corpus, queries: list[str]) -> None:
    for q in queries:
        qs, per, full = c.shared(q)
        print(f"{q!r}: content words {sorted(qs)}")
        for w in sorted(per):
            print(f"  {w!r}: {dict(per[w])}")
        print(f"  items holding every word: {len(full)} (dev: {[i for i in full if c.pool(c.by_id[i]) == 'dev'][:8]})")
        print(f"  names dev {c.named(q, 'dev')}; names reserve: {bool(c.named(q, 'reserve'))}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="validate the written files; exit 1 on failure")
    ap.add_argument("--explain", nargs="+", metavar="QUERY", help="print what a query shares with the corpus")
    args = ap.parse_args(argv)
    c = Corpus()
    if args.explain:
        explain(c, args.explain)
        return 0
    if args.check:
        return check(c)
    write(c)
    return 0


if __name__ == "__main__":
    sys.exit(main())
