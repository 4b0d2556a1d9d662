"""Start-up of two checkouts side by side: `python mambo.py` for --version, --help, two completions,
and a cold `search -s bm25` / `-s hybrid`, each a fresh process, the trees taking turns (so both
see the same load), beside `python -c pass`. Every tree's package is compiled first and the runs
may cache bytecode, as a user's Python does. Prints wall and CPU (user + system) medians and minima.

    .venv/bin/python benchdata/experiments/startup_trees.py --db LIB --runs 10 OLD_TREE NEW_TREE
"""

from __future__ import annotations

import argparse
import compileall
import os
import statistics
import subprocess
import sys
import time


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--db", required=True, help="a library (the fixture library)")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("trees", nargs="+")
    a = ap.parse_args()
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    for tree in a.trees:
        compileall.compile_dir(os.path.join(tree, "mambomeme"), quiet=1)
    py = sys.executable
    complete = {"_MAMBO_COMPLETE": "bash_complete"}
    cases = {
        "mambo --version": (["--version"], {}),
        "mambo --help": (["--help"], {}),
        "completion, mambo se<Tab>": ([], complete | {"COMP_WORDS": "mambo se", "COMP_CWORD": "1"}),
        "completion, mambo search -s b<Tab>": ([], complete | {"COMP_WORDS": "mambo search -s b", "COMP_CWORD": "3"}),
        'search -s bm25 "john cena"': (["--db", a.db, "search", "-s", "bm25", "john cena"], {}),
        'search -s hybrid "john cena"': (["--db", a.db, "search", "-s", "hybrid", "john cena"], {}),
    }
    wall: dict[tuple[str, str], list[float]] = {}
    cpu: dict[tuple[str, str], list[float]] = {}

    def run(key: tuple[str, str], argv: list[str], env: dict[str, str]) -> None:
        t0 = time.perf_counter()
        child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=os.environ | env)
        _, status, usage = os.wait4(child.pid, 0)
        if os.waitstatus_to_exitcode(status) not in (0, 1):
            raise SystemExit(f"{argv} failed")
        wall.setdefault(key, []).append(time.perf_counter() - t0)
        cpu.setdefault(key, []).append(usage.ru_utime + usage.ru_stime)

    for _ in range(a.runs):
        run(("python -c pass", ""), [py, "-c", "pass"], {})
        for name, (args, env) in cases.items():
            for tree in a.trees:
                run((name, tree), [py, os.path.join(tree, "mambo.py"), *args], env)
    print(f"{'what':38} {'tree':28} {'wall median':>11} {'min':>7} {'CPU median':>10}")
    for (name, tree), w in wall.items():
        print(
            f"{name:38} {tree[-28:]:28} {statistics.median(w) * 1000:9.1f}ms {min(w) * 1000:5.1f}ms "
            f"{statistics.median(cpu[(name, tree)]) * 1000:8.1f}ms"
        )
    print("load average:", " ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
