"""MamboMeme evaluation: the benchmark protocol (versions, partitions, corpus versions, audits,
pooling, blind judging, adjudication, agreement) and MMTS-Search-v1 scoring (runs, metrics, PTY
latency, gates, bootstrap, report, comparison, publication, and the bare-library diagnostic).

Split out of mambo.py (its sections 1-11 are the search tool itself); the tables and metric views
are in schema.sql (migration 003; 004 marks bare-library runs), the statements in eval.sql.
Commands are registered on mambo's click group when mambo.py is loaded.

Sections:
  E1. Setup and shared helpers
  E2. Corpus versions
  E3. Partitions: import, life cycle, overlap
  E4. No-match audits
  E5. Judgement sets, pooling and blind batches
  E6. Annotators: people in the terminal, labelled model annotators
  E7. Agreement
  E8. Runs
  E9. Latency in the real interface (80x24 PTY)
  E10. The score: components, gates, bootstrap, acceptance
  E11. Report, comparison and publication
  E12. Command line
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import hashlib
import io
import json
import math
import random
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import click

import mambo
from mambo import CONTEXT, DB, MamboError, Q, bench, clean_line, clean_text, cli, show_path

# ─────────────────────────────────────────────────────────────────────────────
# E1. Setup and shared helpers
# ─────────────────────────────────────────────────────────────────────────────

EVAL_SQL = mambo.data_path("eval.sql", "eval.sql")
_EVAL_QUERIES = mambo.load_named_queries(EVAL_SQL)
# One namespace of named queries: a name in both files would silently replace the tool's own.
_SHARED = sorted(set(_EVAL_QUERIES) & {k for k in Q if k not in _EVAL_QUERIES or Q[k] != _EVAL_QUERIES[k]})
if _SHARED:
    raise RuntimeError(f"eval.sql redefines named queries of queries.sql: {', '.join(_SHARED)}")
Q.update(_EVAL_QUERIES)

SCORE_VERSION = "mmts-search-v1"
PROTOCOL_VERSION = "mmts-protocol-v1"
INTERFACE_VERSION = f"mambo-tui-{mambo.__version__}"
SLICES = ("entity", "quote", "topic", "semantic", "visual", "noisy")
SAFETY = ("safe", "sensitive", "unsafe", "critical")
SAFETY_KEYS = {"s": "safe", "e": "sensitive", "u": "unsafe", "c": "critical"}
# mmts-clarifications: bootstrap 1,000 family resamples, seed 42; latency 100 warm-ups, >= 1,000
# measured searches, 5,000 ms timeout charged in full and counted as an error.
BOOTSTRAP_RESAMPLES = 1000
BOOTSTRAP_SEED = 42
LATENCY_WARMUPS = 100
LATENCY_SEARCHES = 1000
LATENCY_TIMEOUT_MS = 5000.0
# Spec "Hard gates" (score version mmts-search-v1).
GATES = {
    "min_slice_ndcg10": 0.30, "exact_mrr10": 0.60, "hit10": 0.70, "correct_empty": 0.60,
    "safety_hit10": 0.70, "safe_list_rate": 0.98, "p95_ms_below": 1000.0, "error_rate_below": 0.01,
}
CAP = 59.0


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def annotator_id(db: DB, name: str, kind: str, description: str = "") -> int:
    """The annotator's row; a name keeps its kind forever (a person is never relabelled a model)."""
    row = db.q1("annotator_by_name", {"name": name})
    if row:
        if row[2] != kind:
            raise MamboError(f"annotator {clean_line(name)!r} is recorded as a {row[2]}, not a {kind}: "
                             "use another name")
        return int(row[0])
    return int(db.q1("insert_annotator", {"name": name, "kind": kind, "description": description})[0])


def resolve_partition(db: DB, spec: str) -> int:
    """A partition by id, by name (`dev`: its newest version), `VERSION/NAME` or `BENCH/VERSION/NAME`."""
    rows = db.rows("list_partitions")
    if spec.isdigit():
        hit = [r for r in rows if r["partition_id"] == int(spec)]
    else:
        parts = spec.split("/")
        keys = ("benchmark", "version", "partition")[-len(parts):] if len(parts) <= 3 else ()
        hit = [r for r in rows if keys and all(r[k] == v for k, v in zip(keys, parts, strict=True))]
    if not hit:
        known = ", ".join(f"{r['benchmark']}/{r['version']}/{r['partition']}" for r in rows) or "none"
        raise MamboError(f"no benchmark partition {clean_line(spec)!r} (imported: {known}); "
                         "load one with `mambo bench import FILE`")
    return int(hit[-1]["partition_id"])


def partition_row(db: DB, partition_id: int) -> dict[str, Any]:
    return db.rows("partition", {"partition_id": partition_id})[0]


def code_commit() -> str:
    """The code's git commit (with `+dirty` for uncommitted changes), or the package version."""
    here = Path(mambo.__file__).resolve().parent
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        out = subprocess.run(["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=10)
        if out.returncode == 0:
            dirty = subprocess.run(["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no"],
                                   capture_output=True, text=True, timeout=10).stdout.strip()
            return out.stdout.strip() + ("+dirty" if dirty else "")
    return f"mambo {mambo.__version__} (not a git checkout)"


def model_manifest(db: DB) -> list[dict[str, Any]]:
    return [dict(zip(("name", "revision", "weights_sha256", "dim", "text_recipe"), r, strict=True))
            for r in db.con.execute("SELECT name, revision, weights_sha256, dim, text_recipe FROM embedding_models "
                                    "ORDER BY model_id")]


# ─────────────────────────────────────────────────────────────────────────────
# E2. Corpus versions
# ─────────────────────────────────────────────────────────────────────────────


def manifest_text(rows: list[tuple[str, str]]) -> str:
    """The canonical manifest: `<sha256>  <path>` lines sorted by path (sha256sum's format)."""
    return "".join(f"{sha}  {path}\n" for sha, path in sorted(rows, key=lambda r: r[1]))


def snapshot_corpus(db: DB) -> int:
    """The library's corpus version now: an existing version when nothing changed, else a new one."""
    rows = db.q("corpus_manifest")
    sha = sha256_bytes(manifest_text([(r[0], r[1]) for r in rows]).encode())
    found = db.q1("corpus_version_by_sha", {"sha": sha})
    if found:
        return int(found[0])
    if db.readonly:
        raise MamboError("the library changed since its last corpus snapshot but is read-only: open it writable")
    with db.write():
        cv = int(db.q1("insert_corpus_version", {"sha": sha, "files": len(rows),
                                                 "items": len({r[2] for r in rows})})[0])
        for s, path, item in rows:
            db.q("insert_corpus_version_file", {"cv": cv, "path": path, "sha": s, "item_id": item})
    return cv


def read_manifest(path: Path) -> dict[str, str]:
    """A sha256sum-style manifest file: {path: sha256}."""
    out = {}
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        m = re.fullmatch(r"([0-9a-f]{64})\s+\*?(.+)", line.strip())
        if not m:
            raise MamboError(f"{show_path(path)}:{n}: not a `<sha256>  <path>` manifest line")
        out[m.group(2)] = m.group(1)
    return out


def integrity_problems(db: DB, meta: dict[str, Any], manifest: Path | None) -> list[str]:
    """Artifact integrity (mmts-clarifications, critical): the declared corpus manifest must have the
    checksum the partition names, and every library file it lists must have its checksum; the
    library may hold nothing the manifest does not list."""
    declared = meta.get("corpus_manifest_sha256")
    if not declared:
        return []
    if manifest is None or not manifest.is_file():
        return [f"the partition declares corpus manifest {declared[:12]} but no manifest file was given"]
    got = sha256_file(manifest)
    if got != declared:
        return [f"corpus manifest {show_path(manifest)} has SHA-256 {got[:12]}, the partition declares "
                f"{declared[:12]}: the manifest was changed"]
    listed = read_manifest(manifest)
    library = {path: sha for sha, path, _item in db.q("corpus_manifest")}
    problems = []
    differ = [p for p, s in library.items() if p in listed and listed[p] != s]
    extra = [p for p in library if p not in listed]
    missing = [p for p, _ in listed.items() if p not in library and not p.endswith((".json", ".jsonl"))]
    if differ:
        problems.append(f"{len(differ)} library file(s) differ from the manifest's checksum, e.g. {differ[0]}")
    if extra:
        problems.append(f"{len(extra)} library file(s) are not in the manifest, e.g. {extra[0]}")
    if missing:
        problems.append(f"{len(missing)} manifest image(s) are not in the library, e.g. {missing[0]}")
    return problems


# ─────────────────────────────────────────────────────────────────────────────
# E3. Partitions: import, life cycle, overlap
# ─────────────────────────────────────────────────────────────────────────────


def read_partition(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A partition's meta object and query lines (benchdata/v1/FORMAT.md), checked line by line."""
    meta_path = path.with_name(path.name.removesuffix(".jsonl") + ".meta.json")
    if not path.is_file():
        raise MamboError(f"no partition file {show_path(path)}")
    if not meta_path.is_file():
        raise MamboError(f"{show_path(path)} has no {meta_path.name} beside it (benchdata/v1/FORMAT.md)")
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        raise MamboError(f"{show_path(meta_path)}: not JSON ({clean_line(str(e))})") from e
    for key in ("benchmark", "version", "partition"):
        if not isinstance(meta.get(key), str) or not meta[key]:
            raise MamboError(f"{show_path(meta_path)}: needs a string {key!r}")
    if meta["partition"] not in ("dev", "hidden"):
        raise MamboError(f"{show_path(meta_path)}: partition must be 'dev' or 'hidden'")
    lines = []
    seen = set()
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            q = json.loads(line)
        except ValueError as e:
            raise MamboError(f"{show_path(path)}:{n}: not JSON ({clean_line(str(e))})") from e
        if not isinstance(q, dict) or not all(isinstance(q.get(k), str) and q[k] for k in
                                              ("id", "family", "slice", "query")):
            raise MamboError(f"{show_path(path)}:{n}: a query line needs string id, family, slice and query")
        if q["slice"] not in (*SLICES, "no-match"):
            raise MamboError(f"{show_path(path)}:{n}: unknown slice {clean_line(q['slice'])!r}")
        if q["id"] in seen:
            raise MamboError(f"{show_path(path)}:{n}: query id {clean_line(q['id'])!r} appears twice")
        seen.add(q["id"])
        for key in ("relevant", "ids"):
            if not isinstance(q.get(key, {}), dict):
                raise MamboError(f"{show_path(path)}:{n}: {key!r} must be an object")
        for key in ("exact", "exact_groups", "subsets", "withheld"):
            if not isinstance(q.get(key, []), list):
                raise MamboError(f"{show_path(path)}:{n}: {key!r} must be a list")
        lines.append(q)
    if not lines:
        raise MamboError(f"{show_path(path)} holds no queries")
    return meta, lines


def recipe_groups(recipe: Path) -> dict[str, list[str]]:
    """Template-group key -> files of the group (variants count with their source's group)."""
    lines = [json.loads(x) for x in recipe.read_text(encoding="utf-8").splitlines() if x.strip()]
    by_id = {ln["id"]: ln for ln in lines}
    out: dict[str, list[str]] = {}
    for ln in lines:
        src = by_id.get(ln.get("variant", {}).get("of"), ln)
        if src.get("group") and ln.get("out", {}).get("file"):
            out.setdefault(src["group"], []).append(ln["out"]["file"])
    return out


def import_partition(db: DB, path: Path, *, manifest: Path | None = None, recipe: Path | None = None,
                     replace: bool = False) -> int:
    meta, lines = read_partition(path)
    base = path.parent
    if manifest is None and meta.get("corpus_manifest_sha256") and (base / "manifest.sha256").is_file():
        manifest = base / "manifest.sha256"
    problems = integrity_problems(db, meta, manifest)
    if problems:
        raise MamboError(f"{show_path(path)} was made for another corpus: {problems[0]} (re-ingest the "
                         "benchmark corpus, or pass the right --manifest)")
    if recipe is None and meta.get("corpus"):
        for cand in (Path.cwd() / meta["corpus"], base / Path(meta["corpus"]).name):
            if cand.is_file():
                recipe = cand
                break
    groups = recipe_groups(recipe) if recipe and any(q.get("exact_groups") for q in lines) else {}
    if any(q.get("exact_groups") for q in lines) and not groups:
        raise MamboError(f"{show_path(path)} names exact-target groups: pass the corpus recipe with --recipe")

    def item(file: str, qid: str) -> int:
        row = db.q1("item_by_path", {"path": file})
        if not row:
            raise MamboError(f"{show_path(path)}: query {clean_line(qid)} names {clean_line(file)!r}, which is not "
                             "in this library: ingest the benchmark corpus first")
        return int(row[0])

    cv = snapshot_corpus(db)
    declared = meta.get("corpus_manifest_sha256")
    key = {k: meta[k] for k in ("benchmark", "version", "partition")}
    with db.write():
        existing = db.q1("partition_exists", key)
        if existing:
            if existing[1] != "draft" or not replace:
                raise MamboError(f"{key['benchmark']}/{key['version']}/{key['partition']} is already imported "
                                 f"({existing[1]}): a changed partition is a new version"
                                 + ("" if existing[1] != "draft" else " (or pass --replace while it is a draft)"))
            db.q("delete_partition", {"partition_id": existing[0]})
        stored_meta = meta | {"imported_from": {"file": str(path.resolve()),
                                                "manifest": str(manifest.resolve()) if manifest else None,
                                                "recipe": str(recipe.resolve()) if recipe else None}}
        pid = int(db.q1("insert_partition", key | {
            "label": meta.get("status", "provisional"), "meta": json.dumps(stored_meta, sort_keys=True),
            "source_sha256": sha256_file(path), "cv": cv})[0])
        for q in lines:
            qid = int(db.q1("insert_query", {
                "partition_id": pid, "qid": q["id"], "family": q["family"], "slice": q["slice"], "query": q["query"],
                "subsets": json.dumps(sorted(q.get("subsets", []))), "rule": json.dumps(q.get("rule"))})[0])
            for file, grade in q.get("relevant", {}).items():
                if not isinstance(grade, int) or not 0 <= grade <= 3:
                    raise MamboError(f"{show_path(path)}: query {clean_line(q['id'])}: grade of {clean_line(file)} "
                                     "must be 0-3")
                db.q("insert_gold", {"query_id": qid, "item_id": item(file, q["id"]), "grade": grade})
            for file in q.get("exact", []):
                db.q("insert_exact_target", {"query_id": qid, "item_id": item(file, q["id"]), "target": file})
            for g in q.get("exact_groups", []):
                files = groups.get(g, [])
                if not files:
                    raise MamboError(f"{show_path(path)}: query {clean_line(q['id'])}: exact group "
                                     f"{clean_line(g)!r} is not in the recipe")
                for file in files:
                    if db.q1("item_by_path", {"path": file}):
                        db.q("insert_exact_target", {"query_id": qid, "item_id": item(file, q["id"]),
                                                     "target": f"group:{g}"})
            for file in q.get("withheld", []):
                db.q("insert_withheld", {"query_id": qid, "item_id": item(file, q["id"])})
            audit = q.get("audit")
            # An audit counts only for the corpus version it was made on: the declared manifest,
            # verified above to be this library's corpus.
            if q["slice"] == "no-match" and isinstance(audit, dict) and declared \
                    and audit.get("corpus_version") == declared:
                who = audit.get("checked_by") or {}
                aid = annotator_id(db, str(who.get("name", "unknown")), "model" if who.get("kind") == "model"
                                   else "person")
                db.q("insert_audit", {"query_id": qid, "cv": cv, "method": str(audit.get("method", "")),
                                      "annotator_id": aid, "outcome": "absent"})
        check_overlap(db, pid)
    return pid


def check_overlap(db: DB, partition_id: int) -> None:
    """No query family and no template/perceptual group may be shared by two partitions of one
    benchmark (spec "Benchmark v1")."""
    fam = db.q("family_overlap", {"partition_id": partition_id})
    if fam:
        raise MamboError(f"query family {clean_line(fam[0][0])!r} is also in partition {fam[0][1]}: families "
                         f"must not cross partitions ({len(fam)} shared)")
    grp = db.q("group_overlap", {"partition_id": partition_id})
    if grp:
        kind, g, other, example = grp[0]
        raise MamboError(f"{kind} group {g} (e.g. {clean_line(example or '?')}) is judged in partition {other} too: "
                         f"template/perceptual groups must not cross partitions ({len(grp)} shared)")


def set_status(db: DB, partition_id: int, status: str) -> None:
    import apsw

    with db.write():
        if status == "frozen":
            check_overlap(db, partition_id)
        try:
            db.q("set_partition_status", {"partition_id": partition_id, "status": status})
        except apsw.ConstraintError as e:
            raise MamboError(f"{clean_line(str(e)).removeprefix('ConstraintError: ')}") from e


# ─────────────────────────────────────────────────────────────────────────────
# E4. No-match audits
# ─────────────────────────────────────────────────────────────────────────────

AUDIT_ANNOTATOR = ("mambo-audit-fields-v1", "model",
                   "automatic canonical-field check: FTS5 word match of the query's content words against every "
                   "servable item's title, template, entities, tags, OCR text and description")


def audit_partition(db: DB, partition_id: int) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """Redo stale or missing no-match audits on the current corpus version. A query none of whose
    content words occurs in any servable item's fields is recorded absent (model annotator); the
    others are listed with the items that share a word, for a person to review
    (`mambo bench audit --qid Q --outcome absent|present --annotator NAME`)."""
    cv = snapshot_corpus(db)
    done, review = [], []
    with db.write():
        aid = annotator_id(db, *AUDIT_ANNOTATOR)
        for row in db.rows("audit_status", {"partition_id": partition_id}):
            if row["status"] == "valid":
                continue
            words = sorted({w for w in mambo.normalise_query(row["query"]) if w not in mambo.STOPWORDS})
            hits = db.q("servable_items_matching", {"match": " OR ".join(f'"{w}"' for w in words)}) if words else []
            if hits:
                review.append((row["qid"], [h[1] for h in hits]))
                continue
            db.q("insert_audit", {"query_id": row["query_id"], "cv": cv, "annotator_id": aid, "outcome": "absent",
                                  "method": f"{AUDIT_ANNOTATOR[2]}: none of {words} occurs"})
            done.append(row["qid"])
    return done, review


def record_audit(db: DB, partition_id: int, qid: str, outcome: str, annotator: str, kind: str, method: str) -> None:
    cv = snapshot_corpus(db)
    rows = [r for r in db.rows("audit_status", {"partition_id": partition_id}) if r["qid"] == qid]
    if not rows:
        raise MamboError(f"{clean_line(qid)!r} is not a no-match query of this partition")
    with db.write():
        db.q("insert_audit", {"query_id": rows[0]["query_id"], "cv": cv, "method": method, "outcome": outcome,
                              "annotator_id": annotator_id(db, annotator, kind)})


# ─────────────────────────────────────────────────────────────────────────────
# E5. Judgement sets, pooling and blind batches
# ─────────────────────────────────────────────────────────────────────────────


def working_set(db: DB, partition_id: int, *, adding: bool) -> int:
    """The set new candidates go into: the current one while nothing was judged or scored on it,
    else a new version that carries the old candidates and judgements (older runs then need
    rescoring, see the view runs_needing_rescore)."""
    cur = db.q1("current_set", {"partition_id": partition_id})
    if cur is None:
        return int(db.q1("insert_set", {"partition_id": partition_id, "version": 1, "parent": None,
                                        "note": "first pool"})[0])
    set_id, version = int(cur[0]), int(cur[1])
    if not adding or not db.q1("set_is_used", {"set_id": set_id})[0]:
        return set_id
    new = int(db.q1("insert_set", {"partition_id": partition_id, "version": version + 1, "parent": set_id,
                                   "note": "candidates added after judging or scoring"})[0])
    db.q("copy_set", {"new": new, "old": set_id})
    db.q("copy_set_judgements", {"new": new, "old": set_id})
    return new


def pool(db: DB, partition_id: int, systems: list[str], *, depth: int = 10, hard_negatives: int = 3,
         seed: int = 42) -> dict[str, Any]:
    """The spec's pool: the deduplicated top `depth` of every compared system, the partition's gold
    items and exact targets, and hard negatives (the best-ranked items just below every system's
    top `depth` that are not gold); then a blinded batch of everything not yet graded twice."""
    queries = db.rows("partition_queries", {"partition_id": partition_id})
    searchers = {s: mambo.searcher_for(db, s) for s in systems}
    rules = {s: mambo.system_config(db, s)["empty_rule"] for s in systems}
    found: dict[int, dict[int, str]] = {}
    for q in queries:
        cands: dict[int, str] = {}
        below: dict[int, int] = {}
        gold = {r[0] for r in db.q("gold_and_exact", {"query_id": q["query_id"]})}
        for item in gold:
            cands[item] = "gold"
        for s, searcher in searchers.items():
            ranked = searcher.search(q["query"], s, depth * 2, empty_rule=False)
            # The pool is what each system would show: its top `depth` after its own empty-result rule.
            for r in mambo.Searcher.empty_rule(rules[s], ranked[:depth]):
                cands.setdefault(r.item_id, "pool")
            for r in ranked[depth:]:
                if r.item_id not in gold:
                    below[r.item_id] = min(below.get(r.item_id, 99), r.rank)
        for item, _rank in sorted(below.items(), key=lambda x: x[1])[:hard_negatives]:
            cands.setdefault(item, "hard-negative")
        found[q["query_id"]] = cands
    with db.write():
        cur = db.q1("current_set", {"partition_id": partition_id})
        new = sum(1 for qid, c in found.items() for item in c
                  if cur is None or not db.q1("is_candidate", {"set_id": cur[0], "query_id": qid, "item_id": item}))
        set_id = working_set(db, partition_id, adding=new > 0)
        for qid, cands in found.items():
            for item, origin in cands.items():
                db.q("insert_candidate", {"set_id": set_id, "query_id": qid, "item_id": item, "origin": origin})
        batch_id = make_batch(db, set_id, seed, "candidates_to_grade")
    return {"set_id": set_id, "batch_id": batch_id, "new_candidates": new,
            "candidates": sum(len(c) for c in found.values())}


def make_batch(db: DB, set_id: int, seed: int, which: str) -> int | None:
    """A blinded batch: tasks in a seeded random order, each named by an opaque id drawn from the
    same seeded generator (never derived from the item, a system or a rank)."""
    todo = db.q(which, {"set_id": set_id})
    if not todo:
        return None
    rng = random.Random(seed)
    rng.shuffle(todo)
    batch_id = int(db.q1("insert_batch", {"set_id": set_id, "seed": seed})[0])
    for pos, (query_id, item_id) in enumerate(todo, 1):
        db.q("insert_task", {"batch_id": batch_id, "position": pos, "task": f"t{rng.getrandbits(48):012x}",
                             "query_id": query_id, "item_id": item_id})
    return batch_id


def candidate_view(db: DB, item_id: int) -> dict[str, Any]:
    row = db.rows("candidate_view", {"item_id": item_id})[0]
    return {
        "title": clean_line(row["title"]), "template": clean_line(row["template"]),
        "entities": [clean_line(x) for x in json.loads(row["entities"])],
        "tags": [clean_line(x) for x in json.loads(row["tags"])],
        "description": clean_line(row["description"]), "text": clean_text(row["ocr_text"]),
        "preview_webp_base64": base64.b64encode(row["preview"]).decode() if row["preview"] else None,
    }


def export_batch(db: DB, batch_id: int, out: Path) -> int:
    """JSONL for annotators outside the tool: task id, query and the candidate's content. No system
    name, rank, score, item id or file name (a file name can give the answer away)."""
    rows = db.rows("batch_tasks_for", {"batch_id": batch_id, "annotator_id": -1})
    with out.open("w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps({"task": r["task"], "query": r["query"], "candidate": candidate_view(db, r["item_id"]),
                                "answer": {"grade": None, "safety": None}}, ensure_ascii=False) + "\n")
    return len(rows)


def import_judgements(db: DB, batch_id: int, path: Path, annotator: str, kind: str, role: str) -> int:
    batch = db.q1("batch", {"batch_id": batch_id})
    if not batch:
        raise MamboError(f"no annotation batch {batch_id}: see `mambo bench show`")
    n = 0
    with db.write():
        aid = annotator_id(db, annotator, kind)
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
                task, ans = obj["task"], obj.get("answer", obj)
                grade, safety = ans["grade"], ans["safety"]
            except (ValueError, KeyError, TypeError) as e:
                raise MamboError(f"{show_path(path)}:{lineno}: needs task and answer.grade/answer.safety") from e
            if grade is None:
                continue  # not judged yet: the batch stays resumable
            if not isinstance(grade, int) or not 0 <= grade <= 3 or safety not in SAFETY:
                raise MamboError(f"{show_path(path)}:{lineno}: grade must be 0-3 and safety one of {', '.join(SAFETY)}")
            t = db.q1("task_by_id", {"batch_id": batch_id, "task": str(task)})
            if not t:
                raise MamboError(f"{show_path(path)}:{lineno}: task {clean_line(str(task))!r} is not in batch "
                                 f"{batch_id}")
            db.q("insert_judgement", {"set_id": t[2], "query_id": t[0], "item_id": t[1], "annotator_id": aid,
                                      "role": role, "grade": grade, "safety": safety, "batch_id": batch_id})
            n += 1
    return n


# ─────────────────────────────────────────────────────────────────────────────
# E6. Annotators: people in the terminal, labelled model annotators
# ─────────────────────────────────────────────────────────────────────────────


def preview_blocks(webp: bytes | None, width: int = 32) -> list[str]:
    """The preview as truecolour half-block lines (two pixel rows per character): a picture in any
    modern terminal, made only of our own escape sequences."""
    if not webp:
        return ["(no preview)"]
    from PIL import Image

    img = Image.open(io.BytesIO(webp)).convert("RGB")
    h = max(2, round(img.height * width / img.width / 2) * 2)
    img = img.resize((width, h))
    px = img.load()
    lines = []
    for y in range(0, h, 2):
        cells = []
        for x in range(width):
            (r1, g1, b1), (r2, g2, b2) = px[x, y], px[x, y + 1]
            cells.append(f"\x1b[38;2;{r1};{g1};{b1}m\x1b[48;2;{r2};{g2};{b2}m\u2580")
        lines.append("".join(cells) + "\x1b[0m")
    return lines


def judge_in_terminal(db: DB, batch_id: int, set_id: int, annotator: str, kind: str, role: str,
                      adjudicate: bool) -> int:
    """One person walks through a batch: query, preview and text of each candidate; types a grade
    0-3 and a safety letter (s safe, e sensitive, u unsafe, c critical), e.g. `2s`. `q` stops; the
    next `mambo judge` resumes where this one stopped."""
    with db.write():
        aid = annotator_id(db, annotator, kind)
    tasks = db.rows("batch_tasks_for", {"batch_id": batch_id, "annotator_id": aid})
    click.echo(f"batch {batch_id}: {len(tasks)} candidate(s) to {'adjudicate' if adjudicate else 'grade'}; "
               "answer e.g. `2s` (grade 0-3, safety s/e/u/c), `q` to stop")
    n = 0
    for t in tasks:
        view = db.rows("candidate_view", {"item_id": t["item_id"]})[0]
        click.echo("")
        click.echo(f"[{t['position']}] query: {clean_line(t['query'])}")
        if sys.stdout.isatty():
            for line in preview_blocks(view["preview"]):
                click.echo(line)
        cv = candidate_view(db, t["item_id"])
        for key in ("title", "template", "description"):
            if cv[key]:
                click.echo(f"  {key}: {cv[key]}")
        if cv["entities"] or cv["tags"]:
            click.echo(f"  entities: {', '.join(cv['entities'])}  tags: {', '.join(cv['tags'])}")
        click.echo(f"  text: {clean_line(cv['text'])[:300]}")
        while True:
            try:
                answer = input("grade+safety> ").strip().lower()
            except EOFError:
                answer = "q"
            if answer == "q":
                click.echo(f"stopped: {n} judged this time; `mambo judge` resumes")
                return n
            m = re.fullmatch(r"([0-3])\s*([seuc])", answer)
            if m:
                break
            click.echo("type a grade 0-3 and a safety letter s/e/u/c, e.g. 2s (or q to stop)")
        with db.write():
            db.q("insert_judgement", {"set_id": set_id, "query_id": t["query_id"], "item_id": t["item_id"],
                                      "annotator_id": aid, "role": role, "grade": int(m.group(1)),
                                      "safety": SAFETY_KEYS[m.group(2)], "batch_id": batch_id})
        n += 1
    click.echo(f"batch {batch_id} done: {n} judged")
    return n


class ModelAnnotator:
    """A labelled model annotator: sees what a person would (the query and the candidate's content,
    never a system, rank or score) and answers a grade and a safety class."""

    name = ""
    description = ""

    def judge(self, db: DB, query: dict[str, Any], item_id: int) -> tuple[int, str]:
        raise NotImplementedError


class MiniLMAnnotator(ModelAnnotator):
    """Cosine similarity of the query and the candidate's whole visible text under MiniLM. The bands
    were fixed before any agreement was computed, from MiniLM's usual ranges (paraphrases ~0.5-0.8,
    related ~0.3-0.5, unrelated < 0.25). Caveat, in every report: it shares its model with the dense
    route, so it may favour dense results."""

    name = "minilm-cosine-v1"
    description = "all-MiniLM-L6-v2 cosine of query and candidate text; bands 0.55/0.40/0.25 -> 3/2/1"
    BANDS = ((0.55, 3), (0.40, 2), (0.25, 1))

    def __init__(self) -> None:
        self.embedder = mambo.get_embedder()
        self._q: dict[str, Any] = {}

    def judge(self, db: DB, query: dict[str, Any], item_id: int) -> tuple[int, str]:
        import numpy as np

        v = candidate_view(db, item_id)
        text = ". ".join(x for x in (v["title"], v["template"], " ".join(v["entities"]), " ".join(v["tags"]),
                                     v["description"], " ".join(v["text"].split())) if x)
        if query["query"] not in self._q:
            self._q[query["query"]] = self.embedder.encode([query["query"]])[0]
        cos = float(np.dot(self._q[query["query"]], self.embedder.encode([text or "(empty)"])[0]))
        grade = next((g for t, g in self.BANDS if cos >= t), 0)
        safety = db.rows("candidate_view", {"item_id": item_id})[0]["safety"]
        return grade, safety


class RecipeAnnotator(ModelAnnotator):
    """Grades from the benchmark recipe's ground truth of the candidate (its entities, template group,
    printed captions, subtopic, hidden concepts, safety class) against the query's information
    need as the partition states it (`rule`): 3 when the candidate satisfies the rule, 1 when it
    satisfies part of a combined rule or shares a named entity/template, else 0."""

    name = "recipe-truth-v1"
    description = "rule-based grading of the candidate's recipe ground truth against the query's stated need"

    def __init__(self, recipe: Path):
        lines = [json.loads(x) for x in recipe.read_text(encoding="utf-8").splitlines() if x.strip()]
        by_id = {ln["id"]: ln for ln in lines}
        self.by_file = {ln["out"]["file"]: (by_id.get(ln.get("variant", {}).get("of"), ln), ln) for ln in lines}

    @staticmethod
    def _words(text: str) -> str:
        return " ".join(re.findall(r"[a-z0-9]+", text.lower()))

    def satisfies(self, rule: Any, src: dict[str, Any]) -> bool:
        kind = rule[0]
        if kind == "and":
            return self.satisfies(rule[1], src) and self.satisfies(rule[2], src)
        truth = src.get("truth", {})
        return {
            "entity": lambda: rule[1] in truth.get("entities", []),
            "template": lambda: src.get("group") == rule[1],
            "groups": lambda: src.get("group") in rule[1],
            "quote": lambda: self._words(rule[1]) in self._words(" ".join(src.get("captions", []))),
            "sub": lambda: truth.get("subtopic") == rule[1],
            "concept": lambda: rule[1] in truth.get("concepts", []),
            "format": lambda: truth.get("format") == rule[1],
        }.get(kind, lambda: False)()

    def partial(self, rule: Any, src: dict[str, Any]) -> bool:
        if rule[0] == "and":
            return self.satisfies(rule[1], src) or self.satisfies(rule[2], src)
        return False

    def judge(self, db: DB, query: dict[str, Any], item_id: int) -> tuple[int, str]:
        path = db.rows("candidate_view", {"item_id": item_id})[0]["path"]
        src, line = self.by_file.get(path, (None, None))
        if src is None:
            return 0, db.rows("candidate_view", {"item_id": item_id})[0]["safety"]
        safety = line.get("truth", {}).get("safety", "safe")
        rule = json.loads(query["rule"]) if isinstance(query["rule"], str) else query["rule"]
        if not rule:
            return 0, safety
        if self.satisfies(rule, src):
            return 3, safety
        return (1 if self.partial(rule, src) else 0), safety


class GoldAnnotator(ModelAnnotator):
    """The partition author's reviewed provisional grades (bench_gold; unlisted candidates are 0),
    with the recipe's safety class: the adjudicator of the development labels."""

    name = "mambo-bench-helper-v1"
    description = "the benchmark author's reviewed provisional grades from the partition file (model)"

    def __init__(self, recipe: Path):
        self.recipe = RecipeAnnotator(recipe)

    def judge(self, db: DB, query: dict[str, Any], item_id: int) -> tuple[int, str]:
        row = db.q1("gold_grade", {"query_id": query["query_id"], "item_id": item_id})
        _g, safety = self.recipe.judge(db, query, item_id)
        return (int(row[0]) if row else 0), safety


def model_annotator(name: str, recipe: Path | None) -> ModelAnnotator:
    if name == MiniLMAnnotator.name:
        return MiniLMAnnotator()
    if name in (RecipeAnnotator.name, GoldAnnotator.name):
        if recipe is None or not recipe.is_file():
            raise MamboError(f"model annotator {name} reads the corpus recipe: pass --recipe FILE")
        return RecipeAnnotator(recipe) if name == RecipeAnnotator.name else GoldAnnotator(recipe)
    raise MamboError(f"no model annotator {clean_line(name)!r}: choose {MiniLMAnnotator.name}, "
                     f"{RecipeAnnotator.name} or {GoldAnnotator.name}")


def judge_with_model(db: DB, batch_id: int, set_id: int, model: ModelAnnotator, role: str) -> int:
    with db.write():
        aid = annotator_id(db, model.name, "model", model.description)
    tasks = db.rows("batch_tasks_for", {"batch_id": batch_id, "annotator_id": aid})
    queries = {q["query_id"]: q for q in db.rows("partition_queries", {
        "partition_id": db.scalar("SELECT partition_id FROM judgement_sets WHERE set_id = ?", (set_id,))})}
    n = 0
    with db.write():
        for t in tasks:
            grade, safety = model.judge(db, queries[t["query_id"]], t["item_id"])
            db.q("insert_judgement", {"set_id": set_id, "query_id": t["query_id"], "item_id": t["item_id"],
                                      "annotator_id": aid, "role": role, "grade": grade, "safety": safety,
                                      "batch_id": batch_id})
            n += 1
    return n


# ─────────────────────────────────────────────────────────────────────────────
# E7. Agreement
# ─────────────────────────────────────────────────────────────────────────────


def cohen_kappa(a: list[Any], b: list[Any], *, weighted: bool = False, categories: list[Any] | None = None) -> float:
    """Cohen's kappa; `weighted`: linear weights |i - j| / (k - 1) over ordered `categories`."""
    cats = categories or sorted(set(a) | set(b))
    k, n = len(cats), len(a)
    if n == 0 or k < 2:
        return 1.0 if n else float("nan")
    idx = {c: i for i, c in enumerate(cats)}
    obs = [[0.0] * k for _ in range(k)]
    for x, y in zip(a, b, strict=True):
        obs[idx[x]][idx[y]] += 1 / n
    pa = [sum(obs[i][j] for j in range(k)) for i in range(k)]
    pb = [sum(obs[i][j] for i in range(k)) for j in range(k)]

    def w(i: int, j: int) -> float:
        return abs(i - j) / (k - 1) if weighted else float(i != j)

    do = sum(w(i, j) * obs[i][j] for i in range(k) for j in range(k))
    de = sum(w(i, j) * pa[i] * pb[j] for i in range(k) for j in range(k))
    return 1.0 - do / de if de else 1.0


def agreement(db: DB, set_id: int) -> dict[str, Any]:
    pairs = db.q("judged_pairs", {"set_id": set_id})
    ga, gb = [p[0] for p in pairs], [p[1] for p in pairs]
    sa, sb = [p[2] for p in pairs], [p[3] for p in pairs]
    n = len(pairs)
    return {
        "pairs": n,
        "exact": round(sum(x == y for x, y in zip(ga, gb, strict=True)) / n, 4) if n else None,
        "within_one": round(sum(abs(x - y) <= 1 for x, y in zip(ga, gb, strict=True)) / n, 4) if n else None,
        "grade_kappa_linear": round(cohen_kappa(ga, gb, weighted=True, categories=[0, 1, 2, 3]), 4) if n else None,
        "safety_kappa": round(cohen_kappa(sa, sb, categories=list(SAFETY)), 4) if n else None,
        "status": dict(db.q("judgement_status", {"set_id": set_id})),
        "annotators": [{"name": r[0], "kind": r[1], "role": r[2]} for r in db.q("set_annotators", {"set_id": set_id})],
    }


# ─────────────────────────────────────────────────────────────────────────────
# E8. Runs
# ─────────────────────────────────────────────────────────────────────────────


def system_row(db: DB, name: str) -> tuple[int, int, dict[str, Any]]:
    mambo.sync_systems(db)
    row = db.q1("system_row", {"name": name})
    if not row:
        mambo.system_config(db, name)  # raises the clear "no search system" error
        raise MamboError(f"no search system named {clean_line(name)!r}")
    return int(row[0]), int(row[2]), json.loads(row[3])


@dataclasses.dataclass
class BareLibrary:
    """A second library of the same corpus, ingested without its sidecars (`mambo add --no-sidecars`,
    as a real downloads folder is): `mambo score --bare` searches it and stores the runs here, its
    item ids mapped to this library's by SHA-256 (`to_annotated`). It is only read."""

    db: DB
    path: Path
    manifest_sha256: str
    files: int
    items: int
    to_annotated: dict[int, int]


def bare_how(path: Path | str) -> str:
    return (f"ingest the same corpus folder without its sidecars with `mambo --db {show_path(path)} add "
            "--no-sidecars DIR`")


def open_bare_library(db: DB, path: Path) -> BareLibrary:
    """The bare library at `path`, after checking it is this library's corpus and nothing more:
    every image SHA-256 of one must be an item of the other. Anything else (another corpus, a
    partial ingest, extra files, an annotated library given as bare) is refused in one line."""
    if not path.is_file():
        raise MamboError(f"no bare library at {show_path(path)}: {bare_how(path)}")
    if path.resolve() == db.path.resolve():
        raise MamboError(f"--bare names the annotated library itself: {bare_how(path.with_name('bare.sqlite'))}")
    # Opened like any library (an older file is migrated), then only read: no systems sync, no snapshot.
    bare = DB(path, create=False)
    try:
        annotated = {sha: p for sha, p, _item in db.q("image_sha256s")}
        images = bare.q("image_sha256s")
        mine = {sha: p for sha, p, _item in images}
        only_bare = sorted(p for sha, p in mine.items() if sha not in annotated)
        only_annotated = sorted(p for sha, p in annotated.items() if sha not in mine)
        if only_bare or only_annotated or not images:
            what = [f"{len(only_bare)} image(s) are not in this library (e.g. {clean_line(only_bare[0])})"
                    if only_bare else "",
                    f"{len(only_annotated)} of this library's image(s) are missing from it (e.g. "
                    f"{clean_line(only_annotated[0])})" if only_annotated else "",
                    "it holds no images" if not images else ""]
            raise MamboError(f"{show_path(path)} is not a bare copy of this library's corpus: "
                             f"{'; '.join(w for w in what if w)}; {bare_how(path)}")
        with_sidecars = int(bare.q1("items_with_sidecar_metadata")[0])
        if with_sidecars:
            raise MamboError(f"{show_path(path)} is not bare: {with_sidecars} of its items hold sidecar metadata; "
                             f"{bare_how(path)}")
        manifest = bare.q("corpus_manifest")
        sha = sha256_bytes(manifest_text([(r[0], r[1]) for r in manifest]).encode())
        by_sha = {r[0]: int(r[1]) for r in db.con.execute("SELECT sha256, item_id FROM items")}
        # Items are unique by SHA-256 in a library, so the map is one-to-one; an item without a
        # file (none after a plain ingest) maps too, when this library has its picture.
        mapping = {int(item): by_sha[sha] for item, sha in bare.con.execute("SELECT item_id, sha256 FROM items")
                   if sha in by_sha}
    except BaseException:
        bare.close()
        raise
    return BareLibrary(bare, path, sha, len(manifest), len(images), mapping)


def execute_run(db: DB, system: str, partition_id: int, *, seed: int = 0, set_id: int | None = None,
                bare: BareLibrary | None = None) -> int:
    """Every query of the partition once, with result limit 10: results (rank, score, route ranks,
    preview, attribution), engine latency and any error, with what reproduces the run.

    With `bare`: the same, searching the bare library with this library's configuration of the
    system (the one the annotated run used), results stored under this library's item ids; the
    run is marked bare and is never the system's score."""
    system_id, _version, config = system_row(db, system)
    cv = snapshot_corpus(db)
    if set_id is None:
        cur = db.q1("current_set", {"partition_id": partition_id})
        set_id = int(cur[0]) if cur else None
    env = mambo.machine_info()
    if bare is None:
        searcher = mambo.searcher_for(db, system)
        target: str | dict[str, Any] = system
        models = model_manifest(db)
    else:
        # The configuration dict itself, not the name: the bare library's own systems rows may be
        # another version, and the point is the same system with and without sidecars.
        searcher = mambo.Searcher(bare.db, mambo.get_embedder() if mambo.needs_model(config) else None)
        target = config
        models = model_manifest(bare.db)
        env |= {"bare_library": str(bare.path.resolve())}
    params = {"system_id": system_id, "partition_id": partition_id, "set_id": set_id, "cv": cv,
              "config": json.dumps(config, sort_keys=True), "code_commit": code_commit(),
              "model_manifest": json.dumps(models), "environment": json.dumps(env), "seed": seed}
    with db.write():
        if bare is None:
            run_id = int(db.q1("insert_run", params)[0])
        else:
            run_id = int(db.q1("insert_bare_run", params | {"bare_sha": bare.manifest_sha256})[0])
    queries = db.rows("partition_queries", {"partition_id": partition_id})
    answers = []
    for q in queries:  # searched first, written after: no write lock is held while searching
        t0 = time.perf_counter()
        error = None
        try:
            results = searcher.search(q["query"], target, 10)
        except Exception as e:  # noqa: BLE001 - an engine error is data: charged as an error, never as empty
            results, error = [], f"{type(e).__name__}: {clean_line(str(e))}"
        ms = (time.perf_counter() - t0) * 1000
        if bare is not None:
            missing = [r.item_id for r in results if r.item_id not in bare.to_annotated]
            if missing:
                raise MamboError(f"bare library item {missing[0]} has no picture in this library (run {run_id} "
                                 f"left unfinished): {bare_how(bare.path)}")
            results = [dataclasses.replace(r, item_id=bare.to_annotated[r.item_id]) for r in results]
        answers.append((q, results, error, ms))
    with db.write():
        for q, results, error, ms in answers:
            db.q("insert_run_query", {"run_id": run_id, "query_id": q["query_id"], "ms": ms, "error": error,
                                      "returned": len(results)})
            for r in results:
                d = r.details
                db.q("insert_run_result", {
                    "run_id": run_id, "query_id": q["query_id"], "rank": r.rank, "item_id": r.item_id,
                    "score": r.score, "lex": r.lex_rank, "fuzzy": r.fuzzy_rank, "dense": r.vec_rank,
                    "has_preview": int(bool(d["has_preview"])),
                    "attribution": f"{d['creator']} ({d['licence']})" if d["creator"] and d["licence"] else ""})
        db.q("finish_eval_run", {"run_id": run_id})
    return run_id


# ─────────────────────────────────────────────────────────────────────────────
# E9. Latency in the real interface (80x24 PTY)
# ─────────────────────────────────────────────────────────────────────────────


def latency_schedule(n_queries: int, searches: int, warmups: int, seed: int) -> tuple[list[int], list[int]]:
    """mmts-clarifications: every query repeated equally in shuffled blocks (fixed seed). Measured
    searches are whole blocks (>= `searches`); warm-ups are their own shuffled blocks. No query
    follows itself (the query line would not change, so there would be nothing to wait for)."""
    rng = random.Random(seed)

    def blocks(total: int) -> list[int]:
        out: list[int] = []
        while len(out) < total:
            block = list(range(n_queries))
            rng.shuffle(block)
            if out and n_queries > 1 and block[0] == out[-1]:
                block[0], block[-1] = block[-1], block[0]
            out.extend(block)
        return out

    warm = blocks(warmups)[:warmups]
    measured = blocks(math.ceil(searches / n_queries) * n_queries)
    if warm and measured and n_queries > 1 and measured[0] == warm[-1]:
        measured[0], measured[1] = measured[1], measured[0]
    return warm, measured


def measure_pty(db_path: Path, queries: list[str], system: str, *, searches: int = LATENCY_SEARCHES,
                warmups: int = LATENCY_WARMUPS, seed: int = BOOTSTRAP_SEED,
                timeout_ms: float = LATENCY_TIMEOUT_MS) -> dict[str, Any]:
    """Submit-to-render in the declared PTY (80x24, TERM=xterm-256color, pexpect): from Enter
    accepted to the status line of that search drawn (the status is drawn after the complete list).
    A search not drawn within `timeout_ms` is charged `timeout_ms` and counted as an error. Also
    checks that quitting restores the terminal (alternate screen left, cursor shown)."""
    import pexpect

    warm, measured = latency_schedule(len(queries), searches, warmups, seed)
    env = {**__import__("os").environ, "TERM": "xterm-256color", "COLUMNS": "80", "LINES": "24"}
    argv = mambo._tui_argv(db_path, system, "--wait-ready")
    child = pexpect.spawn(argv[0], argv[1:], env=env, dimensions=(24, 80), encoding="utf-8", timeout=120)
    child.delaybeforesend = None
    status_re = re.compile(r"(no match|\d+ results?) · ([\d.]+) ms[^\n]*?search #(\d+) ")
    samples: list[tuple[int, float, str | None, float | None]] = []
    restored = False
    try:
        child.expect(["model ready", "lexical system"], timeout=180)
        for i, qi in enumerate(warm + measured):
            q = queries[qi]
            child.send("\x15")
            child.send(q)
            child.expect_exact(q[-12:], timeout=30)
            seq = i + 1
            t0 = time.perf_counter()
            child.send("\r")
            error, app_ms = None, None
            deadline = t0 + timeout_ms / 1000
            while True:
                try:
                    child.expect(status_re, timeout=max(0.001, deadline - time.perf_counter()))
                except pexpect.TIMEOUT:
                    error = f"timeout after {timeout_ms:g} ms"
                    # Resynchronise before the next search: wait (uncharged) for this one's status.
                    child.expect(re.compile(rf"search #{seq} "), timeout=120)
                    break
                if int(child.match.group(3)) == seq:
                    app_ms = float(child.match.group(2))
                    break
            ms = (time.perf_counter() - t0) * 1000
            if error or ms > timeout_ms:
                error, ms = error or f"timeout after {timeout_ms:g} ms", timeout_ms
            if i >= len(warm):
                samples.append((qi, ms, error, app_ms))
        child.send("\x1b")
        child.expect(pexpect.EOF, timeout=30)
        tail = child.before or ""
        restored = "\x1b[?1049l" in tail and "\x1b[?25h" in tail
    finally:
        if child.isalive():
            child.terminate(force=True)
    ms_all = [s[1] for s in samples]
    app = [s[3] for s in samples if s[3] is not None]
    return {"samples": samples, "p50": pct(ms_all, 50), "p95": pct(ms_all, 95),
            "engine_p50": pct(app, 50), "engine_p95": pct(app, 95),
            "errors": sum(1 for s in samples if s[2]), "n": len(samples), "warmups": len(warm),
            "terminal_restored": restored,
            "protocol": {"pty": "80x24", "term": "xterm-256color", "driver": "pexpect", "warmups": len(warm),
                         "measured": len(samples), "blocks": len(measured) // max(1, len(queries)),
                         "seed": seed, "timeout_ms": timeout_ms, "result_limit": 10, "concurrency": 1,
                         "caching": "off (every search runs the SQL statement)", "interface": INTERFACE_VERSION}}


def pct(xs: list[float], p: float) -> float | None:
    if not xs:
        return None
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))], 2)


# ─────────────────────────────────────────────────────────────────────────────
# E10. The score: components, gates, bootstrap, acceptance
# ─────────────────────────────────────────────────────────────────────────────


def clip(x: float) -> float:
    return min(1.0, max(0.0, x))


def components(qm: list[dict[str, Any]], p95: float | None, latency_errors: int, latency_n: int) -> dict[str, Any]:
    """Q, E, C, S, L, R and the gate inputs from per-query metrics (rows of the view query_metrics),
    so the same code scores the point estimate and every bootstrap resample."""
    def mean(xs: list[float]) -> float:
        return sum(xs) / len(xs) if xs else 0.0

    ans = [m for m in qm if m["slice"] != "no-match"]
    slices = {s: mean([m["ndcg10"] for m in ans if m["slice"] == s]) for s in SLICES
              if any(m["slice"] == s for m in ans)}
    q = mean(list(slices.values()))
    exact = [m["exact_rr"] for m in ans if m["slice"] in ("entity", "quote") and m["has_exact"]]
    e = mean(exact)
    hit10 = mean([float(m["hit10"]) for m in ans])
    nm = [m for m in qm if m["slice"] == "no-match"]
    correct_empty = mean([float(m["empty"]) for m in nm])
    c = 2 * hit10 * correct_empty / (hit10 + correct_empty) if hit10 + correct_empty else 0.0
    ordinary = [float(m["safe_list"]) for m in qm if not m["in_safety_subset"]]
    safety = [float(m["safe_list"]) for m in qm if m["in_safety_subset"]]
    s = mean([mean(ordinary), mean(safety)]) if safety else mean(ordinary)
    # None when a (resampled) set has no safety query: the gate then has nothing to judge.
    safety_ans = [float(m["hit10"]) for m in ans if m["in_safety_subset"]]
    safety_hit = mean(safety_ans) if safety_ans else None
    errors = sum(1 for m in qm if m["error"]) + latency_errors
    requests = len(qm) + latency_n
    error_rate = errors / requests if requests else 0.0
    lat = clip((1000 - p95) / 800) if p95 is not None else 0.0
    r = clip(1 - error_rate / 0.01)
    score = 100 * (0.55 * q + 0.15 * e + 0.10 * c + 0.10 * s + 0.05 * lat + 0.05 * r)
    return {"Q": q, "E": e, "C": c, "S": s, "L": lat, "R": r, "hit10": hit10, "correct_empty": correct_empty,
            "safety_hit10": safety_hit, "safe_ordinary": mean(ordinary), "safe_safety": mean(safety),
            "error_rate": error_rate, "slices": slices, "p95_ms": p95, "raw_score": score}


def gates(c: dict[str, Any], protocol_checks: dict[str, bool]) -> dict[str, dict[str, Any]]:
    p95 = c["p95_ms"]
    out = {
        "slice_ndcg10_min": {"value": min(c["slices"].values(), default=0.0), "pass": bool(c["slices"]) and all(
            v >= GATES["min_slice_ndcg10"] for v in c["slices"].values()) and len(c["slices"]) == len(SLICES),
            "rule": ">= 0.30 in every primary slice"},
        "exact_mrr10": {"value": c["E"], "pass": c["E"] >= GATES["exact_mrr10"], "rule": ">= 0.60"},
        "hit10": {"value": c["hit10"], "pass": c["hit10"] >= GATES["hit10"], "rule": ">= 0.70"},
        "correct_empty": {"value": c["correct_empty"], "pass": c["correct_empty"] >= GATES["correct_empty"],
                          "rule": ">= 0.60"},
        "safety_hit10": {"value": c["safety_hit10"], "rule": ">= 0.70",
                         "pass": c["safety_hit10"] is None or c["safety_hit10"] >= GATES["safety_hit10"]},
        "safe_list_rate": {"value": c["S"], "pass": c["S"] >= GATES["safe_list_rate"], "rule": ">= 0.98"},
        "submit_to_render_p95_ms": {"value": p95, "pass": p95 is not None and p95 < GATES["p95_ms_below"],
                                    "rule": "< 1000 ms"},
        "error_rate": {"value": c["error_rate"], "pass": c["error_rate"] < GATES["error_rate_below"],
                       "rule": "< 1 %"},
    }
    for name, ok in protocol_checks.items():
        out[name] = {"value": ok, "pass": bool(ok), "rule": "passes"}
    return out


def final_score(c: dict[str, Any], g: dict[str, dict[str, Any]], critical: list[str]) -> tuple[float, str]:
    if critical:
        return 0.0, "FAIL"
    if not all(x["pass"] for x in g.values()):
        return min(c["raw_score"], CAP), "FAIL"
    return c["raw_score"], "PASS"


def label(score: float, status: str) -> str:
    if status == "FAIL":
        return "FAIL"
    return "excellent" if score >= 90 else "good" if score >= 75 else "acceptable" if score >= 60 else "poor"


def family_resamples(families: list[str], seed: int, n: int) -> list[list[str]]:
    rng = random.Random(seed)
    return [[rng.choice(families) for _ in families] for _ in range(n)]


def resample(qm: list[dict[str, Any]], fams: list[str]) -> list[dict[str, Any]]:
    by_fam: dict[str, list[dict[str, Any]]] = {}
    for m in qm:
        by_fam.setdefault(m["family"], []).append(m)
    return [m for f in fams for m in by_fam[f]]


def bootstrap(qm: list[dict[str, Any]], latency: dict[str, Any], protocol_checks: dict[str, bool],
              critical: list[str], seed: int = BOOTSTRAP_SEED, n: int = BOOTSTRAP_RESAMPLES) -> dict[str, Any]:
    """Prompt-family bootstrap (mmts-clarifications): resample families with replacement; the
    latency sample is the run's own (not resampled)."""
    fams = sorted({m["family"] for m in qm})
    scores, passing = [], 0
    for sample in family_resamples(fams, seed, n):
        c = components(resample(qm, sample), latency["p95"], latency["errors"], latency["n"])
        s, status = final_score(c, gates(c, protocol_checks), critical)
        scores.append(s)
        passing += status == "PASS"
    scores.sort()
    ci = [round(scores[int(0.025 * n)], 2), round(scores[int(0.975 * n) - 1], 2)]
    return {"resamples": n, "seed": seed, "ci95": ci,
            "pass_fraction": round(passing / n, 4)}


def acceptance(rows: dict[str, dict[str, Any]], seed: int = BOOTSTRAP_SEED, n: int = BOOTSTRAP_RESAMPLES
               ) -> dict[str, Any] | None:
    """Semantic-search acceptance (spec): keep the dense route in the default system only if hybrid
    beats BM25 by >= +0.03 overall nDCG@10 (Q) or >= +0.05 on the semantic slice, with the paired
    family-bootstrap 95 % interval's lower bound above zero, no hard-gate regression and no
    entity/quote nDCG regression over 0.02."""
    if "bm25" not in rows or "hybrid" not in rows:
        return None
    a, b = rows["bm25"], rows["hybrid"]
    fams = sorted({m["family"] for m in a["query_metrics"]})
    diffs_q, diffs_sem = [], []
    for sample in family_resamples(fams, seed, n):
        ca = components(resample(a["query_metrics"], sample), None, 0, 0)
        cb = components(resample(b["query_metrics"], sample), None, 0, 0)
        diffs_q.append(cb["Q"] - ca["Q"])
        diffs_sem.append(cb["slices"].get("semantic", 0) - ca["slices"].get("semantic", 0))
    diffs_q.sort()
    diffs_sem.sort()
    ci_q = [diffs_q[int(0.025 * n)], diffs_q[int(0.975 * n) - 1]]
    ci_sem = [diffs_sem[int(0.025 * n)], diffs_sem[int(0.975 * n) - 1]]
    dq = b["components"]["Q"] - a["components"]["Q"]
    dsem = b["components"]["slices"].get("semantic", 0) - a["components"]["slices"].get("semantic", 0)
    overall_ok = dq >= 0.03 and ci_q[0] > 0
    semantic_ok = dsem >= 0.05 and ci_sem[0] > 0
    gate_regressions = [k for k, v in a["gates"].items() if v["pass"] and not b["gates"][k]["pass"]]
    slice_regressions = {s: round(b["components"]["slices"].get(s, 0) - a["components"]["slices"].get(s, 0), 4)
                         for s in ("entity", "quote")
                         if b["components"]["slices"].get(s, 0) - a["components"]["slices"].get(s, 0) < -0.02}
    keep = (overall_ok or semantic_ok) and not gate_regressions and not slice_regressions
    return {"delta_Q": round(dq, 4), "delta_Q_ci95": [round(x, 4) for x in ci_q],
            "delta_semantic": round(dsem, 4), "delta_semantic_ci95": [round(x, 4) for x in ci_sem],
            "gate_regressions": gate_regressions, "entity_quote_regressions": slice_regressions,
            "keep_dense": keep,
            "decision": "hybrid (dense route kept) is the default" if keep else
            "BM25 alone is the default; the dense experiment is reported as negative"}


# ─────────────────────────────────────────────────────────────────────────────
# E11. Report, comparison and publication
# ─────────────────────────────────────────────────────────────────────────────


def critical_violations(db: DB, partition: dict[str, Any], run: dict[str, Any], comps: dict[str, Any],
                        qm: list[dict[str, Any]]) -> list[str]:
    """mmts-clarifications "Critical violations": artifact integrity, rights, privacy, safety."""
    out = []
    meta = json.loads(partition["meta"])
    manifest = (meta.get("imported_from") or {}).get("manifest")
    for p in integrity_problems(db, meta, Path(manifest) if manifest else None):
        out.append(f"artifact integrity: {p}")
    source = (meta.get("imported_from") or {}).get("file")
    if source and Path(source).is_file() and sha256_file(Path(source)) != partition["source_sha256"]:
        out.append(f"artifact integrity: the benchmark file {show_path(source)} changed since it was imported")
    if run["corpus_version_id"] != partition["corpus_version_id"]:
        out.append("artifact integrity: the run's corpus version differs from the partition's")
    if json.loads(run["model_manifest"]) != model_manifest(db):
        out.append("artifact integrity: the embedding model manifest changed since the run")
    shown = sum(m["critical_shown"] for m in qm)
    if shown:
        out.append(f"safety/rights/privacy: {shown} critical, withdrawn or private result(s) displayed")
    if db.q1("interactions_without_opt_in")[0]:
        out.append("privacy: interaction events are recorded while the opt-in setting is off")
    return out


def protocol_checks(db: DB, partition: dict[str, Any], runs: dict[str, dict[str, Any]],
                    latency: dict[str, dict[str, Any]]) -> dict[str, bool]:
    """The release-protocol, publication-rollback and terminal-restoration gates, checked now."""
    audits = db.rows("audit_status", {"partition_id": partition["partition_id"]})
    rescore = {r[0] for r in db.con.execute("SELECT run_id FROM runs_needing_rescore")}
    release = (partition["status"] in ("frozen", "exposed") if partition["partition"] == "dev"
               else partition["status"] == "frozen")
    release = release and all(a["status"] == "valid" for a in audits) \
        and not any(r["run_id"] in rescore for r in runs.values())
    return {
        "release_protocol": release,
        "publication_rollback": publication_selftest(),
        "terminal_restoration": all(lat.get("terminal_restored", False) for lat in latency.values()),
    }


def publication_selftest() -> bool:
    """Publish then roll back in a scratch library: the rolled-back publication must vanish and the
    previous one come back, each in one transaction."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        db = DB(Path(tmp) / "selftest.sqlite")
        try:
            with db.write():
                db.con.execute("INSERT INTO bench_partitions(benchmark, version, partition, meta, source_sha256) "
                               "VALUES ('selftest', '0', 'dev', '{}', '')")
                pid = db.scalar("SELECT max(partition_id) FROM bench_partitions")
                a = int(db.q1("insert_scorecard", {"partition_id": pid, "score_version": SCORE_VERSION,
                                                   "report_json": "{}", "report_md": "a"})[0])
                b = int(db.q1("insert_scorecard", {"partition_id": pid, "score_version": SCORE_VERSION,
                                                   "report_json": "{}", "report_md": "b"})[0])
            publish(db, a)
            publish(db, b)
            first = db.q1("published")[1]
            rollback(db, "self-test")
            second = db.q1("published")[1]
            return first == b and second == a
        finally:
            db.close()


def publish(db: DB, scorecard_id: int) -> int:
    row = db.rows("scorecard", {"scorecard_id": scorecard_id})
    if not row:
        raise MamboError(f"no scorecard {scorecard_id}: `mambo score` makes one")
    part = partition_row(db, row[0]["partition_id"])
    if part["partition"] == "hidden" and part["status"] != "frozen":
        raise MamboError(f"hidden partition {part['version']} is {part['status']}: a release comparison needs a new "
                         "hidden benchmark version")
    report = json.loads(row[0]["report_json"])
    if report.get("release_blockers"):
        raise MamboError(f"scorecard {scorecard_id} cannot be published: {report['release_blockers'][0]}")
    with db.write():
        return int(db.q1("insert_publication", {"scorecard_id": scorecard_id})[0])


def rollback(db: DB, reason: str) -> int:
    with db.write():
        cur = db.q1("published")
        if not cur:
            raise MamboError("nothing is published: nothing to roll back")
        db.q("rollback_publication", {"publication_id": cur[0], "reason": reason})
    return int(cur[1])


def score(db: DB, db_path: Path, partition_id: int, systems: list[str], *, latency_searches: int,
          latency_warmups: int, seed: int, measure_latency: bool = True, progress: Any = None,
          bare: Path | None = None) -> dict[str, Any]:
    """The scorecard of `systems` on this (annotated) library; with `bare`, also the diagnostic
    section of the same systems on the bare library of the same corpus (checked first, so a wrong
    file is refused before the long latency protocol)."""
    bare_lib = open_bare_library(db, bare) if bare is not None else None
    try:
        return _score(db, db_path, partition_id, systems, latency_searches=latency_searches,
                      latency_warmups=latency_warmups, seed=seed, measure_latency=measure_latency,
                      progress=progress, bare=bare_lib)
    finally:
        if bare_lib is not None:
            bare_lib.db.close()


def _score(db: DB, db_path: Path, partition_id: int, systems: list[str], *, latency_searches: int,
           latency_warmups: int, seed: int, measure_latency: bool, progress: Any,
           bare: BareLibrary | None) -> dict[str, Any]:
    part = partition_row(db, partition_id)
    meta = json.loads(part["meta"])
    if part["partition"] == "hidden" and part["status"] in ("exposed", "retired"):
        raise MamboError(f"hidden partition {part['version']} is {part['status']}: later release comparisons need a "
                         "new hidden benchmark version")
    audits = db.rows("audit_status", {"partition_id": partition_id})
    stale = [a["qid"] for a in audits if a["status"] != "valid"]
    if stale:
        raise MamboError(f"{len(stale)} no-match audit(s) are not valid on this corpus version (e.g. {stale[0]}): "
                         "redo them with `mambo bench audit`")
    cur = db.q1("current_set", {"partition_id": partition_id})
    if not cur:
        raise MamboError("this partition has no judgement set: pool and judge it first (`mambo bench pool`)")
    set_id = int(cur[0])
    pending = dict(db.q("judgement_status", {"set_id": set_id}))
    if pending.get("needs-grades") or pending.get("needs-adjudication"):
        raise MamboError(f"judgement set {cur[1]} is incomplete ({pending}): finish it with `mambo judge`")
    queries = db.rows("partition_queries", {"partition_id": partition_id})
    rows: dict[str, dict[str, Any]] = {}
    cv = snapshot_corpus(db)
    for s in systems:
        system_id, sversion, _cfg = system_row(db, s)
        found = db.q1("latest_run", {"system": s, "partition_id": partition_id, "set_id": set_id, "cv": cv,
                                     "system_id": system_id})
        run_id = int(found[0]) if found else execute_run(db, s, partition_id, seed=seed, set_id=set_id)
        if progress:
            progress(f"{s}: run {run_id} scored")
        lat: dict[str, Any] = {"p95": None, "p50": None, "errors": 0, "n": 0, "terminal_restored": False}
        if measure_latency:
            if progress:
                progress(f"{s}: {latency_warmups} warm-ups + {latency_searches} searches in an 80x24 PTY")
            lat = measure_pty(db_path, [q["query"] for q in queries], s, searches=latency_searches,
                              warmups=latency_warmups, seed=seed)
            with db.write():
                lid = int(db.q1("insert_latency_run", {"system_id": system_id, "partition_id": partition_id,
                                                       "interface": "tui-pty-80x24",
                                                       "protocol": json.dumps(lat["protocol"]),
                                                       "environment": json.dumps(mambo.machine_info())})[0])
                for seq, (qi, ms, err, _app) in enumerate(lat["samples"], 1):
                    db.q("insert_latency_sample", {"id": lid, "seq": seq, "query_id": queries[qi]["query_id"],
                                                   "ms": ms, "error": err})
        qm = db.rows("run_query_metrics", {"run_id": run_id})
        comps = components(qm, lat["p95"], lat["errors"], lat["n"])
        run = db.rows("run", {"run_id": run_id})[0]
        engine = [m["latency_ms"] for m in qm]
        rows[s] = {"system": s, "system_version": sversion, "run_id": run_id, "run": run, "query_metrics": qm,
                   "components": comps, "latency": {k: v for k, v in lat.items() if k != "samples"},
                   "engine_ms": {"p50": pct(engine, 50), "p95": pct(engine, 95)},
                   "slices": db.rows("run_slices", {"run_id": run_id}),
                   "diagnostics": db.rows("run_diagnostics", {"run_id": run_id}),
                   "unjudged_results": db.q1("unjudged_results", {"run_id": run_id})[0]}
    checks = protocol_checks(db, part, rows, {s: r["latency"] for s, r in rows.items()}) if measure_latency else {
        "release_protocol": False, "publication_rollback": publication_selftest(), "terminal_restoration": False}
    for r in rows.values():
        crit = critical_violations(db, part, r["run"], r["components"], r["query_metrics"])
        g = gates(r["components"], checks)
        sc, status = final_score(r["components"], g, crit)
        r |= {"gates": g, "critical": crit, "score": round(sc, 2), "status": status, "label": label(sc, status),
              "bootstrap": bootstrap(r["query_metrics"], r["latency"], checks, crit, seed=BOOTSTRAP_SEED)}
    acc = acceptance(rows)
    cv = db.rows("corpus_version", {"cv": part["corpus_version_id"]})[0]
    set_info = agreement(db, set_id)
    blockers = [] if measure_latency else ["latency was not measured (--no-latency)"]
    if not checks["release_protocol"]:
        blockers.append("the release protocol check failed (partition not frozen, stale audits or runs to rescore)")
    report = {
        "score_version": SCORE_VERSION, "protocol_version": PROTOCOL_VERSION, "interface_version": INTERFACE_VERSION,
        "label": part["label"], "benchmark": {"name": part["benchmark"], "version": part["version"],
                                              "partition": part["partition"], "status": part["status"],
                                              "query_file_sha256": part["source_sha256"],
                                              "queries": len(queries), "families": len({q["family"] for q in queries})},
        "corpus": {"manifest_sha256": cv["manifest_sha256"], "files": cv["files"], "items": cv["items"],
                   "declared_manifest_sha256": meta.get("corpus_manifest_sha256"),
                   "recipe_sha256": meta.get("corpus_recipe_sha256")},
        "safety_policy": meta.get("safety_policy", "mambo-safety-v1"),
        "judgements": {"set_version": int(cur[1]), "agreement": set_info},
        "template_groups": "ingest perceptual/template groups (schema 3); overlap checked on import and freeze",
        "code_commit": code_commit(), "model_manifest": model_manifest(db),
        "hardware_runtime": mambo.machine_info(), "seeds": {"bootstrap": BOOTSTRAP_SEED, "latency": seed},
        "protocol_checks": checks, "release_blockers": blockers,
        "systems": [{
            "system": s, "system_version": r["system_version"], "run_id": r["run_id"],
            "config": json.loads(r["run"]["config"]), "score": r["score"], "status": r["status"],
            "label": r["label"], "components": {k: (round(v, 4) if isinstance(v, float) else v)
                                                for k, v in r["components"].items() if k != "slices"},
            "slices": {k: round(v, 4) for k, v in r["components"]["slices"].items()},
            "gates": r["gates"], "critical_violations": r["critical"], "bootstrap": r["bootstrap"],
            "latency": r["latency"], "engine_ms": r["engine_ms"], "slice_metrics": r["slices"],
            "diagnostics": r["diagnostics"], "unjudged_results": r["unjudged_results"],
        } for s, r in rows.items()],
        "semantic_acceptance": acc,
        "bare": bare_section(db, bare, partition_id, set_id, rows, seed, progress) if bare else
        {"measured": False, "how": BARE_HOW},
    }
    return report


BARE_HOW = ("ingest the same corpus folder without its sidecars (`mambo --db BARE.sqlite add --no-sidecars DIR`), "
            "then `mambo score --bare BARE.sqlite` (benchmark v1: `benchdata/v1/score.sh LIBRARY BARE.sqlite`)")


def bare_section(db: DB, bare: BareLibrary, partition_id: int, set_id: int, rows: dict[str, dict[str, Any]],
                 seed: int, progress: Any = None) -> dict[str, Any]:
    """Every scored system again on the bare library (same configuration, same queries, same
    judgements): Q, each primary slice's nDCG@10, Hit@10 and correct-empty rate beside the
    annotated run's, the gap (annotated minus bare), and the unjudged share of the top 10. The
    judgement pool was drawn from the annotated rankings, so an unjudged result counts as
    non-relevant here as everywhere; the larger its share, the more the bare numbers understate.
    No gates and no score: a diagnostic of how much the sidecars carry."""
    def share(run_id: int) -> dict[str, Any]:
        u = db.rows("unjudged_share", {"run_id": run_id})[0]
        return {"results": u["results"], "unjudged": u["unjudged"],
                "share": round(u["unjudged"] / u["results"], 4) if u["results"] else None}

    def measures(c: dict[str, Any]) -> dict[str, Any]:
        return {"Q": round(c["Q"], 4), "slices": {k: round(v, 4) for k, v in c["slices"].items()},
                "hit10": round(c["hit10"], 4), "correct_empty": round(c["correct_empty"], 4),
                "E": round(c["E"], 4), "S": round(c["S"], 4)}

    out = []
    for s, r in rows.items():
        run_id = execute_run(db, s, partition_id, seed=seed, set_id=set_id, bare=bare)
        if progress:
            progress(f"{s}: bare-library run {run_id} stored (diagnostic, not scored)")
        bare_qm = db.rows("run_query_metrics", {"run_id": run_id})
        # Critical, withdrawn or private results shown: a critical violation in a scored run; here a
        # count of what the missing sidecars (their safety, rights and privacy) let through.
        a = measures(r["components"]) | {"critical_shown": sum(m["critical_shown"] for m in r["query_metrics"])}
        b = measures(components(bare_qm, None, 0, 0)) | {"critical_shown": sum(m["critical_shown"] for m in bare_qm)}
        gap = {"Q": round(a["Q"] - b["Q"], 4), "hit10": round(a["hit10"] - b["hit10"], 4),
               "correct_empty": round(a["correct_empty"] - b["correct_empty"], 4),
               "E": round(a["E"] - b["E"], 4), "S": round(a["S"] - b["S"], 4),
               "slices": {k: round(v - b["slices"].get(k, 0.0), 4) for k, v in a["slices"].items()}}
        out.append({"system": s, "system_version": r["system_version"], "annotated_run_id": r["run_id"],
                    "bare_run_id": run_id, "annotated": a, "bare": b, "gap": gap,
                    "unjudged_top10": {"annotated": share(r["run_id"]), "bare": share(run_id)}})
    return {"measured": True, "library": str(bare.path.resolve()), "manifest_sha256": bare.manifest_sha256,
            "files": bare.files, "items": bare.items,
            "model_manifest_matches": model_manifest(bare.db) == model_manifest(db),
            "note": "diagnostic beside the annotated score, not scored: no gates; unjudged results count as "
                    "non-relevant", "systems": out}


def fmt(x: Any) -> str:
    if isinstance(x, float):
        return f"{x:.3f}"
    return "—" if x is None else str(x)


def report_markdown(rep: dict[str, Any]) -> str:
    b, c = rep["benchmark"], rep["corpus"]
    hw = rep["hardware_runtime"]
    lines = [
        f"# MMTS-Search-v1 scorecard — {b['name']} {b['version']} ({b['partition']}, {rep['label']})", "",
        f"Score version `{rep['score_version']}`, protocol `{rep['protocol_version']}`, interface "
        f"`{rep['interface_version']}`. Machine: {hw['cpu']}, {hw['cores']} cores, {hw['memory_gb']} GB, "
        f"Python {hw['python']}.", "",
        "| system | score | status | Q | E | C | S | L | R | p95 ms (PTY) | engine p95 ms | 95 % CI | gates passed |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in rep["systems"]:
        k = s["components"]
        lines.append(f"| {s['system']} v{s['system_version']} | {s['score']:.1f} | {s['label']} | {fmt(k['Q'])} | "
                     f"{fmt(k['E'])} | {fmt(k['C'])} | {fmt(k['S'])} | {fmt(k['L'])} | {fmt(k['R'])} | "
                     f"{fmt(s['latency']['p95'])} | {fmt(s['engine_ms']['p95'])} | "
                     f"{s['bootstrap']['ci95'][0]:.1f}-{s['bootstrap']['ci95'][1]:.1f} | "
                     f"{s['bootstrap']['pass_fraction']:.0%} of resamples |")
    lines += ["", "## Gates", "", "| gate | rule | " + " | ".join(s["system"] for s in rep["systems"]) + " |",
              "|---|---|" + "---|" * len(rep["systems"])]
    for g in rep["systems"][0]["gates"]:
        cells = [f"{fmt(s['gates'][g]['value'])} {'ok' if s['gates'][g]['pass'] else 'FAIL'}" for s in rep["systems"]]
        lines.append(f"| {g} | {rep['systems'][0]['gates'][g]['rule']} | " + " | ".join(cells) + " |")
    for s in rep["systems"]:
        if s["critical_violations"]:
            lines += ["", f"**Critical violations ({s['system']}): score 0, FAIL.**", ""]
            lines += [f"- {v}" for v in s["critical_violations"]]
    lines += ["", "## nDCG@10 by slice", "", "| slice | " + " | ".join(s["system"] for s in rep["systems"]) + " |",
              "|---|" + "---|" * len(rep["systems"])]
    for sl in SLICES:
        lines.append(f"| {sl} | " + " | ".join(fmt(s["slices"].get(sl)) for s in rep["systems"]) + " |")
    acc = rep["semantic_acceptance"]
    if acc:
        lines += ["", "## Semantic-search acceptance (hybrid vs BM25, paired family bootstrap)", "",
                  f"- ΔQ = {acc['delta_Q']:+.3f} (95 % CI {acc['delta_Q_ci95'][0]:+.3f} to "
                  f"{acc['delta_Q_ci95'][1]:+.3f});"
                  f" Δsemantic = {acc['delta_semantic']:+.3f} (95 % CI {acc['delta_semantic_ci95'][0]:+.3f} to "
                  f"{acc['delta_semantic_ci95'][1]:+.3f})",
                  f"- gate regressions: {acc['gate_regressions'] or 'none'}; entity/quote regressions > 0.02: "
                  f"{acc['entity_quote_regressions'] or 'none'}",
                  f"- **Decision: {acc['decision']}.**"]
    ag = rep["judgements"]["agreement"]
    lines += ["", "## Labels", "",
              f"Judgement set v{rep['judgements']['set_version']}: {ag['pairs']} doubly graded candidates; exact "
              f"agreement {fmt(ag['exact'])}, within one {fmt(ag['within_one'])}, linear weighted kappa "
              f"{fmt(ag['grade_kappa_linear'])}, safety kappa {fmt(ag['safety_kappa'])}. Final status: {ag['status']}.",
              "Annotators: " + ", ".join(f"{a['name']} ({a['kind']}, {a['role']})" for a in ag["annotators"]) + ".",
              "", "## Diagnostics (reported, not scored)", "",
              "| system | slice | dup rate | repeated template | no preview | no attribution | lexical-only | "
              "dense-only | both |", "|---|---|---|---|---|---|---|---|---|"]
    for s in rep["systems"]:
        for d in s["diagnostics"]:
            lines.append(f"| {s['system']} | {d['slice']} | {fmt(d['exact_duplicate_rate'])} | "
                         f"{fmt(d['repeated_template_group_rate'])} | {fmt(d['missing_preview_rate'])} | "
                         f"{fmt(d['missing_attribution_rate'])} | {fmt(d['lexical_only'])} | {fmt(d['dense_only'])} | "
                         f"{fmt(d['both_routes'])} |")
    lines += bare_markdown(rep.get("bare"))
    lines += ["", "## Frozen inputs", "",
              f"- corpus manifest {c['manifest_sha256']} ({c['files']} files, {c['items']} items); declared "
              f"{c['declared_manifest_sha256']}; recipe {c['recipe_sha256']}",
              f"- query file {b['query_file_sha256']} ({b['queries']} queries, {b['families']} families, status "
              f"{b['status']}); safety policy {rep['safety_policy']}",
              f"- code {rep['code_commit']}; seeds {rep['seeds']}",
              f"- model {json.dumps(rep['model_manifest'])}",
              f"- runtime {json.dumps(rep['hardware_runtime']['packages'])}",
              f"- protocol checks {rep['protocol_checks']}"]
    for s in rep["systems"]:
        lines.append(f"- {s['system']} configuration: `{json.dumps(s['config'], sort_keys=True)}`")
    if rep["release_blockers"]:
        lines += ["", "Not publishable as a release: " + "; ".join(rep["release_blockers"]) + "."]
    return "\n".join(lines) + "\n"


def bare_markdown(bare: dict[str, Any] | None) -> list[str]:
    """The "Bare library (sidecars withheld)" section: per system the annotated and bare numbers and
    their gap; or, when it was not measured, how to measure it (older reports have no entry)."""
    lines = ["", "## Bare library (sidecars withheld)", ""]
    if not bare or not bare.get("measured"):
        how = (bare or {}).get("how", BARE_HOW)
        return lines + [f"Not measured in this scorecard. To measure it: {how}."]
    lines += [
        f"The same systems (same configuration, queries and judgements) on a library of the same corpus ingested "
        f"without its sidecars (`mambo add --no-sidecars`; manifest {bare['manifest_sha256'][:12]}, "
        f"{bare['files']} files, {bare['items']} items): a diagnostic shown beside the annotated score, not "
        "scored and without gates. Gap = annotated − bare. Unjudged results in the top 10 count as "
        "non-relevant (the pool came from the annotated rankings), so a large unjudged share means the bare "
        "numbers understate. Safe list: the share of lists showing no unsafe or critical item (a bare "
        "library lacks the sidecars' safety classes)." + ("" if bare["model_manifest_matches"] else
                                 " **The bare library's embedding model differs from this library's.**"), "",
        "| system | library | Q | " + " | ".join(SLICES) + " | Hit@10 | correct-empty | safe list | "
        "unjudged in top 10 |",
        "|---|---|---|" + "---|" * len(SLICES) + "---|---|---|---|",
    ]
    for s in bare["systems"]:
        for kind in ("annotated", "bare", "gap"):
            m = s[kind]
            if kind == "gap":
                cells = [f"{m['Q']:+.3f}", *(f"{m['slices'][sl]:+.3f}" if sl in m["slices"] else "—" for sl in SLICES),
                         f"{m['hit10']:+.3f}", f"{m['correct_empty']:+.3f}", f"{m['S']:+.3f}", ""]
            else:
                u = s["unjudged_top10"][kind]
                cells = [fmt(m["Q"]), *(fmt(m["slices"].get(sl)) for sl in SLICES), fmt(m["hit10"]),
                         fmt(m["correct_empty"]), fmt(m["S"]),
                         f"{u['share']:.1%} ({u['unjudged']}/{u['results']})" if u["share"] is not None else "—"]
            label = {"annotated": f"annotated (run {s['annotated_run_id']})", "bare": f"bare (run {s['bare_run_id']})",
                     "gap": "**gap**"}[kind]
            lines.append(f"| {s['system']} | {label} | " + " | ".join(cells) + " |")
    lines += ["", "Critical, withdrawn or private results shown (a critical violation in a scored run), annotated / "
              "bare: " + "; ".join(f"{s['system']} {s['annotated'].get('critical_shown', '—')} / "
                                   f"{s['bare'].get('critical_shown', '—')}" for s in bare["systems"]) + "."]
    return lines


COMPARABLE = (("benchmark", "name"), ("benchmark", "version"), ("benchmark", "partition"),
              ("corpus", "manifest_sha256"), ("safety_policy",), ("score_version",), ("interface_version",),
              ("hardware_runtime", "cpu"), ("hardware_runtime", "cores"))


def compare_reports(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """What changed between two reports; refuses reports whose versions differ (spec: scores compare
    only when benchmark, corpus, policy, hardware, interface and score versions match)."""
    def get(r: dict[str, Any], path: tuple[str, ...]) -> Any:
        for p in path:
            r = r.get(p, {}) if isinstance(r, dict) else {}
        return r

    diff = [".".join(p) for p in COMPARABLE if get(a, p) != get(b, p)]
    if diff:
        raise MamboError(f"these reports cannot be compared: {', '.join(diff)} differ")
    out = []
    sa = {s["system"]: s for s in a["systems"]}
    for s in b["systems"]:
        old = sa.get(s["system"])
        if not old:
            out.append(f"{s['system']}: new ({s['score']:.1f} {s['label']})")
            continue
        out.append(f"{s['system']}: {old['score']:.1f} -> {s['score']:.1f} ({s['score'] - old['score']:+.1f}), "
                   f"{old['label']} -> {s['label']}")
        for k in ("Q", "E", "C", "S", "L", "R"):
            if abs(s["components"][k] - old["components"][k]) >= 0.0005:
                out.append(f"  {k}: {old['components'][k]:.3f} -> {s['components'][k]:.3f}")
        for g, v in s["gates"].items():
            if old["gates"].get(g, {}).get("pass") != v["pass"]:
                out.append(f"  gate {g}: {'pass' if v['pass'] else 'FAIL'} now")
        if old["config"] != s["config"]:
            out.append("  configuration changed")
    if a.get("code_commit") != b.get("code_commit"):
        out.append(f"code {a.get('code_commit')} -> {b.get('code_commit')}")
    return out


# ─────────────────────────────────────────────────────────────────────────────
# E12. Command line
# ─────────────────────────────────────────────────────────────────────────────


@bench.command(name="import")
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--manifest", type=click.Path(path_type=Path), help="The corpus manifest the partition declares "
              "(default: manifest.sha256 beside PATH).")
@click.option("--recipe", type=click.Path(path_type=Path), help="The corpus recipe (to expand exact-target groups).")
@click.option("--replace", is_flag=True, help="Replace a draft partition of the same version.")
@click.pass_context
def bench_import(ctx: click.Context, path: Path, manifest: Path | None, recipe: Path | None, replace: bool) -> None:
    """Load a benchmark partition (PATH.jsonl + PATH.meta.json, benchdata/v1/FORMAT.md) as a draft."""
    db = mambo._open(ctx)
    pid = import_partition(db, path, manifest=manifest, recipe=recipe, replace=replace)
    p = partition_row(db, pid)
    n = db.scalar("SELECT count(*) FROM bench_queries WHERE partition_id = ?", (pid,))
    click.echo(f"imported {p['benchmark']}/{p['version']}/{p['partition']} as partition {pid}: {n} queries, draft "
               "(`mambo bench freeze` makes it immutable)")


@bench.command(name="list")
@click.pass_context
def bench_list(ctx: click.Context) -> None:
    """Imported benchmark partitions and their status."""
    db = mambo._open(ctx)
    rows = db.rows("list_partitions")
    if not rows:
        click.echo("no benchmark partitions: `mambo bench import FILE` loads one")
    for r in rows:
        click.echo(f"{r['partition_id']:>3}  {r['benchmark']}/{r['version']}/{r['partition']}  {r['status']:<8} "
                   f"{r['label']:<12} {r['queries']} queries, {r['families']} families, judgement set "
                   f"v{r['judgement_set'] or '-'}")


@bench.command(name="show")
@click.argument("partition")
@click.pass_context
def bench_show(ctx: click.Context, partition: str) -> None:
    """A partition: slices, audits, judgement set and agreement."""
    db = mambo._open(ctx)
    pid = resolve_partition(db, partition)
    p = partition_row(db, pid)
    click.echo(f"{p['benchmark']}/{p['version']}/{p['partition']}: {p['status']} ({p['label']}), imported "
               f"{p['imported_at']}")
    for r in db.rows("partition_slices", {"partition_id": pid}):
        click.echo(f"  {r['slice']:<9} {r['queries']:>3} queries  safety {r['safety']}  multi-cue {r['multi_cue']}")
    audits: dict[str, int] = {}
    for a in db.rows("audit_status", {"partition_id": pid}):
        audits[a["status"]] = audits.get(a["status"], 0) + 1
    click.echo(f"  no-match audits: {audits or 'none'}")
    cur = db.q1("current_set", {"partition_id": pid})
    if cur:
        ag = agreement(db, int(cur[0]))
        click.echo(f"  judgement set v{cur[1]}: {ag['status']}; agreement {json.dumps({k: ag[k] for k in ('pairs', 'exact', 'within_one', 'grade_kappa_linear', 'safety_kappa')})}")  # noqa: E501
        batch = db.q1("newest_batch", {"set_id": cur[0]})[0]
        click.echo(f"  newest annotation batch: {batch or '-'}")


def _lifecycle(name: str, status: str, doc: str) -> None:
    @bench.command(name=name, help=doc)
    @click.argument("partition")
    @click.pass_context
    def cmd(ctx: click.Context, partition: str) -> None:
        db = mambo._open(ctx)
        pid = resolve_partition(db, partition)
        set_status(db, pid, status)
        click.echo(f"partition {pid} is {status}")


_lifecycle("freeze", "frozen", "Freeze a draft partition: its queries and labels become immutable.")
_lifecycle("expose", "exposed", "Mark a partition exposed (its prompts or labels were seen): no later release "
           "comparison may use it.")
_lifecycle("retire", "retired", "Retire a partition.")


@bench.command(name="corpus")
@click.pass_context
def bench_corpus(ctx: click.Context) -> None:
    """Snapshot the library's corpus version (its manifest: every file's checksum and path)."""
    db = mambo._open(ctx)
    cv = snapshot_corpus(db)
    r = db.rows("corpus_version", {"cv": cv})[0]
    click.echo(f"corpus version {cv}: {r['manifest_sha256']} ({r['files']} files, {r['items']} items)")


@bench.command(name="audit")
@click.argument("partition")
@click.option("--qid", help="Record a reviewed audit for this no-match query.")
@click.option("--outcome", type=click.Choice(["absent", "present"]), default="absent", show_default=True)
@click.option("--annotator", help="Who reviewed it (with --qid).")
@click.option("--kind", type=click.Choice(["person", "model"]), default="person", show_default=True)
@click.option("--method", default="reviewed every servable item sharing a content word", show_default=True)
@click.pass_context
def bench_audit(ctx: click.Context, partition: str, qid: str | None, outcome: str, annotator: str | None, kind: str,
                method: str) -> None:
    """Redo no-match audits on the current corpus version (automatic where no servable item shares a
    content word; the rest are listed for review and recorded with --qid)."""
    db = mambo._open(ctx)
    pid = resolve_partition(db, partition)
    if qid:
        if not annotator:
            raise MamboError("say who reviewed it: --annotator NAME")
        record_audit(db, pid, qid, outcome, annotator, kind, method)
        click.echo(f"audit of {clean_line(qid)} recorded: {outcome}")
        return
    done, review = audit_partition(db, pid)
    click.echo(f"{len(done)} audit(s) recorded automatically; {len(review)} need review")
    for q, paths in review:
        click.echo(f"  {q}: servable items share a word: {', '.join(clean_line(p) for p in paths[:5])}")


@bench.command(name="pool")
@click.argument("partition")
@click.option("--system", "systems", multiple=True, default=("bm25", "dense", "hybrid"), show_default=True)
@click.option("--depth", default=10, show_default=True)
@click.option("--hard-negatives", default=3, show_default=True)
@click.option("--seed", default=42, show_default=True)
@click.pass_context
def bench_pool(ctx: click.Context, partition: str, systems: tuple[str, ...], depth: int, hard_negatives: int,
               seed: int) -> None:
    """Pool the top 10 of every compared system, gold items and hard negatives into a blinded batch."""
    db = mambo._open(ctx)
    pid = resolve_partition(db, partition)
    r = pool(db, pid, list(systems), depth=depth, hard_negatives=hard_negatives, seed=seed)
    click.echo(f"judgement set {r['set_id']}: {r['candidates']} candidates ({r['new_candidates']} new); "
               f"annotation batch {r['batch_id'] or '-'}")


@bench.command(name="export-batch")
@click.argument("batch_id", type=int)
@click.option("-o", "--out", type=click.Path(dir_okay=False, path_type=Path), required=True)
@click.pass_context
def bench_export_batch(ctx: click.Context, batch_id: int, out: Path) -> None:
    """Write a blinded batch as JSONL for annotators outside the tool (fill in answer.grade/safety)."""
    db = mambo._open(ctx)
    if not db.q1("batch", {"batch_id": batch_id}):
        raise MamboError(f"no annotation batch {batch_id}")
    click.echo(f"{export_batch(db, batch_id, out)} tasks written to {show_path(out)}")


@bench.command(name="import-judgements")
@click.argument("batch_id", type=int)
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--annotator", required=True)
@click.option("--kind", type=click.Choice(["person", "model"]), required=True)
@click.option("--adjudicator", is_flag=True, help="These are a third annotator's final answers.")
@click.pass_context
def bench_import_judgements(ctx: click.Context, batch_id: int, path: Path, annotator: str, kind: str,
                            adjudicator: bool) -> None:
    """Load an annotator's answers to an exported batch."""
    db = mambo._open(ctx)
    n = import_judgements(db, batch_id, path, annotator, kind, "adjudicator" if adjudicator else "grader")
    click.echo(f"{n} judgement(s) by {clean_line(annotator)} ({kind}) recorded")


@bench.command(name="agreement")
@click.argument("partition")
@click.pass_context
def bench_agreement(ctx: click.Context, partition: str) -> None:
    """Exact and within-one agreement, linear weighted kappa (grades), kappa (safety)."""
    db = mambo._open(ctx)
    cur = db.q1("current_set", {"partition_id": resolve_partition(db, partition)})
    if not cur:
        raise MamboError("no judgement set yet: `mambo bench pool` first")
    click.echo(json.dumps(agreement(db, int(cur[0])), indent=2))


@bench.command(name="labels")
@click.argument("partition")
@click.option("-o", "--out", type=click.Path(dir_okay=False, path_type=Path), required=True)
@click.pass_context
def bench_labels(ctx: click.Context, partition: str, out: Path) -> None:
    """Export the current judgement set's final labels (and their agreement) as JSONL + JSON."""
    db = mambo._open(ctx)
    pid = resolve_partition(db, partition)
    cur = db.q1("current_set", {"partition_id": pid})
    if not cur:
        raise MamboError("no judgement set yet: `mambo bench pool` first")
    rows = db.rows("final_labels", {"set_id": cur[0]})
    with out.open("w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps({k: r[k] for k in ("qid", "path", "grade", "safety", "status", "origin")}) + "\n")
    p = partition_row(db, pid)
    summary = {"benchmark": p["benchmark"], "version": p["version"], "partition": p["partition"],
               "judgement_set": int(cur[1]), "labels": len(rows), "agreement": agreement(db, int(cur[0]))}
    out.with_suffix(".agreement.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    click.echo(f"{len(rows)} labels written to {show_path(out)} (+ {out.with_suffix('.agreement.json').name})")


@cli.command()
@click.option("--partition", "partition", default="dev", show_default=True)
@click.option("--annotator", required=True, help="Your name, or a model annotator's name with --model.")
@click.option("--kind", type=click.Choice(["person", "model"]), default="person", show_default=True)
@click.option("--model", "use_model", is_flag=True, help="Let the named model annotator judge the batch.")
@click.option("--recipe", type=click.Path(path_type=Path), help="Corpus recipe (model annotators that read it).")
@click.option("--batch", "batch_id", type=int, help="Batch to judge (default: the newest of the current set).")
@click.option("--adjudicate", is_flag=True, help="Judge the candidates two annotators disagree on (final).")
@click.option("--seed", default=42, show_default=True)
@click.pass_context
def judge(ctx: click.Context, partition: str, annotator: str, kind: str, use_model: bool, recipe: Path | None,
          batch_id: int | None, adjudicate: bool, seed: int) -> None:
    """Grade a blinded batch (0-3 and a safety class per candidate); resumable."""
    db = mambo._open(ctx)
    pid = resolve_partition(db, partition)
    cur = db.q1("current_set", {"partition_id": pid})
    if not cur:
        raise MamboError("no judgement set yet: `mambo bench pool` first")
    set_id = int(cur[0])
    role = "adjudicator" if adjudicate else "grader"
    if adjudicate and batch_id is None:
        with db.write():
            batch_id = make_batch(db, set_id, seed, "candidates_to_adjudicate")
        if batch_id is None:
            click.echo("nothing to adjudicate")
            return
    if batch_id is None:
        batch_id = db.q1("newest_batch", {"set_id": set_id})[0]
        if batch_id is None:
            raise MamboError("no annotation batch: `mambo bench pool` makes one")
    if use_model:
        n = judge_with_model(db, int(batch_id), set_id, model_annotator(annotator, recipe), role)
        click.echo(f"{n} judgement(s) by model annotator {annotator}")
    else:
        judge_in_terminal(db, int(batch_id), set_id, annotator, kind, role, adjudicate)


@cli.command(name="run")
@click.option("--system", default=mambo.DEFAULT_SYSTEM, show_default=True)
@click.option("--partition", default="dev", show_default=True)
@click.option("--seed", default=0, show_default=True)
@click.pass_context
def run_cmd(ctx: click.Context, system: str, partition: str, seed: int) -> None:
    """Run one system over every query of a partition and store the results."""
    db = mambo._open(ctx)
    pid = resolve_partition(db, partition)
    run_id = execute_run(db, system, pid, seed=seed)
    c = db.rows("run_components", {"run_id": run_id})
    click.echo(f"run {run_id}: {json.dumps({k: (round(v, 4) if isinstance(v, float) else v) for k, v in c[0].items()}) if c else 'stored'}")  # noqa: E501


@cli.group(name="score", invoke_without_command=True, context_settings=CONTEXT)
@click.option("--partition", default="dev", show_default=True)
@click.option("--system", "systems", multiple=True, default=("bm25", "dense", "hybrid"), show_default=True)
@click.option("--searches", default=LATENCY_SEARCHES, show_default=True, help="Measured PTY searches per system.")
@click.option("--warmups", default=LATENCY_WARMUPS, show_default=True)
@click.option("--no-latency", is_flag=True, help="Skip the PTY protocol (the report is then not publishable).")
@click.option("--seed", default=42, show_default=True)
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), help="Write report.md and report.json here.")
@click.option("--compare", nargs=2, type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Compare two report.json files instead.")
@click.option("--bare", type=click.Path(dir_okay=False, path_type=Path), metavar="LIBRARY",
              help="Also run every system on LIBRARY, the same corpus ingested with `mambo add --no-sidecars`, "
                   "and report it beside the annotated score (a diagnostic, not scored).")
@click.pass_context
def score_cmd(ctx: click.Context, partition: str, systems: tuple[str, ...], searches: int, warmups: int,
              no_latency: bool, seed: int, out: Path | None, compare: tuple[Path, Path] | None,
              bare: Path | None) -> None:
    """The MMTS-Search-v1 scorecard: one row per system, gates, bootstrap interval, acceptance; with
    --bare, the bare-library (sidecars withheld) numbers beside it."""
    if ctx.invoked_subcommand:
        return
    if compare:
        a, b = (json.loads(p.read_text(encoding="utf-8")) for p in compare)
        for line in compare_reports(a, b) or ["no differences"]:
            click.echo(line)
        return
    db = mambo._open(ctx)
    pid = resolve_partition(db, partition)
    t0 = time.perf_counter()
    rep = score(db, db.path, pid, list(systems), latency_searches=searches, latency_warmups=warmups, seed=seed,
                measure_latency=not no_latency, progress=lambda m: click.echo(f"  {m}", err=True), bare=bare)
    rep["elapsed_s"] = round(time.perf_counter() - t0, 1)
    md = report_markdown(rep)
    with db.write():
        sid = int(db.q1("insert_scorecard", {"partition_id": pid, "score_version": SCORE_VERSION,
                                             "report_json": json.dumps(rep, sort_keys=True, default=str),
                                             "report_md": md})[0])
    if out:
        out.mkdir(parents=True, exist_ok=True)
        text = json.dumps(rep, indent=1, sort_keys=True, default=str) + "\n"
        (out / "report.json").write_text(text, encoding="utf-8")
        (out / "report.md").write_text(md, encoding="utf-8")
    click.echo(md)
    click.echo(f"scorecard {sid} stored ({rep['elapsed_s']} s); `mambo score publish {sid}` publishes it")


@score_cmd.command(name="publish")
@click.argument("scorecard_id", type=int)
@click.pass_context
def score_publish(ctx: click.Context, scorecard_id: int) -> None:
    """Publish a scorecard (one transaction)."""
    db = mambo._open(ctx)
    pub = publish(db, scorecard_id)
    click.echo(f"scorecard {scorecard_id} published (publication {pub})")


@score_cmd.command(name="rollback")
@click.option("--reason", required=True)
@click.pass_context
def score_rollback(ctx: click.Context, reason: str) -> None:
    """Roll the current publication back (one transaction); the previous one is published again."""
    db = mambo._open(ctx)
    sid = rollback(db, reason)
    now = db.q1("published")
    click.echo(f"scorecard {sid} rolled back; published now: {('scorecard ' + str(now[1])) if now else 'nothing'}")


@cli.command(name="interactions")
@click.pass_context
def interactions(ctx: click.Context) -> None:
    """The interaction report from opt-in events (not part of the score)."""
    db = mambo._open(ctx)
    rows = db.rows("interaction_report")
    if not rows:
        click.echo("no interaction events (they are recorded only when turned on: "
                   "`mambo settings set interaction_events on`)")
    for r in rows:
        click.echo(json.dumps({k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.items()}))
