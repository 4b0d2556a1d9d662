"""MMTS-Search-v1 scoring: latency in the real interface (80x24 PTY), the components and hard gates,
the prompt-family bootstrap and the semantic-search acceptance test, the report (with the bare
library beside the annotated one), comparison, publication and rollback."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

from mambomeme.lab.bench import machine_info, pct
from mambomeme.lab.evaluation import (
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    CAP,
    GATES,
    INTERFACE_VERSION,
    LATENCY_SEARCHES,
    LATENCY_TIMEOUT_MS,
    LATENCY_WARMUPS,
    PROTOCOL_VERSION,
    SCORE_VERSION,
    SLICES,
    BareLibrary,
    agreement,
    audit_rows,
    code_commit,
    corpus_version_rows,
    current_set_row,
    execute_run,
    integrity_problems,
    judgement_counts,
    model_manifest,
    open_bare_library,
    partition_query_rows,
    partition_row,
    snapshot_corpus,
    system_row,
)
from mambomeme.lab.pty import MeasuredTUI
from mambomeme.library import DB, file_sha256
from mambomeme.output import MamboError, show_path

# ─────────────────────────────────────────────────────────────────────────────
# Latency in the real interface (80x24 PTY)
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


def measure_pty(
    db_path: Path,
    queries: list[str],
    system: str,
    *,
    searches: int = LATENCY_SEARCHES,
    warmups: int = LATENCY_WARMUPS,
    seed: int = BOOTSTRAP_SEED,
    timeout_ms: float = LATENCY_TIMEOUT_MS,
) -> dict[str, Any]:
    """Submit-to-render in the declared PTY (80x24, TERM=xterm-256color, pexpect): from the submit
    key (Ctrl-S, lab/pty.py) accepted to the status line of that search drawn (the status is drawn
    after the complete list). A search not drawn within `timeout_ms` is charged `timeout_ms` and
    counted as an error. Also checks that quitting restores the terminal (alternate screen left,
    cursor shown)."""
    warm, measured = latency_schedule(len(queries), searches, warmups, seed)
    samples: list[tuple[int, float, str | None, float | None]] = []
    app = MeasuredTUI(db_path, system)
    try:
        for i, qi in enumerate(warm + measured):
            ms, app_ms, _result, error = app.submit(queries[qi], timeout_ms=timeout_ms)
            if i >= len(warm):
                samples.append((qi, ms, error, app_ms))
    finally:
        restored = app.close()
    ms_all = [s[1] for s in samples]
    engine = [s[3] for s in samples if s[3] is not None]
    return {
        "samples": samples,
        "p50": pct(ms_all, 50),
        "p95": pct(ms_all, 95),
        "engine_p50": pct(engine, 50),
        "engine_p95": pct(engine, 95),
        "errors": sum(1 for s in samples if s[2]),
        "n": len(samples),
        "warmups": len(warm),
        "terminal_restored": restored,
        "protocol": {
            "pty": "80x24",
            "term": "xterm-256color",
            "driver": "pexpect",
            "warmups": len(warm),
            "measured": len(samples),
            "blocks": len(measured) // max(1, len(queries)),
            "seed": seed,
            "timeout_ms": timeout_ms,
            "result_limit": 10,
            "concurrency": 1,
            "caching": "off (every search runs the SQL statement)",
            "interface": INTERFACE_VERSION,
        },
    }


# ─────────────────────────────────────────────────────────────────────────────
# The score: components, gates, bootstrap, acceptance
# ─────────────────────────────────────────────────────────────────────────────


def clip(x: float) -> float:
    return min(1.0, max(0.0, x))


def components(qm: list[dict[str, Any]], p95: float | None, latency_errors: int, latency_n: int) -> dict[str, Any]:
    """Q, E, C, S, L, R and the gate inputs from per-query metrics (rows of the view query_metrics),
    so the same code scores the point estimate and every bootstrap resample."""

    def mean(xs: list[float]) -> float:
        return sum(xs) / len(xs) if xs else 0.0

    ans = [m for m in qm if m["slice"] != "no-match"]
    slices = {
        s: mean([m["ndcg10"] for m in ans if m["slice"] == s]) for s in SLICES if any(m["slice"] == s for m in ans)
    }
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
    return {
        "Q": q,
        "E": e,
        "C": c,
        "S": s,
        "L": lat,
        "R": r,
        "hit10": hit10,
        "correct_empty": correct_empty,
        "safety_hit10": safety_hit,
        "safe_ordinary": mean(ordinary),
        "safe_safety": mean(safety),
        "error_rate": error_rate,
        "slices": slices,
        "p95_ms": p95,
        "raw_score": score,
    }


def gates(c: dict[str, Any], protocol_checks: dict[str, bool]) -> dict[str, dict[str, Any]]:
    p95 = c["p95_ms"]
    out = {
        "slice_ndcg10_min": {
            "value": min(c["slices"].values(), default=0.0),
            "pass": bool(c["slices"])
            and all(v >= GATES["min_slice_ndcg10"] for v in c["slices"].values())
            and len(c["slices"]) == len(SLICES),
            "rule": ">= 0.30 in every primary slice",
        },
        "exact_mrr10": {"value": c["E"], "pass": c["E"] >= GATES["exact_mrr10"], "rule": ">= 0.60"},
        "hit10": {"value": c["hit10"], "pass": c["hit10"] >= GATES["hit10"], "rule": ">= 0.70"},
        "correct_empty": {
            "value": c["correct_empty"],
            "pass": c["correct_empty"] >= GATES["correct_empty"],
            "rule": ">= 0.60",
        },
        "safety_hit10": {
            "value": c["safety_hit10"],
            "rule": ">= 0.70",
            "pass": c["safety_hit10"] is None or c["safety_hit10"] >= GATES["safety_hit10"],
        },
        "safe_list_rate": {"value": c["S"], "pass": c["S"] >= GATES["safe_list_rate"], "rule": ">= 0.98"},
        "submit_to_render_p95_ms": {
            "value": p95,
            "pass": p95 is not None and p95 < GATES["p95_ms_below"],
            "rule": "< 1000 ms",
        },
        "error_rate": {"value": c["error_rate"], "pass": c["error_rate"] < GATES["error_rate_below"], "rule": "< 1 %"},
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


def bootstrap(
    qm: list[dict[str, Any]],
    latency: dict[str, Any],
    protocol_checks: dict[str, bool],
    critical: list[str],
    seed: int = BOOTSTRAP_SEED,
    n: int = BOOTSTRAP_RESAMPLES,
) -> dict[str, Any]:
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
    return {"resamples": n, "seed": seed, "ci95": ci, "pass_fraction": round(passing / n, 4)}


def acceptance(
    rows: dict[str, dict[str, Any]], seed: int = BOOTSTRAP_SEED, n: int = BOOTSTRAP_RESAMPLES
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
    slice_regressions = {
        s: round(b["components"]["slices"].get(s, 0) - a["components"]["slices"].get(s, 0), 4)
        for s in ("entity", "quote")
        if b["components"]["slices"].get(s, 0) - a["components"]["slices"].get(s, 0) < -0.02
    }
    keep = (overall_ok or semantic_ok) and not gate_regressions and not slice_regressions
    return {
        "delta_Q": round(dq, 4),
        "delta_Q_ci95": [round(x, 4) for x in ci_q],
        "delta_semantic": round(dsem, 4),
        "delta_semantic_ci95": [round(x, 4) for x in ci_sem],
        "gate_regressions": gate_regressions,
        "entity_quote_regressions": slice_regressions,
        "keep_dense": keep,
        "decision": "hybrid (dense route kept) is the default"
        if keep
        else "BM25 alone is the default; the dense experiment is reported as negative",
    }


# ─────────────────────────────────────────────────────────────────────────────
# Report, comparison and publication
# ─────────────────────────────────────────────────────────────────────────────


def critical_violations(
    db: DB, partition: dict[str, Any], run: dict[str, Any], comps: dict[str, Any], qm: list[dict[str, Any]]
) -> list[str]:
    """mmts-clarifications "Critical violations": artifact integrity, rights, privacy, safety."""
    out = []
    meta = json.loads(partition["meta"])
    manifest = (meta.get("imported_from") or {}).get("manifest")
    for p in integrity_problems(db, meta, Path(manifest) if manifest else None):
        out.append(f"artifact integrity: {p}")
    source = (meta.get("imported_from") or {}).get("file")
    if source and Path(source).is_file() and file_sha256(Path(source)) != partition["source_sha256"]:
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


def protocol_checks(
    db: DB,
    partition: dict[str, Any],
    runs: dict[str, dict[str, Any]],
    *,
    measured: bool,
    rollback_ok: bool | None = None,
) -> dict[str, bool]:
    """The release-protocol, publication-rollback and terminal-restoration gates, checked now (each
    row of `runs` carries its latency). Without a measured latency (--no-latency) the release and
    terminal checks fail. `rollback_ok`: the publication self-test's result if this score ran it."""
    rollback = publication_selftest() if rollback_ok is None else rollback_ok
    if not measured:
        return {"release_protocol": False, "publication_rollback": rollback, "terminal_restoration": False}
    audits = audit_rows(db, partition["partition_id"])
    rescore = {r[0] for r in db.q("rescore_run_ids")}
    release = (
        partition["status"] in ("frozen", "exposed")
        if partition["partition"] == "dev"
        else partition["status"] == "frozen"
    )
    release = (
        release
        and all(a["status"] == "valid" for a in audits)
        and not any(r["run_id"] in rescore for r in runs.values())
    )
    return {
        "release_protocol": release,
        "publication_rollback": rollback,
        "terminal_restoration": all(r["latency"].get("terminal_restored", False) for r in runs.values()),
    }


def publication_selftest() -> bool:
    """Publish then roll back in a scratch library: the rolled-back publication must vanish and the
    previous one come back, each in one transaction."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        db = DB(Path(tmp) / "selftest.sqlite")
        try:
            with db.write():
                pid = db.q1("insert_selftest_partition")[0]
                a = add_scorecard(
                    db, {"partition_id": pid, "score_version": SCORE_VERSION, "report_json": "{}", "report_md": "a"}
                )
                b = add_scorecard(
                    db, {"partition_id": pid, "score_version": SCORE_VERSION, "report_json": "{}", "report_md": "b"}
                )
            publish(db, a)
            publish(db, b)
            first = published_row(db)[1]
            rollback(db, "self-test")
            second = published_row(db)[1]
            return first == b and second == a
        finally:
            db.close()


def publish(db: DB, scorecard_id: int) -> int:
    row = db.rows("scorecard", {"scorecard_id": scorecard_id})
    if not row:
        raise MamboError(f"no scorecard {scorecard_id}: `mambo score` makes one")
    part = partition_row(db, row[0]["partition_id"])
    if part["partition"] == "hidden" and part["status"] != "frozen":
        raise MamboError(
            f"hidden partition {part['version']} is {part['status']}: a release comparison needs a new "
            "hidden benchmark version"
        )
    report = json.loads(row[0]["report_json"])
    if report.get("release_blockers"):
        raise MamboError(f"scorecard {scorecard_id} cannot be published: {report['release_blockers'][0]}")
    with db.write():
        return int(db.q1("insert_publication", {"scorecard_id": scorecard_id})[0])


def rollback(db: DB, reason: str) -> int:
    with db.write():
        cur = published_row(db)
        if not cur:
            raise MamboError("nothing is published: nothing to roll back")
        db.q("rollback_publication", {"publication_id": cur[0], "reason": reason})
    return int(cur[1])


def pty_latency(
    db: DB,
    lib_path: Path,
    queries: list[dict[str, Any]],
    s: str,
    system_id: int,
    partition_id: int,
    *,
    measure: bool,
    searches: int,
    warmups: int,
    seed: int,
    progress: Any = None,
    library: str = "annotated",
) -> dict[str, Any]:
    """Submit-to-render in the real TUI on `lib_path` (mmts-clarifications latency protocol), stored
    as a latency run of this library; nothing measured when `measure` is false."""
    lat: dict[str, Any] = {"p95": None, "p50": None, "errors": 0, "n": 0, "terminal_restored": False}
    if not measure:
        return lat
    if progress:
        progress(f"{s}: {warmups} warm-ups + {searches} searches in an 80x24 PTY ({library} library)")
    lat = measure_pty(lib_path, [q["query"] for q in queries], s, searches=searches, warmups=warmups, seed=seed)
    with db.write():
        lid = int(
            db.q1(
                "insert_latency_run",
                {
                    "system_id": system_id,
                    "partition_id": partition_id,
                    "interface": "tui-pty-80x24",
                    "protocol": json.dumps(lat["protocol"] | {"library": library}),
                    "environment": json.dumps(machine_info()),
                },
            )[0]
        )
        for seq, (qi, ms, err, _app) in enumerate(lat["samples"], 1):
            db.q(
                "insert_latency_sample",
                {"id": lid, "seq": seq, "query_id": queries[qi]["query_id"], "ms": ms, "error": err},
            )
    return lat


def system_scores(db: DB, s: str, system_id: int, sversion: int, run_id: int, lat: dict[str, Any]) -> dict[str, Any]:
    """One system's scorecard inputs from its run's per-query metrics and its latency sample."""
    qm = db.rows("run_query_metrics", {"run_id": run_id})
    comps = components(qm, lat["p95"], lat["errors"], lat["n"])
    run = db.rows("run", {"run_id": run_id})[0]
    engine = [m["latency_ms"] for m in qm]
    return {
        "system": s,
        "system_id": system_id,
        "system_version": sversion,
        "run_id": run_id,
        "run": run,
        "query_metrics": qm,
        "components": comps,
        "latency": {k: v for k, v in lat.items() if k != "samples"},
        "engine_ms": {"p50": pct(engine, 50), "p95": pct(engine, 95)},
        "slices": db.rows("run_slices", {"run_id": run_id}),
        "diagnostics": db.rows("run_diagnostics", {"run_id": run_id}),
        "unjudged_results": db.q1("unjudged_results", {"run_id": run_id})[0],
    }


def finish_rows(db: DB, part: dict[str, Any], rows: dict[str, dict[str, Any]], checks: dict[str, bool]) -> None:
    """Gates, critical violations, the score, its label and the bootstrap, for every row."""
    for r in rows.values():
        crit = critical_violations(db, part, r["run"], r["components"], r["query_metrics"])
        g = gates(r["components"], checks)
        sc, status = final_score(r["components"], g, crit)
        r |= {
            "gates": g,
            "critical": crit,
            "score": round(sc, 2),
            "status": status,
            "label": label(sc, status),
            "bootstrap": bootstrap(r["query_metrics"], r["latency"], checks, crit, seed=BOOTSTRAP_SEED),
        }


def system_report(r: dict[str, Any]) -> dict[str, Any]:
    """A scored row as the report shows it."""
    return {
        "system": r["system"],
        "system_version": r["system_version"],
        "run_id": r["run_id"],
        "config": json.loads(r["run"]["config"]),
        "score": r["score"],
        "status": r["status"],
        "label": r["label"],
        "components": {
            k: (round(v, 4) if isinstance(v, float) else v) for k, v in r["components"].items() if k != "slices"
        },
        "slices": {k: round(v, 4) for k, v in r["components"]["slices"].items()},
        "gates": r["gates"],
        "critical_violations": r["critical"],
        "bootstrap": r["bootstrap"],
        "latency": r["latency"],
        "engine_ms": r["engine_ms"],
        "slice_metrics": r["slices"],
        "diagnostics": r["diagnostics"],
        "unjudged_results": r["unjudged_results"],
    }


def score(
    db: DB,
    db_path: Path,
    partition_id: int,
    systems: list[str],
    *,
    latency_searches: int,
    latency_warmups: int,
    seed: int,
    measure_latency: bool = True,
    progress: Any = None,
    bare: Path | None = None,
) -> dict[str, Any]:
    """The scorecard of `systems` on this (annotated) library; with `bare`, also the diagnostic
    section of the same systems on the bare library of the same corpus (checked first, so a wrong
    file is refused before the long latency protocol)."""
    bare_lib = open_bare_library(db, bare) if bare is not None else None
    try:
        return _score(
            db,
            db_path,
            partition_id,
            systems,
            latency_searches=latency_searches,
            latency_warmups=latency_warmups,
            seed=seed,
            measure_latency=measure_latency,
            progress=progress,
            bare=bare_lib,
        )
    finally:
        if bare_lib is not None:
            bare_lib.db.close()


def _score(
    db: DB,
    db_path: Path,
    partition_id: int,
    systems: list[str],
    *,
    latency_searches: int,
    latency_warmups: int,
    seed: int,
    measure_latency: bool,
    progress: Any,
    bare: BareLibrary | None,
) -> dict[str, Any]:
    part = partition_row(db, partition_id)
    meta = json.loads(part["meta"])
    if part["partition"] == "hidden" and part["status"] in ("exposed", "retired"):
        raise MamboError(
            f"hidden partition {part['version']} is {part['status']}: later release comparisons need a "
            "new hidden benchmark version"
        )
    audits = audit_rows(db, partition_id)
    stale = [a["qid"] for a in audits if a["status"] != "valid"]
    if stale:
        raise MamboError(
            f"{len(stale)} no-match audit(s) are not valid on this corpus version (e.g. {stale[0]}): "
            "redo them with `mambo bench audit`"
        )
    cur = current_set_row(db, partition_id)
    if not cur:
        raise MamboError("this partition has no judgement set: pool and judge it first (`mambo bench pool`)")
    set_id = int(cur[0])
    pending = dict(judgement_counts(db, set_id))
    if pending.get("needs-grades") or pending.get("needs-adjudication"):
        raise MamboError(f"judgement set {cur[1]} is incomplete ({pending}): finish it with `mambo judge`")
    queries = partition_query_rows(db, partition_id)
    rows: dict[str, dict[str, Any]] = {}
    cv = snapshot_corpus(db)
    for s in systems:
        system_id, sversion, _cfg = system_row(db, s)
        found = db.q1(
            "latest_run",
            {"system": s, "partition_id": partition_id, "set_id": set_id, "cv": cv, "system_id": system_id},
        )
        run_id = int(found[0]) if found else execute_run(db, s, partition_id, seed=seed, set_id=set_id)
        if progress:
            progress(f"{s}: run {run_id} scored")
        lat = pty_latency(
            db,
            db_path,
            queries,
            s,
            system_id,
            partition_id,
            measure=measure_latency,
            searches=latency_searches,
            warmups=latency_warmups,
            seed=seed,
            progress=progress,
        )
        rows[s] = system_scores(db, s, system_id, sversion, run_id, lat)
    checks = protocol_checks(db, part, rows, measured=measure_latency)
    finish_rows(db, part, rows, checks)
    acc = acceptance(rows)
    cv = corpus_version_rows(db, part["corpus_version_id"])[0]
    set_info = agreement(db, set_id)
    blockers = [] if measure_latency else ["latency was not measured (--no-latency)"]
    if not checks["release_protocol"]:
        blockers.append("the release protocol check failed (partition not frozen, stale audits or runs to rescore)")
    report = {
        "score_version": SCORE_VERSION,
        "protocol_version": PROTOCOL_VERSION,
        "interface_version": INTERFACE_VERSION,
        "label": part["label"],
        "benchmark": {
            "name": part["benchmark"],
            "version": part["version"],
            "partition": part["partition"],
            "status": part["status"],
            "query_file_sha256": part["source_sha256"],
            "queries": len(queries),
            "families": len({q["family"] for q in queries}),
        },
        "corpus": {
            "manifest_sha256": cv["manifest_sha256"],
            "files": cv["files"],
            "items": cv["items"],
            "declared_manifest_sha256": meta.get("corpus_manifest_sha256"),
            "recipe_sha256": meta.get("corpus_recipe_sha256"),
        },
        "safety_policy": meta.get("safety_policy", "mambo-safety-v1"),
        "judgements": {"set_version": int(cur[1]), "agreement": set_info},
        "template_groups": "ingest perceptual/template groups (schema 3); overlap checked on import and freeze",
        "code_commit": code_commit(),
        "model_manifest": model_manifest(db),
        "hardware_runtime": machine_info(),
        "seeds": {"bootstrap": BOOTSTRAP_SEED, "latency": seed},
        "protocol_checks": checks,
        "release_blockers": blockers,
        "systems": [system_report(r) for r in rows.values()],
        "semantic_acceptance": acc,
        "bare": bare_section(
            db,
            bare,
            part,
            set_id,
            rows,
            queries,
            checks,
            seed=seed,
            measure_latency=measure_latency,
            latency_searches=latency_searches,
            latency_warmups=latency_warmups,
            progress=progress,
        )
        if bare
        else {"measured": False, "how": BARE_HOW},
    }
    return report


BARE_HOW = (
    "ingest the same corpus folder without its sidecars (`mambo --db BARE.sqlite add --no-sidecars DIR`), "
    "then `mambo score --bare BARE.sqlite` (benchmark v1: `benchdata/v1/score.sh LIBRARY BARE.sqlite`)"
)


def bare_section(
    db: DB,
    bare: BareLibrary,
    part: dict[str, Any],
    set_id: int,
    rows: dict[str, dict[str, Any]],
    queries: list[dict[str, Any]],
    annotated_checks: dict[str, bool],
    *,
    seed: int,
    measure_latency: bool,
    latency_searches: int,
    latency_warmups: int,
    progress: Any = None,
) -> dict[str, Any]:
    """The bare condition (mmts-clarifications, "The bare condition"): every scored system again on
    the bare library of the same corpus (same configuration, queries and judgements), scored exactly
    as the annotated library is (components, gates, critical violations, bootstrap, latency in the
    real TUI on the bare library), with the items whose withdrawn or private status only a sidecar
    gave left out of its corpus. Beside each: the annotated numbers, the gap (annotated minus bare)
    and the unjudged share of the top 10 (pool both conditions, `mambo bench pool --bare`, to make it
    zero; an unjudged result counts as non-relevant)."""

    def share(run_id: int) -> dict[str, Any]:
        u = db.rows("unjudged_share", {"run_id": run_id})[0]
        return {
            "results": u["results"],
            "unjudged": u["unjudged"],
            "share": round(u["unjudged"] / u["results"], 4) if u["results"] else None,
        }

    def measures(c: dict[str, Any]) -> dict[str, Any]:
        return {
            "Q": round(c["Q"], 4),
            "slices": {k: round(v, 4) for k, v in c["slices"].items()},
            "hit10": round(c["hit10"], 4),
            "correct_empty": round(c["correct_empty"], 4),
            "E": round(c["E"], 4),
            "S": round(c["S"], 4),
        }

    bare_rows: dict[str, dict[str, Any]] = {}
    for s, r in rows.items():
        run_id = execute_run(db, s, part["partition_id"], seed=seed, set_id=set_id, bare=bare)
        if progress:
            progress(f"{s}: bare-library run {run_id} stored")
        lat = pty_latency(
            db,
            bare.path,
            queries,
            s,
            r["system_id"],
            part["partition_id"],
            measure=measure_latency,
            searches=latency_searches,
            warmups=latency_warmups,
            seed=seed,
            progress=progress,
            library="bare",
        )
        bare_rows[s] = system_scores(db, s, r["system_id"], r["system_version"], run_id, lat)
    checks = protocol_checks(
        db, part, bare_rows, measured=measure_latency, rollback_ok=annotated_checks["publication_rollback"]
    )
    finish_rows(db, part, bare_rows, checks)
    out = []
    for s, r in rows.items():
        b = bare_rows[s]
        # Critical, withdrawn or private results shown: what the annotated library knows about them.
        a_m = measures(r["components"]) | {"critical_shown": sum(m["critical_shown"] for m in r["query_metrics"])}
        b_m = measures(b["components"]) | {"critical_shown": sum(m["critical_shown"] for m in b["query_metrics"])}
        gap = {
            "Q": round(a_m["Q"] - b_m["Q"], 4),
            "hit10": round(a_m["hit10"] - b_m["hit10"], 4),
            "correct_empty": round(a_m["correct_empty"] - b_m["correct_empty"], 4),
            "E": round(a_m["E"] - b_m["E"], 4),
            "S": round(a_m["S"] - b_m["S"], 4),
            "score": round(r["score"] - b["score"], 2),
            "slices": {k: round(v - b_m["slices"].get(k, 0.0), 4) for k, v in a_m["slices"].items()},
        }
        out.append(
            system_report(b)
            | {
                "annotated_run_id": r["run_id"],
                "bare_run_id": b["run_id"],
                "annotated": a_m,
                "bare": b_m,
                "gap": gap,
                "unjudged_top10": {"annotated": share(r["run_id"]), "bare": share(b["run_id"])},
            }
        )
    return {
        "measured": True,
        "scored": True,
        "library": str(bare.path.resolve()),
        "manifest_sha256": bare.manifest_sha256,
        "files": bare.files,
        "items": bare.items,
        "left_out_items": len(bare.left_out),
        "protocol_checks": checks,
        "model_manifest_matches": model_manifest(bare.db) == model_manifest(db),
        "semantic_acceptance": acceptance(bare_rows),
        "note": "scored like the annotated library (same queries, judgements, components and gates); items "
        "whose withdrawn or private status only a sidecar gave are left out of the bare corpus; "
        "unjudged results count as non-relevant",
        "systems": out,
    }


def fmt(x: Any) -> str:
    if isinstance(x, float):
        return f"{x:.3f}"
    return "—" if x is None else str(x)


def report_markdown(rep: dict[str, Any]) -> str:
    b, c = rep["benchmark"], rep["corpus"]
    hw = rep["hardware_runtime"]
    lines = [
        f"# MMTS-Search-v1 scorecard — {b['name']} {b['version']} ({b['partition']}, {rep['label']})",
        "",
        f"Score version `{rep['score_version']}`, protocol `{rep['protocol_version']}`, interface "
        f"`{rep['interface_version']}`. Machine: {hw['cpu']}, {hw['cores']} cores, {hw['memory_gb']} GB, "
        f"Python {hw['python']}.",
        "",
    ]
    lines += scorecard_table(rep["systems"]) + ["", "## Gates", ""] + gates_table(rep["systems"])
    lines += [
        "",
        "## nDCG@10 by slice",
        "",
        "| slice | " + " | ".join(s["system"] for s in rep["systems"]) + " |",
        "|---|" + "---|" * len(rep["systems"]),
    ]
    for sl in SLICES:
        lines.append(f"| {sl} | " + " | ".join(fmt(s["slices"].get(sl)) for s in rep["systems"]) + " |")
    acc = rep["semantic_acceptance"]
    if acc:
        lines += [
            "",
            "## Semantic-search acceptance (hybrid vs BM25, paired family bootstrap)",
            "",
            f"- ΔQ = {acc['delta_Q']:+.3f} (95 % CI {acc['delta_Q_ci95'][0]:+.3f} to "
            f"{acc['delta_Q_ci95'][1]:+.3f});"
            f" Δsemantic = {acc['delta_semantic']:+.3f} (95 % CI {acc['delta_semantic_ci95'][0]:+.3f} to "
            f"{acc['delta_semantic_ci95'][1]:+.3f})",
            f"- gate regressions: {acc['gate_regressions'] or 'none'}; entity/quote regressions > 0.02: "
            f"{acc['entity_quote_regressions'] or 'none'}",
            f"- **Decision: {acc['decision']}.**",
        ]
    ag = rep["judgements"]["agreement"]
    lines += [
        "",
        "## Labels",
        "",
        f"Judgement set v{rep['judgements']['set_version']}: {ag['pairs']} doubly graded candidates; exact "
        f"agreement {fmt(ag['exact'])}, within one {fmt(ag['within_one'])}, linear weighted kappa "
        f"{fmt(ag['grade_kappa_linear'])}, safety kappa {fmt(ag['safety_kappa'])}. Final status: {ag['status']}.",
        "Annotators: " + ", ".join(f"{a['name']} ({a['kind']}, {a['role']})" for a in ag["annotators"]) + ".",
        "",
        "## Diagnostics (reported, not scored)",
        "",
        "| system | slice | dup rate | repeated template | no preview | no attribution | lexical-only | "
        "dense-only | both |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for s in rep["systems"]:
        for d in s["diagnostics"]:
            lines.append(
                f"| {s['system']} | {d['slice']} | {fmt(d['exact_duplicate_rate'])} | "
                f"{fmt(d['repeated_template_group_rate'])} | {fmt(d['missing_preview_rate'])} | "
                f"{fmt(d['missing_attribution_rate'])} | {fmt(d['lexical_only'])} | {fmt(d['dense_only'])} | "
                f"{fmt(d['both_routes'])} |"
            )
    lines += bare_markdown(rep.get("bare"))
    lines += [
        "",
        "## Frozen inputs",
        "",
        f"- corpus manifest {c['manifest_sha256']} ({c['files']} files, {c['items']} items); declared "
        f"{c['declared_manifest_sha256']}; recipe {c['recipe_sha256']}",
        f"- query file {b['query_file_sha256']} ({b['queries']} queries, {b['families']} families, status "
        f"{b['status']}); safety policy {rep['safety_policy']}",
        f"- code {rep['code_commit']}; seeds {rep['seeds']}",
        f"- model {json.dumps(rep['model_manifest'])}",
        f"- runtime {json.dumps(rep['hardware_runtime']['packages'])}",
        f"- protocol checks {rep['protocol_checks']}",
    ]
    for s in rep["systems"]:
        lines.append(f"- {s['system']} configuration: `{json.dumps(s['config'], sort_keys=True)}`")
    if rep["release_blockers"]:
        lines += ["", "Not publishable as a release: " + "; ".join(rep["release_blockers"]) + "."]
    return "\n".join(lines) + "\n"


def scorecard_table(systems: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| system | score | status | Q | E | C | S | L | R | p95 ms (PTY) | engine p95 ms | 95 % CI | gates passed |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in systems:
        k = s["components"]
        lines.append(
            f"| {s['system']} v{s['system_version']} | {s['score']:.1f} | {s['label']} | {fmt(k['Q'])} | "
            f"{fmt(k['E'])} | {fmt(k['C'])} | {fmt(k['S'])} | {fmt(k['L'])} | {fmt(k['R'])} | "
            f"{fmt(s['latency']['p95'])} | {fmt(s['engine_ms']['p95'])} | "
            f"{s['bootstrap']['ci95'][0]:.1f}-{s['bootstrap']['ci95'][1]:.1f} | "
            f"{s['bootstrap']['pass_fraction']:.0%} of resamples |"
        )
    return lines


def gates_table(systems: list[dict[str, Any]]) -> list[str]:
    lines = ["| gate | rule | " + " | ".join(s["system"] for s in systems) + " |", "|---|---|" + "---|" * len(systems)]
    for g in systems[0]["gates"]:
        cells = [f"{fmt(s['gates'][g]['value'])} {'ok' if s['gates'][g]['pass'] else 'FAIL'}" for s in systems]
        lines.append(f"| {g} | {systems[0]['gates'][g]['rule']} | " + " | ".join(cells) + " |")
    for s in systems:
        if s["critical_violations"]:
            lines += ["", f"**Critical violations ({s['system']}): score 0, FAIL.**", ""]
            lines += [f"- {v}" for v in s["critical_violations"]]
    return lines


def bare_markdown(bare: dict[str, Any] | None) -> list[str]:
    """The "Bare library (sidecars withheld)" section: its own scorecard and gates, then per system the
    annotated and bare numbers and their gap; or, when it was not measured, how to measure it."""
    lines = ["", "## Bare library (sidecars withheld)", ""]
    if not bare or not bare.get("measured"):
        how = (bare or {}).get("how", BARE_HOW)
        return lines + [f"Not measured in this scorecard. To measure it: {how}."]
    if not bare.get("scored"):  # reports written before the bare condition was scored
        lines += ["A diagnostic beside the annotated score (not scored, no gates) in this older report.", ""]
    else:
        lines += [
            f"The condition that says how the tool serves a real folder: the same systems (same configuration, "
            f"queries and judgements) on the same corpus ingested without its sidecars (`mambo add --no-sidecars`; "
            f"manifest {bare['manifest_sha256'][:12]}, {bare['files']} files, {bare['items']} items), scored "
            f"exactly as the annotated library. {bare['left_out_items']} item(s) whose withdrawn or private "
            "status only a sidecar gave are left out of its corpus (never shown, grades not counted)."
            + (
                ""
                if bare["model_manifest_matches"]
                else " **The bare library's embedding model differs from this library's.**"
            ),
            "",
        ]
        lines += scorecard_table(bare["systems"]) + ["", "### Gates (bare)", ""] + gates_table(bare["systems"])
        acc = bare.get("semantic_acceptance")
        if acc:
            lines += [
                "",
                f"Semantic-search acceptance on the bare library: ΔQ = {acc['delta_Q']:+.3f} (95 % CI "
                f"{acc['delta_Q_ci95'][0]:+.3f} to {acc['delta_Q_ci95'][1]:+.3f}); Δsemantic = "
                f"{acc['delta_semantic']:+.3f}; gate regressions: {acc['gate_regressions'] or 'none'}: "
                f"{acc['decision']}.",
            ]
        lines += ["", "### Annotated and bare, side by side", ""]
    lines += [
        "Gap = annotated − bare. Unjudged results in the top 10 count as non-relevant (`mambo bench pool --bare` "
        "pools both conditions). Safe list: the share of lists showing no unsafe or critical item.",
        "",
        "| system | library | Q | " + " | ".join(SLICES) + " | Hit@10 | correct-empty | safe list | "
        "unjudged in top 10 |",
        "|---|---|---|" + "---|" * len(SLICES) + "---|---|---|---|",
    ]
    for s in bare["systems"]:
        for kind in ("annotated", "bare", "gap"):
            m = s[kind]
            if kind == "gap":
                cells = [
                    f"{m['Q']:+.3f}",
                    *(f"{m['slices'][sl]:+.3f}" if sl in m["slices"] else "—" for sl in SLICES),
                    f"{m['hit10']:+.3f}",
                    f"{m['correct_empty']:+.3f}",
                    f"{m['S']:+.3f}",
                    "",
                ]
            else:
                u = s["unjudged_top10"][kind]
                cells = [
                    fmt(m["Q"]),
                    *(fmt(m["slices"].get(sl)) for sl in SLICES),
                    fmt(m["hit10"]),
                    fmt(m["correct_empty"]),
                    fmt(m["S"]),
                    f"{u['share']:.1%} ({u['unjudged']}/{u['results']})" if u["share"] is not None else "—",
                ]
            name = {
                "annotated": f"annotated (run {s['annotated_run_id']})",
                "bare": f"bare (run {s['bare_run_id']})",
                "gap": "**gap**",
            }[kind]
            lines.append(f"| {s['system']} | {name} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "Critical, withdrawn or private results shown (a critical violation in a scored run), annotated / "
        "bare: "
        + "; ".join(
            f"{s['system']} {s['annotated'].get('critical_shown', '—')} / {s['bare'].get('critical_shown', '—')}"
            for s in bare["systems"]
        )
        + ".",
    ]
    return lines


COMPARABLE = (
    ("benchmark", "name"),
    ("benchmark", "version"),
    ("benchmark", "partition"),
    ("corpus", "manifest_sha256"),
    ("safety_policy",),
    ("score_version",),
    ("interface_version",),
    ("hardware_runtime", "cpu"),
    ("hardware_runtime", "cores"),
)


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
        out.append(
            f"{s['system']}: {old['score']:.1f} -> {s['score']:.1f} ({s['score'] - old['score']:+.1f}), "
            f"{old['label']} -> {s['label']}"
        )
        for k in ("Q", "E", "C", "S", "L", "R"):
            if abs(s["components"][k] - old["components"][k]) >= 0.0005:
                out.append(f"  {k}: {old['components'][k]:.3f} -> {s['components'][k]:.3f}")
        for g, v in s["gates"].items():
            if old["gates"].get(g, {}).get("pass") != v["pass"]:
                out.append(f"  gate {g}: {'pass' if v['pass'] else 'FAIL'} now")
        if old["config"] != s["config"]:
            out.append("  configuration changed")
    bare_a = {s["system"]: s for s in (a.get("bare") or {}).get("systems", []) if "score" in s}
    for s in (b.get("bare") or {}).get("systems", []):
        old = bare_a.get(s["system"])
        if old and "score" in s:
            out.append(
                f"{s['system']} (bare library): {old['score']:.1f} -> {s['score']:.1f} "
                f"({s['score'] - old['score']:+.1f}), {old['label']} -> {s['label']}"
            )
    if a.get("code_commit") != b.get("code_commit"):
        out.append(f"code {a.get('code_commit')} -> {b.get('code_commit')}")
    return out


def add_scorecard(db: DB, params: dict[str, Any]) -> int:
    """A new scorecard (partition_id, score_version, report_json, report_md); its id."""
    return int(db.q1("insert_scorecard", params)[0])


def published_row(db: DB) -> tuple | None:
    """(publication_id, scorecard_id, published_at) of the scorecard published now, or None."""
    return db.q1("published")
