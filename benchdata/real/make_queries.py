#!/usr/bin/env python3
"""The real-style development partition: queries written by the team, grades derived from the snapshot.

    python benchdata/real/make_queries.py SNAPSHOT          # writes dev.jsonl + dev.meta.json
    python benchdata/real/make_queries.py SNAPSHOT --check  # a fresh build equals the committed files; exit 1 if not

`queries.src.jsonl` holds what the team wrote: each query string, its family, slice, subsets and
the rule its provisional grades come from. The grades themselves need the captions, which stay in the
snapshot, so they are derived here at run time and only file paths and grades are written:

    ["template", KEY]           3 for every meme of the template (the picture is the one named)
    ["templates", [KEY, ...]]   3 for every meme of these templates (visual descriptions)
    ["quote", "words"]          3 when the caption holds the words in this order (case and punctuation aside)
    ["words", [TERM, ...]]      3 when the caption holds any term (a word, "word*" a prefix, or "two words")
    ["and", RULE, RULE]         3 when both hold

Copies and near copies take their meme's grade; a stacked two-meme picture takes 2 when one of its
memes holds the rule. Semantic queries must share no content word with what they are graded on: a
matched meme whose caption or template name holds one of the query's words is dropped from that
query's grades. Memes classed unsafe in `safety.jsonl` are withheld, never graded. No-match lines are
audited by audit.py against the whole dev split.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import audit  # noqa: E402
from build import LAYOUTS, MANIFEST, SEED, TRUTH, choose  # noqa: E402
from snapshot import HERE, SnapshotError, load_pins, open_snapshot, sha256_hex, words  # noqa: E402

SOURCE = HERE / "queries.src.jsonl"
SAFETY = HERE / "safety.jsonl"
OUT = HERE / "dev.jsonl"
META = HERE / "dev.meta.json"
ANNOTATOR = {"name": "mambo-real-helper-v1", "kind": "model"}
AUDIT_DATE = "2026-12-06"
SLICES = ("entity", "quote", "topic", "semantic", "visual", "noisy")


def term_re(term: str) -> re.Pattern[str]:
    parts = []
    for w in term.lower().split():
        w = w.replace("'", "")
        parts.append(re.escape(w[:-1]) + r"[a-z0-9]*" if w.endswith("*") else re.escape(w))
    return re.compile(r"(?<![a-z0-9])" + r" ".join(parts) + r"(?![a-z0-9])")


def holds(rule: list[Any], meme: dict[str, Any]) -> bool:
    kind = rule[0]
    if kind == "template":
        return meme["template"] == rule[1]
    if kind == "templates":
        return meme["template"] in rule[1]
    if kind == "quote":
        return term_re(" ".join(words(rule[1]))).search(meme["text"]) is not None
    if kind == "words":
        return any(term_re(t).search(meme["text"]) for t in rule[1])
    if kind == "and":
        return all(holds(r, meme) for r in rule[1:])
    raise ValueError(f"unknown rule {rule!r}")


def template_words(key: str) -> set[str]:
    return set(words(key.replace("-", " ")))


def build(snapshot_arg: str | None) -> tuple[str, str, list[str]]:
    """(dev.jsonl text, dev.meta.json text, report lines)."""
    snap = open_snapshot(snapshot_arg)
    pins = load_pins()
    blobs = {r: b for r in pins["snapshot"]["files"] if (b := snap.read(r)) is not None}
    chosen = choose(blobs, json.loads(LAYOUTS.read_text(encoding="utf-8")), pins.get("seed", SEED))
    truth = [json.loads(x) for x in TRUTH.read_text(encoding="utf-8").splitlines() if x]
    safety = {}
    if SAFETY.is_file():
        safety = {r["post"]: r["class"] for r in map(json.loads, SAFETY.read_text().splitlines()) if r}
    memes = {}
    for m in chosen:
        memes[m["post"]] = {"post": m["post"], "template": m["template"], "text": " ".join(words(" ".join(m["boxes"])))}
    files_of: dict[str, list[str]] = {}
    stacks = []
    for t in truth:
        if t["kind"] == "stack":
            stacks.append(t)
        else:
            files_of.setdefault(t["post"], []).append(t["file"])
    for fl in files_of.values():
        fl.sort(key=lambda f: (next(t for t in truth if t["file"] == f)["kind"] != "meme", f))
    manifest_sha = sha256_hex(MANIFEST.read_bytes())
    captions, names, n_captions = audit.load_corpus(snapshot_arg)
    src = [json.loads(x) for x in SOURCE.read_text(encoding="utf-8").splitlines() if x.strip()]
    out, report = [], []
    counts: Counter[str] = Counter()
    for n, q in enumerate(src, 1):
        line: dict[str, Any] = {
            "id": f"real-{n:03d}",
            "family": q["family"],
            "slice": q["slice"],
            "query": q["query"],
            "subsets": q.get("subsets", []),
        }
        if q["slice"] == "no-match":
            ok, why = audit.absent(q["query"], captions, names)
            if not ok:
                report.append(f"no-match FAILS audit: {q['query']!r} ({why})")
                continue
            line.update(
                relevant={},
                exact=[],
                ids={},
                withheld=[],
                rule=None,
                annotator=ANNOTATOR,
                judgement={
                    "status": "provisional",
                    "grades": "none (no-match)",
                    "annotator": ANNOTATOR,
                    "method": "audit.py",
                },
                audit={
                    "corpus_version": manifest_sha,
                    "method": audit.METHOD,
                    "checked_by": ANNOTATOR,
                    "date": AUDIT_DATE,
                    "snapshot": pins["snapshot"]["commit"],
                    "dev_captions": n_captions,
                },
            )
            out.append(line)
            counts["no-match"] += 1
            continue
        rule = q["rule"]
        qwords = set(audit.content_words(q["query"]))
        hit, withheld, dropped = [], [], 0
        for post, m in memes.items():
            if not holds(rule, m):
                continue
            if q["slice"] == "semantic" and qwords & (set(m["text"].split()) | template_words(m["template"])):
                dropped += 1
                continue
            (withheld if safety.get(post) in ("unsafe", "critical") else hit).append(post)
        relevant: dict[str, int] = {}
        ids: dict[str, str] = {}
        for post in hit:
            for f in files_of[post]:
                relevant[f] = 3
                ids[f] = post
        for s in stacks:
            if any(p in hit for p in s["posts"]) and not any(p in withheld for p in s["posts"]):
                relevant[s["file"]] = 2
                ids[s["file"]] = "+".join(s["posts"])
        held = []
        for post in withheld:
            for f in files_of[post]:
                held.append(f)
                ids[f] = post
        for s in stacks:
            if any(p in withheld for p in s["posts"]):
                held.append(s["file"])
                ids[s["file"]] = "+".join(s["posts"])
        if not relevant:
            report.append(f"{q['slice']} has no servable match: {q['query']!r} (withheld {len(withheld)})")
            continue
        if withheld and "safety" not in line["subsets"]:
            line["subsets"] = [*line["subsets"], "safety"]
        exact = sorted(f for f, g in relevant.items() if g == 3) if q["slice"] in ("entity", "quote") else []
        line.update(
            relevant=dict(sorted(relevant.items())),
            exact=exact,
            ids=dict(sorted(ids.items())),
            withheld=sorted(held),
            rule=rule,
            annotator=ANNOTATOR,
            judgement={
                "status": "provisional",
                "grades": "derived",
                "annotator": ANNOTATOR,
                "method": "rule over the snapshot's captions and template names (make_queries.py)",
            },
        )
        out.append(line)
        counts[q["slice"]] += 1
        report.append(
            f"{q['slice']:8} {len(hit):3d} memes {len(relevant):3d} files"
            f"{f' -{dropped} shared words' if dropped else ''}"
            f"{f' withheld {len(withheld)}' if withheld else ''}  {q['query']}"
        )
    text = "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in out)
    meta = {
        "benchmark": "mmts-bench-real",
        "version": "1.0.0-provisional",
        "partition": "dev",
        "status": "provisional",
        "corpus": "benchdata/real/truth.jsonl",
        "corpus_manifest_sha256": manifest_sha,
        "corpus_recipe_sha256": sha256_hex(TRUTH.read_bytes()),
        "safety_policy": "mambo-safety-v1",
        "score_version": "mmts-search-v1",
        "queries": len(out),
        "slices": dict(sorted(counts.items())),
        "judgements": {
            "status": "provisional",
            "annotators": [ANNOTATOR],
            "note": "grades derived from template names and caption matching, not yet judged by a person",
        },
        "paths": "relative to the built folder (benchdata/real/build.py SNAPSHOT OUT: the OUT folder)",
        "source": {
            "snapshot": "ImgFlip575K (schesa/ImgFlip575K_Dataset)",
            "commit": pins["snapshot"]["commit"],
            "split": "dev: first hex digit of SHA-256(post id) is 0-7",
        },
        "queries_source_sha256": sha256_hex(SOURCE.read_bytes()),
    }
    report.append("counts: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    return text, json.dumps(meta, indent=1, sort_keys=True) + "\n", report


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("snapshot", nargs="?")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("-v", "--verbose", action="store_true", help="print one line per query")
    a = ap.parse_args(argv)
    try:
        text, meta, report = build(a.snapshot)
    except SnapshotError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    for r in report:
        if a.verbose or not r.startswith(SLICES):
            print(r)
    if a.check:
        same = OUT.is_file() and OUT.read_text() == text and META.is_file() and META.read_text() == meta
        print("ok: dev.jsonl and dev.meta.json are up to date" if same else "dev.jsonl / dev.meta.json differ")
        return 0 if same else 1
    OUT.write_text(text, encoding="utf-8")
    META.write_text(meta, encoding="utf-8")
    print(f"wrote {OUT.name} and {META.name} ({dt.date.today().isoformat()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
