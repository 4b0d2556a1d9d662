"""How well the ingest-time safety detector (mambomeme.safety.detect_safety) agrees with the recipe's safety
classes, on the DEVELOPMENT pool's items only (reserve items belong to the hidden partition).

    .venv/bin/python benchdata/safety_check.py LIBRARY.sqlite [benchdata/v1/corpus.jsonl]

LIBRARY is benchmark v1's rendered corpus ingested with `mambo add`; the detector is run on each
item's stored OCR text. Prints the confusion counts (truth, detected) and every unsafe/critical miss
or false alarm."""

from __future__ import annotations

import collections
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import apsw  # noqa: E402

from mambomeme.library import clean_line  # noqa: E402
from mambomeme.safety import detect_safety  # noqa: E402


def main(argv: list[str]) -> int:
    library = argv[0]
    recipe = Path(argv[1] if len(argv) > 1 else Path(__file__).parent / "v1" / "corpus.jsonl")
    lines = [json.loads(x) for x in recipe.read_text(encoding="utf-8").splitlines() if x.strip()]
    by_id = {ln["id"]: ln for ln in lines}
    con = apsw.Connection(library, flags=apsw.SQLITE_OPEN_READONLY)
    text = dict(con.execute("SELECT f.rel_path, i.ocr_text FROM files f JOIN items i USING (item_id)"))
    confusion: collections.Counter[tuple[str, str]] = collections.Counter()
    wrong = []
    for ln in lines:
        src = by_id.get(ln.get("variant", {}).get("of"), ln)
        if src["template"]["pool"] != "dev" or ln["out"]["file"] not in text:
            continue
        found = detect_safety(text[ln["out"]["file"]])
        got, truth = (found[0] if found else "safe"), ln["truth"]["safety"]
        confusion[(truth, got)] += 1
        if (truth in ("unsafe", "critical")) != (got in ("unsafe", "critical")):
            wrong.append((truth, got, " ".join(text[ln["out"]["file"]].split())[:100]))
    for (truth, got), n in sorted(confusion.items()):
        print(f"truth {truth:<9} detected {got:<9} {n}")
    for truth, got, t in wrong:
        print(f"  {truth} -> {got}: {clean_line(t)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
