"""The command line as a user meets it: help, version, search output, the demo, and the launcher."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import REPO, invoke, run_process

COMMANDS = ["add", "search", "status", "check", "prune", "roots", "templates", "label", "systems", "settings", "demo",
            "bench", "judge", "run", "score", "interactions", "sql", "safety"]


def test_help_and_version() -> None:
    out = invoke("-h").output
    for name in COMMANDS:
        assert name in out
    assert "MAMBO_DB" in out
    assert invoke("--version").output.strip() == "mambo, version 0.1.0"
    for name in COMMANDS:
        assert "Usage:" in invoke(name, "-h").output


def test_every_command_is_documented_in_readme() -> None:
    readme = (REPO / "README.md").read_text()
    for name in COMMANDS:
        assert f"mambo {name}" in readme, name


def test_readme_opens_with_the_two_commands_and_ci_runs_the_second() -> None:
    readme = (REPO / "README.md").read_text()
    blocks = [b.split("```")[0] for b in readme.split("```sh\n")[1:3]]
    assert blocks[0].strip() == "./mambo demo"
    test_command = blocks[1].strip()
    assert test_command in (REPO / ".ci" / "run").read_text()


def test_search_prints_results_and_json(fixture_library: Path) -> None:
    out = invoke("--db", fixture_library, "search", "john cena").output
    assert out.startswith(" 1.")
    lines = invoke("--db", fixture_library, "search", "--json", "-n", "3", "john cena").output.splitlines()
    assert 1 <= len(lines) <= 3
    first = json.loads(lines[0])
    for key in ("asset_id", "rank", "score", "route_ranks", "has_preview", "has_attribution", "path"):
        assert key in first


def test_search_no_match_is_not_an_error(fixture_library: Path) -> None:
    out = invoke("--db", fixture_library, "search", "-s", "bm25", "zzqxv").output
    assert out.strip() == "no match"


def test_search_on_missing_library_says_what_to_do(tmp_path: Path) -> None:
    result = invoke("--db", tmp_path / "none.sqlite", "search", "x", expect=1)
    assert "mambo add" in result.output


def test_unknown_system_is_a_clear_error(fixture_library: Path) -> None:
    result = invoke("--db", fixture_library, "search", "-s", "nope", "x", expect=1)
    assert "choose one of" in result.output and "bm25" in result.output


def test_demo_builds_the_library_and_answers_queries(tmp_path: Path) -> None:
    proc = run_process("--db", tmp_path / "demo.sqlite", "demo", input="john cena\nzzqxv qqqzz\n", timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "» john cena" in proc.stdout
    assert "cena" in proc.stdout.split("» zzqxv")[0].lower()
    assert "no match" in proc.stdout.split("» zzqxv")[1]
    assert "indexed" in proc.stderr


def test_settings_opt_in_and_validation(tmp_path: Path) -> None:
    db = tmp_path / "lib.sqlite"
    assert "interaction_events = off" in invoke("--db", db, "settings").output
    assert "takes one of: on, off" in invoke("--db", db, "settings", "interaction_events", "yes", expect=1).output
    assert "interaction_events = on" in invoke("--db", db, "settings", "interaction_events", "on").output
    assert "interaction_events = on" in invoke("--db", db, "settings").output
