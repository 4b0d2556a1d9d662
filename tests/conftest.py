"""Shared fixtures: every test uses the real SQLite file, the real OCR engine and the real model.

The fixture library (benchdata/fixture/images, ~60 memes) is ingested once per session; tests
that change a library work on their own copy."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from helpers import IMAGES, invoke


@pytest.fixture(scope="session", autouse=True)
def _session_env(tmp_path_factory: pytest.TempPathFactory) -> None:
    # The OCR engine's optimised-model cache is shared by the session; data folders are per test.
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("cache"))
    os.environ["HF_HUB_OFFLINE"] = "1"
    # No search helper outlives a test: only the helper's own tests (test_search_helper.py) start one.
    os.environ["MAMBO_NO_HELPER"] = "1"


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.delenv("MAMBO_DB", raising=False)


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


# Tests on an ingested library pay the fixture's ingest (about a minute on two cores) and are left
# out of `./mambo test --quick`; CI's `./mambo test` runs them all.
INGESTED = {"fixture_library", "library_copy", "bench_lib", "bare_library", "scored"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if INGESTED & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
