"""The words-there rule (search.WORDS_THERE_TOP) on the fixture's short captions: windows of each
caption (as the library read it) typed as queries, as typed or with the longest word's second and
third letters swapped, counted where the evidence model alone says "no match" and the rule answers.

    .venv/bin/python benchdata/experiments/words_there_fixture.py ANNOTATED BARE 4 swap
    .venv/bin/python benchdata/experiments/words_there_fixture.py ANNOTATED BARE 2 exact
(ANNOTATED, BARE: the fixture images ingested with and without --no-sidecars)
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))

from mambomeme.lab.product import DB, STOPWORDS, Searcher, get_embedder, system_config  # noqa: E402


def main() -> int:
    annotated, bare, width, kind = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    embedder = get_embedder()
    for label, path in (("annotated", annotated), ("bare", bare)):
        db = DB(path, create=False)
        searcher = Searcher(db, embedder)
        total, saved = 0, {"hybrid": 0, "dense": 0}
        for (caption,) in db.con.execute("SELECT ocr_text FROM items ORDER BY item_id"):
            words = re.findall(r"[a-z]+", caption.lower())
            for i in range(0, max(1, len(words) - 1), 2):
                window = words[i : i + width]
                long = [w for w in window if len(w) >= 4 and w not in STOPWORDS]
                if not long:
                    continue
                w = max(long, key=len)
                typo = w[0] + w[2] + w[1] + w[3:]
                query = " ".join(window) if kind == "exact" else " ".join(typo if x == w else x for x in window)
                total += 1
                for name in saved:
                    cfg = system_config(db, name)
                    after = searcher.search(query, cfg, 10)
                    before = searcher.search(query, {k: v for k, v in cfg.items() if k != "words_there_top"}, 10)
                    if after and not before:
                        saved[name] += 1
                        top = [Path(r.details["rel_path"]).name for r in after if r.holds_query]
                        print(f"{label} {name} {query!r}: answered, words there in {top}")
        print(f"{label}: {total} queries ({width} words, {kind}); emptied by the model, answered by the rule: {saved}")
        db.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
