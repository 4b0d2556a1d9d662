#!/usr/bin/env python3
"""Words run together (OCR's "THEFIFTH WALL", a typed "nobodygetsonline"): how well
mambomeme/words.py splits them, and whether the memes that hold them are found.

    glued_words.py split SNAPSHOT                   # the glued-word set: split precision, the sweep
    glued_words.py library SNAPSHOT --db LIB --tree TREE [--show N]

`split`: development captions of the real-style set (the ImgFlip575K snapshot's, read at run time;
only post ids whose SHA-256 starts 0-7, benchdata/real/snapshot.dev_entries) and benchmark v1's
dev-pool captions (corpus.jsonl). From each caption, 2-4 adjacent words of one line are run
together as OCR does when it misses a space ("nobody gets online" -> "nobodygetsonline"). A split is
right when it gives back exactly the words run together. The minimum length and the pieces' minimum
English count are chosen on one half of the templates and measured on the other (two folds by
template), against the cost: unknown single words of the same captions (names, typos, slang) that a
rule would split. The "library" a split may consult is the sampled captions themselves (their
document counts).

`library`: the real-style folder's library, whose OCR runs real words together. Each file's caption
is known from the snapshot (benchdata/real/truth.jsonl: file -> post), so an OCR token that is 2-4
adjacent caption words run together is a real glued token with its true split. Reports how many
items hold split words (the `ocr_words` column, when the library has it), the precision of the
splits of real glued tokens, the sweep of LIBRARY_WORD_MIN_DOCS (how many documents make a token a
word of the library; two folds by template), and three searches per glued meme through
`mambo search --json` (hybrid, the queries piped in; TREE's mambo.py under this interpreter): its
words as a person types them (the glued words spaced, with the next caption word), and a typed
glued run ("nobodygetsonline") of 2-4 caption words the OCR read apart; found = a file of the same
post at rank 1. The control is the typed set's words typed apart (with the next word), which
the OCR read apart too: what such a fragment finds when no glue is in the way. Run it with the
tree and library before and after a change: the query sets depend only on the library's OCR text
and the snapshot. Each miss is classified from the first 10 results: "no match"; not in the first
10; below memes that all hold the query's words side by side (a tie: the query cannot tell them
apart, counted as found in the second figure; so is a meme not in the first 10 when all 10 hold
them: more memes hold the fragment than the list shows); below other memes; for a typed glued query also
whether the product's query reading splits it right, wrong or not at all.

Nothing of the snapshot is written anywhere; the output holds counts only (`--show N` prints N
sampled splits of the library to judge by hand, for the terminal, not for the result file).
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import apsw

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchdata" / "real"))

import snapshot  # noqa: E402  (benchdata/real/snapshot.py)

from mambomeme.lab.product import (  # noqa: E402
    GLUED_MIN_LENGTH,
    LIBRARY_WORD_MIN_DOCS,
    PIECE_MIN_COUNT,
    english_frequencies,
    split_glued,
)

SEED = 49
PER_TEMPLATE = 60  # real-style captions sampled per template (v1: every dev-pool caption)
LENGTHS = (4, 5, 6, 7, 8, 9)
PIECE_COUNTS = (1, 10, 100, 1000, 2000)


def fold(template: str) -> int:
    return hashlib.sha256(template.encode()).digest()[0] % 2


def on_fold(rows: list, f: int) -> list:
    """The rows (template first) whose template is on fold `f`."""
    return [x for x in rows if fold(x[0]) == f]


def real_captions(snap: snapshot.Snapshot) -> dict[str, list[tuple[str, list[str]]]]:
    """template -> (post id, boxes) of its development captions that the folder's filters keep."""
    out = {}
    for rel in snap.list("dataset/memes"):
        data = snap.read(rel)
        if data is None:
            continue
        kept = []
        for pid, boxes in snapshot.dev_entries(data):
            cleaned = snapshot.clean_boxes(boxes)
            if cleaned:
                kept.append((pid, cleaned))
        out[snapshot.template_key(rel)] = kept
    return out


def v1_captions() -> dict[str, list[list[str]]]:
    out: dict[str, list[list[str]]] = collections.defaultdict(list)
    for line in (REPO / "benchdata/v1/corpus.jsonl").read_text().splitlines():
        d = json.loads(line)
        if (d.get("template") or {}).get("pool") == "dev" and d.get("captions"):  # copies have none
            out["v1:" + d["template"]["key"]].append([c for c in d["captions"] if c])
    return out


def glued_set(by_template: dict[str, list[list[str]]], rng: random.Random):
    """(template, glued token, its words) per caption, and the captions' unknown single words."""
    glued, singles, doc_words = [], [], collections.Counter()
    for template, captions in sorted(by_template.items()):
        for boxes in captions:
            lines = [snapshot.words(b) for b in boxes]
            doc_words.update({w for ws in lines for w in ws})
            runs = [ws for ws in lines if len(ws) >= 2]
            if not runs:
                continue
            ws = rng.choice(runs)
            n = min(rng.choice((2, 3, 4)), len(ws))
            i = rng.randrange(len(ws) - n + 1)
            glued.append((template, "".join(ws[i : i + n]), ws[i : i + n]))
            singles += [(template, w) for ws in lines for w in ws]
    freq = english_frequencies()
    glued = [(t, g, ws) for t, g, ws in glued if not freq[g] and doc_words[g] < 2 and not g.isdigit()]
    singles = sorted({(t, w) for t, w in singles if not freq[w] and doc_words[w] < 2 and w.isalpha()})
    return glued, singles, doc_words


def measure(glued, singles, known, length: int, pieces: int, **query) -> dict[str, float]:
    """`query`: read as a typed query is (split_glued's words_only, known_piece_length)."""
    right = wrong = 0
    for _t, g, ws in glued:
        got = split_glued(g, known, min_length=length, piece_min_count=pieces, **query)
        if got:
            right += got == ws
            wrong += got != ws
    split_singles = sum(
        bool(split_glued(w, known, min_length=length, piece_min_count=pieces, **query)) for _t, w in singles
    )
    n = max(len(glued), 1)
    return {
        "glued": len(glued),
        "split": right + wrong,
        "right": right,
        "precision": right / max(right + wrong, 1),
        "recall": right / n,
        "singles": len(singles),
        "singles_split": split_singles,
        # what a rule is chosen by: right splits, less wrong ones and split single words, per glued token
        "objective": (right - wrong - split_singles) / n,
    }


def row(name: str, m: dict[str, float]) -> str:
    return (
        f"| {name} | {m['glued']} | {m['split']} | {m['precision']:.3f} | {m['recall']:.3f} | "
        f"{m['singles_split']} / {m['singles']} | {m['objective']:.3f} |"
    )


HEADER = (
    "| set | glued tokens | split | precision | recall (right splits / glued) | single words split | objective |\n"
    "|---|---|---|---|---|---|---|"
)


def split_command(a: argparse.Namespace) -> None:
    rng = random.Random(SEED)
    real = real_captions(snapshot.open_snapshot(a.snapshot))
    by_template: dict[str, list[list[str]]] = {}
    for template, caps in real.items():
        picked = rng.sample(caps, min(PER_TEMPLATE, len(caps)))
        by_template["real:" + template] = [boxes for _pid, boxes in picked]
    by_template.update(v1_captions())
    glued, singles, known = glued_set(by_template, rng)
    print(
        f"captions: {sum(len(c) for k, c in by_template.items() if k.startswith('real:'))} real-style "
        f"({sum(k.startswith('real:') for k in by_template)} templates), "
        f"{sum(len(c) for k, c in by_template.items() if k.startswith('v1:'))} v1 dev "
        f"({sum(k.startswith('v1:') for k in by_template)} templates); seed {SEED}"
    )
    print(f"glued tokens neither English nor known: {len(glued)}; unknown single words: {len(singles)}\n")
    print("## The sweep on each fold (templates split in two by SHA-256 of the name)\n")
    chosen = {}
    for f in (0, 1):
        g = on_fold(glued, f)
        s = on_fold(singles, f)
        print(f"fold {f}: min length, piece min count -> objective (precision, recall, singles split)")
        results = {}
        for length in LENGTHS:
            cells = []
            for pieces in PIECE_COUNTS:
                m = results[length, pieces] = measure(g, s, known, length, pieces)
                cells.append(
                    f"{pieces}: {m['objective']:.3f} ({m['precision']:.3f}, {m['recall']:.3f}, {m['singles_split']})"
                )
            print(f"  L={length}  " + "  ".join(cells))
        chosen[f] = max(results, key=lambda k: (round(results[k]["objective"], 3), k[0]))
        print(f"  best on fold {f}: min length {chosen[f][0]}, piece min count {chosen[f][1]}\n")
    print("## Held out: each fold measured with the rule chosen on the other\n")
    print(HEADER)
    for f in (0, 1):
        length, pieces = chosen[1 - f]
        g = on_fold(glued, f)
        s = on_fold(singles, f)
        print(row(f"fold {f} (L={length}, pieces >= {pieces})", measure(g, s, known, length, pieces)))
    query_reading(glued, singles, known)
    print(f"\n## The product's constants (GLUED_MIN_LENGTH {GLUED_MIN_LENGTH}, PIECE_MIN_COUNT {PIECE_MIN_COUNT})\n")
    print(HEADER)
    for name, keep in (("real-style", "real:"), ("benchmark v1", "v1:"), ("all", "")):
        g = [x for x in glued if x[0].startswith(keep)]
        s = [x for x in singles if x[0].startswith(keep)]
        print(row(name, measure(g, s, known, GLUED_MIN_LENGTH, PIECE_MIN_COUNT)))


KNOWN_LENGTHS = (3, 4, 5, 6, 8, 10**6)  # 10**6: wordninja's pieces count only when every one is a word


def as_query(glued, singles, known, known_piece_length: int) -> dict[str, float]:
    """measure() with the tokens read as a typed query reads them (glued_words in query_plan.py)."""
    return measure(
        glued,
        singles,
        known,
        GLUED_MIN_LENGTH,
        PIECE_MIN_COUNT,
        library_word_docs=2,
        words_only=True,
        known_piece_length=known_piece_length,
    )


def query_reading(glued, singles, known) -> None:
    """The glued tokens typed as queries (library_word_docs 2, a split into words when wordninja's
    has a leftover): KNOWN_PIECE_LENGTH swept on each fold, measured on the other."""
    print("\n## The query reading: KNOWN_PIECE_LENGTH on each fold (a typed query is split into words only)\n")
    chosen = {}
    for f in (0, 1):
        g = on_fold(glued, f)
        s = on_fold(singles, f)
        results = {}
        for n in KNOWN_LENGTHS:
            m = results[n] = as_query(g, s, known, n)
            print(
                f"  fold {f} length {n if n < 10**6 else 'never'}: objective {m['objective']:.3f} (precision "
                f"{m['precision']:.3f}, recall {m['recall']:.3f}, singles split {m['singles_split']} / {m['singles']})"
            )
        chosen[f] = max(results, key=lambda k: (round(results[k]["objective"], 3), k))
    print("\n" + HEADER)
    for f in (0, 1):
        n = chosen[1 - f]
        g = on_fold(glued, f)
        s = on_fold(singles, f)
        m = as_query(g, s, known, n)
        print(row(f"fold {f} (known piece length {n if n < 10**6 else 'never'})", m))


# -- the library


TEMPLATE: dict[str, str] = {}  # post -> template (truth.jsonl)
SLANG: set[str] = set()  # the library's query_aliases terms
LIBRARY_WORD_DOCS = (2, 3, 5, 10, 20, 10**9)


def library_truth(snap: snapshot.Snapshot) -> tuple[dict[str, set[str]], dict[str, list[str]]]:
    """file -> the posts it shows, and post -> its caption's words in order."""
    truth = [json.loads(x) for x in (REPO / "benchdata/real/truth.jsonl").read_text().splitlines() if x]
    posts_of = {t["file"]: set(t.get("posts") or [t["post"]]) for t in truth}
    TEMPLATE.update({t["post"]: t["template"] for t in truth if t.get("post")})
    wanted = {p for ps in posts_of.values() for p in ps}
    words = {}
    for _template, caps in real_captions(snap).items():
        for pid, boxes in caps:
            if pid in wanted:
                words[pid] = snapshot.words(" ".join(boxes))
    return posts_of, words


def glued_in(ocr: list[str], caption: list[str]) -> list[tuple[str, list[str], str]]:
    """OCR tokens that are 2-4 adjacent caption words run together: (token, its words, next word)."""
    found = {}
    single = set(caption)
    for i in range(len(caption)):
        for n in (2, 3, 4):
            run = caption[i : i + n]
            if len(run) == n and (g := "".join(run)) in ocr and g not in single:
                nxt = caption[i + n] if i + n < len(caption) else (caption[i - 1] if i else "")
                found.setdefault(g, (g, run, nxt))
    return list(found.values())


def library_word_sweep(items: list[tuple[str, list[str], list[str]]], docs: dict[str, int]) -> None:
    """(post, OCR tokens, caption words) per item: real glued tokens split right / wrong / left
    whole, and other tokens split (neither a caption word nor a glued run: OCR misreads), per fold,
    for each number of documents that makes a token a word of the library."""
    print("\nLIBRARY_WORD_MIN_DOCS sweep: right / wrong / whole glued tokens, other tokens split")
    for f in (0, 1):
        cells = []
        for n in LIBRARY_WORD_DOCS:
            right = wrong = whole = other = 0
            for post, ocr, cap in items:
                if fold(TEMPLATE[post]) != f:
                    continue
                runs = {g: run for g, run, _nxt in glued_in(ocr, cap)}
                for t in set(ocr):
                    got = split_glued(t, docs, SLANG, library_word_docs=n)
                    if t in runs:
                        right, wrong, whole = (
                            right + (got == runs[t]),
                            wrong + (bool(got) and got != runs[t]),
                            whole + (not got),
                        )
                    elif got and t not in cap:
                        other += 1
            cells.append(f"{'never' if n >= 10**9 else n}: {right}/{wrong}/{whole}, {other}")
        print(f"  fold {f}  " + "  ".join(cells))


def search(tree: str, db: str, queries: list[str]) -> dict[str, list[tuple[str, str]]]:
    """Each query's first SHOWN results (path, OCR text) through `mambo search --json` ([]: no match)."""
    # mambo.py with this interpreter (the launcher would prepare a virtual environment of its own)
    env = os.environ | {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    proc = subprocess.run(
        [sys.executable, str(Path(tree) / "mambo.py"), "--db", db, "search", "--json", "-n", str(SHOWN)]
        + ["-s", "hybrid"],
        input="".join(q + "\n" for q in queries),
        capture_output=True,
        text=True,
        cwd=tree,
        env=env,
        check=False,
    )
    if proc.returncode not in (0, 1):
        raise SystemExit(proc.stderr.strip()[-400:])
    ranked: dict[str, list[tuple[str, str]]] = {q: [] for q in queries}
    for line in proc.stdout.splitlines():
        d = json.loads(line)
        if not d.get("no_match") and d.get("rank"):
            ranked[d["query"]].append((d["path"], d.get("ocr_text") or ""))
    return ranked


SHOWN = 10  # results read per query: where the meme sought ranks, and what ranks above it
MISSES = (
    "no match",
    "not in the first 10",
    "below memes holding the words as a phrase",
    "below other memes",
    "not in the first 10, all 10 holding the words as a phrase",
)
TIES = (MISSES[2], MISSES[4])  # the query cannot tell the meme sought from those above it


def phrase_in(words: list[str], text: str, docs: dict[str, int]) -> bool:
    """Whether `words` stand adjacent in `text`, its run-together tokens read as their pieces."""
    toks = [p for t in snapshot.words(text) for p in (split_glued(t, docs, SLANG) or [t])]
    n = len(words)
    return any(toks[i : i + n] == words for i in range(len(toks) - n + 1))


def outcome(post: str, words: list[str], ranked: list[tuple[str, str]], posts_of, root, docs) -> str:
    """ "hit", or why the meme of `post` is not first (MISSES)."""
    posts = [posts_of.get(str(Path(path).relative_to(root)), set()) for path, _text in ranked]
    if not ranked:
        return MISSES[0]
    at = next((i for i, ps in enumerate(posts) if post in ps), None)
    if at == 0:
        return "hit"
    if at is None:
        ten = len(ranked) >= SHOWN and all(phrase_in(words, text, docs) for _path, text in ranked[:SHOWN])
        return MISSES[4] if ten else MISSES[1]
    above = all(phrase_in(words, text, docs) for _path, text in ranked[:at])
    return MISSES[2] if above else MISSES[3]


def library_command(a: argparse.Namespace) -> None:
    posts_of, caption = library_truth(snapshot.open_snapshot(a.snapshot))
    con = apsw.Connection(a.db, flags=apsw.SQLITE_OPEN_READONLY)  # read as it is: no migration
    cols = {r[1] for r in con.execute("PRAGMA table_info(items)")}
    words_col = "coalesce(i.ocr_words, '')" if "ocr_words" in cols else "''"
    rows = con.execute(
        f"SELECT l.path, l.ocr_text, {words_col} FROM library l JOIN items i USING (item_id)"  # noqa: S608
    ).fetchall()
    known = {t: int(n) for t, n in con.execute("SELECT term, docs FROM vocabulary")}
    SLANG.update(t for (t,) in con.execute("SELECT DISTINCT term FROM query_aliases"))
    print(f"library {Path(a.db).name}: {len(rows)} items; {sum(bool(w) for _p, _o, w in rows)} hold split words")
    print(f"(LIBRARY_WORD_MIN_DOCS {LIBRARY_WORD_MIN_DOCS}, GLUED_MIN_LENGTH {GLUED_MIN_LENGTH}, ", end="")
    print(f"PIECE_MIN_COUNT {PIECE_MIN_COUNT})")
    rng = random.Random(SEED)
    right = wrong = missed = 0
    items = []
    spaced, typed, control, sample, typed_words = {}, {}, {}, [], {}
    for path, ocr_text, ocr_words in sorted(rows):
        posts = posts_of.get(path, set())
        if len(posts) != 1 or next(iter(posts)) not in caption:
            continue
        post = next(iter(posts))
        ocr = snapshot.words(ocr_text)
        items.append((post, ocr, caption[post]))
        for g, run, nxt in glued_in(ocr, caption[post]):
            got = split_glued(g, known, SLANG)
            right += got == run
            wrong += bool(got) and got != run
            missed += not got
            spaced.setdefault(post, " ".join([*run, nxt]).strip())
        if ocr_words:
            sample.append((ocr_text, ocr_words))
        # a run of 2-4 caption words the OCR read apart, typed run together
        for n in (4, 3, 2):
            starts = [
                i
                for i in range(len(caption[post]) - n + 1)
                if " ".join(caption[post][i : i + n]) in " ".join(ocr) and len("".join(caption[post][i : i + n])) >= 8
            ]
            if starts and post not in typed:
                i = rng.choice(starts)
                typed[post] = "".join(caption[post][i : i + n])
                typed_words[post] = caption[post][i : i + n]
                # the control: the same words typed apart, with the next one, as the spaced queries are
                nxt = caption[post][i + n : i + n + 1] or caption[post][max(i - 1, 0) : i]
                control[post] = " ".join(caption[post][i : i + n] + nxt)
    real_glued = right + wrong + missed
    print(
        f"real glued OCR tokens (2-4 caption words run together): {real_glued}; split right {right}, "
        f"split wrong {wrong}, left whole {missed}; precision {right / max(right + wrong, 1):.3f}, "
        f"recall {right / max(real_glued, 1):.3f}"
    )
    library_word_sweep(items, known)
    typed_sample = dict(rng.sample(sorted(typed.items()), min(a.typed, len(typed))))
    control_sample = {post: control[post] for post in typed_sample}
    sets = (
        ("glued caption, spaced query", spaced),
        ("typed glued query", typed_sample),
        ("control: the typed set's words typed apart, OCR read apart", control_sample),
    )
    for name, queries in sets[: 3 * a.search]:
        ranked = search(a.tree, a.db, sorted(set(queries.values())))
        said = collections.Counter()
        for post, q in queries.items():
            words = typed_words[post] if queries is typed_sample else q.split()
            got = outcome(post, words, ranked[q], posts_of, a.root, known)
            if queries is typed_sample and got != "hit":
                split = split_glued(q, known, SLANG, library_word_docs=2, words_only=True)
                got += ", " + ("split right" if split == words else "split wrong" if split else "not split")
            said[got] += 1
            if got != "hit" and a.misses:
                print(f"    MISS {got}: {q!r} -> {[' '.join(t.split())[:60] for _p, t in ranked[q][:2]]}")
        found = said["hit"]
        ties = sum(n for k, n in said.items() if any(k == t or k.startswith(t + ", split") for t in TIES))
        n = max(len(queries), 1)
        print(
            f"{name}: {found} / {len(queries)} memes found at rank 1 ({found / n:.3f}); counting a tie "
            f"(every meme above holds the words as a phrase) as found: {found + ties} ({(found + ties) / n:.3f})"
        )
        for why, k in sorted(said.items(), key=lambda x: -x[1]):
            if why != "hit":
                print(f"    missed: {why}: {k}")
    for ocr_text, ocr_words in rng.sample(sample, min(a.show, len(sample))):
        print(f"  {ocr_words!r:60} <- {' '.join(ocr_text.split())[:100]!r}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    s = sub.add_parser("split")
    s.add_argument("snapshot")
    lib = sub.add_parser("library")
    lib.add_argument("snapshot")
    lib.add_argument("--db", required=True)
    lib.add_argument("--tree", default=str(REPO), help="the checkout whose `mambo search` runs")
    lib.add_argument("--root", default="/work/real-out", help="the built folder the library was made from")
    lib.add_argument("--typed", type=int, default=300, help="typed glued queries sampled")
    lib.add_argument("--no-search", dest="search", action="store_false", help="the splits only")
    lib.add_argument("--show", type=int, default=0, help="print N sampled splits to judge by hand")
    lib.add_argument("--misses", action="store_true", help="print each miss (terminal only: caption text)")
    a = ap.parse_args()
    split_command(a) if a.command == "split" else library_command(a)


if __name__ == "__main__":
    main()
