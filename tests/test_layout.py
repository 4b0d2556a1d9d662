"""The project's layout: every module has a room, imports flow one way (command line -> features ->
search / ingest / templates -> library), there are no cycles, and no file is too long to read in one
sitting. Read from the project's own source, not from a list kept by hand elsewhere."""

from __future__ import annotations

import ast
from pathlib import Path

from helpers import REPO

# The rooms of README's "How it is built", lowest first. A module may import from its own layer or
# below, never above; a new module must be given a room here (and in the README's map).
LAYERS: dict[str, int] = {
    "mambomeme": 0, "mambomeme.library": 0,
    "mambomeme.images": 1, "mambomeme.safety": 1, "mambomeme.sidecars": 1, "mambomeme.ocr": 1,
    "mambomeme.embed": 1, "mambomeme.vectors": 1, "mambomeme.templates": 1, "mambomeme.ingest": 1,
    "mambomeme.upkeep": 1, "mambomeme.search": 1, "mambomeme.queries": 1, "mambomeme.vectormatrix": 1,
    "mambomeme.review": 1, "mambomeme.picture": 1, "mambomeme.state": 1,
    "mambomeme.tui": 2, "mambomeme.terminal": 2, "mambomeme.bench": 2, "mambomeme.calibrate": 2,
    "mambomeme.nomatch": 2, "mambomeme.scale": 2,
    "mambomeme.evaluation": 2, "mambomeme.scoring": 2, "mambomeme.evaluation_commands": 2,
    "mambomeme.sqlshell": 2,
    "mambo": 3,
}
LAYER_NAMES = ("library", "search / ingest / templates", "features", "command line")
MAX_LINES = 1200


def modules() -> dict[str, Path]:
    found = {"mambo": REPO / "mambo.py"}
    for path in sorted((REPO / "mambomeme").glob("*.py")):
        found["mambomeme" if path.stem == "__init__" else f"mambomeme.{path.stem}"] = path
    return found


def project_imports(path: Path) -> set[str]:
    """Every project module that `path` imports, at the top or inside a function."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # `from mambomeme import search` imports the module mambomeme.search
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        else:
            continue
        out |= {n for n in names if n == "mambo" or n.startswith("mambomeme")}
    return out


def import_graph() -> dict[str, set[str]]:
    mods = modules()
    return {m: {i for i in project_imports(p) if i in mods and i != m} for m, p in mods.items()}


def test_every_module_has_a_room() -> None:
    assert set(modules()) == set(LAYERS), "give each new module a layer here and a row in README's map"


def test_imports_never_run_upward() -> None:
    upward = [f"{m} ({LAYER_NAMES[LAYERS[m]]}) imports {i} ({LAYER_NAMES[LAYERS[i]]})"
              for m, targets in import_graph().items() for i in sorted(targets) if LAYERS[i] > LAYERS[m]]
    assert not upward, upward


def test_the_import_graph_has_no_cycle() -> None:
    graph = import_graph()
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    cycles: list[list[str]] = []

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                cycles.append(path[path.index(n):] + [n])
            elif n not in state:
                visit(n, path + [n])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert not cycles, cycles


def test_the_graph_reader_sees_real_imports() -> None:
    # The checks above would pass on an empty graph: the command line must be seen importing the rooms.
    graph = import_graph()
    assert {"mambomeme.library", "mambomeme.search", "mambomeme.ingest", "mambomeme.bench"} <= graph["mambo"]
    assert graph["mambomeme.library"] == set()


def test_no_file_is_too_long_to_read_in_one_sitting() -> None:
    long = {str(p.relative_to(REPO)): n for p in [*modules().values(), *(REPO / "tests").glob("*.py")]
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not long, f"split these files (over {MAX_LINES} lines): {long}"


def test_named_queries_live_beside_the_modules_that_run_them() -> None:
    # Each mambomeme/NAME.sql belongs to the module NAME.py; every file's queries are used by the code.
    sql_files = sorted((REPO / "mambomeme").glob("*.sql"))
    assert sql_files and all((p.with_suffix(".py")).exists() for p in sql_files)
    assert not (REPO / "queries.sql").exists() and not (REPO / "eval.sql").exists()
