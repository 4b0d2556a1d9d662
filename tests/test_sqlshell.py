"""`mambo sql`: SQL on the real library file with sqlite-vec loaded, through the real CLI.

Read-only unless --write, never migrating, refusing files that are not libraries (their bytes
unchanged), and no escape sequence from OCR text reaching the terminal."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

import apsw
import pexpect
import pytest

from helpers import REPO, invoke
from mambomeme.library import SCHEMA_VERSION, Q

HOSTILE = "evil \x1b[31mRED\x1b]0;pwned\x07 end \u202e"


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def read(path: Path, sql: str) -> list[tuple]:
    """The library's own rows, read beside the CLI (read-only, no vec0 needed for these)."""
    con = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def json_rows(output: str) -> list[dict]:
    return [json.loads(line) for line in output.splitlines() if line.strip()]


def test_a_query_on_a_view_prints_its_rows(fixture_library: Path) -> None:
    expected = read(fixture_library, "SELECT item_id, path, title FROM library ORDER BY item_id")
    assert len(expected) > 20
    rows = json_rows(
        invoke(
            "--db", fixture_library, "sql", "--json", "SELECT item_id, path, title FROM library ORDER BY item_id"
        ).stdout
    )
    assert [(r["item_id"], r["path"], r["title"]) for r in rows] == expected
    # The default is a table: a header and the rows' values.
    table = invoke("--db", fixture_library, "sql", "SELECT item_id, title FROM library ORDER BY item_id LIMIT 3").stdout
    assert "item_id" in table and "title" in table
    assert all(title in table for _, _, title in expected[:3] if title)


def test_a_knn_query_on_the_vec0_table(fixture_library: Path) -> None:
    knn = (
        "SELECT item_id, distance FROM item_vectors WHERE embedding MATCH "
        "(SELECT embedding FROM item_vectors WHERE item_id = 1) AND k = 5 ORDER BY distance"
    )
    rows = json_rows(invoke("--db", fixture_library, "sql", "--json", knn).stdout)
    assert len(rows) == 5
    assert rows[0]["item_id"] == 1 and rows[0]["distance"] == pytest.approx(0.0, abs=1e-6)
    distances = [r["distance"] for r in rows]
    assert distances == sorted(distances) and distances[-1] > 0
    # sqlite-vec's functions too; the blob itself is printed as hex (768 float32 = 3072 bytes).
    vector = "SELECT vec_length(embedding) AS dims, embedding FROM item_vectors WHERE item_id = 1"
    rows = json_rows(invoke("--db", fixture_library, "sql", "--json", vector).stdout)
    assert rows[0]["dims"] == 768 and len(bytes.fromhex(rows[0]["embedding"])) == 3072


def test_json_and_csv_output(fixture_library: Path) -> None:
    sql = "SELECT name, NULL AS missing, 2.5 AS half FROM library_roots ORDER BY name"
    names = [r[0] for r in read(fixture_library, "SELECT name FROM library_roots ORDER BY name")]
    out = invoke("--db", fixture_library, "sql", "--json", sql).stdout
    assert json_rows(out) == [{"name": n, "missing": None, "half": 2.5} for n in names]
    csv_out = invoke("--db", fixture_library, "sql", "--csv", sql).stdout.splitlines()
    assert csv_out == ["name,missing,half", *[f"{n},,2.5" for n in names]]
    bad = invoke("--db", fixture_library, "sql", "--json", "--csv", "SELECT 1", expect=2)
    assert "choose one of --json and --csv" in bad.output


def test_a_write_is_refused_without_write(fixture_library: Path) -> None:
    before = sha(fixture_library)
    for statement in (
        "DELETE FROM items",
        "UPDATE settings SET value = 'x'",
        "PRAGMA user_version = 1",
        "CREATE TABLE mine(x)",
        "VACUUM",
    ):
        result = invoke("--db", fixture_library, "sql", statement, expect=2)
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 and "read-only" in lines[0] and "--write" in lines[0], result.output
    # In the shell too: SQLite refuses it (the connection is opened read-only), mambo says what to do,
    # the statements after it still run, and the exit status says one failed.
    result = invoke("--db", fixture_library, "sql", input="DELETE FROM items;\nSELECT count(*) FROM items;\n", expect=2)
    assert "refused: the library is open read-only: run `mambo sql --write`" in result.stderr
    assert result.stdout.strip() == str(read(fixture_library, "SELECT count(*) FROM items")[0][0])
    assert sha(fixture_library) == before


def test_write_changes_the_library_through_its_triggers(library_copy: tuple[Path, Path]) -> None:
    db, _ = library_copy
    item = read(db, "SELECT min(item_id) FROM servable_items")[0][0]
    result = invoke("--db", db, "sql", "--write", f"DELETE FROM items WHERE item_id = {item}")
    assert "1 row(s) changed" in result.stderr
    # The vec0 trigger ran (it needs sqlite-vec loaded): the item's vector went with it.
    rows = json_rows(
        invoke("--db", db, "sql", "--json", f"SELECT count(*) AS n FROM item_vectors WHERE item_id = {item}").stdout
    )
    assert rows == [{"n": 0}]
    assert not read(db, f"SELECT 1 FROM items_fts WHERE rowid = {item}")
    # The write was folded back into the file: the library is one file again.
    assert not Path(f"{db}-wal").exists() or Path(f"{db}-wal").stat().st_size == 0


def test_ocr_text_never_reaches_the_terminal_with_escapes(library_copy: tuple[Path, Path]) -> None:
    db, _ = library_copy
    invoke(
        "--db",
        db,
        "sql",
        "--write",
        "UPDATE items SET ocr_text = 'evil ' || char(27) || '[31mRED' || char(27) "
        "|| ']0;pwned' || char(7) || ' end ' || char(8238) WHERE item_id = 1",
    )
    assert read(db, "SELECT ocr_text FROM items WHERE item_id = 1") == [(HOSTILE,)]
    select = "SELECT ocr_text FROM items WHERE item_id = 1"
    outputs = [invoke("--db", db, "sql", select).stdout, invoke("--db", db, "sql", "--csv", select).stdout]
    for mode in ("list", "line", "csv", "tcl", "box", "html", "column"):
        outputs.append(invoke("--db", db, "sql", input=f".mode {mode}\n{select};\n").stdout)
    assert all("evil RED end" in out for out in outputs[:3]), outputs[:3]  # table, csv, list
    for out in outputs:  # (column mode cuts at 10 characters, tcl mode escapes even spaces)
        assert "evil" in out, out
        assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out, repr(out)
    # JSON keeps the exact text, its control characters written as \u escapes.
    out = invoke("--db", db, "sql", "--json", select).stdout
    assert "\x1b" not in out and json_rows(out) == [{"ocr_text": HOSTILE}]


def test_foreign_files_are_refused_unchanged(tmp_path: Path) -> None:
    other = tmp_path / "other.sqlite"
    con = apsw.Connection(str(other))
    con.execute("CREATE TABLE items(x); INSERT INTO items VALUES (1); PRAGMA user_version = 6")
    con.close()
    text = tmp_path / "notes.txt"
    text.write_text("not a database\n")
    empty = tmp_path / "empty.sqlite"
    empty.write_bytes(b"")
    for path, says in (
        (other, "not a MamboMeme library (no mambo schema)"),
        (empty, "not a MamboMeme library (no mambo schema)"),
        (text, "not a MamboMeme library (not an SQLite file)"),
    ):
        before = sha(path)
        for args in (["SELECT 1"], ["--write", "DELETE FROM items"], []):
            result = invoke("--db", path, "sql", *args, input="SELECT 1;\n", expect=2)
            assert says in result.output and len(result.output.strip().splitlines()) == 1, result.output
        assert sha(path) == before
        assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(path.name)) == [path.name]
    missing = tmp_path / "missing.sqlite"
    result = invoke("--db", missing, "sql", "SELECT 1", expect=2)
    assert "no library at" in result.output and not missing.exists()


def test_an_older_library_is_read_but_never_migrated(library_copy: tuple[Path, Path]) -> None:
    db, _ = library_copy
    con = apsw.Connection(str(db))
    con.execute(f"PRAGMA user_version = {SCHEMA_VERSION - 1}")
    con.close()
    before = sha(db)
    result = invoke("--db", db, "sql", "--json", "SELECT count(*) AS n FROM library")
    assert f"has schema {SCHEMA_VERSION - 1}" in result.stderr and "not migrated" in result.stderr
    assert json_rows(result.stdout)[0]["n"] > 0
    refused = invoke("--db", db, "sql", "--write", "DELETE FROM settings", expect=2)
    assert "run `mambo status` once to upgrade it" in refused.output
    assert sha(db) == before and read(db, "PRAGMA user_version") == [(SCHEMA_VERSION - 1,)]


def test_one_statement_at_a_time_and_sql_errors_in_one_line(fixture_library: Path) -> None:
    for statement, says in (
        ("SELECT 1; SELECT 2", "one statement at a time"),
        ("SELECT * FROM no_such_view", "SQL error: no such table: no_such_view"),
        ("SELEC 1", "SQL error"),
        ("  -- nothing\n;", "no SQL statement given"),
    ):
        result = invoke("--db", fixture_library, "sql", statement, expect=2)
        assert says in result.output and len(result.output.strip().splitlines()) == 1, result.output
    # A trailing semicolon or comment is not a second statement.
    result = invoke("--db", fixture_library, "sql", "--json", "SELECT 1 AS one; -- done")
    assert json_rows(result.stdout) == [{"one": 1}]


def test_the_named_queries_are_at_hand(fixture_library: Path) -> None:
    rows = json_rows(
        invoke(
            "--db", fixture_library, "sql", "--json", "SELECT name, file, sql FROM mambo_queries ORDER BY name"
        ).stdout
    )
    assert {r["name"]: r["sql"] for r in rows} == Q
    assert {r["file"] for r in rows} >= {"library.sql", "search.sql", "sqlshell.sql"}
    root = read(fixture_library, "SELECT name, path FROM library_roots ORDER BY root_id")[0]
    script = ".queries root_by\n.parameter set name '" + root[0] + "'\n.query root_by_name\n.query no_such_query\n"
    result = invoke("--db", fixture_library, "sql", input=script, expect=2)
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["root_by_name", "library.sql", ":name"]
    assert lines[1].split("|")[1:] == [root[0], root[1]]
    assert "no named query 'no_such_query'" in result.stderr
    # The shell stays on its one library: apsw's .open would reopen it read-write (or --wipe it).
    before = sha(fixture_library)
    result = invoke("--db", fixture_library, "sql", input=f".open --wipe {fixture_library}\nSELECT 1;\n", expect=2)
    assert "works on one library" in result.stderr and result.stdout.strip() == "1"
    assert sha(fixture_library) == before


@pytest.mark.slow
def test_the_interactive_shell_in_a_real_terminal(fixture_library: Path, tmp_path: Path) -> None:
    env = {**os.environ, "TERM": "xterm-256color", "HOME": str(tmp_path), "PYTHONPATH": str(REPO)}
    child = pexpect.spawn(
        sys.executable,
        [str(REPO / "mambo.py"), "--db", str(fixture_library), "sql"],
        env=env,
        dimensions=(24, 100),
        encoding="utf-8",
        timeout=30,
    )
    child.delaybeforesend = None
    try:
        child.expect("read-only")
        child.expect("mambo sql> ")
        child.sendline("SELECT count(*) AS n FROM item_vectors;")
        count = read(fixture_library, "SELECT count(*) FROM item_embeddings")[0][0]
        child.expect(rf"│\s+{count}\s+│")
        child.expect("mambo sql> ")
        child.sendline("DELETE FROM items;")
        child.expect("refused: the library is open read-only")
        child.expect("mambo sql> ")
        child.sendline(".exit")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0


def test_tables_lists_the_documented_views_and_all_with_all(tmp_path: Path) -> None:
    import io
    import re

    from mambomeme.sqlshell import DOCUMENTED_VIEWS, LibraryShell, open_for_sql

    manual = (REPO / "docs" / "manual.md").read_text().split("The plain-named views")[1].split("```")[0]
    bench_views = (REPO / "docs" / "sql.md").read_text().split("## The benchmark's views")[1].split("##")[0]
    documented = [
        v
        for table in (manual, bench_views)
        for cell in re.findall(r"^\| `([^|]+)` \|", table, re.M)
        for v in re.findall(r"\w+", cell)
    ]
    assert tuple(documented) == DOCUMENTED_VIEWS  # the manual's table, then docs/sql.md's, is the list
    db = tmp_path / "lib.sqlite"
    invoke("--db", db, "settings", "interaction_events", "off")  # a new, empty library
    listed = invoke("--db", db, "sql", input=".tables\n").stdout.splitlines()
    assert listed[:-1] == list(DOCUMENTED_VIEWS) and "--all" in listed[-1]
    everything = invoke("--db", db, "sql", input=".tables --all\n").stdout.split()
    assert {"items", "files", "item_vectors", "library"} <= set(everything) and len(everything) > 60
    assert (
        invoke("--db", db, "sql", input=".tables judge\n").stdout.splitlines()[:-1]
        == [v for v in DOCUMENTED_VIEWS if "judge" in v]
        != []
    )
    con, _note = open_for_sql(db, write=False)
    try:
        banner = LibraryShell(
            con, db, writable=False, stdin=io.StringIO(), stdout=io.StringIO(), stderr=io.StringIO()
        ).intro(None)
    finally:
        con.close()
    assert "SELECT * FROM library" in banner and ".tables --all" in banner
