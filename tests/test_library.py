"""The library file: schema, migrations, location, connection settings."""

from __future__ import annotations

import shutil
from pathlib import Path

import apsw
import numpy as np
import pytest
import sqlite_vec

from helpers import REPO, invoke
from mambomeme.library import DB, SCHEMA_VERSION, default_db_path, migrations
from mambomeme.search import DEFAULT_SYSTEMS, sync_systems, system_config


def schema_of(db: DB) -> list[tuple]:
    return sorted(db.con.execute("SELECT type, name, tbl_name, sql FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%'"))


def test_new_file_has_current_schema_and_settings(tmp_path: Path) -> None:
    db = DB(tmp_path / "lib.sqlite")
    assert db.user_version() == SCHEMA_VERSION
    assert db.scalar("PRAGMA journal_mode") == "wal"
    assert db.scalar("PRAGMA foreign_keys") == 1
    assert db.con.get_busy_timeout() if hasattr(db.con, "get_busy_timeout") else True
    assert db.scalar("SELECT vec_version()").startswith("v")
    names = {r[0] for r in db.con.execute("SELECT name FROM sqlite_schema")}
    assert {
        "items",
        "files",
        "previews",
        "items_fts",
        "item_vectors",
        "embedding_models",
        "ocr_engines",
        "systems",
        "library",
        "servable_items",
    } <= names


def test_migrations_from_empty_give_exactly_schema_sql(tmp_path: Path) -> None:
    fresh = DB(tmp_path / "fresh.sqlite")
    # A schema-1 file (migration 001 alone) forces the migration path (a non-empty database without
    # the mambo schema is refused).
    migrated = apsw.Connection(str(tmp_path / "migrated.sqlite"))
    migrated.enable_load_extension(True)
    migrated.load_extension(sqlite_vec.loadable_path())
    migrated.execute((REPO / "migrations" / "001_initial.sql").read_text())
    migrated.close()
    db = DB(tmp_path / "migrated.sqlite")
    assert schema_of(db) == schema_of(fresh)
    assert db.user_version() == fresh.user_version()
    # 012: an existing library's perceptual groups are made again by its next `mambo add`; a new one's
    # are made by the current rule from the start.
    assert db.q1("setting", {"key": "regroup_perceptual"}) is not None
    assert fresh.q1("setting", {"key": "regroup_perceptual"}) is None


def library_at(path: Path, version: int) -> apsw.Connection:
    """A library as an older version made it: the migrations up to `version`, nothing after."""
    con = apsw.Connection(str(path))
    con.enable_load_extension(True)
    con.load_extension(sqlite_vec.loadable_path())
    for number, _name, mig in migrations():
        if number <= version:
            con.execute(mig.read_text())
            con.execute(f"PRAGMA user_version = {number}")
    return con


def test_013_keeps_judgement_candidates_and_allows_earlier_pool(tmp_path: Path) -> None:
    """Migration 013 makes judgement_candidates again (a CHECK cannot change in place): its rows stay,
    the views that read it still work, and the origin 'earlier-pool' is allowed."""
    path = tmp_path / "v12.sqlite"
    con = library_at(path, 12)
    con.execute(
        "INSERT INTO bench_partitions(benchmark, version, partition, meta, source_sha256) "
        "VALUES ('b', '1', 'dev', '{}', 'x');"
        "INSERT INTO bench_queries(partition_id, qid, family, slice, query) "
        "VALUES (1, 'q1', 'f', 'topic', 'c');"
        "INSERT INTO judgement_sets(partition_id, version) VALUES (1, 1);"
        "INSERT INTO judgement_candidates VALUES (1, 1, 7, 'gold'), (1, 1, 8, 'pool');"
    )
    with pytest.raises(apsw.ConstraintError):
        con.execute("INSERT INTO judgement_candidates VALUES (1, 1, 9, 'earlier-pool')")
    con.close()
    db = DB(path)
    assert db.user_version() == SCHEMA_VERSION
    db.con.execute("INSERT INTO judgement_candidates VALUES (1, 1, 9, 'earlier-pool')")
    assert db.con.execute("SELECT item_id, origin FROM judgement_candidates ORDER BY item_id").fetchall() == [
        (7, "gold"),
        (8, "pool"),
        (9, "earlier-pool"),
    ]
    assert db.con.execute("SELECT item_id, status FROM final_judgements ORDER BY item_id").fetchall() == [
        (7, "needs-grades"),
        (8, "needs-grades"),
        (9, "needs-grades"),
    ]
    assert db.scalar("PRAGMA legacy_alter_table") == 0
    assert not db.con.execute("SELECT name FROM sqlite_schema WHERE name LIKE 'judgement_candidates_%'").fetchall()


def test_older_file_is_migrated_on_open(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "old.sqlite"
    DB(path).close()
    # A newer release ships the next migration; opening the older file applies it in a transaction.
    nxt = SCHEMA_VERSION + 1
    mig = tmp_path / "migrations"
    shutil.copytree(REPO / "migrations", mig)
    (mig / f"{nxt:03d}_add_note.sql").write_text("ALTER TABLE items ADD COLUMN note TEXT;\n")
    schema = tmp_path / "schema.sql"
    schema.write_text(
        (REPO / "schema.sql").read_text().replace(f"PRAGMA user_version = {SCHEMA_VERSION};", "")
        + f"\nALTER TABLE items ADD COLUMN note TEXT;\nPRAGMA user_version = {nxt};\n"
    )
    monkeypatch.setattr("mambomeme.library.MIGRATIONS_DIR", mig)
    monkeypatch.setattr("mambomeme.library.SCHEMA_FILE", schema)
    monkeypatch.setattr("mambomeme.library.SCHEMA_VERSION", nxt)
    db = DB(path)
    assert db.user_version() == nxt
    assert "note" in {r[1] for r in db.con.execute("PRAGMA table_info(items)")}


def test_file_from_newer_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "new.sqlite"
    DB(path).close()
    con = apsw.Connection(str(path))
    con.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 5}")
    con.close()
    result = invoke("--db", path, "status", expect=2)
    assert "newer MamboMeme" in result.output and "upgrade mambo" in result.output
    assert "Traceback" not in result.output


def test_not_a_database_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "junk.sqlite"
    path.write_bytes(b"this is not sqlite" * 100)
    result = invoke("--db", path, "status", expect=2)
    assert "not a MamboMeme library" in result.output
    assert path.read_bytes() == b"this is not sqlite" * 100  # nothing lost


def test_location_flag_then_env_then_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    flag, env = tmp_path / "flag.sqlite", tmp_path / "env.sqlite"
    monkeypatch.setenv("MAMBO_DB", str(env))
    write = ("settings", "interaction_events", "off")  # a command that writes (reading creates nothing)
    invoke("--db", flag, *write)
    assert flag.exists() and not env.exists()
    invoke(*write)
    assert env.exists()
    monkeypatch.delenv("MAMBO_DB")
    invoke(*write)
    default = tmp_path / "xdg-data" / "mambomeme" / "library.sqlite"
    assert default.exists() and default_db_path() == default


def test_systems_are_versioned_never_edited(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = DB(tmp_path / "lib.sqlite")
    sync_systems(db)
    assert {r[0] for r in db.q("list_systems")} == {"bm25", "dense", "hybrid"}
    with pytest.raises(apsw.ConstraintError, match="immutable"):
        db.con.execute("UPDATE systems SET config = '{}' WHERE name = 'bm25'")
    changed = dict(DEFAULT_SYSTEMS)
    changed["bm25"] = changed["bm25"] | {"candidate_depth": 99}
    monkeypatch.setattr("mambomeme.search.DEFAULT_SYSTEMS", changed)
    sync_systems(db)
    versions = [(r[0], r[1]) for r in db.q("list_systems") if r[0] == "bm25"]
    assert versions == [("bm25", 1), ("bm25", 2)]
    assert system_config(db, "bm25")["candidate_depth"] == 99


def test_015_makes_the_vector_tables_again_for_768_dimensions(tmp_path: Path) -> None:
    """A schema-14 library holds all-MiniLM-L6-v2's 384-dimension vectors, which a vec0 table of the
    new model cannot take: migration 015 makes the vector tables again (768), empty, with the coarse
    index, and drops the embedding rows, so `mambo add` embeds every item again."""
    path = tmp_path / "v14.sqlite"
    con = library_at(path, 14)
    old = (np.ones(384) / np.sqrt(384)).astype(np.float32)
    con.execute(
        "INSERT INTO embedding_models(name, revision, weights_sha256, dim, text_recipe) "
        "VALUES ('sentence-transformers/all-MiniLM-L6-v2', 'r', 'w', 384, 'v3');"
        "INSERT INTO item_embeddings(item_id, model_id, text_sha256) VALUES (1, 1, 't');"
    )
    con.execute("INSERT INTO item_vectors(item_id, embedding, servable) VALUES (1, ?, 1)", (old.tobytes(),))
    con.close()
    db = DB(path)
    assert db.user_version() == SCHEMA_VERSION >= 15
    assert db.scalar("SELECT count(*) FROM item_vectors") == db.scalar("SELECT count(*) FROM item_embeddings") == 0
    assert db.scalar("SELECT count(*) FROM embedding_models") == 1  # the manifest's history stays
    new = (np.ones(768) / np.sqrt(768)).astype(np.float32)
    with db.write():
        db.con.execute("INSERT INTO item_vectors(item_id, embedding, servable) VALUES (1, ?, 1)", (new.tobytes(),))
        with pytest.raises(apsw.SQLError):
            db.con.execute("INSERT INTO item_vectors(item_id, embedding, servable) VALUES (2, ?, 1)", (old.tobytes(),))
    assert db.scalar("SELECT vec_length(embedding) FROM item_vectors") == 768
