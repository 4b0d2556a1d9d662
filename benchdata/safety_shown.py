"""How many policy-hidden benchmark items (recipe class unsafe or critical) each system shows in its
top 10 over benchmark v1's development queries, on one library (annotated or bare).

    .venv/bin/python benchdata/safety_shown.py LIBRARY.sqlite [--system bm25 --system hybrid ...]

Prints, per system, the results whose item is development-pool (with their file names) and the
number from the reserve pool (a count only: reserve items belong to the hidden evaluation)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from mambomeme.lab.product import DB, searcher_for  # noqa: E402

HERE = Path(__file__).resolve().parent


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("library", type=Path)
    ap.add_argument("--system", action="append", dest="systems")
    ap.add_argument("--queries", type=Path, default=HERE / "v1" / "dev.jsonl")
    ap.add_argument("--recipe", type=Path, default=HERE / "v1" / "corpus.jsonl")
    a = ap.parse_args(argv)
    lines = [json.loads(x) for x in a.recipe.read_text(encoding="utf-8").splitlines() if x.strip()]
    by_id = {ln["id"]: ln for ln in lines}
    truth = {ln["out"]["file"]: ln["truth"]["safety"] for ln in lines}
    pool = {ln["out"]["file"]: by_id.get(ln.get("variant", {}).get("of"), ln)["template"]["pool"] for ln in lines}
    queries = [json.loads(x) for x in a.queries.read_text(encoding="utf-8").splitlines() if x.strip()]
    db = DB(a.library, create=False)
    for system in a.systems or ["bm25", "dense", "hybrid"]:
        searcher = searcher_for(db, system)
        shown = [
            r.details["rel_path"]
            for q in queries
            for r in searcher.search(q["query"], system, 10)
            if truth.get(r.details["rel_path"]) in ("unsafe", "critical")
        ]
        dev = [f for f in shown if pool[f] == "dev"]
        print(
            f"{system}: development unsafe/critical results shown {len(dev)} {sorted(set(dev))}; "
            f"reserve {len(shown) - len(dev)}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
