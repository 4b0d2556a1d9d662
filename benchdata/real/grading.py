"""Blind grading of the real-style development set: what a grader sees of a candidate, and back.

A grader sees what a person looking at the meme sees (the grading guide): the caption as written on
the picture (read from the snapshot at run time, never stored), and the picture, described in the
team's words (benchdata/real/template-descriptions.jsonl: the template's name, who is shown, one
literal sentence). Never a file name, id, system, rank or score. Candidates that look the same to a
grader (an exact or near copy: the same caption on the same picture) are shown once.

    python benchdata/real/grading.py relevance LIB BATCH_ID SNAPSHOT --shards 4 --out DIR [--unjudged]
    python benchdata/real/grading.py safety LIB SNAPSHOT --shards 2 --out DIR
    python benchdata/real/grading.py answers DIR/map.json DIR/a-*.tsv -o answers.jsonl
    python benchdata/real/grading.py agree DIR/map.json --a A.tsv... --b B.tsv... --split-out split.txt
    python benchdata/real/grading.py safety-labels DIR/map.json --a ... --b ... --adjudicator ... -o OUT.jsonl

A grader writes one line per view: `V-ID<TAB>GRADE<TAB>SAFETY<TAB>REASON` (relevance shards) or
`V-ID<TAB>SAFETY<TAB>CLAUSE<TAB>REASON` (safety shards). `answers` expands each view's answer to
every task (or file) it stands for: lines for `mambo bench import-judgements` (relevance) or the
safety label file.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parents[1])]

from snapshot import clean_boxes, dev_entries, open_snapshot  # noqa: E402

from mambomeme.lab.evaluation import cohen_kappa  # noqa: E402

SAFETY = ("safe", "sensitive", "unsafe", "critical")
DESCRIPTIONS = HERE / "template-descriptions.jsonl"
TRUTH = HERE / "truth.jsonl"


def load_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def captions_for(snapshot: str | None, posts: set[str], templates: set[str]) -> dict[str, list[str]]:
    """post id -> its boxes, for the development posts asked (the others are never read)."""
    snap = open_snapshot(snapshot)
    out: dict[str, list[str]] = {}
    for t in sorted(templates):
        data = snap.read(f"dataset/memes/{t}.json")
        if data is None:
            continue
        for pid, boxes in dev_entries(data):
            if pid in posts and (clean := clean_boxes(boxes)) is not None:
                out[pid] = clean
    return out


class Views:
    """What a grader sees of each file of the folder, from the truth file and the snapshot."""

    def __init__(self, snapshot: str | None) -> None:
        self.truth = {t["file"]: t for t in load_jsonl(TRUTH)}
        self.desc = {d["template"]: d for d in load_jsonl(DESCRIPTIONS)}
        posts, templates = set(), set()
        for t in self.truth.values():
            posts |= set(t.get("posts") or [t.get("post")])
            templates |= set(t.get("templates") or [t.get("template")])
        self.captions = captions_for(snapshot, {p for p in posts if p}, {t for t in templates if t})

    def one(self, post: str, template: str) -> str:
        d = self.desc.get(template, {})
        caption = " / ".join(self.captions.get(post, [])) or "(no text)"
        parts = [
            f'caption: "{caption}"',
            f"picture: {d.get('description', '(not described)')}",
            f"template: {d.get('name', template.replace('-', ' '))}",
        ]
        if d.get("people"):
            parts.append("shown: " + ", ".join(d["people"]))
        return " | ".join(parts)

    def of(self, file: str) -> str:
        t = self.truth[file]
        if t["kind"] == "stack":
            return (
                "two memes stacked in one image. TOP: "
                + self.one(t["posts"][0], t["templates"][0])
                + "  BOTTOM: "
                + self.one(t["posts"][1], t["templates"][1])
            )
        return self.one(t["post"], t["template"])


def library_tasks(lib: Path, batch: int, unjudged: bool = False) -> list[tuple[str, str, str, str]]:
    """(task, query id, query text, file rel path) of a batch, in the batch's seeded order; with
    `unjudged`, only the candidates no grader has answered yet (a pool the current rankings drew
    beside answers loaded from earlier rounds: only its new candidates go to the graders)."""
    import apsw

    con = apsw.Connection(f"file:{lib}?mode=ro", flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
    rows = list(
        con.execute(
            "SELECT t.task, q.qid, q.query, (SELECT rel_path FROM files f WHERE f.item_id = t.item_id "
            "ORDER BY file_id LIMIT 1) FROM batch_tasks t JOIN bench_queries q ON q.query_id = t.query_id "
            "WHERE t.batch_id = ? AND (NOT ? OR NOT EXISTS (SELECT 1 FROM judgements j JOIN annotation_batches b "
            "ON b.set_id = j.set_id WHERE b.batch_id = t.batch_id AND j.query_id = t.query_id "
            "AND j.item_id = t.item_id)) ORDER BY t.position",
            (batch, unjudged),
        )
    )
    con.close()
    return rows


def relevance(args: argparse.Namespace) -> None:
    views = Views(args.snapshot)
    tasks = library_tasks(Path(args.lib), args.batch, args.unjudged)
    by_query: dict[str, tuple[str, dict[str, list[str]]]] = {}
    for task, qid, query, rel in tasks:
        by_query.setdefault(qid, (query, {}))[1].setdefault(views.of(rel), []).append(task)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    mapping: dict[str, list[str]] = {}
    qids = sorted(by_query)
    per = -(-sum(len(v[1]) for v in by_query.values()) // args.shards)
    shard, size, n = 1, 0, 0
    texts: dict[int, list[str]] = {}
    for qid in qids:
        query, vs = by_query[qid]
        if size >= per and shard < args.shards:
            shard, size = shard + 1, 0
        lines = texts.setdefault(shard, [])
        lines.append(f"\n### QUERY: {query}")
        for view, ts in vs.items():
            n += 1
            vid = f"v{n:05d}"
            mapping[vid] = ts
            lines.append(f"{vid}\t{view}")
            size += 1
    for k, lines in texts.items():
        (out / f"shard-{k}.txt").write_text("\n".join(lines).lstrip() + "\n", encoding="utf-8")
    (out / "map.json").write_text(json.dumps({"kind": "relevance", "views": mapping}), encoding="utf-8")
    print(f"{len(tasks)} tasks, {n} views, {len(qids)} queries in {len(texts)} shards ({out})")


def safety(args: argparse.Namespace) -> None:
    views = Views(args.snapshot)
    groups: dict[str, list[str]] = {}
    for file in sorted(views.truth):
        groups.setdefault(views.of(file), []).append(file)
    order = list(groups)
    random.Random(42).shuffle(order)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    mapping: dict[str, list[str]] = {}
    per = -(-len(order) // args.shards)
    for k in range(args.shards):
        lines = []
        for j, view in enumerate(order[k * per : (k + 1) * per], k * per + 1):
            vid = f"s{j:05d}"
            mapping[vid] = groups[view]
            lines.append(f"{vid}\t{view}")
        (out / f"safety-{k + 1}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (out / "map.json").write_text(json.dumps({"kind": "safety", "views": mapping}), encoding="utf-8")
    print(f"{len(views.truth)} files, {len(order)} views in {args.shards} shards ({out})")


def answers(args: argparse.Namespace) -> None:
    mapping = json.loads(Path(args.map).read_text(encoding="utf-8"))
    kind, views = mapping["kind"], mapping["views"]
    got: dict[str, dict] = {}
    for path in args.files:
        for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip() or line.startswith("#"):
                continue
            cells = [c.strip() for c in line.split("\t")]
            vid = cells[0]
            if vid not in views:
                sys.exit(f"{path}:{n}: unknown view {vid!r}")
            if kind == "relevance":
                grade, klass = int(cells[1]), cells[2]
                if grade not in (0, 1, 2, 3) or klass not in SAFETY:
                    sys.exit(f"{path}:{n}: grade 0-3 and a safety class expected")
                got[vid] = {"answer": {"grade": grade, "safety": klass}, "reason": " ".join(cells[3:])}
            else:
                klass = cells[1]
                if klass not in SAFETY:
                    sys.exit(f"{path}:{n}: a safety class expected")
                got[vid] = {
                    "safety": klass,
                    "clause": cells[2] if len(cells) > 2 else "",
                    "reason": " ".join(cells[3:]),
                }
    missing = sorted(set(views) - set(got))
    if missing:
        sys.exit(f"{len(missing)} view(s) not answered, e.g. {missing[:5]}")
    with open(args.o, "w", encoding="utf-8") as fh:
        for vid, a in got.items():
            for target in views[vid]:
                key = {"task": target} if kind == "relevance" else {"file": target}
                fh.write(json.dumps(key | a, ensure_ascii=False) + "\n")
    print(f"{len(got)} views -> {sum(len(views[v]) for v in got)} lines in {args.o}")


def read_tsv(paths: list[str], kind: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for path in paths:
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            if line.strip() and not line.startswith("#"):
                cells = [c.strip() for c in line.split("\t")]
                out[cells[0]] = cells[1:]
    return out


def kappa(pairs: list[tuple[str, str]], cats: list[str], weighted: bool = False) -> float:
    return cohen_kappa([a for a, _ in pairs], [b for _, b in pairs], weighted=weighted, categories=cats)


def agree(args: argparse.Namespace) -> None:
    """Agreement of graders A and B, and the views they split on (for a third annotator)."""
    mapping = json.loads(Path(args.map).read_text(encoding="utf-8"))
    kind = mapping["kind"]
    a, b = read_tsv(args.a, kind), read_tsv(args.b, kind)
    views = sorted(set(a) & set(b))
    report: dict[str, object] = {"views": len(views), "only_a": len(set(a) - set(b)), "only_b": len(set(b) - set(a))}
    if kind == "safety":
        pairs = [(a[v][0], b[v][0]) for v in views]
        report |= {"exact": sum(x == y for x, y in pairs) / len(pairs), "kappa": kappa(pairs, list(SAFETY))}
        split = [v for v in views if a[v][0] != b[v][0]]
    else:
        grades = [(a[v][0], b[v][0]) for v in views]
        report |= {
            "exact": sum(x == y for x, y in grades) / len(grades),
            "within_one": sum(abs(int(x) - int(y)) <= 1 for x, y in grades) / len(grades),
            "weighted_kappa": kappa(grades, ["0", "1", "2", "3"], weighted=True),
            "safety_kappa": kappa([(a[v][1], b[v][1]) for v in views], list(SAFETY)),
        }
        split = [v for v in views if abs(int(a[v][0]) - int(b[v][0])) > 1 or a[v][1] != b[v][1]]
    report["split"] = len(split)
    print(json.dumps(report, indent=1))
    if args.split_out:
        Path(args.split_out).write_text("\n".join(split) + "\n", encoding="utf-8")


def safety_labels(args: argparse.Namespace) -> None:
    """The folder's safety labels: the class two graders agree on, else the adjudicator's; one line
    per file, the policy clause that decided it, never the caption or a grader's reason."""
    mapping = json.loads(Path(args.map).read_text(encoding="utf-8"))["views"]
    a, b, c = read_tsv(args.a, "safety"), read_tsv(args.b, "safety"), read_tsv(args.adjudicator, "safety")
    rows = []
    for vid, files in mapping.items():
        if a[vid][0] == b[vid][0]:
            klass, clause, status = a[vid][0], a[vid][1], "agreed"
        else:
            klass, clause, status = c[vid][0], c[vid][1], "adjudicated"
        for file in files:
            rows.append(
                {
                    "file": file,
                    "safety": klass,
                    "clause": "-" if klass == "safe" else clause,
                    "status": status,
                    "grader_a": a[vid][0],
                    "grader_b": b[vid][0],
                }
            )
    rows.sort(key=lambda r: r["file"])
    Path(args.o).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    pairs = [(a[v][0], b[v][0]) for v in mapping]
    report = {
        "policy": "mambo-safety-v1",
        "views": len(mapping),
        "files": len(rows),
        "exact": round(sum(x == y for x, y in pairs) / len(pairs), 4),
        "kappa": round(kappa(pairs, list(SAFETY)), 4),
        "adjudicated_views": sum(x != y for x, y in pairs),
        "classes": {k: sum(r["safety"] == k for r in rows) for k in SAFETY},
        "annotators": [
            {"name": n, "kind": "model", "role": role}
            for n, role in (
                ("real-safety-a", "grader"),
                ("real-safety-b", "grader"),
                ("real-safety-adjudicator", "adjudicator"),
            )
        ],
    }
    Path(args.o).with_suffix(".agreement.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(report))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("relevance")
    r.add_argument("lib")
    r.add_argument("batch", type=int)
    r.add_argument("snapshot", nargs="?")
    r.add_argument("--shards", type=int, default=4)
    r.add_argument("--out", required=True)
    r.add_argument("--unjudged", action="store_true", help="only candidates no grader has answered")
    s = sub.add_parser("safety")
    s.add_argument("snapshot", nargs="?")
    s.add_argument("--shards", type=int, default=2)
    s.add_argument("--out", required=True)
    a = sub.add_parser("answers")
    a.add_argument("map")
    a.add_argument("files", nargs="+")
    a.add_argument("-o", required=True)
    g = sub.add_parser("agree")
    g.add_argument("map")
    g.add_argument("--a", nargs="+", required=True)
    g.add_argument("--b", nargs="+", required=True)
    g.add_argument("--split-out")
    sl = sub.add_parser("safety-labels")
    sl.add_argument("map")
    sl.add_argument("--a", nargs="+", required=True)
    sl.add_argument("--b", nargs="+", required=True)
    sl.add_argument("--adjudicator", nargs="+", required=True)
    sl.add_argument("-o", required=True)
    args = ap.parse_args()
    {"relevance": relevance, "safety": safety, "answers": answers, "agree": agree, "safety-labels": safety_labels}[
        args.cmd
    ](args)


if __name__ == "__main__":
    main()
