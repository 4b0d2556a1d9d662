"""The picture map's training drawings (benchdata/picture_map/training-pins.jsonl) hold none of
benchmark v1's drawings: not a pinned SVG (by path or content), not one of the same file-stem family,
not one whose render is within a few perceptual-hash bits of a v1 template's render; nor any of the
test fixture's drawings. The stored hashes are checked against real renders of a sample
(rsvg-convert, as the training script draws)."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PINS = REPO / "benchdata" / "picture_map" / "training-pins.jsonl"
EXCLUDED = REPO / "benchdata" / "picture_map" / "excluded.json"
V1_PINS = REPO / "benchdata" / "v1" / "pins.json"
FIXTURE_RECIPE = REPO / "benchdata" / "fixture" / "recipe.jsonl"
SVG_ROOT = Path("/usr/share/openclipart/svg")


def family(rel: str) -> str:
    """A file's stem family: its name without trailing digits or a version suffix (as the training
    script's `family`)."""
    stem = Path(rel).stem.lower()
    return re.sub(r"([ _.-]*(v|ver|version|rev)?[ _.-]*\d+[a-z]?)+$|[ _.-]+$", "", stem) or stem


def bits(a: str, b: str) -> int:
    return bin(int(a, 16) ^ int(b, 16)).count("1")


@pytest.fixture(scope="module")
def training() -> list[dict]:
    return [json.loads(line) for line in PINS.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="module")
def excluded() -> dict:
    return json.loads(EXCLUDED.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def v1() -> list[dict]:
    return json.loads(V1_PINS.read_text(encoding="utf-8"))["svgs"]


def test_no_v1_drawing_by_path_content_or_family(training: list[dict], v1: list[dict]) -> None:
    assert len(training) > 4000
    paths = {p["svg"] for p in v1}
    shas = {p["sha256"] for p in v1}
    families = {family(p) for p in paths}
    assert not [t["svg"] for t in training if t["svg"] in paths]
    assert not [t["svg"] for t in training if t["sha256"] in shas]
    assert not [t["svg"] for t in training if family(t["svg"]) in families]
    assert len({t["svg"] for t in training}) == len(training)


def test_no_drawing_resembles_a_v1_template(training: list[dict], excluded: dict, v1: list[dict]) -> None:
    templates = excluded["template_phash"]
    assert set(templates) == {p["svg"] for p in v1}
    limit = excluded["phash_bits"]
    assert limit >= 8
    near = [(t["svg"], s) for t in training for s, h in templates.items() if bits(t["phash"], h) <= limit]
    assert not near
    # the excluded drawings were excluded for a reason that holds
    counts = excluded["counts"]
    assert counts == {k: len(v) for k, v in excluded["excluded"].items()}
    assert counts["pinned"] >= len(v1) and counts["family"] > 0 and counts["resembles"] > 0


def test_no_fixture_drawing(training: list[dict], excluded: dict) -> None:
    # the fixture's memes are found by their pictures in tests: by what the map learned elsewhere
    fixture = set()
    for line in FIXTURE_RECIPE.read_text(encoding="utf-8").splitlines():
        t = json.loads(line).get("template") if line.strip() else None
        if isinstance(t, dict) and t.get("svg"):
            fixture.add(t["svg"])
    assert len(fixture) >= 15 and set(excluded["fixture_phash"]) == fixture
    families = {family(p) for p in fixture}
    assert not [t["svg"] for t in training if t["svg"] in fixture or family(t["svg"]) in families]
    limit = excluded["phash_bits"]
    assert not [t["svg"] for t in training for h in excluded["fixture_phash"].values() if bits(t["phash"], h) <= limit]


def render_phash(svg: Path, tmp: Path) -> str:
    import imagehash
    from PIL import Image

    out = tmp / (svg.stem + ".png")
    subprocess.run(
        ["rsvg-convert", "-w", "256", "-h", "256", "-a", "-b", "white", str(svg), "-o", str(out)], check=True
    )
    with Image.open(out) as im:
        return str(imagehash.phash(im.convert("RGB")))


@pytest.mark.skipif(
    not SVG_ROOT.is_dir() or shutil.which("rsvg-convert") is None, reason="openclipart-svg / librsvg2-bin"
)
def test_stored_hashes_are_the_renders(training: list[dict], excluded: dict, tmp_path: Path) -> None:
    # a sample of training drawings and of v1 templates, drawn again: content and hashes as stored
    for t in training[:: len(training) // 4][:4]:
        svg = SVG_ROOT / t["svg"]
        assert hashlib.sha256(svg.read_bytes()).hexdigest() == t["sha256"]
        assert bits(render_phash(svg, tmp_path), t["phash"]) <= 2, t["svg"]
    for rel, h in list(excluded["template_phash"].items())[::150]:
        assert bits(render_phash(SVG_ROOT / rel, tmp_path), h) <= 2, rel
