"""A stateful property test of what may be shown. Over a small folder, steps add, remove, rename and
re-save exact and near copies, write, edit and delete sidecars and manifest lines (with the forms
that must be read strictly: repeated keys, near-miss keys, values that cannot be read), make and
take back safety and privacy decisions, try `sql --write` on what the state rule derives, and run
`mambo add` and `mambo prune`. After every step that the library sees, no file of an item that any
indexed metadata or decision marks private, withdrawn, unsafe or critical is in servable_items,
searchable by vector, returned by search, printed by `search -l`, or known to the vocabulary; and
an item nothing marks is shown. Real CLI, SQLite file, OCR engine and model."""

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
    (
        '"safety": "safe", "rights": "cleared", "private": false',
        frozenset(),
        frozenset({"safety", "rights", "private"}),
    ),
]
BROKEN = len(VARIANTS)  # a sidecar that is not JSON: held private, states nothing
EXACT_SLOTS = ["a.png", "b.png"]
NEAR_SLOT = "n.jpg"
RENAMED = "c.png"  # where a rename moves an exact copy (its sidecar stays behind, naming no file)
DERIVED_EDITS = [
    "UPDATE items SET private = 0",
    "UPDATE items SET safety = 'safe', rights = 'cleared'",
    "UPDATE files SET private = 0, safety = NULL, rights = NULL",
    "DELETE FROM privacy_decisions",
    "DELETE FROM safety_decisions",
]


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """X and Y: two different memes; N: a re-encoded, resized copy of X (near-identical); R: X re-saved
    with the same pixels (an optimiser's work: other bytes, the same meme)."""
    d = tmp_path_factory.mktemp("sources")
    src = Image.open(IMAGES / "cat-01.png").convert("RGB")
    src.resize((src.width * 9 // 10, src.height * 9 // 10)).save(d / "n.jpg", quality=70)
    Image.open(IMAGES / "cat-01.png").save(d / "r.png", compress_level=1)
    return {
        "X": (IMAGES / "cat-01.png").read_bytes(),
        "Y": (IMAGES / "duck-01.png").read_bytes(),
        "N": (d / "n.jpg").read_bytes(),
        "R": (d / "r.png").read_bytes(),
    }


def test_nothing_marked_is_ever_shown(tmp_path_factory: pytest.TempPathFactory, sources: dict[str, bytes]) -> None:
    sha = {k: hashlib.sha256(v).hexdigest() for k, v in sources.items()}
    caption_of = {"X": "knocks your coffee off the table", "Y": "explained the bug to the duck"}

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
            # source -> (class, the source decided on, when): a person's safety decision, on the source
            # itself or followed from a near copy (only raising that copy's own class)
            self.decisions: dict[str, tuple[str, str, int]] = {}
            self.privacy: dict[str, tuple[str, int]] = {}  # source -> (origin, when): a privacy decision
            self.clock = 0
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

        @rule(slot=st.sampled_from(EXACT_SLOTS))
        def rename(self, slot: str) -> None:
            """Renamed, its sidecar left behind."""
            if slot not in self.files or RENAMED in self.files:
                return
            (self.folder / slot).rename(self.folder / RENAMED)
            self.files[RENAMED] = self.files.pop(slot)
            self.run_add()

        @rule(slot=st.sampled_from([*EXACT_SLOTS, RENAMED]))
        def resave(self, slot: str) -> None:
            """Re-saved with the same pixels, in place."""
            if self.files.get(slot) != "X":
                return
            self.put(slot, "R")
            self.run_add()

        @rule(slot=st.sampled_from([*EXACT_SLOTS, NEAR_SLOT, RENAMED]))
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

        @rule(
            slot=st.sampled_from([*EXACT_SLOTS, NEAR_SLOT]),
            variant=st.integers(0, len(VARIANTS) - 1),
            present=st.booleans(),
        )
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
        def groups(self) -> dict[str, set[str]]:
            """source -> the sources of its near-identical group, as the library holds them."""
            if not self.db.exists():
                return {}
            d = open_db(self.db)
            try:
                rows = list(d.con.execute("SELECT sha256, perceptual_group FROM items"))
            finally:
                d.close()
            source_of = {v: k for k, v in sha.items()}
            by_group: dict[int, set[str]] = {}
            for s, g in rows:
                by_group.setdefault(g, set()).add(source_of[s])
            return {src: members for members in by_group.values() for src in members}

        def follow(self, new: set[str]) -> None:
            """Items new to the library take the newest decisions of their group they lack."""
            groups = self.groups()
            for src in sorted(new):
                others = groups.get(src, set()) - {src}
                if src not in self.decisions:
                    taken = [self.decisions[o] for o in others if o in self.decisions]
                    if taken:
                        klass, origin, _when = max(taken, key=lambda t: t[2])
                        self.decisions[src] = (klass, origin, max(t[2] for t in taken))
                if src not in self.privacy:
                    taken_p = [self.privacy[o] for o in others if o in self.privacy]
                    if taken_p:
                        self.privacy[src] = max(taken_p, key=lambda t: t[1])

        def run_add(self) -> None:
            before = set(self.groups())
            res = invoke("--db", self.db, "add", "-q", self.folder, expect=None)
            assert res.exit_code in (0, 2) and "Traceback" not in res.output
            self.follow(set(self.groups()) - before)
            # A file gone from the folder stays in the library, with what it said, until `prune`.
            self.indexed = {
                **{s: v for s, v in self.indexed.items() if s not in self.files},
                **{s: (src, self.sidecars.get(s), self.lines.get(s)) for s, src in self.files.items()},
            }
            self.check()

        @rule()
        def prune(self) -> None:
            invoke("--db", self.db, "prune", "--force")
            gone = {s: v for s, v in self.indexed.items() if not (self.folder / s).exists()}
            self.indexed = {s: v for s, v in self.indexed.items() if (self.folder / s).exists()}
            living = {v[0] for v in self.indexed.values()}
            for src, side, line in gone.values():
                # Metadata that said private holds the content it described while it lives on.
                said_private = any(v == BROKEN or v is not None and "private" in VARIANTS[v][1] for v in (side, line))
                if said_private and src in living and src not in self.privacy:
                    self.clock += 1
                    self.privacy[src] = (src, self.clock)
            self.check()

        @rule(source=st.sampled_from(["X", "Y", "N", "R"]))
        def make_private(self, source: str) -> None:
            item = self.item_of(source)
            if item is None:
                return
            invoke("--db", self.db, "private", str(item), "--by", "tester")
            self.clock += 1
            for member in self.groups()[source]:
                self.privacy[member] = (source, self.clock)
            self.check()

        @rule(source=st.sampled_from(["X", "Y", "N", "R"]))
        def clear_private(self, source: str) -> None:
            item = self.item_of(source)
            if item is None:
                return
            invoke("--db", self.db, "private", str(item), "--clear")
            if source in self.privacy:
                origin = self.privacy[source][0]
                self.privacy = {s: v for s, v in self.privacy.items() if v[0] != origin}
            self.check()

        @rule(statement=st.sampled_from(DERIVED_EDITS))
        def sql_write(self, statement: str) -> None:
            res = invoke("--db", self.db, "sql", "--write", statement, expect=2)
            assert "refused" in res.output and "mambo " in res.output
            self.check()

        @rule(source=st.sampled_from(["X", "Y", "N", "R"]), klass=st.sampled_from(["safe", "unsafe", "critical"]))
        def decide(self, source: str, klass: str) -> None:
            item = self.item_of(source)
            if item is None:
                return
            invoke("--db", self.db, "safety", "set", str(item), klass, "--by", "tester")
            self.clock += 1
            for member in self.groups()[source]:
                self.decisions[member] = (klass, source, self.clock)
            self.check()

        @rule(source=st.sampled_from(["X", "Y", "N", "R"]))
        def clear(self, source: str) -> None:
            item = self.item_of(source)
            if item is None or source not in self.decisions:
                return
            invoke("--db", self.db, "safety", "clear", str(item))
            origin = self.decisions[source][1]
            self.decisions = {s: v for s, v in self.decisions.items() if v[1] != origin}
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
            if source in self.decisions:
                klass, origin, _when = self.decisions[source]
                if origin == source:  # a person's decision on it replaces every other class
                    hidden.discard("safety")
                    stated.add("safety")
                if klass in ("unsafe", "critical"):  # followed from a copy: it only raises
                    hidden.add("safety")
            if source in self.privacy:
                hidden.add("private")
            return hidden, stated

        def check(self) -> None:
            d = open_db(self.db)
            try:
                rows = {
                    s: (i, g, bool(v))
                    for s, i, g, v in d.con.execute(
                        "SELECT i.sha256, i.item_id, i.perceptual_group, "
                        "i.item_id IN (SELECT item_id FROM servable_items) FROM items i"
                    )
                }
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
                        words = {
                            w
                            for w in re.findall(
                                r"[a-z]{4,}",
                                (d.scalar("SELECT ocr_text FROM items WHERE item_id = ?", (item,)) or "").lower(),
                            )
                        }
                        for w in words & vocabulary:
                            holders = [
                                r[0]
                                for r in d.con.execute(
                                    "SELECT rowid FROM items_fts WHERE items_fts MATCH ?", (f'"{w}"',)
                                )
                            ]
                            assert any(h in servable for h in holders), (source, w)
                    elif all(not self.marks(o)[0] and not self.marks(o)[1] for o in groups[group]) and not any(
                        o in self.decisions for o in groups[group]
                    ):
                        assert shown, (source, "nothing marks it, yet it is hidden")
                paths_of = {
                    i: {
                        str(self.folder / rel)
                        for (rel,) in d.con.execute("SELECT rel_path FROM files WHERE item_id = ?", (i,))
                    }
                    for i, _g, _v in rows.values()
                }
            finally:
                d.close()
            # Search itself: a hidden meme is never in the list for its own caption, nor its path in -l.
            for source, caption in caption_of.items():
                same_caption = {"X", "N", "R"} if source == "X" else {source}
                hidden_items = [
                    (i, paths_of[i]) for s, (i, _g, v) in rows.items() if not v and source_of[s] in same_caption
                ]
                if not hidden_items:
                    continue
                out = invoke("--db", self.db, "search", "--json", "-s", "bm25", caption, expect=None).output
                listed = invoke("--db", self.db, "search", "-l", "-s", "bm25", caption, expect=None).stdout
                for item, paths in hidden_items:
                    assert all(
                        json.loads(line).get("asset_id") != item
                        for line in out.splitlines()
                        if line.startswith("{") and "asset_id" in line
                    )
                    assert not paths & set(listed.splitlines()), (item, listed)

    Library.TestCase.settings = settings(
        max_examples=4, stateful_step_count=14, deadline=None, suppress_health_check=list(HealthCheck)
    )
    try:
        Library.TestCase().runTest()
    finally:
        for p in tmp_path_factory.getbasetemp().glob("machine*"):
            shutil.rmtree(p, ignore_errors=True)
