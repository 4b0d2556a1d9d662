#!/usr/bin/env python3
"""Compounds in a query: a word typed run together whose pieces are two common words ("furball"),
and two words typed apart or hyphenated that a caption or a name holds as one ("mail-box",
"mailbox"). Rules for each are measured against the reading they change (mambomeme/query_plan.py:
`dense_pieces`, `joined_words`, `glued_words`), each a patch of one of those functions.

    query_compounds.py dev LIB...              # per library copy: slice nDCG@10, CorrectEmpty, emptied
    query_compounds.py glued SNAPSHOT --db LIB # the glued-word sets of glued_words.py library

`dev`: each library must hold a judged partition and a run of bm25, dense and hybrid made by the
tree's code with no rule patched (`mambo --db COPY run --system S`): those runs are the baseline.
A rule changes the plan of few queries; only those are searched, under the reading without any
rule ("main": the product with `joined_words` returning nothing and `dense_pieces` always true) and
under the rule, and each slice's stored nDCG@10 moves by the difference over its query count (a query
whose plan is unchanged gets the same list: the search is deterministic). Unjudged results count
as grade 0; the number of unjudged top-10 results of the changed queries is printed.

`glued`: glued_words.py's three sets (spaced queries of glued captions, typed glued queries, the
control) with its searches run in this process under each rule: a query whose plan no rule
changes is searched once.

Variants: main (no rule), shipped (the product as it is: aligned and join-mark), whole (a glued
word's pieces never in the dense text), compound (not when they are two common English words),
aligned (not when the embedding model's own word pieces of the word are the split: the product's
dense_pieces), side (a word split only when the library holds its pieces side by side, or it is 12
letters or more), join-mark (words joined by a mark: the product's joined_words), join-apart (two
words typed apart, neither a stopword), join (both).
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchdata" / "experiments"))

from mambomeme.lab.product import DB, plan_for, query_plan, searcher_for  # noqa: E402

SHIPPED = {name: getattr(query_plan, name) for name in ("dense_pieces", "joined_words", "glued_words")}
SYSTEMS = ("bm25", "dense", "hybrid")
SLICES = ("entity", "quote", "topic", "semantic", "visual", "noisy")
SIDE_LONG = 12


def compound(word: str, pieces: list[str]) -> bool:
    """Not for two common English words ("furball", "rollsafe")."""
    return not (len(pieces) == 2 and all(query_plan.is_real_word(p) for p in pieces))


def side_by_side(db, words, docs):  # noqa: ANN001, ANN201
    glued = SHIPPED["glued_words"](db, words, docs)
    keep = {}
    for word, pieces in glued.items():
        phrase = '"' + " ".join(pieces) + '"'
        held = db.con.execute(
            "SELECT EXISTS (SELECT 1 FROM items_fts WHERE items_fts MATCH ?)",
            (phrase,),  # the word index, as the product's word route reads it
        ).fetchone()[0]
        if held or len(word) >= SIDE_LONG:
            keep[word] = pieces
    return keep


def apart(db, text, tokens):  # noqa: ANN001, ANN201
    """Two words typed apart, neither a stopword, that the library holds as one word."""
    pairs = {(a, b) for a, b in zip(tokens, tokens[1:], strict=False) if not {a, b} & query_plan.STOPWORDS}
    words = {a + b: (a, b) for a, b in sorted(pairs)}
    held = db.con.execute(
        "SELECT term, docs FROM vocabulary WHERE term IN (SELECT value FROM json_each(?))", (json.dumps(sorted(words)),)
    )
    return {words[w]: w for w, n in held if n >= query_plan.JOINED_MIN_DOCS and w not in tokens}


def none(*_args):  # noqa: ANN002, ANN201
    return {}


def always(*_args):  # noqa: ANN002, ANN201
    return True


def never(*_args):  # noqa: ANN002, ANN201
    return False


VARIANTS = {
    "main": {"joined_words": none, "dense_pieces": always},
    "shipped": {},
    "whole": {"joined_words": none, "dense_pieces": never},
    "compound": {"joined_words": none, "dense_pieces": compound},
    "aligned": {"joined_words": none},
    "side": {"joined_words": none, "dense_pieces": always, "glued_words": side_by_side},
    "join-mark": {"dense_pieces": always},
    "join-apart": {"joined_words": apart, "dense_pieces": always},
    "join": {"joined_words": lambda *a: SHIPPED["joined_words"](*a) | apart(*a), "dense_pieces": always},
}


def use(variant: str) -> None:
    for name, fn in (SHIPPED | VARIANTS[variant]).items():
        setattr(query_plan, name, fn)


def plan_key(db: DB, query: str, cfg: str = "hybrid") -> str:
    """What a search reads of a query's plan, as one string: equal keys, equal lists."""
    p = plan_for(db, query, cfg)
    return json.dumps([p.dense_text, p.word_match, p.trigram_match, p.content, p.alternatives, p.unknown, p.corrected])


def changed(db: DB, queries: list[str], variant: str) -> list[str]:
    use("main")
    before = {q: plan_key(db, q) for q in queries}
    use(variant)
    return [q for q in queries if plan_key(db, q) != before[q]]


def ndcg(ids: list[int], grades: dict[int, float]) -> float:
    ideal = sorted((g for g in grades.values() if g > 0), reverse=True)[:10]
    idcg = sum((2**g - 1) / math.log2(i + 2) for i, g in enumerate(ideal))
    dcg = sum((2 ** grades.get(i, 0.0) - 1) / math.log2(n + 2) for n, i in enumerate(ids[:10]))
    return dcg / idcg if idcg else 0.0


def dev_library(path: str, variants: list[str]) -> None:
    db = DB(path, readonly=True)
    runs = {
        name: (run_id, set_id)
        for run_id, name, set_id in db.con.execute(
            "SELECT r.run_id, s.name, r.set_id FROM runs r JOIN systems s USING (system_id)"
            " WHERE r.library = 'annotated' ORDER BY r.run_id"
        )
    }
    queries = list(db.con.execute("SELECT query_id, query, slice FROM bench_queries ORDER BY query_id"))
    by_text = {q: (qid, s) for qid, q, s in queries}
    slice_n = collections.Counter(s for _qid, _q, s in queries)
    print(f"\n## {Path(path).name}: {len(queries)} queries ({dict(slice_n)}); baseline runs {runs}\n")
    print("| variant | system | changed queries | " + " | ".join(SLICES) + " | CorrectEmpty | emptied | unjudged |")
    print("|---|---|---|" + "---|" * (len(SLICES) + 3))
    for variant in variants:
        moved = changed(db, [q for _qid, q, _s in queries], variant)
        for system in SYSTEMS:
            run_id, set_id = runs[system]
            stored = dict(db.con.execute("SELECT slice, ndcg10 FROM slice_metrics WHERE run_id = ?", (run_id,)))
            ce = db.con.execute("SELECT correct_empty FROM run_components WHERE run_id = ?", (run_id,)).fetchone()[0]
            emptied = db.con.execute(
                "SELECT sum(empty) FROM query_metrics WHERE run_id = ? AND slice <> 'no-match'", (run_id,)
            ).fetchone()[0]
            delta, d_ce, d_empty, unjudged, notes = collections.Counter(), 0, 0, 0, []
            searcher = searcher_for(db, system)
            for q in moved:
                qid, sl = by_text[q]
                rows = db.con.execute(
                    "SELECT item_id, grade FROM final_judgements WHERE set_id = ? AND query_id = ?", (set_id, qid)
                )
                grades = {i: g for i, g in rows if g is not None}  # a pair still to grade counts as unjudged
                lists = {}
                for v in ("main", variant):
                    use(v)
                    lists[v] = [r.item_id for r in searcher.search(q, system, 10)]
                if sl == "no-match":
                    d_ce += (not lists[variant]) - (not lists["main"])
                else:
                    a, b = ndcg(lists["main"], grades), ndcg(lists[variant], grades)
                    delta[sl] += b - a
                    d_empty += (not lists[variant]) - (not lists["main"])
                    if abs(b - a) > 1e-9:
                        notes.append(f"{q!r} {a:.3f}->{b:.3f}")
                unseen = [i for i in lists[variant] if i not in grades]
                unjudged += len(unseen)
                if unseen:
                    notes.append(f"{q!r}: unjudged in its top 10: {unseen}")
            n_no = slice_n["no-match"] or 1
            cells = [
                f"{stored.get(s, 0):.3f}" + (f" -> {stored[s] + delta[s] / slice_n[s]:.3f}" if delta[s] else "")
                for s in SLICES
            ]
            ce_cell = f"{ce:.3f}" + (f" -> {ce + d_ce / n_no:.3f}" if d_ce else "")
            print(
                f"| {variant} | {system} | {len(moved)} | "
                + " | ".join(cells)
                + f" | {ce_cell} | {emptied} -> {emptied + d_empty} | {unjudged} |"
            )
            for note in notes:
                print(f"|  |  | {note} |" + " |" * (len(SLICES) + 3))
    use("shipped")


def glued(a: argparse.Namespace) -> None:
    import glued_words  # benchdata/experiments/glued_words.py

    db = DB(a.db, readonly=True)
    searcher = searcher_for(db, "hybrid")
    cache: dict[tuple[str, str], list[tuple[str, str]]] = {}

    def search(_tree: str, _db: str, queries: list[str]) -> dict[str, list[tuple[str, str]]]:
        out = {}
        for q in queries:
            key = (q, plan_key(db, q))
            if key not in cache:
                cache[key] = [
                    (str(Path(r.details["root_path"]) / r.details["rel_path"]), r.details["ocr_text"] or "")
                    for r in searcher.search(q, "hybrid", glued_words.SHOWN)
                ]
            out[q] = cache[key]
        return out

    glued_words.search = search
    for variant in a.variants:
        print(f"\n## {variant}\n", flush=True)
        use(variant)
        glued_words.library_command(
            argparse.Namespace(
                snapshot=a.snapshot, db=a.db, tree=str(REPO), root=a.root, typed=300, search=True, show=0, misses=False
            )
        )
    use("shipped")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    d = sub.add_parser("dev")
    d.add_argument("libraries", nargs="+")
    d.add_argument("--variants", nargs="+", default=[v for v in VARIANTS if v != "main"])
    g = sub.add_parser("glued")
    g.add_argument("snapshot")
    g.add_argument("--db", required=True)
    g.add_argument("--root", default="/work/real-out")
    g.add_argument("--variants", nargs="+", default=list(VARIANTS))
    a = ap.parse_args()
    if a.command == "dev":
        for lib in a.libraries:
            dev_library(lib, a.variants)
    else:
        glued(a)


if __name__ == "__main__":
    main()
