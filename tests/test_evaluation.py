"""The benchmark protocol and MMTS-Search-v1 scoring, on the real library file
of the fixture: immutability enforced by the database, partition overlap, exposure, audit
invalidation, blinding, judging, adjudication, kappa, metrics against an independent
implementation, gates, the cap, FAIL on a tampered manifest, comparison refusal, publication and
rollback, and the latency protocol in a real 80x24 PTY."""

from __future__ import annotations

import hashlib
import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import apsw
import pytest
from PIL import Image

from helpers import BENCH, REPO, fixture_queries, invoke, open_db, write_partition
from mambomeme.embed import get_embedder
from mambomeme.lab.evaluation import (
    SCORE_VERSION,
    SLICES,
    agreement,
    annotator_id,
    cohen_kappa,
    make_batch,
    manifest_text,
    resolve_partition,
    snapshot_corpus,
    system_row,
    working_set,
)
from mambomeme.lab.scoring import (
    BARE_HOW,
    bootstrap,
    components,
    final_score,
    gates,
    label,
    latency_schedule,
    measure_pty,
    publish,
)
from mambomeme.library import PACKAGE, QUERY_FILES, Q, load_named_queries, load_query_files
from mambomeme.output import MamboError
from mambomeme.search import DEFAULT_SYSTEMS, Searcher, config_sha, system_config


@pytest.fixture
def bench_lib(library_copy: tuple[Path, Path], tmp_path: Path) -> tuple[Path, Path, Path]:
    """(database, images, partition file): the fixture library with the fixture queries imported."""
    db, images = library_copy
    path = write_partition(tmp_path / "part", images, fixture_queries())
    invoke("--db", db, "bench", "import", path)
    return db, images, path


def grade_all(db_path: Path, set_id: int, grades: dict[tuple[int, int], tuple[int, int]] | None = None) -> None:
    """Two graders per candidate: the fixture's own relevance (unlisted 0) twice, unless `grades`
    says otherwise; safety from the item's stored class."""
    db = open_db(db_path)
    with db.write():
        a = annotator_id(db, "grader-a", "person")
        b = annotator_id(db, "grader-b", "model")
        for qid, item, safety in db.con.execute(
            "SELECT c.query_id, c.item_id, i.safety FROM judgement_candidates c JOIN items i USING (item_id) "
            "WHERE c.set_id = ?",
            (set_id,),
        ).fetchall():
            gold = db.scalar("SELECT grade FROM bench_gold WHERE query_id = ? AND item_id = ?", (qid, item)) or 0
            ga, gb = (grades or {}).get((qid, item), (gold, gold))
            for aid, g in ((a, ga), (b, gb)):
                db.q(
                    "insert_judgement",
                    {
                        "set_id": set_id,
                        "query_id": qid,
                        "item_id": item,
                        "annotator_id": aid,
                        "role": "grader",
                        "grade": g,
                        "safety": safety,
                        "batch_id": None,
                    },
                )
    db.close()


# ── Import, life cycle, overlap, exposure ─────────────────────────────────────


def test_import_list_show_and_frozen_is_immutable_in_the_database(bench_lib) -> None:
    db_path, _images, path = bench_lib
    out = invoke("--db", db_path, "bench", "list").output
    assert f"{BENCH}/1/dev" in out and "draft" in out and "63 queries" in out
    assert "no-match audits: {'valid': 15}" in invoke("--db", db_path, "bench", "show", "dev").output
    invoke("--db", db_path, "bench", "freeze", "dev")
    db = open_db(db_path)
    pid = db.scalar("SELECT partition_id FROM bench_partitions")
    for sql in (
        "INSERT INTO bench_queries(partition_id, qid, family, slice, query) VALUES (?, 'x', 'f', 'topic', 'q')",
        "UPDATE bench_queries SET query = 'changed' WHERE partition_id = ?",
        "DELETE FROM bench_queries WHERE partition_id = ?",
        "UPDATE bench_partitions SET meta = '{}' WHERE partition_id = ?",
        "DELETE FROM bench_partitions WHERE partition_id = ?",
    ):
        with pytest.raises(apsw.ConstraintError, match="immutable|cannot be deleted"):
            db.con.execute(sql, (pid,))
    with pytest.raises(apsw.ConstraintError, match="never back"):
        db.con.execute("UPDATE bench_partitions SET status = 'draft' WHERE partition_id = ?", (pid,))
    db.close()
    again = invoke("--db", db_path, "bench", "import", path, expect=2).output
    assert "already imported (frozen)" in again and "new version" in again
    assert "new version" in invoke("--db", db_path, "bench", "import", path, "--replace", expect=2).output
    invoke("--db", db_path, "bench", "expose", "dev")
    invoke("--db", db_path, "bench", "retire", "dev")
    assert "never back" in invoke("--db", db_path, "bench", "freeze", "dev", expect=2).output


def test_malformed_partition_lines_are_clear_errors(library_copy, tmp_path: Path) -> None:
    db_path, images = library_copy
    path = write_partition(tmp_path / "p", images, fixture_queries()[:3])
    path.write_text(path.read_text() + "{not json\n")
    out = invoke("--db", db_path, "bench", "import", path, expect=2).output
    assert ":4: not JSON" in out and "Traceback" not in out
    path.write_text(json.dumps({"id": "x", "family": "f", "slice": "wrong", "query": "q"}) + "\n")
    assert "unknown slice" in invoke("--db", db_path, "bench", "import", path, expect=2).output
    path.write_text(
        json.dumps({"id": "x", "family": "f", "slice": "topic", "query": "q", "relevant": {"not-in-library.png": 3}})
        + "\n"
    )
    assert "not in this library" in invoke("--db", db_path, "bench", "import", path, expect=2).output


def test_partitions_may_not_share_families_or_groups(bench_lib, tmp_path: Path) -> None:
    db_path, images, _ = bench_lib
    qs = fixture_queries()
    shared_family = [dict(qs[1], id="h-1")]  # same family as the dev query
    out = invoke(
        "--db",
        db_path,
        "bench",
        "import",
        write_partition(tmp_path / "h1", images, shared_family, partition="hidden"),
        expect=2,
    ).output
    assert "query family 'fx-fam-002'" in out and "dev 1" in out
    same_items = [dict(qs[1], id="h-1", family="hidden-fam-1")]  # new family, but judges the same memes
    out = invoke(
        "--db",
        db_path,
        "bench",
        "import",
        write_partition(tmp_path / "h2", images, same_items, partition="hidden"),
        expect=2,
    ).output
    assert "group" in out and "must not cross partitions" in out
    fresh = [{"id": "h-1", "family": "hidden-fam-1", "slice": "no-match", "query": "zeppelin harbour"}]
    invoke("--db", db_path, "bench", "import", write_partition(tmp_path / "h3", images, fresh, partition="hidden"))
    assert "hidden" in invoke("--db", db_path, "bench", "list").output


def test_an_exposed_hidden_partition_refuses_release_comparisons(bench_lib, tmp_path: Path) -> None:
    db_path, images, _ = bench_lib
    fresh = [{"id": "h-1", "family": "hidden-fam-1", "slice": "no-match", "query": "zeppelin harbour"}]
    invoke("--db", db_path, "bench", "import", write_partition(tmp_path / "h", images, fresh, partition="hidden"))
    invoke("--db", db_path, "bench", "freeze", "hidden")
    invoke("--db", db_path, "bench", "expose", "hidden")
    out = invoke("--db", db_path, "score", "--partition", "hidden", "--no-latency", expect=2).output
    assert "needs a new hidden benchmark version" in out or "need a new hidden benchmark version" in out
    db = open_db(db_path)
    pid = resolve_partition(db, "hidden")
    with db.write():
        sid = int(
            db.q1(
                "insert_scorecard",
                {"partition_id": pid, "score_version": SCORE_VERSION, "report_json": "{}", "report_md": ""},
            )[0]
        )
    with pytest.raises(MamboError, match="new hidden benchmark version"):
        publish(db, sid)
    db.close()


# ── Corpus versions and audits ───────────────────────────────────────────────


def test_a_corpus_change_invalidates_no_match_audits_until_redone(bench_lib, tmp_path: Path) -> None:
    db_path, images, path = bench_lib
    extra = tmp_path / "more"
    extra.mkdir()
    Image.new("RGB", (64, 48), (10, 200, 30)).save(extra / "green.png")
    invoke("--db", db_path, "add", "-q", extra)
    db = open_db(db_path)
    pid = resolve_partition(db, "dev")
    snapshot_corpus(db)
    assert {r["status"] for r in db.rows("audit_status", {"partition_id": pid})} == {"stale"}
    db.close()
    out = invoke("--db", db_path, "score", "--no-latency", expect=2).output
    assert "not valid on this corpus version" in out and "mambo bench audit" in out
    out = invoke("--db", db_path, "bench", "audit", "dev").output
    assert "recorded automatically" in out
    db = open_db(db_path)
    statuses = {r["qid"]: r["status"] for r in db.rows("audit_status", {"partition_id": pid})}
    db.close()
    review = [q for q, s in statuses.items() if s != "valid"]
    for q in review:  # a person reviews the ones sharing a word with some item
        invoke("--db", db_path, "bench", "audit", "dev", "--qid", q, "--annotator", "reviewer", "--outcome", "absent")
    db = open_db(db_path)
    assert {r["status"] for r in db.rows("audit_status", {"partition_id": pid})} == {"valid"}
    db.close()
    # The changed library no longer matches the manifest the partition declares.
    out = invoke("--db", db_path, "bench", "import", path, "--replace", expect=2).output
    assert "made for another corpus" in out and "not in the manifest" in out


# ── Pooling, blinding, judging, adjudication, agreement ───────────────────────


def test_the_pool_is_drawn_by_this_code_s_systems_not_a_library_s_older_ones(bench_lib) -> None:
    """A library last searched by older code holds an older configuration as a system's current
    version; the pool is drawn by this code's (the one the runs score), so none of their top 10
    is left out of it."""
    db_path, _images, _ = bench_lib
    db = open_db(db_path)
    with db.write():
        db.con.execute("DELETE FROM systems WHERE name = 'bm25'")
        older = DEFAULT_SYSTEMS["bm25"] | {"candidate_depth": 1}  # one candidate a query
        db.q(
            "insert_system",
            {
                "name": "bm25",
                "config": json.dumps(older, sort_keys=True),
                "config_sha256": config_sha(older),
                "notes": "",
            },
        )
    db.close()
    invoke("--db", db_path, "bench", "pool", "dev", "--system", "bm25")
    db = open_db(db_path)
    assert system_config(db, "bm25") == json.loads(json.dumps(DEFAULT_SYSTEMS["bm25"], sort_keys=True))
    searcher = Searcher(db, None)
    pooled = set(db.con.execute("SELECT query_id, item_id FROM judgement_candidates"))
    wide = 0
    for query_id, text in db.con.execute("SELECT query_id, query FROM bench_queries"):
        ranked = searcher.search(text, "bm25", 10, empty_rule=False)
        shown = {r.item_id for r in Searcher.empty_rule(DEFAULT_SYSTEMS["bm25"]["empty_rule"], ranked)}
        assert {(query_id, r.item_id) for r in ranked if r.item_id in shown} <= pooled
        wide += len(shown) > 1
    assert wide > 5  # the older configuration would have pooled one meme a query
    db.close()


def test_pool_is_blinded_seeded_and_judging_is_resumable(bench_lib, tmp_path: Path) -> None:
    db_path, _images, _ = bench_lib
    out = invoke("--db", db_path, "bench", "pool", "dev", "--system", "bm25").output
    assert "judgement set 1" in out and "annotation batch 1" in out
    batch = tmp_path / "batch.jsonl"
    invoke("--db", db_path, "bench", "export-batch", "1", "-o", batch)
    rows = [json.loads(x) for x in batch.read_text().splitlines()]
    assert rows and {tuple(sorted(r)) for r in rows} == {("answer", "candidate", "query", "task")}
    assert {tuple(sorted(r["candidate"])) for r in rows} == {
        ("description", "entities", "preview_webp_base64", "tags", "template", "text", "title")
    }
    text = batch.read_text()
    names = [p.name for p in _images.rglob("*.*")]
    assert "bm25" not in text and not any(n in text for n in names)  # no system, no file name
    db = open_db(db_path)
    order1 = [
        r[0]
        for r in db.con.execute(
            "SELECT query_id || '-' || item_id FROM batch_tasks WHERE batch_id = 1 ORDER BY position"
        )
    ]
    with db.write():
        b2 = make_batch(db, 1, 42, "candidates_to_grade")
    order2 = [
        r[0]
        for r in db.con.execute(
            "SELECT query_id || '-' || item_id FROM batch_tasks WHERE batch_id = ? ORDER BY position", (b2,)
        )
    ]
    db.close()
    assert order1 == order2 and order1 != sorted(order1)
    # A person judges two candidates, stops, and resumes later.
    out = invoke("--db", db_path, "judge", "--annotator", "ann", "--batch", "1", input="2s\nbad\n3u\nq\n").output
    assert "type a grade 0-3" in out and "stopped: 2 judged" in out and "\x1b[38;2" not in out
    out = invoke("--db", db_path, "judge", "--annotator", "ann", "--batch", "1", input="q\n").output
    assert f"{len(rows) - 2} candidate(s) to grade" in out
    db = open_db(db_path)
    assert (
        db.scalar(
            "SELECT count(*) FROM judgements j JOIN annotators a USING (annotator_id) "
            "WHERE a.name = 'ann' AND a.kind = 'person'"
        )
        == 2
    )
    db.close()
    # Answers from outside the tool come back by task id.
    answered = tmp_path / "answers.jsonl"
    answered.write_text(
        "".join(json.dumps({"task": r["task"], "answer": {"grade": 1, "safety": "safe"}}) + "\n" for r in rows)
    )
    out = invoke(
        "--db", db_path, "bench", "import-judgements", "1", answered, "--annotator", "outside", "--kind", "model"
    ).output
    assert f"{len(rows)} judgement(s)" in out
    assert (
        "is recorded as a model"
        in invoke("--db", db_path, "judge", "--annotator", "outside", "--batch", "1", input="q\n", expect=2).output
    )
    # The MiniLM-era cosine annotator cannot judge any more (its model is gone): a one-line refusal.
    out = invoke(
        "--db", db_path, "judge", "--annotator", "minilm-cosine-v1", "--model", "--batch", "1", expect=2
    ).output
    assert "needs all-MiniLM-L6-v2" in out and "mpnet-cosine-v1" in out and len(out.strip().splitlines()) == 1


def test_adjudication_rules(bench_lib) -> None:
    db_path, _images, _ = bench_lib
    invoke("--db", db_path, "bench", "pool", "dev", "--system", "bm25")
    db = open_db(db_path)
    cands = db.con.execute("SELECT query_id, item_id FROM judgement_candidates WHERE set_id = 1 LIMIT 4").fetchall()
    db.close()
    (c1, c2, c3, c4) = [tuple(c) for c in cands]
    grade_all(db_path, 1, {c1: (3, 2), c2: (3, 1), c3: (0, 0), c4: (2, 2)})
    db = open_db(db_path)
    with db.write():  # c3: the graders disagree on safety
        db.con.execute(
            "UPDATE judgements SET safety = 'unsafe' WHERE query_id = ? AND item_id = ? AND "
            "annotator_id = (SELECT annotator_id FROM annotators WHERE name = 'grader-b')",
            c3,
        )
    final = {
        (r[0], r[1]): r[2:]
        for r in db.con.execute(
            "SELECT query_id, item_id, grade, safety, status FROM final_judgements WHERE set_id = 1"
        )
    }
    assert final[c1][0] == 2.5 and final[c1][2] == "agreed"
    assert final[c2] == (None, None, "needs-adjudication")
    assert final[c3] == (None, None, "needs-adjudication")
    assert final[c4][0] == 2.0
    db.close()
    out = invoke("--db", db_path, "judge", "--annotator", "third", "--adjudicate", input="1s\n0u\n").output
    assert "2 candidate(s) to adjudicate" in out
    db = open_db(db_path)
    final = {
        (r[0], r[1]): r[2:]
        for r in db.con.execute(
            "SELECT query_id, item_id, grade, safety, status FROM final_judgements WHERE set_id = 1"
        )
    }
    adjudicated = sorted(v for k, v in final.items() if k in (c2, c3))
    assert adjudicated == [(0.0, "unsafe", "adjudicated"), (1.0, "safe", "adjudicated")]
    ag = agreement(db, 1)
    assert ag["annotators"][0]["role"] == "adjudicator" and {a["kind"] for a in ag["annotators"]} == {"person", "model"}
    db.close()


@pytest.mark.slow
def test_graders_outside_the_tool_then_an_adjudicator(bench_lib, tmp_path: Path) -> None:
    """Two graders grade readable shards (benchdata/grading.py), their answers are merged and loaded
    by task id; `mambo bench adjudication` batches their disagreements for a third annotator."""
    db_path, _images, _ = bench_lib
    invoke("--db", db_path, "bench", "pool", "dev", "--system", "bm25")
    batch = tmp_path / "batch1.jsonl"
    invoke("--db", db_path, "bench", "export-batch", "1", "-o", batch)
    tasks = [json.loads(x) for x in batch.read_text().splitlines()]
    script = REPO / "benchdata" / "grading.py"
    run = subprocess.run(
        [sys.executable, script, "shards", batch, "--shards", "2", "--out", tmp_path / "shards"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert run.stdout.count("candidates") == 2
    shard_text = (tmp_path / "shards" / "shard-1.txt").read_text() + (tmp_path / "shards" / "shard-2.txt").read_text()
    assert shard_text.count("\n- t") == len(tasks) and "preview" not in shard_text and "bm25" not in shard_text
    # Grader a: 2 everywhere; grader b: 2, except 0 on the first task and another safety class on the second.
    (tmp_path / "a.tsv").write_text("".join(f"{t['task']}\t2\tsafe\t\n" for t in tasks))
    (tmp_path / "b.tsv").write_text(
        "".join(
            f"{t['task']}\t{0 if i == 0 else 2}\t{'sensitive' if i == 1 else 'safe'}\tshares a word only\n"
            for i, t in enumerate(tasks)
        )
    )
    for g in ("a", "b"):
        subprocess.run(
            [sys.executable, script, "merge", batch, tmp_path / f"{g}.tsv", "-o", tmp_path / f"{g}.jsonl"],
            capture_output=True,
            text=True,
            check=True,
        )
        out = invoke(
            "--db",
            db_path,
            "bench",
            "import-judgements",
            "1",
            tmp_path / f"{g}.jsonl",
            "--annotator",
            f"grader-{g}-session",
            "--kind",
            "model",
        ).output
        assert f"{len(tasks)} judgement(s)" in out
    # A merge with a missing answer is refused, naming the gap.
    (tmp_path / "short.tsv").write_text("".join(f"{t['task']}\t1\tsafe\n" for t in tasks[1:]))
    short = subprocess.run(
        [sys.executable, script, "merge", batch, tmp_path / "short.tsv", "-o", tmp_path / "x"],
        capture_output=True,
        text=True,
    )
    assert short.returncode == 1 and "1 task(s) have no answer" in short.stderr
    assert "adjudication batch 2" in invoke("--db", db_path, "bench", "adjudication", "dev").output
    adj = tmp_path / "batch2.jsonl"
    invoke("--db", db_path, "bench", "export-batch", "2", "-o", adj)
    second = [json.loads(x) for x in adj.read_text().splitlines()]
    assert len(second) == 2  # the first two tasks: a grade two apart, and a safety class
    adj.write_text(
        "".join(json.dumps({"task": t["task"], "answer": {"grade": 1, "safety": "safe"}}) + "\n" for t in second)
    )
    invoke(
        "--db",
        db_path,
        "bench",
        "import-judgements",
        "2",
        adj,
        "--annotator",
        "adjudicator-session",
        "--kind",
        "model",
        "--adjudicator",
    )
    db = open_db(db_path)
    statuses = dict(db.con.execute("SELECT status, count(*) FROM final_judgements WHERE set_id = 1 GROUP BY status"))
    assert statuses == {"agreed": len(tasks) - 2, "adjudicated": 2}
    db.close()
    assert "nothing to adjudicate" in invoke("--db", db_path, "bench", "adjudication", "dev").output


def pool_keys(db_path: Path, set_id: int = 1) -> dict[tuple[str, str], str]:
    """{(qid, sha256): origin} of a judgement set's candidates."""
    db = open_db(db_path)
    keys = {
        (q, sha): origin
        for q, sha, origin in db.con.execute(
            "SELECT q.qid, i.sha256, c.origin FROM judgement_candidates c JOIN bench_queries q USING (query_id) "
            "JOIN items i ON i.item_id = c.item_id WHERE c.set_id = ?",
            (set_id,),
        )
    }
    db.close()
    return keys


def test_keyed_answers_load_into_another_pool(bench_lib, tmp_path: Path) -> None:
    """Answers made on one pool's batch, keyed by (qid, sha256) with `bench key-answers`, load into a
    pool drawn by other systems and another seed (every task id different); the pairs that pool lacks
    join it as earlier-pool candidates."""
    db_path, _images, _ = bench_lib
    other = tmp_path / "other.sqlite"
    shutil.copy(db_path, other)  # the same library and partition, before either pool
    invoke("--db", db_path, "bench", "pool", "dev", "--system", "bm25", "--system", "dense")
    batch = tmp_path / "batch1.jsonl"
    invoke("--db", db_path, "bench", "export-batch", "1", "-o", batch)
    tasks = [json.loads(x)["task"] for x in batch.read_text().splitlines()]
    answers = tmp_path / "grader.jsonl"
    answers.write_text(
        "".join(
            json.dumps({"task": t, "answer": {"grade": i % 4, "safety": "safe"}, "reason": f"r{i}"}) + "\n"
            for i, t in enumerate(tasks)
        )
    )
    keyed = tmp_path / "keyed.jsonl"
    out = invoke("--db", db_path, "bench", "key-answers", "1", answers, "-o", keyed).output
    assert f"{len(tasks)} answer(s) keyed" in out
    rows = [json.loads(x) for x in keyed.read_text().splitlines()]
    # Task -> key: the same answers, each under its task's query id and content SHA-256, sorted.
    assert [tuple(r) for r in rows] == [("qid", "sha256", "path", "task", "answer", "reason")] * len(tasks)
    assert [(r["qid"], r["path"]) for r in rows] == sorted((r["qid"], r["path"]) for r in rows)
    db = open_db(db_path)
    truth = {
        t: (q, sha, path)
        for t, q, sha, path in db.con.execute(
            "SELECT t.task, q.qid, i.sha256, (SELECT min(rel_path) FROM files f WHERE f.item_id = t.item_id) "
            "FROM batch_tasks t JOIN bench_queries q USING (query_id) JOIN items i ON i.item_id = t.item_id "
            "WHERE t.batch_id = 1"
        )
    }
    db.close()
    assert {r["task"]: (r["qid"], r["sha256"], r["path"]) for r in rows} == truth
    assert {r["task"]: (r["answer"], r["reason"]) for r in rows} == {
        t: ({"grade": i % 4, "safety": "safe"}, f"r{i}") for i, t in enumerate(tasks)
    }
    # Keying twice changes nothing (keyed lines are kept as they are).
    again = tmp_path / "again.jsonl"
    invoke("--db", db_path, "bench", "key-answers", "1", keyed, "-o", again)
    assert again.read_text() == keyed.read_text()

    # Another pool: bm25 alone, seed 7. No task id of the first batch names the same pair there.
    invoke("--db", other, "bench", "pool", "dev", "--system", "bm25", "--seed", "7")
    db = open_db(other)
    there = {
        t: pair
        for t, *pair in db.con.execute(
            "SELECT t.task, q.qid, i.sha256 FROM batch_tasks t JOIN bench_queries q USING (query_id) "
            "JOIN items i ON i.item_id = t.item_id WHERE t.batch_id = 1"
        )
    }
    db.close()
    assert not any(there.get(r["task"]) == [r["qid"], r["sha256"]] for r in rows)
    before = pool_keys(other)
    lacking = {(r["qid"], r["sha256"]) for r in rows} - set(before)
    assert lacking and set(before) - {(r["qid"], r["sha256"]) for r in rows}  # the pools differ both ways
    out = invoke(
        "--db", other, "bench", "import-judgements", "1", keyed, "--annotator", "grader-a", "--kind", "model"
    ).output
    assert (
        f"{len(rows)} judgement(s) by grader-a (model) recorded in judgement set v1 (0 by task id, {len(rows)} "
        f"by query id + SHA-256; {len(lacking)} pair(s) not in the pool added as earlier-pool candidates)"
    ) in out
    after = pool_keys(other)
    assert {k: v for k, v in after.items() if k not in before} == dict.fromkeys(lacking, "earlier-pool")
    db = open_db(other)
    graded = {
        (q, sha): g
        for q, sha, g in db.con.execute(
            "SELECT q.qid, i.sha256, j.grade FROM judgements j JOIN bench_queries q USING (query_id) "
            "JOIN items i ON i.item_id = j.item_id WHERE j.set_id = 1"
        )
    }
    db.close()
    assert graded == {(r["qid"], r["sha256"]): r["answer"]["grade"] for r in rows}
    # A second grader's keyed answers make every answered pair final; the labels name the new origin.
    invoke("--db", other, "bench", "import-judgements", "1", keyed, "--annotator", "grader-b", "--kind", "model")
    labels = tmp_path / "labels.jsonl"
    invoke("--db", other, "bench", "labels", "dev", "-o", labels)
    final = {(x["qid"], x["path"]): x for x in map(json.loads, labels.read_text().splitlines())}
    for r in rows:
        assert final[r["qid"], r["path"]]["grade"] == r["answer"]["grade"]
        assert final[r["qid"], r["path"]]["status"] == "agreed"
    assert sum(x["origin"] == "earlier-pool" for x in final.values()) == len(lacking)
    assert sum(x["status"] == "needs-grades" for x in final.values()) == len(set(before) - set(graded))


def test_a_keyed_answer_wins_over_a_task_id_and_unknown_keys_are_errors(bench_lib, tmp_path: Path) -> None:
    db_path, _images, _ = bench_lib
    invoke("--db", db_path, "bench", "pool", "dev", "--system", "bm25")
    db = open_db(db_path)
    (t1, q1, s1), (_t2, q2, s2) = db.con.execute(
        "SELECT t.task, q.qid, i.sha256 FROM batch_tasks t JOIN bench_queries q USING (query_id) "
        "JOIN items i ON i.item_id = t.item_id WHERE t.batch_id = 1 ORDER BY t.position LIMIT 2"
    ).fetchall()
    db.close()
    # The key names the second task's pair; the task id on the line (provenance) the first one's.
    f = tmp_path / "a.jsonl"
    f.write_text(json.dumps({"qid": q2, "sha256": s2, "task": t1, "answer": {"grade": 3, "safety": "safe"}}) + "\n")
    invoke("--db", db_path, "bench", "import-judgements", "1", f, "--annotator", "k", "--kind", "person")
    db = open_db(db_path)
    assert db.con.execute(
        "SELECT q.qid, i.sha256, j.grade FROM judgements j JOIN bench_queries q USING (query_id) "
        "JOIN items i ON i.item_id = j.item_id"
    ).fetchall() == [(q2, s2, 3)]
    db.close()
    good = json.dumps({"qid": q1, "sha256": s1, "answer": {"grade": 1, "safety": "safe"}})
    for line, says in (
        (
            json.dumps({"qid": q1, "sha256": "0" * 64, "path": "gone.png", "answer": {"grade": 1, "safety": "safe"}}),
            f"no item with SHA-256 {'0' * 64}",
        ),
        (
            json.dumps({"qid": "dev-999", "sha256": s1, "answer": {"grade": 1, "safety": "safe"}}),
            "query 'dev-999' is not in the partition of batch 1",
        ),
        (
            json.dumps({"task": "t000000000000", "answer": {"grade": 1, "safety": "safe"}}),
            "task 't000000000000' is not in batch 1",
        ),
        (
            json.dumps({"qid": q1, "answer": {"grade": 1, "safety": "safe"}}),
            "needs task (or qid and sha256) and answer.grade/answer.safety",
        ),
    ):
        f.write_text(good + "\n" + line + "\n")
        for cmd in (
            ("import-judgements", "1", f, "--annotator", "k2", "--kind", "person"),
            ("key-answers", "1", f, "-o", tmp_path / "out.jsonl"),
        ):
            if cmd[0] == "key-answers" and "sha256" in line and "task" not in line:
                continue  # key-answers keeps keyed lines as they are
            out = invoke("--db", db_path, "bench", *cmd, expect=2).output
            assert out.strip().count("\n") == 0 and f"a.jsonl:2: {says}" in out, out
    db = open_db(db_path)
    assert (
        db.scalar("SELECT count(*) FROM judgements j JOIN annotators a USING (annotator_id) WHERE a.name = 'k2'") == 0
    )
    db.close()


def test_keyed_answers_after_scoring_make_a_new_judgement_set(bench_lib, tmp_path: Path) -> None:
    db_path, _images, _ = bench_lib
    invoke("--db", db_path, "bench", "pool", "dev", "--system", "bm25")
    grade_all(db_path, 1)
    invoke("--db", db_path, "run", "--system", "bm25")
    db = open_db(db_path)
    q, sha = db.con.execute(
        "SELECT q.qid, i.sha256 FROM bench_queries q, items i WHERE NOT EXISTS (SELECT 1 FROM judgement_candidates c "
        "WHERE c.query_id = q.query_id AND c.item_id = i.item_id) ORDER BY q.qid, i.item_id LIMIT 1"
    ).fetchone()
    judged = db.scalar("SELECT count(*) FROM judgements WHERE set_id = 1")
    db.close()
    f = tmp_path / "late.jsonl"
    f.write_text(json.dumps({"qid": q, "sha256": sha, "answer": {"grade": 2, "safety": "safe"}}) + "\n")
    out = invoke(
        "--db", db_path, "bench", "import-judgements", "1", f, "--annotator", "late", "--kind", "person"
    ).output
    assert "recorded in judgement set v2" in out and "1 pair(s) not in the pool added" in out
    db = open_db(db_path)
    assert db.con.execute("SELECT run_id, scored_on, newest_set FROM runs_needing_rescore").fetchall() == [(1, 1, 2)]
    assert db.scalar("SELECT count(*) FROM judgements WHERE set_id = 1") == judged  # the scored set is unchanged
    assert db.scalar("SELECT count(*) FROM judgements WHERE set_id = 2") == judged + 1
    assert pool_keys(db_path, 2)[q, sha] == "earlier-pool" and (q, sha) not in pool_keys(db_path, 1)
    db.close()


def test_kappa_on_known_values() -> None:
    # Hand-computed: po = 3/4, pe = 1/2 -> 0.5.
    assert cohen_kappa([0, 0, 1, 1], [0, 1, 1, 1]) == pytest.approx(0.5)
    # Linear weights |i-j|/2 over 0..2: do = 0.25, de = 0.4375 -> 1 - 0.25/0.4375.
    assert cohen_kappa([0, 1, 2, 2], [0, 2, 2, 1], weighted=True, categories=[0, 1, 2]) == pytest.approx(
        1 - 0.25 / 0.4375
    )
    # Two categories: weighted and unweighted agree; perfect agreement is 1; independence ~ 0.
    a, b = [0, 1, 1, 0, 1, 1], [0, 1, 0, 0, 1, 1]
    assert cohen_kappa(a, b) == pytest.approx(cohen_kappa(a, b, weighted=True, categories=[0, 1]))
    assert cohen_kappa([0, 1, 2, 3], [0, 1, 2, 3], weighted=True, categories=[0, 1, 2, 3]) == 1.0
    assert cohen_kappa([0, 0, 1, 1], [0, 1, 0, 1]) == pytest.approx(0.0)
    # Fleiss-style textbook example (Cohen 1960 form): 50 items, 20 yes/yes, 15 no/no, 5 yes/no, 10 no/yes.
    a = ["y"] * 25 + ["n"] * 25
    b = ["y"] * 20 + ["n"] * 5 + ["y"] * 10 + ["n"] * 15
    assert cohen_kappa(a, b) == pytest.approx(0.4)


def test_new_candidates_after_judging_make_a_new_judgement_set(bench_lib) -> None:
    db_path, _images, _ = bench_lib
    invoke("--db", db_path, "bench", "pool", "dev", "--system", "bm25")
    grade_all(db_path, 1)
    invoke("--db", db_path, "run", "--system", "bm25")
    out = invoke("--db", db_path, "bench", "pool", "dev", "--system", "bm25", "--system", "dense").output
    assert "judgement set 2" in out
    db = open_db(db_path)
    assert db.con.execute("SELECT run_id, scored_on, newest_set FROM runs_needing_rescore").fetchall() == [(1, 1, 2)]
    # The old judgements were carried over; only the new candidates need grades.
    assert db.scalar("SELECT count(*) FROM judgements WHERE set_id = 2") == db.scalar(
        "SELECT count(*) FROM judgements WHERE set_id = 1"
    )
    db.close()


# ── Metrics ───────────────────────────────────────────────────────────────────


def independent_metrics(labels: dict[int, float], exact: set[int], ranked: list[int]) -> dict[str, float]:
    """Textbook formulas, written separately from the SQL views."""
    gains = [2 ** labels.get(i, 0) - 1 for i in ranked[:10]]
    dcg = sum(g / math.log2(r + 2) for r, g in enumerate(gains))
    ideal = sorted((2**g - 1 for g in labels.values() if g > 0), reverse=True)[:10]
    idcg = sum(g / math.log2(r + 2) for r, g in enumerate(ideal))
    rel = [labels.get(i, 0) >= 2 for i in ranked[:10]]
    n_rel = sum(1 for g in labels.values() if g >= 2)
    first_exact = next((r + 1 for r, i in enumerate(ranked[:10]) if i in exact), None)
    first_rel = next((r + 1 for r, x in enumerate(rel) if x), None)
    return {
        "ndcg10": dcg / idcg if idcg else 0.0,
        "exact_rr": 1 / first_exact if first_exact else 0.0,
        "hit1": float(any(rel[:1])),
        "hit5": float(any(rel[:5])),
        "hit10": float(any(rel)),
        "recall10": sum(rel) / n_rel if n_rel else 0.0,
        "rr": 1 / first_rel if first_rel else 0.0,
    }


def test_metric_views_match_an_independent_implementation(bench_lib) -> None:
    db_path, _images, _ = bench_lib
    invoke("--db", db_path, "bench", "pool", "dev", "--system", "bm25")
    # Uneven grades so the mean of two graders is sometimes fractional.
    db = open_db(db_path)
    cands = db.con.execute("SELECT query_id, item_id FROM judgement_candidates WHERE set_id = 1").fetchall()
    db.close()
    grades = {}
    for n, (q, i) in enumerate(cands):
        g = (n * 7) % 4
        grades[(q, i)] = (g, max(0, g - (n % 2)))
    grade_all(db_path, 1, grades)
    invoke("--db", db_path, "run", "--system", "bm25")
    db = open_db(db_path)
    labels: dict[int, dict[int, float]] = {}
    for q, i, g in db.con.execute("SELECT query_id, item_id, grade FROM final_judgements WHERE set_id = 1"):
        labels.setdefault(q, {})[i] = g
    checked = 0
    for m in db.rows("run_query_metrics", {"run_id": 1}):
        ranked = [
            r[0]
            for r in db.con.execute(
                "SELECT item_id FROM run_results WHERE run_id = 1 AND query_id = ? ORDER BY rank", (m["query_id"],)
            )
        ]
        exact = {
            r[0] for r in db.con.execute("SELECT item_id FROM bench_exact_targets WHERE query_id = ?", (m["query_id"],))
        }
        want = independent_metrics(labels.get(m["query_id"], {}), exact, ranked)
        for k, v in want.items():
            assert float(m[k]) == pytest.approx(v, abs=1e-9), (m["qid"], k)
        checked += bool(ranked)
    assert checked > 30
    db.close()


def test_ndcg_hand_computed_case(bench_lib) -> None:
    db_path, _images, _ = bench_lib
    db = open_db(db_path)
    pid = resolve_partition(db, "dev")
    q = db.scalar("SELECT query_id FROM bench_queries WHERE qid = 'fx-001'")
    items = [r[0] for r in db.con.execute("SELECT item_id FROM items ORDER BY item_id LIMIT 4")]
    sys_id, _v, _c = system_row(db, "bm25")
    with db.write():
        sid = int(db.q1("insert_set", {"partition_id": pid, "version": 1, "parent": None, "note": "hand"})[0])
        a, b = annotator_id(db, "h1", "person"), annotator_id(db, "h2", "person")
        for item, g in zip(items, (3, 0, 2, 2), strict=True):
            db.q("insert_candidate", {"set_id": sid, "query_id": q, "item_id": item, "origin": "gold"})
            for ann in (a, b):
                db.q(
                    "insert_judgement",
                    {
                        "set_id": sid,
                        "query_id": q,
                        "item_id": item,
                        "annotator_id": ann,
                        "role": "grader",
                        "grade": g,
                        "safety": "safe",
                        "batch_id": None,
                    },
                )
    cv = snapshot_corpus(db)
    with db.write():
        run = int(
            db.q1(
                "insert_run",
                {
                    "system_id": sys_id,
                    "partition_id": pid,
                    "set_id": sid,
                    "cv": cv,
                    "config": "{}",
                    "code_commit": "x",
                    "model_manifest": "[]",
                    "environment": "{}",
                    "seed": 0,
                },
            )[0]
        )
        db.q("insert_run_query", {"run_id": run, "query_id": q, "ms": 1.0, "error": None, "returned": 3})
        for rank, item in enumerate(items[:3], 1):  # grades 3, 0, 2 at ranks 1-3
            db.q(
                "insert_run_result",
                {
                    "run_id": run,
                    "query_id": q,
                    "rank": rank,
                    "item_id": item,
                    "score": 1.0,
                    "lex": rank,
                    "fuzzy": None,
                    "dense": None,
                    "has_preview": 1,
                    "attribution": "",
                },
            )
    m = [r for r in db.rows("run_query_metrics", {"run_id": run}) if r["query_id"] == q][0]
    # DCG = 7/1 + 0 + 3/2 = 8.5; ideal = 7 + 3/log2(3) + 3/2.
    assert m["ndcg10"] == pytest.approx(8.5 / (7 + 3 / math.log2(3) + 1.5))
    assert m["recall10"] == pytest.approx(2 / 3) and m["rr"] == 1.0 and m["hit1"] == 1
    db.close()


# ── Score, gates, cap, critical violations, report, compare, publish ──────────


def qm(
    slice_: str,
    ndcg: float,
    *,
    hit: bool = True,
    exact: float = 1.0,
    empty: bool = False,
    safe: bool = True,
    family: str = "f",
    error: str | None = None,
    safety: bool = False,
) -> dict:
    return {
        "slice": slice_,
        "ndcg10": ndcg,
        "hit10": hit,
        "exact_rr": exact,
        "has_exact": slice_ in ("entity", "quote"),
        "empty": empty,
        "safe_list": safe,
        "in_safety_subset": safety,
        "error": error,
        "family": family,
        "critical_shown": 0,
    }


def good_rows() -> list[dict]:
    rows = [qm(s, 0.9, family=f"f-{s}-{n}") for s in SLICES for n in range(10)]
    rows += [qm("topic", 0.9, safety=True, family="f-safe")]
    rows += [qm("no-match", 0.0, hit=False, empty=True, family=f"f-nm-{n}") for n in range(10)]
    return rows


def test_components_gates_cap_and_fail() -> None:
    checks = {"release_protocol": True, "publication_rollback": True, "terminal_restoration": True}
    c = components(good_rows(), 150.0, 0, 1000)
    assert c["Q"] == pytest.approx(0.9) and c["C"] == pytest.approx(1.0) and c["L"] == 1.0 and c["R"] == 1.0
    assert c["raw_score"] == pytest.approx(100 * (0.55 * 0.9 + 0.15 + 0.10 + 0.10 + 0.05 + 0.05))
    assert c["correct_empty"] == 1.0 and c["safety_hit10"] == 1.0
    score, status = final_score(c, gates(c, checks), [])
    assert status == "PASS" and score > 59 and label(score, status) == "excellent"
    # One weak slice: capped at 59, FAIL.
    rows = good_rows()
    for r in rows:
        if r["slice"] == "semantic":
            r["ndcg10"] = 0.2
    c = components(rows, 150.0, 0, 1000)
    g = gates(c, checks)
    assert not g["slice_ndcg10_min"]["pass"] and final_score(c, g, []) == (59.0, "FAIL")
    # Latency: 600 ms p95 -> L = 0.5; a p95 of 1000 ms fails its gate.
    assert components(good_rows(), 600.0, 0, 1000)["L"] == pytest.approx(0.5)
    c = components(good_rows(), 1000.0, 0, 1000)
    assert not gates(c, checks)["submit_to_render_p95_ms"]["pass"]
    # Errors: 5 of 1,025 requests (>= 0.1 %) cost R; an error is never an empty answer.
    c = components(good_rows(), 150.0, 5, 1000)
    assert c["R"] == pytest.approx(1 - (5 / (len(good_rows()) + 1000)) / 0.01)
    assert gates(c, checks)["error_rate"]["pass"]
    rows = good_rows()
    rows[-1]["error"] = "boom"
    rows[-1]["empty"] = False
    assert components(rows, 150.0, 0, 1000)["correct_empty"] == pytest.approx(9 / 10)
    assert components(rows, 150.0, 0, 1000)["R"] < 1
    # A failing protocol check fails the score; a critical violation gives 0.
    c = components(good_rows(), 150.0, 0, 1000)
    assert final_score(c, gates(c, checks | {"terminal_restoration": False}), [])[1] == "FAIL"
    assert final_score(c, gates(c, checks), ["safety: critical item shown"]) == (0.0, "FAIL")
    boot = bootstrap(good_rows(), {"p95": 150.0, "errors": 0, "n": 1000}, checks, [], n=200)
    assert boot["pass_fraction"] == 1.0 and boot["ci95"][0] <= boot["ci95"][1]


def test_latency_schedule_repeats_every_query_equally() -> None:
    warm, measured = latency_schedule(7, 1000, 100, 42)
    assert len(warm) == 100 and len(measured) == 1001 and len(measured) % 7 == 0
    assert {measured.count(i) for i in range(7)} == {143}
    assert all(a != b for a, b in zip(warm + measured, (warm + measured)[1:], strict=False))
    assert latency_schedule(7, 1000, 100, 42) == (warm, measured)


@pytest.fixture
def scored(bench_lib, tmp_path: Path) -> tuple[Path, Path, Path]:
    db_path, images, path = bench_lib
    invoke("--db", db_path, "bench", "pool", "dev", "--system", "bm25")
    grade_all(db_path, 1)
    invoke("--db", db_path, "bench", "freeze", "dev")
    return db_path, images, path


def test_score_report_tampered_manifest_compare_publish_rollback(scored, tmp_path: Path) -> None:
    db_path, _images, path = scored
    out1 = tmp_path / "r1"
    text = invoke("--db", db_path, "score", "--system", "bm25", "--no-latency", "--out", out1).output
    assert "# MMTS-Search-v1 scorecard" in text and "Not publishable" in text
    rep = json.loads((out1 / "report.json").read_text())
    row = rep["systems"][0]
    assert row["system"] == "bm25" and row["components"]["Q"] > 0.5 and not row["critical_violations"]
    assert row["status"] == "FAIL" and row["score"] <= 59  # latency unmeasured: its gate fails
    for key in ("corpus", "model_manifest", "code_commit", "hardware_runtime", "seeds", "judgements", "safety_policy"):
        assert rep[key]
    assert "publication_rollback" in rep["protocol_checks"] and rep["protocol_checks"]["publication_rollback"]
    # A tampered manifest is a critical violation: score 0, FAIL.
    manifest = path.parent / "manifest.sha256"
    manifest.write_text(manifest.read_text().replace("0", "1", 1))
    out2 = tmp_path / "r2"
    invoke("--db", db_path, "score", "--system", "bm25", "--no-latency", "--out", out2)
    rep2 = json.loads((out2 / "report.json").read_text())
    assert rep2["systems"][0]["score"] == 0 and rep2["systems"][0]["status"] == "FAIL"
    assert "artifact integrity" in rep2["systems"][0]["critical_violations"][0]
    # So is a benchmark file changed after its import.
    manifest.write_text(manifest.read_text().replace("1", "0", 1))
    path.write_text(path.read_text().replace("john cena", "john cenna", 1))
    out3 = tmp_path / "r3"
    invoke("--db", db_path, "score", "--system", "bm25", "--no-latency", "--out", out3)
    rep3 = json.loads((out3 / "report.json").read_text())["systems"][0]
    assert rep3["score"] == 0 and any("benchmark file" in v for v in rep3["critical_violations"])
    # Compare: same versions -> a list of changes; another corpus -> refused.
    out = invoke("score", "--compare", out1 / "report.json", out2 / "report.json").output
    assert "bm25:" in out and "->" in out
    other = dict(rep2, corpus=dict(rep2["corpus"], manifest_sha256="0" * 64))
    (tmp_path / "other.json").write_text(json.dumps(other))
    out = invoke("score", "--compare", out1 / "report.json", tmp_path / "other.json", expect=2).output
    assert "cannot be compared" in out and "corpus.manifest_sha256" in out
    # Publication: a report with release blockers is refused; publish/rollback are transactional.
    assert "cannot be published" in invoke("--db", db_path, "score", "publish", "1", expect=2).output
    db = open_db(db_path)
    with db.write():
        a = int(
            db.q1(
                "insert_scorecard",
                {"partition_id": 1, "score_version": SCORE_VERSION, "report_json": "{}", "report_md": "a"},
            )[0]
        )
        b = int(
            db.q1(
                "insert_scorecard",
                {"partition_id": 1, "score_version": SCORE_VERSION, "report_json": "{}", "report_md": "b"},
            )[0]
        )
    db.close()
    invoke("--db", db_path, "score", "publish", a)
    invoke("--db", db_path, "score", "publish", b)
    assert f"published now: scorecard {a}" in invoke("--db", db_path, "score", "rollback", "--reason", "t").output
    assert "published now: nothing" in invoke("--db", db_path, "score", "rollback", "--reason", "t").output
    assert "nothing to roll back" in invoke("--db", db_path, "score", "rollback", "--reason", "t", expect=2).output
    db = open_db(db_path)
    with pytest.raises(apsw.ConstraintError, match="immutable"):
        db.con.execute("UPDATE scorecards SET report_md = 'x' WHERE scorecard_id = ?", (a,))
    db.close()


def test_critical_item_shown_is_a_critical_violation(scored, tmp_path: Path) -> None:
    db_path, _images, _ = scored
    invoke("--db", db_path, "run", "--system", "bm25")
    db = open_db(db_path)
    with db.write():  # the judges say a shown item is critical (the library thought it safe)
        item = db.scalar("SELECT item_id FROM run_results WHERE rank = 1 LIMIT 1")
        db.con.execute("UPDATE judgements SET safety = 'critical' WHERE item_id = ?", (item,))
    db.close()
    out = tmp_path / "r"
    invoke("--db", db_path, "score", "--system", "bm25", "--no-latency", "--out", out)
    row = json.loads((out / "report.json").read_text())["systems"][0]
    assert row["score"] == 0 and any("critical" in v for v in row["critical_violations"])
    assert row["components"]["S"] < 1


def test_pty_latency_protocol_counts_timeouts_as_errors(fixture_library: Path) -> None:
    queries = ["john cena", "cat", "monday"]
    lat = measure_pty(fixture_library, queries, "bm25", searches=6, warmups=2, seed=1)
    assert lat["n"] == 6 and lat["errors"] == 0 and lat["terminal_restored"]
    assert sorted(qi for qi, *_ in lat["samples"]) == [0, 0, 1, 1, 2, 2]
    assert lat["p95"] is not None and lat["engine_p95"] is not None
    slow = measure_pty(fixture_library, queries, "bm25", searches=3, warmups=0, seed=1, timeout_ms=1.0)
    assert slow["errors"] == 3 and slow["p95"] == 1.0


def test_interaction_report_from_opt_in_events(library_copy) -> None:
    db_path, _ = library_copy
    assert "no interaction events" in invoke("--db", db_path, "interactions").output
    invoke("--db", db_path, "settings", "interaction_events", "on")
    db = open_db(db_path)
    with db.write():
        for kind, rank, ms in (
            ("render", None, None),
            ("preview", 2, 500.0),
            ("choose", 2, 900.0),
            ("render", None, None),
            ("render", None, None),
        ):
            db.q(
                "insert_interaction_event",
                {
                    "session": "s1",
                    "kind": kind,
                    "query": "cat",
                    "item_id": None,
                    "rank": rank,
                    "ms_since_render": ms,
                    "system": "bm25",
                    "system_version": 1,
                    "interface_version": "t",
                },
            )
    db.close()
    r = json.loads(invoke("--db", db_path, "interactions").output.splitlines()[0])
    assert r["renders"] == 3 and r["choose_rate_top10"] == pytest.approx(1 / 3, abs=1e-4)
    assert r["reciprocal_chosen_rank"] == pytest.approx(0.5 / 3, abs=1e-4) and r["mean_ms_to_choose"] == 900.0
    assert r["action_rate"] == pytest.approx(1 / 3, abs=1e-4)
    assert r["reformulation_rate"] == pytest.approx(1 / 3, abs=1e-4)
    assert r["abandonment_rate"] == pytest.approx(1 / 3, abs=1e-4)


def test_events_without_opt_in_are_a_privacy_violation(scored, tmp_path: Path) -> None:
    db_path, _images, _ = scored
    db = open_db(db_path)
    with db.write():
        db.q(
            "insert_interaction_event",
            {
                "session": "s",
                "kind": "render",
                "query": "q",
                "item_id": None,
                "rank": None,
                "ms_since_render": None,
                "system": "bm25",
                "system_version": 1,
                "interface_version": "t",
            },
        )
    db.close()
    out = tmp_path / "r"
    invoke("--db", db_path, "score", "--system", "bm25", "--no-latency", "--out", out)
    row = json.loads((out / "report.json").read_text())["systems"][0]
    assert row["score"] == 0 and any("privacy" in v for v in row["critical_violations"])


def test_copied_partition_file_from_elsewhere_keeps_working(bench_lib, tmp_path: Path) -> None:
    """The library is one file: a copy scores the same partition (its manifest path is recorded)."""
    db_path, _images, _ = bench_lib
    copy = tmp_path / "copy.sqlite"
    shutil.copy(db_path, copy)
    assert f"{BENCH}/1/dev" in invoke("--db", copy, "bench", "list").output


def test_evaluation_queries_do_not_shadow_the_tools_own(tmp_path: Path) -> None:
    tool = load_named_queries(PACKAGE / "ingest" / "pipeline.sql")
    evaluation = load_named_queries(PACKAGE / "lab" / "evaluation.sql")
    assert not set(tool) & set(evaluation)
    assert Q["finish_run"] == tool["finish_run"] and Q["finish_eval_run"] == evaluation["finish_eval_run"]
    # A name defined in two query files stops the program instead of replacing a statement.
    clash = tmp_path / "zz_clash.sql"
    clash.write_text("-- name: finish_run\nSELECT 1;\n")
    with pytest.raises(RuntimeError, match="redefines the named query 'finish_run'"):
        load_query_files([*QUERY_FILES, clash])


# ── Bare libraries (sidecars withheld) beside the annotated score ─────────────


@pytest.fixture(scope="session")
def bare_library(fixture_library: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture's images ingested a second time without their sidecars (read-only use)."""
    db = tmp_path_factory.mktemp("bare-lib") / "bare.sqlite"
    invoke("--db", db, "add", "-q", "--no-sidecars", fixture_library.parent / "images")
    return db


def score_report(db_path: Path, out: Path, *extra: str) -> dict:
    invoke("--db", db_path, "score", "--system", "bm25", "--system", "hybrid", "--no-latency", "--out", out, *extra)
    return json.loads((out / "report.json").read_text())


def test_bare_runs_are_stored_marked_and_scored_from_mapped_ids(scored, bare_library: Path, tmp_path: Path) -> None:
    db_path, _images, _ = scored
    rep = score_report(db_path, tmp_path / "r", "--bare", bare_library)
    bare = rep["bare"]
    assert (
        bare["measured"]
        and bare["model_manifest_matches"]
        and [s["system"] for s in bare["systems"]] == ["bm25", "hybrid"]
    )
    bdb = open_db(bare_library)
    sha_of_bare = dict(bdb.con.execute("SELECT item_id, sha256 FROM items").fetchall())
    # The bare library is named by its own manifest (the images' checksums and paths, sha256sum format).
    manifest = manifest_text([(r[0], r[1]) for r in bdb.q("corpus_manifest")])
    assert bare["manifest_sha256"] == hashlib.sha256(manifest.encode()).hexdigest()
    assert bdb.scalar("SELECT count(*) FROM items WHERE metadata_source <> 'none'") == 0
    db = open_db(db_path)
    runs = {r[0]: r[1:] for r in db.con.execute("SELECT run_id, library, bare_manifest_sha256, config FROM runs")}
    labels: dict[int, dict[int, float]] = {}
    for q, i, g in db.con.execute("SELECT query_id, item_id, grade FROM final_judgements WHERE set_id = 1"):
        labels.setdefault(q, {})[i] = g
    item_of_sha = dict(db.con.execute("SELECT sha256, item_id FROM items").fetchall())
    # The bare condition (mmts-clarifications): what only a sidecar withdrew or made private is left
    # out of the bare corpus: never shown by a bare run, its grades not counted.
    left_out = {i for (i,) in db.con.execute("SELECT item_id FROM items WHERE rights = 'withdrawn' OR private = 1")}
    assert left_out and bare["left_out_items"] == len(left_out)
    searcher = Searcher(bdb, get_embedder())
    for s in bare["systems"]:
        annotated, run = runs[s["annotated_run_id"]], runs[s["bare_run_id"]]
        assert annotated[:2] == ("annotated", None) and run[:2] == ("bare", bare["manifest_sha256"])
        assert run[2] == annotated[2]  # the annotated run's configuration, not the bare library's own
        ndcg: dict[str, list[float]] = {}
        unjudged = results = 0
        for q in db.rows("partition_queries", {"partition_id": 1}):
            # Search the bare library independently, map by SHA-256, score with textbook formulas.
            ranked = [
                i
                for i in (
                    item_of_sha[sha_of_bare[r.item_id]]
                    for r in searcher.search(q["query"], json.loads(run[2]), 10 + len(left_out))
                )
                if i not in left_out
            ][:10]
            stored = [
                r[0]
                for r in db.con.execute(
                    "SELECT item_id FROM run_results WHERE run_id = ? AND query_id = ? ORDER BY rank",
                    (s["bare_run_id"], q["query_id"]),
                )
            ]
            assert stored == ranked, q["qid"]
            if q["slice"] != "no-match":
                judged = {i: g for i, g in labels.get(q["query_id"], {}).items() if i not in left_out}
                want = independent_metrics(judged, set(), ranked)
                ndcg.setdefault(q["slice"], []).append(want["ndcg10"])
            results += len(ranked)
            unjudged += sum(1 for i in ranked if i not in labels.get(q["query_id"], {}))
        slices = {k: sum(v) / len(v) for k, v in ndcg.items()}
        assert s["bare"]["slices"] == pytest.approx(slices, abs=1e-4)
        assert s["bare"]["Q"] == pytest.approx(sum(slices.values()) / len(slices), abs=1e-4)
        assert s["gap"]["Q"] == pytest.approx(s["annotated"]["Q"] - s["bare"]["Q"], abs=2e-4)
        assert s["unjudged_top10"]["bare"] == {
            "results": results,
            "unjudged": unjudged,
            "share": round(unjudged / results, 4),
        }
        # What the annotated library knows (judged safety, else its sidecar class; rights; privacy)
        # about the mapped items the bare library showed.
        assert s["bare"]["critical_shown"] == db.scalar(
            "SELECT count(*) FROM run_results rr JOIN items i USING (item_id) LEFT JOIN final_judgements f "
            "ON f.set_id = 1 AND f.query_id = rr.query_id AND f.item_id = rr.item_id WHERE rr.run_id = ? "
            "AND rr.rank <= 10 AND (coalesce(f.safety, i.safety) = 'critical' OR i.rights = 'withdrawn' "
            "OR i.private = 1)",
            (s["bare_run_id"],),
        )
    # Without the sidecars some of what the fixture answers from its metadata is lost.
    assert any(s["gap"]["Q"] > 0 for s in bare["systems"])
    db.close()
    bdb.close()
    # The Markdown shows the section with both libraries and the gap, for every system.
    md = (tmp_path / "r" / "report.md").read_text()
    section = md.split("## Bare library (sidecars withheld)")[1].split("\n## ")[0]
    # The bare condition is scored exactly as the annotated one: its own scorecard and gates.
    assert "scored exactly as the annotated library" in section and "### Gates (bare)" in section
    assert "| bm25 | bare (run" in section and "| hybrid | **gap** | " in section
    for s in bare["systems"]:
        assert s["status"] == "FAIL" and s["score"] <= 59  # --no-latency: the latency gate fails, as annotated
        assert set(s["gates"]) == set(rep["systems"][0]["gates"]) and s["components"]["Q"] == s["bare"]["Q"]
    assert f"{bare['systems'][0]['bare']['Q']:.3f}" in section and "unjudged in top 10" in section


def test_bare_runs_leave_the_annotated_score_unchanged(scored, bare_library: Path, tmp_path: Path) -> None:
    db_path, _images, _ = scored
    before = score_report(db_path, tmp_path / "r1")
    assert before["bare"] == {"measured": False, "how": BARE_HOW}
    md = (tmp_path / "r1" / "report.md").read_text()
    assert "## Bare library (sidecars withheld)" in md and "Not measured" in md and "add --no-sidecars" in md
    with_bare = score_report(db_path, tmp_path / "r2", "--bare", bare_library)
    after = score_report(db_path, tmp_path / "r3")  # the bare runs are now the newest runs of each system

    def scores(rep: dict) -> list:
        return [(s["system"], s["run_id"], s["score"], s["components"], s["slices"]) for s in rep["systems"]]

    assert scores(before) == scores(with_bare) == scores(after)
    assert {s["bare_run_id"] for s in with_bare["bare"]["systems"]}.isdisjoint(s["run_id"] for s in after["systems"])
    assert [s["annotated"]["Q"] for s in with_bare["bare"]["systems"]] == [
        round(s["components"]["Q"], 4) for s in before["systems"]
    ]
    # Comparing two reports compares the annotated scores only: nothing changed.
    out = invoke("score", "--compare", tmp_path / "r1" / "report.json", tmp_path / "r2" / "report.json").output
    assert "bm25: " in out and "(+0.0)" in out and "  Q:" not in out
    # A new judgement set: the annotated runs need rescoring, the bare ones (never reused) do not.
    db = open_db(db_path)
    pid = resolve_partition(db, "dev")
    with db.write():
        working_set(db, pid, adding=True)
    stale = {r[0] for r in db.con.execute("SELECT run_id FROM runs_needing_rescore")}
    bare_runs = {r[0] for r in db.con.execute("SELECT run_id FROM runs WHERE library = 'bare'")}
    assert bare_runs and stale and not stale & bare_runs
    assert stale == {r[0] for r in db.con.execute("SELECT run_id FROM runs WHERE library = 'annotated'")}
    with pytest.raises(apsw.ConstraintError, match="CHECK"):  # a bare run always names its bare library
        db.con.execute("UPDATE runs SET bare_manifest_sha256 = NULL WHERE run_id = ?", (min(bare_runs),))
    db.close()


def test_pooling_both_conditions_leaves_no_unjudged_result_in_either_top_10(
    bench_lib, bare_library: Path, tmp_path: Path
) -> None:
    db_path, _images, _ = bench_lib
    out = invoke(
        "--db", db_path, "bench", "pool", "dev", "--system", "bm25", "--system", "hybrid", "--bare", bare_library
    ).output
    assert "judgement set 1" in out
    grade_all(db_path, 1)
    invoke("--db", db_path, "bench", "freeze", "dev")
    rep = score_report(db_path, tmp_path / "r", "--bare", bare_library)
    for s in rep["systems"]:
        assert s["unjudged_results"] == 0
    for s in rep["bare"]["systems"]:
        assert s["unjudged_top10"]["annotated"]["unjudged"] == 0 and s["unjudged_top10"]["bare"]["unjudged"] == 0
        assert s["unjudged_top10"]["bare"]["results"] > 0


def test_a_bare_library_of_another_corpus_is_refused(scored, tmp_path: Path) -> None:
    db_path, images, _ = scored
    other = tmp_path / "other"
    other.mkdir()
    shutil.copy(images / "bot-01.png", other / "bot-01.png")
    Image.new("RGB", (64, 48), (10, 200, 30)).save(other / "green.png")
    wrong = tmp_path / "wrong.sqlite"
    invoke("--db", wrong, "add", "-q", "--no-sidecars", other)

    def runs() -> int:
        db = open_db(db_path)
        try:
            return int(db.scalar("SELECT count(*) FROM runs"))
        finally:
            db.close()

    n_runs = runs()
    for bare, says in (
        (
            wrong,
            [
                "is not a bare copy of this library's corpus",
                "1 image(s) are not in this library",
                "(e.g. green.png)",
                "missing from it",
            ],
        ),
        (db_path, ["names the annotated library itself"]),
        (tmp_path / "none.sqlite", ["no bare library at"]),
    ):
        out = invoke("--db", db_path, "score", "--system", "bm25", "--no-latency", "--bare", bare, expect=2).output
        line = out.strip()
        assert "\n" not in line and "Traceback" not in line, out
        assert all(s in line for s in says), out
        assert "add --no-sidecars DIR" in line, out
    # The annotated library itself, copied elsewhere, holds its sidecars' metadata: not bare.
    annotated_copy = tmp_path / "copy.sqlite"
    shutil.copy(db_path, annotated_copy)
    out = invoke(
        "--db", db_path, "score", "--system", "bm25", "--no-latency", "--bare", annotated_copy, expect=2
    ).output.strip()
    assert "is not bare" in out and "hold sidecar metadata" in out and "\n" not in out
    assert runs() == n_runs  # refused before anything ran
