"""The project's layout: every module has a room, imports flow one way (command line -> features ->
search / ingest / templates -> library), there are no cycles, and no file is too long to read in one
sitting. Read from the project's own source, not from a list kept by hand elsewhere."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

from helpers import REPO

# The rooms of README's "How it is built", lowest first. A module may import from its own layer or
# below, never above; a new module must be given a room here (and in the README's map).
LAYERS: dict[str, int] = {
    "mambomeme": 0, "mambomeme.library": 0,
    "mambomeme.images": 1, "mambomeme.safety_text": 1, "mambomeme.safety_meaning": 1, "mambomeme.sidecars": 1,
    "mambomeme.ocr": 1,
    "mambomeme.embed": 1, "mambomeme.vectors": 1, "mambomeme.templates": 1, "mambomeme.ingest": 1,
    "mambomeme.upkeep": 1, "mambomeme.search": 1, "mambomeme.query_plan": 1, "mambomeme.vectormatrix": 1,
    "mambomeme.safety_review": 1, "mambomeme.safety_picture": 1, "mambomeme.state": 1, "mambomeme.labels": 1,
    "mambomeme.tui": 2, "mambomeme.terminal": 2, "mambomeme.sqlshell": 2, "mambomeme.command_line": 2,
    # the lab: benchmarks, evaluation, calibration (the product never imports it)
    "mambomeme.lab": 2, "mambomeme.lab.bench": 2, "mambomeme.lab.calibrate": 2, "mambomeme.lab.nomatch": 2,
    "mambomeme.lab.scale": 2, "mambomeme.lab.evaluation": 2, "mambomeme.lab.scoring": 2,
    "mambomeme.lab.evaluation_commands": 2, "mambomeme.lab.pty": 2,
    "mambomeme.lab.product": 2,
    "mambo": 3, "mambomeme.commands": 3,
}
COMMAND_LINE = ("mambo", "mambomeme.commands")  # the script and the module that holds its commands
LAYER_NAMES = ("library", "search / ingest / templates", "features", "command line")
MAX_LINES = 1200


def modules() -> dict[str, Path]:
    found = {"mambo": REPO / "mambo.py"}
    for path in sorted([*(REPO / "mambomeme").glob("*.py"), *(REPO / "mambomeme" / "lab").glob("*.py")]):
        package = ".".join(path.relative_to(REPO).parent.parts)
        found[package if path.stem == "__init__" else f"{package}.{path.stem}"] = path
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


@functools.cache
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


def test_the_product_never_imports_the_lab() -> None:
    # The lab (benchmarks, evaluation, calibration) may use the product; the product runs without it.
    product = {m for m in modules() if m not in COMMAND_LINE and not m.startswith("mambomeme.lab")}
    into_lab = [f"{m} imports {i}" for m in sorted(product) for i in sorted(import_graph()[m])
                if i.startswith("mambomeme.lab")]
    assert not into_lab, into_lab
    assert any(i.startswith("mambomeme.lab") for i in import_graph()["mambomeme.commands"])


def test_the_graph_reader_sees_real_imports() -> None:
    # The checks above would pass on an empty graph: the command line must be seen importing the rooms.
    graph = import_graph()
    assert graph["mambo"] == {"mambomeme.commands"}
    want = {"mambomeme.library", "mambomeme.search", "mambomeme.ingest", "mambomeme.lab.bench"}
    assert want <= graph["mambomeme.commands"]
    assert graph["mambomeme.library"] == set()


def test_no_file_is_too_long_to_read_in_one_sitting() -> None:
    long = {str(p.relative_to(REPO)): n for p in [*modules().values(), *(REPO / "tests").glob("*.py")]
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not long, f"split these files (over {MAX_LINES} lines): {long}"


def test_named_queries_live_beside_the_modules_that_run_them() -> None:
    # Each mambomeme/NAME.sql belongs to the module NAME.py; every file's queries are used by the code.
    sql_files = sorted([*(REPO / "mambomeme").glob("*.sql"), *(REPO / "mambomeme" / "lab").glob("*.sql")])
    assert sql_files and all((p.with_suffix(".py")).exists() for p in sql_files)
    assert not (REPO / "queries.sql").exists() and not (REPO / "eval.sql").exists()


def test_every_named_query_is_run_by_the_code() -> None:
    # A query no module names is dead SQL: it drifts from the schema unseen.
    from mambomeme.library import Q

    code = "\n".join(p.read_text(encoding="utf-8") for p in modules().values())
    unused = sorted(name for name in Q if f'"{name}"' not in code and f"'{name}'" not in code)
    assert not unused, f"named queries no module runs: {unused}"


def test_click_lives_in_the_command_line() -> None:
    # The library, search, ingest and template rooms are plain Python: a command module turns their
    # MamboError into click's one-line error (command_line.as_click).
    below = [m for m, layer in LAYERS.items() if layer <= 1 and m in modules()]
    with_click = [m for m in below if re.search(r"^\s*(import click|from click)", modules()[m].read_text(), re.M)]
    assert not with_click, with_click


def wheel_config() -> dict:
    import tomllib

    hatch = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["hatch"]
    return hatch["build"]["targets"]["wheel"]


def test_the_wheel_leaves_the_lab_out() -> None:
    # pip install . ships the product; the lab (its code and its .sql) stays in the checkout.
    wheel = wheel_config()
    assert "mambomeme" in wheel["only-include"]
    assert "mambomeme/lab" in wheel["exclude"]
    assert not [k for k in wheel.get("force-include", {}) if k.startswith("mambomeme")]


def test_mambo_eval_without_the_lab_is_one_line_and_exit_2(tmp_path: Path) -> None:
    # The tree `pip install .` lays out (pyproject.toml's wheel: its paths less the excluded ones,
    # and the data it forces in), run as its own process.
    import shutil
    import subprocess
    import sys

    wheel = wheel_config()
    for rel in [*wheel["only-include"], *wheel["force-include"]]:
        src, dst = REPO / rel, tmp_path / wheel["force-include"].get(rel, rel)
        if src.is_dir():
            shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(src, dst)
    for rel in wheel["exclude"]:
        shutil.rmtree(tmp_path / rel)
    assert not list(tmp_path.rglob("lab")) and (tmp_path / "mambomeme" / "search.py").exists()
    for args in (["eval", "score"], ["score"], ["eval", "bench", "cold"], ["eval", "--help"]):
        proc = subprocess.run([sys.executable, "mambo.py", *args], cwd=tmp_path, capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == 2, (args, proc.stderr)
        assert proc.stdout == "" and proc.stderr.count("\n") == 1, (args, proc.stderr)
        assert "mambo eval needs a checkout of MamboMeme (the evaluation lab is not installed)" in proc.stderr
    proc = subprocess.run([sys.executable, "mambo.py", "--help"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0 and "eval" in proc.stdout, proc.stderr


def benchdata_scripts() -> list[Path]:
    return sorted((REPO / "benchdata").rglob("*.py"))


def test_benchdata_reaches_the_product_only_through_the_lab() -> None:
    # benchdata's scripts call the lab's public names; the product's own modules are the lab's business
    # (mambomeme/lab/product.py is the one door), so renaming a product module mends one file.
    def outside(module: str) -> bool:
        return (module == "mambo" or module.startswith("mambomeme")) and not (
            module == "mambomeme.lab" or module.startswith("mambomeme.lab."))

    wrong: list[str] = []
    for path in benchdata_scripts():
        where = path.relative_to(REPO)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                wrong += [f"{where}:{node.lineno} import {a.name}" for a in node.names if outside(a.name)]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                if node.module == "mambomeme":  # `from mambomeme import lab` is the lab; any other name is not
                    wrong += [f"{where}:{node.lineno} from mambomeme import {a.name}" for a in node.names
                              if a.name != "lab"]
                elif outside(node.module):
                    wrong.append(f"{where}:{node.lineno} from {node.module}")
                elif node.module.startswith("mambomeme"):
                    wrong += [f"{where}:{node.lineno} {node.module}.{a.name}" for a in node.names
                              if a.name.startswith("_")]
    assert len(benchdata_scripts()) >= 26
    assert not wrong, wrong


def test_the_door_holds_what_benchdata_uses() -> None:
    # Each name mambomeme/lab/product.py passes on is imported by some script, and each is the product's.
    from mambomeme.lab import product

    used = {a.name for path in benchdata_scripts() for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.ImportFrom) and node.module == "mambomeme.lab.product" for a in node.names}
    assert set(product.__all__) == used
    assert not [n for n in product.__all__ if n.startswith("_")]
