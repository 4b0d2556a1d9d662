"""Retrieval on the fixture: every route, typos and slang, "nothing matches", safety, duplicates."""

from __future__ import annotations

import dataclasses
import itertools
import json
import re
import shutil
import threading
from pathlib import Path

import apsw
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mambo
from helpers import FIXTURE, forget_vectors, invoke, open_db, run_process
from mambomeme.dense_index import int8_codes, maintain_vector_index
from mambomeme.dense_memory import InMemoryVectors
from mambomeme.embed import embed_items, get_embedder, model_id_for
from mambomeme.lab.bench import load_dev_queries
from mambomeme.library import DB
from mambomeme.query_plan import STOPWORDS, corrections, full_match, holds_query, plan_query
from mambomeme.safety_meaning import meaning_model
from mambomeme.safety_review import record_meaning_signals
from mambomeme.search import (
    DEFAULT_SYSTEM,
    DEFAULT_SYSTEMS,
    LOOKS_WEIGHT,
    WORDS_THERE_TOP,
    Result,
    Searcher,
    above_divider,
    condition_model,
    config_sha,
    evidence_classes,
    evidence_features,
    evidence_score,
    sync_systems,
)
from mambomeme.upkeep import check_library, library_status

SYSTEMS = ["bm25", "dense", "hybrid"]
# Items the policy must never show: unsafe, critical, withdrawn, private (see the fixture README).
HIDDEN = {"monkey-04.png", "chef-03.png", "cop-04.png", "coin-03.png", "cop-03.png", "pc-03.png", "mom-02.png"}


@pytest.fixture(scope="module")
def searcher(fixture_library: Path) -> Searcher:
    db = open_db(fixture_library)
    sync_systems(db)
    return Searcher(db, get_embedder())


def names(results: list[Result]) -> list[str]:
    return [Path(r.details["rel_path"]).name for r in results]


def file_names(db: DB, results: list[Result]) -> list[set[str]]:
    return [
        {Path(p).name for (p,) in db.con.execute("SELECT rel_path FROM files WHERE item_id = ?", (r.item_id,))}
        for r in results
    ]


@pytest.mark.parametrize("system", SYSTEMS)
def test_every_system_finds_john_cena(searcher: Searcher, system: str) -> None:
    top = names(searcher.search("john cena", system))[:5]
    assert sum(n.startswith("cena-") for n in top) >= 4, top


# "u cant c me" is a known miss of hybrid (ranked first but called "no match"): with all-mpnet-base-v2
# its best similarity is 0.26 ("you cant see me": 0.43) and the evidence model (EMPTY_RULES) gives it
# 0.11 against a threshold of 0.32. Reading slang in place for the dense route ("you cant see me")
# lifts it to 0.30 / 0.23 and changes nothing on dev v2 (hybrid Q 0.855 either way): not kept.
HYBRID_MISS = pytest.mark.xfail(strict=True, reason="hybrid: 'u cant c me' is called no match (see EMPTY_RULES)")


@pytest.mark.parametrize("system", ["bm25", "hybrid"])
@pytest.mark.parametrize(
    "query,expected",
    [
        ("jon ceena", "cena-"),
        ("MOTIVATON NOT FOUDN!!!", "bot-01"),
        ("u cant c me", "cena-01"),
        ("pinapple pizza debate", "pizza-03"),
        ("CoFfEe LoAdInG sCrEeN", "mug-01"),
    ],
)
def test_typos_slang_and_casing_still_find_the_meme(
    request: pytest.FixtureRequest, searcher: Searcher, query: str, expected: str, system: str
) -> None:
    if (system, query) == ("hybrid", "u cant c me"):
        request.node.add_marker(HYBRID_MISS)
    top = file_names(searcher.db, searcher.search(query, system))[:3]
    assert any(n.startswith(expected) for files in top for n in files), (system, top)


def test_semantic_query_needs_the_dense_route(searcher: Searcher) -> None:
    top = names(searcher.search("pets acting like they own the house", "dense"))[:3]
    assert any(n.startswith("cat-") for n in top), top


@pytest.mark.parametrize(
    "system,query",
    [
        *[(s, q) for s in SYSTEMS for q in ("quantum physics lecture", "zzqxv wqpz", "volcano eruption")],
        ("dense", "taylor swift concert"),
    ],
)
def test_absent_things_get_nothing_matches(searcher: Searcher, system: str, query: str) -> None:
    """(Rules are calibrated per system: CorrectEmpty is 0.70-0.85 on benchmark v1 development data.)"""
    assert searcher.search(query, system) == []


def test_no_hidden_item_ever_appears(searcher: Searcher) -> None:
    queries = [q["query"] for q in load_dev_queries(FIXTURE / "queries.jsonl")]
    queries += [
        "darlene vext",
        "quillfeather lane 555-0147",
        "rats burn that town",
        "knife slipped blood finger",
        "morris tandlewick owes me",
        "turning it off never back on",
        "group chats need an answer",
        "cyclist run over floor it",
    ]
    shown = 0
    for q in queries:
        for system in SYSTEMS:
            for rule in (True, False):
                got = set().union(*file_names(searcher.db, searcher.search(q, system, 10, empty_rule=rule)))
                shown += len(got)
                assert not got & HIDDEN, (q, system, got & HIDDEN)
    assert shown > 500  # the filter was exercised on real result lists


def test_sensitive_items_are_marked(fixture_library: Path) -> None:
    out = invoke("--db", fixture_library, "search", "--json", "-s", "bm25", "landlord cat owns the damn place").output
    rows = [json.loads(line) for line in out.splitlines()]
    cat4 = next(r for r in rows if r["path"].endswith("cat-04.png"))
    assert cat4["sensitive"] is True and cat4["safety"] == "sensitive"
    assert all(r["sensitive"] is (r["safety"] == "sensitive") for r in rows)


def test_exact_duplicates_collapse_to_one_result(searcher: Searcher) -> None:
    results = searcher.search("motivation not found error 404", "hybrid")
    shas = [r.details["sha256"] for r in results]
    assert len(shas) == len(set(shas))
    bot = next(r for r in results if r.details["rel_path"] in ("bot-01.png", "IMG_20240312_093114.png"))
    assert bot.details["duplicate_count"] == 1


def test_one_template_may_fill_the_list(searcher: Searcher) -> None:
    groups = [r.details["template_group"] for r in searcher.search("john cena", "hybrid")[:5]]
    assert len(set(groups)) == 1  # a focused query rightly returns one subject


def test_results_carry_ids_ranks_scores_and_route_ranks(fixture_library: Path) -> None:
    out = invoke("--db", fixture_library, "search", "--json", "-s", "hybrid", "coffee").output
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["rank"] for r in rows] == list(range(1, len(rows) + 1))
    assert all(rows[i]["score"] >= rows[i + 1]["score"] for i in range(len(rows) - 1))
    for r in rows:
        assert set(r["route_ranks"]) == {"lexical", "fuzzy", "dense"}
        assert isinstance(r["asset_id"], int) and r["has_preview"] is True
        assert isinstance(r["has_attribution"], bool)
    assert any(r["route_ranks"]["lexical"] for r in rows) and any(r["route_ranks"]["dense"] for r in rows)


def test_bit_quantized_dense_index_agrees_on_the_top(searcher: Searcher) -> None:
    db = searcher.db
    cfg = DEFAULT_SYSTEMS["dense"] | {"dense_index": "bit-rescore"}
    with db.write():
        db.q(
            "insert_system",
            {"name": "dense-bit-test", "config": json.dumps(cfg), "notes": "test", "config_sha256": config_sha(cfg)},
        )
    for q in ("john cena", "a yellow rubber duck", "coffee"):
        exact = searcher.search(q, "dense", empty_rule=False)
        approx = searcher.search(q, "dense-bit-test", empty_rule=False)
        # Sign bits only choose the candidates (rescored by float cosine): the top may swap with a
        # near tie (all-mpnet-base-v2, "a yellow rubber duck": 0.671 vs 0.668), never leave the top 3.
        assert approx[0].item_id in [r.item_id for r in exact[:3]]
        assert len({r.item_id for r in exact} & {r.item_id for r in approx}) >= 7


@pytest.mark.parametrize("index", ["float", "ivf", "bit-rescore", "lexical"])
def test_hidden_items_are_skipped_inside_the_vector_scan(library_copy: tuple[Path, Path], index: str) -> None:
    """The KNN asks for exactly the candidate depth: hidden items are skipped during the scan (the
    vec0 `servable` column, kept equal to the servable_items view by a trigger), not fetched and
    dropped afterwards, so a depth of 3 still gives 3 servable candidates. The lexical route ranks
    depth + (hidden count) matches before it joins the view: the same holds there."""
    db = open_db(library_copy[0])
    searcher = Searcher(db, get_embedder())
    if index == "ivf":
        maintain_vector_index(db, clusters=3)
    servable = {i for (i,) in db.con.execute("SELECT item_id FROM servable_items")}
    for table in ("item_vectors", "item_vectors_bit"):
        flagged = {i for (i,) in db.con.execute(f"SELECT item_id FROM {table} WHERE servable = 1")}
        assert flagged == servable and len(flagged) < db.scalar(f"SELECT count(*) FROM {table}")
    fields = db.con.execute("SELECT vector_id >> 2, servable FROM item_field_vectors").fetchall()
    assert fields and all(bool(ok) == (item in servable) for item, ok in fields)
    cfg = DEFAULT_SYSTEMS["dense"] | {"candidate_depth": 3, "dense_index": index, "ivf_probe": 3}
    if index == "lexical":
        cfg = DEFAULT_SYSTEMS["bm25"] | {"candidate_depth": 3}
    top = [r.item_id for r in searcher.search("john cena", cfg, empty_rule=False)]
    assert len(top) == 3
    with db.write():
        db.con.execute("UPDATE items SET safety = 'unsafe' WHERE item_id = ?", (top[0],))
    hidden = [r.item_id for r in searcher.search("john cena", cfg, empty_rule=False)]
    assert top[0] not in hidden and len(hidden) == 3
    # every kind of the hidden meme's evidence vectors (caption, picture, looks) left the scan
    kinds = db.con.execute(
        "SELECT vector_id & 3, servable FROM item_field_vectors WHERE vector_id >> 2 = ?", (top[0],)
    ).fetchall()
    assert {kind for kind, _ok in kinds} == {1, 2, 3} and not any(ok for _kind, ok in kinds)
    # The exact indexes keep the rest in order; the bit index's candidates are chosen by sign bits,
    # so the meme that replaces the hidden one may rank above the others after float rescoring.
    assert hidden[:2] == top[1:] if index != "bit-rescore" else set(top[1:]) <= set(hidden)
    with db.write():
        db.con.execute("UPDATE items SET safety = 'safe', private = 0 WHERE item_id = ?", (top[0],))
    assert [r.item_id for r in searcher.search("john cena", cfg, empty_rule=False)] == top


def test_dev_queries_quality_floor(fixture_library: Path) -> None:
    """On the fixture's development queries the default system keeps the spec's gates, except the
    semantic slice (the fixture has few paraphrase targets); it keeps dense's semantic gain over bm25."""
    report = json.loads(invoke("--db", fixture_library, "bench", "ablation", "--json").output)
    default = report[DEFAULT_SYSTEM]
    assert default["hit10"] >= 0.70 and default["correct_empty"] >= 0.6 and default["E"] >= 0.6
    assert min(v for k, v in default["ndcg_by_slice"].items() if k != "semantic") >= 0.30
    assert default["ndcg_by_slice"]["semantic"] > report["bm25"]["ndcg_by_slice"]["semantic"]


HOSTILE = st.one_of(
    st.text(max_size=200),
    st.sampled_from(
        [
            '"',
            '""',
            "'",
            "AND",
            "OR NOT",
            "NEAR(a b, 2)",
            "*",
            "-",
            ":",
            "title:cat",
            "(",
            ")",
            "^cat",
            "a + b",
            "\x00",
            "\u202e\u202dtxet",
            "😀🔥",
            "\x1b[31mred",
            "col:*",
            "{a b}",
        ]
    ),
    st.lists(
        st.sampled_from(["AND", "OR", "NOT", "NEAR", '"', "*", "(", ")", "cat", "-", ":", "\x00"]), max_size=12
    ).map(" ".join),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=HOSTILE)
def test_no_query_text_raises_on_any_route(searcher: Searcher, query: str) -> None:
    for system in SYSTEMS:
        results = searcher.search(query, system)
        assert isinstance(results, list)


@pytest.mark.parametrize("system", SYSTEMS)
def test_huge_and_nul_queries(searcher: Searcher, system: str) -> None:
    for q in ("x" * 10_000, "coffee " * 1500, "\x00" * 100, "مرحبا coffee", "\u202ecoffee"):
        assert isinstance(searcher.search(q, system), list)


def test_systems_command_lists_configurations(fixture_library: Path) -> None:
    out = invoke("--db", fixture_library, "systems").output
    assert re.search(r"^\* hybrid +v1 ", out, re.M) and "logit" not in out  # the default, marked; no coefficients
    out = invoke("--db", fixture_library, "systems", "-v").output
    for name in SYSTEMS:
        assert re.search(rf"{name} +v1 ", out)
    assert "rrf_k=60" in out and "no match: sim<" in out


def test_bench_search_reports_routes_floor_and_recall(fixture_library: Path) -> None:
    out = invoke(
        "bench",
        "search",
        "--items",
        "300",
        "--searches",
        "20",
        "--real-vectors",
        "100",
        "--oversample",
        "4",
        "--base",
        fixture_library,
        "--json",
    ).output
    row = json.loads(out)["sizes"]["300"]
    for name in ("bm25", "dense-float", "dense-bit", "hybrid-float", "hybrid-bit", "dense-bit-x4", "numpy_floor"):
        assert row[name]["n"] == 20 and row[name]["p95"] >= row[name]["p50"] > 0
    assert 0.5 <= row["bit_recall_at_10"] <= row["bit_recall_by_oversample"]["4"] <= 1.0
    # measured in a fresh search process: the model and the library, not the benchmark's builder
    assert 100 < row["rss_mb"] <= row["peak_rss_mb"]


def test_hybrid_fusion_depends_on_lexical_evidence(searcher: Searcher) -> None:
    """Hybrid's lexical route stays out when its own top results hold under half of the query's
    words (dense answers alone), and leads when they hold most of them (LEXICAL_EVIDENCE)."""
    full = searcher.search("john cena", "hybrid", 10, empty_rule=False)
    lexical = [r for r in full if r.lexical_rank is not None]
    assert lexical and full[: len(lexical)] == lexical  # every lexical result before dense-only ones
    weak = searcher.search("zeppelin quartermaster john", "hybrid", 10, empty_rule=False)
    assert weak and all(r.lexical_rank is None for r in weak)
    plain = DEFAULT_SYSTEMS["hybrid"] | {"lexical_evidence": None}
    assert any(
        r.lexical_rank is not None for r in searcher.search("zeppelin quartermaster john", plain, 10, empty_rule=False)
    )


def test_coarse_vector_index(library_copy: tuple[Path, Path]) -> None:
    """The IVF index: k-means centroids, every vector in its nearest centroid's partition (also one
    embedded after training), probing every cluster is exact, probing one still finds the top, and
    a library below the minimum size drops the index (everything back in partition 0)."""
    import numpy as np

    db = open_db(library_copy[0])
    searcher = Searcher(db, get_embedder())
    # the partitions are checked on the all-fields vectors; the evidence vectors share them (below)
    exact_cfg = DEFAULT_SYSTEMS["dense"] | {"dense_index": "float", "field_vectors": False}
    ivf = DEFAULT_SYSTEMS["dense"] | {"dense_index": "ivf", "field_vectors": False}
    queries = ("john cena", "a yellow rubber duck", "coffee", "a robot")
    exact = {q: [r.item_id for r in searcher.search(q, exact_cfg, empty_rule=False)] for q in queries}
    assert all(exact.values())
    # untrained (the fixture is far below IVF_MIN_VECTORS): one partition, the exact answer
    assert db.q1("vector_index") is None
    assert {c for (c,) in db.con.execute("SELECT DISTINCT cluster FROM item_vectors")} == {0}
    assert all([r.item_id for r in searcher.search(q, ivf, empty_rule=False)] == exact[q] for q in queries)

    assert "4 clusters" in maintain_vector_index(db, clusters=4)
    assert db.q1("vector_index")[:2] == (
        4,
        db.scalar("SELECT count(*) FROM items") + db.scalar("SELECT count(*) FROM item_field_vectors"),
    )
    assert library_status(db)["vector_index"]["clusters"] == 4
    rows = db.con.execute("SELECT item_id, cluster, embedding FROM item_vectors").fetchall()
    centroids = np.stack(
        [
            np.frombuffer(c, dtype=np.float32)
            for (c,) in db.con.execute("SELECT centroid FROM vector_centroids ORDER BY cluster")
        ]
    )
    for _item, cluster, emb in (
        rows + db.con.execute("SELECT vector_id, cluster, embedding FROM item_field_vectors").fetchall()
    ):
        assert cluster == 1 + int(np.argmax(centroids @ np.frombuffer(emb, dtype=np.float32)))
    assert len({r[1] for r in rows}) == 4
    every = DEFAULT_SYSTEMS["dense"] | {"dense_index": "float"}
    wide = every | {"dense_index": "ivf", "ivf_probe": 4}
    for q in queries:  # probing every partition, evidence vectors included, is exact too
        assert [r.item_id for r in searcher.search(q, wide, empty_rule=False)] == [
            r.item_id for r in searcher.search(q, every, empty_rule=False)
        ]
    assert db.rows("consistency")[0]["vectors_outside_the_coarse_index"] == 0
    for q in queries:
        assert [r.item_id for r in searcher.search(q, ivf | {"ivf_probe": 4}, empty_rule=False)] == exact[q]
        # one probe: the nearest centroid's partition only, ranked exactly within it
        qvec = get_embedder().encode([" ".join(plan_query(db, q).expanded)])[0]
        nearest = 1 + int(np.argmax(centroids @ qvec))
        inside = [
            i for i in exact[q] if db.scalar("SELECT cluster FROM item_vectors WHERE item_id = ?", (i,)) == nearest
        ]
        got = [r.item_id for r in searcher.search(q, ivf | {"ivf_probe": 1}, empty_rule=False)]
        assert got[: len(inside)] == inside and got
        assert {db.scalar("SELECT cluster FROM item_vectors WHERE item_id = ?", (i,)) for i in got} == {nearest}
    # a vector written after training joins its nearest centroid's partition
    item = exact["coffee"][0]
    with db.write():
        embed_items(db, [item], get_embedder(), model_id_for(db))
    cluster, emb = db.con.execute("SELECT cluster, embedding FROM item_vectors WHERE item_id = ?", (item,)).fetchone()
    assert cluster == 1 + int(np.argmax(centroids @ np.frombuffer(emb, dtype=np.float32)))
    assert db.rows("consistency")[0]["vectors_outside_the_coarse_index"] == 0
    # the library is below the minimum: the index goes, every vector back in partition 0
    assert "dropped" in maintain_vector_index(db)
    assert db.q1("vector_index") is None and library_status(db)["vector_index"] is None
    assert {c for (c,) in db.con.execute("SELECT DISTINCT cluster FROM item_vectors")} == {0}
    assert db.rows("consistency")[0]["vectors_outside_the_coarse_index"] == 0
    assert maintain_vector_index(db) is None  # nothing to do


def test_quantized_coarse_index(library_copy: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """A large library's coarse index (migrations 019-020): every vector becomes an int8 code in
    its nearest centroid's partition and the floats are deleted; probing every partition with every
    code ranked finds the float route's top 10, with similarities within 0.01; hybrid (its feedback
    step reads the codes) still answers; hidden items are skipped inside the scan; an item embedded
    since is quantized by the next maintenance; the caption-meaning signal reads the codes; `mambo
    check` verifies them; a deleted item leaves no code; and a library back under the threshold
    gets float vectors again. The fixture stands in for a large library (threshold lowered)."""
    import numpy as np

    monkeypatch.setattr("mambomeme.dense_index.QUANTIZED_MIN_VECTORS", 10)
    monkeypatch.setattr("mambomeme.dense_index.IVF_MIN_VECTORS", 10)
    db = open_db(library_copy[0])
    searcher = Searcher(db, get_embedder())
    floats = {(i << 2): e for i, e in db.con.execute("SELECT item_id, embedding FROM item_vectors")}
    floats |= dict(db.con.execute("SELECT vector_id, embedding FROM item_field_vectors"))
    every = DEFAULT_SYSTEMS["dense"] | {"dense_index": "float"}
    queries = ("john cena", "a yellow rubber duck", "coffee", "a robot")
    exact = {q: searcher.search(q, every, empty_rule=False) for q in queries}
    meaning_sql = "SELECT item_id, safety, score FROM safety_signals WHERE signal = 'meaning'"
    meaning_before = {i: (c, score) for i, c, score in db.con.execute(meaning_sql)}

    assert "4 clusters" in maintain_vector_index(db, clusters=4) and db.q1("large_vector_index") == (4,)
    assert db.scalar("SELECT count(*) FROM item_vectors") == 0 == db.scalar("SELECT count(*) FROM item_field_vectors")
    codes = {i: (c, e) for i, c, e in db.con.execute("SELECT vector_id, cluster, embedding FROM vector_codes")}
    assert codes.keys() == floats.keys() and len({c for c, _e in codes.values()}) == 4
    for vid, (_cluster, code) in codes.items():
        assert code == int8_codes(np.frombuffer(floats[vid], dtype=np.float32)[None, :])[0].tobytes()
    assert db.scalar("SELECT count(*) FROM vector_codes_items") == len([v for v in floats if v & 3 == 0])
    assert bool(db.q1("holds_vectors")[0])

    wide = DEFAULT_SYSTEMS["dense"] | {"dense_index": "ivf", "large_probe": 4, "codes_k": 4096, "codes_rescore": 10_000}
    for q in queries:
        got = searcher.search(q, wide, empty_rule=False)
        assert {r.item_id for r in got} == {r.item_id for r in exact[q]} and len(got) == 10
        want = {r.item_id: r.similarity for r in exact[q]}
        assert [r.similarity for r in got] == pytest.approx([want[r.item_id] for r in got], abs=0.01)
    # the default probe (LARGE_PROBE_SHARE of 4 partitions: 1) still finds the exact top, a float
    # route asked of a library with codes only is served by the codes, and hybrid (dense feedback
    # over the candidates' codes) answers with the same top
    default = DEFAULT_SYSTEMS["dense"] | {"dense_index": "ivf"}
    for q in queries:
        assert [r.item_id for r in searcher.search(q, every, empty_rule=False)] == [
            r.item_id for r in searcher.search(q, default, empty_rule=False)
        ]
    top = searcher.search("john cena", default, empty_rule=False)
    assert top and top[0].item_id == exact["john cena"][0].item_id
    assert searcher.search("john cena", "hybrid")[0].item_id == top[0].item_id
    # the search screen's in-memory matrix declines a quantized library: the codes answer
    memory = InMemoryVectors(library_copy[0])
    memory.start()
    memory.wait(60)
    assert memory.get(db) is None
    held = Searcher(db, get_embedder(), vectors=memory).search("john cena", default, empty_rule=False)
    assert [r.item_id for r in held] == [r.item_id for r in top]

    first = top[0].item_id
    with db.write():
        db.con.execute("UPDATE items SET safety = 'unsafe' WHERE item_id = ?", (first,))
    assert db.scalar("SELECT count(*) FROM vector_codes WHERE vector_id >> 2 = ? AND servable = 1", (first,)) == 0
    assert first not in {r.item_id for r in searcher.search("john cena", wide, empty_rule=False)}
    with db.write():
        db.con.execute("UPDATE items SET safety = 'safe' WHERE item_id = ?", (first,))
    assert first in {r.item_id for r in searcher.search("john cena", wide, empty_rule=False)}

    # the caption-meaning signal scores the codes as it scored the floats
    with db.write():
        ids = [i for (i,) in db.con.execute("SELECT item_id FROM items")]
        assert len(record_meaning_signals(db, ids)) == len(meaning_before)
    # An int8 code moves a score by a few thousandths: the scores agree to 0.01, and so do the classes
    # of every caption not within that of a bar (one may sit on a bar: a class is a cut of the score).
    bars = (meaning_model().unsafe_bar, meaning_model().sensitive_bar)
    meaning_after = {i: (c, score) for i, c, score in db.con.execute(meaning_sql)}
    assert meaning_after.keys() == meaning_before.keys()
    for i, (cls, score) in meaning_before.items():
        assert meaning_after[i][1] == pytest.approx(score, abs=0.01)
        if all(abs(score - bar) > 0.01 for bar in bars):
            assert meaning_after[i][0] == cls, i

    # `mambo check` verifies each code against its checksum
    problems, _notes = check_library(db, verify_files=False)
    assert problems == []
    code = bytearray(codes[first << 2][1])
    code[0] = (code[0] + 1) % 128
    with db.write():  # (vec0 updates no int8 column in place)
        db.con.execute("DELETE FROM vector_codes WHERE vector_id = ?", (first << 2,))
        db.q(
            "insert_vector_code",
            {"vector_id": first << 2, "cluster": codes[first << 2][0], "code": bytes(code), "servable": 1},
        )
    problems, _notes = check_library(db, verify_files=False)
    assert any(p.startswith("1 int8 code(s) differ from their stored checksum (items " + str(first)) for p in problems)

    # an item embedded since (new float vector, its checksum differs) gets its codes again, and
    # keeps them only
    with db.write():
        db.con.execute("UPDATE vector_codes_items SET vector_sha256 = 'stale' WHERE item_id = ?", (first,))
        db.q("insert_vector", {"item_id": first, "embedding": floats[first << 2]})
    assert "int8 codes of 1 items" in maintain_vector_index(db)
    assert db.scalar("SELECT count(*) FROM item_vectors") == 0
    assert check_library(db, verify_files=False)[0] == []
    assert first in {r.item_id for r in searcher.search("john cena", wide, empty_rule=False)}
    assert maintain_vector_index(db) is None  # nothing to do
    # a deleted item leaves no code
    with db.write():
        db.con.execute("DELETE FROM items WHERE item_id = ?", (first,))
    assert db.scalar("SELECT count(*) FROM vector_codes WHERE vector_id >> 2 = ?", (first,)) == 0
    assert db.scalar("SELECT count(*) FROM vector_codes_items WHERE item_id = ?", (first,)) == 0

    # back under the threshold (the real one): the codes go, float vectors (from the codes) answer
    monkeypatch.undo()
    assert "with int8 codes" not in maintain_vector_index(db, clusters=4)
    assert db.scalar("SELECT count(*) FROM vector_codes") == 0 and db.q1("large_vector_index") is None
    assert db.scalar("SELECT count(*) FROM item_vectors") == len([v for v in floats if v & 3 == 0]) - 1
    again = searcher.search("a yellow rubber duck", every, empty_rule=False)
    assert len(again) == 10 and again[0].item_id == next(
        r.item_id for r in exact["a yellow rubber duck"] if r.item_id != first
    )


def test_the_dense_route_runs_on_a_second_connection_with_the_same_answer(fixture_library: Path) -> None:
    db = open_db(fixture_library)
    parallel, serial = Searcher(db, get_embedder()), Searcher(db, get_embedder(), parallel=False)
    for q, system in itertools.product(
        ("john cena", "pets acting like they own the house", "coffee", "u cant c me", "zzzz qqqq"), ("hybrid", "dense")
    ):
        a, b = parallel.search(q, system), serial.search(q, system)
        assert [(r.item_id, r.lexical_rank, r.dense_rank, r.similarity) for r in a] == [
            (r.item_id, r.lexical_rank, r.dense_rank, r.similarity) for r in b
        ]
    reader = db.reader()
    # one reader connection and one thread per library, however many searchers and searches (the
    # TUI makes a Searcher per query: a connection each once mapped the file 1,100 times over)
    threads = threading.active_count()
    for _ in range(30):
        Searcher(db, get_embedder()).search("coffee", "hybrid")
    assert db.reader() is reader and threading.active_count() == threads
    db.close()  # closes the reader connection and its thread too
    assert db._reader is None
    with pytest.raises(apsw.ConnectionClosedError):
        reader[0].con.execute("SELECT 1")


def _same_ranking(a: list[Result], b: list[Result]) -> None:
    """Equal rankings, except that two items whose similarities differ by float rounding alone
    (< 1e-6: numpy's BLAS and sqlite-vec sum in another order) may trade places."""
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        if x.item_id != y.item_id:
            assert x.similarity is not None and y.similarity is not None
            assert abs(x.similarity - y.similarity) < 1e-6, (x, y)
        else:
            assert (x.lexical_rank, x.dense_rank) == (y.lexical_rank, y.dense_rank)
            assert x.similarity == pytest.approx(y.similarity, abs=1e-6)
            assert (x.all_similarity is None) == (y.all_similarity is None)


def test_vectors_held_in_memory_rank_as_the_sql_scan(fixture_library: Path) -> None:
    """The search screen's dense route (dense_memory.py) gives the SQL scan's ranking."""
    db = open_db(fixture_library)
    vectors = InMemoryVectors(fixture_library)
    vectors.start()
    assert vectors.wait() and vectors.loads == 1
    sql, memory = Searcher(db, get_embedder()), Searcher(db, get_embedder(), vectors=vectors)
    queries = [json.loads(line)["query"] for line in (FIXTURE / "queries.jsonl").read_text().splitlines() if line]
    for q, system in itertools.product([*queries, "zzzz qqqq", "someone who is sad"], ("hybrid", "dense")):
        _same_ranking(sql.search(q, system, 20, empty_rule=False), memory.search(q, system, 20, empty_rule=False))
    assert vectors.loads == 1  # nothing changed: read once
    db.close()


@pytest.mark.slow
def test_vectors_held_in_memory_follow_the_library(library_copy: tuple[Path, Path]) -> None:
    """Another process hides a meme: the held vectors never show it, and are read again."""
    db_path, images = library_copy
    db = open_db(db_path)
    vectors = InMemoryVectors(db_path)
    vectors.start()
    assert vectors.wait()
    searcher = Searcher(db, get_embedder(), vectors=vectors)
    query = "explained the bug to the duck"
    duck = db.scalar("SELECT item_id FROM library WHERE path = 'duck-01.png'")
    assert duck in [r.item_id for r in searcher.search(query, "dense")]
    proc = run_process("--db", db_path, "safety", "set", images / "duck-01.png", "unsafe", "--by", "alex")
    assert proc.returncode == 0, proc.stderr
    assert duck not in [r.item_id for r in searcher.search(query, "dense")]  # the SQL route, while it reloads
    assert vectors.wait() and vectors.loads == 2
    assert duck not in vectors.get(db).ids.tolist()
    assert duck not in [r.item_id for r in searcher.search(query, "dense")]
    # a write that changes neither vectors nor what may be shown (a setting) reads nothing again
    assert run_process("--db", db_path, "settings", "interaction_events", "on").returncode == 0
    searcher.search(query, "dense")
    assert vectors.wait() and vectors.loads == 2
    db.close()


def test_words_in_most_of_the_library_stay_out_of_the_match(searcher: Searcher) -> None:
    """BM25 gives a word in over half the documents no weight (FTS5 clamps its IDF to 1e-6), so
    it is not matched (FTS5 would score most of the library for it); alone, it still is."""
    db = searcher.db
    documents = db.scalar("SELECT documents FROM vocabulary_size")
    assert documents == db.scalar("SELECT count(*) FROM servable_items")  # what a search may show
    common = [
        t
        for (t, n) in db.con.execute("SELECT term, docs FROM vocabulary ORDER BY docs DESC")
        if n * 2 > documents and t.isalpha() and t not in STOPWORDS
    ]
    rare = db.scalar("SELECT term FROM vocabulary WHERE docs = 1 AND term GLOB '[a-z][a-z][a-z]*' LIMIT 1")
    assert common and rare
    plan = plan_query(db, f"{common[0]} {rare}")
    assert plan.word_match == f'"{rare}"' and common[0] in plan.content
    assert plan_query(db, common[0]).word_match == f'"{common[0]}"'
    assert searcher.search(common[0], "bm25", empty_rule=False)


def test_hidden_and_servable_items_partition_the_library(searcher: Searcher) -> None:
    db = searcher.db
    hidden = {i for (i,) in db.con.execute("SELECT item_id FROM hidden_items")}
    servable = {i for (i,) in db.con.execute("SELECT item_id FROM servable_items")}
    assert hidden and not hidden & servable
    assert hidden | servable == {i for (i,) in db.con.execute("SELECT item_id FROM items")}
    plan = " ".join(r[3] for r in db.con.execute("EXPLAIN QUERY PLAN SELECT count(*) FROM hidden_items"))
    assert "items_hidden" in plan  # counted from the partial index, not a scan of items


# ── Queries as people type them, and "no match" ─────────────────────


@pytest.mark.parametrize("query", ["someone who is sad", "zorblax the destroyer meme", "morgan freeman pic"])
def test_what_the_library_does_not_hold_is_no_match(fixture_library: Path, query: str) -> None:
    # The demo fixture has no sad meme, no zorblax, no morgan freeman: the default system says so.
    out = invoke("--db", fixture_library, "search", query, expect=1)
    assert out.stdout == "" and out.stderr.strip() == "no match", out.output
    got = invoke("--db", fixture_library, "search", "--json", query, expect=1).stdout
    assert [json.loads(x) for x in got.splitlines()] == [{"query": query, "no_match": True}]


def test_a_real_english_word_is_never_rewritten_into_another(searcher: Searcher) -> None:
    # "sad" is not in the fixture's vocabulary and "said"/"say" are one edit away: still left alone.
    plan = plan_query(searcher.db, "someone who is sad")
    assert plan.alternatives["sad"] == [] and "said" not in plan.expanded and "sad" in plan.unknown
    for word in ("planet", "kidney", "elbow"):
        assert plan_query(searcher.db, word).alternatives[word] == []
    # A misspelling that is no English word is corrected, at any letter (not only after the first).
    assert ["cena"] in plan_query(searcher.db, "kena").alternatives["kena"]
    assert ["cena"] in plan_query(searcher.db, "jon ceena").alternatives["ceena"]


def test_filler_words_are_not_content(searcher: Searcher) -> None:
    for query, content in (("cat meme", ["cat"]), ("funny monday memes pic", ["monday"]), ("memes", ["memes"])):
        plan = plan_query(searcher.db, query)
        assert plan.content == content, query
    plan = plan_query(searcher.db, "cat meme")
    assert '"meme"' not in plan.word_match and plan.dense_text == "cat"
    # A meme whose text says "meme" is no evidence for a request that only ends in "meme".
    assert invoke("--db", searcher.db.path, "search", "zorblax meme", expect=1).stderr.strip() == "no match"


def test_corrections_prefer_frequent_words_over_once_seen_noise(library_copy: tuple[Path, Path]) -> None:
    db_path, _images = library_copy
    db = open_db(db_path)
    with db.write():  # OCR noise seen once beside a word many memes hold
        db.con.execute("INSERT INTO vocabulary(term, docs) VALUES ('cenx', 1)")
    assert corrections(db, "cenz") == ["cena"]  # both one edit away: the frequent one wins
    assert corrections(db, "cenx") == ["cena"]  # a once-seen word does not block its own correction
    plan = plan_query(db, "cenx")
    assert ["cena"] in plan.alternatives["cenx"]
    db.close()


def test_two_typos_in_a_long_word_english_does_not_know_are_corrected(library_copy: tuple[Path, Path]) -> None:
    """ "motvaton" (two letters dropped) is two edits from the fixture's "motivation" and one from
    nothing: it is corrected, and the default system finds the meme by it. English words the user
    meant, words under 7 letters and another first letter are left alone (queries.corrections)."""
    db_path, _images = library_copy
    db = open_db(db_path)
    assert corrections(db, "motvaton") == ["motivation"]
    assert corrections(db, "motvaton", two_edits=False) == []
    with db.write():  # two edits from "frosty" and "mordor"
        db.con.execute("INSERT OR REPLACE INTO vocabulary(term, docs) VALUES ('front', 3), ('mirror', 3)")
    assert plan_query(db, "frosty", two_edits=True).alternatives["frosty"] == []  # English: meant as typed
    assert corrections(db, "mordor") == []  # 6 letters: two edits make it another word
    assert corrections(db, "zotivaton") == corrections(db, "mitivaton") == []  # the first two letters are kept
    plan = plan_query(db, "motvaton not found", two_edits=True)
    assert plan.alternatives["motvaton"] == [["motivation"]] and plan.corrected == ["motvaton"]
    db.close()
    out = invoke("--db", db_path, "search", "--json", "motvaton not found").output
    rows = [json.loads(x) for x in out.splitlines()]
    assert rows and "motivation" in rows[0]["ocr_text"].lower(), rows[:2]


def test_the_dense_route_reads_each_alternative_beside_its_word(searcher: Searcher) -> None:
    # an alias's words and a correction follow the word they stand for, as a person would read it
    assert plan_query(searcher.db, "ngl jon ceena meme").dense_text == "ngl not gonna lie jon on john ceena cena"


def test_a_known_template_the_folder_lacks_is_no_match_until_it_holds_one(library_copy: tuple[Path, Path]) -> None:
    """People ask for famous memes by name. The catalogue knows the names; the library knows which
    templates its memes are of. The fixture holds no "Distracted Boyfriend" meme (its captions do
    hold "boyfriend"-free text the dense route still ranks), so the default system says so; once a
    meme is labelled with that template, the same query finds it, and hidden, it is absent again."""
    db_path, images = library_copy
    db = open_db(db_path)
    for query, named in (
        ("distracted boyfriend meme", ["Distracted Boyfriend"]),
        ("drake meme", ["Drake Hotline Bling", "Tuxedo Winnie The Pooh"]),  # a name-like word
        ("hide the pain harold pic", ["Hide the Pain Harold"]),
        ("sad meme", []),
        ("brain meme", []),
        ("john cena", []),
    ):  # common words name nothing
        assert plan_query(db, query).absent_templates == named, query
    # Without the rule the list is not empty: the evidence model, not an empty ranking, says "no match".
    searcher = Searcher(db, get_embedder())
    raw = searcher.search("distracted boyfriend meme", "hybrid", 10, empty_rule=False)
    assert raw and raw[0].query is not None and raw[0].query.absent_template
    db.close()
    assert invoke("--db", db_path, "search", "distracted boyfriend meme", expect=1).stderr.strip() == "no match"
    invoke("--db", db_path, "label", images / "think-03.png", "--template", "Distracted Boyfriend", "--group", "item")
    db = open_db(db_path)
    assert plan_query(db, "distracted boyfriend meme").absent_templates == []
    db.close()
    out = invoke("--db", db_path, "search", "--json", "distracted boyfriend meme").output
    rows = [json.loads(x) for x in out.splitlines()]
    assert rows and rows[0]["path"].endswith("think-03.png"), rows[:3]
    invoke("--db", db_path, "safety", "set", str(rows[0]["meme_id"]), "unsafe", "--by", "test")
    # withheld: "no match" says how many memes the policy keeps back, never which
    said = invoke("--db", db_path, "search", "distracted boyfriend meme", expect=1)
    assert (
        said.stdout == ""
        and said.stderr.strip()
        == "no match (1 meme that holds these words is withheld: private, withdrawn or unsafe; see `mambo safety`)"
    )
    assert "think-03" not in said.output


def test_a_word_only_a_correction_matched_is_weaker_evidence(searcher: Searcher) -> None:
    # "jon ceena": "ceena" is unknown and corrected to "cena"; "jon" too ("john" one edit away).
    plan = plan_query(searcher.db, "jon ceena")
    assert "ceena" in plan.corrected and "ceena" not in plan.unknown
    # A word the library holds is not "corrected", and neither is one matched by an alias.
    plan = plan_query(searcher.db, "john cena")
    assert plan.corrected == [] and plan.unknown == []


def test_a_bare_library_answers_no_match_by_the_bare_model(fixture_library: Path, tmp_path: Path) -> None:
    """A library whose memes no sidecar described (a downloads folder) gets the "no match" model
    fitted on the bare library; the annotated fixture gets the annotated one (EMPTY_RULES)."""
    images = tmp_path / "images"
    images.mkdir()
    for name in ("cena-01.png", "cat-01.png", "think-03.png"):
        shutil.copy(fixture_library.parent / "images" / name, images / name)
    bare = tmp_path / "bare.sqlite"
    invoke("--db", bare, "add", "-q", "--no-sidecars", images)
    rule = DEFAULT_SYSTEMS["hybrid"]["empty_rule"]
    for path, described, model in ((bare, 0.0, rule["bare"]), (fixture_library, 0.9, rule)):
        db = open_db(path)
        searcher = Searcher(db, get_embedder())
        raw = searcher.search("zorblax meme", "hybrid", 10, empty_rule=False)
        assert raw, path
        q = raw[0].query
        assert q is not None and (q.described == 0.0 if described == 0.0 else q.described > described)
        assert condition_model(rule, q) is model
        # the list is emptied exactly when the condition's model says so
        assert (searcher.search("zorblax meme", "hybrid") == []) == (
            evidence_score(model, evidence_features(raw)) < model["threshold"]
        )
        db.close()
    assert "bare (described < 0.5)" in invoke("--db", bare, "systems", "-v").output


def test_the_bare_models_weigh_evidence_by_its_meaning() -> None:
    """The bare "no match" models (fitted on real captions: benchdata/experiments/nomatch_real.py)
    hold only features whose weight has the sign its meaning gives: similarity, its margin, word
    coverage and a full match say the folder holds an answer; unknown words, words only a typo
    correction stands in for, and a famous template named that no meme here is, say it does not."""
    for system in ("hybrid", "dense"):
        weights = DEFAULT_SYSTEMS[system]["empty_rule"]["bare"]["weights"]
        assert {k for k, v in weights.items() if v > 0} == {"similarity", "margin", "coverage", "full"}, system
        assert {k for k, v in weights.items() if v < 0} == {"unknown", "corrected", "absent"}, system


def test_the_evidence_model_is_the_systems_no_match_rule(fixture_library: Path) -> None:
    out = invoke("--db", fixture_library, "systems", "-v").output
    assert re.search(r"hybrid +v", out) and "P(answerable)<" in out and "unknown" in out
    assert re.search(r"bm25 +v", out) and "no match: sim<" in out


@pytest.mark.slow
def test_an_item_is_as_similar_as_its_best_evidence_vector(fixture_library: Path) -> None:
    """Beside its all-fields vector, an item has one vector per non-empty evidence field whose text
    no earlier vector holds (caption: its OCR text; picture: template, labels, picture description;
    looks: the description alone), and the dense route scores it by the best of them, a looks
    vector's similarity x LOOKS_WEIGHT: recomputed here from the stored vectors, for the whole
    ranking."""
    import numpy as np

    from mambomeme.embed import CAPTION, LOOKS, PICTURE, embed_text, field_texts

    db = open_db(fixture_library)
    searcher = Searcher(db, get_embedder())
    vecs: dict[int, list] = {}
    for item, emb in db.con.execute("SELECT item_id, embedding FROM item_vectors"):
        vecs.setdefault(item, []).append((np.frombuffer(emb, dtype=np.float32), 1.0))
    kinds: dict[int, set[int]] = {}
    for vid, emb in db.con.execute("SELECT vector_id, embedding FROM item_field_vectors"):
        vecs[vid >> 2].append((np.frombuffer(emb, dtype=np.float32), LOOKS_WEIGHT if vid & 3 == LOOKS else 1.0))
        kinds.setdefault(vid >> 2, set()).add(vid & 3)
    for item, title, template, entities, tags, description, ocr in db.con.execute(
        "SELECT item_id, title, template_text, entities, tags, description, ocr_text FROM item_effective"
    ):
        texts = field_texts(template, json.loads(tags), description, ocr)
        seen, want = {embed_text(title, template, json.loads(entities), json.loads(tags), description, ocr)}, set()
        for k in (CAPTION, PICTURE, LOOKS):
            if texts[k] and texts[k] not in seen:
                seen.add(texts[k])
                want.add(k)
        assert kinds.get(item, set()) == want
    assert sum(CAPTION in k for k in kinds.values()) > 40 and sum(PICTURE in k for k in kinds.values()) > 10
    assert sum(LOOKS in k for k in kinds.values()) > 10
    cfg = DEFAULT_SYSTEMS["dense"] | {"dense_index": "float"}
    servable = {i for (i,) in db.con.execute("SELECT item_id FROM servable_items")}
    for q in ("john cena", "a yellow rubber duck", "when the code works on the first try"):
        qvec = get_embedder().encode([plan_query(db, q).dense_query])[0]
        best = {item: max(float(v @ qvec) * w for v, w in vs) for item, vs in vecs.items() if item in servable}
        want = sorted(best, key=lambda i: -best[i])[:10]
        got = searcher.search(q, cfg, empty_rule=False)
        assert [r.item_id for r in got] == want
        assert all(abs(r.similarity - best[r.item_id]) < 1e-4 for r in got)
        alone = searcher.search(q, cfg | {"field_vectors": False}, empty_rule=False)
        assert all(r.similarity <= best[r.item_id] + 1e-6 for r in alone)


def test_a_library_embedded_by_an_older_recipe_is_embedded_again(library_copy: tuple[Path, Path]) -> None:
    """A library from before the evidence vectors (schema 10) has none: the next `mambo add` embeds
    every item under the current text recipe, and search works before and after."""
    db_path, images = library_copy
    db = open_db(db_path)
    before = db.scalar("SELECT count(*) FROM item_field_vectors")
    with db.write():
        db.con.execute("DELETE FROM item_field_vectors")
        db.con.execute("UPDATE embedding_models SET text_recipe = 'v2: an older recipe'")
    hits = invoke("--db", db_path, "search", "--json", "john cena").output
    assert "cena" in hits.lower()
    invoke("--db", db_path, "add", "-q", images)
    assert db.scalar("SELECT count(*) FROM item_field_vectors") == before > 0
    recipes = {
        r
        for (r,) in db.con.execute(
            "SELECT DISTINCT m.text_recipe FROM item_embeddings e JOIN embedding_models m USING (model_id)"
        )
    }
    assert len(recipes) == 1 and recipes.pop().startswith("v4")
    assert not any(db.rows("consistency")[0].values())


@pytest.mark.parametrize(
    ("query", "stem"),
    [
        ("a man hammering metal in a forge", "cena-"),
        ("a bird from antarctica with orange feet", "peng-"),
        ("a monkey with a cross for an eye", "monkey-"),
    ],
)
def test_a_paraphrased_picture_is_found_by_its_picture_vector(searcher: Searcher, query: str, stem: str) -> None:
    """The picture vector (template, labels, description without the caption) gives a paraphrase
    of what a meme shows a clearly higher similarity than the all-fields vector, where the caption
    dilutes the description: the template's memes fill the dense top 3."""
    cfg = DEFAULT_SYSTEMS["dense"]
    best = searcher.search(query, cfg, empty_rule=False)
    alone = {r.item_id: r.similarity for r in searcher.search(query, cfg | {"field_vectors": False}, empty_rule=False)}
    assert all(n.startswith(stem) for n in names(best[:3]))
    assert all(r.similarity >= alone.get(r.item_id, -1.0) + 0.04 for r in best[:3])
    assert names(searcher.search(query, "hybrid", empty_rule=False)[:1])[0].startswith(stem)


def test_a_library_whose_vectors_another_model_made_says_so_and_is_embedded_again(
    library_copy: tuple[Path, Path],
) -> None:
    """After migration 015 (all-mpnet-base-v2) an older library has no vectors: `mambo status` and
    `mambo search` say how many memes wait, search still finds them by their words, and the next
    `mambo add` embeds every one with the current model."""
    db_path, images = library_copy
    items = forget_vectors(db_path)
    db = open_db(db_path)
    assert f"note      {items} memes wait to be embedded" in invoke("--db", db_path, "status").output
    out = CliRunner().invoke(mambo.cli, ["--db", str(db_path), "search", "john cena"])
    assert out.exit_code == 0 and f"note: {items} memes wait to be embedded" in out.stderr
    assert "cena" in out.stdout.lower()
    invoke("--db", db_path, "add", "-q", images)
    assert "wait to be embedded" not in invoke("--db", db_path, "status").output
    assert db.scalar("SELECT count(*) FROM item_vectors") == items
    assert not any(db.rows("consistency")[0].values())


@pytest.mark.parametrize("system", SYSTEMS)
@pytest.mark.parametrize(
    "typing,word", [("c", ""), ("ca", "cat"), ("jo", "cena"), ("joh", "cena"), ("john c", "cena"), ("john ce", "cena")]
)
def test_while_typing_the_last_word_is_a_prefix(searcher: Searcher, system: str, typing: str, word: str) -> None:
    """The live list (search screen, as you type) never says "no match" for the start of a word
    the library holds: "ca" and "jo" show memes of "cat" and "john cena", as fzf would."""
    got = searcher.search(typing, system, 10, live=True)
    assert got, f"{typing!r} shows nothing while typing"
    if not word:
        return
    cena = {n for n in names(searcher.search("john cena", "bm25", 10))}
    cats = {n for n in names(searcher.search("cat", "bm25", 10))}
    assert set(names(got[:3])) & (cena if word == "cena" else cats), (typing, names(got[:3]))


@pytest.mark.parametrize("system", SYSTEMS)
def test_a_submitted_prefix_keeps_the_no_match_rule(searcher: Searcher, system: str) -> None:
    """Only the live list reads the last word as a prefix: a submitted (or command-line) query is
    read word for word, and a word nothing starts with is still "no match" while typing."""
    assert searcher.search("ca", "bm25", 10) == [] and searcher.search("jo", system, 10) == []
    assert searcher.search("zzqxv", system, 10, live=True) == []
    # a word no word of the library starts with is read as typed (a typo, a name it lacks)
    assert names(searcher.search("distracted boyf", system, 10, live=True)) == names(
        searcher.search("distracted boyf", system, 10)
    )
    assert plan_query(searcher.db, "distracted boyf", prefix=True).prefix is None
    plan = plan_query(searcher.db, "john c", prefix=True)
    assert plan.prefix == "c" and '"c"*' in plan.word_match and plan.unknown == []
    assert plan_query(searcher.db, "john c ", prefix=True).prefix is None  # a space ends the word
    assert plan_query(searcher.db, "john c").prefix is None


# ── The words are there ─────────────────────────────────────────────


def _caption(text: str) -> dict:
    return {"title": "", "template": "", "entities": "[]", "ocr_text": text}


@pytest.mark.parametrize(
    "system,query,expected",
    [
        ("hybrid", "and you konw it", "dog-02"),
        ("hybrid", "setp away from the", "cop-01"),  # a swapped letter
        ("hybrid", "pays zero rnet", "cat-04"),
        ("dense", "pays zero rnet", "cat-04"),
        ("dense", "good boy", "dog-02"),
        ("dense", "photo still", "cena-02"),
    ],
)
def test_a_meme_holding_every_word_is_never_emptied(searcher: Searcher, system: str, query: str, expected: str) -> None:
    """A meme among the first three whose caption holds every content word of the query, a swapped
    letter corrected, is answered whatever the evidence model says: even a model that would empty
    every list keeps it (WORDS_THERE_TOP)."""
    got = searcher.search(query, system)
    assert any(n.startswith(expected) for n in names(got[:3])), (query, names(got[:3]))
    assert any(r.holds_query for r in got[:WORDS_THERE_TOP])
    never = DEFAULT_SYSTEMS[system]["empty_rule"] | {"threshold": 1.01, "bare_below": 0.0}
    assert Searcher.empty_rule(never, got) == got
    assert Searcher.empty_rule(never, [dataclasses.replace(r, holds_query=False) for r in got]) == []


def test_a_swapped_letter_is_a_correction_like_any_edit(searcher: Searcher) -> None:
    for typo, word in (("konw", "know"), ("cnea", "cena"), ("thta", "that"), ("rnet", "rent")):
        assert word in corrections(searcher.db, typo), typo
    plan = plan_query(searcher.db, "thta is how it")
    assert plan.content == ["thta"] and plan.guesses == {"thta": ["that"]}


@pytest.mark.parametrize("system", ["hybrid", "dense"])
@pytest.mark.parametrize("query", ["taylor swift", "elon musk meme", "drake meme", "morgan freeman pic"])
def test_an_absent_famous_name_is_no_match(searcher: Searcher, system: str, query: str) -> None:
    assert searcher.search(query, system) == []


@pytest.mark.parametrize("system", ["hybrid", "dense"])
@pytest.mark.parametrize("query", ["jon ceena", "john cnea", "jhon cena"])
def test_a_present_name_with_a_typo_is_answered(searcher: Searcher, system: str, query: str) -> None:
    top = names(searcher.search(query, system))[:3]
    assert top and all(n.startswith("cena-") for n in top), (query, top)


def test_a_guess_counts_only_where_the_other_typed_words_confirm_it(library_copy: tuple[Path, Path]) -> None:
    """A word held only through a typo correction is a guess: it counts for "the words are there"
    only in a field that also holds every other word the user typed, one of them as typed. A lone
    name the library lacks, read as a word one edit away ("elon" as "melon"), never does."""
    db_path, _images = library_copy
    db = open_db(db_path)
    with db.write():
        db.con.execute("INSERT OR REPLACE INTO vocabulary(term, docs) VALUES ('melon', 3)")
    plan = plan_query(db, "elon meme")
    assert plan.guesses == {"elon": ["melon"]}
    assert full_match(plan, _caption("melon season")) and not holds_query(plan, _caption("melon season"))
    plan = plan_query(db, "thta is how it")
    assert holds_query(plan, _caption("that is how it works")) and not holds_query(plan, _caption("that was it"))
    plan = plan_query(db, "pays zero rnet")  # two words as typed confirm the third
    assert holds_query(plan, _caption("pays zero rent")) and not holds_query(plan, _caption("zero rent"))
    assert holds_query(plan_query(db, "pays zero rent"), _caption("rent pays zero"))  # no guess: any order
    db.close()


@pytest.mark.parametrize("system", ["hybrid", "dense"])
def test_a_bare_library_keeps_a_typed_caption_with_a_swapped_letter(
    fixture_library: Path, tmp_path: Path, system: str
) -> None:
    """Bare (no sidecars: the caption is all a meme has), a caption typed with a swapped letter
    finds its meme and is never emptied; a famous name the folder lacks is still "no match"."""
    images = tmp_path / "images"
    images.mkdir()
    for name in ("cat-04.png", "cat-01.png", "cena-03.png", "mug-01.png", "think-03.png"):
        shutil.copy(fixture_library.parent / "images" / name, images / name)
    bare = tmp_path / "bare.sqlite"
    invoke("--db", bare, "add", "-q", "--no-sidecars", images)
    db = open_db(bare)
    searcher = Searcher(db, get_embedder())
    got = searcher.search("pays zero rnet", system)
    assert names(got[:1]) == ["cat-04.png"] and got[0].holds_query
    assert searcher.search("taylor swift", system) == [] and searcher.search("drake meme", system) == []
    db.close()


def cena_files() -> set[str]:
    """The fixture's memes whose sidecar names John Cena."""
    return {
        p.name
        for p in (FIXTURE / "images").iterdir()
        if p.suffix != ".json"
        and p.with_suffix(".json").is_file()
        and "john cena" in json.loads(p.with_suffix(".json").read_text()).get("entities", [])
    }


@pytest.mark.parametrize("system", SYSTEMS)
def test_an_answer_is_divided_where_its_evidence_stops(searcher: Searcher, system: str) -> None:
    """Each result is "words", "meaning" or "weaker" against the first result's evidence, and the
    weaker ones come last (one divider): for "john cena" the memes naming him are above it and the
    memes found by meaning alone below. The list itself (order, scores) is the fusion's."""
    answer = searcher.answer("john cena", system, 10)
    above = above_divider(answer.results)
    assert set(names(above)) == cena_files() and all(r.evidence == "words" for r in above)
    assert answer.results[: len(above)] == above
    assert all(r.evidence == "weaker" for r in answer.results[len(above) :])
    assert [(r.item_id, r.score) for r in answer.results] == [
        (r.item_id, r.score) for r in searcher.search("john cena", system, 10, empty_rule=False)
    ]


def test_meaning_keeps_a_result_the_words_do_not(searcher: Searcher) -> None:
    """A result that holds none of the words stays above the divider when its meaning is as close
    to the query as the first's (EVIDENCE_DIVIDER's similarity ratio), and falls below when the
    ratio asks for more; a result holding the words is kept by them."""
    results = searcher.search("john cena", "hybrid", 10)
    sixth = results[5]
    assert sixth.coverage == 0 and sixth.similarity is not None
    ratio = sixth.similarity / results[0].similarity
    kept = evidence_classes(results, {"word_gap": 0.5, "similarity_ratio": ratio - 1e-6})
    assert kept[5].evidence == "meaning" and kept[0].evidence == "words"
    cut = evidence_classes(results, {"word_gap": 0.5, "similarity_ratio": ratio + 1e-6})
    assert cut[5].evidence == "weaker" and [r.evidence for r in cut[:5]] == ["words"] * 5
    # a list whose first result holds none of the words is divided by meaning alone
    rest = results[5:]
    assert rest and all(r.coverage == 0 for r in rest)
    loose = evidence_classes(rest, {"word_gap": 0.5, "similarity_ratio": 0.0})
    assert [r.evidence for r in loose] == ["meaning"] * len(rest)
    strict = evidence_classes(rest, {"word_gap": 0.5, "similarity_ratio": 1.01})
    assert strict[0].evidence == "meaning" and all(r.evidence == "weaker" for r in strict[1:])


def test_the_nearest_memes_come_with_the_answer(searcher: Searcher) -> None:
    """One search answers --nearest: the answer carries the list before the "no match" rule, the
    list `empty_rule=False` gives, divided like any other."""
    for query in ("qwzx vbnm", "john cena"):
        answer = searcher.answer(query, "hybrid", 5)
        again = searcher.search(query, "hybrid", 5, empty_rule=False)
        assert [(r.item_id, r.rank, r.evidence) for r in answer.nearest] == [
            (r.item_id, r.rank, r.evidence) for r in again
        ]
    assert searcher.answer("qwzx vbnm", "hybrid", 5).results == []
