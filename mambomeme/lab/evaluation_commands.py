"""The evaluation's commands: `mambo bench import/list/show/freeze/expose/retire/corpus/audit/pool/
export-batch/import-judgements/key-answers/agreement/labels`, `mambo judge`, `mambo run`, `mambo score` and
`mambo interactions`. mambomeme/cli.py registers them (BENCH_COMMANDS, COMMANDS)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import click

from mambomeme.cli_base import CONTEXT, open_library
from mambomeme.lab.evaluation import (
    LATENCY_SEARCHES,
    LATENCY_WARMUPS,
    SCORE_VERSION,
    agreement,
    audit_partition,
    audit_rows,
    batch_row,
    corpus_version_rows,
    current_set_row,
    execute_run,
    export_batch,
    import_judgements,
    import_partition,
    judge_in_terminal,
    judge_with_model,
    key_answers,
    make_batch,
    model_annotator,
    open_bare_library,
    partition_list,
    partition_row,
    pool,
    record_audit,
    resolve_partition,
    set_status,
    snapshot_corpus,
)
from mambomeme.lab.scoring import (
    add_scorecard,
    compare_reports,
    publish,
    published_row,
    report_markdown,
    rollback,
    score,
)
from mambomeme.output import MamboError, clean_line, show_path
from mambomeme.search import DEFAULT_SYSTEM

# ─────────────────────────────────────────────────────────────────────────────
# Command line
# ─────────────────────────────────────────────────────────────────────────────


@click.command(name="import")
@click.argument("path", type=click.Path(path_type=Path))
@click.option(
    "--manifest",
    type=click.Path(path_type=Path),
    help="The corpus manifest the partition declares (default: manifest.sha256 beside PATH).",
)
@click.option("--recipe", type=click.Path(path_type=Path), help="The corpus recipe (to expand exact-target groups).")
@click.option("--replace", is_flag=True, help="Replace a draft partition of the same version.")
@click.pass_context
def bench_import(ctx: click.Context, path: Path, manifest: Path | None, recipe: Path | None, replace: bool) -> None:
    """Load a benchmark partition (PATH.jsonl + PATH.meta.json, benchdata/v1/FORMAT.md) as a draft."""
    db = open_library(ctx)
    pid = import_partition(db, path, manifest=manifest, recipe=recipe, replace=replace)
    p = partition_row(db, pid)
    n = db.q1("partition_query_count", {"partition_id": pid})[0]
    click.echo(
        f"imported {p['benchmark']}/{p['version']}/{p['partition']} as partition {pid}: {n} queries, draft "
        "(`mambo bench freeze` makes it immutable)"
    )


@click.command(name="list")
@click.pass_context
def bench_list(ctx: click.Context) -> None:
    """Imported benchmark partitions and their status."""
    db = open_library(ctx)
    rows = partition_list(db)
    if not rows:
        click.echo("no benchmark partitions: `mambo bench import FILE` loads one")
    for r in rows:
        click.echo(
            f"{r['partition_id']:>3}  {r['benchmark']}/{r['version']}/{r['partition']}  {r['status']:<8} "
            f"{r['label']:<12} {r['queries']} queries, {r['families']} families, judgement set "
            f"v{r['judgement_set'] or '-'}"
        )


@click.command(name="show")
@click.argument("partition")
@click.pass_context
def bench_show(ctx: click.Context, partition: str) -> None:
    """A partition: slices, audits, judgement set and agreement."""
    db = open_library(ctx)
    pid = resolve_partition(db, partition)
    p = partition_row(db, pid)
    click.echo(
        f"{p['benchmark']}/{p['version']}/{p['partition']}: {p['status']} ({p['label']}), imported {p['imported_at']}"
    )
    for r in db.rows("partition_slices", {"partition_id": pid}):
        click.echo(f"  {r['slice']:<9} {r['queries']:>3} queries  safety {r['safety']}  multi-cue {r['multi_cue']}")
    audits: dict[str, int] = {}
    for a in audit_rows(db, pid):
        audits[a["status"]] = audits.get(a["status"], 0) + 1
    click.echo(f"  no-match audits: {audits or 'none'}")
    cur = current_set_row(db, pid)
    if cur:
        ag = agreement(db, int(cur[0]))
        shown = {k: ag[k] for k in ("pairs", "exact", "within_one", "grade_kappa_linear", "safety_kappa")}
        click.echo(f"  judgement set v{cur[1]}: {ag['status']}; agreement {json.dumps(shown)}")
        click.echo(f"  candidates by origin: {dict(db.q('set_origins', {'set_id': cur[0]}))}")
        batch = db.q1("newest_batch", {"set_id": cur[0]})[0]
        click.echo(f"  newest annotation batch: {batch or '-'}")


def _lifecycle(name: str, status: str, doc: str) -> click.Command:
    @click.command(name=name, help=doc)
    @click.argument("partition")
    @click.pass_context
    def cmd(ctx: click.Context, partition: str) -> None:
        db = open_library(ctx)
        pid = resolve_partition(db, partition)
        set_status(db, pid, status)
        click.echo(f"partition {pid} is {status}")

    return cmd


_LIFECYCLE = [
    _lifecycle("freeze", "frozen", "Freeze a draft partition: its queries and labels become immutable."),
    _lifecycle(
        "expose",
        "exposed",
        "Mark a partition exposed (its prompts or labels were seen): no later release comparison may use it.",
    ),
    _lifecycle("retire", "retired", "Retire a partition."),
]


@click.command(name="corpus")
@click.pass_context
def bench_corpus(ctx: click.Context) -> None:
    """Snapshot the library's corpus version (its manifest: every file's checksum and path)."""
    db = open_library(ctx)
    cv = snapshot_corpus(db)
    r = corpus_version_rows(db, cv)[0]
    click.echo(f"corpus version {cv}: {r['manifest_sha256']} ({r['files']} files, {r['items']} items)")


@click.command(name="audit")
@click.argument("partition")
@click.option("--qid", help="Record a reviewed audit for this no-match query.")
@click.option("--outcome", type=click.Choice(["absent", "present"]), default="absent", show_default=True)
@click.option("--annotator", help="Who reviewed it (with --qid).")
@click.option("--kind", type=click.Choice(["person", "model"]), default="person", show_default=True)
@click.option("--method", default="reviewed every servable item sharing a content word", show_default=True)
@click.pass_context
def bench_audit(
    ctx: click.Context, partition: str, qid: str | None, outcome: str, annotator: str | None, kind: str, method: str
) -> None:
    """Redo no-match audits on the current corpus version (automatic where no servable item shares a
    content word; the rest are listed for review and recorded with --qid)."""
    db = open_library(ctx)
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


@click.command(name="pool")
@click.argument("partition")
@click.option("--system", "systems", multiple=True, default=("bm25", "dense", "hybrid"), show_default=True)
@click.option("--depth", default=10, show_default=True)
@click.option("--hard-negatives", default=3, show_default=True)
@click.option("--seed", default=42, show_default=True)
@click.option(
    "--bare",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="LIBRARY",
    help="Also pool every system's top 10 on this bare library of the same corpus (`mambo add "
    "--no-sidecars`), so that the bare condition is judged too.",
)
@click.pass_context
def bench_pool(
    ctx: click.Context,
    partition: str,
    systems: tuple[str, ...],
    depth: int,
    hard_negatives: int,
    seed: int,
    bare: Path | None,
) -> None:
    """Pool the top 10 of every compared system, gold items and hard negatives into a blinded batch."""
    db = open_library(ctx)
    pid = resolve_partition(db, partition)
    bare_lib = open_bare_library(db, bare) if bare is not None else None
    try:
        r = pool(db, pid, list(systems), depth=depth, hard_negatives=hard_negatives, seed=seed, bare=bare_lib)
    finally:
        if bare_lib is not None:
            bare_lib.db.close()
    click.echo(
        f"judgement set {r['set_id']}: {r['candidates']} candidates ({r['new_candidates']} new); "
        f"annotation batch {r['batch_id'] or '-'}"
    )


@click.command(name="adjudication")
@click.argument("partition", default="dev")
@click.option("--seed", default=42, show_default=True)
@click.pass_context
def bench_adjudication(ctx: click.Context, partition: str, seed: int) -> None:
    """Make the blinded batch of candidates two graders disagree on (more than one grade apart, or on
    the safety class), for a third annotator outside the tool: export it with `mambo bench
    export-batch`, load the answers with `mambo bench import-judgements --adjudicator`."""
    db = open_library(ctx)
    pid = resolve_partition(db, partition)
    cur = current_set_row(db, pid)
    if not cur:
        raise MamboError("no judgement set yet: `mambo bench pool` first")
    with db.write():
        batch_id = make_batch(db, int(cur[0]), seed, "candidates_to_adjudicate")
    click.echo(f"adjudication batch {batch_id}" if batch_id else "nothing to adjudicate")


@click.command(name="export-batch")
@click.argument("batch_id", type=int)
@click.option("-o", "--out", type=click.Path(dir_okay=False, path_type=Path), required=True)
@click.pass_context
def bench_export_batch(ctx: click.Context, batch_id: int, out: Path) -> None:
    """Write a blinded batch as JSONL for annotators outside the tool (fill in answer.grade/safety)."""
    db = open_library(ctx)
    if not batch_row(db, batch_id):
        raise MamboError(f"no annotation batch {batch_id}")
    click.echo(f"{export_batch(db, batch_id, out)} tasks written to {show_path(out)}")


@click.command(name="import-judgements")
@click.argument("batch_id", type=int)
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--annotator", required=True)
@click.option("--kind", type=click.Choice(["person", "model"]), required=True)
@click.option("--adjudicator", is_flag=True, help="These are a third annotator's final answers.")
@click.pass_context
def bench_import_judgements(
    ctx: click.Context, batch_id: int, path: Path, annotator: str, kind: str, adjudicator: bool
) -> None:
    """Load an annotator's answers into the judgement set of BATCH. A line names its candidate by
    task id (a task of BATCH) or by key: qid and sha256 (`mambo bench key-answers`), which load into
    any pool of the same corpus; a keyed pair the pool lacks is added as an earlier-pool candidate."""
    db = open_library(ctx)
    got = import_judgements(db, batch_id, path, annotator, kind, "adjudicator" if adjudicator else "grader")
    added = f"; {got['added']} pair(s) not in the pool added as earlier-pool candidates" if got["added"] else ""
    click.echo(
        f"{got['judgements']} judgement(s) by {clean_line(annotator)} ({kind}) recorded in judgement set "
        f"v{got['set_version']} ({got['by_task']} by task id, {got['by_key']} by query id + SHA-256{added})"
    )


@click.command(name="key-answers")
@click.argument("batch_id", type=int)
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("-o", "--out", type=click.Path(dir_okay=False, path_type=Path), required=True)
@click.pass_context
def bench_key_answers(ctx: click.Context, batch_id: int, path: Path, out: Path) -> None:
    """Key answers to BATCH by query id and content SHA-256 instead of task id, so that they load into
    any later pool (`mambo bench import-judgements`). Run it on the library where BATCH was made.
    Writes one line per answer: qid, sha256, path, task, answer, reason, sorted by qid and path."""
    db = open_library(ctx)
    rows = key_answers(db, batch_id, path)
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    out.write_text(text, encoding="utf-8")
    click.echo(f"{len(rows)} answer(s) keyed by query id + SHA-256 written to {show_path(out)}")


@click.command(name="agreement")
@click.argument("partition")
@click.pass_context
def bench_agreement(ctx: click.Context, partition: str) -> None:
    """Exact and within-one agreement, linear weighted kappa (grades), kappa (safety)."""
    db = open_library(ctx)
    cur = current_set_row(db, resolve_partition(db, partition))
    if not cur:
        raise MamboError("no judgement set yet: `mambo bench pool` first")
    click.echo(json.dumps(agreement(db, int(cur[0])), indent=2))


@click.command(name="labels")
@click.argument("partition")
@click.option("-o", "--out", type=click.Path(dir_okay=False, path_type=Path), required=True)
@click.pass_context
def bench_labels(ctx: click.Context, partition: str, out: Path) -> None:
    """Export the current judgement set's final labels (and their agreement) as JSONL + JSON."""
    db = open_library(ctx)
    pid = resolve_partition(db, partition)
    cur = current_set_row(db, pid)
    if not cur:
        raise MamboError("no judgement set yet: `mambo bench pool` first")
    rows = db.rows("final_labels", {"set_id": cur[0]})
    with out.open("w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps({k: r[k] for k in ("qid", "path", "grade", "safety", "status", "origin")}) + "\n")
    p = partition_row(db, pid)
    summary = {
        "benchmark": p["benchmark"],
        "version": p["version"],
        "partition": p["partition"],
        "judgement_set": int(cur[1]),
        "labels": len(rows),
        "agreement": agreement(db, int(cur[0])),
    }
    out.with_suffix(".agreement.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    click.echo(f"{len(rows)} labels written to {show_path(out)} (+ {out.with_suffix('.agreement.json').name})")


@click.command()
@click.option("--partition", "partition", default="dev", show_default=True)
@click.option("--annotator", required=True, help="Your name, or a model annotator's name with --model.")
@click.option("--kind", type=click.Choice(["person", "model"]), default="person", show_default=True)
@click.option("--model", "use_model", is_flag=True, help="Let the named model annotator judge the batch.")
@click.option("--recipe", type=click.Path(path_type=Path), help="Corpus recipe (model annotators that read it).")
@click.option("--batch", "batch_id", type=int, help="Batch to judge (default: the newest of the current set).")
@click.option("--adjudicate", is_flag=True, help="Judge the candidates two annotators disagree on (final).")
@click.option("--seed", default=42, show_default=True)
@click.pass_context
def judge(
    ctx: click.Context,
    partition: str,
    annotator: str,
    kind: str,
    use_model: bool,
    recipe: Path | None,
    batch_id: int | None,
    adjudicate: bool,
    seed: int,
) -> None:
    """Grade a blinded batch (0-3 and a safety class per candidate); resumable."""
    db = open_library(ctx)
    pid = resolve_partition(db, partition)
    cur = current_set_row(db, pid)
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


@click.command(name="run")
@click.option("--system", default=DEFAULT_SYSTEM, show_default=True)
@click.option("--partition", default="dev", show_default=True)
@click.option("--seed", default=0, show_default=True)
@click.pass_context
def run_cmd(ctx: click.Context, system: str, partition: str, seed: int) -> None:
    """Run one system over every query of a partition and store the results."""
    db = open_library(ctx)
    pid = resolve_partition(db, partition)
    run_id = execute_run(db, system, pid, seed=seed)
    c = db.rows("run_components", {"run_id": run_id})
    rounded = {k: (round(v, 4) if isinstance(v, float) else v) for k, v in c[0].items()} if c else None
    click.echo(f"run {run_id}: {json.dumps(rounded) if c else 'stored'}")


@click.group(name="score", invoke_without_command=True, context_settings=CONTEXT)
@click.option("--partition", default="dev", show_default=True)
@click.option("--system", "systems", multiple=True, default=("bm25", "dense", "hybrid"), show_default=True)
@click.option("--searches", default=LATENCY_SEARCHES, show_default=True, help="Measured PTY searches per system.")
@click.option("--warmups", default=LATENCY_WARMUPS, show_default=True)
@click.option("--no-latency", is_flag=True, help="Skip the PTY protocol (the report is then not publishable).")
@click.option("--seed", default=42, show_default=True)
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), help="Write report.md and report.json here.")
@click.option(
    "--compare",
    nargs=2,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Compare two report.json files instead.",
)
@click.option(
    "--bare",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="LIBRARY",
    help="Also run every system on LIBRARY, the same corpus ingested with `mambo add --no-sidecars`, "
    "and report it beside the annotated score (a diagnostic, not scored).",
)
@click.pass_context
def score_cmd(
    ctx: click.Context,
    partition: str,
    systems: tuple[str, ...],
    searches: int,
    warmups: int,
    no_latency: bool,
    seed: int,
    out: Path | None,
    compare: tuple[Path, Path] | None,
    bare: Path | None,
) -> None:
    """The MMTS-Search-v1 scorecard: one row per system, gates, bootstrap interval, acceptance; with
    --bare, the bare-library (sidecars withheld) numbers beside it."""
    if ctx.invoked_subcommand:
        return
    if compare:
        a, b = (json.loads(p.read_text(encoding="utf-8")) for p in compare)
        for line in compare_reports(a, b) or ["no differences"]:
            click.echo(line)
        return
    db = open_library(ctx)
    pid = resolve_partition(db, partition)
    t0 = time.perf_counter()
    rep = score(
        db,
        db.path,
        pid,
        list(systems),
        latency_searches=searches,
        latency_warmups=warmups,
        seed=seed,
        measure_latency=not no_latency,
        progress=lambda m: click.echo(f"  {m}", err=True),
        bare=bare,
    )
    rep["elapsed_s"] = round(time.perf_counter() - t0, 1)
    md = report_markdown(rep)
    with db.write():
        sid = add_scorecard(
            db,
            {
                "partition_id": pid,
                "score_version": SCORE_VERSION,
                "report_json": json.dumps(rep, sort_keys=True, default=str),
                "report_md": md,
            },
        )
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
    db = open_library(ctx)
    pub = publish(db, scorecard_id)
    click.echo(f"scorecard {scorecard_id} published (publication {pub})")


@score_cmd.command(name="rollback")
@click.option("--reason", required=True)
@click.pass_context
def score_rollback(ctx: click.Context, reason: str) -> None:
    """Roll the current publication back (one transaction); the previous one is published again."""
    db = open_library(ctx)
    sid = rollback(db, reason)
    now = published_row(db)
    click.echo(f"scorecard {sid} rolled back; published now: {('scorecard ' + str(now[1])) if now else 'nothing'}")


@click.command(name="interactions")
@click.pass_context
def interactions(ctx: click.Context) -> None:
    """The interaction report from opt-in events (not part of the score)."""
    db = open_library(ctx)
    rows = db.rows("interaction_report")
    if not rows:
        click.echo(
            "no interaction events (they are recorded only when turned on: `mambo settings interaction_events on`)"
        )
    for r in rows:
        click.echo(json.dumps({k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.items()}))


# Registered by mambomeme/cli.py: the `mambo bench` subcommands of the protocol, and the top-level commands.
BENCH_COMMANDS = [
    bench_import,
    bench_list,
    bench_show,
    *_LIFECYCLE,
    bench_corpus,
    bench_audit,
    bench_pool,
    bench_adjudication,
    bench_export_batch,
    bench_import_judgements,
    bench_key_answers,
    bench_agreement,
    bench_labels,
]
COMMANDS = [judge, run_cmd, score_cmd, interactions]
