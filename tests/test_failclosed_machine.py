"""A stateful property test of what may be shown. Over a small folder, steps add and remove exact
and near copies, write, edit and delete sidecars and manifest lines (with the forms that must be
read strictly: repeated keys, near-miss keys, values that cannot be read), make and take back
safety decisions, and run `mambo add` and `mambo prune`. After every step that the library sees,
no file of an item that any indexed metadata or decision marks private, withdrawn, unsafe or
critical is in servable_items, searchable by vector, returned by search, or known to the
vocabulary; and an item nothing marks is shown. Real CLI, SQLite file, OCR engine and model."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule
from PIL import Image

from helpers import IMAGES, invoke, open_db

pytestmark = pytest.mark.slow  # real PTYs, processes and many ingests

# (text of a sidecar or of a manifest line's fields, fields it holds hidden, fields it states readably)
VARIANTS: list[tuple[str, frozenset[str], frozenset[str]]] = [
    ('"private": true', frozenset({"private"}), frozenset({"private"})),
    ('"private": false', frozenset(), frozenset({"private"})),
    ('"tags": ["x"]', frozenset(), frozenset()),
    ('"title": "a title"', frozenset(), frozenset()),
    ('"Private": true', frozenset({"private"}), frozenset()),
    ('"PRIVATE": false', frozenset({"private"}), frozenset()),
    ('"private": true, "private": false', frozenset({"private"}), frozenset()),
    ('"safety": "critical", "safety": "safe"', frozenset({"safety"}), frozenset()),
    ('"safety": "unsafe"', frozenset({"safety"}), frozenset({"safety"})),
    ('"rights": "withdrawn", "rights": "cleared"', frozenset({"rights"}), frozenset()),
    ('"rights": "withdrawn"', frozenset({"rights"}), frozenset({"rights"})),
    ('"private": "yes"', frozenset({"private"}), frozenset()),
    ('"safety": "safe", "rights": "cleared", "private": false', frozenset(),
     frozenset({"safety", "rights", "private"})),
]
BROKEN = len(VARIANTS)  # a sidecar that is not JSON: held private, states nothing
EXACT_SLOTS = ["a.png", "b.png"]
NEAR_SLOT = "n.jpg"


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """X and Y: two different memes; N: a re-encoded, resized copy of X (near-identical)."""
    d = tmp_path_factory.mktemp("sources")
    src = Image.open(IMAGES / "cat-01.png").convert("RGB")
    src.resize((src.width * 9 // 10, src.height * 9 // 10)).save(d / "n.jpg", quality=70)
    return {"X": (IMAGES / "cat-01.png").read_bytes(), "Y": (IMAGES / "duck-01.png").read_bytes(),
            "N": (d / "n.jpg").read_bytes()}


def test_nothing_marked_is_ever_shown(tmp_path_factory: pytest.TempPathFactory, sources: dict[str, bytes]) -> None:
    sha = {k: hashlib.sha256(v).hexdigest() for k, v in sources.items()}
    caption_of_x = "knocks your coffee off the table"

    class Library(RuleBasedStateMachine):
        @initialize()
        def start(self) -> None:
            root = tmp_path_factory.mktemp("machine")
            self.folder = root / "memes"
            self.folder.mkdir()
            self.db = root / "lib.sqlite"
            self.files: dict[str, str] = {}  # slot -> source
            self.sidecars: dict[str, int] = {}  # slot -> variant
            self.lines: dict[str, int] = {}  # slot -> manifest variant
            self.decisions: dict[str, str] = {}  # source -> class
            self.indexed: dict[str, tuple[str, int | None, int | None]] = {}  # slot -> what `add` last read
            self.put("a.png", "X")
            self.put("b.png", "X")  # two exact copies from the start: one item, two files
            self.run_add()

        # -- the folder
        def put(self, slot: str, source: str) -> None:
            (self.folder / slot).write_bytes(sources[source])
            self.files[slot] = source

        @rule(slot=st.sampled_from(EXACT_SLOTS), source=st.sampled_from(["X", "Y"]))
        def copy_in(self, slot: str, source: str) -> None:
            self.put(slot, source)
            self.run_add()

        @rule()
        def near_copy_in(self) -> None:
            self.put(NEAR_SLOT, "N")
            self.run_add()

        @rule(slot=st.sampled_from([*EXACT_SLOTS, NEAR_SLOT]))
        def remove(self, slot: str) -> None:
            (self.folder / slot).unlink(missing_ok=True)
            self.files.pop(slot, None)
            self.run_add()

        def sidecar(self, slot: str, variant: int) -> None:
            text = "{not json" if variant == BROKEN else "{" + VARIANTS[variant][0] + "}"
            (self.folder / (Path(slot).stem + ".json")).write_text(text)
            self.sidecars[slot] = variant

        @rule(slot=st.sampled_from([*EXACT_SLOTS, NEAR_SLOT]), variant=st.integers(0, BROKEN))
        def write_sidecar(self, slot: str, variant: int) -> None:
            self.sidecar(slot, variant)
            self.run_add()

        @rule(first=st.integers(0, BROKEN), second=st.integers(0, BROKEN))
        def write_both_sidecars(self, first: int, second: int) -> None:
            """Both exact copies described at once, each its own way."""
            self.sidecar(EXACT_SLOTS[0], first)
            self.sidecar(EXACT_SLOTS[1], second)
            self.run_add()

        @rule(slot=st.sampled_from([*EXACT_SLOTS, NEAR_SLOT]))
        def delete_sidecar(self, slot: str) -> None:
            (self.folder / (Path(slot).stem + ".json")).unlink(missing_ok=True)
            self.sidecars.pop(slot, None)
            self.run_add()

        @rule(slot=st.sampled_from([*EXACT_SLOTS, NEAR_SLOT]), variant=st.integers(0, len(VARIANTS) - 1),
              present=st.booleans())
        def manifest_line(self, slot: str, variant: int, present: bool) -> None:
            if present:
                self.lines[slot] = variant
            else:
                self.lines.pop(slot, None)
            text = "".join(f'{{"file": "{s}", {VARIANTS[v][0]}}}\n' for s, v in sorted(self.lines.items()))
            manifest = self.folder / "mambo.jsonl"
            manifest.write_text(text) if text else manifest.unlink(missing_ok=True)
            self.run_add()

        # -- the library
        def run_add(self) -> None:
            res = invoke("--db", self.db, "add", "-q", self.folder, expect=None)
            assert res.exit_code in (0, 1) and "Traceback" not in res.output
            # A file gone from the folder stays in the library, with what it said, until `prune`.
            self.indexed = {**{s: v for s, v in self.indexed.items() if s not in self.files},
                            **{s: (src, self.sidecars.get(s), self.lines.get(s)) for s, src in self.files.items()}}
            self.check()

        @rule()
        def prune(self) -> None:
            invoke("--db", self.db, "prune", "--force")
            self.indexed = {s: v for s, v in self.indexed.items() if (self.folder / s).exists()}
            self.check()

        @rule(source=st.sampled_from(["X", "Y", "N"]), klass=st.sampled_from(["safe", "unsafe", "critical"]))
        def decide(self, source: str, klass: str) -> None:
            item = self.item_of(source)
            if item is None:
                return
            invoke("--db", self.db, "safety", "set", str(item), klass, "--by", "tester")
            self.decisions[source] = klass
            self.check()

        @rule(source=st.sampled_from(["X", "Y", "N"]))
        def clear(self, source: str) -> None:
            item = self.item_of(source)
            if item is None or source not in self.decisions:
                return
            invoke("--db", self.db, "safety", "clear", str(item))
            del self.decisions[source]
            self.check()

        # -- what must hold
        def item_of(self, source: str) -> int | None:
            d = open_db(self.db)
            try:
                return d.scalar("SELECT item_id FROM items WHERE sha256 = ?", (sha[source],))
            finally:
                d.close()

        def marks(self, source: str) -> tuple[set[str], set[str]]:
            """(fields held hidden, fields stated readably) of one content, as `add` last read it."""
            hidden: set[str] = set()
            stated: set[str] = set()
            for src, side, line in self.indexed.values():
                if src != source:
                    continue
                for variant in (side, line):
                    if variant == BROKEN:
                        hidden.add("private")
                    elif variant is not None:
                        hidden |= VARIANTS[variant][1]
                        stated |= VARIANTS[variant][2]
            if source in self.decisions:  # a person's decision replaces every other class
                hidden.discard("safety")
                stated.add("safety")
                if self.decisions[source] in ("unsafe", "critical"):
                    hidden.add("safety")
            return hidden, stated

        def check(self) -> None:
            d = open_db(self.db)
            try:
                rows = {s: (i, g, bool(v)) for s, i, g, v in d.con.execute(
                    "SELECT i.sha256, i.item_id, i.perceptual_group, "
                    "i.item_id IN (SELECT item_id FROM servable_items) FROM items i")}
                vec_servable = dict(d.con.execute("SELECT item_id, servable FROM item_vectors"))
                servable = {i for i, _g, v in rows.values() if v}
                vocabulary = {t for (t,) in d.con.execute("SELECT term FROM vocabulary")}
                source_of = {v: k for k, v in sha.items()}
                groups: dict[int, list[str]] = {}
                for s, (_i, g, _v) in rows.items():
                    groups.setdefault(g, []).append(source_of[s])
                for s, (item, group, shown) in rows.items():
                    source = source_of[s]
                    hidden, stated = self.marks(source)
                    for other in groups[group]:
                        if other != source:
                            hidden |= self.marks(other)[0] - stated
                    assert not (hidden and shown), (source, hidden, self.indexed, self.decisions)
                    if hidden:
                        assert not vec_servable.get(item), (source, "vector servable")
                        words = {w for w in re.findall(r"[a-z]{4,}", (d.scalar(
                            "SELECT ocr_text FROM items WHERE item_id = ?", (item,)) or "").lower())}
                        for w in words & vocabulary:
                            holders = [r[0] for r in d.con.execute(
                                "SELECT rowid FROM items_fts WHERE items_fts MATCH ?", (f'"{w}"',))]
                            assert any(h in servable for h in holders), (source, w)
                    elif all(not self.marks(o)[0] and not self.marks(o)[1] for o in groups[group]) \
                            and not any(o in self.decisions for o in groups[group]):
                        assert shown, (source, "nothing marks it, yet it is hidden")
            finally:
                d.close()
            # Search itself: a hidden X is never in the list for its own caption.
            x = rows.get(sha["X"])
            if x and not x[2]:
                out = invoke("--db", self.db, "search", "--json", "-s", "bm25", caption_of_x, expect=None).output
                assert all(json.loads(line).get("asset_id") != x[0] for line in out.splitlines()
                           if line.startswith("{") and "asset_id" in line)

    Library.TestCase.settings = settings(max_examples=3, stateful_step_count=12, deadline=None,
                                         suppress_health_check=list(HealthCheck))
    try:
        Library.TestCase().runTest()
    finally:
        for p in tmp_path_factory.getbasetemp().glob("machine*"):
            shutil.rmtree(p, ignore_errors=True)
