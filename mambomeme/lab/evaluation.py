"""The benchmark protocol of MMTS-Search-v1 (the evaluation specification, version 1): corpus versions,
partitions and their life cycle, no-match audits, judgement sets, pooling and blind batches,
annotators (people in the terminal, labelled model annotators), agreement, and runs. Scoring is in
scoring.py, the commands in evaluation_commands.py, the statements in evaluation.sql and the tables
and metric views in schema.sql (migrations 003 and 004)."""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import hashlib
import io
import json
import random
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import click

from mambomeme.embed import get_embedder
from mambomeme.lab.bench import machine_info
from mambomeme.library import DB, ROOT, __version__, file_sha256
from mambomeme.output import MamboError, clean_line, clean_text, show_path
from mambomeme.query_plan import STOPWORDS, normalise_query
from mambomeme.search import Result, Searcher, needs_model, searcher_for, sync_systems, system_config

# ─────────────────────────────────────────────────────────────────────────────
# Setup and shared helpers
# ─────────────────────────────────────────────────────────────────────────────

SCORE_VERSION = "mmts-search-v1"
PROTOCOL_VERSION = "mmts-protocol-v1"
INTERFACE_VERSION = f"mambo-tui-{__version__}"
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
    "min_slice_ndcg10": 0.30,
    "exact_mrr10": 0.60,
    "hit10": 0.70,
    "correct_empty": 0.60,
    "safety_hit10": 0.70,
    "safe_list_rate": 0.98,
    "p95_ms_below": 1000.0,
    "error_rate_below": 0.01,
}
CAP = 59.0


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def annotator_id(db: DB, name: str, kind: str, description: str = "") -> int:
    """The annotator's row; a name keeps its kind forever (a person is never relabelled a model)."""
    row = db.q1("annotator_by_name", {"name": name})
    if row:
        if row[2] != kind:
            raise MamboError(
                f"annotator {clean_line(name)!r} is recorded as a {row[2]}, not a {kind}: use another name"
            )
        return int(row[0])
    return int(db.q1("insert_annotator", {"name": name, "kind": kind, "description": description})[0])


def resolve_partition(db: DB, spec: str) -> int:
    """A partition by id, by name (`dev`: its newest version), `VERSION/NAME` or `BENCH/VERSION/NAME`."""
    rows = db.rows("list_partitions")
    if spec.isdigit():
        hit = [r for r in rows if r["partition_id"] == int(spec)]
    else:
        parts = spec.split("/")
        keys = ("benchmark", "version", "partition")[-len(parts) :] if len(parts) <= 3 else ()
        hit = [r for r in rows if keys and all(r[k] == v for k, v in zip(keys, parts, strict=True))]
    if not hit:
        known = ", ".join(f"{r['benchmark']}/{r['version']}/{r['partition']}" for r in rows) or "none"
        raise MamboError(
            f"no benchmark partition {clean_line(spec)!r} (imported: {known}); load one with `mambo bench import FILE`"
        )
    return int(hit[-1]["partition_id"])


def partition_row(db: DB, partition_id: int) -> dict[str, Any]:
    return db.rows("partition", {"partition_id": partition_id})[0]


def code_commit() -> str:
    """The code's git commit (with `+dirty` for uncommitted changes), or the package version."""
    here = ROOT
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        out = subprocess.run(["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
        if out.returncode == 0:
            dirty = subprocess.run(
                ["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no"],
                capture_output=True,
                text=True,
                timeout=10,
            ).stdout.strip()
            return out.stdout.strip() + ("+dirty" if dirty else "")
    return f"mambo {__version__} (not a git checkout)"


def model_manifest(db: DB) -> list[dict[str, Any]]:
    return [
        dict(zip(("name", "revision", "weights_sha256", "dim", "text_recipe"), r, strict=True))
        for r in db.q("embedding_manifest")
    ]


# ─────────────────────────────────────────────────────────────────────────────
# Corpus versions
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
        cv = int(
            db.q1("insert_corpus_version", {"sha": sha, "files": len(rows), "items": len({r[2] for r in rows})})[0]
        )
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
    got = file_sha256(manifest)
    if got != declared:
        return [
            f"corpus manifest {show_path(manifest)} has SHA-256 {got[:12]}, the partition declares "
            f"{declared[:12]}: the manifest was changed"
        ]
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
# Partitions: import, life cycle, overlap
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
        if not isinstance(q, dict) or not all(
            isinstance(q.get(k), str) and q[k] for k in ("id", "family", "slice", "query")
        ):
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


def import_partition(
    db: DB, path: Path, *, manifest: Path | None = None, recipe: Path | None = None, replace: bool = False
) -> int:
    meta, lines = read_partition(path)
    base = path.parent
    if manifest is None and meta.get("corpus_manifest_sha256") and (base / "manifest.sha256").is_file():
        manifest = base / "manifest.sha256"
    problems = integrity_problems(db, meta, manifest)
    if problems:
        raise MamboError(
            f"{show_path(path)} was made for another corpus: {problems[0]} (re-ingest the "
            "benchmark corpus, or pass the right --manifest)"
        )
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
            raise MamboError(
                f"{show_path(path)}: query {clean_line(qid)} names {clean_line(file)!r}, which is not "
                "in this library: ingest the benchmark corpus first"
            )
        return int(row[0])

    cv = snapshot_corpus(db)
    declared = meta.get("corpus_manifest_sha256")
    key = {k: meta[k] for k in ("benchmark", "version", "partition")}
    with db.write():
        existing = db.q1("partition_exists", key)
        if existing:
            if existing[1] != "draft" or not replace:
                raise MamboError(
                    f"{key['benchmark']}/{key['version']}/{key['partition']} is already imported "
                    f"({existing[1]}): a changed partition is a new version"
                    + ("" if existing[1] != "draft" else " (or pass --replace while it is a draft)")
                )
            db.q("delete_partition", {"partition_id": existing[0]})
        stored_meta = meta | {
            "imported_from": {
                "file": str(path.resolve()),
                "manifest": str(manifest.resolve()) if manifest else None,
                "recipe": str(recipe.resolve()) if recipe else None,
            }
        }
        pid = int(
            db.q1(
                "insert_partition",
                key
                | {
                    "label": meta.get("status", "provisional"),
                    "meta": json.dumps(stored_meta, sort_keys=True),
                    "source_sha256": file_sha256(path),
                    "cv": cv,
                },
            )[0]
        )
        for q in lines:
            qid = int(
                db.q1(
                    "insert_query",
                    {
                        "partition_id": pid,
                        "qid": q["id"],
                        "family": q["family"],
                        "slice": q["slice"],
                        "query": q["query"],
                        "subsets": json.dumps(sorted(q.get("subsets", []))),
                        "rule": json.dumps(q.get("rule")),
                    },
                )[0]
            )
            for file, grade in q.get("relevant", {}).items():
                if not isinstance(grade, int) or not 0 <= grade <= 3:
                    raise MamboError(
                        f"{show_path(path)}: query {clean_line(q['id'])}: grade of {clean_line(file)} must be 0-3"
                    )
                db.q("insert_gold", {"query_id": qid, "item_id": item(file, q["id"]), "grade": grade})
            for file in q.get("exact", []):
                db.q("insert_exact_target", {"query_id": qid, "item_id": item(file, q["id"]), "target": file})
            for g in q.get("exact_groups", []):
                files = groups.get(g, [])
                if not files:
                    raise MamboError(
                        f"{show_path(path)}: query {clean_line(q['id'])}: exact group "
                        f"{clean_line(g)!r} is not in the recipe"
                    )
                for file in files:
                    if db.q1("item_by_path", {"path": file}):
                        db.q(
                            "insert_exact_target",
                            {"query_id": qid, "item_id": item(file, q["id"]), "target": f"group:{g}"},
                        )
            for file in q.get("withheld", []):
                db.q("insert_withheld", {"query_id": qid, "item_id": item(file, q["id"])})
            audit = q.get("audit")
            # An audit counts only for the corpus version it was made on: the declared manifest,
            # verified above to be this library's corpus.
            if (
                q["slice"] == "no-match"
                and isinstance(audit, dict)
                and declared
                and audit.get("corpus_version") == declared
            ):
                who = audit.get("checked_by") or {}
                aid = annotator_id(
                    db, str(who.get("name", "unknown")), "model" if who.get("kind") == "model" else "person"
                )
                db.q(
                    "insert_audit",
                    {
                        "query_id": qid,
                        "cv": cv,
                        "method": str(audit.get("method", "")),
                        "annotator_id": aid,
                        "outcome": "absent",
                    },
                )
        check_overlap(db, pid)
    return pid


def check_overlap(db: DB, partition_id: int) -> None:
    """No query family and no template/perceptual group may be shared by two partitions of one
    benchmark (spec "Benchmark v1")."""
    fam = db.q("family_overlap", {"partition_id": partition_id})
    if fam:
        raise MamboError(
            f"query family {clean_line(fam[0][0])!r} is also in partition {fam[0][1]}: families "
            f"must not cross partitions ({len(fam)} shared)"
        )
    grp = db.q("group_overlap", {"partition_id": partition_id})
    if grp:
        kind, g, other, example = grp[0]
        raise MamboError(
            f"{kind} group {g} (e.g. {clean_line(example or '?')}) is judged in partition {other} too: "
            f"template/perceptual groups must not cross partitions ({len(grp)} shared)"
        )


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
# No-match audits
# ─────────────────────────────────────────────────────────────────────────────

AUDIT_ANNOTATOR = (
    "mambo-audit-fields-v1",
    "model",
    "automatic canonical-field check: FTS5 word match of the query's content words against every "
    "servable item's title, template, entities, tags, OCR text and description",
)


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
            words = sorted({w for w in normalise_query(row["query"]) if w not in STOPWORDS})
            hits = db.q("servable_items_matching", {"match": " OR ".join(f'"{w}"' for w in words)}) if words else []
            if hits:
                review.append((row["qid"], [h[1] for h in hits]))
                continue
            db.q(
                "insert_audit",
                {
                    "query_id": row["query_id"],
                    "cv": cv,
                    "annotator_id": aid,
                    "outcome": "absent",
                    "method": f"{AUDIT_ANNOTATOR[2]}: none of {words} occurs",
                },
            )
            done.append(row["qid"])
    return done, review


def record_audit(db: DB, partition_id: int, qid: str, outcome: str, annotator: str, kind: str, method: str) -> None:
    cv = snapshot_corpus(db)
    rows = [r for r in db.rows("audit_status", {"partition_id": partition_id}) if r["qid"] == qid]
    if not rows:
        raise MamboError(f"{clean_line(qid)!r} is not a no-match query of this partition")
    with db.write():
        db.q(
            "insert_audit",
            {
                "query_id": rows[0]["query_id"],
                "cv": cv,
                "method": method,
                "outcome": outcome,
                "annotator_id": annotator_id(db, annotator, kind),
            },
        )


# ─────────────────────────────────────────────────────────────────────────────
# Judgement sets, pooling and blind batches
# ─────────────────────────────────────────────────────────────────────────────


def working_set(db: DB, partition_id: int, *, adding: bool) -> int:
    """The set new candidates go into: the current one while nothing was judged or scored on it,
    else a new version that carries the old candidates and judgements (older runs then need
    rescoring, see the view runs_needing_rescore)."""
    cur = db.q1("current_set", {"partition_id": partition_id})
    if cur is None:
        return int(
            db.q1("insert_set", {"partition_id": partition_id, "version": 1, "parent": None, "note": "first pool"})[0]
        )
    set_id, version = int(cur[0]), int(cur[1])
    if not adding or not db.q1("set_is_used", {"set_id": set_id})[0]:
        return set_id
    new = int(
        db.q1(
            "insert_set",
            {
                "partition_id": partition_id,
                "version": version + 1,
                "parent": set_id,
                "note": "candidates added after judging or scoring",
            },
        )[0]
    )
    db.q("copy_set", {"new": new, "old": set_id})
    db.q("copy_set_judgements", {"new": new, "old": set_id})
    return new


def pool(
    db: DB,
    partition_id: int,
    systems: list[str],
    *,
    depth: int = 10,
    hard_negatives: int = 3,
    seed: int = 42,
    bare: BareLibrary | None = None,
) -> dict[str, Any]:
    """The spec's pool: the deduplicated top `depth` of every compared system, the partition's gold
    items and exact targets, and hard negatives (the best-ranked items just below every system's
    top `depth` that are not gold); then a blinded batch of everything not yet graded twice.

    With `bare`, every system is also searched on the bare library of the same corpus (with this
    library's configuration, results mapped by SHA-256), so that neither condition's top `depth`
    holds an unjudged item."""
    queries = db.rows("partition_queries", {"partition_id": partition_id})
    # The pool is drawn by the systems the runs will score: this code's configurations (a library
    # last searched by older code holds older ones as its current versions).
    sync_systems(db)
    searchers = {s: searcher_for(db, s) for s in systems}
    configs = {s: system_config(db, s) for s in systems}
    # Each system's ranking of a query text, on this library and (with `bare`) on the bare one.
    rankers = [(s, lambda text, s=s: searchers[s].search(text, s, depth * 2, empty_rule=False)) for s in systems]
    if bare is not None:
        bare_searchers = {s: Searcher(bare.db, get_embedder() if needs_model(configs[s]) else None) for s in systems}
        rankers += [
            (s, lambda text, s=s: bare.search(bare_searchers[s], text, configs[s], depth * 2, empty_rule=False))
            for s in systems
        ]
    found: dict[int, dict[int, str]] = {}
    for q in queries:
        cands: dict[int, str] = {}
        below: dict[int, int] = {}
        gold = {r[0] for r in db.q("gold_and_exact", {"query_id": q["query_id"]})}
        for item in gold:
            cands[item] = "gold"
        for s, rank in rankers:
            ranked = rank(q["query"])
            # The pool is what each system would show: its top `depth` after its own empty-result rule.
            for r in Searcher.empty_rule(configs[s]["empty_rule"], ranked[:depth]):
                cands.setdefault(r.item_id, "pool")
            for r in ranked[depth:]:
                if r.item_id not in gold:
                    below[r.item_id] = min(below.get(r.item_id, 99), r.rank)
        for item, _rank in sorted(below.items(), key=lambda x: x[1])[:hard_negatives]:
            cands.setdefault(item, "hard-negative")
        found[q["query_id"]] = cands
    with db.write():
        cur = db.q1("current_set", {"partition_id": partition_id})
        new = sum(
            1
            for qid, c in found.items()
            for item in c
            if cur is None or not db.q1("is_candidate", {"set_id": cur[0], "query_id": qid, "item_id": item})
        )
        set_id = working_set(db, partition_id, adding=new > 0)
        for qid, cands in found.items():
            for item, origin in cands.items():
                db.q("insert_candidate", {"set_id": set_id, "query_id": qid, "item_id": item, "origin": origin})
        batch_id = make_batch(db, set_id, seed, "candidates_to_grade")
    return {
        "set_id": set_id,
        "batch_id": batch_id,
        "new_candidates": new,
        "candidates": sum(len(c) for c in found.values()),
    }


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
        db.q(
            "insert_task",
            {
                "batch_id": batch_id,
                "position": pos,
                "task": f"t{rng.getrandbits(48):012x}",
                "query_id": query_id,
                "item_id": item_id,
            },
        )
    return batch_id


def candidate_view(db: DB, item_id: int) -> dict[str, Any]:
    row = db.rows("candidate_view", {"item_id": item_id})[0]
    return {
        "title": clean_line(row["title"]),
        "template": clean_line(row["template"]),
        "entities": [clean_line(x) for x in json.loads(row["entities"])],
        "tags": [clean_line(x) for x in json.loads(row["tags"])],
        "description": clean_line(row["description"]),
        "text": clean_text(row["ocr_text"]),
        "preview_webp_base64": base64.b64encode(row["preview"]).decode() if row["preview"] else None,
    }


def export_batch(db: DB, batch_id: int, out: Path) -> int:
    """JSONL for annotators outside the tool: task id, query and the candidate's content. No system
    name, rank, score, item id or file name (a file name can give the answer away)."""
    rows = db.rows("batch_tasks_for", {"batch_id": batch_id, "annotator_id": -1})
    with out.open("w", encoding="utf-8") as f:
        for r in rows:
            f.write(
                json.dumps(
                    {
                        "task": r["task"],
                        "query": r["query"],
                        "candidate": candidate_view(db, r["item_id"]),
                        "answer": {"grade": None, "safety": None},
                    },
                    ensure_ascii=False,
                )
                + "\n"
            )
    return len(rows)


def read_answers(path: Path) -> list[tuple[str, dict[str, Any]]]:
    """An annotator's answer file as (FILE:LINE, line object). A line holds `answer.grade` and
    `answer.safety` (or both at the top level) and names its candidate by `task` (an id of one
    batch) or by key: `qid` (the partition's query id) and `sha256` (the candidate file's content
    SHA-256; `path` is only for people reading the file). A grade of null is an unanswered task."""
    answers = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        where = f"{show_path(path)}:{lineno}"
        try:
            obj = json.loads(line)
            ans = obj.get("answer", obj)
            if "grade" not in ans or "safety" not in ans or ("task" not in obj and not is_keyed(obj)):
                raise KeyError("grade, safety, task")
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise MamboError(f"{where}: needs task (or qid and sha256) and answer.grade/answer.safety") from e
        answers.append((where, obj))
    return answers


def is_keyed(obj: dict[str, Any]) -> bool:
    return "qid" in obj and "sha256" in obj


def import_judgements(db: DB, batch_id: int, path: Path, annotator: str, kind: str, role: str) -> dict[str, int]:
    """Load an annotator's answers into the judgement set of batch `batch_id`. A line keyed by task
    id must name a task of this batch. A line keyed by (qid, sha256) loads into the batch's set
    whatever pool the set holds, and its key wins over a task id on the same line (task ids are
    drawn in pool order: another pool gives the same ids to other pairs). A keyed pair the set lacks
    (the pool changed since the answer was made) joins it as a candidate of origin 'earlier-pool';
    a set that was already scored is first versioned, as pooling does (working_set)."""
    batch = db.q1("batch", {"batch_id": batch_id})
    if not batch:
        raise MamboError(f"no annotation batch {batch_id}: see `mambo bench show`")
    answers = read_answers(path)
    got = {"judgements": 0, "by_task": 0, "by_key": 0, "added": 0}
    with db.write():
        jset = db.rows("set_row", {"set_id": batch[1]})[0]
        judged: list[tuple[int, int, int, str]] = []
        for where, obj in answers:
            ans = obj.get("answer", obj)
            grade, safety = ans["grade"], ans["safety"]
            if grade is None:
                continue  # not judged yet: the batch stays resumable
            if not isinstance(grade, int) or not 0 <= grade <= 3 or safety not in SAFETY:
                raise MamboError(f"{where}: grade must be 0-3 and safety one of {', '.join(SAFETY)}")
            if is_keyed(obj):
                qid, sha = str(obj["qid"]), str(obj["sha256"])
                q = db.q1("query_by_qid", {"partition_id": jset["partition_id"], "qid": qid})
                if not q:
                    raise MamboError(f"{where}: query {clean_line(qid)!r} is not in the partition of batch {batch_id}")
                item = db.q1("item_by_sha256", {"sha256": sha})
                if not item:
                    raise MamboError(
                        f"{where}: no item with SHA-256 {clean_line(sha)} "
                        f"({clean_line(str(obj.get('path', 'no path given')))}) in this library"
                    )
                pair = (int(q[0]), int(item[0]))
                got["by_key"] += 1
            else:
                t = db.q1("task_by_id", {"batch_id": batch_id, "task": str(obj["task"])})
                if not t:
                    raise MamboError(f"{where}: task {clean_line(str(obj['task']))!r} is not in batch {batch_id}")
                pair = (int(t[0]), int(t[1]))
                got["by_task"] += 1
            judged.append((*pair, grade, safety))
        set_id = jset["set_id"]
        new = sorted(
            {
                (q, i)
                for q, i, _g, _s in judged
                if not db.q1("is_candidate", {"set_id": set_id, "query_id": q, "item_id": i})
            }
        )
        if new and jset["runs"]:
            if not jset["current"]:
                raise MamboError(
                    f"batch {batch_id} belongs to judgement set v{jset['version']}, which was scored "
                    f"and is no longer the newest: {len(new)} answer(s) name pairs it lacks; load them "
                    "into a batch of the newest set"
                )
            set_id = working_set(db, jset["partition_id"], adding=True)
        for q, i in new:
            db.q("insert_candidate", {"set_id": set_id, "query_id": q, "item_id": i, "origin": "earlier-pool"})
        aid = annotator_id(db, annotator, kind)
        for q, i, grade, safety in judged:
            db.q(
                "insert_judgement",
                {
                    "set_id": set_id,
                    "query_id": q,
                    "item_id": i,
                    "annotator_id": aid,
                    "role": role,
                    "grade": grade,
                    "safety": safety,
                    "batch_id": batch_id,
                },
            )
        got.update(
            judgements=len(judged),
            added=len(new),
            set_version=int(db.rows("set_row", {"set_id": set_id})[0]["version"]),
        )
    return got


def key_answers(db: DB, batch_id: int, path: Path) -> list[dict[str, Any]]:
    """An answer file keyed by task ids of batch `batch_id`, keyed instead by query id and content
    SHA-256, so that it loads into any pool of the same corpus. Run it on the library where the batch
    was made (task ids mean nothing elsewhere). Lines already keyed are kept as they are. One
    object per answer: qid, sha256, path, task (provenance), answer, reason; sorted by (qid, path),
    stably."""
    if not db.q1("batch", {"batch_id": batch_id}):
        raise MamboError(f"no annotation batch {batch_id}: see `mambo bench show`")
    out = []
    for where, obj in read_answers(path):
        if is_keyed(obj):
            row = {"qid": obj["qid"], "sha256": obj["sha256"], "path": obj.get("path")}
        else:
            key = db.rows("task_key", {"batch_id": batch_id, "task": str(obj["task"])})
            if not key:
                raise MamboError(f"{where}: task {clean_line(str(obj['task']))!r} is not in batch {batch_id}")
            row = dict(key[0])
        if "task" in obj:
            row["task"] = obj["task"]
        ans = obj.get("answer", obj)
        row["answer"] = {"grade": ans["grade"], "safety": ans["safety"]}
        row["reason"] = obj.get("reason", "")
        out.append(row)
    out.sort(key=lambda r: (str(r["qid"]), str(r["path"] or "")))
    return out


# ─────────────────────────────────────────────────────────────────────────────
# Annotators: people in the terminal, labelled model annotators
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


def judge_in_terminal(
    db: DB, batch_id: int, set_id: int, annotator: str, kind: str, role: str, adjudicate: bool
) -> int:
    """One person walks through a batch: query, preview and text of each candidate; types a grade
    0-3 and a safety letter (s safe, e sensitive, u unsafe, c critical), e.g. `2s`. `q` stops; the
    next `mambo judge` resumes where this one stopped."""
    with db.write():
        aid = annotator_id(db, annotator, kind)
    tasks = db.rows("batch_tasks_for", {"batch_id": batch_id, "annotator_id": aid})
    click.echo(
        f"batch {batch_id}: {len(tasks)} candidate(s) to {'adjudicate' if adjudicate else 'grade'}; "
        "answer e.g. `2s` (grade 0-3, safety s/e/u/c), `q` to stop"
    )
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
            db.q(
                "insert_judgement",
                {
                    "set_id": set_id,
                    "query_id": t["query_id"],
                    "item_id": t["item_id"],
                    "annotator_id": aid,
                    "role": role,
                    "grade": int(m.group(1)),
                    "safety": SAFETY_KEYS[m.group(2)],
                    "batch_id": batch_id,
                },
            )
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


# The cosine annotator over all-MiniLM-L6-v2: its judgements stay in the libraries that hold them (dev
# v1's scorecard), under its name; this version cannot make new ones (the model is not shipped).
RETIRED_ANNOTATORS = {"minilm-cosine-v1": "all-MiniLM-L6-v2, which this version no longer ships"}


class CosineAnnotator(ModelAnnotator):
    """Cosine similarity of the query and the candidate's whole visible text under the tool's
    embedding model (all-mpnet-base-v2). The bands are minilm-cosine-v1's, fixed before any
    agreement was computed from MiniLM's usual ranges (paraphrases ~0.5-0.8, related ~0.3-0.5,
    unrelated < 0.25), not refitted. Caveat, in every report: it shares its model with the dense
    route, so it may favour dense results."""

    name = "mpnet-cosine-v1"
    description = "all-mpnet-base-v2 cosine of query and candidate text; bands 0.55/0.40/0.25 -> 3/2/1"
    BANDS = ((0.55, 3), (0.40, 2), (0.25, 1))

    def __init__(self) -> None:
        self.embedder = get_embedder()
        self._q: dict[str, Any] = {}

    def judge(self, db: DB, query: dict[str, Any], item_id: int) -> tuple[int, str]:
        import numpy as np

        v = candidate_view(db, item_id)
        text = ". ".join(
            x
            for x in (
                v["title"],
                v["template"],
                " ".join(v["entities"]),
                " ".join(v["tags"]),
                v["description"],
                " ".join(v["text"].split()),
            )
            if x
        )
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
    if name == CosineAnnotator.name:
        return CosineAnnotator()
    if name in RETIRED_ANNOTATORS:
        raise MamboError(f"model annotator {name} needs {RETIRED_ANNOTATORS[name]}: choose {CosineAnnotator.name}")
    if name in (RecipeAnnotator.name, GoldAnnotator.name):
        if recipe is None or not recipe.is_file():
            raise MamboError(f"model annotator {name} reads the corpus recipe: pass --recipe FILE")
        return RecipeAnnotator(recipe) if name == RecipeAnnotator.name else GoldAnnotator(recipe)
    raise MamboError(
        f"no model annotator {clean_line(name)!r}: choose {CosineAnnotator.name}, "
        f"{RecipeAnnotator.name} or {GoldAnnotator.name}"
    )


def judge_with_model(db: DB, batch_id: int, set_id: int, model: ModelAnnotator, role: str) -> int:
    with db.write():
        aid = annotator_id(db, model.name, "model", model.description)
    tasks = db.rows("batch_tasks_for", {"batch_id": batch_id, "annotator_id": aid})
    queries = {
        q["query_id"]: q
        for q in db.rows(
            "partition_queries", {"partition_id": (db.q1("partition_of_set", {"set_id": set_id}) or (None,))[0]}
        )
    }
    n = 0
    with db.write():
        for t in tasks:
            grade, safety = model.judge(db, queries[t["query_id"]], t["item_id"])
            db.q(
                "insert_judgement",
                {
                    "set_id": set_id,
                    "query_id": t["query_id"],
                    "item_id": t["item_id"],
                    "annotator_id": aid,
                    "role": role,
                    "grade": grade,
                    "safety": safety,
                    "batch_id": batch_id,
                },
            )
            n += 1
    return n


# ─────────────────────────────────────────────────────────────────────────────
# Agreement
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
# Runs
# ─────────────────────────────────────────────────────────────────────────────


def system_row(db: DB, name: str) -> tuple[int, int, dict[str, Any]]:
    sync_systems(db)
    row = db.q1("system_row", {"name": name})
    if not row:
        system_config(db, name)  # raises the clear "no search system" error
        raise MamboError(f"no search system named {clean_line(name)!r}")
    return int(row[0]), int(row[2]), json.loads(row[3])


class BareMismatch(MamboError):
    """The bare library returned an item this library does not hold: a run cannot be scored."""


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
    # This library's items whose withdrawn or private status comes only from a sidecar: a bare
    # folder cannot know it, so they are left out of the bare corpus when it is scored
    # (mmts-clarifications, "The bare condition"): never shown by a bare run, their grades not counted.
    left_out: frozenset[int] = frozenset()

    def search(
        self, searcher: Searcher, query: str, config: dict[str, Any], limit: int, *, empty_rule: bool = True
    ) -> list[Result]:
        """The bare library's ranking as this library's item ids, without the items left out of the
        bare corpus (searched deeper by their number, so `limit` results remain when there are)."""
        raw = searcher.search(query, config, limit + len(self.left_out), empty_rule=empty_rule)
        missing = [r.item_id for r in raw if r.item_id not in self.to_annotated]
        if missing:
            raise BareMismatch(f"bare library item {missing[0]} has no picture in this library: {bare_how(self.path)}")
        kept = [r for r in raw if self.to_annotated[r.item_id] not in self.left_out][:limit]
        return [
            dataclasses.replace(r, item_id=self.to_annotated[r.item_id], rank=rank) for rank, r in enumerate(kept, 1)
        ]


def bare_how(path: Path | str) -> str:
    return (
        f"ingest the same corpus folder without its sidecars with `mambo --db {show_path(path)} add --no-sidecars DIR`"
    )


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
            what = [
                f"{len(only_bare)} image(s) are not in this library (e.g. {clean_line(only_bare[0])})"
                if only_bare
                else "",
                f"{len(only_annotated)} of this library's image(s) are missing from it (e.g. "
                f"{clean_line(only_annotated[0])})"
                if only_annotated
                else "",
                "it holds no images" if not images else "",
            ]
            raise MamboError(
                f"{show_path(path)} is not a bare copy of this library's corpus: "
                f"{'; '.join(w for w in what if w)}; {bare_how(path)}"
            )
        with_sidecars = int(bare.q1("items_with_sidecar_metadata")[0])
        if with_sidecars:
            raise MamboError(
                f"{show_path(path)} is not bare: {with_sidecars} of its items hold sidecar metadata; {bare_how(path)}"
            )
        manifest = bare.q("corpus_manifest")
        sha = sha256_bytes(manifest_text([(r[0], r[1]) for r in manifest]).encode())
        by_sha = {r[0]: int(r[1]) for r in db.q("items_by_sha256")}
        # Items are unique by SHA-256 in a library, so the map is one-to-one; an item without a
        # file (none after a plain ingest) maps too, when this library has its picture.
        mapping = {int(item): by_sha[sha] for sha, item in bare.q("items_by_sha256") if sha in by_sha}
        # Hidden here by rights or privacy but not there: only a sidecar said so.
        hidden_there = {mapping[int(r[0])] for r in bare.q("hidden_by_rights_or_privacy") if int(r[0]) in mapping}
        left_out = frozenset(int(r[0]) for r in db.q("hidden_by_rights_or_privacy")) - hidden_there
    except BaseException:
        bare.close()
        raise
    return BareLibrary(bare, path, sha, len(manifest), len(images), mapping, left_out)


def execute_run(
    db: DB, system: str, partition_id: int, *, seed: int = 0, set_id: int | None = None, bare: BareLibrary | None = None
) -> int:
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
    env = machine_info()
    if bare is None:
        searcher = searcher_for(db, system)
        target: str | dict[str, Any] = system
        models = model_manifest(db)
    else:
        # The configuration dict itself, not the name: the bare library's own systems rows may be
        # another version, and the point is the same system with and without sidecars.
        searcher = Searcher(bare.db, get_embedder() if needs_model(config) else None)
        target = config
        models = model_manifest(bare.db)
        env |= {"bare_library": str(bare.path.resolve())}
    params = {
        "system_id": system_id,
        "partition_id": partition_id,
        "set_id": set_id,
        "cv": cv,
        "config": json.dumps(config, sort_keys=True),
        "code_commit": code_commit(),
        "model_manifest": json.dumps(models),
        "environment": json.dumps(env),
        "seed": seed,
    }
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
            results = (
                searcher.search(q["query"], target, 10)
                if bare is None
                else bare.search(searcher, q["query"], config, 10)
            )
        except BareMismatch:
            raise  # a bare library that does not match: the run is left unfinished
        except Exception as e:  # noqa: BLE001 - an engine error is data: charged as an error, never as empty
            results, error = [], f"{type(e).__name__}: {clean_line(str(e))}"
        ms = (time.perf_counter() - t0) * 1000
        answers.append((q, results, error, ms))
    with db.write():
        if bare is not None:
            for item in sorted(bare.left_out):
                db.q("insert_run_excluded", {"run_id": run_id, "item_id": item})
        for q, results, error, ms in answers:
            db.q(
                "insert_run_query",
                {"run_id": run_id, "query_id": q["query_id"], "ms": ms, "error": error, "returned": len(results)},
            )
            for r in results:
                d = r.details
                db.q(
                    "insert_run_result",
                    {
                        "run_id": run_id,
                        "query_id": q["query_id"],
                        "rank": r.rank,
                        "item_id": r.item_id,
                        "score": r.score,
                        "lex": r.lexical_rank,
                        "fuzzy": r.fuzzy_rank,
                        "dense": r.dense_rank,
                        "has_preview": int(bool(d["has_preview"])),
                        "attribution": f"{d['creator']} ({d['licence']})" if d["creator"] and d["licence"] else "",
                    },
                )
        db.q("finish_eval_run", {"run_id": run_id})
    return run_id


# ─────────────────────────────────────────────────────────────────────────────
# The evaluation tables read by the lab's other modules
# ─────────────────────────────────────────────────────────────────────────────


def partition_list(db: DB) -> list[dict[str, Any]]:
    return db.rows("list_partitions")


def audit_rows(db: DB, partition_id: int) -> list[dict[str, Any]]:
    """The partition's "no match" audit, a query a row."""
    return db.rows("audit_status", {"partition_id": partition_id})


def current_set_row(db: DB, partition_id: int) -> tuple | None:
    """The partition's current judgement set, or None."""
    return db.q1("current_set", {"partition_id": partition_id})


def partition_query_rows(db: DB, partition_id: int) -> list[dict[str, Any]]:
    return db.rows("partition_queries", {"partition_id": partition_id})


def judgement_counts(db: DB, set_id: int) -> list[tuple]:
    """(status, how many) of the judgement set's pairs."""
    return db.q("judgement_status", {"set_id": set_id})


def batch_row(db: DB, batch_id: int) -> tuple | None:
    return db.q1("batch", {"batch_id": batch_id})


def corpus_version_rows(db: DB, cv: int) -> list[dict[str, Any]]:
    return db.rows("corpus_version", {"cv": cv})
