"""Picture labels on benchmark v1's development pool: how the caption mask, the medium classes and
the bar change which labels a picture gets, measured before the stage's parameters were fixed
(mambomeme/picture_labels.py). Development items only: memes whose template is in the dev pool.

Reproduce (from the repository root, on a copy of the bare library of the rendered corpus):

    PYTHONPATH=. .venv/bin/python benchdata/experiments/picture_labels.py --lib BARE.sqlite \\
        --cache WORK/labels.npz > benchdata/experiments/picture_labels-result.txt

What it measures, over the dev pool's pictures (each read from its file; its stored OCR boxes):
  * each picture's 1,000 class probabilities three ways: the caption shown, its boxes painted grey,
    and cropped (picture_labels.without_caption: the tallest band of rows free of text, boxes left in
    it painted grey);
  * the classes most often first (the medium classes: what any picture with text on it is called);
  * how many pictures get a label at each bar, and how often a label names the drawing's subject
    (the recipe's `subject` word of its template drawing, benchdata/v1/templates.json, or one of its
    words is among the label's names): a rough agreement, not a precision (a "tabby cat" for a
    subject "kitten" counts as a miss); the precision is graded blind (docs/decisions.md#picture-labels).
  * the classifier's habits on these drawings: classes that label pictures of 4 or more different
    subjects (bar 0.2, cropped) of which fewer than a quarter share a word with the class;
  * CPU milliseconds a picture (masking, resizing and the network; decoding not included).
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import time
from pathlib import Path

import numpy as np

from mambomeme.images import read_image
from mambomeme.library import DB
from mambomeme.picture_labels import BAR, MASK_PAD, MEDIUM_CLASSES, NEVER, PictureLabeller, class_names, keep

REPO = Path(__file__).resolve().parents[2]


def dev_items(db: DB) -> list[tuple[int, Path, str, list[list[int]]]]:
    """(item id, file, subject, OCR boxes) of every item whose template drawing is in the dev pool."""
    subjects = {t["svg"]: t.get("subject", "") for t in json.loads((REPO / "benchdata/v1/templates.json").read_text())}
    corpus = {}
    for line in (REPO / "benchdata/v1/corpus.jsonl").read_text().splitlines():
        d = json.loads(line)
        t = d.get("template") or {}
        if t.get("pool") == "dev":
            corpus[d["out"]["file"]] = subjects.get(t.get("svg"), "")
    out = []
    rows = db.con.execute("SELECT i.item_id, r.path, f.rel_path, i.ocr_boxes FROM items i "
                          "JOIN files f ON f.file_id = (SELECT min(file_id) FROM files WHERE item_id = i.item_id) "
                          "JOIN library_roots r ON r.root_id = f.root_id ORDER BY i.item_id")
    for item_id, root, rel, boxes in rows:
        if rel in corpus:
            out.append((item_id, Path(root) / rel, corpus[rel], json.loads(boxes or "[]")))
    return out


# The blind precision sample: (picture, label) pairs of dev-pool pictures drawn evenly from these bands
# of the label's probability, so that precision can be read at any bar from 0.15 up (each band
# weighted by how many pairs it holds).
BANDS = ((0.15, 0.25), (0.25, 0.35), (0.35, 0.5), (0.5, 1.01))


def sample(ids: list[int], probs: np.ndarray, items: list, n: int, out: Path, seed: int = 37) -> None:
    """Write `n` blind (picture, label) pairs to `out`: pair-NNN.png (the meme as a person sees it)
    and QUESTIONS.txt; and to `out`-key/key.jsonl which item, label and probability each pair is
    (kept from the grader)."""
    import random

    names = class_names()
    path_of = {i: p for i, p, _s, _b in items}
    pairs: dict[int, list] = {k: [] for k in range(len(BANDS))}
    for item_id, p in zip(ids, probs, strict=True):
        for label in keep(p, names, bar=BANDS[0][0]):
            k = next(k for k, (lo, hi) in enumerate(BANDS) if lo <= label["p"] < hi)
            pairs[k].append((item_id, label))
    rng = random.Random(seed)
    chosen = []
    for k in pairs:
        rng.shuffle(pairs[k])
        chosen += [(k, item, label) for item, label in pairs[k][:n // len(BANDS)]]
    rng.shuffle(chosen)
    out.mkdir(parents=True, exist_ok=True)
    questions, key = [], []
    for n_, (k, item_id, label) in enumerate(chosen, 1):
        name = f"pair-{n_:03d}"
        read_image(path_of[item_id].read_bytes(), path_of[item_id].name)  # readable, as ingest read it
        from PIL import Image

        with Image.open(path_of[item_id]) as im:
            im.convert("RGB").save(out / f"{name}.png")
        also = f" (also called: {', '.join(label['names'][1:])})" if len(label["names"]) > 1 else ""
        questions.append(f"{name}: does this picture show a {label['names'][0]}{also}?")
        key.append({"pair": name, "item_id": int(item_id), "file": str(path_of[item_id]), "label": label, "band": k,
                    "band_pairs": len(pairs[k])})
    (out / "QUESTIONS.txt").write_text("\n".join(questions) + "\n", encoding="utf-8")
    keys = out.parent / f"{out.name}-key"
    keys.mkdir(exist_ok=True)
    (keys / "key.jsonl").write_text("".join(json.dumps(x) + "\n" for x in key), encoding="utf-8")
    print(f"{len(chosen)} pairs in {out}; pairs in each band: {[len(v) for v in pairs.values()]}")


def precision(key_file: Path, answers: list[Path]) -> None:
    """Precision at each bar from the graded sample: each band's yes share, weighted by its pairs."""
    key = {x["pair"]: x for x in map(json.loads, key_file.read_text().splitlines())}
    yes: dict[str, list[bool]] = collections.defaultdict(list)
    for path in answers:
        for line in path.read_text().splitlines():
            parts = line.replace(":", " ").split()
            if len(parts) >= 2 and parts[0] in key and parts[1].lower() in ("yes", "no"):
                yes[parts[0]].append(parts[1].lower() == "yes")
    graded = {p: sum(v) / len(v) for p, v in yes.items()}
    print(f"graded pairs: {len(graded)} of {len(key)}; graders agree on "
          f"{sum(len(set(v)) == 1 for v in yes.values())} of {sum(len(v) > 1 for v in yes.values())} pairs "
          "answered twice")
    for bar in (0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5):
        num = den = 0.0
        for k in range(len(BANDS)):
            got = [(graded[p], x["label"]["p"]) for p, x in key.items() if x["band"] == k and p in graded]
            got = [g for g, q in got if q >= bar]
            if not got:
                continue
            in_band = next(x["band_pairs"] for x in key.values() if x["band"] == k)
            share = len(got) / sum(1 for x in key.values() if x["band"] == k and x["pair"] in graded)
            num += in_band * share * sum(got) / len(got)
            den += in_band * share
        print(f"bar {bar:.2f}: precision {num / den if den else float('nan'):.3f} (pairs above it, weighted)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--cache", required=True)
    ap.add_argument("--sample", type=int, default=0, help="write this many blind pairs to --out")
    ap.add_argument("--out")
    ap.add_argument("--precision", nargs="*", help="answer files of the sample in --out: precision by bar")
    args = ap.parse_args()
    db = DB(Path(args.lib), create=False, readonly=True)
    items = dev_items(db)
    cache = Path(args.cache)
    if cache.exists():
        z = np.load(cache)
        ids, masked, grey, plain, cpu = list(z["ids"]), z["masked"], z["grey"], z["plain"], float(z["cpu"])
    else:
        lab = PictureLabeller()
        masked, grey, plain, ids = [], [], [], []
        for item_id, path, _subject, boxes in items:
            rgb = read_image(path.read_bytes(), path.name).rgb
            masked.append(lab.probabilities(rgb, boxes, mask=True))
            plain.append(lab.probabilities(rgb, boxes, mask=False))
            painted = rgb.copy()
            for x0, y0, x1, y1 in boxes:
                painted[max(0, y0 - MASK_PAD):y1 + MASK_PAD, max(0, x0 - MASK_PAD):x1 + MASK_PAD] = 128
            grey.append(lab.probabilities(painted, [], mask=False))
            ids.append(item_id)
        cpu = lab.cpu_ms / (3 * len(ids))
        masked, grey, plain = np.array(masked), np.array(grey), np.array(plain)
        np.savez_compressed(cache, ids=np.array(ids), masked=masked, grey=grey, plain=plain, cpu=cpu)
    if args.sample:
        sample(ids, masked, items, args.sample, Path(args.out))
        return
    if args.precision:
        keys = Path(args.out).parent / f"{Path(args.out).name}-key"
        precision(keys / "key.jsonl", [Path(p) for p in args.precision])
        return
    subject = {i: s for i, _p, s, _b in items}
    names = class_names()
    print(f"dev-pool pictures: {len(ids)}; CPU {cpu:.1f} ms a picture (mask, resize, network; one thread)")
    print("\n== the classifier's habits (cropped, bar 0.2, the medium classes left out; "
          f"NEVER holds {len(NEVER - MEDIUM_CLASSES)} of them)")
    spread: dict[int, set[str]] = collections.defaultdict(set)
    for item_id, p in zip(ids, masked, strict=True):
        order = [int(n) for n in np.argsort(-p)[:3] if p[n] >= 0.2 and int(n) not in MEDIUM_CLASSES]
        for n in order:
            spread[n].add(subject[item_id])
    for n, subjects in sorted(spread.items(), key=lambda kv: -len(kv[1])):
        if len(subjects) < 4:
            break
        words = {w for name in names[n] for w in name.split()}
        agree = sum(bool(words & set(s.lower().split())) for s in subjects) / len(subjects)
        print(f"{n:>4} {names[n][0]:<20} {len(subjects)} subjects, {agree:.2f} sharing a word"
              + ("  <- habit" if agree < 0.25 else "") + f"  {'in NEVER' if n in NEVER else ''}")
    for what, probs in (("caption cropped (in use)", masked), ("caption painted grey", grey),
                        ("caption shown", plain)):
        print(f"\n== {what}")
        top1 = collections.Counter(int(np.argmax(p)) for p in probs)
        print("classes most often first: " + ", ".join(f"{names[c][0]} {n}" for c, n in top1.most_common(12)))
        print(f"share of pictures whose first class is a medium class {sorted(MEDIUM_CLASSES)}: "
              f"{sum(n for c, n in top1.items() if c in MEDIUM_CLASSES) / len(probs):.3f}")
        print("bar   labelled  labels  names-subject(share of labels)")
        for bar in (0.10, 0.15, 0.20, 0.25, 0.30, 0.35, 0.40, 0.50, 0.60):
            labelled = hits = total = 0
            for item_id, p in zip(ids, probs, strict=True):
                labels = keep(p, names, bar=bar)
                labelled += bool(labels)
                total += len(labels)
                words = set(subject[item_id].lower().split())
                hits += sum(bool(words & {w for n in lab["names"] for w in n.split()}) for lab in labels)
            print(f"{bar:.2f}  {labelled:>8}  {total:>6}  {hits:>5} ({hits / max(total, 1):.3f})"
                  + ("   <- BAR" if abs(bar - BAR) < 1e-9 else ""))
    sys.stdout.flush()


if __name__ == "__main__":
    t0 = time.time()
    main()
    print(f"\n({time.time() - t0:.0f} s)")
