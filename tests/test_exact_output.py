"""What `mambo search` prints for other programs: each path's exact bytes (never a name with an
escape sequence stripped, nor a name split at its newline into other files' paths), NUL-ended with
-0 for `xargs -0`; and a damaged library is an error (exit 2), never "no match". Real files, a
real ingest, the real command line."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import IMAGES, REPO, app_cmd, assert_restored, finish, invoke, run_process, spawn

ESC_NAME = "esc\x1b[1mred.png"


def quokka_folder(tmp_path: Path) -> tuple[Path, dict[str, Path]]:
    """Public memes whose names hold an escape sequence and a newline, each beside the private meme
    its name would print as once mangled: `escred.png`, and the absolute path that follows the
    newline. Every one is titled "quokka" (a sidecar), so one query lists them all."""
    root = tmp_path / "memes"
    nested = (root / "x\n").joinpath(*root.parts[1:])  # root/x\n/<root without its leading />
    nested.mkdir(parents=True)
    files = {
        "esc": root / ESC_NAME,
        "private_esc": root / "escred.png",
        "newline": nested / "private.png",
        "private_newline": root / "private.png",
    }
    sources = ["cena-01.png", "cena-02.png", "cena-03.png", "duck-01.png"]
    for (key, path), src in zip(files.items(), sources, strict=True):
        shutil.copy(IMAGES / src, path)
        meta = {"title": f"quokka {key}", "private": key.startswith("private")}
        path.with_suffix(".json").write_text(json.dumps(meta))
    assert str(files["newline"]).split("\n")[1] == str(files["private_newline"])
    return root, files


@pytest.fixture(scope="module")
def quokkas(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Path]]:
    tmp = tmp_path_factory.mktemp("quokkas")
    root, files = quokka_folder(tmp)
    db = tmp / "lib.sqlite"
    invoke("--db", db, "add", "-q", root)
    return db, files


def raw_(path: Path) -> bytes:
    return os.fsencode(path)


@pytest.mark.slow
def test_paths_print_their_exact_bytes_and_never_a_private_memes(quokkas: tuple[Path, dict[str, Path]]) -> None:
    db, files = quokkas
    private = [raw_(files["private_esc"]), raw_(files["private_newline"])]
    # -0: every public path whole, NUL-ended, as xargs -0 reads them
    for args in (["-l", "-0"], ["-0"], ["--null", "--paths"]):
        res = invoke("--db", db, "search", "-s", "bm25", *args, "quokka")
        printed = res.stdout_bytes.split(b"\0")
        assert printed[-1] == b"" and sorted(printed[:-1]) == sorted([raw_(files["esc"]), raw_(files["newline"])])
        assert not set(printed) & set(private), args
    # -l without -0: a path holding a newline is an error naming the option, and nothing is printed
    res = invoke("--db", db, "search", "-s", "bm25", "-l", "quokka", expect=2)
    assert res.stdout_bytes == b""
    assert res.stderr.count("\n") == 1 and "path holds a newline: use -0/--null" in res.stderr
    # the escape sequence is printed as it is in the name, not stripped to the private escred.png
    res = invoke("--db", db, "search", "-s", "bm25", "-n", "1", "-l", "quokka", "esc")
    assert res.stdout_bytes.splitlines()[0] == raw_(files["esc"])
    assert raw_(files["private_esc"]) not in res.stdout_bytes.splitlines()
    # queries piped in, with -l: the same bytes
    res = invoke("--db", db, "search", "-s", "bm25", "-n", "1", "-l", "-0", input="quokka esc\n")
    assert res.stdout_bytes.split(b"\0")[0] == raw_(files["esc"])
    assert invoke("--db", db, "search", "-s", "bm25", "-l", input="quokka\n", expect=2).stdout_bytes == b""
    # --json keeps its one form; -0 goes with paths only
    res = invoke("--db", db, "search", "--json", "-0", "quokka", expect=2)
    assert "choose one of --json and -0/--null" in res.output


@pytest.mark.slow
def test_a_pipe_to_xargs_gets_the_chosen_files(quokkas: tuple[Path, dict[str, Path]], tmp_path: Path) -> None:
    """The README's recipe, in a real shell: `-l -0 | xargs -0 cp -t DIR` copies the public memes
    and nothing else."""
    db, files = quokkas
    out = tmp_path / "picked"
    out.mkdir()
    cmd = '"$PY" "$MAMBO" --db "$DB" search -s bm25 -l -0 quokka | xargs -r -0 cp -t "$OUT"'
    env = {
        **os.environ,
        "PY": sys.executable,
        "MAMBO": str(REPO / "mambo.py"),
        "DB": str(db),
        "OUT": str(out),
        "PYTHONPATH": str(REPO),
    }
    subprocess.run(["bash", "-c", cmd], check=True, env=env, timeout=300)
    copied = sorted(p.name for p in out.iterdir())
    assert copied == sorted([ESC_NAME, "private.png"])  # the public private.png, under x\n/...
    assert (out / "private.png").read_bytes() == files["newline"].read_bytes()
    assert (out / "private.png").read_bytes() != files["private_newline"].read_bytes()


@pytest.mark.slow
def test_the_picker_prints_exact_bytes_and_refuses_a_newline_without_0(
    quokkas: tuple[Path, dict[str, Path]], tmp_path: Path
) -> None:
    """The screen's choice, printed to a file (not a terminal): with -0 each marked path's bytes
    and a NUL; without it, a path holding a newline is an error (exit 2) and nothing is printed."""
    db, files = quokkas
    out = tmp_path / "chosen"
    for flags, want_rc in ((["-0"], 0), ([], 2)):
        app = app_cmd(db, "--system", "bm25", "-q", "quokka", "-m", *flags)
        child = spawn(f'{app} > "{out}"; echo "RC=$?"; stty -a')
        child.expect("2 results")
        child.send("\t\t")  # mark both (Tab marks and moves down)
        child.expect("2 marked")
        child.send("\r")
        rc, raw = finish(child)
        assert rc == want_rc, raw[-500:]
        assert_restored(raw)
        if flags:
            assert sorted(out.read_bytes().split(b"\0")) == sorted([b"", raw_(files["esc"]), raw_(files["newline"])])
        else:
            assert out.read_bytes() == b"" and "path holds a newline: use -0/--null" in raw


@pytest.mark.slow
@pytest.mark.parametrize("mode", [[], ["-l"], ["--json"], ["-l", "-0"]])
def test_a_damaged_library_is_an_error_not_no_match(fixture_library: Path, tmp_path: Path, mode: list[str]) -> None:
    cut = tmp_path / "cut.sqlite"
    data = fixture_library.read_bytes()
    cut.write_bytes(data[: len(data) // 2])
    res = run_process("--db", cut, "search", "-s", "bm25", *mode, "john", "cena")
    assert res.returncode == 2, (res.returncode, res.stderr)
    assert res.stdout == "" and res.stderr.count("\n") == 1 and "damaged" in res.stderr
    res = run_process("--db", cut, "search", "-s", "bm25", *mode, input="john cena\n")
    assert res.returncode == 2 and res.stderr.count("\n") == 1, (res.returncode, res.stderr)
