"""Folds held out by template, for fitting a calibrated choice on the real-style set.

A choice fitted on development material must be measured on templates it was not fitted on: memes
of one template share a picture and a style of caption, so a fold that split a template would
measure memorisation. Each template has one fold, the SHA-256 of its name modulo FOLDS; a query
family (a query and its paraphrases and misspellings) belongs to the fold of the templates its
judged grade-3 memes are on (the most of them), a no-match family to the fold of its name's
SHA-256: a family is never split.

    python benchdata/real/folds.py                    # templates and queries per fold
    python benchdata/real/folds.py --queries          # qid<TAB>fold, for a fitting script
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
FOLDS = 5


def _fold(key: str) -> int:
    return int(hashlib.sha256(key.encode("utf-8")).hexdigest()[:8], 16) % FOLDS


def template_fold(template: str) -> int:
    return _fold("template:" + template)


def load_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def query_folds(judged: Path | None = None) -> dict[str, int]:
    """qid -> fold, from the judged labels (judgements/dev-set1.jsonl) and the folder's truth."""
    truth = {t["file"]: t for t in load_jsonl(HERE / "truth.jsonl")}
    labels = load_jsonl(judged or HERE / "judgements" / "dev-set1.jsonl")
    queries = load_jsonl(HERE / "dev.jsonl")
    family = {q["id"]: q["family"] for q in queries}
    votes: dict[str, collections.Counter[int]] = collections.defaultdict(collections.Counter)
    for row in labels:
        t = truth.get(row["path"])
        if t is None or row["grade"] < 3 or row["qid"] not in family:
            continue
        for template in t.get("templates") or [t.get("template")]:
            votes[family[row["qid"]]][template_fold(template)] += 1
    fold_of = {
        f: (votes[f].most_common(1)[0][0] if votes.get(f) else _fold("family:" + f)) for f in set(family.values())
    }
    return {q["id"]: fold_of[q["family"]] for q in queries}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--queries", action="store_true", help="print each query's fold")
    args = ap.parse_args()
    folds = query_folds()
    if args.queries:
        for qid, fold in sorted(folds.items()):
            print(f"{qid}\t{fold}")
        return
    templates = {t.get("template") for t in load_jsonl(HERE / "truth.jsonl") if t.get("template")}
    per_template = collections.Counter(template_fold(t) for t in templates)
    per_query = collections.Counter(folds.values())
    for k in range(FOLDS):
        print(f"fold {k}: {per_template[k]} templates, {per_query[k]} queries")


if __name__ == "__main__":
    main()
