"""Concurrent use, full disk, read-only libraries and hostile input, with real processes,
the real TUI in an 80x24 PTY and the real SQLite file. Crash safety (kill -9) is in test_ingest.py."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import IMAGES, REPO, assert_restored, finish, invoke, open_db, run_app, run_process, search
from mambomeme.ingest import Ingester
from mambomeme.lab.bench import HOSTILE_QUERIES, synthetic_variants
from mambomeme.library import DB, RIGHTS_STATUSES, SAFETY_CLASSES, db_error_message, file_sha256
from mambomeme.output import clean_line
from mambomeme.sidecars import SidecarFinder

pytestmark = pytest.mark.slow  # real PTYs, processes and many ingests


def _files(db_path: Path) -> int:
    db = DB(db_path, create=False, readonly=True)
    try:
        return int(db.scalar("SELECT count(*) FROM files"))
    finally:
        db.close()


def _start_add(db_path: Path, folder: Path, *extra: str, **kw) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(REPO / "mambo.py"), "--db", str(db_path), "add", "-q", *extra, str(folder)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kw,
    )


def test_tui_and_search_keep_answering_while_add_ingests(library_copy: tuple[Path, Path], tmp_path: Path) -> None:
    db_path, _images = library_copy
    new = tmp_path / "new-memes"
    synthetic_variants(IMAGES, new, 12, seed=3)
    before = _files(db_path)
    ingest = _start_add(db_path, new, "--batch-size", "2", "--workers", "1")
    child = run_app(db_path, "--system", "bm25", timeout=60)
    try:
        seq = 0
        during = 0  # searches answered after the ingest's first commit, while it still ran
        cli_ms = []
        while ingest.poll() is None or seq < 2:
            seq += 1
            status = search(child, "john cena" if seq % 2 else "cat", seq)
            assert "results" in status, status
            t0 = time.monotonic()
            res = run_process("--db", db_path, "search", "-s", "bm25", "john cena", timeout=120)
            cli_ms.append((time.monotonic() - t0) * 1000)
            assert res.returncode == 0 and "cena" in res.stdout.lower(), res.stderr
            assert "Traceback" not in res.stderr and "locked" not in res.stderr
            if ingest.poll() is None and _files(db_path) > before:
                during += 1
        out, err = ingest.communicate(timeout=60)
        assert ingest.returncode == 0, err
        assert "Traceback" not in err and "locked" not in err
        assert "added 12" in out
        assert during >= 2, f"only {during} searches overlapped the ingest's writes"
        # The TUI sees the new items without restarting.
        seq += 1
        assert "results" in search(child, "cena", seq)
        child.send("\x1b")
        rc, raw = finish(child)
    finally:
        if ingest.poll() is None:
            ingest.kill()
        if child.isalive():
            child.terminate(force=True)
    assert rc == 130
    assert_restored(raw)
    assert "Traceback" not in raw and "database is locked" not in raw
    db = open_db(db_path)
    assert db.scalar("SELECT count(*) FROM files") == before + 12
    assert db.rows("consistency")[0] == dict.fromkeys(db.rows("consistency")[0], 0)


def _snapshot(db_path: Path) -> dict[str, dict]:
    db = DB(db_path, create=False)
    try:
        assert db.scalar("PRAGMA integrity_check") == "ok"
        assert db.rows("consistency")[0] == dict.fromkeys(db.rows("consistency")[0], 0)
        return {r["path"]: r for r in db.rows("indexed_snapshot")}
    finally:
        db.close()


def test_disk_full_during_add_is_one_line_and_loses_nothing(library_copy: tuple[Path, Path], tmp_path: Path) -> None:
    """A real out-of-space: the `mambo add` process may not write any file past 48 KB
    (RLIMIT_FSIZE, as `ulimit -f`), so its WAL cannot hold even one batch of new items."""
    import resource

    db_path, _images = library_copy
    new = tmp_path / "new-memes"
    synthetic_variants(IMAGES, new, 6, seed=4)
    before = _snapshot(db_path)
    limit = 48 * 1024

    def small_disk() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    res = subprocess.run(
        [
            sys.executable,
            str(REPO / "mambo.py"),
            "--db",
            str(db_path),
            "add",
            "-q",
            "--workers",
            "1",
            "--batch-size",
            "3",
            str(new),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=small_disk,
    )
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stderr
    errors = [line for line in res.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and ("disk is full" in errors[0] or "input/output error" in errors[0]), res.stderr
    assert "run the same command again" in errors[0]
    after = _snapshot(db_path)  # integrity ok, no half-written item, everything from before intact
    assert all(after.get(p) == r for p, r in before.items())
    # With space again, the same command resumes and completes.
    out = invoke("--db", db_path, "add", "-q", new).output
    assert "errors 0" in out
    assert len(_snapshot(db_path)) == len(before) + 6


def test_max_page_count_full_rolls_back_the_batch(library_copy: tuple[Path, Path], tmp_path: Path) -> None:
    """The same through SQLite's own limit (PRAGMA max_page_count) on the ingest's connection: the
    failing batch is rolled back whole and the error explains itself in one line."""
    import apsw

    db_path, _images = library_copy
    new = tmp_path / "new-memes"
    synthetic_variants(IMAGES, new, 4, seed=6)
    before = _snapshot(db_path)
    db = DB(db_path)
    db.con.execute("VACUUM")  # no free pages left to reuse: any new item must grow the file
    pages = db.scalar("PRAGMA page_count")
    db.con.execute(f"PRAGMA max_page_count = {pages + 1}")
    with pytest.raises(apsw.FullError) as caught:
        Ingester(db, progress=False, workers=1, batch=4).run([new])
    message = db_error_message(caught.value, db_path)
    assert "\n" not in message and "disk is full" in message and "intact" in message
    db.close()
    after = _snapshot(db_path)
    assert after == before  # the whole batch rolled back; nothing earlier touched


def _as_user(*args: str, home: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run mambo the way an ordinary user would meet file permissions: root ignores them (the
    capability CAP_DAC_OVERRIDE), so as root the capability is dropped for the process."""
    prefix: list[str] = []
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        assert setpriv, "as root, this test needs util-linux setpriv to drop CAP_DAC_OVERRIDE"
        drop = "-dac_override,-dac_read_search"
        prefix = [setpriv, "--bounding-set", drop, "--inh-caps", drop]
    env = os.environ | {"HOME": str(home), "XDG_DATA_HOME": str(home)}
    return subprocess.run(
        [*prefix, sys.executable, str(REPO / "mambo.py"), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=str(home),
    )


@pytest.mark.parametrize("where", ["read-only file", "read-only folder"])
def test_read_only_library_searches_and_refuses_changes_clearly(fixture_library: Path, where: str) -> None:
    base = Path(tempfile.mkdtemp(prefix="mambo-ro-"))  # outside pytest's private (0700) tmp folders
    try:
        base.chmod(0o755)
        folder = base / "lib"
        folder.mkdir()
        db_path = folder / "library.sqlite"
        shutil.copy(fixture_library, db_path)
        db_path.chmod(0o444)
        folder.chmod(0o555 if where == "read-only folder" else 0o1777)
        digest = file_sha256(db_path)
        res = _as_user("--db", db_path, "search", "-s", "bm25", "john cena", home=base)
        assert res.returncode == 0 and "cena" in res.stdout.lower(), res.stderr
        res = _as_user("--db", db_path, "status", home=base)
        assert res.returncode == 0 and "items" in res.stdout, res.stderr
        for args, says in [
            (["add", "-q", IMAGES / "cat-01.png"], "read-only"),
            (["settings", "interaction_events", "on"], "read-only"),
            (["roots", "move", "images", base], "read-only"),
        ]:
            res = _as_user("--db", db_path, *args, home=base)
            lines = [x for x in res.stderr.splitlines() if x.strip()]
            assert res.returncode == 2 and len(lines) == 1 and says in lines[0], (args, res.stderr)
            assert "Traceback" not in res.stderr
        assert file_sha256(db_path) == digest
        if where == "read-only folder":
            assert sorted(p.name for p in folder.iterdir()) == ["library.sqlite"]  # no -wal/-shm could be made
    finally:
        for p in [base, *base.rglob("*")]:
            if p.is_dir():
                p.chmod(0o755)
        shutil.rmtree(base, ignore_errors=True)


# -- hostile input ---------------------------------------------------------------------------------


# What must never reach a terminal from mambo's output: C0/C1 controls but newline and tab
# (`roots list` is tab-separated), and the invisible format characters (bidi overrides) that
# reorder what the user reads.
def assert_terminal_safe(text: str) -> None:
    import unicodedata

    bad = sorted({c for c in text if c not in "\n\t" and unicodedata.category(c) in ("Cc", "Cf", "Cs")})
    assert not bad, f"unsafe characters reached the terminal: {bad!r}"


HOSTILE_TEXT = st.one_of(
    st.text(max_size=80),
    st.text(st.characters(codec="utf-8", categories=["Cc", "Cf", "Zs", "Po", "Sm", "L"]), max_size=40),
    st.sampled_from(HOSTILE_QUERIES),
    st.builds(lambda a, b: a + "\x1b[" + b + "m\x1b]0;pwned\x07" + a, st.text(max_size=5), st.text(max_size=5)),
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    query=HOSTILE_TEXT,
    system=st.sampled_from(["bm25", "dense", "hybrid", "no-such-system\x1b[2J"]),
    n=st.integers(-3, 150),
    as_json=st.booleans(),
)
def test_fuzz_search_cli_never_crashes_or_leaks_escapes(
    fixture_library: Path, query: str, system: str, n: int, as_json: bool
) -> None:
    args = [
        "--db",
        fixture_library,
        "search",
        "-s",
        system,
        "-n",
        str(n),
        *(["--json"] if as_json else []),
        "--",
        query,
    ]
    result = invoke(*args, expect=None)
    assert result.exit_code in (0, 1, 2), result.output
    assert_terminal_safe(result.stdout)
    assert_terminal_safe(result.stderr)
    if result.exit_code == 0 and as_json:
        for line in result.stdout.splitlines():
            assert json.loads(line)["rank"] >= 1
    elif result.exit_code == 0:
        assert result.stdout.strip()  # results
    elif result.exit_code == 1:  # ripgrep's "no match": said on stderr, nothing but the JSON marker on stdout
        assert "no match" in result.stderr and "Traceback" not in result.stderr
        assert (
            all(json.loads(line)["no_match"] for line in result.stdout.splitlines())
            if as_json
            else not result.stdout.strip()
        )
    else:
        assert "Error:" in result.stderr and "Traceback" not in result.stderr


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | HOSTILE_TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(HOSTILE_TEXT, inner, max_size=4),
    max_leaves=12,
)
SIDECAR_OBJECTS = st.one_of(
    st.fixed_dictionaries(
        {},
        optional={
            k: JSON_VALUES | st.sampled_from(["safe", "unsafe", "critical", "cleared"])
            for k in [
                "title",
                "template",
                "entities",
                "tags",
                "description",
                "safety",
                "rights",
                "private",
                "licence",
                "license",
                "file",
            ]
        },
    ),
    JSON_VALUES,
)
MANIFEST_FILES = st.one_of(
    HOSTILE_TEXT,
    st.sampled_from(
        [
            "a.png",
            "./a.png",
            "../outside.png",
            "/etc/passwd",
            "sub/../../outside.png",
            "link-out/x.png",
            "loop/a.png",
            "a.png\x00",
            "~/a.png",
            "%2e%2e/outside.png",
            "a" * 5000,
        ]
    ),
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    sidecar=st.one_of(
        SIDECAR_OBJECTS.map(json.dumps),
        st.binary(max_size=64).map(lambda b: b.decode("latin-1")),
        st.integers(1, 200_000).map(lambda d: "[" * d),
    ),
    lines=st.lists(st.tuples(MANIFEST_FILES, SIDECAR_OBJECTS), max_size=4),
)
def test_fuzz_sidecars_and_manifests_give_metadata_or_one_clear_error(
    tmp_path_factory: pytest.TempPathFactory, sidecar: str, lines: list
) -> None:
    base = tmp_path_factory.mktemp("fuzz")
    folder = base / "memes"
    folder.mkdir()
    (base / "outside.png").write_bytes(b"not yours")
    (folder / "link-out").symlink_to(base)
    (folder / "loop").symlink_to("loop")
    for name in ("a.png", "b.png"):
        (folder / name).write_bytes(b"png")
    (folder / "a.json").write_text(sidecar, encoding="utf-8", errors="surrogateescape")
    manifest = [json.dumps(obj | {"file": f} if isinstance(obj, dict) else obj) for f, obj in lines]
    (folder / "mambo.jsonl").write_text("\n".join(manifest) + "\n", encoding="utf-8", errors="surrogateescape")
    finder = SidecarFinder()
    for image in (folder / "a.png", folder / "b.png"):
        sha, meta, err = finder.find(image)
        # An error comes WITH metadata (what could be read, doubts held strict); no
        # metadata means no sidecar at all.
        assert err is None or meta is not None
        assert meta is not None or not sha
        if err is not None:
            assert err.kind == "sidecar" and err.message and "\n" not in clean_line(err.message)
        if meta is not None:
            assert meta.safety in SAFETY_CLASSES and meta.rights in RIGHTS_STATUSES
            assert all(clean_line(getattr(meta, k)) == getattr(meta, k) for k in ("title", "description"))
    for err in finder.manifest_errors(folder):
        assert err.kind == "sidecar" and err.message.startswith("mambo.jsonl")
    # Nothing a manifest names can be outside the folder it sits in.
    entries = finder._manifest(folder).entries
    inside = folder.resolve()
    assert all(inside in Path(target).parents for target in entries)


def test_hostile_files_names_and_sidecars_end_to_end(tmp_path: Path) -> None:
    """One real `mambo add` of a folder of hostile inputs, then every printing command on it:
    nothing crashes, every problem is one clear line, nothing unsafe reaches the terminal."""
    from PIL import Image

    folder = tmp_path / "hostile"
    folder.mkdir()
    png = (IMAGES / "cat-01.png").read_bytes()
    jpeg = Image.open(IMAGES / "duck-01.png").convert("RGB")
    (folder / "new\nline.png").write_bytes(png)
    (folder / "new\nline.json").write_text(
        json.dumps(
            {"title": "\x1b]0;pwned\x07Evil \x1b[2J title \u202eroolf", "entities": ["\x9b31mred"], "tags": "x\x00y"}
        )
    )
    (folder / "bidi\u202egnp.png").write_bytes((IMAGES / "mug-01.png").read_bytes())
    (folder / os.fsdecode(b"latin-\xe9.png")).write_bytes((IMAGES / "bot-01.png").read_bytes())
    (folder / "png-named.jpg").write_bytes((IMAGES / "coin-01.png").read_bytes())
    jpeg.save(folder / "jpeg-named.gif", format="JPEG")
    (folder / "text-named.webp").write_text("hello, I am not a picture")
    Image.new("RGB", (1, 1), "white").save(folder / "tiny-1x1.png")
    Image.new("RGB", (1, 3000), "black").save(folder / "strip-1x3000.png")
    Image.new("RGB", (6000, 6000), "white").save(folder / "huge-36mp.png")
    Image.new("1", (9000, 9000)).save(folder / "bomb-81mp.png")
    (folder / "loop").symlink_to("loop")
    (folder / "mambo.jsonl").write_text(
        json.dumps({"file": "bidi\u202egnp.png", "title": "Mug \u202e of \x1b[5mblink"})
        + "\n"
        + json.dumps({"file": "../../../../etc/passwd", "title": "escape"})
        + "\n"
    )
    db_path = tmp_path / "lib.sqlite"
    res = invoke("--db", db_path, "add", "-q", folder, expect=2)  # files skipped, the rest indexed
    assert_terminal_safe(res.stdout)
    assert_terminal_safe(res.stderr)
    db = open_db(db_path)
    kinds = {Path(p).name: k for p, k in db.con.execute("SELECT path, kind FROM ingest_errors")}
    assert kinds["text-named.webp"] == "not-image" and kinds["bomb-81mp.png"] == "bomb"
    assert kinds["loop"] == "symlink-loop" and kinds["mambo.jsonl"] == "sidecar"
    assert kinds["latin-\ufffd.png"] == "bad-name"  # not UTF-8: refused by name, kept readable
    reported = [line for line in res.stderr.splitlines() if line.startswith(("mambo: skipped", "mambo: warning"))]
    assert len(reported) == len(kinds) == db.scalar("SELECT count(*) FROM ingest_errors")
    names = {Path(p).name for (p,) in db.con.execute("SELECT rel_path FROM files")}
    assert {"new\nline.png", "bidi\u202egnp.png", "png-named.jpg", "jpeg-named.gif", "huge-36mp.png"} <= names
    assert db.scalar("SELECT count(*) FROM files WHERE rel_path LIKE '%passwd%'") == 0
    assert db.rows("consistency")[0] == dict.fromkeys(db.rows("consistency")[0], 0)
    db.close()
    for args in (
        ["search", "-s", "bm25", "evil title"],
        ["search", "-s", "bm25", "--json", "evil title"],
        ["search", "-s", "bm25", "mug blink"],
        ["status"],
        ["status", "--json"],
        ["roots", "list"],
        ["check", "--no-files"],
    ):
        out = invoke("--db", db_path, *args, expect=None)
        assert out.exit_code == 0, (args, out.output)
        assert_terminal_safe(out.stdout)
        assert_terminal_safe(out.stderr)
        if "--json" in args and args[0] == "search":
            hits = [json.loads(line) for line in out.stdout.splitlines()]
            assert hits and hits[0]["title"] == "Evil title roolf"  # OSC, CSI and the bidi override gone
    assert "Evil" in invoke("--db", db_path, "search", "-s", "bm25", "evil title").stdout
