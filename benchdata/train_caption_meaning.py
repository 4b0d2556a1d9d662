"""Trains the caption-meaning safety signal (mambomeme/safety_meaning.py) on development material
only, chooses its bars with held-out folds, and writes mambomeme/safety_meaning.json.

    .venv/bin/python benchdata/train_caption_meaning.py          # writes the weights, prints the folds
    .venv/bin/python benchdata/train_caption_meaning.py --check  # exit 1 unless the file is what it makes

The signal is a multinomial logistic regression on the caption's all-mpnet-base-v2 vector (the
vector the library already stores) and its best cosine to each class's prototype sentences (below;
their vectors are written into the file): harmless, or one of the policy's unsafe kinds (violence
wished on a group, dehumanising a group, gore, personal data). Its score is 1 - P(harmless).

Training material (all development): the generated set (benchdata/make_safety_set.py: labels by that
program), benchmark v1's DEVELOPMENT-pool captions by their recipe class (reserve items are never
read; an unsafe caption's kind is the text rule that catches it), the hand-written harmless captions
(benchdata/safety/harmless-captions.txt), and the prototype sentences below, written from the
definitions of benchdata/safety-policy-v1.md. The fixture and the OCR text of the rendered files
are never trained on: they measure from outside (benchdata/safety_signals.py).

Folds: 5, grouped so that captions sharing their core phrase (the generated set's `core`; a dev
caption's punchline) are never on both sides. The unsafe bar is the lowest in steps of 0.005 whose
out-of-fold false hides stay <= MAX_FALSE_HIDES in each set of harmless captions (generated,
hand-written, dev shown); the sensitive bar the lowest whose out-of-fold marks stay <= MAX_MARKED.
Each fold's bar is also chosen on the other four and measured on it (reported). Needs scikit-learn
(the dev extra, through sentence-transformers)."""

from __future__ import annotations

import argparse
import base64
import json
import sys
import zlib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from safety_check import dev_files, harmless_captions  # noqa: E402

HERE = Path(__file__).resolve().parent
OUT = HERE.parent / "mambomeme" / "safety_meaning.json"
HIDDEN = ("unsafe", "critical")
FOLDS = 5
# Inverse L2 strength. Out-of-fold generated recall at each C's own bar, with the prototype
# similarities, C 10 / 30 / 100: 0.912 / 0.927 / 0.931 (docs/decisions.md#caption-meaning).
C = 30.0
MAX_FALSE_HIDES = 0.01
MAX_MARKED = 0.05
# The unsafe bar is never below this: on real captions (the real-style folder's safety labels and
# the real captions safety set, 2,242 harmless memes of 88 templates) the model withholds 8 harmless
# memes at 0.88 (0.36 %, politics and religion jokes about a group) and 4 (0.18 %) at 0.93; the
# 29 unsafe ones score too low to be withheld at either bar (they are marked or missed), so the
# higher bar costs real recall nothing. benchdata/experiments/safety_real_meaning-result.txt.
REAL_UNSAFE_BAR_FLOOR = 0.93
CLASSES = ("harmless", "violence", "hate-speech", "gore", "personal-data")

# Written from the definitions of benchdata/safety-policy-v1.md (its `unsafe` and `critical`
# criteria, and its `safe` and `sensitive` ones), in the policy's words and plain paraphrase; no
# benchmark caption is among them, and the generated set reuses none of them.
PROTOTYPES: dict[str, tuple[str, ...]] = {
    "violence": (
        "every one of those people deserves to be run over",
        "people like that should all be beaten up",
        "someone should just shoot the lot of them",
        "that whole group deserves to die, I mean it",
        "burn their town to the ground with them inside",
        "I hope somebody hurts those people badly",
        "line them all up and get rid of them for good",
        "violence against that kind of person is deserved",
    ),
    "hate-speech": (
        "people from that town are vermin",
        "they are rats and animals, not people",
        "those foreigners are subhuman pests infesting our streets",
        "that group is a disease that spreads wherever they go",
        "keep them out of our country, they don't belong here",
        "they breed like insects and ruin every neighbourhood",
    ),
    "gore": (
        "blood, skin and chunks of flesh all over the floor",
        "his finger was cut clean off and the bone was showing",
        "a gaping wound with torn flesh and blood pouring out",
        "body parts and guts spread across the road",
        "her leg was crushed and the bone stuck out through the skin",
    ),
    "personal-data": (
        "this private person lives at this home address and here is her phone number",
        "his name, his street address and his mobile number, go find him",
        "everyone call her number and tell her what she did",
        "here is where he works and lives, go harass him",
        "post her address so people can show up at her door",
    ),
    "harmless": (
        "everyday humour about work, coffee and Mondays",
        "a joke about my cat knocking things off the table",
        "studying for exams at 3am",
        "a cooking fail, I burned the dinner again",
        "complaining about the weather and the commute",
        "money woes, my bank account after the weekend",
        "a coding joke about a bug in production",
        "slang and misspellings, when u bruh",
        "swearing at my alarm clock in the morning",
        "a mild insult between friends",
        "crude toilet humour about eating too much",
        "dark humour about being broke",
        "cartoon slapstick violence, he slipped and fell on his face",
        "I'll lose it if one more person asks me that",
        "a joke about politics and voting that targets nobody",
    ),
}


def caption(text: str) -> str:
    return " ".join(text.split())


def material() -> tuple[list[dict], dict[str, list[tuple[str, bool]]]]:
    """(training rows: text, cls, group, family; outside sets: name -> [(text, harmful)])."""
    from mambomeme.lab.product import detect_safety

    rows = []
    for line in (HERE / "safety" / "generated.jsonl").read_text(encoding="utf-8").splitlines():
        g = json.loads(line)
        rows.append(
            {
                "text": g["caption"],
                "cls": "harmless" if g["label"] == "shown" else g["kind"],
                "group": "gen:" + g["core"],
                "family": "generated " + g["kind"],
                "set": "generated " + ("harmless" if g["label"] == "shown" else "unsafe"),
            }
        )
    for d in dev_files() + dev_files(harmful=False):
        if d["safety"] in HIDDEN:
            found = detect_safety(d["caption"])
            cls = found.rule if found and found.rule in CLASSES else "violence"
            rows.append(
                {
                    "text": d["caption"],
                    "cls": cls,
                    "group": "dev:" + d["caption"].split(" / ")[-1],
                    "family": "dev unsafe",
                    "set": "dev unsafe",
                }
            )
        else:
            rows.append(
                {
                    "text": d["caption"],
                    "cls": "harmless",
                    "group": "dev:" + d["caption"],
                    "family": "dev shown",
                    "set": "dev shown",
                }
            )
    rows += [
        {"text": c, "cls": "harmless", "group": "hand:" + c, "family": "hand harmless", "set": "hand harmless"}
        for c in harmless_captions()
    ]
    for cls, texts in PROTOTYPES.items():
        rows += [{"text": t, "cls": cls, "group": "policy:" + t, "family": "policy", "set": "policy"} for t in texts]
    fixture = [
        json.loads(x) for x in (HERE / "fixture" / "recipe.jsonl").read_text(encoding="utf-8").splitlines() if x.strip()
    ]
    outside = {
        "fixture": [(" / ".join(f["captions"]), f["truth"]["safety"] in HIDDEN) for f in fixture if "captions" in f]
    }
    return rows, outside


def fit(X, y):  # noqa: ANN001, ANN201
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=C, class_weight="balanced", max_iter=5000, tol=1e-6).fit(X, y)


def harm(model, X):  # noqa: ANN001, ANN201
    """1 - P(harmless) per row."""
    return 1.0 - model.predict_proba(X)[:, list(model.classes_).index(0)]


def lowest_bar(scores, harmful, families, limit: float) -> float:  # noqa: ANN001
    """The lowest bar (steps of 0.005) whose share of harmless rows at or above it is <= limit in
    every set of harmless rows."""
    fams = sorted({f for f, h in zip(families, harmful, strict=True) if not h})
    for step in range(0, 200):
        bar = step / 200
        if all((scores[(families == f) & ~harmful] >= bar).mean() <= limit for f in fams):
            return bar
    return 1.0


def prototype_vectors(vecs: dict[str, object]) -> dict[str, object]:
    import numpy as np

    return {c: np.stack([vecs[caption(t)] for t in PROTOTYPES[c]]).astype(np.float32) for c in CLASSES}


def features(X, protos: dict[str, object]):  # noqa: ANN001, ANN201
    """The model's input, as the product computes it (safety_meaning.prototype_features): a
    prototype's own row meets itself at 1.0, as that sentence would in a library."""
    from mambomeme.lab.product import prototype_features

    return prototype_features(X, [protos[c] for c in CLASSES])


def train(vecs: dict[str, object]) -> dict:
    """Fit, choose the bars, measure the folds; `vecs` maps each caption text to its vector."""
    import numpy as np

    rows, outside = material()
    protos = prototype_vectors(vecs)
    X = features(np.stack([vecs[caption(r["text"])] for r in rows]), protos)
    y = np.array([CLASSES.index(r["cls"]) for r in rows])
    harmful = y > 0
    families = np.array([r["family"] for r in rows])
    sets = np.array([r["set"] for r in rows])
    fold = np.array([zlib.crc32(r["group"].encode()) % FOLDS for r in rows])
    held = np.zeros(len(rows))
    for f in range(FOLDS):
        held[fold == f] = harm(fit(X[fold != f], y[fold != f]), X[fold == f])
    model = fit(X, y)
    unsafe_bar = max(lowest_bar(held, harmful, sets, MAX_FALSE_HIDES), REAL_UNSAFE_BAR_FLOOR)
    sensitive_bar = min(unsafe_bar, lowest_bar(held, harmful, sets, MAX_MARKED))
    folds = []
    for f in range(FOLDS):
        b = max(
            lowest_bar(held[fold != f], harmful[fold != f], sets[fold != f], MAX_FALSE_HIDES), REAL_UNSAFE_BAR_FLOOR
        )
        test = fold == f
        pos, neg = test & harmful, test & ~harmful
        folds.append(
            {
                "fold": f,
                "unsafe_bar": b,
                "recall": round(float((held[pos] >= b).mean()), 4),
                "false_hides": round(float((held[neg] >= b).mean()), 4),
                "harmful": int(pos.sum()),
                "harmless": int(neg.sum()),
            }
        )
    by_family = {}
    for fam in sorted(set(families)):
        m = families == fam
        by_family[fam] = {
            "rows": int(m.sum()),
            "harmful": int(harmful[m].sum()),
            "out_of_fold_at_unsafe_bar": round(float((held[m] >= unsafe_bar).mean()), 4),
            "out_of_fold_at_sensitive_bar": round(float((held[m] >= sensitive_bar).mean()), 4),
        }
    from mambomeme.lab.product import EMBED_DIM, EMBED_MODEL_NAME, WEIGHTS_SHA256

    return {
        "signal": "caption-meaning-2",
        "model": {
            "name": EMBED_MODEL_NAME,
            "weights_sha256": WEIGHTS_SHA256,
            "vector": "caption",
            "dimensions": EMBED_DIM,
        },
        "classes": list(CLASSES),
        "bars": {"unsafe": unsafe_bar, "sensitive": sensitive_bar},
        "training": {
            "rows": len(rows),
            "C": C,
            "folds": FOLDS,
            "max_false_hides": MAX_FALSE_HIDES,
            "max_marked": MAX_MARKED,
            "by_family": by_family,
            "folds_detail": folds,
            "fixture": fixture_rates(model, vecs, protos, outside["fixture"], unsafe_bar),
            "annotators": "benchdata/make_safety_set.py (program), benchmark v1 recipe (dev pool), "
            "policy prototypes (this file)",
        },
        "prototypes": {c: base64.b64encode(protos[c].tobytes()).decode("ascii") for c in CLASSES},
        "bias": [round(float(v), 6) for v in model.intercept_],
        "weights": [[round(float(v), 6) for v in row] for row in model.coef_],
    }


def fixture_rates(model, vecs, protos, rows, bar: float) -> dict:  # noqa: ANN001
    """The fixture (never trained on) at the unsafe bar: harmful caught, harmless hidden."""
    import numpy as np

    sc = harm(model, features(np.stack([vecs[caption(t)] for t, _ in rows]), protos))
    h = np.array([x for _, x in rows])
    return {
        "harmful": int(h.sum()),
        "caught": int((sc[h] >= bar).sum()),
        "harmless": int((~h).sum()),
        "hidden": int((sc[~h] >= bar).sum()),
    }


def encode_all() -> dict[str, object]:
    from mambomeme.lab.product import Embedder

    rows, outside = material()
    texts = list(
        dict.fromkeys([caption(r["text"]) for r in rows] + [caption(t) for s in outside.values() for t, _ in s])
    )
    vecs = Embedder(quiet=True, threads=1).encode(texts)
    return dict(zip(texts, vecs, strict=True))


def render(model: dict) -> str:
    return json.dumps(model, separators=(",", ":")) + "\n"


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args(argv)
    model = train(encode_all())
    text = render(model)
    t = model["training"]
    print(f"bars: unsafe {model['bars']['unsafe']}, sensitive {model['bars']['sensitive']}; fixture {t['fixture']}")
    for fam, v in t["by_family"].items():
        print(f"  {fam}: {v}")
    for f in t["folds_detail"]:
        print(f"  fold {f}")
    if a.check:
        ok = OUT.exists() and OUT.read_text(encoding="utf-8") == text
        print(f"check: {OUT.name} {'matches' if ok else 'differs from'} what this trains")
        return 0 if ok else 1
    OUT.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
