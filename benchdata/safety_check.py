"""The ingest-time text safety detector (mambomeme.safety_text.detect_safety), measured:

- precision: how many of the harmless captions (benchdata/safety/harmless-captions.txt, written by
  the team, tuning data) it would hide (unsafe or critical) or mark (sensitive); target <= 1 % hidden;
- recall on benchmark v1's DEVELOPMENT-pool unsafe + critical files (reserve items belong to the
  hidden partition and are not read): on the recipe's captions, and, with --library, on the text
  OCR actually read from the rendered files (OCR garbles text); target >= 0.90.

    .venv/bin/python benchdata/safety_check.py [--library LIBRARY.sqlite] [--recipe corpus.jsonl]
        [--harmless FILE] [--json]

LIBRARY is benchmark v1's rendered corpus ingested with `mambo add` (annotated or bare: the OCR text
is the same). Prints the rates, then every hidden harmless caption and every missed dev item."""

from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import apsw  # noqa: E402

from mambomeme.lab.product import RULES_VERSION, clean_line, detect_safety  # noqa: E402

HERE = Path(__file__).resolve().parent
HIDDEN = ("unsafe", "critical")


def harmless_captions(path: Path = HERE / "safety" / "harmless-captions.txt") -> list[str]:
    return [ln.strip() for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip() and not ln.startswith("#")]


def dev_files(recipe: Path = HERE / "v1" / "corpus.jsonl", harmful: bool = True) -> list[dict]:
    """Development-pool files whose recipe class is unsafe or critical (harmful) or safe or
    sensitive (not harmful; a variant's pool is its original's), each with its file name and the
    caption as the recipe wrote it."""
    lines = [json.loads(x) for x in recipe.read_text(encoding="utf-8").splitlines() if x.strip()]
    by_id = {ln["id"]: ln for ln in lines}
    out = []
    for ln in lines:
        src = by_id.get(ln.get("variant", {}).get("of"), ln)
        if src["template"]["pool"] == "dev" and (ln["truth"]["safety"] in HIDDEN) == harmful:
            out.append(
                {"file": ln["out"]["file"], "safety": ln["truth"]["safety"], "caption": " / ".join(src["captions"])}
            )
    return out


def classify(text: str) -> str:
    found = detect_safety(text)
    return found.safety if found else "safe"


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--library")
    ap.add_argument("--recipe", type=Path, default=HERE / "v1" / "corpus.jsonl")
    ap.add_argument("--harmless", type=Path, default=HERE / "safety" / "harmless-captions.txt")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    report: dict = {"rules": RULES_VERSION}
    caps = harmless_captions(a.harmless)
    classes = collections.Counter(classify(c) for c in caps)
    hidden = [c for c in caps if classify(c) in HIDDEN]
    report["harmless"] = {
        "captions": len(caps),
        "hidden": len(hidden),
        "false_positive_rate": len(hidden) / len(caps),
        "marked_sensitive": classes["sensitive"],
    }
    items = dev_files(a.recipe)
    shown = dev_files(a.recipe, harmful=False)
    missed_caption = [d for d in items if classify(d["caption"]) not in HIDDEN]
    report["dev_recipe"] = {
        "items": len(items),
        "caught": len(items) - len(missed_caption),
        "recall": 1 - len(missed_caption) / len(items),
    }
    report["dev_shown_recipe"] = {"items": len(shown), "hidden": sum(classify(d["caption"]) in HIDDEN for d in shown)}
    missed_ocr: list[tuple[dict, str]] = []
    if a.library:
        con = apsw.Connection(a.library, flags=apsw.SQLITE_OPEN_READONLY)
        text = dict(con.execute("SELECT f.rel_path, i.ocr_text FROM files f JOIN items i USING (item_id)"))
        present = [d for d in items if d["file"] in text]
        missed_ocr = [(d, text[d["file"]]) for d in present if classify(text[d["file"]]) not in HIDDEN]
        report["dev_ocr"] = {
            "items": len(present),
            "caught": len(present) - len(missed_ocr),
            "recall": 1 - len(missed_ocr) / max(1, len(present)),
        }
        present = [d for d in shown if d["file"] in text]
        report["dev_shown_ocr"] = {
            "items": len(present),
            "hidden": sum(classify(text[d["file"]]) in HIDDEN for d in present),
        }
    if a.json:
        print(json.dumps(report))
        return 0
    h = report["harmless"]
    print(f"rules {RULES_VERSION}")
    print(
        f"harmless captions {h['captions']}: hidden {h['hidden']} ({h['false_positive_rate']:.1%}), "
        f"marked sensitive {h['marked_sensitive']}"
    )
    for c in hidden:
        print(f"  hidden: {clean_line(c)}  <- {detect_safety(c)}")
    r = report["dev_recipe"]
    print(f"dev unsafe+critical, recipe captions: {r['caught']}/{r['items']} = {r['recall']:.3f}")
    for d in missed_caption:
        print(f"  missed {d['safety']}: {clean_line(d['caption'])}")
    for key, what in (("dev_shown_recipe", "recipe captions"), ("dev_shown_ocr", "OCR text")):
        if key in report:
            print(f"dev safe+sensitive files hidden, {what}: {report[key]['hidden']}/{report[key]['items']}")
    if a.library:
        o = report["dev_ocr"]
        print(f"dev unsafe+critical, OCR text: {o['caught']}/{o['items']} = {o['recall']:.3f}")
        for d, t in missed_ocr:
            print(f"  missed {d['safety']}: {clean_line(' '.join(t.split()))}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
