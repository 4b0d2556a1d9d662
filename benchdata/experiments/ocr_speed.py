"""OCR CPU and caption word recall on a seeded sample of rendered v1 memes, for one OCR configuration.

    .venv/bin/python benchdata/experiments/ocr_speed.py OUT.json --folder RENDERED_V1 [--n 300]
        [--det SIDE] [--patch NAME] [--canvas PX]

--det caps the detector's longest side; --patch applies a recogniser variant from
ocr_speed_patches.py to the code's own engine; --canvas sets each meme in a white square of that
size (small text in a big image). Set MAMBO_ROOT to measure another checkout's mambomeme. The
results of 2026-12-02 are in ocr_speed-result.txt."""

import argparse
import collections
import json
import os
import random
import re
import sys
import time
from pathlib import Path

ROOT = Path(os.environ.get("MAMBO_ROOT", Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).parent))


def words(s: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", s.lower())


def main() -> None:
    import cv2
    import numpy as np

    from mambomeme.lab.product import OCR, read_image

    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--folder", required=True)
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--seed", type=int, default=36)
    ap.add_argument("--det", type=float, default=None)
    ap.add_argument("--canvas", type=int, default=0)
    ap.add_argument("--patch", default="")
    args = ap.parse_args()
    corpus = Path(__file__).resolve().parents[1] / "v1" / "corpus.jsonl"
    rows = [json.loads(line) for line in corpus.open()]
    rows = [r for r in rows if r.get("captions") and not r["truth"].get("exact_dup_of")]
    sample = random.Random(args.seed).sample(rows, args.n)
    if args.det is not None:
        OCR.PARAMS = dict(OCR.PARAMS, det_limit_side_len=args.det)
    cv2.setNumThreads(1)
    eng = OCR(threads=1)
    if args.patch:
        import ocr_speed_patches

        getattr(ocr_speed_patches, args.patch)(eng)

    def pixels(r: dict) -> object:
        p = Path(args.folder, r["out"]["file"])
        rgb = read_image(p.read_bytes(), p.name).rgb
        if args.canvas:
            big = np.full((args.canvas, args.canvas, 3), 255, dtype=np.uint8)
            big[100 : 100 + rgb.shape[0], 100 : 100 + rgb.shape[1]] = rgb
            rgb = big
        return rgb

    eng.read_lines(pixels(sample[0]))  # warm up
    for k in eng.cpu_ms:
        eng.cpu_ms[k] = 0.0
    out, hit, tot = [], 0, 0
    for r in sample:
        rgb = pixels(r)
        before = dict(eng.cpu_ms)
        c0 = time.process_time()
        text, rects, _texts = eng.read_lines(rgb)
        c1 = time.process_time()
        truth = collections.Counter(words(" ".join(r["captions"])))
        got = collections.Counter(words(text))
        h, n = sum((truth & got).values()), sum(truth.values())
        hit, tot = hit + h, tot + n
        out.append(
            {
                "id": r["id"],
                "text": text,
                "rects": rects,
                "hit": h,
                "n": n,
                "cpu_ms": (c1 - c0) * 1000,
                "det_ms": eng.cpu_ms["OCR detection"] - before["OCR detection"],
                "rec_ms": eng.cpu_ms["OCR recognition"] - before["OCR recognition"],
            }
        )
    n = len(out)
    summary = {
        "config": vars(args),
        "n": n,
        "word_recall": round(hit / tot, 4),
        "ocr_ms": round(sum(o["cpu_ms"] for o in out) / n, 1),
        "det_ms": round(sum(o["det_ms"] for o in out) / n, 1),
        "rec_ms": round(sum(o["rec_ms"] for o in out) / n, 1),
        "boxes": round(sum(len(o["rects"]) for o in out) / n, 2),
    }
    print(json.dumps(summary))
    Path(args.out).write_text(json.dumps({"summary": summary, "items": out}))


if __name__ == "__main__":
    main()
