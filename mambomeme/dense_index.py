"""The dense index: the coarse (IVF) index of a large library (k-means centroids in vec0, each vector in
its nearest centroid's partition), retrained as the library grows or shrinks."""

from __future__ import annotations

import hashlib
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from mambomeme.dense_memory import MATRIX_MAX_VECTORS
from mambomeme.embed import EMBED_DIM
from mambomeme.library import DB, Q


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
        centroids = np.where(
            empty[:, None], vectors[rng.integers(0, len(vectors), clusters)], sums / np.where(empty, 1, norms)[:, None]
        ).astype(np.float32)
    return centroids


def nearest_centroid(vectors: Any, centroids: Any, batch: int = 20_000) -> Any:
    import numpy as np

    return np.concatenate(
        [np.argmax(vectors[i : i + batch] @ centroids.T, axis=1) for i in range(0, len(vectors), batch)]
        or [np.zeros(0, dtype=np.int64)]
    )


def index_state(db: DB) -> dict[str, Any] | None:
    """The coarse index's state row as a dict (None when the library has none)."""
    return (db.rows("vector_index") or [None])[0]


def maintain_vector_index(db: DB, *, clusters: int | None = None, quiet: bool = True) -> str | None:
    """Keep the coarse (IVF) index fit for the library's size: train it when the library reaches
    IVF_MIN_VECTORS (all-fields and evidence vectors counted together: the scan reads them all),
    retrain when it has doubled or halved since, drop it below the minimum; over
    QUANTIZED_MIN_VECTORS the index is finer (ivf_clusters) and every vector's int8 code joins its
    partition instead (vector_codes: the item's float vectors are deleted), and items embedded
    since the last call are quantized. Retraining rewrites every vector (vec0 cannot move a row to
    another partition), in one transaction: an interruption leaves the previous index. The vectors
    pass through a spill file beside the library, never all in memory (a million memes hold ~9 GB
    of them as floats). `clusters` forces a (re)clustering into that many centroids (benchmarks,
    tests). Returns what was done, if anything."""
    import numpy as np

    n = int(db.q1("vector_count")[0])
    state = db.q1("vector_index")
    want = min(clusters, n) if clusters else ivf_clusters(n)
    quantized = bool(want) and n > QUANTIZED_MIN_VECTORS
    has_codes = bool(db.q1("holds_vector_codes")[0])
    settled = (state is None and not want) or (state is not None and want and state[1] / 2 < n < state[1] * 2)
    if settled and has_codes == quantized and not clusters:
        return quantize_new(db, quiet=quiet) if quantized else None
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=".mambo-vectors-", dir=db.path.parent) as spill_dir:
        spill = Path(spill_dir) / "vectors.f32"
        ids, servable, whole = spill_vectors(db, spill)
        total = len(ids)
        sample, centroids = 0, np.zeros((0, EMBED_DIM), dtype=np.float32)
        if want:
            # The evidence vectors (migration 011) live in the same partitions: the centroids are
            # trained on a sample of every vector, all-fields and evidence alike, and each joins its
            # nearest centroid.
            rng = np.random.default_rng(IVF_SEED)
            sample = min(total, IVF_SAMPLE_PER_CLUSTER * want)
            rows = np.sort(rng.choice(total, sample, replace=False))
            centroids = kmeans(read_spill(spill, rows), want, IVF_ITERATIONS, IVF_SEED)
        with db.write():
            db.q("clear_vector_index")
            db.q("clear_vector_codes")
            for c in range(want):
                db.q("insert_centroid", {"cluster": c + 1, "centroid": centroids[c].tobytes()})
            for start in range(0, total, SPILL_BATCH):
                stop = min(total, start + SPILL_BATCH)
                vectors = read_spill(spill, np.arange(start, stop))
                # clusters 1..n; 0 is "no index"
                assign = (
                    nearest_centroid(vectors, centroids) + 1 if want else np.zeros(stop - start, dtype=np.int64)
                ).tolist()
                # a quantized library keeps codes only (migration 020)
                stored = int8_codes(vectors) if quantized else vectors
                for vid, cluster, vec, ok, is_whole in zip(
                    ids[start:stop].tolist(),
                    assign,
                    stored,
                    servable[start:stop].tolist(),
                    whole[start:stop].tolist(),
                    strict=True,
                ):
                    blob = vec.tobytes()
                    if quantized:
                        db.q(
                            "insert_vector_code",
                            {
                                "vector_id": vid * 4 if is_whole else vid,
                                "cluster": cluster,
                                "code": blob,
                                "servable": ok,
                            },
                        )
                        if is_whole:
                            db.q(
                                "record_vector_codes_item",
                                {"item_id": vid, "codes_sha256": hashlib.sha256(blob).hexdigest()},
                            )
                    elif is_whole:
                        db.q(
                            "insert_vector_in_cluster",
                            {"item_id": vid, "cluster": cluster, "embedding": blob, "servable": ok},
                        )
                    else:
                        db.q(
                            "insert_field_vector_in_cluster",
                            {"vector_id": vid, "cluster": cluster, "embedding": blob, "servable": ok},
                        )
            if want:
                db.q(
                    "record_vector_index",
                    {
                        "clusters": want,
                        "trained_vectors": n,
                        "training_sample": sample,
                        "iterations": IVF_ITERATIONS,
                        "seed": IVF_SEED,
                        "seconds": round(time.monotonic() - t0, 2),
                    },
                )
    done = (
        f"coarse vector index: {want} clusters over {n:,} vectors{' with int8 codes' if quantized else ''} "
        f"({time.monotonic() - t0:.1f} s)"
        if want
        else f"coarse vector index dropped ({n:,} vectors: searched exactly)"
    )
    if not quiet:
        print(done, file=sys.stderr, flush=True)
    return done


def spill_vectors(db: DB, spill: Path) -> tuple[Any, Any, Any]:
    """Every vector, written to `spill` as float32: all-fields ones (by item id), evidence ones (by
    vector id), then the codes of quantized items that have no float vector (unit vectors again);
    returns their ids (item id for all-fields vectors, vector id for the rest), servable flags and
    which are all-fields vectors."""
    import numpy as np

    ids: list[int] = []
    servable: list[int] = []
    whole: list[bool] = []
    with spill.open("wb") as out:
        for name in ("vectors_for_clustering", "field_vectors_for_clustering"):
            for vid, blob, ok in db.con.execute(Q[name]):
                ids.append(vid)
                servable.append(ok)
                whole.append(name == "vectors_for_clustering")
                out.write(blob)
        # an item embedded again since it was quantized has floats and its old codes: the floats win
        floats = {vid if w else vid >> 2 for vid, w in zip(ids, whole, strict=True)}
        for vid, code, ok in db.con.execute(Q["codes_for_clustering"]):
            if vid >> 2 in floats:
                continue
            ids.append(vid >> 2 if vid & 3 == 0 else vid)
            servable.append(ok)
            whole.append(vid & 3 == 0)
            out.write(dequantize(code).tobytes())
    return np.array(ids, dtype=np.int64), np.array(servable, dtype=np.int64), np.array(whole, dtype=bool)


def read_spill(spill: Path, rows: Any) -> Any:
    """Rows of the spill file (sorted row numbers) as one float32 matrix, read with plain reads: a
    memory map would count every page it touched as this process's memory (a sample spread over
    the file touches most of it)."""
    import numpy as np

    size = EMBED_DIM * 4
    out = np.empty((len(rows), EMBED_DIM), dtype=np.float32)
    with spill.open("rb") as f:
        if len(rows) and rows[-1] - rows[0] == len(rows) - 1:  # one run of rows
            f.seek(int(rows[0]) * size)
            out[:] = np.frombuffer(f.read(len(rows) * size), dtype=np.float32).reshape(-1, EMBED_DIM)
            return out
        for i, r in enumerate(rows.tolist()):
            f.seek(r * size)
            out[i] = np.frombuffer(f.read(size), dtype=np.float32)
    return out


def int8_codes(vectors: Any) -> Any:
    """Each row scaled to unit length, times CODE_SCALE, rounded to int8: L2 distances between codes
    rank as cosine similarities between the vectors."""
    import numpy as np

    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.clip(np.rint(vectors / np.where(norms == 0, 1, norms) * CODE_SCALE), -127, 127).astype(np.int8)


def dequantize(code: bytes) -> Any:
    """An int8 code as the float32 unit vector it stands for (readers of a quantized item's vector)."""
    import numpy as np

    v = np.frombuffer(code, dtype=np.int8).astype(np.float32)
    return v / (np.linalg.norm(v) or 1.0)


def stored_vector(embedding: bytes | None, code: bytes | None) -> Any:
    """An item's stored vector: the float one when there is one, else its code's; None for neither."""
    import numpy as np

    if embedding is not None:
        return np.frombuffer(embedding, dtype=np.float32)
    return dequantize(code) if code is not None else None


def quantize_new(db: DB, *, quiet: bool = True) -> str | None:
    """int8 codes for the items embedded (again) since vector_codes was written (each in the partition
    ingest gave its float vector), which then keep their codes only. Returns what was done, if anything."""
    import numpy as np

    todo = db.q("items_to_quantize")
    if not todo:
        return None
    t0 = time.monotonic()
    with db.write():
        for (item_id,) in todo:
            db.q("forget_item_codes", {"item_id": item_id})
            rows = db.q("item_vectors_to_quantize", {"item_id": item_id})
            if not rows:  # (no vector to quantize: the item waits to be embedded)
                continue
            codes = int8_codes(np.stack([np.frombuffer(r[2], dtype=np.float32) for r in rows]))
            for (vid, cluster, _blob, ok), code in zip(rows, codes, strict=True):
                db.q(
                    "insert_vector_code", {"vector_id": vid, "cluster": cluster, "code": code.tobytes(), "servable": ok}
                )
            db.q(
                "record_vector_codes_item",
                {"item_id": item_id, "codes_sha256": hashlib.sha256(codes[0].tobytes()).hexdigest()},
            )
            db.q("drop_item_floats", {"item_id": item_id})
    done = f"coarse vector index: int8 codes of {len(todo):,} items ({time.monotonic() - t0:.1f} s)"
    if not quiet:
        print(done, file=sys.stderr, flush=True)
    return done


# Over the in-memory matrix's limit the coarse index has twice the partitions (sqrt(n)/2) and scans
# int8 codes (migration 019: sqlite-vec's int8 L2 costs about half its float cosine), probing a
# share of its partitions; the CODES_RESCORE nearest of each probed partition's CODES_K nearest
# codes are ranked by the codes' cosine (migration 020: a quantized item keeps its codes only; over
# the dev library's 2,202 vectors the codes' cosine keeps 0.988 of the float top 10, the query's
# float vector against dequantized codes 0.993 at ~25x the cost in SQL). Libraries at or under it
# rank exactly as before. 100,000 items (274 partitions), codes only: probe 38 / 50 recall@10
# 0.948 / 0.959 against exact float (docs/decisions.md#large-index, docs/benchmarks.md).
QUANTIZED_MIN_VECTORS = MATRIX_MAX_VECTORS
LARGE_PROBE_SHARE = 0.16
CODES_K = 20
CODES_RESCORE = 100
CODE_SCALE = 500  # mpnet's unit vectors: no component over 0.24 in 300,000 (codes up to ~120)
SPILL_BATCH = 20_000  # vectors read, assigned and written at a time while (re)clustering

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
    """Centroids for a library of this many vectors: sqrt(n)/4 (43 at 30,000), sqrt(n)/2 over
    QUANTIZED_MIN_VECTORS (274 at 300,000), none below IVF_MIN_VECTORS."""
    if vectors < IVF_MIN_VECTORS:
        return 0
    return max(1, round(vectors**0.5 / (2 if vectors > QUANTIZED_MIN_VECTORS else 4)))


def large_probe(clusters: int) -> int:
    """Partitions a search probes in a quantized library's coarse index (LARGE_PROBE_SHARE of them)."""
    return max(1, round(clusters * LARGE_PROBE_SHARE))
