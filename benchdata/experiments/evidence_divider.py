"""Where an answer's evidence stops: the "weaker matches" divider (search.EVIDENCE_DIVIDER), fitted
on judged development lists and held out by template.

Each result of a shown list (hybrid, dense and bm25, the "no match" rule applied, 20 deep) is read
with what it carries (coverage of the query's words, dense similarity, the word route's rank, the
first result's coverage and similarity) and its judged grade (the best grade of any of its files;
unjudged results are left out of every count). A rule puts the divider before the first result
whose evidence is much weaker than the first result's; the results from there on are "weaker".
The rule searched (grid below): a result is weaker when neither its words keep it (it holds some of
the query's words, no fewer than the first's coverage - WORD_GAP) nor its meaning (similarity no
lower than the first's - SIM_GAP, or than the first's x SIM_RATIO); a result the dense route did
not reach (no similarity) has no meaning evidence. Cost: a relevant result (grade >= 2) below
the divider costs MISS_COST, a grade-0 result above it costs 1 (grade 1 costs nothing either way):
hiding a useful meme from `-l` costs more than listing a useless one, which the list showed anyway.
The cost is taken per judged result in each (library, slice) and averaged over them (macro), so
the slices weigh alike, as in the scorecard's macro nDCG.

Folds held out by template: the real-style set's are benchdata/real/folds.py's; dev v2's are those
of benchmark v1's leave-out views (a query goes with the fold that removes most of its useful
memes; otherwise dealt by family, as leave_out_report.py deals them). For each fold the rule is
chosen on the other folds (every library pooled) and counted on the fold.

    # 1. the lists (~2 min a library on 2 shared cores); copies, never the shared files
    .venv/bin/python benchdata/experiments/evidence_divider.py collect /tmp/D-real.sqlite real /tmp/D-real.json
    .venv/bin/python benchdata/experiments/evidence_divider.py collect /tmp/D-v1.sqlite dev /tmp/D-dev-ann.json
    .venv/bin/python benchdata/experiments/evidence_divider.py collect /tmp/D-v1-bare.sqlite dev /tmp/D-dev-bare.json
    # 2. the sweep, held out by template
    .venv/bin/python benchdata/experiments/evidence_divider.py sweep /tmp/D-real.json /tmp/D-dev-ann.json \
        /tmp/D-dev-bare.json > benchdata/experiments/evidence_divider-result.txt
    # 3. one rule (search.EVIDENCE_DIVIDER) counted on lists it was not fitted on
    .venv/bin/python benchdata/experiments/evidence_divider.py check /tmp/D-dev-ann.json --word-gap 0.5 --ratio 0.85
"""

from __future__ import annotations

import argparse
import collections
import itertools
import json
import random
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchdata" / "real"))

from mambomeme.lab.product import DB, Searcher, get_embedder, sync_systems, system_config  # noqa: E402

V1 = ROOT / "benchdata" / "v1"
REAL = ROOT / "benchdata" / "real"
SETS = {
    "real": (REAL / "dev.jsonl", REAL / "judgements" / "dev-set1.jsonl"),
    "dev": (V1 / "dev-v2.jsonl", V1 / "judgements" / "dev-v2-set1.jsonl"),
}
SYSTEMS = ("hybrid", "dense", "bm25")
DEPTH = 20
FOLD_SEED = 35  # leave_out_report.py's: the same dev v2 folds
MISS_COST = 2.0
# The grid: None leaves that half of the rule out.
WORD_GAPS = (0.25, 0.5, 0.75, 1.0)
SIM_GAPS = (None, 0.02, 0.04, 0.06, 0.08, 0.10, 0.12, 0.15, 0.20, 0.25)
SIM_RATIOS = (None, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95)


def load_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def collect(lib: Path, which: str, out: Path) -> None:
    queries_path, labels_path = SETS[which]
    queries = load_jsonl(queries_path)
    grades: dict[tuple[str, str], float] = {(r["qid"], r["path"]): float(r["grade"]) for r in load_jsonl(labels_path)}
    db = DB(lib, create=False)
    sync_systems(db)
    files: dict[int, list[str]] = collections.defaultdict(list)
    for path, item_id in db.con.execute("SELECT rel_path, item_id FROM files"):
        files[item_id].append(path)
    searcher = Searcher(db, get_embedder())
    lists = []
    for q in queries:
        for system in SYSTEMS:
            cfg = system_config(db, system)
            answer = searcher.answer(q["query"], cfg, DEPTH)
            rows = []
            for r in answer.results:
                judged = [grades[(q["id"], p)] for p in files[r.item_id] if (q["id"], p) in grades]
                rows.append(
                    {
                        "item": r.item_id,
                        "rank": r.rank,
                        "score": r.score,
                        "lexical": r.lexical_rank,
                        "dense": r.dense_rank,
                        "sim": r.similarity,
                        "cov": r.coverage,
                        "holds": r.holds_query,
                        "grade": max(judged) if judged else None,
                    }
                )
            lists.append({"qid": q["id"], "system": system, "results": rows})
    out.write_text(json.dumps({"set": which, "library": str(lib), "lists": lists}), encoding="utf-8")
    db.close()


def dev_folds(queries: list[dict[str, Any]], labels: list[dict[str, Any]]) -> dict[str, int]:
    """Dev v2 queries by benchmark v1's leave-out folds (template groups), as leave_out_report.py."""
    lo = load_jsonl(V1 / "leave-out.jsonl")
    folds = sorted({r["fold"] for r in lo})
    removed = {k: {p for r in lo if r["fold"] == k for p in r["leave_out"]} for k in folds}
    useful = collections.defaultdict(set)
    for r in labels:
        if r["grade"] >= 2:
            useful[r["qid"]].add(r["path"])
    fams = sorted({q["family"] for q in queries})
    random.Random(FOLD_SEED).shuffle(fams)
    fam_fold = {f: folds[i % len(folds)] for i, f in enumerate(fams)}
    out = {}
    for q in queries:
        counts = {k: len(useful[q["id"]] & removed[k]) for k in folds}
        best = max(folds, key=lambda k: (counts[k], -k))
        out[q["id"]] = best if counts[best] else fam_fold[q["family"]]
    return out


def folds_of(which: str) -> dict[str, int]:
    queries_path, labels_path = SETS[which]
    if which == "real":
        import folds

        return folds.query_folds(labels_path)
    return dev_folds(load_jsonl(queries_path), load_jsonl(labels_path))


def weaker(r: dict[str, Any], first: dict[str, Any], rule: tuple) -> bool:
    """Neither kind of evidence keeps the result: its words (it holds some of the query's words,
    no fewer than the first's coverage - word_gap) nor its meaning (similarity no lower than the
    first's - sim_gap, or than the first's x sim_ratio; neither given: meaning never keeps)."""
    word_gap, sim_gap, sim_ratio = rule
    if r["cov"] > 0 and r["cov"] >= first["cov"] - word_gap:
        return False
    if r["sim"] is None or first["sim"] is None or (sim_gap is None and sim_ratio is None):
        return True
    if sim_gap is not None:
        return r["sim"] < first["sim"] - sim_gap
    return r["sim"] < first["sim"] * sim_ratio


def divide(results: list[dict[str, Any]], rule: tuple | None, depth: int = 10) -> list[bool]:
    """For each of the first `depth` results, whether it is below the divider."""
    rows = results[:depth]
    if rule is None:  # no divider
        return [False] * len(rows)
    out, below = [], False
    for i, r in enumerate(rows):
        below = below or (i > 0 and weaker(r, rows[0], rule))
        out.append(below)
    return out


def tally(lists: list[dict[str, Any]], rule: tuple | None, depth: int = 10) -> dict[str, float]:
    t = collections.Counter()
    for lst in lists:
        t["lists"] += 1
        below = divide(lst["results"], rule, depth)
        t["divided"] += any(below)
        for r, b in zip(lst["results"], below, strict=False):
            g = r["grade"]
            if g is None:
                t["unjudged"] += 1
                continue
            side = "below" if b else "above"
            t[side] += 1
            t[f"{side}_rel"] += g >= 2
            t[f"{side}_any"] += g >= 1
            t[f"{side}_zero"] += g == 0
    t["cost"] = MISS_COST * t["below_rel"] + t["above_zero"]
    return t


def describe(t: dict[str, float]) -> str:
    def share(a: float, b: float) -> str:
        return f"{a / b:.2f}" if b else "  - "

    return (
        f"above {int(t['above']):4d} rel(>=2) {share(t['above_rel'], t['above'])} any(>=1) "
        f"{share(t['above_any'], t['above'])} | below {int(t['below']):4d} "
        f"grade-0 {share(t['below_zero'], t['below'])} "
        f"| relevant below {int(t['below_rel'])} of {int(t['above_rel'] + t['below_rel'])} "
        f"| divided {int(t['divided'])}/{int(t['lists'])} | unjudged {int(t['unjudged'])}"
    )


def grid() -> list[tuple]:
    rules = [(w, g, r) for w, g, r in itertools.product(WORD_GAPS, SIM_GAPS, SIM_RATIOS) if g is None or r is None]
    return [r for r in rules if r[1] is not None or r[2] is not None] + [(w, None, None) for w in WORD_GAPS]


def macro_cost(lists: list[dict[str, Any]], rule: tuple | None) -> float:
    """The cost per judged result, each library's slice weighing the same (as nDCG's macro mean
    over slices does): a slice of many long lists does not choose the rule alone."""
    groups = collections.defaultdict(list)
    for x in lists:
        groups[(x["lib"], x["slice"])].append(x)
    costs = []
    for sel in groups.values():
        t = tally(sel, rule)
        costs.append(t["cost"] / max(1, t["above"] + t["below"]))
    return sum(costs) / len(costs)


def best(lists: list[dict[str, Any]]) -> tuple:
    return min(grid(), key=lambda rule: (round(macro_cost(lists, rule), 6), rule[0], -(rule[1] or 0), rule[2] or 0))


def sweep(paths: list[Path]) -> None:
    data = []
    for p in paths:
        d = json.loads(p.read_text(encoding="utf-8"))
        queries = {q["id"]: q for q in load_jsonl(SETS[d["set"]][0])}
        fold = folds_of(d["set"])
        name = f"{d['set']}:{Path(d['library']).stem}"
        for lst in d["lists"]:
            data.append(lst | {"lib": name, "fold": fold[lst["qid"]], "slice": queries[lst["qid"]]["slice"]})
    print(f"# evidence_divider.py sweep {' '.join(str(p) for p in paths)}")
    print(f"# grid: word gaps {WORD_GAPS}, similarity gaps {SIM_GAPS}, ratios {SIM_RATIOS}; miss cost {MISS_COST}")
    print("# the first 10 results of each shown list; relevant = grade >= 2; unjudged results not counted")
    hybrid = [x for x in data if x["system"] == "hybrid"]
    folds = sorted({x["fold"] for x in hybrid})
    held: list[tuple[dict[str, Any], tuple]] = []
    print("\n## Held out by template (hybrid): the rule chosen on the other folds, counted on the fold")
    for k in folds:
        rule = best([x for x in hybrid if x["fold"] != k])
        test = [x for x in hybrid if x["fold"] == k]
        held += [(x, rule) for x in test]
        print(f"fold {k}: rule {rule}  {describe(tally(test, rule))}")
    print("\n## Held out, pooled per library and slice (hybrid)")
    groups = collections.defaultdict(list)
    for x, rule in held:
        groups[(x["lib"], x["slice"])].append((x, rule))
        groups[(x["lib"], "all")].append((x, rule))
    for key in sorted(groups):
        t = collections.Counter()
        for x, rule in groups[key]:
            t.update(tally([x], rule))
        print(f"{key[0]:24s} {key[1]:9s} {describe(t)}")
    chosen = best(hybrid)
    print(f"\n## Chosen on every fold (hybrid): {chosen}")
    for system in SYSTEMS:
        for lib in sorted({x["lib"] for x in data}):
            sel = [x for x in data if x["system"] == system and x["lib"] == lib]
            print(f"{system:7s} {lib:24s} {describe(tally(sel, chosen))}")
    print(f"\n## Chosen rule {chosen} per library and slice (hybrid), in sample")
    for lib in sorted({x["lib"] for x in hybrid}):
        for sl in sorted({x["slice"] for x in hybrid}):
            sel = [x for x in hybrid if x["lib"] == lib and x["slice"] == sl]
            print(f"{lib:24s} {sl:9s} {describe(tally(sel, chosen))}")
    print("\n## The best rules on every fold (hybrid), by cost")
    ranked = sorted(grid(), key=lambda rule: macro_cost(hybrid, rule))
    for rule in ranked[:12] + [(w, None, None) for w in WORD_GAPS]:
        t = tally(hybrid, rule)
        print(f"{rule!s:20s} macro cost {macro_cost(hybrid, rule):.4f} {describe(t)}")
    print("\n## No divider at all (hybrid)")
    print(f"macro cost {macro_cost(hybrid, None):.4f} {describe(tally(hybrid, None))}")
    print("\n## Chosen rule at depth 20 (the screen's grown list, -n 20), hybrid")
    print(describe(tally(hybrid, chosen, 20)))


def check(paths: list[Path], rule: tuple) -> None:
    """One rule counted on every list of each file, per system and (hybrid) per slice: a library
    the sweep did not fit on, as a check."""
    for p in paths:
        d = json.loads(p.read_text(encoding="utf-8"))
        queries = {q["id"]: q for q in load_jsonl(SETS[d["set"]][0])}
        print(f"# evidence_divider.py check {p} (set {d['set']}, library {d['library']}), rule {rule}")
        for system in SYSTEMS:
            sel = [x for x in d["lists"] if x["system"] == system]
            print(f"{system:7s} all       {describe(tally(sel, rule))}")
        hybrid = [x for x in d["lists"] if x["system"] == "hybrid"]
        for sl in sorted({q["slice"] for q in queries.values()}):
            sel = [x for x in hybrid if queries[x["qid"]]["slice"] == sl]
            print(f"hybrid  {sl:9s} {describe(tally(sel, rule))}")
        print(f"hybrid  no divider {describe(tally(hybrid, None))}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("collect")
    c.add_argument("lib", type=Path)
    c.add_argument("set", choices=sorted(SETS))
    c.add_argument("out", type=Path)
    s = sub.add_parser("sweep")
    s.add_argument("data", type=Path, nargs="+")
    k = sub.add_parser("check")
    k.add_argument("data", type=Path, nargs="+")
    k.add_argument("--word-gap", type=float, required=True)
    k.add_argument("--ratio", type=float, required=True)
    args = ap.parse_args()
    if args.cmd == "collect":
        collect(args.lib, args.set, args.out)
    elif args.cmd == "check":
        check(args.data, (args.word_gap, None, args.ratio))
    else:
        sweep(args.data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
