#!/usr/bin/env python3
"""Search by image measured: every near copy of a set searched by its own file against the library
without it (its own item left out of the ranking, as if the library did not hold it), in-process
through by_image.rank, as `mambo search --image` ranks.

    python benchdata/experiments/search_by_image.py v1 /tmp/v1-annotated.sqlite /work/v1/build
    python benchdata/experiments/search_by_image.py real /tmp/real.sqlite /work/real-out
    python benchdata/experiments/search_by_image.py v1 - /work/v1/build --make-subset /tmp/v1sub

Reports, per library: the original at rank 1 (target >= 95 %), and its rank and reason otherwise;
template-group recall@10 (the query's group members the library may show, itself left out, found
in the top 10; groups hold up to 11 memes); and, for the "similar caption" floor
(by_image.SIMILAR_CAPTION_MIN), every similar-caption candidate's cosine similarity against whether
it shares the query's subtopic (v1) or template group, in two folds held out by template group, on
development templates only (v1's `pool: dev`; the real-style set is development material whole).
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import shutil
import time
from pathlib import Path

from mambomeme.lab.product import DB, REASONS, SIMILAR_CAPTION_MIN, Searcher, get_embedder, probe_file, rank

REPO = Path(__file__).resolve().parents[2]
FLOORS = (0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7)


def v1_set() -> tuple[list[dict], dict[str, dict]]:
    """(near copies: file, original file, group, subtopic, dev), every recipe file's group and subtopic."""
    rows = [json.loads(x) for x in open(REPO / "benchdata/v1/corpus.jsonl")]
    by_id = {r["id"]: r for r in rows}
    files = {
        r["out"]["file"]: {
            "group": r["group"],
            "subtopic": r["truth"].get("subtopic"),
            "dev": (r.get("template") or by_id[r["variant"]["of"]].get("template") or {}).get("pool") == "dev",
        }
        for r in rows
    }
    near = [
        {
            "file": r["out"]["file"],
            "original": by_id[r["truth"]["near_dup_of"]]["out"]["file"],
            "op": r["variant"]["op"],
        }
        for r in rows
        if r["truth"].get("near_dup_of")
    ]
    return near, files


def real_set() -> tuple[list[dict], dict[str, dict]]:
    rows = [json.loads(x) for x in open(REPO / "benchdata/real/truth.jsonl")]
    files = {r["file"]: {"group": r.get("group"), "subtopic": None, "dev": True} for r in rows}
    near = [{"file": r["file"], "original": r["of"], "op": r["op"]} for r in rows if r["kind"] == "near"]
    return near, files


def make_subset(build: Path, out: Path) -> None:
    """Benchmark v1's subset measured when its libraries were not ready: every file of the template
    groups holding a near copy, and as distractors the groups whose SHA-256(group key) starts below
    0x20; each image with its sidecar, and inbox's manifest."""
    rows = [json.loads(x) for x in open(REPO / "benchdata/v1/corpus.jsonl")]
    groups = {r["group"] for r in rows if r["truth"].get("near_dup_of")}
    extra = {r["group"] for r in rows if hashlib.sha256(r["group"].encode()).digest()[0] < 0x20}
    for r in rows:
        if r["group"] in groups | extra:
            f = Path(r["out"]["file"])
            (out / f.parent).mkdir(parents=True, exist_ok=True)
            shutil.copy2(build / f, out / f)
            if (build / f.with_suffix(".json")).exists():
                shutil.copy2(build / f.with_suffix(".json"), out / f.with_suffix(".json"))
    (out / "inbox").mkdir(parents=True, exist_ok=True)
    shutil.copy2(build / "inbox/mambo.jsonl", out / "inbox/mambo.jsonl")


def fold(group: str) -> int:
    return hashlib.sha256(group.encode()).digest()[0] & 1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("set", choices=("v1", "real"))
    ap.add_argument("db")
    ap.add_argument("root")
    ap.add_argument("--limit", type=int, default=0, help="only the first N near copies (a quick look)")
    ap.add_argument("--make-subset", metavar="OUT", help="v1: copy the subset of ROOT measured into OUT, and stop")
    args = ap.parse_args()
    if args.make_subset:
        make_subset(Path(args.root), Path(args.make_subset))
        return
    near, files = v1_set() if args.set == "v1" else real_set()
    near = near[: args.limit] if args.limit else near
    db = DB(args.db, readonly=True)
    item_of = {rel: int(i) for rel, i in db.con.execute("SELECT rel_path, item_id FROM files")}
    servable = {int(i) for (i,) in db.con.execute("SELECT item_id FROM servable_items")}
    files_of = collections.defaultdict(set)
    for rel, i in item_of.items():
        files_of[i].add(rel)
    members = collections.defaultdict(set)
    for rel, info in files.items():
        if rel in item_of and item_of[rel] in servable and info["group"]:
            members[info["group"]].add(item_of[rel])
    searcher = Searcher(db, get_embedder())
    at1, recall, bound, ms, withheld = 0, [], [], [], []
    misses, reasons = [], collections.Counter()
    pairs: list[tuple[int, float, bool]] = []  # (fold, similarity, same subtopic or group)
    for q in near:
        own, original = item_of.get(q["file"]), item_of.get(q["original"])
        if own is None or original is None:
            print(f"not in the library: {q['file']} or {q['original']}")
            continue
        if original not in servable:  # withheld by the safety policy: never shown, so never at rank 1
            withheld.append(q["file"])
            continue
        path = Path(args.root) / q["file"]
        t0 = time.perf_counter()
        probe = probe_file(db, path.read_bytes(), str(path))
        answer = rank(db, probe, 10, searcher, ignore=[own])
        ms.append((time.perf_counter() - t0) * 1000)
        ranked = [r.item_id for r in answer.results]
        reasons[answer.results[0].details["reason"] if ranked else "nothing"] += 1
        if ranked[:1] == [original]:
            at1 += 1
        else:
            where = ranked.index(original) + 1 if original in ranked else None
            misses.append(f"{q['file']} ({q['op']}): original at {where}, rank 1 {ranked[:1]} ")
        info = files[q["file"]]
        group = members[info["group"]] - {own}
        if group:
            recall.append(len(group & set(ranked)) / len(group))
            bound.append(min(1.0, 10 / len(group)))
        if info["dev"]:
            tiers = {r.item_id for r in rank(db, probe, 100, None, ignore=[own]).results}
            sims = searcher.answer(" ".join(probe.ocr_text.split()), "dense", 30, empty_rule=False).results
            for r in sims:
                if r.item_id in tiers or r.item_id == own or r.similarity is None:
                    continue
                other = [files[f] for f in files_of[r.item_id] if f in files]
                key = "subtopic" if args.set == "v1" else "group"
                good = any(o[key] and o[key] == info[key] for o in other)
                pairs.append((fold(info["group"]), r.similarity, good))
    n = len(ms)
    print(f"# search by image: {args.set}, library {args.db}")
    print(f"near copies searched: {n}; original at rank 1: {at1} / {n} = {at1 / max(1, n):.3f}")
    print(f"left out: {len(withheld)} whose original is withheld (unsafe, private): {withheld}")
    print(f"reason at rank 1: {dict(reasons)}")
    print(
        f"template-group recall@10 (own item left out, servable members): mean {sum(recall) / max(1, len(recall)):.3f}"
        f" over {len(recall)} queries (at most {sum(bound) / max(1, len(bound)):.3f}: a group larger than 10 fills"
        " the top 10)"
    )
    ms.sort()
    print(f"wall ms per search (analyse + rank): p50 {ms[n // 2]:.0f}, p95 {ms[int(n * 0.95)]:.0f}" if n else "")
    for m in misses:
        print("  miss:", m)
    print(f"\nsimilar-caption candidates (not in the first four tiers), {len(pairs)} pairs; tiers {REASONS}")
    print("floor | fold 0: shown, precision | fold 1: shown, precision")
    for floor in FLOORS:
        cells = []
        for f in (0, 1):
            kept = [g for fo, s, g in pairs if fo == f and s >= floor]
            cells.append(f"{len(kept):5d}, {sum(kept) / max(1, len(kept)):.3f}")
        mark = "  <- SIMILAR_CAPTION_MIN" if abs(floor - SIMILAR_CAPTION_MIN) < 1e-9 else ""
        print(f"{floor:.2f} | {cells[0]} | {cells[1]}{mark}")


if __name__ == "__main__":
    main()
