"""Hybrid fusion on the fixture library: partial lexical evidence counts by the share of
the query it holds (LEXICAL_EVIDENCE "partial"), and the dense route's pseudo-relevance feedback
(DENSE_FEEDBACK) re-ranks its own candidates by their stored vectors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from helpers import open_db
from mambomeme.embed import CAPTION, LOOKS, PICTURE, get_embedder
from mambomeme.query_plan import coverage, full_match, idf_weights, item_words, plan_query, typed_share
from mambomeme.search import (
    DEFAULT_SYSTEMS,
    DENSE_FEEDBACK,
    FULL_MATCH_TIER,
    KEEP_FULL_MATCHES,
    LOOKS_WEIGHT,
    Searcher,
    plan_for,
)


@pytest.fixture(scope="module")
def searcher(fixture_library: Path) -> Searcher:
    return Searcher(open_db(fixture_library), get_embedder(), parallel=False)


def test_coverage_weighted_by_idf_favours_the_rare_word(searcher: Searcher) -> None:
    """Unweighted, each of two words is half the query; weighted by inverse document frequency, the
    rarer word is more of it, and a word the library lacks (a typo found by correction) weighs most."""
    db = searcher.db
    ((common, n_common),) = db.con.execute(
        "SELECT term, docs FROM vocabulary WHERE term GLOB '[a-z][a-z][a-z]*' "
        "AND docs * 2 <= (SELECT documents FROM vocabulary_size) "
        "ORDER BY docs DESC, term LIMIT 1"
    )
    plan = plan_query(db, f"cena {common}")
    assert db.scalar("SELECT docs FROM vocabulary WHERE term = 'cena'") < n_common
    idf = idf_weights(db, plan)
    assert idf["cena"] > idf[common] > 0
    assert coverage(plan, {"cena"}) == coverage(plan, {common}) == 0.5
    assert coverage(plan, {"cena"}, idf) > 0.5 > coverage(plan, {common}, idf)
    assert coverage(plan, {"cena", common}, idf) == pytest.approx(1.0)
    assert idf_weights(db, plan_query(db, "cenaa"))["cenaa"] > idf["cena"]


@pytest.mark.parametrize("query", ["coffee cat", "john cena coffee", "pizza monday"])
def test_a_partial_lexical_hit_counts_by_the_share_of_the_query_it_holds(searcher: Searcher, query: str) -> None:
    """Hybrid's lexical contribution for an item is its plain RRF share times its IDF-weighted
    coverage squared: an item holding every word keeps its full share, one holding a common word of
    two keeps little of it; the dense share is untouched."""
    hybrid = DEFAULT_SYSTEMS["hybrid"]
    assert hybrid["lexical_evidence"]["partial"] == 2.0
    plain = hybrid | {"lexical_evidence": hybrid["lexical_evidence"] | {"partial": 0}}
    weighted = {r.item_id: r for r in searcher.search(query, hybrid, 30, empty_rule=False)}
    rrf_k = hybrid["rrf_k"]
    plan = plan_query(searcher.db, query)
    idf = idf_weights(searcher.db, plan)
    partial = 0
    for r in searcher.search(query, plain, 30, empty_rule=False):
        if r.item_id not in weighted or r.lexical_rank is None:
            continue
        w = weighted[r.item_id]
        assert (w.lexical_rank, w.dense_rank) == (r.lexical_rank, r.dense_rank)
        dense = 1.0 / (rrf_k + r.dense_rank) if r.dense_rank else 0.0
        tier = FULL_MATCH_TIER if r.score >= FULL_MATCH_TIER else 0.0
        share = coverage(plan, item_words(r.details), idf) ** 2
        assert w.score - tier - dense == pytest.approx((r.score - tier - dense) * share, rel=1e-4, abs=1e-6)
        partial += share < 0.999
    assert partial, "the query should have lexical hits that hold part of it"


def test_typed_share_counts_small_words_but_not_filler_or_articles(searcher: Searcher) -> None:
    def meme(caption: str) -> dict:
        return {"title": "", "template": "", "entities": "[]", "ocr_text": caption}

    plan = plan_query(searcher.db, "zinnia from it meme")
    assert plan.content == ["zinnia"]
    assert typed_share(plan, meme("WHEN ZINNIA FROM IT ASKS FOR AN UPDATE")) == 1.0
    # the three words and their two pairs side by side, against one word of five
    assert typed_share(plan, meme("nobody: zinnia the ram: has opinions")) == pytest.approx(1 / 5)
    assert typed_share(plan, meme("it is zinnia, from accounts")) == pytest.approx(4 / 5)
    assert typed_share(plan_query(searcher.db, "a snowman"), meme("snowman in july")) == 1.0


@pytest.mark.parametrize("query", ["cat", "coffee", "monday", "cat on a keyboard", "motvaton not found"])
def test_kept_memes_come_by_what_they_hold_of_the_typed_words_then_by_meaning(searcher: Searcher, query: str) -> None:
    """Every meme of the first KEEP_FULL_MATCHES fused rows holding all the content words comes first;
    among them, those holding more of the typed words, then the dense route's order; scores fall with
    rank; and the top 10 is the same however long a list is asked for."""
    hybrid = DEFAULT_SYSTEMS["hybrid"]
    assert hybrid["full_match_typed"] and hybrid["full_match_by_meaning"]
    results = searcher.search(query, hybrid, 30, empty_rule=False)
    assert [r.item_id for r in searcher.search(query, hybrid, 10, empty_rule=False)] == [
        r.item_id for r in results[:10]
    ]
    plan = plan_for(searcher.db, query, hybrid)
    head = results[:KEEP_FULL_MATCHES]
    kept = [r for r in head if r.score >= FULL_MATCH_TIER]
    assert kept and head[: len(kept)] == kept, query
    assert all(full_match(plan, r.details) for r in kept)
    assert not any(full_match(plan, r.details) and r.lexical_rank is not None for r in head[len(kept) :])
    order = [(-typed_share(plan, r.details), r.dense_rank or 10**6) for r in kept]
    assert order == sorted(order), query
    scores = [r.score for r in results]
    assert scores == sorted(scores, reverse=True), query


def moved_similarities(
    db, qvec: np.ndarray, ids: list[int], top: int, alpha: float, given_best: bool
) -> dict[int, float]:
    """Rocchio in numpy: q + alpha * mean(a vector of each of the first `top`: its all-fields one, or
    with `given_best` the one of its vectors nearest q), and each item's best cosine over its stored
    vectors (all fields, caption, picture, looks; a looks vector's cosine x LOOKS_WEIGHT)."""

    def vec(sql: str, key: int) -> np.ndarray | None:
        row = db.con.execute(sql, (key,)).fetchone()
        return None if row is None else np.frombuffer(row[0], dtype=np.float32)

    def cos(v: np.ndarray, q: np.ndarray) -> float:
        return float(v @ q / np.linalg.norm(v) / np.linalg.norm(q))

    stored = {
        i: [(vec("SELECT embedding FROM item_vectors WHERE item_id = ?", i), 1.0)]
        + [
            (v, LOOKS_WEIGHT if k == LOOKS else 1.0)
            for k in (CAPTION, PICTURE, LOOKS)
            if (v := vec("SELECT embedding FROM item_field_vectors WHERE vector_id = ?", i * 4 + k)) is not None
        ]
        for i in ids
    }
    given = [
        max(stored[i], key=lambda vw: cos(vw[0], qvec) * vw[1])[0] if given_best else stored[i][0][0] for i in ids[:top]
    ]
    moved = qvec + alpha * np.mean(given, axis=0)
    return {i: max(cos(v, moved) * w for v, w in stored[i]) for i in ids}


@pytest.mark.parametrize(
    "query", ["pets acting like they own the house", "john cena coffee", "a man hammering metal in a forge"]
)
def test_dense_feedback_reranks_the_candidates_by_the_moved_query(searcher: Searcher, query: str) -> None:
    """The dense route with feedback returns the same candidates with the same first-pass
    similarities (the "no match" evidence), ordered by their best vector's cosine to the query moved
    towards its top items (recomputed here in numpy), without a second scan."""
    dense = DEFAULT_SYSTEMS["dense"]
    assert "dense_feedback" not in dense and DEFAULT_SYSTEMS["hybrid"]["dense_feedback"] == DENSE_FEEDBACK
    first = searcher.search(query, dense, 50, empty_rule=False)
    again = searcher.search(query, dense | {"dense_feedback": DENSE_FEEDBACK}, 50, empty_rule=False)
    assert {r.item_id: (r.similarity, r.all_similarity) for r in first} == {
        r.item_id: (r.similarity, r.all_similarity) for r in again
    }
    qvec = get_embedder().encode([plan_query(searcher.db, query).dense_query])[0]
    ids = [r.item_id for r in first]
    moved = moved_similarities(
        searcher.db, qvec, ids, DENSE_FEEDBACK["top"], DENSE_FEEDBACK["alpha"], DENSE_FEEDBACK["best"]
    )
    order = [moved[r.item_id] for r in again]
    assert all(a >= b - 1e-5 for a, b in zip(order, order[1:], strict=False)), order
    assert [r.dense_rank for r in again] == list(range(1, len(again) + 1))


def test_each_top_item_gives_the_vector_that_matched_the_query(searcher: Searcher) -> None:
    """DENSE_FEEDBACK "best": a top item's feedback is its vector nearest the query (a caption's for
    a quote, a picture's for a look), not always its all-fields one; both readings rank as numpy
    says, and on the fixture they order some paraphrase's candidates differently."""
    dense = DEFAULT_SYSTEMS["dense"]
    differ = []
    for query in [
        "pets acting like they own the house",
        "john cena coffee",
        "a man hammering metal in a forge",
        "someone who is sad",
    ]:
        qvec = get_embedder().encode([plan_query(searcher.db, query).dense_query])[0]
        orders = {}
        for best in (True, False):
            cfg = dense | {"dense_feedback": DENSE_FEEDBACK | {"best": best}}
            got = searcher.search(query, cfg, 50, empty_rule=False)
            moved = moved_similarities(
                searcher.db,
                qvec,
                [r.item_id for r in searcher.search(query, dense, 50, empty_rule=False)],
                DENSE_FEEDBACK["top"],
                DENSE_FEEDBACK["alpha"],
                best,
            )
            sims = [moved[r.item_id] for r in got]
            assert all(a >= b - 1e-5 for a, b in zip(sims, sims[1:], strict=False)), (query, best)
            orders[best] = [r.item_id for r in got]
        differ.append(orders[True] != orders[False])
    assert any(differ), differ


def test_dense_feedback_changes_an_order_and_runs_in_hybrid(searcher: Searcher) -> None:
    """Not a no-op: on the fixture a paraphrase's dense order moves, and hybrid (serial or on the
    reader thread) uses the moved order."""
    query = "pets acting like they own the house"
    dense = DEFAULT_SYSTEMS["dense"]
    plain = [r.item_id for r in searcher.search(query, dense, 10, empty_rule=False)]
    moved = [
        r.item_id for r in searcher.search(query, dense | {"dense_feedback": DENSE_FEEDBACK}, 10, empty_rule=False)
    ]
    assert plain != moved
    hybrid = [r.item_id for r in searcher.search(query, "hybrid", 10, empty_rule=False)]
    threaded = Searcher(searcher.db, get_embedder())
    assert hybrid == moved == [r.item_id for r in threaded.search(query, "hybrid", 10, empty_rule=False)]
