#!/usr/bin/env python3
"""First look at the real-style development set (benchdata/real) with today's search: each system's
top 10 for every query of benchdata/real/dev.jsonl, through `mambo search --json` (queries piped in,
so the model loads once per system).

    python benchdata/experiments/real_first_look.py --db real-bare.sqlite --root /tmp/real-out

Hit@10: a provisional grade >= 2 file in the top 10. ExactMRR: reciprocal rank of the first `exact`
file (entity, quote). no-match answered: the list was not empty. withheld shown: lists holding a file
the partition withholds (unsafe under mambo-safety-v1 by the set's own classes).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SLICES = ("entity", "quote", "topic", "semantic", "visual", "noisy")


def run(system: str, db: str, root: str, queries: list[dict]) -> str:
    proc = subprocess.run(
        [str(REPO / "mambo"), "--db", db, "search", "--json", "-n", "10", "-s", system],
        input="".join(q["query"] + "\n" for q in queries),
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
    )
    if proc.returncode not in (0, 1):
        raise SystemExit(proc.stderr.strip().splitlines()[-1])
    got: dict[str, list[str]] = collections.defaultdict(list)
    for line in proc.stdout.splitlines():
        d = json.loads(line)
        if not d.get("no_match"):
            got[d["query"]].append(os.path.relpath(d["path"], root))
    hit, total, mrr = collections.Counter(), collections.Counter(), collections.Counter()
    answered = shown = 0
    for q in queries:
        ranked = got.get(q["query"], [])
        total[q["slice"]] += 1
        if q["slice"] == "no-match":
            answered += bool(ranked)
            continue
        good = {f for f, g in q["relevant"].items() if g >= 2}
        hit[q["slice"]] += any(f in good for f in ranked)
        exact = set(q["exact"])
        mrr[q["slice"]] += next((1 / (i + 1) for i, f in enumerate(ranked) if f in exact), 0.0)
        shown += bool(set(ranked) & set(q["withheld"]))
    cells = " | ".join(f"{hit[s]} / {total[s]}" for s in SLICES)
    exact_mrr = " | ".join(f"{mrr[s] / total[s]:.2f}" for s in ("entity", "quote"))
    return f"| {system} | {cells} | {exact_mrr} | {answered} / {total['no-match']} | {shown} |"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db", required=True)
    ap.add_argument("--root", required=True, help="the built folder the library was made from")
    ap.add_argument("--system", action="append", default=None)
    a = ap.parse_args()
    queries = [json.loads(x) for x in (REPO / "benchdata/real/dev.jsonl").read_text().splitlines() if x]
    print(
        "| system | "
        + " | ".join(f"{s} Hit@10" for s in SLICES)
        + " | ExactMRR entity | ExactMRR quote | no-match answered | lists with a withheld file |"
    )
    print("|---" * 11 + "|")
    for system in a.system or ["bm25", "dense", "hybrid"]:
        print(run(system, a.db, a.root, queries))


if __name__ == "__main__":
    main()
