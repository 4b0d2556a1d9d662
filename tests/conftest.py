"""Shared fixtures: every test uses the real SQLite file, the real OCR engine and the real model.

The fixture library (benchdata/fixture/images, ~60 memes) is ingested once per session; tests
that change a library work on their own copy."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import mambo
from mambomeme.library import DB

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "benchdata" / "fixture"
IMAGES = FIXTURE / "images"


def recipe() -> list[dict]:
    return [json.loads(line) for line in (FIXTURE / "recipe.jsonl").read_text().splitlines() if line.strip()]


@pytest.fixture(scope="session", autouse=True)
def _session_env(tmp_path_factory: pytest.TempPathFactory) -> None:
    # The OCR engine's optimised-model cache is shared by the session; data folders are per test.
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("cache"))
    os.environ["HF_HUB_OFFLINE"] = "1"


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.delenv("MAMBO_DB", raising=False)


def invoke(*args: str, input: str | None = None, expect: int | None = 0):
    """Run the real click CLI in-process (models stay loaded between calls)."""
    result = CliRunner().invoke(mambo.cli, [str(a) for a in args], input=input, catch_exceptions=False)
    if expect is not None:
        assert result.exit_code == expect, f"exit {result.exit_code}\n{result.output}"
    return result


def run_process(*args: str, timeout: float = 300, **kw) -> subprocess.CompletedProcess:
    """Run mambo.py as its own process, as a user would."""
    return subprocess.run([sys.executable, str(REPO / "mambo.py"), *map(str, args)], capture_output=True,
                          text=True, timeout=timeout, **kw)


@pytest.fixture(scope="session")
def fixture_library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture images (copied) ingested once. Read-only use only: copy it to change it."""
    d = tmp_path_factory.mktemp("fixture-lib")
    shutil.copytree(IMAGES, d / "images")
    db = d / "library.sqlite"
    invoke("--db", db, "add", "-q", d / "images")
    return db


@pytest.fixture
def library_copy(fixture_library: Path, tmp_path: Path) -> tuple[Path, Path]:
    """(database, images folder): a private, writable copy of the fixture library."""
    images = tmp_path / "images"
    shutil.copytree(fixture_library.parent / "images", images)
    db = tmp_path / "library.sqlite"
    shutil.copy(fixture_library, db)
    invoke("--db", db, "roots", "move", "images", images)
    return db, images


def open_db(path: Path) -> DB:
    return DB(path, create=False)


def forget_vectors(path: Path) -> int:
    """Make a library look as an older version's does after migration 015: no embedding of the
    current model (the triggers drop the rest). Returns how many items it holds."""
    db = open_db(path)
    with db.write():
        db.con.execute("DELETE FROM item_embeddings")
        db.con.execute("DELETE FROM item_vectors")
    items = int(db.scalar("SELECT count(*) FROM items"))
    db.close()
    return items


def served(db_path: Path, name: str) -> bool:
    """Whether the file's item is in servable_items: the one definition of what search may show."""
    db = open_db(db_path)
    try:
        return bool(db.scalar("SELECT count(*) FROM servable_items s JOIN files f ON f.item_id = s.item_id "
                              "WHERE f.rel_path = ?", (name,)))
    finally:
        db.close()


def errors_of(db_path: Path) -> list[tuple[str, str, str]]:
    db = open_db(db_path)
    try:
        return [(Path(p).name, k, m) for p, k, m in db.con.execute("SELECT path, kind, message FROM ingest_errors")]
    finally:
        db.close()


def folder_with(tmp_path: Path, pics: dict[str, str]) -> Path:
    folder = tmp_path / "memes"
    folder.mkdir(exist_ok=True)
    for name, src in pics.items():
        shutil.copy(IMAGES / src, folder / name)
    return folder
