"""The real-style development set (benchdata/real): the fixed split rule, the caption filter, and the
committed partition's consistency with the committed folder truth, without the snapshot (CI has none)."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import sys

import pytest

from helpers import REPO
from mambomeme.lab.evaluation import SLICES, read_partition

REAL = REPO / "benchdata" / "real"
_spec = importlib.util.spec_from_file_location("real_snapshot", REAL / "snapshot.py")
snapshot = importlib.util.module_from_spec(_spec)
sys.modules["real_snapshot"] = snapshot  # its dataclass looks its module up there
_spec.loader.exec_module(snapshot)


def lines(name: str) -> list[dict]:
    return [json.loads(x) for x in (REAL / name).read_text(encoding="utf-8").splitlines() if x.strip()]


@pytest.mark.parametrize("pid", ["3vmgm2", "2cpxta", "a", "zzzzzz"])
def test_split_is_the_first_hex_digit_of_the_post_ids_sha256(pid: str) -> None:
    first = hashlib.sha256(pid.encode("ascii")).hexdigest()[0]
    assert snapshot.is_dev(pid) == (first in "01234567")
    assert snapshot.post_id(f"https://example.invalid/i/{pid}") == pid


def test_reserved_captions_are_skipped_before_their_boxes_are_read() -> None:
    class Boxes(list):
        def __iter__(self):  # a reserved caption's boxes must never be touched
            raise AssertionError("boxes read")

    reserved = next(p for p in (f"p{i}" for i in range(100)) if not snapshot.is_dev(p))
    dev = next(p for p in (f"p{i}" for i in range(100)) if snapshot.is_dev(p))
    data = json.dumps([{"post": f"/i/{reserved}", "boxes": ["x"]}, {"post": f"/i/{dev}", "boxes": ["y"]}])
    assert [pid for pid, _ in snapshot.dev_entries(data.encode())] == [dev]


@pytest.mark.parametrize(
    ("boxes", "kept"),
    [
        (["top", "bottom"], ["top", "bottom"]),
        (["don\u2019t  stop", ""], ["don't stop", ""]),
        (["", " "], None),
        (["see www.example.invalid"], None),
        (["x" * 201], None),
        (["caf\u00e9"], None),
    ],
)
def test_caption_filter(boxes: list[str], kept: list[str] | None) -> None:
    assert snapshot.clean_boxes(boxes) == kept


def test_partition_matches_the_committed_folder() -> None:
    meta, queries = read_partition(REAL / "dev.jsonl")
    assert (meta["benchmark"], meta["partition"], meta["status"]) == ("mmts-bench-real", "dev", "provisional")
    manifest = (REAL / "manifest.sha256").read_bytes()
    assert meta["corpus_manifest_sha256"] == hashlib.sha256(manifest).hexdigest()
    files = {line.split("  ", 1)[1] for line in manifest.decode().splitlines()}
    truth = lines("truth.jsonl")
    assert {t["file"] for t in truth} == files
    unsafe = {r["post"] for r in lines("safety.jsonl") if r["class"] in ("unsafe", "critical")}
    count = {s: 0 for s in (*SLICES, "no-match")}
    for q in queries:
        count[q["slice"]] += 1
        assert q["annotator"]["name"] == "mambo-real-helper-v1" and q["judgement"]["status"] == "provisional"
        assert set(q["relevant"]) <= files and set(q["exact"]) <= set(q["relevant"]) and set(q["withheld"]) <= files
        assert not set(q["relevant"]) & set(q["withheld"])
        assert not {q["ids"][f] for f in q["relevant"]} & unsafe
        if q["slice"] == "no-match":
            assert not q["relevant"] and q["audit"]["corpus_version"] == meta["corpus_manifest_sha256"]
        else:
            assert q["relevant"]
    assert min(count[s] for s in SLICES) >= 30 and count["no-match"] >= 60
    assert sum(t["kind"] == "meme" for t in truth) >= 1500
    assert len({t["template"] for t in truth if t["kind"] == "meme"}) >= 80


def test_the_judged_labels_cover_the_pool_and_folds_never_split_a_template_or_family() -> None:
    spec = importlib.util.spec_from_file_location("real_folds", REAL / "folds.py")
    folds = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(folds)
    queries = {q["id"]: q for q in lines("dev.jsonl")}
    labels = lines("judgements/dev-set1.jsonl")
    truth = {t["file"] for t in lines("truth.jsonl")}
    assert {r["qid"] for r in labels} <= set(queries) and {r["path"] for r in labels} <= truth
    assert all(r["status"] in ("agreed", "adjudicated") and 0 <= r["grade"] <= 3 for r in labels)
    # The safety labels class every file of the folder, each with the clause that decided it.
    safety = lines("judgements/safety-labels.jsonl")
    assert {r["file"] for r in safety} == truth
    assert all(r["safety"] == "safe" or r["clause"] not in ("", "-") for r in safety)
    by_query = folds.query_folds()
    assert set(by_query) == set(queries) and set(by_query.values()) == set(range(folds.FOLDS))
    family_folds: dict[str, set[int]] = {}
    for qid, fold in by_query.items():
        family_folds.setdefault(queries[qid]["family"], set()).add(fold)
    assert all(len(f) == 1 for f in family_folds.values())
