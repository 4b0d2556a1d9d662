"""Can the caption-meaning signal learn real wording? Out-of-fold by template on the real-style
development material: the folder's safety labels (benchdata/real/judgements/safety-labels.jsonl,
one row per labelled file, the caption vector its library stores) and the real captions safety set
(benchdata/real/judgements/safety-captions.jsonl, each caption read from the snapshot and encoded).

Compared, each scored out of fold (5 folds, grouped by template, so no template is on both sides):
- `shipped`: today's model (mambomeme/safety_meaning.json), 1 - P(harmless), fitted on benchmark v1
  and generated captions, nothing real;
- `recal`: a logistic regression on the shipped model's 10 inputs beyond the vector (its 5 class
  log-probabilities and 5 prototype cosines), fitted on real rows;
- `vector C`: a logistic regression on the caption vector and those 10, fitted on real rows, with
  inverse L2 strength C.
For each, the harmful memes (unsafe + critical) caught when the bar marks 5 / 10 / 20 % of the
harmless ones, and withheld when it withholds <= 0.2 % of them.

    .venv/bin/python benchdata/experiments/safety_real_meaning.py REAL_BARE.sqlite SNAPSHOT [CACHE.npz]

Then the shipped model's harmless memes withheld at each bar, per set: the bar that keeps them
<= 0.2 % (mambomeme/safety_meaning.json's `unsafe` bar, benchdata/train_caption_meaning.py). CACHE
keeps the encoded captions between runs (outside the repository: they stand for snapshot text).
"""

from __future__ import annotations

import sys
from pathlib import Path

import apsw
import numpy as np

HERE = Path(__file__).resolve().parent
REAL = HERE.parent / "real"
sys.path[:0] = [str(REAL), str(HERE.parents[1])]

from safety_captions import dev_captions, load_jsonl  # noqa: E402

from mambomeme.lab.product import get_embedder, meaning_model  # noqa: E402

HIDDEN = ("unsafe", "critical")


def folder_rows(library: str) -> tuple[list[np.ndarray], list[int], list[str]]:
    truth = {t["file"]: t for t in load_jsonl(REAL / "truth.jsonl")}
    labels = load_jsonl(REAL / "judgements" / "safety-labels.jsonl")
    import sqlite_vec

    db = apsw.Connection(f"file:{library}?mode=ro", flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
    db.enable_load_extension(True)
    db.load_extension(sqlite_vec.loadable_path())
    item_of = dict(db.execute("SELECT rel_path, item_id FROM files"))
    vecs, ys, groups, seen = [], [], [], set()
    for row in labels:
        item = item_of.get(row["file"])
        t = truth.get(row["file"], {})
        if item is None or item in seen or t.get("kind") == "stack":
            continue
        got = list(
            db.execute(
                "SELECT coalesce((SELECT embedding FROM item_field_vectors WHERE vector_id = ? * 4 + 1),"
                " (SELECT embedding FROM item_vectors WHERE item_id = ?))",
                (item, item),
            )
        )
        if not got or got[0][0] is None:
            continue
        seen.add(item)
        vecs.append(np.frombuffer(got[0][0], dtype=np.float32))
        ys.append(int(row["safety"] in HIDDEN))
        groups.append(t.get("template", "?"))
    return vecs, ys, groups


def caption_rows(snapshot: str) -> tuple[list[np.ndarray], list[int], list[str]]:
    rows = load_jsonl(REAL / "judgements" / "safety-captions.jsonl")
    text = {pid: t for pid, _, t in dev_captions(snapshot)}
    enc = get_embedder().encode([" ".join(text[r["post"]].replace(" / ", "\n").split()) for r in rows])
    return list(enc), [int(r["safety"] in HIDDEN) for r in rows], [r["template"] for r in rows]


def shipped_inputs(model, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:  # noqa: ANN001
    """The shipped model's score and its 10 inputs beyond the vector."""
    f = model.features(X)
    logits = f @ model.weights.T + model.bias
    logits -= logits.max(axis=1, keepdims=True)
    p = np.exp(logits)
    p /= p.sum(axis=1, keepdims=True)
    score = 1.0 - p[:, model.classes.index("harmless")]
    return score, np.hstack([np.log(p + 1e-9), f[:, -len(model.classes) :]])


def out_of_fold(make, X: np.ndarray, y: np.ndarray, groups: list[str]) -> np.ndarray:  # noqa: ANN001
    from sklearn.model_selection import GroupKFold

    scores = np.zeros(len(y))
    for train, test in GroupKFold(n_splits=5).split(X, y, groups):
        m = make().fit(X[train], y[train])
        scores[test] = m.predict_proba(X[test])[:, 1]
    return scores


def report(name: str, s: np.ndarray, y: np.ndarray) -> str:
    harmless = np.sort(s[y == 0])[::-1]
    harmful = s[y == 1]
    cells = []
    for share in (0.05, 0.10, 0.20):
        bar = harmless[int(share * len(harmless))]
        cells.append(f"{int((harmful > bar).sum())}/{len(harmful)}")
    bar = harmless[int(0.002 * len(harmless))]
    cells.append(f"{int((harmful > bar).sum())}/{len(harmful)} (bar {bar:.3f})")
    return f"| {name} | " + " | ".join(cells) + " |"


def main() -> None:
    from sklearn.linear_model import LogisticRegression

    library, snapshot = sys.argv[1], sys.argv[2]
    cache = Path(sys.argv[3]) if len(sys.argv) > 3 else None
    fv, fy, fg = folder_rows(library)
    if cache and cache.is_file():
        got = np.load(cache)
        cv, cy, cg = list(got["v"]), [int(v) for v in got["y"]], [str(g) for g in got["g"]]
    else:
        cv, cy, cg = caption_rows(snapshot)
        if cache:
            np.savez(cache, v=np.stack(cv), y=np.array(cy), g=np.array(cg))
    X = np.stack(fv + cv).astype(np.float32)
    y = np.array(fy + cy)
    groups = fg + cg
    model = meaning_model()
    shipped, small = shipped_inputs(model, X)
    print(f"rows {len(y)} (folder {len(fy)}, captions {len(cy)}), harmful {int(y.sum())}, templates {len(set(groups))}")
    print("| scorer | caught at 5 % harmless marked | at 10 % | at 20 % | withheld at <= 0.2 % harmless withheld |")
    print("|---|---|---|---|---|")
    print(report("shipped", shipped, y))

    def balanced(c: float):  # noqa: ANN202
        return lambda: LogisticRegression(C=c, class_weight="balanced", max_iter=2000)

    print(report("recal", out_of_fold(balanced(1.0), small, y, groups), y))
    full = np.hstack([X, small])
    for c in (0.1, 1.0, 10.0):
        print(report(f"vector C={c}", out_of_fold(balanced(c), full, y, groups), y))
    n = len(fy)
    print("\n| shipped unsafe bar | folder harmless withheld | captions harmless withheld | both | harmful withheld |")
    print("|---|---|---|---|---|")
    for bar in (0.88, 0.9, 0.91, 0.92, 0.93, 0.94, 0.95):
        w = (shipped >= bar) & (y == 0)
        both, harmless = int(w.sum()), int((y == 0).sum())
        folder = f"{int(w[:n].sum())} of {int((y[:n] == 0).sum())}"
        captions = f"{int(w[n:].sum())} of {int((y[n:] == 0).sum())}"
        harmful = f"{int(((shipped >= bar) & (y == 1)).sum())} of {int(y.sum())}"
        print(f"| {bar} | {folder} | {captions} | {both} of {harmless} ({100 * both / harmless:.2f} %) | {harmful} |")


if __name__ == "__main__":
    main()
