"""The caption safety signals measured alone and combined, as the tool applies them:

- signals: the text rules (mambomeme/safety_text.py), the caption-meaning model (mambomeme/
  safety_meaning.py with its shipped weights and bars), and both (the most severe class wins);
- sets: the generated set (benchdata/make_safety_set.py), the hand-written harmless captions
  (benchdata/safety/harmless-captions.txt), benchmark v1's DEVELOPMENT-pool files by their recipe
  class (reserve items are never read), the fixture's recipe, and with --library the text OCR read
  from the rendered development files (what a bare library holds);
- "withheld" is unsafe or critical; "marked" is sensitive from the meaning signal.

The meaning model was trained on the generated set, the dev recipe captions and the hand-written
harmless set, so its numbers on them here are in-sample: the held-out numbers are the trainer's
grouped out-of-fold ones (benchdata/train_caption_meaning.py, kept in mambomeme/safety_meaning.json),
printed at the end. The fixture and the OCR text were never trained on.

    .venv/bin/python benchdata/safety_signals.py [--library LIB] [--json]"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from safety_check import dev_files, harmless_captions  # noqa: E402

from mambomeme.lab.product import WEIGHTS_FILE, clean_line, detect_safety, meaning_model  # noqa: E402

HERE = Path(__file__).resolve().parent
HIDDEN = ("unsafe", "critical")


def sets(library: str | None) -> dict[str, list[tuple[str, bool]]]:
    """name -> [(caption, harmful)]"""
    gen = [json.loads(x) for x in (HERE / "safety" / "generated.jsonl").read_text().splitlines() if x.strip()]
    fixture = [json.loads(x) for x in (HERE / "fixture" / "recipe.jsonl").read_text().splitlines() if x.strip()]
    out = {
        "generated unsafe": [(g["caption"], True) for g in gen if g["label"] != "shown"],
        "generated harmless": [(g["caption"], False) for g in gen if g["label"] == "shown"],
        "hand harmless": [(c, False) for c in harmless_captions()],
        "dev recipe": [(d["caption"], d["safety"] in HIDDEN) for d in dev_files() + dev_files(harmful=False)],
        "fixture": [(" / ".join(f["captions"]), f["truth"]["safety"] in HIDDEN) for f in fixture if "captions" in f],
    }
    if library:
        import apsw

        con = apsw.Connection(library, flags=apsw.SQLITE_OPEN_READONLY)
        text = dict(con.execute("SELECT f.rel_path, i.ocr_text FROM files f JOIN items i USING (item_id)"))
        out["dev OCR (bare text)"] = [
            (text[d["file"]], d["safety"] in HIDDEN)
            for d in dev_files() + dev_files(harmful=False)
            if d["file"] in text and text[d["file"]].strip()
        ]
    return out


def caption(text: str) -> str:
    return " ".join(text.split())


def rates(rows: list[tuple[bool, bool]]) -> dict[str, int]:
    return {
        "harmful": sum(h for h, _ in rows),
        "caught": sum(h and x for h, x in rows),
        "harmless": sum(not h for h, _ in rows),
        "hidden": sum(x and not h for h, x in rows),
    }


def fmt(c: dict[str, int]) -> str:
    r = f"recall {c['caught']}/{c['harmful']} = {c['caught'] / c['harmful']:.3f}" if c["harmful"] else "recall -"
    f = (
        f"false hides {c['hidden']}/{c['harmless']} = {c['hidden'] / c['harmless']:.1%}"
        if c["harmless"]
        else "false hides -"
    )
    return f"{r}; {f}"


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--library")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    from mambomeme.lab.product import Embedder

    model = meaning_model()
    emb = Embedder(quiet=True, threads=1)
    report: dict = {
        "meaning": model.signal,
        "sha256": model.sha256,
        "bars": {"unsafe": model.unsafe_bar, "sensitive": model.sensitive_bar},
        "sets": {},
    }
    lines = [f"{model.signal} ({model.sha256[:12]}): withholds at {model.unsafe_bar}, marks at {model.sensitive_bar}"]
    misses = []
    for name, rows in sets(a.library).items():
        judged = model.judge(emb.encode([caption(t) for t, _ in rows]))
        rules = [(d.safety if (d := detect_safety(t)) else "safe") for t, _ in rows]
        r = rates([(h, x in HIDDEN) for (_t, h), x in zip(rows, rules, strict=True)])
        m = rates([(h, j.safety in HIDDEN) for (_t, h), j in zip(rows, judged, strict=True)])
        both = rates(
            [(h, x in HIDDEN or j.safety in HIDDEN) for (_t, h), x, j in zip(rows, rules, judged, strict=True)]
        )
        marked = sum(not h and j.safety == "sensitive" for (_t, h), j in zip(rows, judged, strict=True))
        report["sets"][name] = {"rules": r, "meaning": m, "combined": both, "harmless_marked_by_meaning": marked}
        lines += [
            f"{name} ({len(rows)}):",
            f"  rules    {fmt(r)}",
            f"  meaning  {fmt(m)}",
            f"  combined {fmt(both)}; harmless marked sensitive {marked}",
        ]
        for (t, h), x, j in zip(rows, rules, judged, strict=True):
            if h != (x in HIDDEN or j.safety in HIDDEN):
                misses.append(
                    f"  {'missed' if h else 'hidden'} [{name}] meaning {j.score:.3f} {j.rule}, rules {x}: "
                    f"{clean_line(caption(t))[:110]}"
                )
    train = json.loads(WEIGHTS_FILE.read_text(encoding="utf-8"))["training"]
    report["out_of_fold"] = train
    if a.json:
        print(json.dumps(report))
        return 0
    print("\n".join(lines))
    if train:
        print("meaning alone, grouped out-of-fold (trainer), share at or above the unsafe bar:")
        for fam, v in train["by_family"].items():
            print(
                f"  {fam}: {v['out_of_fold_at_unsafe_bar']:.3f} of {v['rows']} (sensitive bar "
                f"{v['out_of_fold_at_sensitive_bar']:.3f})"
            )
        for f in train["folds_detail"]:
            print(
                f"  fold {f['fold']}: bar {f['unsafe_bar']} recall {f['recall']:.3f} false hides {f['false_hides']:.3%}"
            )
    print("\n".join(misses))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
