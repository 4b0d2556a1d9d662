"""The search helper: real processes, a real socket and the real model. A one-shot search answered
by the helper writes the same bytes and exits with the same status as one answered in-process."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pexpect
import pytest

from helpers import REPO, run_process


def mambo(*args: object, env: dict[str, str]) -> subprocess.CompletedProcess:
    """mambo.py as its own process, its output as bytes."""
    return subprocess.run(
        [sys.executable, str(REPO / "mambo.py"), *map(str, args)], capture_output=True, env=env, timeout=300
    )


def answers(log: Path) -> list[str]:
    return log.read_text().split("\n")[:-1] if log.exists() else []


def wait_for(check, what: str, timeout: float = 120) -> None:
    end = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < end, f"timed out waiting for {what}"
        time.sleep(0.1)


def pids(log: Path) -> set[int]:
    return {int(line.split()[1]) for line in answers(log) if line.startswith("start")}


@pytest.fixture
def helper_env(tmp_path: Path) -> Iterator[tuple[dict[str, str], Path]]:
    """(environment with the helper on, its log); every helper it started is killed at the end."""
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    log = tmp_path / "helper.log"
    env = {k: v for k, v in os.environ.items() if k != "MAMBO_NO_HELPER"}
    env |= {"XDG_RUNTIME_DIR": str(runtime), "MAMBO_HELPER_LOG": str(log), "PYTHONPATH": str(REPO)}
    try:
        yield env, log
    finally:
        for pid in pids(log):
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
            wait_for(lambda p=pid: not alive(p), f"helper {pid} to exit", timeout=20)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (exited, not yet reaped by its session) counts as gone.
    state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] if Path(f"/proc/{pid}").exists() else "Z"
    return state != "Z"


def started(env: dict[str, str], log: Path) -> int:
    """Wait for a helper to listen (the model loaded): its pid."""
    wait_for(lambda: bool(pids(log)), "the helper to start")
    sock = next((Path(env["XDG_RUNTIME_DIR"]) / "mambo").glob("*.sock"), None)
    assert sock is not None and stat.S_ISSOCK(sock.stat().st_mode)
    return max(pids(log), key=lambda p: answers(log).index(f"start {p}"))


def same_as_in_process(args: list[object], env: dict[str, str]) -> subprocess.CompletedProcess:
    via = mambo(*args, env=env)
    alone = mambo(*args, env=env | {"MAMBO_NO_HELPER": "1"})
    assert (via.stdout, via.stderr, via.returncode) == (alone.stdout, alone.stderr, alone.returncode), args
    return via


def test_the_helper_answers_as_the_command_does(fixture_library: Path, helper_env) -> None:
    env, log = helper_env
    db = fixture_library
    first = same_as_in_process(["--db", db, "search", "-s", "hybrid", "john cena"], env)
    assert first.returncode == 0 and first.stdout
    pid = started(env, log)
    folder = Path(env["XDG_RUNTIME_DIR"]) / "mambo"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    for args in (
        ["--db", db, "search", "john", "cena"],
        ["--db", db, "search", "--json", "-n", "3", "monday"],
        ["--db", db, "search", "-l", "cat"],
        ["--db", db, "search", "-l", "-0", "cat"],
        ["--db", db, "search", "-s", "dense", "cat"],
        ["--db", db, "search", "--json", "-s", "hybrid", "zzqxj wvvkp"],  # no match: exit 1
        ["--db", db, "search", "zzqxj wvvkp"],
        ["--db", db, "search", "--json", "-l", "cat"],  # an error: exit 2
        ["--db", db, "search", "--nearest", "-l", "-n", "3", "zzqxj wvvkp"],
    ):
        before = answers(log).count(f"answer {pid}")
        same_as_in_process(args, env)
        assert answers(log).count(f"answer {pid}") == before + 1, f"{args} not answered by the helper"
    assert mambo("--db", db, "search", "zzqxj wvvkp", env=env).returncode == 1
    # On a terminal -l escapes the paths: the helper is told stdout is one, and writes the same.
    on_terminal = [in_pty(["--db", db, "search", "-l", "cat"], e) for e in (env, env | {"MAMBO_NO_HELPER": "1"})]
    assert on_terminal[0] == on_terminal[1] and on_terminal[0][1] == 0
    # The runs with MAMBO_NO_HELPER=1 above were never sent to it: nine compared, and two more.
    assert answers(log).count(f"answer {pid}") == 11
    # Anything but a one-shot search is refused by the helper and run by the client as usual.
    for args in (
        ["--db", db, "search", "--help"],
        ["--db", db, "search", "-n", "500", "cat"],  # a usage error
        ["--db", db, "status", "search"],
    ):
        same_as_in_process(args, env)
    assert answers(log).count(f"answer {pid}") == 11
    # The client hands a search to a running helper before click or any command is imported.
    client = subprocess.run(
        [sys.executable, "-c", CLIENT_MODULES, str(REPO / "mambo.py"), "--db", str(db), "search", "-l", "cat"],
        capture_output=True,
        env=env,
        timeout=120,
    )
    assert client.stdout == mambo("--db", db, "search", "-l", "cat", env=env | {"MAMBO_NO_HELPER": "1"}).stdout
    assert client.stderr.splitlines()[-1] == b"LOADED []"
    assert answers(log).count(f"answer {pid}") == 12


# mambo.py run as a script; then which of the command line's modules it imported.
CLIENT_MODULES = """import runpy, sys
sys.argv = sys.argv[1:]
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
except SystemExit:
    pass
heavy = ("click", "apsw", "mambomeme.cli", "mambomeme.library", "mambomeme.search")
print("LOADED", sorted(m for m in heavy if m in sys.modules), file=sys.stderr)
"""


def in_pty(args: list[object], env: dict[str, str]) -> tuple[bytes, int]:
    """mambo.py on a terminal (stdout and stderr both): what it writes, and its exit status."""
    child = pexpect.spawn(sys.executable, [str(REPO / "mambo.py"), *map(str, args)], env=env, timeout=120)
    out = child.read()
    child.close()
    return out, child.exitstatus


def test_a_killed_helper_is_replaced_without_an_error(fixture_library: Path, helper_env) -> None:
    env, log = helper_env
    args = ["--db", fixture_library, "search", "cat"]
    mambo(*args, env=env)
    pid = started(env, log)
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not alive(pid), "the helper to die", timeout=20)
    # The socket file stays behind, nobody listening: answered in-process, and a new helper starts.
    same_as_in_process(args, env)
    wait_for(lambda: len(pids(log)) == 2, "a new helper")
    new = started(env, log)
    assert new != pid
    same_as_in_process(args, env)
    assert f"answer {new}" in answers(log)


def test_a_changed_library_is_never_answered_stale(library_copy: tuple[Path, Path], helper_env) -> None:
    env, log = helper_env
    db, _ = library_copy
    mambo("--db", db, "search", "cat", env=env)
    pid = started(env, log)
    best = same_as_in_process(["--db", db, "search", "-l", "cat"], env).stdout.split(b"\n")[0]
    assert run_process("--db", db, "private", best.decode(), env=env).returncode == 0
    after = same_as_in_process(["--db", db, "search", "-l", "cat"], env)
    assert best not in after.stdout.split(b"\n")
    assert answers(log).count(f"answer {pid}") == 2


def test_no_helper_when_turned_off(fixture_library: Path, helper_env) -> None:
    env, log = helper_env
    env = env | {"MAMBO_NO_HELPER": "1"}
    assert mambo("--db", fixture_library, "search", "cat", env=env).returncode == 0
    time.sleep(1)
    assert not log.exists()
    assert not (Path(env["XDG_RUNTIME_DIR"]) / "mambo").exists()
