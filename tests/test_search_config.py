"""A search system's configuration, typed and checked when it is read (mambomeme/search_config.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mambomeme.library import DB
from mambomeme.output import MamboError
from mambomeme.search import DEFAULT_SYSTEMS, config_sha, load_system, sync_systems, system_config
from mambomeme.search_config import SystemConfig


def test_the_built_in_systems_read_as_typed_configurations() -> None:
    for name, cfg in DEFAULT_SYSTEMS.items():
        typed = SystemConfig.of(cfg, name)
        assert typed.candidate_depth == cfg["candidate_depth"] and typed.rrf_k == cfg["rrf_k"]
        assert typed.route_weights.dense == cfg["route_weights"]["dense"]
        assert typed.needs_model == (name != "bm25")
        assert typed.empty_rule is cfg["empty_rule"]  # the fitted rule stays the mapping it was
    hybrid = SystemConfig.of(DEFAULT_SYSTEMS["hybrid"])
    assert (
        hybrid.dense_feedback is not None
        and hybrid.dense_feedback.top == DEFAULT_SYSTEMS["hybrid"]["dense_feedback"]["top"]
    )
    assert hybrid.lexical_evidence is not None and SystemConfig.of(DEFAULT_SYSTEMS["dense"]).lexical_evidence is None


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"rrf": 60}, "unknown key rrf (known: field_weights, "),
        ({"rrf_k": "60"}, "rrf_k must be a number, not a string"),
        ({"route_weights": {"lexical": 1.0, "dense": 1.0}}, "route_weights.fuzzy is missing"),
        ({"dense_feedback": {"top": "5", "alpha": 0.45}}, "dense_feedback.top must be an integer, not a string"),
        (
            {"lexical_evidence": {"drop_below": 0.5, "boost_at": 0.75, "boost": 2.0, "weight": 1}},
            "unknown key lexical_evidence.weight",
        ),
        ({"use_aliases": "yes"}, "use_aliases must be true or false, not a string"),
        ({"dense_index": "ivff"}, "dense_index must be one of float, ivf, bit-rescore, ivf-int8, not 'ivff'"),
        ({"empty_rule": {"kind": "logistic", "bias": 1.0, "threshold": 0.5}}, "empty_rule.weights is missing"),
        (
            {"empty_rule": {"min_similarity": 0.3, "min_coverage": "half"}},
            "empty_rule.min_coverage must be a number, not a string",
        ),
    ],
)
def test_a_wrong_key_or_type_is_a_one_line_error_naming_it(change: dict, said: str) -> None:
    with pytest.raises(MamboError) as raised:
        SystemConfig.of(DEFAULT_SYSTEMS["hybrid"] | change, "hybrid")
    message = str(raised.value)
    assert message.startswith("search system 'hybrid': ") and said in message and "\n" not in message


def test_a_stored_configuration_is_checked_and_its_sha_is_the_jsons(tmp_path: Path) -> None:
    db = DB(tmp_path / "lib.sqlite")
    sync_systems(db)
    stored = {r[0]: (r[2], json.loads(r[5])) for r in db.q("list_systems")}
    assert all(sha == config_sha(cfg) == config_sha(DEFAULT_SYSTEMS[n]) for n, (sha, cfg) in stored.items())
    assert load_system(db, "hybrid") == SystemConfig.of(DEFAULT_SYSTEMS["hybrid"])
    bad = DEFAULT_SYSTEMS["bm25"] | {"candidate_depth": 50.5}
    with db.write():
        db.q(
            "insert_system",
            {"name": "odd", "config": json.dumps(bad), "config_sha256": config_sha(bad), "notes": "test"},
        )
    said = r"^search system 'odd': candidate_depth must be an integer, not a number$"
    for read in (system_config, load_system):
        with pytest.raises(MamboError, match=said):
            read(db, "odd")
    db.close()
