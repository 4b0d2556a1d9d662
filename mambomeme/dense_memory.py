"""The dense route in memory, for a process that searches many times (the full-screen search).

sqlite-vec 0.1.9's wheel scans without SIMD, ~0.7 us a vector: with up to 3 vectors per item the
exact scan of the 2,200-item dev library (6,400 vectors) costs ~6.6 ms and the coarse index at
10,000 items (~30,000 vectors, probe 16) ~21 ms, most of a hybrid search. The same vectors as one
float32 matrix answer in ~0.4 and ~1.5 ms (numpy's BLAS), exactly. So a long-lived search reads the
library's servable vectors once (~70 ms at 2,200 items, ~300 ms at 10,000, on a thread of its own)
and ranks them here; the ranking is handed to the fusion statement as its `:dense` route, so
fusion, the lexical routes and every filter stay in SQL, and the statement drops any item that
became hidden since (`hidden_items`). A one-shot `mambo search` keeps the SQL scan: loading costs
more than one scan. Libraries over MATRIX_MAX_VECTORS keep the coarse index (memory).

The ranking is the SQL route's exactly (tests compare them on the fixture): each table's `k`
nearest vectors, an item as similar as its best one, the all-fields vector's own similarity kept.
"""

from __future__ import annotations

import functools
import json
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mambomeme.embed import EMBED_DIM, LOOKS
from mambomeme.library import DB, Q
from mambomeme.search_config import DenseFeedback

# 65,536 vectors x 768 float32 (all-mpnet-base-v2) = 192 MiB at most: a 10,000-item library (~30,000
# vectors, 92 MB) fits, a 100,000-item one (~290,000, 890 MB) keeps the coarse index in the file.
MATRIX_MAX_VECTORS = 65_536


@dataclass(frozen=True, eq=False)
class VectorMatrix:
    """One library's servable vectors: the all-fields ones (`ids`, `whole`) and the evidence ones
    (`field_items`, `fields`), rows scaled to unit length as sqlite-vec's cosine distance does."""

    ids: Any
    whole: Any
    field_items: Any
    fields: Any
    fingerprint: tuple[Any, ...]
    field_kinds: Any  # each evidence vector's kind (embed.FIELD_KINDS)

    @classmethod
    def load(cls, db: DB) -> VectorMatrix | None:
        """Read the servable vectors; None when the library is over MATRIX_MAX_VECTORS (or holds
        int8 codes: a large library, dense_index.py)."""
        import numpy as np

        whole_n, fields_n, quantized = (int(x) for x in db.q1("matrix_bounds"))
        if whole_n + fields_n > MATRIX_MAX_VECTORS or quantized:
            return None
        fingerprint = tuple(db.q1("vector_fingerprint"))

        def read(name: str, n: int) -> tuple[Any, Any]:
            # row by row into one matrix allocated for the most there can be, then shrunk in place
            # and scaled in place: the process never holds a list of blobs or copies beside it
            ids, m = np.zeros(n, dtype=np.int64), np.zeros((n, EMBED_DIM), dtype=np.float32)
            got = 0
            for got, (vid, blob) in enumerate(db.con.execute(Q[name]), 1):
                if got > n:  # written since the count: the next search's check reads them again
                    got = n
                    break
                ids[got - 1], m[got - 1] = vid, np.frombuffer(blob, dtype=np.float32)
            ids.resize(got, refcheck=False)
            m.resize((got, EMBED_DIM), refcheck=False)
            norms = np.linalg.norm(m, axis=1, keepdims=True)
            m /= np.where(norms == 0, 1, norms)
            return ids, m

        ids, whole = read("matrix_vectors", whole_n)
        field_ids, fields = read("matrix_field_vectors", fields_n)
        return cls(ids, whole, field_ids >> 2, fields, fingerprint, field_ids & 3)

    @functools.cached_property
    def rows(self) -> tuple[dict[int, int], dict[int, list[int]]]:
        """Where each item's all-fields vector and evidence vectors are (feedback reads them)."""
        fields: dict[int, list[int]] = {}
        for n, item in enumerate(self.field_items.tolist()):
            fields.setdefault(item, []).append(n)
        return {item: n for n, item in enumerate(self.ids.tolist())}, fields

    @functools.cached_property
    def _looks(self) -> Any:
        return self.field_kinds == LOOKS

    def ranking(
        self,
        qvec: Any,
        k: int,
        *,
        field_vectors: bool,
        feedback: DenseFeedback | None = None,
        looks_weight: float = 1.0,
    ) -> str:
        """The dense route as the fusion statement's `:dense` JSON: [[item id, similarity,
        all-fields similarity or null], ...], best first, at most `k` items; with `feedback`
        (search.DENSE_FEEDBACK), ranked again as search.sql's dense_feedback does. A looks vector's
        similarity counts x `looks_weight` (search.LOOKS_WEIGHT), in both steps."""
        import numpy as np

        raw = np.asarray(qvec, dtype=np.float32)
        q = raw / (np.linalg.norm(raw) or 1.0)
        best: dict[int, list[float | None]] = {}
        for ids, m, kind in ((self.ids, self.whole, 0), (self.field_items, self.fields, 1)):
            if kind and not field_vectors or not len(ids):
                continue
            sims = m @ q
            top = np.argpartition(-sims, k - 1)[:k] if len(sims) > k else np.arange(len(sims))
            if kind:  # (weighed after the k nearest are taken, as the SQL scan's KNN does)
                sims = np.where(self._looks, sims * np.float32(looks_weight), sims)
            for i in top.tolist():
                item, sim = int(ids[i]), float(sims[i])
                cur = best.setdefault(item, [sim, None])
                cur[0] = max(cur[0], sim)  # type: ignore[type-var]
                if kind == 0:
                    cur[1] = sim
        ranked = sorted(best.items(), key=lambda x: (-x[1][0], x[0]))[:k]  # type: ignore[operator]
        if feedback and ranked:
            whole_row, field_rows = self.rows
            rows = {item: field_rows.get(item, []) if field_vectors else [] for item, _ in ranked}
            stored = {item: [self.whole[whole_row[item]], *self.fields[rows[item]]] for item, _ in ranked}
            scale = {
                item: [1.0, *(looks_weight if looks else 1.0 for looks in self._looks[rows[item]].tolist())]
                for item, _ in ranked
            }  # all fields first, then caption, picture and looks
            return json.dumps(feedback_rerank(raw, ranked, stored, feedback, scale))
        return json.dumps([[item, sim, whole] for item, (sim, whole) in ranked])


def feedback_rerank(
    qvec: Any,
    ranked: list[tuple[int, tuple[Any, Any]]],
    stored: dict[int, list[Any]],
    feedback: DenseFeedback,
    scale: dict[int, list[float]] | None = None,
) -> list[list[Any]]:
    """Rocchio as search.sql's dense_feedback: q * n / alpha + the sum of one vector of each of the
    n best items (its all-fields one or, with "best", the one nearest q) points as q + alpha * their
    mean; each candidate is ranked again by its best vector's cosine to it, keeping its first-pass
    similarities. `ranked`: [(item id, (similarity, all-fields similarity)), ...] best first;
    `stored`: each item's unit vectors, all fields first; `scale`: what each vector's similarity
    counts (a looks vector's, search.LOOKS_WEIGHT). Returns the `:dense` JSON's rows."""
    import numpy as np

    raw = np.frombuffer(qvec, dtype=np.float32) if isinstance(qvec, bytes) else np.asarray(qvec, dtype=np.float32)
    q = raw / (np.linalg.norm(raw) or 1.0)
    vecs = {item: np.vstack(v) for item, v in stored.items()}
    weights = {item: np.asarray(scale[item] if scale else [1.0] * len(v), dtype=np.float32) for item, v in vecs.items()}
    n = min(feedback.top, len(ranked))
    best = bool(feedback.best)
    given = [
        vecs[item][int(np.argmax((vecs[item] @ q) * weights[item]))] if best else vecs[item][0]
        for item, _ in ranked[:n]
    ]
    moved = raw * n / feedback.alpha + np.sum(given, axis=0)
    moved = moved / (np.linalg.norm(moved) or 1.0)
    moved_sim = {item: float(np.max((v @ moved) * weights[item])) for item, v in vecs.items()}
    order = {item: pos for pos, (item, _) in enumerate(ranked)}
    out = sorted(ranked, key=lambda x: (-moved_sim[x[0]], order[x[0]]))
    return [[item, sim, whole] for item, (sim, whole) in out]


class InMemoryVectors:
    """A VectorMatrix kept fresh for the searches of one process: loaded on a thread of its own,
    checked before each search (`PRAGMA data_version` of the searching connection, then the
    library's vector fingerprint when another connection has written) and loaded again when the
    library's vectors changed; until then the SQL route answers."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._matrix: VectorMatrix | None = None
        self._loading = False
        self._too_large = False
        self._seen: dict[int, int] = {}  # id(connection) -> its data_version when last checked
        self._lock = threading.Lock()
        self.loads = 0  # how many times the matrix was read (tests, diagnostics)

    def start(self) -> None:
        """Load (again) on a thread of its own, unless a load is under way."""
        with self._lock:
            if self._loading or self._too_large:
                return
            self._loading = True
        # Not a daemon: a process must not exit while this thread is inside SQLite (a load takes
        # 70-300 ms; quitting the screen still returns at once)
        threading.Thread(target=self._load, name="mambo-vector-matrix", daemon=False).start()

    def _load(self) -> None:
        try:
            # One BLAS thread: the product is ~1 ms, and BLAS's own threads fight the search,
            # encoding and painting threads for 2 cores. Ranking the dev library's vectors (300
            # random queries, load ~2, 2026-12-01): p50 / p95 0.42 / 24.0 ms with OpenBLAS's default
            # threads, 0.80 / 4.9 ms with one; 10,000 items 16.0 / 23.9 vs 3.4 / 7.8 ms. For the
            # whole process (the search screen's), which does no other large products; set here,
            # off the thread that draws the screen (threadpoolctl inspects the loaded libraries).
            from threadpoolctl import threadpool_limits

            threadpool_limits(limits=1, user_api="blas")
            db = DB(self.path, create=False, readonly=True)
            try:
                m = VectorMatrix.load(db)
            finally:
                db.close()
            with self._lock:
                self._matrix, self._too_large = m, m is None
                self.loads += 1
        except Exception:  # the SQL route answers: a matrix is only a faster way to the same ranking
            pass
        finally:
            with self._lock:
                self._loading = False

    def wait(self, timeout: float = 30.0) -> bool:
        """Until the first load ended (benchmarks, tests): whether a matrix is there."""
        import time

        end = time.monotonic() + timeout
        while time.monotonic() < end:
            with self._lock:
                if not self._loading:
                    return self._matrix is not None
            time.sleep(0.01)
        return False

    def get(self, db: DB) -> VectorMatrix | None:
        """The matrix, if loaded and still the library's; None sends the search to SQL."""
        m = self._matrix
        if m is None:
            return None
        version = db.data_version()
        if self._seen.get(id(db.con)) == version:
            return m
        # Another connection wrote (an ingest, a review, or only this process's own event log):
        # the fingerprint says whether the vectors or what may be shown changed.
        if tuple(db.q1("vector_fingerprint")) != m.fingerprint:
            with self._lock:
                self._matrix = None
            self._seen.clear()
            self.start()
            return None
        self._seen[id(db.con)] = version
        return m
