"""What a search system's configuration holds: the JSON of a system (search.DEFAULT_SYSTEMS, the
`systems` table) read into frozen dataclasses, each key checked for its name and type when it is
read. The dataclasses are built from the JSON and never written back: the stored JSON and its
SHA-256 (what runs record) are the dict's own."""

from __future__ import annotations

import dataclasses
import functools
import json
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mambomeme.output import MamboError, clean_line

# The dense indexes search.sql knows ('ivf-int8' is a large library's, chosen by the search itself).
DENSE_INDEXES = ("float", "ivf", "bit-rescore", "ivf-int8")


@dataclass(frozen=True)
class FieldWeights:
    """BM25 weight of each indexed field (search.FIELD_WEIGHTS)."""

    title: float
    template: float
    entities: float
    tags: float
    ocr_text: float
    description: float


@dataclass(frozen=True)
class RouteWeights:
    """Each route's weight in reciprocal rank fusion; 0 leaves the route out."""

    lexical: float
    fuzzy: float
    dense: float


@dataclass(frozen=True)
class ModelInfo:
    """The embedding model a system's vectors come from (recorded, not read by the search)."""

    name: str
    revision: str
    text_recipe: str


@dataclass(frozen=True)
class LexicalEvidence:
    """Hybrid's query-dependent fusion (search.LEXICAL_EVIDENCE)."""

    drop_below: float
    boost_at: float
    boost: float
    partial: float | None = None  # None or 0: each lexical hit counts 1


@dataclass(frozen=True)
class DenseFeedback:
    """Pseudo-relevance feedback for the dense route (search.DENSE_FEEDBACK)."""

    top: int
    alpha: float
    best: bool = False


# The "no match" rule's keys by kind. The rule itself stays the mapping it was read from: it is a
# fitted model that `mambo bench no-match` and calibrate write and sweep as JSON, and that
# search.condition_model and evidence_score read as such; these only check it.
@dataclass(frozen=True)
class LogisticModel:
    bias: float
    weights: dict[str, float]
    threshold: float


@dataclass(frozen=True)
class LogisticRule(LogisticModel):
    kind: str
    bare: LogisticModel | None = None
    bare_below: float = 0.0
    calibration: str = ""
    # an evidence rule's filter of each shown item: allowed here (ablations add it), never read
    item_min_similarity: float | None = None
    item_min_coverage: float | None = None


@dataclass(frozen=True)
class EvidenceRule:
    min_similarity: float
    min_coverage: float
    kind: str = "evidence"
    item_min_similarity: float | None = None
    item_min_coverage: float | None = None
    calibration: str = ""


@dataclass(frozen=True)
class SystemConfig:
    """One search system. A key the JSON may leave out takes the default the search has always
    given it (older stored versions lack the newer keys)."""

    field_weights: FieldWeights
    route_weights: RouteWeights
    candidate_depth: int  # candidates each route gives fusion
    rrf_k: float  # reciprocal rank fusion: weight / (rrf_k + rank)
    dense_index: str  # one of DENSE_INDEXES
    empty_rule: Mapping[str, Any]  # when a list is "no match": an EvidenceRule or a LogisticRule
    # None: the value dense_index.py gives (DENSE_OVERSAMPLE, large_probe(), CODES_K, CODES_RESCORE)
    dense_oversample: int | None = None  # 'bit-rescore': candidates per depth
    ivf_probe: int = 0
    large_probe: int | None = None  # a large library's probe
    codes_k: int | None = None
    codes_rescore: int | None = None
    field_vectors: bool = False  # an item scores its best vector (all fields, caption, picture, looks)
    looks_weight: float = 1.0  # the "looks" vector's similarity (the picture description alone) counts x this
    use_aliases: bool = True
    correct_typos: bool = True
    two_edit_typos: bool = False
    words_there_top: int | None = None  # None or 0: no list is kept for holding the words
    keep_full_matches: int | None = None  # None or 0: fusion order alone
    full_match_typed: bool = False
    full_match_by_meaning: bool = False
    lexical_evidence: LexicalEvidence | None = None
    dense_feedback: DenseFeedback | None = None
    model: ModelInfo | None = None
    safety_policy: str = ""
    collapse_exact_duplicates: str = ""

    @staticmethod
    def of(data: Mapping[str, Any], name: str = "") -> SystemConfig:
        """`data` checked and typed; a key it should not hold, or a value of the wrong type, is a
        one-line MamboError naming the system and the key."""
        try:
            config = _build(SystemConfig, data, "")
            rule = config.empty_rule
            _build(LogisticRule if rule.get("kind") == "logistic" else EvidenceRule, rule, "empty_rule.")
            if config.dense_index not in DENSE_INDEXES:
                raise _Wrong(f"dense_index must be one of {', '.join(DENSE_INDEXES)}, not {config.dense_index!r}")
        except _Wrong as e:
            system = f"search system {clean_line(name)!r}" if name else "a search configuration"
            raise MamboError(clean_line(f"{system}: {e}")) from None
        return config

    @property
    def needs_model(self) -> bool:
        """Whether the system has a dense (embedding) route."""
        return self.route_weights.dense > 0


# Configurations read, by their JSON: a search reads its system's configuration each time (~0.2 ms
# to check, ~0.02 ms to look up).
_READ: dict[str, SystemConfig] = {}


def read_config(data: Mapping[str, Any], name: str = "") -> SystemConfig:
    """SystemConfig.of, once per configuration."""
    key = json.dumps(data, sort_keys=True)
    if key not in _READ:
        config = SystemConfig.of(data, name)
        if len(_READ) >= 64:  # a few systems per process, more in a sweep
            _READ.clear()
        _READ[key] = config
    return _READ[key]


class _Wrong(Exception):
    """What is wrong with a key (SystemConfig.of says which system)."""


@functools.cache
def _fields(cls: type) -> dict[str, tuple[Any, bool]]:
    """Each field's type and whether the JSON must hold it."""
    hints = typing.get_type_hints(cls)
    return {f.name: (hints[f.name], f.default is dataclasses.MISSING) for f in dataclasses.fields(cls)}


def _build(cls: type, data: Any, path: str) -> Any:
    if not isinstance(data, Mapping):
        raise _Wrong(f"{path.rstrip('.') or 'the configuration'} must be a JSON object, not {_kind(data)}")
    fields = _fields(cls)
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise _Wrong(f"unknown key {path}{unknown[0]} (known: {', '.join(fields)})")
    missing = [k for k, (_t, required) in fields.items() if required and k not in data]
    if missing:
        raise _Wrong(f"{path}{missing[0]} is missing")
    return cls(**{k: _value(fields[k][0], v, f"{path}{k}") for k, v in data.items()})


def _value(hint: Any, value: Any, path: str) -> Any:
    """`value` as a field of type `hint` holds it: a nested dataclass built, anything else as it
    is (an int stays an int where a float is asked for: the numbers reach SQL as they were)."""
    options = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
    if value is None and type(None) in options:
        return None
    for option in options:
        if dataclasses.is_dataclass(option) and isinstance(value, Mapping):
            return _build(option, value, path + ".")
        if _holds(option, value, path):
            return value
    wanted = " or ".join(_name(o) for o in options if o is not type(None))
    raise _Wrong(f"{path} must be {wanted}, not {_kind(value)}")


def _holds(option: Any, value: Any, path: str) -> bool:
    if option is Any:
        return True
    if option is float:
        return isinstance(value, int | float)
    if option in (int, bool, str):
        return isinstance(value, option)
    if typing.get_origin(option) in (dict, Mapping) and isinstance(value, Mapping):
        _key, item = typing.get_args(option)
        for k, v in value.items():
            _value(item, v, f"{path}.{k}")
        return True
    return False


def _name(t: Any) -> str:
    if dataclasses.is_dataclass(t) or typing.get_origin(t) in (dict, Mapping):
        return "a JSON object"
    return {float: "a number", int: "an integer", bool: "true or false", str: "a string"}.get(t, str(t))


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "true or false", int: "an integer", float: "a number", str: "a string", list: "a list"}.get(
        type(value), "a JSON object" if isinstance(value, Mapping) else type(value).__name__
    )
