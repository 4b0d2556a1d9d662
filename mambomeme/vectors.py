"""The dense index: the coarse (IVF) index of a large library (k-means centroids in vec0, each vector in
its nearest centroid's partition), retrained as the library grows or shrinks."""

from __future__ import annotations

import sys
import time
from typing import Any

from mambomeme.embed import EMBED_DIM
from mambomeme.library import DB


def kmeans(vectors: Any, clusters: int, iterations: int, seed: int) -> Any:
    """Spherical k-means (Lloyd) over unit vectors: centroids are normalised means, a vector
    belongs to its highest-cosine centroid. Seeded; an emptied cluster takes a random vector."""
    import numpy as np

    rng = np.random.default_rng(seed)
    centroids = vectors[rng.choice(len(vectors), clusters, replace=False)].copy()
    for _ in range(iterations):
        assign = nearest_centroid(vectors, centroids)
        sums = np.zeros_like(centroids)
        np.add.at(sums, assign, vectors)
        norms = np.linalg.norm(sums, axis=1)
        empty = norms == 0
        centroids = np.where(empty[:, None], vectors[rng.integers(0, len(vectors), clusters)],
                             sums / np.where(empty, 1, norms)[:, None]).astype(np.float32)
    return centroids


def nearest_centroid(vectors: Any, centroids: Any, batch: int = 20_000) -> Any:
    import numpy as np

    return np.concatenate([np.argmax(vectors[i:i + batch] @ centroids.T, axis=1)
                           for i in range(0, len(vectors), batch)] or [np.zeros(0, dtype=np.int64)])


def stack_blobs(rows: list[tuple]) -> Any:
    """The float32 vectors stored in each row's second column, as one matrix (0 x EMBED_DIM for none)."""
    import numpy as np

    if not rows:
        return np.zeros((0, EMBED_DIM), dtype=np.float32)
    return np.stack([np.frombuffer(r[1], dtype=np.float32) for r in rows])


def maintain_vector_index(db: DB, *, clusters: int | None = None, quiet: bool = True) -> str | None:
    """Keep the coarse (IVF) index fit for the library's size: train it when the library reaches
    IVF_MIN_VECTORS (all-fields and evidence vectors counted together: the scan reads them all),
    retrain when it has doubled or halved since, drop it below the minimum.
    Retraining rewrites every vector (vec0 cannot move a row to another partition), in one
    transaction: an interruption leaves the previous index. `clusters` forces a (re)clustering into
    that many centroids (benchmarks, tests). Returns what was done, if anything."""
    import numpy as np

    n = int(db.q1("vector_count")[0])
    state = db.q1("vector_index")
    want = min(clusters, n) if clusters else ivf_clusters(n)
    settled = (state is None and not want) or (state is not None and want and state[1] / 2 < n < state[1] * 2)
    if settled and not clusters:
        return None
    t0 = time.monotonic()
    rows = db.q("vectors_for_clustering")
    ids = [r[0] for r in rows]
    servable = [r[2] for r in rows]
    vectors = stack_blobs(rows)
    del rows
    # The evidence vectors (migration 011) live in the same partitions: the centroids are trained on
    # a sample of every vector, all-fields and evidence alike, and each joins its nearest centroid.
    field_rows = db.q("field_vectors_for_clustering")
    fields = stack_blobs(field_rows)
    sample, centroids = 0, np.zeros((0, EMBED_DIM), dtype=np.float32)
    if want:
        rng = np.random.default_rng(IVF_SEED)
        every = np.concatenate([vectors, fields]) if len(fields) else vectors
        sample = min(len(every), IVF_SAMPLE_PER_CLUSTER * want)
        centroids = kmeans(every[np.sort(rng.choice(len(every), sample, replace=False))], want, IVF_ITERATIONS,
                           IVF_SEED)
        del every
        assign = nearest_centroid(vectors, centroids) + 1  # clusters 1..n; 0 is "no index"
    else:
        assign = np.zeros(len(ids), dtype=np.int64)
    field_assign = (nearest_centroid(fields, centroids) + 1 if want and len(fields)
                    else np.zeros(len(fields), dtype=np.int64))
    with db.write():
        db.q("clear_vector_index")
        for c in range(want):
            db.q("insert_centroid", {"cluster": c + 1, "centroid": centroids[c].tobytes()})
        for item_id, cluster, vec, ok in zip(ids, assign.tolist(), vectors, servable, strict=True):
            db.q("insert_vector_in_cluster", {"item_id": item_id, "cluster": cluster, "embedding": vec.tobytes(),
                                              "servable": ok})
        for (vector_id, _vec, ok), cluster, vec in zip(field_rows, field_assign.tolist(), fields, strict=True):
            db.q("insert_field_vector_in_cluster", {"vector_id": vector_id, "cluster": cluster,
                                                    "embedding": vec.tobytes(), "servable": ok})
        if want:
            db.q("record_vector_index", {"clusters": want, "trained_vectors": n, "training_sample": sample,
                                         "iterations": IVF_ITERATIONS, "seed": IVF_SEED,
                                         "seconds": round(time.monotonic() - t0, 2)})
    done = (f"coarse vector index: {want} clusters over {n:,} vectors ({time.monotonic() - t0:.1f} s)" if want
            else f"coarse vector index dropped ({n:,} vectors: searched exactly)")
    if not quiet:
        print(done, file=sys.stderr, flush=True)
    return done


# Dense indexes: sqlite-vec 0.1.9 scans every vector (~0.7 us each, no SIMD), so "ivf" (the default)
# clusters libraries of IVF_MIN_VECTORS vectors or more by k-means into sqrt(n)/4 partitions, probing
# 16: 10,000 items (~30,000 vectors) p50 21.3 ms, recall@10 0.921 vs 36.9 ms exact; "bit-rescore" kept
# too little of the ranking (recall@10 0.38 at x1, 100k). See docs/decisions.md#dense-index.
DENSE_OVERSAMPLE = 1
IVF_PROBE = 16
IVF_MIN_VECTORS = 20_000
IVF_ITERATIONS = 20  # k-means (Lloyd) iterations, seeded (IVF_SEED): the same library gives the same index
IVF_SAMPLE_PER_CLUSTER = 256  # training sample: at most 256 vectors per centroid (faiss's rule of thumb)
IVF_SEED = 42


def ivf_clusters(vectors: int) -> int:
    """Centroids for a library of this many vectors: sqrt(n)/4 (79 at 100k), none below IVF_MIN_VECTORS."""
    return 0 if vectors < IVF_MIN_VECTORS else max(1, round(vectors ** 0.5 / 4))
