"""The safety signals of a real-style library against the set's safety labels, per signal and
combined: harmless memes withheld and marked, unsafe + critical memes withheld or marked (recall),
critical memes withheld.

    .venv/bin/python benchdata/real/safety_table.py LIBRARY.sqlite [--misses]

LIBRARY is the real-style folder ingested bare (benchdata/real/README.md); to measure changed rules
without a new ingest, copy it and run `mambo --db COPY safety recheck` first. The labels are
benchdata/real/judgements/safety-labels.jsonl (two blind graders and an adjudicator; a meme is
harmless when they say safe or sensitive). --misses lists the harmful memes no signal caught and
the harmless ones withheld, by file name and class (no caption text: it is the snapshot's)."""

from __future__ import annotations

import argparse
import collections
import json
from pathlib import Path

import apsw

LABELS = Path(__file__).resolve().parent / "judgements" / "safety-labels.jsonl"
HIDDEN = ("unsafe", "critical")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("library")
    ap.add_argument("--misses", action="store_true")
    args = ap.parse_args()
    db = apsw.Connection(f"file:{args.library}?mode=ro", flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
    labels = {}
    for line in LABELS.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        labels[row["file"]] = row["safety"]
    files = [
        (path, item, cls, labels[path])
        for path, item, cls in db.execute(
            "SELECT f.rel_path, i.item_id, i.safety FROM files f JOIN items i USING(item_id)"
        )
        if path in labels
    ]
    signals: dict[int, dict[str, str]] = collections.defaultdict(dict)
    for item, signal, cls in db.execute("SELECT item_id, signal, safety FROM safety_signals"):
        signals[item][signal] = cls
    print("| signal | harmless withheld | harmless marked | unsafe+critical withheld or marked | critical withheld |")
    print("|---|---|---|---|---|")
    names = sorted({s for per in signals.values() for s in per})
    for name in [*names, "combined"]:
        got = {p: (c if name == "combined" else signals[i].get(name, "safe")) for p, i, c, _ in files}
        harmless = [p for p, *_, t in files if t in ("safe", "sensitive")]
        harmful = [p for p, *_, t in files if t in HIDDEN]
        critical = [p for p, *_, t in files if t == "critical"]
        withheld = sum(got[p] in HIDDEN for p in harmless)
        marked = sum(got[p] == "sensitive" for p in harmless)
        caught = sum(got[p] != "safe" for p in harmful)
        print(
            f"| {name} | {withheld} of {len(harmless)} ({100 * withheld / len(harmless):.2f} %) | {marked} | "
            f"{caught} of {len(harmful)} | {sum(got[p] in HIDDEN for p in critical)} of {len(critical)} |"
        )
    if args.misses:
        for p, _, c, t in files:
            if (t in HIDDEN and c == "safe") or (t not in HIDDEN and c in HIDDEN):
                print(f"{'missed' if t in HIDDEN else 'withheld'}\t{t}\t{c}\t{p}")


if __name__ == "__main__":
    main()
