"""Search: query planning (normalisation, stopwords, typo correction, slang), search systems and their
versions, the Searcher (lexical, fuzzy and dense routes, fused in one SQL statement in search.sql)
and how a result is printed."""

from __future__ import annotations

import array
import dataclasses
import json
import math
import weakref
from collections.abc import Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mambomeme.dense_index import (
    CODES_K,
    CODES_RESCORE,
    DENSE_OVERSAMPLE,
    IVF_PROBE,
    dequantize,
    int8_codes,
    large_probe,
)
from mambomeme.dense_memory import InMemoryVectors, VectorMatrix, feedback_rerank
from mambomeme.embed import (
    EMBED_MODEL_NAME,
    EMBED_MODEL_REVISION,
    EMBED_TEXT_RECIPE,
    LOOKS,
    Embedder,
    get_embedder,
)
from mambomeme.library import DB, SAFETY_POLICY_VERSION
from mambomeme.output import MamboError, clean_line, show_path
from mambomeme.query_plan import (
    QueryEvidence,
    QueryPlan,
    coverage,
    full_match,
    holds_query,
    idf_weights,
    item_words,
    plan_query,
    typed_share,
)
from mambomeme.search_config import DenseFeedback, SystemConfig, read_config

# ─────────────────────────────────────────────────────────────────────────────
# Retrieval
# ─────────────────────────────────────────────────────────────────────────────

# Per-field BM25 weights (title, template, entities, tags, ocr_text, description), set by hand and
# not swept: names a person remembers (entities, template, title) count more than the long, noisy
# OCR text and descriptions (docs/decisions.md#search-basics).
FIELD_WEIGHTS = {"title": 3.0, "template": 3.0, "entities": 4.0, "tags": 2.0, "ocr_text": 2.0, "description": 1.0}


# "The words are there": a list one of whose first three memes holds every content word of the query
# in its name or caption (query_plan.holds_query: exactly, by an alias, or by a typo correction the
# same field confirms) is never emptied, whatever the evidence model says: a typed caption with a swapped
# letter ("thta is how it") keeps its meme. What it costs and saves: docs/decisions.md#words-there.
WORDS_THERE_TOP = 3


# The looks vector (the picture description alone, embed.FIELD_KINDS) counts x LOOKS_WEIGHT: one
# description is every meme of a template's, so a description near a query brings the template's
# memes in together, wanted for a query describing the picture, not for one about a topic.
# Real-style set, hybrid nDCG@10, folds by template (4 of 5 chose 0.8): none 0.788 (visual 0.822,
# semantic 0.465), 0.8 0.792 (0.849, 0.461), 1.0 0.787 (0.833, 0.447); dev v2 annotated visual
# 0.869 -> 0.868. benchdata/experiments/looks_vector-result.txt; docs/decisions.md#looks-weight.
LOOKS_WEIGHT = 0.8
BASE_CONFIG: dict[str, Any] = {
    "field_weights": FIELD_WEIGHTS,
    # How many candidates each route contributes before fusion; bounded because three common terms
    # OR'd over 100k items (20k matches) cost 35 / 162 ms (median / p95) in FTS5.
    "candidate_depth": 50,
    # The usual reciprocal-rank-fusion constant (Cormack et al. 2009); 20 was no better on dev v2.
    "rrf_k": 60,
    "dense_index": "ivf",
    "ivf_probe": IVF_PROBE,
    "dense_oversample": DENSE_OVERSAMPLE,
    # An item's dense similarity is that of its best vector: all fields, caption, picture or looks
    # (embed.EMBED_TEXT_RECIPE gives the numbers); False: the all-fields vector alone.
    "field_vectors": True,
    "looks_weight": LOOKS_WEIGHT,
    "model": {"name": EMBED_MODEL_NAME, "revision": EMBED_MODEL_REVISION, "text_recipe": EMBED_TEXT_RECIPE},
    "safety_policy": SAFETY_POLICY_VERSION,
    "use_aliases": True,  # expand slang from the query_aliases table (builtin rows: schema.sql)
    "correct_typos": True,  # add known words one edit away from unknown query words
    # ... and, failing those, two edits away for long words English does not know (queries.corrections)
    "two_edit_typos": True,
    "collapse_exact_duplicates": "by construction: one item per SHA-256, its files listed under it",
    "words_there_top": WORDS_THERE_TOP,
}
# bm25's "nothing matches": a list is shown only when one of its top three results holds at least half
# of the query's content words. Route weights and thresholds per system by `mambo bench calibrate` on
# benchmark v1's development partition (bm25 Q 0.784, CorrectEmpty 0.850; the fuzzy route lost once
# typo correction existed). See docs/decisions.md#route-weights.
CALIBRATION_NOTE = (
    "benchmark v1 development partition (90 answerable, 20 no-match), "
    "mambo bench calibrate, objective 0.55 Q + 0.15 E + 0.10 C"
)
# Hybrid's query-dependent fusion: the lexical route stays out when its top three hold under half of
# the query's content words, leads (x2) when one holds 3/4, and each hit counts by its idf-weighted
# coverage squared ("partial"). Dev v2 nDCG@10 annotated / bare: lead x2 0.820 / 0.536 vs x30 0.809 /
# 0.525; partial 2 0.840 / 0.563 vs off 0.834 / 0.546. See docs/decisions.md#lexical-evidence.
LEXICAL_EVIDENCE = {"drop_below": 0.5, "boost_at": 0.75, "boost": 2.0, "partial": 2.0}
# Strong lexical evidence kept: among the first KEEP_FULL_MATCHES fused rows, memes whose name or caption
# holds every content word come first, by their share of the typed words, then by the dense route.
# Dev v2 annotated / bare Q at depth 10 / 15 / 20 / 30: 0.872 / 0.603, 0.870 / 0.604, 0.869 / 0.605,
# 0.869 / 0.605. See docs/decisions.md#full-matches.
KEEP_FULL_MATCHES = 10
FULL_MATCH_TIER = 1.0  # fusion scores are sums of weight / (rrf_k + rank): far below 1
# Pseudo-relevance feedback for hybrid's dense route: the query moves towards its 5 best items'
# best-matching vectors (q + 0.45 * mean) and the route's 50 candidates are ranked again. Dev v2
# nDCG@10 annotated / bare: Q 0.878 / 0.605 vs 0.864 / 0.593 without; alpha 0.45-1.0 is a plateau and
# 0.45 its judged end. See docs/decisions.md#dense-feedback.
DENSE_FEEDBACK = {"top": 5, "alpha": 0.45, "best": True}
# Dense and hybrid say "no match" by a logistic evidence model (evidence_features), one for annotated and
# one for bare libraries (condition_model). Annotated: `mambo bench no-match` on dev v2, the most correct
# "no match" answers at <= 3 % false "no match" (hybrid CorrectEmpty 0.892, false no-match 0.8 %). Bare:
# the real-style set (real captions, no sidecars), folds by template, seven features whose weights keep
# their meaning's sign, threshold at <= 1 % false "no match" on the training folds. Held out, hybrid
# CorrectEmpty 0.224 with 0 of 197 answerable emptied (semantic 0.369 = no rule), dense 0.224 at 1; a
# dev v2 fit empties 23 / 20 of them for 0.478 / 0.463. Real captions give absent famous memes the
# similarities of paraphrases. Dev v2 bare (never fitted on): CorrectEmpty 0.688, 11 of 131 emptied, none useful;
# no joint fit or new evidence did better (benchdata/experiments/nomatch_{real,joint}.py, -result.txt; evaluation.md).
NO_MATCH_NOTE = (
    "annotated: dev v2 (131 answerable, 93 no-match; judged labels), mambo bench no-match: most "
    "CorrectEmpty with false no-match <= 3 % and Hit@10 loss <= 0.02; bare: the real-style set (197 "
    "answerable, 67 no-match; judged labels), benchdata/experiments/nomatch_real.py: most CorrectEmpty "
    "with false no-match <= 1 %, folds by template; all-mpnet-base-v2 similarities"
)
# bm25 keeps its coverage rule: a fitted model scored the objective under it (docs/decisions.md#no-match).
EMPTY_RULES = {
    "bm25": {"kind": "evidence", "min_similarity": 2.0, "min_coverage": 0.5, "calibration": CALIBRATION_NOTE},
    "dense": {
        "kind": "logistic",
        "bias": -7.1811,
        "weights": {
            "similarity": 16.5559,
            "whole": 9.2763,
            "margin": 3.0779,
            "coverage": -1.7218,
            "full": 2.2374,
            "unknown": -5.5347,
            "corrected": -6.4871,
            "absent": -3.7503,
        },
        "threshold": 0.32,
        "bare": {
            "bias": -2.0009,
            "weights": {
                "similarity": 6.6873,
                "margin": 0.0991,
                "coverage": 0.0047,
                "full": 1.5918,
                "unknown": -1.5118,
                "corrected": -0.2234,
                "absent": -5.3247,
            },
            "threshold": 0.31,
        },
        "bare_below": 0.5,
        "calibration": NO_MATCH_NOTE,
    },
    "hybrid": {
        "kind": "logistic",
        "bias": -7.2046,
        "weights": {
            "similarity": 16.4623,
            "whole": 9.6646,
            "margin": 1.7575,
            "coverage": -1.9646,
            "full": 2.1859,
            "lexical": 0.383,
            "unknown": -5.5644,
            "corrected": -6.6184,
            "absent": -3.931,
        },
        "threshold": 0.32,
        "bare": {
            "bias": -1.7433,
            "weights": {
                "similarity": 5.0002,
                "margin": 0.9323,
                "coverage": 0.7092,
                "full": 1.1946,
                "unknown": -1.0834,
                "corrected": -0.3548,
                "absent": -5.2843,
            },
            "threshold": 0.32,
        },
        "bare_below": 0.5,
        "calibration": NO_MATCH_NOTE,
    },
}
DEFAULT_SYSTEMS: dict[str, dict[str, Any]] = {
    "bm25": BASE_CONFIG
    | {"route_weights": {"lexical": 1.0, "fuzzy": 0.0, "dense": 0.0}, "empty_rule": EMPTY_RULES["bm25"]},
    "dense": BASE_CONFIG
    | {"route_weights": {"lexical": 0.0, "fuzzy": 0.0, "dense": 1.0}, "empty_rule": EMPTY_RULES["dense"]},
    "hybrid": BASE_CONFIG
    | {
        "route_weights": {"lexical": 1.0, "fuzzy": 0.0, "dense": 1.0},
        "lexical_evidence": LEXICAL_EVIDENCE,
        "keep_full_matches": KEEP_FULL_MATCHES,
        "full_match_typed": True,
        "full_match_by_meaning": True,
        "dense_feedback": DENSE_FEEDBACK,
        "empty_rule": EMPTY_RULES["hybrid"],
    },
}
# The "weaker matches" divider (evidence_classes): a result is weaker than the first when neither its
# words keep it (coverage > 0 and >= the first's - word_gap) nor its meaning (similarity >=
# similarity_ratio x the first's). Real-style set, hybrid top 10, held out by template: relevant
# (grade >= 2) share above 0.67 (0.54 with no divider), grade 0 below 0.62, 60 of 1,133 relevant
# memes below (semantic 38 of 63). Sweep: benchdata/experiments/evidence_divider.py and its
# -result.txt; docs/decisions.md#evidence-divider.
EVIDENCE_DIVIDER = {"word_gap": 0.5, "similarity_ratio": 0.85}
# Hybrid, by the spec's semantic-search acceptance test on benchmark v1 dev: +0.063 nDCG@10 over bm25
# (95 % CI +0.033 to +0.097), +0.344 semantic, no gate regression (docs/decisions.md#default-system).
DEFAULT_SYSTEM = "hybrid"


@dataclass
class Result:
    item_id: int
    rank: int
    score: float
    lexical_rank: int | None
    fuzzy_rank: int | None
    dense_rank: int | None
    similarity: float | None
    coverage: float
    details: dict[str, Any]
    query: QueryEvidence | None = None  # the same for every result of one query
    all_similarity: float | None = None  # the all-fields vector's own (None: not among the candidates)
    holds_query: bool = False  # among the first "words_there_top": its name or caption holds the query's words
    evidence: str = ""  # "words", "meaning" or "weaker" (evidence_classes): above or below the divider


@dataclass(frozen=True)
class Answer:
    """A search's results, the plan it read the query by, and the list before the "no match"
    rule: the nearest memes, which `--nearest` shows where the rule answers "no match"."""

    plan: QueryPlan
    results: list[Result]
    nearest: list[Result] = dataclasses.field(default_factory=list)


class _Details:
    """What the results of one search show (search.sql `results_details`), read once per item, and
    each item's words (the lexical weights, the full-match check and coverage all read them)."""

    def __init__(self, db: DB):
        self.db = db
        self.by_id: dict[int, dict[str, Any]] = {}
        self._words: dict[int, set[str]] = {}

    def fetch(self, ids: list[int]) -> None:
        missing = [i for i in ids if i not in self.by_id]
        if missing:
            self.by_id.update((d["item_id"], d) for d in results_details(self.db, missing))

    def __getitem__(self, item_id: int) -> dict[str, Any]:
        return self.by_id[item_id]

    def words(self, item_id: int) -> set[str]:
        if item_id not in self._words:
            self._words[item_id] = item_words(self.by_id[item_id])
        return self._words[item_id]


def config_sha(config: dict[str, Any]) -> str:
    import hashlib

    return hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()


def sync_systems(db: DB) -> None:
    """Make the built-in systems' current configurations rows of `systems`; a changed
    configuration becomes a new version, an old one is never edited."""
    if db.readonly:
        return
    missing = [
        (n, c)
        for n, c in DEFAULT_SYSTEMS.items()
        if not db.q1("system_by_sha", {"name": n, "config_sha256": config_sha(c)})
    ]
    if missing:
        with db.write():
            for name, config in missing:
                db.q(
                    "insert_system",
                    {
                        "name": name,
                        "config": json.dumps(config, sort_keys=True),
                        "config_sha256": config_sha(config),
                        "notes": "built-in",
                    },
                )


def system_config(db: DB, name: str) -> dict[str, Any]:
    """A system's configuration as stored (its JSON), checked (search_config.SystemConfig)."""
    config = _stored_config(db, name)
    read_config(config, name)
    return config


def list_systems(db: DB) -> list[tuple]:
    """Every stored system version: (name, version, config_sha, created_at, notes, config)."""
    return db.q("list_systems")


def system_version(db: DB, name: str) -> int | None:
    """The current version number of a stored system, or None."""
    row = db.q1("system_by_name", {"name": name})
    return int(row[2]) if row else None


def results_details(db: DB, ids: list[int]) -> list[dict[str, Any]]:
    """What a result shows of each item among `ids` (title, caption, path, ...), as dicts."""
    return db.rows("results_details", {"ids": json.dumps(ids)})


def _stored_config(db: DB, name: str) -> dict[str, Any]:
    row = db.q1("system_by_name", {"name": name})
    if row:
        return json.loads(row[3])
    if name in DEFAULT_SYSTEMS:
        return DEFAULT_SYSTEMS[name]
    known = sorted({r[0] for r in list_systems(db)} | set(DEFAULT_SYSTEMS))
    raise MamboError(f"no search system named {clean_line(name)!r}: choose one of {', '.join(known)}")


def load_system(db: DB, system: str | Mapping[str, Any] | SystemConfig) -> SystemConfig:
    """A system by its name, or (benchmarks, ablations) a configuration itself, typed and checked."""
    if isinstance(system, SystemConfig):
        return system
    if isinstance(system, str):
        return read_config(_stored_config(db, system), system)
    return read_config(system)


def plan_for(db: DB, query: str, cfg: Mapping[str, Any] | SystemConfig, *, live: bool = False) -> QueryPlan:
    """How a system reads a query (the search and the screen's encode-ahead read it alike); `live`:
    a query still being typed, whose last word is a prefix."""
    c = load_system(db, cfg)
    return plan_query(
        db, query, aliases=c.use_aliases, correct=c.correct_typos, two_edits=c.two_edit_typos, prefix=live
    )


def needs_model(cfg: Mapping[str, Any] | SystemConfig) -> bool:
    """Whether a system's configuration has a dense (embedding) route."""
    return (cfg if isinstance(cfg, SystemConfig) else read_config(cfg)).needs_model


def statement_params(
    cfg: SystemConfig, plan: QueryPlan, limit: int, *, use_dense: bool, large_clusters: int | None
) -> dict[str, Any]:
    """The search statement's parameters (search.sql `search`) for a system and a query."""
    w, rw, depth = cfg.field_weights, cfg.route_weights, cfg.candidate_depth
    oversample = _given(cfg.dense_oversample, DENSE_OVERSAMPLE)
    params: dict[str, Any] = {
        "w_title": w.title,
        "w_template": w.template,
        "w_entities": w.entities,
        "w_tags": w.tags,
        "w_ocr": w.ocr_text,
        "w_description": w.description,
        "depth": depth,
        "rrf_k": cfg.rrf_k,
        "pool": max(limit, 10),
        "w_lexical": rw.lexical,
        "w_fuzzy": rw.fuzzy,
        "w_dense": rw.dense,
        "use_lexical": rw.lexical > 0 and bool(plan.tokens),
        "use_fuzzy": rw.fuzzy > 0 and plan.trigram_match != '""',
        "use_dense": use_dense,
        "dense_index": cfg.dense_index,
        "probe": cfg.ivf_probe,
        "field_vectors": cfg.field_vectors,
        "looks_weight": cfg.looks_weight,
        "lexical": None,
        "dense": None,
        "word_match": plan.word_match,
        "trigram_match": plan.trigram_match,
        # hidden items are filtered inside the KNN scan (vec0 `servable` column), so k is
        # the depth: sqlite-vec's KNN cost grows with k
        "qvec": None,
        "k": depth * (oversample if cfg.dense_index == "bit-rescore" else 1),
        "qcode": None,
        "codes_k": _given(cfg.codes_k, CODES_K),
        "codes_rescore": _given(cfg.codes_rescore, CODES_RESCORE),
    }
    if use_dense and large_clusters is not None:
        # A large library's coarse index scans int8 codes in more partitions, and it is the only
        # dense index such a library has: it keeps no float vector (dense_index.py)
        params["dense_index"] = "ivf-int8"
        params["probe"] = cfg.large_probe or large_probe(large_clusters)
    return params


def _given(value: int | None, default: int) -> int:
    return default if value is None else value


# Per connection: (library version, described share, whether it holds any vector, the partitions of
# a large library's int8 coarse index or None) (Searcher.facts)
_FACTS: weakref.WeakKeyDictionary[DB, tuple[tuple[int, int], float, bool, int | None]] = weakref.WeakKeyDictionary()


def with_query(params: dict[str, Any], vec: Any) -> dict[str, Any]:
    """The search statement's parameters with the query vector, and its int8 code for a large
    library's coarse index (vectors.int8_codes: the same scale as the stored codes)."""
    import numpy as np

    q = np.asarray(vec, dtype=np.float32)
    out = params | {"qvec": q.tobytes()}
    if params["dense_index"] == "ivf-int8":
        out["qcode"] = int8_codes(q[None, :])[0].tobytes()
    return out


class Searcher:
    """Runs a system against one library. The embedder is optional: without it (still loading,
    or not wanted) the dense route is skipped and the lexical routes answer alone."""

    def __init__(
        self, db: DB, embedder: Embedder | None = None, *, parallel: bool = True, vectors: InMemoryVectors | None = None
    ):
        self.db = db
        self.embedder = embedder
        # The dense route on its own thread and connection (False: inside the fusion statement on
        # this connection; tests compare the two)
        self.parallel = parallel
        # A long-lived search's vectors held in memory (dense_memory.py): the same ranking as the
        # SQL scan, exactly, in a tenth of the time
        self.vectors = vectors

    def facts(self) -> tuple[float, bool, int | None]:
        """(the share of servable memes whose sidecar described them (QueryEvidence.described),
        whether the library holds any vector, the partitions of its coarse index when it scans int8
        codes (a large library, dense_index.py) or None), kept per connection (the search screen makes a
        Searcher a search) and read again only when the library changed (PRAGMA data_version:
        another connection's commits; total_changes: its own)."""
        version = (self.db.data_version(), self.db.con.total_changes())
        known = _FACTS.get(self.db)
        if known is None or known[0] != version:
            large = self.db.q1("large_vector_index")
            known = (
                version,
                float(self.db.q1("described_share")[0] or 0.0),
                bool(self.db.q1("holds_vectors")[0]),
                int(large[0]) if large is not None else None,
            )
            _FACTS[self.db] = known
        return known[1], known[2], known[3]

    @classmethod
    def _encode_and_scan(
        cls, embedder: Embedder, text: str, reader: DB, params: dict[str, Any], feedback: DenseFeedback | None = None
    ) -> str:
        return cls._dense_route(reader, with_query(params, embedder.encode([text])[0]), feedback)

    @staticmethod
    def _encode_and_rank(
        embedder: Embedder,
        text: str,
        matrix: VectorMatrix,
        params: dict[str, Any],
        feedback: DenseFeedback | None = None,
    ) -> str:
        return matrix.ranking(
            embedder.encode([text])[0],
            params["depth"],
            field_vectors=params["field_vectors"],
            feedback=feedback,
            looks_weight=params["looks_weight"],
        )

    @staticmethod
    def _dense_route(reader: DB, params: dict[str, Any], feedback: DenseFeedback | None = None) -> str:
        """The dense route alone, on the reader connection: its ranking as [[item id, similarity,
        all-fields similarity], ...]; with `feedback` (DENSE_FEEDBACK), re-ranked by the moved query."""
        rows = reader.q("search", params | {"use_lexical": False, "use_fuzzy": False, "pool": params["depth"]})
        ranking = json.dumps([[r[0], r[5], r[6]] for r in rows])
        if feedback and rows and params["dense_index"] == "ivf-int8":
            # a large library keeps codes only: the candidates' codes, moved as dense_feedback does
            stored: dict[int, list[Any]] = {}
            scale: dict[int, list[float]] = {}
            for item_id, kind, code in reader.q(
                "candidate_codes", {"ids": json.dumps([r[0] for r in rows]), "field_vectors": params["field_vectors"]}
            ):
                stored.setdefault(item_id, []).append(dequantize(code))
                scale.setdefault(item_id, []).append(params["looks_weight"] if kind == LOOKS else 1.0)
            ranked = [(r[0], (r[5], r[6])) for r in rows if r[0] in stored]
            return json.dumps(feedback_rerank(params["qvec"], ranked, stored, feedback, scale))
        if feedback and rows:
            # q + alpha * mean(top n) has the direction of q * n / alpha + sum(top n) (DENSE_FEEDBACK)
            n = min(feedback.top, len(rows))
            scaled = array.array("f", (x * n / feedback.alpha for x in array.array("f", params["qvec"]))).tobytes()
            rows = reader.q(
                "dense_feedback",
                {
                    "dense": ranking,
                    "qvec_scaled": scaled,
                    "feedback_top": n,
                    "field_vectors": params["field_vectors"],
                    "feedback_best": bool(feedback.best),
                    "looks_weight": params["looks_weight"],
                },
            )
            ranking = json.dumps([[r[0], r[1], r[2]] for r in rows])
        return ranking

    def search(
        self,
        query: str,
        system: str | Mapping[str, Any] | SystemConfig = DEFAULT_SYSTEM,
        limit: int = 10,
        *,
        empty_rule: bool = True,
        live: bool = False,
    ) -> list[Result]:
        """`system` is a system's name, or (benchmarks, ablations) a configuration itself. `live`: the
        query is still being typed (the search screen's list follows it): its last word is a prefix,
        and a list is shown when the "no match" rule accepts it or when one of its first three memes
        holds every word as typed so far; a submitted query keeps the rule alone."""
        return self.answer(query, system, limit, empty_rule=empty_rule, live=live).results

    def answer(
        self,
        query: str,
        system: str | Mapping[str, Any] | SystemConfig = DEFAULT_SYSTEM,
        limit: int = 10,
        *,
        empty_rule: bool = True,
        live: bool = False,
    ) -> Answer:
        """The search in steps, with the plan it read the query by (a "no match" answer counts the
        withheld memes by it): plan -> routes -> fuse -> keep -> evidence."""
        cfg, described, large_clusters = self._system(system)
        plan = plan_for(self.db, query, cfg, live=live)
        use_dense = cfg.route_weights.dense > 0 and self.embedder is not None and bool(plan.tokens)
        params = statement_params(cfg, plan, limit, use_dense=use_dense, large_clusters=large_clusters)
        details = _Details(self.db)
        dense_ranking = self._start_dense(cfg, plan, params) if use_dense else None
        if cfg.lexical_evidence and use_dense and params["use_lexical"]:
            self._weigh_lexical(cfg, plan, params, details)
        if dense_ranking is not None:
            params["dense"] = dense_ranking.result()
        # (a number, not the truth value of the `and`: a list's top 10 must not depend on how long a
        # list was asked for)
        keep = int(cfg.keep_full_matches or 0) if params["use_lexical"] and use_dense else 0
        rows = self._fuse(params, max(limit, keep) if keep else None)
        if keep:
            rows = self._keep_full_matches(rows[:keep], cfg, plan, details) + rows[keep:]
        results = evidence_classes(self._results(rows[:limit], plan, details, QueryEvidence.of(plan, described), cfg))
        shown = evidence_classes(self._shown(cfg.empty_rule, plan, results)) if empty_rule else results
        return Answer(plan, shown, results)

    def _system(self, system: str | Mapping[str, Any] | SystemConfig) -> tuple[SystemConfig, float, int | None]:
        """The configuration a search runs (a system's own, or bm25's in a library without vectors),
        the library's described share and its coarse index's partitions (facts)."""
        cfg = load_system(self.db, system)
        described, holds_vectors, large_clusters = self.facts()
        if cfg.needs_model and not holds_vectors:
            # No vectors at all: a library whose memes wait to be embedded by this version's model
            # (migration 015 emptied all-MiniLM-L6-v2's). Its words answer, under the word route's
            # "no match" rule (a dense model would read a similarity of 0 as "nothing matches"),
            # until `mambo add` embeds them.
            cfg = dataclasses.replace(
                read_config(DEFAULT_SYSTEMS["bm25"], "bm25"),
                field_weights=cfg.field_weights,
                candidate_depth=cfg.candidate_depth,
            )
        return cfg, described, large_clusters

    def _start_dense(self, cfg: SystemConfig, plan: QueryPlan, params: dict[str, Any]) -> Future[str] | None:
        """The dense route: on the reader's thread (its ranking to come), or, not `parallel`, the
        query vector (and with feedback the route's ranking) put in `params` here."""
        assert self.embedder is not None
        matrix = self.vectors.get(self.db) if self.vectors is not None and cfg.dense_index in ("float", "ivf") else None
        if matrix is not None:
            _reader, thread = self.db.reader()
            return thread.submit(
                self._encode_and_rank, self.embedder, plan.dense_query, matrix, dict(params), cfg.dense_feedback
            )
        if self.parallel:
            # Encoding and the vector scan run on another thread and connection while the lexical
            # route runs here (onnxruntime and SQLite release the GIL): a hybrid query costs about
            # the slower route; fusion reads its ranking (:dense). Dev library, 220 searches: p50/p95
            # 9.5/11.4 ms vs 10.7/13.3 ms encoding first (2026-11-30, load ~0.9).
            reader, thread = self.db.reader()
            return thread.submit(
                self._encode_and_scan, self.embedder, plan.dense_query, reader, dict(params), cfg.dense_feedback
            )
        params.update(with_query(params, self.embedder.encode([plan.dense_query])[0]))
        if cfg.dense_feedback:
            params["dense"] = self._dense_route(self.db, params, cfg.dense_feedback)
        return None

    def _weigh_lexical(self, cfg: SystemConfig, plan: QueryPlan, params: dict[str, Any], details: _Details) -> None:
        """Query-dependent fusion (see LEXICAL_EVIDENCE): the lexical route joins only when its own
        top results hold the query's words, and leads when they hold all of them. Its ranking is
        kept and handed to the fusion statement (:lexical), so FTS5 runs once."""
        gate = cfg.lexical_evidence
        assert gate is not None
        ranked = [
            r[0]
            for r in self.db.q("search", params | {"use_fuzzy": False, "use_dense": False, "pool": params["depth"]})
        ]
        weights = [1.0] * len(ranked)
        if gate.partial:
            # A lexical hit counts by the share of the query it holds (LEXICAL_EVIDENCE "partial")
            details.fetch(ranked)
            idf = idf_weights(self.db, plan)
            weights = [coverage(plan, details.words(i), idf) ** gate.partial for i in ranked]
        params["lexical"] = json.dumps([[i, round(x, 6)] for i, x in zip(ranked, weights, strict=True)])
        details.fetch(ranked[:3])
        cov = max((coverage(plan, details.words(i)) for i in ranked[:3]), default=0.0)
        if cov < gate.drop_below:
            params["use_lexical"] = False
        elif cov >= gate.boost_at:
            params["w_lexical"] = cfg.route_weights.lexical * gate.boost

    def _fuse(self, params: dict[str, Any], pool: int | None) -> list[tuple]:
        """Reciprocal rank fusion of the routes (search.sql `search`), `pool` rows deep when given."""
        return self.db.q("search", params if pool is None else params | {"pool": pool})

    def _keep_full_matches(
        self, head: list[tuple], cfg: SystemConfig, plan: QueryPlan, details: _Details
    ) -> list[tuple]:
        """Fusion keeps strong lexical evidence (KEEP_FULL_MATCHES): a meme among the first fused
        rows (`head`) whose name or caption holds every content word is not outranked by memes that
        merely sit in both routes. Only the word route's rows can hold every word exactly. The sort
        is stable: the rest keep their fusion order after the kept memes."""
        details.fetch([r[0] for r in head if r[2] is not None])
        full = {r[0] for r in head if r[2] is not None and full_match(plan, details[r[0]])}
        return sorted(
            (self._kept(r, plan, details, cfg) if r[0] in full else r for r in head),
            key=lambda r: -r[1] if r[0] in full else 0.0,
        )

    @staticmethod
    def _results(
        rows: list[tuple], plan: QueryPlan, details: _Details, evidence: QueryEvidence, cfg: SystemConfig
    ) -> list[Result]:
        """The fused rows as results, each with what it holds of the query and whether the words
        are there (among the first "words_there_top")."""
        details.fetch([r[0] for r in rows])
        there_top = int(cfg.words_there_top or 0)
        results = []
        for n, (item_id, score, lex, fuzzy, vec, sim, sim_all) in enumerate(rows, 1):
            # (an unfinished last word has the live rule (_shown) instead, which shows only the memes
            # holding what was typed so far)
            there = n <= there_top and not plan.prefix and holds_query(plan, details[item_id])
            held = coverage(plan, details.words(item_id))
            results.append(
                Result(item_id, n, float(score), lex, fuzzy, vec, sim, held, details[item_id], evidence, sim_all, there)
            )
        return results

    @classmethod
    def _shown(cls, rule: Mapping[str, Any], plan: QueryPlan, results: list[Result]) -> list[Result]:
        """The list the "no match" rule lets through, or for an unfinished word the memes holding
        what was typed so far."""
        shown = cls.empty_rule(rule, results)
        if not shown and plan.prefix and max((r.coverage for r in results[:3]), default=0.0) >= 0.999:
            # An unfinished word says too little for the evidence model ("ca" is far from "cat" in
            # meaning): the memes holding what was typed so far are the list, as fzf's would be.
            shown = [dataclasses.replace(r, rank=n) for n, r in enumerate((r for r in results if r.coverage > 0), 1)]
        return shown

    @staticmethod
    def _kept(row: tuple, plan: QueryPlan, details: _Details, cfg: SystemConfig) -> tuple:
        """A kept meme's row, its score FULL_MATCH_TIER x (1 + its share of the typed words) (more
        than any fusion sum) plus its fusion score, or with "full_match_by_meaning" its dense route
        term in place of the fusion score: kept memes are ordered by what they hold of what was
        typed, then by meaning (or fusion), and scores still fall with rank."""
        item_id, score, lex, fuzzy, vec, *rest = row
        typed = typed_share(plan, details[item_id]) if cfg.full_match_typed else 0.0
        if cfg.full_match_by_meaning:
            score = cfg.route_weights.dense / (cfg.rrf_k + vec) if vec else 0.0
        return (item_id, FULL_MATCH_TIER * (1.0 + typed) + score, lex, fuzzy, vec, *rest)

    @staticmethod
    def empty_rule(rule: dict[str, Any], results: list[Result]) -> list[Result]:
        """All or nothing: an answer with no evidence is "nothing matches" (see EMPTY_RULES), unless
        the words are there (WORDS_THERE_TOP: a result marked holds_query)."""
        if not results:
            return []
        if any(r.holds_query for r in results):
            return results
        if rule.get("kind") == "logistic":
            model = condition_model(rule, results[0].query)
            if evidence_score(model, evidence_features(results)) < model["threshold"]:
                return []
            return results
        best_sim = max((r.similarity for r in results if r.similarity is not None), default=-1.0)
        best_cov = max((r.coverage for r in results[:3]), default=0.0)
        if not (best_sim >= rule["min_similarity"] or best_cov >= rule["min_coverage"]):
            return []
        if "item_min_similarity" in rule:  # optional: each shown item needs evidence of its own
            kept = [
                r
                for r in results
                if (r.similarity or -1.0) >= rule["item_min_similarity"] or r.coverage >= rule["item_min_coverage"]
            ]
            return [dataclasses.replace(r, rank=n) for n, r in enumerate(kept, 1)]
        return results


def evidence_classes(results: list[Result], rule: Mapping[str, float] = EVIDENCE_DIVIDER) -> list[Result]:
    """Each result with its evidence class, read against the first result's: "words" (it holds
    some of the query's words, no fewer than the first's share less `word_gap`), else "meaning"
    (its dense similarity at least `similarity_ratio` of the first's), else "weaker"; from the first
    weaker result on, every result is "weaker" (one divider: the screen draws it, `-l` stops at it).
    The first result is never weaker. The order and the scores are the fusion's, untouched."""
    if not results:
        return results
    first, below, out = results[0], False, []
    for r in results:
        words = r.coverage > 0 and r.coverage >= first.coverage - rule["word_gap"]
        meaning = (
            r.similarity is not None
            and first.similarity is not None
            and r.similarity >= first.similarity * rule["similarity_ratio"]
        )
        below = below or not (words or meaning or r is first)
        kind = "weaker" if below else "words" if words else "meaning"
        out.append(dataclasses.replace(r, evidence=kind))
    return out


def above_divider(results: list[Result]) -> list[Result]:
    """The results before the "weaker matches" divider (what `-l` prints when -n is not given)."""
    return [r for r in results if r.evidence != "weaker"]


def evidence_features(results: list[Result]) -> dict[str, float]:
    """The evidence a ranked list gives that the library holds what was asked for: the best dense
    similarity and how far it stands above the rest of the list, the best word coverage of the top
    three, whether the word route found anything, and the share of the query's content words the
    library has never seen (a name that is not in the folder)."""
    sims = sorted((r.similarity for r in results[:10] if r.similarity is not None), reverse=True)
    best = sims[0] if sims else 0.0
    margin = best - sum(sims[1:]) / len(sims[1:]) if len(sims) > 1 else 0.0
    q = results[0].query if results else None
    cov = max((r.coverage for r in results[:3]), default=0.0)
    # A meme holding every content word of the query (exactly, by an alias or a correction) is
    # evidence of another kind than a partial match: "full" lets the model weigh it apart.
    # The all-fields vector's best similarity beside the best of any vector: a short caption vector
    # can sit close to a query that names something the library lacks ("my boyfriend ..." for
    # "distracted boyfriend meme"), where the item's whole text does not.
    whole = max((r.all_similarity for r in results[:10] if r.all_similarity is not None), default=0.0)
    # "corrected": words the library never saw that a typo correction stands in for, a guess unless
    # a meme of the top three holds every word with it ("motivaton not foudn" is confirmed, "elon
    # musk" read as "melon" is not); "absent": the query names a known template the library holds
    # no meme of (queries.absent_templates).
    full = float(cov >= 0.999)
    return {
        "similarity": best,
        "margin": margin,
        "coverage": cov,
        "full": full,
        "lexical": float(any(r.lexical_rank is not None for r in results[:10])),
        "unknown": q.unknown_share if q else 0.0,
        "whole": whole,
        "corrected": (q.corrected_share if q else 0.0) * (1.0 - full),
        "absent": float(q.absent_template) if q else 0.0,
    }


def condition_model(rule: dict[str, Any], q: QueryEvidence | None) -> dict[str, Any]:
    """The model of the library's condition: a rule's own coefficients are the annotated library's;
    its "bare" model answers for a library fewer than `bare_below` of whose memes a sidecar described."""
    if "bare" in rule and q is not None and q.described < rule["bare_below"]:
        return rule["bare"]
    return rule


def evidence_score(rule: dict[str, Any], x: dict[str, float]) -> float:
    """The calibrated probability that the query is answerable (a logistic model; EMPTY_RULES)."""
    z = rule["bias"] + sum(w * x[k] for k, w in rule["weights"].items())
    return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))


def describe_empty_rule(rule: dict[str, Any]) -> str:
    """When a system answers "no match", in one line (`mambo systems`)."""
    if rule.get("kind") == "logistic":

        def one(m: dict[str, Any]) -> str:
            terms = " ".join(f"{w:+g}*{k}" for k, w in m["weights"].items())
            return f"P(answerable)<{m['threshold']:g}, logit = {m['bias']:g} {terms}"

        if "bare" in rule:
            return f"annotated: {one(rule)}; bare (described < {rule['bare_below']:g}): {one(rule['bare'])}"
        return one(rule)
    return f"sim<{rule['min_similarity']} and coverage<{rule['min_coverage']}"


def result_json(r: Result) -> dict[str, Any]:
    d = r.details
    return {
        # "asset_id" is the old name of "meme_id", kept for scripts written against it
        "meme_id": r.item_id,
        "asset_id": r.item_id,
        "rank": r.rank,
        "score": round(r.score, 6),
        "route_ranks": {"lexical": r.lexical_rank, "fuzzy": r.fuzzy_rank, "dense": r.dense_rank},
        "similarity": None if r.similarity is None else round(r.similarity, 4),
        "coverage": round(r.coverage, 3),
        # "words", "meaning" or "weaker": above or below the screen's "weaker matches" divider
        "evidence": r.evidence,
        "title": d["title"],
        "template": d["template"],
        "entities": json.loads(d["entities"]),
        # where the shown fields came from: "sidecar", or derived ("catalogue", "user" template,
        # "label", "propagated" from a group label); `derived` holds the derived values themselves
        "template_source": d["template_source"],
        "field_sources": {
            k: d[f"{k}_source"] for k in ("template", "entities", "tags", "description") if d[f"{k}_source"]
        },
        "derived": json.loads(d["derived"]),
        "path": str(Path(d["root_path"]) / d["rel_path"]),
        "sha256": d["sha256"],
        "safety": d["safety"],
        "sensitive": d["safety"] == "sensitive",
        "duplicates": d["duplicate_count"],
        "has_preview": bool(d["has_preview"]),
        "has_attribution": bool(d["creator"] and d["licence"]),
        "ocr_text": d["ocr_text"],
    }


def format_result(r: Result) -> str:
    d = r.details
    badges = []
    if d["template"] and d["template_source"] not in (None, "sidecar"):
        badges.append(f"template: {d['template_source']}")
    routes = "".join(x for x, v in (("L", r.lexical_rank), ("F", r.fuzzy_rank), ("D", r.dense_rank)) if v is not None)
    return result_lines(r, f"[{routes}]", badges)


def result_lines(r: Result, why: str, extra: list[str]) -> str:
    """A result's three text lines: rank, name, `why` it was found and its badges (sensitive, copies,
    then `extra`); its caption; its path."""
    d = r.details
    name = d["title"] or d["template"] or Path(d["rel_path"]).name
    badges = ["sensitive"] if d["safety"] == "sensitive" else []
    badges += [f"+{d['duplicate_count']} dup"] if d["duplicate_count"] else []
    text = " ".join(d["ocr_text"].split())
    line = f"{r.rank:>2}. {clean_line(name)[:40]:<40} {why} {' '.join(badges + extra)}"
    return line.rstrip() + f"\n    {clean_line(text)[:72]}\n    {show_path(Path(d['root_path']) / d['rel_path'])}"


def searcher_for(db: DB, system: str) -> Searcher:
    """A searcher for `system`, with the embedding model loaded only if the system uses it."""
    return Searcher(db, get_embedder() if needs_model(system_config(db, system)) else None)
