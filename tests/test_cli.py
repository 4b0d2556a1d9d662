"""The command line as a user meets it: help, version, search output, the demo, and the launcher."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from helpers import REPO, invoke, run_process

USER_COMMANDS = [
    "search",
    "add",
    "status",
    "label",
    "templates",
    "safety",
    "private",
    "demo",
    "sql",
    "systems",
    "settings",
    "roots",
    "check",
    "prune",
    "help",
]
EVAL_COMMANDS = ["bench", "judge", "run", "score", "interactions"]
COMMANDS = [*USER_COMMANDS, "eval", *EVAL_COMMANDS]


def test_help_and_version() -> None:
    out = invoke("-h").output
    listed = [
        line.split()[0]
        for line in out.split("Commands:")[1].splitlines()
        if line.startswith("  ") and not line.startswith("   ")
    ]
    assert listed[: len(USER_COMMANDS)] == USER_COMMANDS  # the user's commands first, in this order
    assert "eval" in out.split("Evaluation")[1] and "..." not in out.split("Commands:")[1]  # never cut
    assert not set(EVAL_COMMANDS) & set(listed)
    assert "MAMBO_DB" in out
    assert invoke("--version").output.strip() == "mambo, version 0.1.0"
    for name in COMMANDS:
        assert "Usage:" in invoke(name, "-h").output
    evaluation = invoke("eval", "-h").output
    assert all(name in evaluation for name in EVAL_COMMANDS) and "..." not in evaluation.split("Commands:")[1]


def test_evaluation_commands_answer_under_eval_and_their_old_names() -> None:
    for name in EVAL_COMMANDS:
        assert invoke("eval", name, "-h").output.replace("cli eval ", "cli ") == invoke(name, "-h").output
    assert "cold" in invoke("eval", "bench", "-h").output
    assert "..." not in invoke("eval", "bench", "-h").output.split("Commands:")[1]


# What a start imports: `--help`, `--version` and completion load no command's work; a lexical
# search loads no model, no numpy, no lab (counted in a fresh process, never timed).
START = """import sys, runpy
sys.argv = ["mambo", *sys.argv[1:]]
try:
    runpy.run_path({script!r}, run_name="__main__")
except SystemExit:
    pass
heavy = ("numpy", "apsw.shell", "onnxruntime", "PIL", "cv2", "mambomeme.ingest", "mambomeme.lab", "mambomeme.search",
         "mambomeme.sqlshell", "mambomeme.tui_shell")
print("LOADED", sorted(m for m in sys.modules if m in heavy or m.startswith("mambomeme.lab")), file=sys.stderr)
"""


def loaded_by(*args: str, env: dict[str, str] | None = None) -> list[str]:
    import ast
    import os
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-c", START.format(script=str(REPO / "mambo.py")), *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=120,
    )
    line = [x for x in proc.stderr.splitlines() if x.startswith("LOADED ")]
    assert line, proc.stderr
    return ast.literal_eval(line[0].removeprefix("LOADED "))


def test_help_version_and_completion_import_no_commands_work() -> None:
    assert loaded_by("--version") == []
    assert loaded_by("--help") == []
    assert loaded_by(env={"_MAMBO_COMPLETE": "bash_complete", "COMP_WORDS": "mambo se", "COMP_CWORD": "1"}) == []
    # completing a system name reads the systems, and nothing of the lab or a model
    assert "mambomeme.lab" not in " ".join(
        loaded_by(env={"_MAMBO_COMPLETE": "bash_complete", "COMP_WORDS": "mambo search -s b", "COMP_CWORD": "3"})
    )


def test_shell_completion_completes_commands_and_system_names() -> None:
    from click.shell_completion import ShellComplete

    import mambo

    complete = ShellComplete(mambo.cli, {}, "mambo", "_MAMBO_COMPLETE")
    assert [c.value for c in complete.get_completions(["search", "-s"], "")] == ["bm25", "dense", "hybrid"]
    assert [c.value for c in complete.get_completions([], "se")] == ["search", "settings"]
    assert [c.value for c in complete.get_completions([], "ev")] == ["eval"]  # the old names are not offered
    assert [c.value for c in complete.get_completions([], "be")] == []


def test_a_lexical_search_loads_no_model_nor_numpy(fixture_library: Path) -> None:
    loaded = loaded_by("--db", str(fixture_library), "search", "-s", "bm25", "john", "cena")
    assert "mambomeme.search" in loaded  # the check sees real imports
    assert not {"numpy", "onnxruntime", "apsw.shell", "mambomeme.ingest"} & set(loaded)
    assert not [m for m in loaded if m.startswith("mambomeme.lab")]


def test_the_launcher_works_through_a_symlink_on_path(tmp_path: Path) -> None:
    import os
    import subprocess

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "mambo").symlink_to(REPO / "mambo")
    proc = subprocess.run(
        ["mambo", "--version"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"},
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "mambo, version 0.1.0" and "pyproject" not in proc.stderr


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
    for key in ("meme_id", "rank", "score", "route_ranks", "has_preview", "has_attribution", "path"):
        assert key in first
    assert first["asset_id"] == first["meme_id"]  # the old name, kept as an alias


def test_search_exit_codes_are_ripgreps(fixture_library: Path) -> None:
    """0 found, 1 no match ("no match" on stderr, nothing on stdout), 2 an error."""
    res = invoke("--db", fixture_library, "search", "-s", "bm25", "zzqxv", expect=1)
    assert res.stdout == "" and res.stderr.strip() == "no match"
    res = invoke("--db", fixture_library, "search", "-s", "bm25", "-l", "zzqxv", expect=1)
    assert res.stdout == ""
    for args in (["zzqxv"], ["-n", "3", "zzqxv"]):  # one JSON shape for "no match", with or without a pipe
        res = invoke("--db", fixture_library, "search", "-s", "bm25", "--json", *args, expect=1)
        assert [json.loads(x) for x in res.stdout.splitlines()] == [{"query": "zzqxv", "no_match": True}]
    piped = invoke("--db", fixture_library, "search", "-s", "bm25", "--json", input="zzqxv\n", expect=1).stdout
    assert [json.loads(x) for x in piped.splitlines()] == [{"query": "zzqxv", "no_match": True}]


def test_piped_queries_print_one_block_each_and_exit_1_on_a_miss(fixture_library: Path) -> None:
    """With -l each query's paths end with a blank line (with -0, an empty NUL-ended record), so
    the n-th block answers the n-th query, a miss too; exit 1 if any query had no match."""
    args = ("--db", fixture_library, "search", "-s", "bm25", "-n", "2")
    cat = invoke(*args, "-l", "cat").stdout.splitlines()
    cena = invoke(*args, "-l", "john cena").stdout.splitlines()
    assert len(cat) == len(cena) == 2
    res = invoke(*args, "-l", input="cat\nzzqxv\n\njohn cena\n", expect=1)
    assert res.stdout == "\n".join(cat) + "\n\n" + "\n" + "\n".join(cena) + "\n\n"  # the blank input line: no query
    # stderr: a miss names its query, as does the note of a query whose words a withheld meme holds
    withheld = "note: 1 meme that holds these words is withheld: private, withdrawn or unsafe; see `mambo safety`"
    assert res.stderr.splitlines() == [f"{withheld}: cat", "no match: zzqxv"]
    res = invoke(*args, "-l", "-0", input="cat\nzzqxv\njohn cena\n", expect=1)
    assert res.stdout.split("\0") == [*cat, "", "", *cena, "", ""]
    assert invoke(*args, "-l", input="cat\njohn cena\n").stdout.count("\n\n") == 2  # all found: exit 0
    res = invoke(*args, input="cat\nzzqxv\n", expect=1)
    assert "» zzqxv\nno match" in res.stdout


def test_nearest_answers_past_no_match_and_says_it_is_not_confident(fixture_library: Path) -> None:
    """--nearest: where the answer is "no match", the nearest memes, exit 0 and a note on stderr;
    --json marks each result; -l, -0 and queries piped in too; a match is unchanged."""
    q = "qwzx vbnm"
    note = f'note: not confident: nothing fits "{q}" well; these are the nearest'

    def nearest(*args: str, input: str | None = None):
        return invoke("--db", fixture_library, "search", "--nearest", "-n", "3", *args, input=input)

    assert invoke("--db", fixture_library, "search", q, expect=1).stderr.strip() == "no match"
    res = nearest(q)
    assert res.stdout.startswith(" 1.") and res.stdout.count("\n    /") == 3 and res.stderr.strip() == note
    lines = [json.loads(x) for x in nearest("--json", q).stdout.splitlines()]
    assert [x["rank"] for x in lines] == [1, 2, 3] and all(x["not_confident"] is True for x in lines)
    paths = nearest("-l", q).stdout.splitlines()
    assert paths == [x["path"] for x in lines]
    assert nearest("-0", q).stdout.split("\0") == [*paths, ""]
    piped = nearest("-l", input=f"{q}\ncat\n")
    assert piped.stdout.split("\n\n")[0].splitlines() == paths and note in piped.stderr
    assert [json.loads(x) for x in nearest("--json", input=f"{q}\n").stdout.splitlines()] == lines
    assert "3 nearest (not confident" in nearest(input=f"{q}\n").stdout
    for args in (["john cena"], ["--json", "john cena"]):  # a match: the same answer
        assert nearest(*args).stdout == invoke("--db", fixture_library, "search", "-n", "3", *args).stdout


def test_the_library_view_has_absolute_paths(fixture_library: Path) -> None:
    res = invoke("--db", fixture_library, "sql", "--json", "SELECT item_id, path, abs_path FROM library")
    rows = [json.loads(x) for x in res.stdout.splitlines()]
    assert rows and all(Path(r["abs_path"]).is_absolute() and Path(r["abs_path"]).is_file() for r in rows)
    assert all(r["abs_path"].endswith("/" + r["path"]) for r in rows)
    found = invoke("--db", fixture_library, "search", "-s", "bm25", "-l", "-n", "1", "cat").stdout.strip()
    assert found in {r["abs_path"] for r in rows}


def test_search_words_are_one_query_and_l_prints_paths(fixture_library: Path) -> None:
    unquoted = invoke("--db", fixture_library, "search", "-s", "bm25", "john", "cena").stdout
    assert unquoted == invoke("--db", fixture_library, "search", "-s", "bm25", "john cena").stdout
    paths = invoke("--db", fixture_library, "search", "-s", "bm25", "-l", "john", "cena").stdout.splitlines()
    assert paths and all(Path(p).is_absolute() and Path(p).exists() for p in paths)
    lines = invoke("--db", fixture_library, "search", "-s", "bm25", "--json", "john cena").stdout.splitlines()
    assert paths == [json.loads(x)["path"] for x in lines if json.loads(x)["evidence"] != "weaker"]


def test_a_mistyped_option_is_a_usage_error(fixture_library: Path) -> None:
    res = invoke("--db", fixture_library, "search", "--jsn", "cat", expect=2)
    assert "no such option: --jsn" in res.output and "--json" in res.output and "-- --jsn" in res.output
    assert res.stdout == ""


def test_search_on_missing_library_says_what_to_do(tmp_path: Path) -> None:
    result = invoke("--db", tmp_path / "none.sqlite", "search", "x", expect=2)
    assert "mambo add" in result.output and not (tmp_path / "none.sqlite").exists()


def test_unknown_system_is_a_clear_error(fixture_library: Path) -> None:
    result = invoke("--db", fixture_library, "search", "-s", "nope", "x", expect=2)
    assert "choose one of" in result.output and "bm25" in result.output
    help_text = invoke("search", "-h").output
    assert all(name in help_text for name in ("bm25", "dense", "hybrid", "words only"))


def test_a_query_that_starts_with_a_dash_is_searched(fixture_library: Path) -> None:
    # "-" in a query never errors (README): as the only word, first, or after the options
    for args in (
        ["-x"],
        ["-s", "bm25", "-cena"],
        ["-5 degrees"],
        ["--json", "-n", "2", "--", "--cena"],
        ["-cena", "-n", "2"],
        ["--", "-n"],
        ["-nope"],
        ["-no way"],
        ["-5", "degrees"],
    ):
        res = invoke("--db", fixture_library, "search", *args, expect=None)  # a query, not a usage error
        assert res.exit_code in (0, 1), args
        assert res.stdout.startswith((" 1.", "{")) or res.stderr.startswith("no match"), args
    # a one-letter query counts no withheld meme (its alias "and" is in 6 of the fixture's 7)
    assert invoke("--db", fixture_library, "search", "--", "-n", expect=1).stderr.strip() == "no match"
    top = json.loads(invoke("--db", fixture_library, "search", "--json", "-n", "1", "-cena").output.splitlines()[0])
    assert "john cena" in top["entities"]
    # an option still takes its value, even one that starts with "-"
    assert "choose one of" in invoke("--db", fixture_library, "search", "-s", "-x", "cena", expect=2).output
    assert len(invoke("--db", fixture_library, "search", "--json", "-n2", "-sbm25", "cena").output.splitlines()) == 2


def test_db_works_before_or_after_the_subcommand(fixture_library: Path) -> None:
    before = invoke("--db", fixture_library, "search", "-s", "bm25", "john cena").output
    assert before.startswith(" 1.")
    assert invoke("search", "-s", "bm25", "john cena", "--db", fixture_library).output == before
    assert invoke("search", f"--db={fixture_library}", "-s", "bm25", "john cena").output == before
    assert str(fixture_library) in invoke("status", "--db", fixture_library).output
    # after `--` it is query text, not an option
    assert invoke("--db", fixture_library, "search", "-s", "bm25", "--", "--db", expect=1).stderr.strip() == "no match"
    # in a nested command too
    assert (
        invoke("roots", "list", "--db", fixture_library).output
        == invoke("--db", fixture_library, "roots", "list").output
    )


def test_add_on_nothing_readable_fails_and_creates_no_library(tmp_path: Path) -> None:
    from mambomeme.library import default_db_path

    result = invoke("add", tmp_path / "nonexistent", expect=2)
    assert len(result.output.strip().splitlines()) == 1 and "nothing to add" in result.output
    assert "nonexistent" in result.output and "folder" in result.output
    assert not default_db_path().exists() and not default_db_path().parent.exists()
    invoke("--db", tmp_path / "lib.sqlite", "add", "-q", tmp_path / "a", tmp_path / "b", expect=2)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_demo_builds_the_library_and_answers_queries(tmp_path: Path) -> None:
    proc = run_process("--db", tmp_path / "demo.sqlite", "demo", input="john cena\nzzqxv qqqzz\n", timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "» john cena" in proc.stdout
    assert "cena" in proc.stdout.split("» zzqxv")[0].lower()
    assert "no match" in proc.stdout.split("» zzqxv")[1]
    assert "indexed" in proc.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["settings"],
        ["systems"],
        ["templates", "list"],
        ["search", "cat"],
        ["status"],
        ["check"],
        ["settings", "interaction_events"],
    ],
)
def test_read_only_commands_create_no_library(tmp_path: Path, args: list[str]) -> None:
    db = tmp_path / "lib.sqlite"
    res = invoke("--db", db, *args, expect=2)
    assert res.output.strip().splitlines() == [f"Error: no library at {db}: run `mambo add FOLDER` first"]
    assert list(tmp_path.iterdir()) == []


def test_no_library_names_the_demos_library(fixture_library: Path) -> None:
    """After `mambo demo` (its library beside the default one, as demo.sqlite), a search without
    --db finds no library: the error names the demo's file and how to search it."""
    from mambomeme.library import default_db_path

    demo = default_db_path().with_name("demo.sqlite")
    demo.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(fixture_library, demo)
    res = invoke("search", "cat", expect=2)
    assert res.output.strip().splitlines() == [
        f"Error: no library at {default_db_path()}: run `mambo add FOLDER` first; the demo's library is {demo}: "
        f"search it with `mambo --db {demo} search ...`"
    ]
    assert invoke("--db", demo, "search", "-l", "cat").output.strip()


def test_settings_opt_in_and_validation(tmp_path: Path) -> None:
    db = tmp_path / "lib.sqlite"
    assert "interaction_events = off" in invoke("--db", db, "settings", "interaction_events", "off").output
    assert "interaction_events = off" in invoke("--db", db, "settings").output
    assert "takes one of: on, off" in invoke("--db", db, "settings", "interaction_events", "yes", expect=2).output
    assert "interaction_events = on" in invoke("--db", db, "settings", "interaction_events", "on").output
    assert "interaction_events = on" in invoke("--db", db, "settings").output


def test_systems_name_the_default_and_each_purpose(tmp_path: Path) -> None:
    db = tmp_path / "lib.sqlite"
    invoke("--db", db, "settings", "interaction_events", "off")  # a new, empty library
    lines = invoke("--db", db, "systems").stdout.splitlines()
    assert [ln.split()[:2] for ln in lines[:3]] == [["bm25", "v1"], ["dense", "v1"], ["*", "hybrid"]]
    assert "words only" in lines[0] and "meaning only" in lines[1] and "the default" in lines[-1]
    assert "logit" not in "\n".join(lines) and "rrf_k" not in "\n".join(lines)  # the configuration only with -v
    verbose = invoke("--db", db, "systems", "-v").stdout
    assert "rrf_k=60" in verbose and "no match:" in verbose and verbose.count("routes=") == 3


def test_templates_list_never_cuts_the_id(tmp_path: Path) -> None:
    db = tmp_path / "lib.sqlite"
    invoke("--db", db, "settings", "interaction_events", "off")
    listed = invoke("--db", db, "templates", "list").stdout.splitlines()
    ids = [json.loads(x)["slug"] for x in invoke("--db", db, "templates", "list", "--json").stdout.splitlines()]
    assert ids and [ln.split()[0] for ln in listed] == ids


def test_every_answer_says_how_many_memes_are_withheld_never_which(fixture_library: Path) -> None:
    # Two memes the policy withholds hold "officer bumble"; the answer shows the others and says so
    # on stderr (a pipe gets only the results), and --json gives the count on each result.
    note = "2 memes that hold these words are withheld: private, withdrawn or unsafe; see `mambo safety`"
    said = invoke("--db", fixture_library, "search", "officer bumble")
    assert said.stdout.startswith(" 1.") and "withheld" not in said.stdout
    assert said.stderr.strip() == f"note: {note}"
    lines = [
        json.loads(x) for x in invoke("--db", fixture_library, "search", "--json", "officer bumble").stdout.splitlines()
    ]
    assert lines and all("meme_id" in x and x["rank"] >= 1 and x["withheld"] == 2 for x in lines)
    listed = invoke("--db", fixture_library, "search", "-l", "officer bumble")
    assert listed.stdout and all(Path(p).is_absolute() for p in listed.stdout.splitlines())
    assert listed.stderr.strip() == f"note: {note}"
    # queries piped in: each block's note names its query
    piped = invoke("--db", fixture_library, "search", "-l", input="officer bumble\njohn cena\n")
    assert piped.stderr.strip() == f"note: {note}: officer bumble"


def test_a_list_stops_where_the_evidence_stops(fixture_library: Path) -> None:
    """`-l` and the text list print the results above the "weaker matches" divider: for "john cena"
    the five memes whose sidecar names him, nothing else. -n N asks for N results, the weaker ones
    after them (the text list draws the divider line); --json keeps every result, each with its
    evidence class. Exit 0 either way."""
    from test_search import cena_files

    search = ("--db", fixture_library, "search")
    paths = invoke(*search, "-l", "john cena").stdout.splitlines()
    assert sorted(Path(p).name for p in paths) == sorted(cena_files())
    more = invoke(*search, "-l", "-n", "20", "john cena").stdout.splitlines()
    assert len(more) == 20 and more[:5] == paths
    assert invoke(*search, "-l", "-0", "john cena").stdout.split("\0") == [*paths, ""]
    lines = [json.loads(x) for x in invoke(*search, "--json", "john cena").stdout.splitlines()]
    assert [x["evidence"] for x in lines] == ["words"] * 5 + ["weaker"] * 5
    assert [x["path"] for x in lines[:5]] == paths
    text = invoke(*search, "john cena").stdout
    assert text.count("\n    /") == 5 and "weaker matches" not in text
    text = invoke(*search, "-n", "7", "john cena").stdout
    assert text.count("\n    /") == 7 and text.count("── weaker matches ──\n") == 1
    assert text.index("── weaker matches ──") > text.index(" 5. ") and text.index(" 6. ") > text.index("weaker")
    # queries piped in: each block stops at its divider too
    piped = invoke(*search, "-l", input="john cena\njohn cena\n").stdout
    assert piped == ("\n".join(paths) + "\n\n") * 2
