"""The caption-meaning model's inputs and regularisation, measured as benchdata/train_caption_meaning.py
measures the shipped one: 5 folds grouped by core phrase, the unsafe bar the lowest with out-of-fold
false hides <= 1 % in each harmless set, recall on the generated unsafe captions at that bar, and
each fold's bar chosen on the other four. Variants: the vector alone; the vector and the best cosine
to each class's prototype sentences (scaled by 0.5, 1, 2), at C 10 / 30 / 100; the similarities with
a prototype's own row left out of its class's maximum; the similarities alone.

    cd benchdata/experiments && ../../.venv/bin/python caption_meaning_features.py > caption_meaning_features-result.txt
"""

from __future__ import annotations

import sys
import zlib
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))
sys.path.insert(0, str(HERE.parent))
import train_caption_meaning as t  # noqa: E402

VECS = t.encode_all()
ROWS, OUTSIDE = t.material()
X = np.stack([VECS[t.caption(r["text"])] for r in ROWS])
Y = np.array([t.CLASSES.index(r["cls"]) for r in ROWS])
HARMFUL = Y > 0
SETS = np.array([r["set"] for r in ROWS])
FOLD = np.array([zlib.crc32(r["group"].encode()) % t.FOLDS for r in ROWS])
PROTOS = t.prototype_vectors(VECS)
GEN = SETS == "generated unsafe"


def sims(a: np.ndarray, leave_self_out: bool = False) -> np.ndarray:
    out = []
    for c in t.CLASSES:
        s = a @ PROTOS[c].T
        out.append((np.where(s > 0.9999, -1.0, s) if leave_self_out else s).max(axis=1))
    return np.stack(out, axis=1)


def run(name: str, feats: np.ndarray, c: float) -> None:
    def fit(a: np.ndarray, b: np.ndarray) -> LogisticRegression:
        return LogisticRegression(C=c, class_weight="balanced", max_iter=5000, tol=1e-6).fit(a, b)

    held = np.zeros(len(ROWS))
    for f in range(t.FOLDS):
        held[FOLD == f] = t.harm(fit(feats[FOLD != f], Y[FOLD != f]), feats[FOLD == f])
    bar = t.lowest_bar(held, HARMFUL, SETS, t.MAX_FALSE_HIDES)
    kinds = " ".join(f"{k} {(held[GEN & (Y == i)] >= bar).mean():.3f}" for i, k in enumerate(t.CLASSES) if i)
    hides = " ".join(
        f"{s} {100 * (held[SETS == s] >= bar).mean():.1f}%"
        for s in ("generated harmless", "hand harmless", "dev shown")
    )
    folds = []
    for f in range(t.FOLDS):
        b = t.lowest_bar(held[FOLD != f], HARMFUL[FOLD != f], SETS[FOLD != f], t.MAX_FALSE_HIDES)
        te = FOLD == f
        folds.append(f"{(held[te & GEN] >= b).mean():.3f}/{100 * (held[te & ~HARMFUL] >= b).mean():.1f}%")
    print(
        f"{name:<34} C {c:<4g} bar {bar:.3f} generated unsafe recall {(held[GEN] >= bar).mean():.3f} "
        f"dev unsafe {(held[SETS == 'dev unsafe'] >= bar).mean():.3f}\n    by kind: {kinds}\n"
        f"    false hides: {hides}\n    folds (recall/false hides at the others' bar): {' '.join(folds)}",
        flush=True,
    )


def main() -> None:
    for c in (10.0, 30.0, 100.0):
        run("vector", X, c)
        for scale in (0.5, 1.0, 2.0):
            run(f"vector + similarities x{scale:g}", np.hstack([X, scale * sims(X)]), c)
    run("vector + similarities, self left out", np.hstack([X, sims(X, leave_self_out=True)]), 30.0)
    run("similarities alone", sims(X, leave_self_out=True), 30.0)


if __name__ == "__main__":
    main()
