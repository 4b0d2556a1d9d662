"""The query encoder without torch: onnxruntime + tokenizers on all-mpnet-base-v2's ONNX export give
sentence-transformers' vectors, the export is cached by the weights' SHA-256 and re-made when it is
missing or damaged, the manifest records the runtime without changing a model's identity, and
nothing on the search path imports torch."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from helpers import FIXTURE, REPO
from mambomeme.embed import EMBED_DIM, EMBED_RUNTIME, Embedder, get_embedder, model_dir, model_id, onnx_path
from mambomeme.library import DB, file_sha256

DEV = REPO / "benchdata" / "v1" / "dev.jsonl"


def queries(path: Path) -> list[str]:
    return [json.loads(line)["query"] for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.slow
def test_onnx_vectors_equal_sentence_transformers_on_fixture_and_dev_queries() -> None:
    from sentence_transformers import SentenceTransformer

    texts = queries(FIXTURE / "queries.jsonl") + queries(DEV)
    assert len(texts) >= 170
    # and texts past the model's 384-token limit, which both must truncate alike
    texts += ["when the meme is longer than the model reads " * 40, "ééé ünïcödé 🐱 " * 100]
    reference = SentenceTransformer(str(model_dir()), device="cpu").encode(
        texts, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
    )
    ours = get_embedder()
    one_by_one = np.vstack([ours.encode([t]) for t in texts])
    batched = ours.encode(texts)
    for got in (one_by_one, batched):
        assert got.shape == (len(texts), EMBED_DIM) == (len(texts), 768) and got.dtype == np.float32
        cos = (got * reference).sum(axis=1)
        assert cos.min() >= 0.9999, (cos.min(), texts[int(cos.argmin())])
    assert np.allclose(np.linalg.norm(batched, axis=1), 1.0, atol=1e-5)


@pytest.mark.slow
def test_export_is_keyed_by_the_weights_and_remade_when_damaged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    unpacked = model_dir()  # the session's unpacked model: only the export is made again here
    monkeypatch.setattr("mambomeme.embed.model_dir", lambda: unpacked)
    monkeypatch.setenv("MAMBO_MODEL_CACHE", str(tmp_path))
    sha = file_sha256(unpacked / "model.safetensors")
    path = onnx_path(sha, tmp_path)
    assert sha[:16] in path.parent.name
    path.parent.mkdir()
    path.write_bytes(b"not an onnx model")  # a damaged (or foreign) export
    fresh = Embedder(quiet=True)
    assert Path(str(path) + ".data").stat().st_size > 80_000_000 and fresh.manifest["weights_sha256"] == sha
    assert json.loads((tmp_path / "weights-sha256.json").read_text())["sha256"] == sha
    assert float(fresh.encode(["john cena"])[0] @ get_embedder().encode(["john cena"])[0]) > 0.99999
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([path.parent.name, "weights-sha256.json"])


def test_manifest_records_the_runtime_without_changing_the_models_identity(tmp_path: Path) -> None:
    db = DB(tmp_path / "lib.sqlite")
    manifest = get_embedder().manifest
    assert manifest["runtime"] == EMBED_RUNTIME
    with db.write():
        # a row written before runtimes were recorded: its vectors came from torch (migration 010)
        db.con.execute(
            "INSERT INTO embedding_models(name, revision, weights_sha256, dim, text_recipe) "
            "VALUES (:name, :revision, :weights_sha256, :dim, :text_recipe)",
            manifest,
        )
        old = db.con.last_insert_rowid()
        assert model_id(db, manifest) == old
        assert model_id(db, manifest) == old  # noted once
    rows = list(db.con.execute("SELECT model_id, runtime FROM embedding_models"))
    assert rows == [(old, f"sentence-transformers (torch); {EMBED_RUNTIME}")]
    db.close()
    fresh = DB(tmp_path / "new.sqlite")
    with fresh.write():
        new = model_id(fresh, manifest)
    assert fresh.q1("embedding_model", manifest | {"dim": None})[0] == new
    assert fresh.con.execute("SELECT runtime FROM embedding_models").fetchall() == [(EMBED_RUNTIME,)]


@pytest.mark.slow
def test_the_search_path_never_imports_torch(fixture_library: Path) -> None:
    code = (
        "import sys, json; sys.path.insert(0, sys.argv[1]); import mambo\n"
        "try:\n    mambo.cli.main(sys.argv[2:], prog_name='mambo')\n"
        "except SystemExit as e:\n    assert not e.code, e.code\n"
        "heavy = sorted(m for m in ('torch', 'transformers', 'sentence_transformers', 'onnx')\n"
        "               if m in sys.modules)\n"
        "print(json.dumps({'heavy': heavy, 'ort': 'onnxruntime' in sys.modules}), file=sys.stderr)\n"
    )
    for system in ("hybrid", "dense"):
        out = subprocess.run(
            [
                sys.executable,
                "-c",
                code,
                str(REPO),
                "--db",
                str(fixture_library),
                "search",
                "--json",
                "-s",
                system,
                "pets acting like they own the house",
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert out.returncode == 0, out.stderr
        results = [json.loads(line) for line in out.stdout.splitlines()]
        assert results and any(r["route_ranks"]["dense"] is not None for r in results)
        seen = json.loads(out.stderr.strip().splitlines()[-1])
        assert seen == {"heavy": [], "ort": True}, system
