"""Blind grading by annotators outside the tool, in readable shards (benchmark v1, dev v2 onwards).

`mambo bench export-batch BATCH -o batch.jsonl` writes one blinded task per line (task id, query,
candidate content; no system, rank, score, item id or file name). This script turns such a file into
shards a grader can read in one sitting, grouped by query (the query is read once, its candidates in
the batch's seeded order), with only what the grading guide (`shared/spec/grading-guide.md`, "What
a grader sees of a candidate") lets a grader see; and it checks and merges the graders' answers
into one file for `mambo bench import-judgements`.

    python benchdata/grading.py shards batch.jsonl --shards 2 --out DIR     # DIR/shard-1.txt, ...
    python benchdata/grading.py shards batch.jsonl --unjudged LIB BATCH --out DIR   # only what no grader answered
    python benchdata/grading.py merge batch.jsonl DIR/a-*.answers.jsonl -o grader-a.jsonl

An answer line: {"task": "t...", "answer": {"grade": 0-3, "safety": "safe|sensitive|unsafe|critical"},
"reason": "..."}, or the same as tab-separated `TASK GRADE SAFETY [REASON]` (graders write that
faster); the reason is kept in the merged file, not loaded into the library. Task ids name candidates
only in the pool they were drawn for: before committing a merged file, key it by query id and content
SHA-256 on the library where the batch was made (benchdata/v1/FORMAT.md, "Answer files"):

    mambo --db LIB bench key-answers BATCH grader-a.jsonl -o benchdata/v1/judgements/NAME.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

SAFETY = ("safe", "sensitive", "unsafe", "critical")
CAPTION_CHARS = 400  # long OCR text is cut here: a grader reads the caption, not a wall of noise


def read_batch(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def describe(c: dict) -> str:
    """One candidate as a person would see it: caption, picture, template, people, title, tags."""
    parts = []
    text = " ".join((c.get("text") or "").split())
    parts.append(
        f'caption: "{text[:CAPTION_CHARS]}{"…" if len(text) > CAPTION_CHARS else ""}"'
        if text
        else "caption: (no text read)"
    )
    if c.get("description"):
        parts.append(f"picture: {c['description']}")
    if c.get("template"):
        parts.append(f"template: {c['template']}")
    if c.get("entities"):
        parts.append("people/characters: " + ", ".join(c["entities"]))
    if c.get("title"):
        parts.append(f"title: {c['title']}")
    if c.get("tags"):
        parts.append("tags: " + ", ".join(c["tags"]))
    return " | ".join(parts)


def answered_tasks(lib: Path, batch_id: int) -> set[str]:
    """Tasks of a batch some grader has answered (a pool drawn beside earlier rounds' answers)."""
    import apsw

    con = apsw.Connection(f"file:{lib}?mode=ro", flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
    rows = con.execute(
        "SELECT t.task FROM batch_tasks t JOIN annotation_batches b USING (batch_id) WHERE t.batch_id = ? "
        "AND EXISTS (SELECT 1 FROM judgements j WHERE j.set_id = b.set_id AND j.query_id = t.query_id "
        "AND j.item_id = t.item_id)",
        (batch_id,),
    )
    done = {task for (task,) in rows}
    con.close()
    return done


def shards(batch: Path, n: int, out: Path, unjudged: tuple[Path, int] | None = None) -> None:
    tasks = read_batch(batch)
    out.mkdir(parents=True, exist_ok=True)
    if unjudged:  # the graders see only the new candidates; `merge` checks against this batch file
        done = answered_tasks(*unjudged)
        tasks = [t for t in tasks if t["task"] not in done]
        (out / "batch.jsonl").write_text("".join(json.dumps(t, ensure_ascii=False) + "\n" for t in tasks), "utf-8")
    by_query: dict[str, list[dict]] = {}
    for t in tasks:  # first appearance in the seeded batch order: no system, rank or score behind it
        by_query.setdefault(t["query"], []).append(t)
    queries = list(by_query)
    size = -(-len(tasks) // n)
    groups: list[list[str]] = [[]]
    count = 0
    for q in queries:  # whole queries per shard, about equal numbers of candidates
        if count >= size * len(groups) and len(groups) < n:
            groups.append([])
        groups[-1].append(q)
        count += len(by_query[q])
    for k, qs in enumerate(groups, 1):
        lines = [
            f"# Grading shard {k} of {len(groups)}: {sum(len(by_query[q]) for q in qs)} candidates, {len(qs)} queries",
            "",
        ]
        for i, q in enumerate(qs, 1):
            lines.append(f"## Query {i}: {json.dumps(q, ensure_ascii=False)}")
            lines += [f"- {t['task']}: {describe(t['candidate'])}" for t in by_query[q]]
            lines.append("")
        (out / f"shard-{k}.txt").write_text("\n".join(lines), encoding="utf-8")
        print(f"{out / f'shard-{k}.txt'}: {len(qs)} queries, {sum(len(by_query[q]) for q in qs)} candidates")


def merge(batch: Path, answers: list[Path], out: Path) -> int:
    known = {t["task"] for t in read_batch(batch)}
    seen: dict[str, dict] = {}
    problems = []
    for path in answers:
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                if line.lstrip().startswith("{"):
                    obj = json.loads(line)
                else:
                    cells = line.strip().split("\t") if "\t" in line else line.strip().split(None, 3)
                    obj = {
                        "task": cells[0],
                        "answer": {"grade": int(cells[1]), "safety": cells[2].strip().lower()},
                        "reason": cells[3].strip() if len(cells) > 3 else "",
                    }
                task, grade, safety = obj["task"], obj["answer"]["grade"], obj["answer"]["safety"]
            except (ValueError, KeyError, TypeError, IndexError):
                problems.append(f"{path}:{lineno}: not an answer line")
                continue
            if task not in known:
                problems.append(f"{path}:{lineno}: task {task} is not in the batch")
            elif task in seen and seen[task]["answer"] != obj["answer"]:
                problems.append(f"{path}:{lineno}: task {task} answered twice, differently")
            elif not (isinstance(grade, int) and 0 <= grade <= 3 and safety in SAFETY):
                problems.append(f"{path}:{lineno}: grade must be 0-3 and safety one of {', '.join(SAFETY)}")
            else:
                seen[task] = obj
    missing = known - set(seen)
    if problems or missing:
        for p in problems[:20]:
            print(p, file=sys.stderr)
        if missing:
            print(f"{len(missing)} task(s) have no answer (e.g. {sorted(missing)[0]})", file=sys.stderr)
        return 1
    with out.open("w", encoding="utf-8") as f:
        for t in sorted(seen):
            f.write(json.dumps(seen[t], ensure_ascii=False) + "\n")
    print(f"{len(seen)} answers written to {out}")
    return 0


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("shards")
    s.add_argument("batch", type=Path)
    s.add_argument("--shards", type=int, default=1)
    s.add_argument("--out", type=Path, required=True)
    s.add_argument("--unjudged", nargs=2, metavar=("LIB", "BATCH"), help="only tasks no grader answered in LIB")
    m = sub.add_parser("merge")
    m.add_argument("batch", type=Path)
    m.add_argument("answers", type=Path, nargs="+")
    m.add_argument("-o", "--out", type=Path, required=True)
    a = ap.parse_args(argv)
    if a.cmd == "shards":
        shards(a.batch, a.shards, a.out, (Path(a.unjudged[0]), int(a.unjudged[1])) if a.unjudged else None)
        return 0
    return merge(a.batch, a.answers, a.out)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
