"""Times the item-state statement (mambomeme/state.sql apply_item_state) on a synthetic library:
N items in perceptual groups of three, one or two files each, 5 % of the files private.

    .venv/bin/python benchdata/bench_state.py 100000

Prints the pass over every item (the end of `mambo add` and `mambo prune`), one item's group (a
new item, a decision) and one item with its descriptive fields merged again (a sidecar change)."""

from __future__ import annotations

import hashlib
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mambomeme.lab.product import DB, Metadata, file_params, restate  # noqa: E402


def build(db: DB, n: int, rng: random.Random) -> None:
    with db.write():
        root = int(db.q1("insert_root", {"name": "synthetic", "path": "/nonexistent/synthetic"})[0])
        group = None
        for i in range(n):
            if i % 3 == 0:
                group = int(db.q1("new_group", {"kind": "perceptual", "label": None})[0])
            item = int(
                db.q1(
                    "insert_item",
                    Metadata(title=f"t{i}").params()
                    | {
                        "sha256": hashlib.sha256(str(i).encode()).hexdigest(),
                        "format": "png",
                        "width": 1,
                        "height": 1,
                        "byte_size": 0,
                        "phash": 0,
                        "dhash": 0,
                        "perceptual_group": group,
                        "template_group": None,
                        "ocr_text": "x",
                        "ocr_engine_id": None,
                        "template_id": None,
                        "template_score": None,
                        "recognised_revision": 0,
                        "ocr_boxes": None,
                    },
                )[0]
            )
            for k in range(1 + i % 2):
                md = Metadata(source="sidecar:x.json", title=f"t{i}", private=rng.random() < 0.05)
                md.given = frozenset({"private", "title"})
                db.q(
                    "insert_file",
                    {
                        "item_id": item,
                        "root_id": root,
                        "rel_path": f"{i}-{k}.png",
                        "size": 0,
                        "mtime_ns": 0,
                        "sidecar_sha256": "",
                    }
                    | file_params(md),
                )


def main(n: int) -> None:
    rng = random.Random(1)
    with tempfile.TemporaryDirectory() as tmp:
        db = DB(Path(tmp) / "state.sqlite", create=True)
        build(db, n, rng)
        for _ in range(2):
            t0 = time.perf_counter()
            with db.write():
                restate(db, None)
            print(f"every item: {time.perf_counter() - t0:.2f} s")
        ids = rng.sample(range(1, n + 1), 300)
        for merge in (False, True):
            t0 = time.perf_counter()
            with db.write():
                for i in ids:
                    restate(db, [i], merge=merge)
            what = "merged and its group" if merge else "its group"
            print(f"one item, {what}: {(time.perf_counter() - t0) / len(ids) * 1000:.2f} ms")
        print(f"hidden: {db.scalar('SELECT count(*) FROM hidden_items')} of {n}")
        db.close()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000)
