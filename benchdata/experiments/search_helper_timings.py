"""One-shot searches with and without the search helper: for each round, `python -c pass`,
`mambo --version`, bm25 and hybrid with MAMBO_NO_HELPER=1, then hybrid with the helper (the first
call starts it; the second and third once it is warm) and bm25 through it. Each round has its own
runtime folder and kills its helper. Prints wall medians and minima and CPU (user + system) medians
of the client process (the helper's work is not in it).

    .venv/bin/python benchdata/experiments/search_helper_timings.py LIB [ROUNDS]
"""

from __future__ import annotations

import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TREE = Path(__file__).resolve().parents[2]


def timed(cmd: list[str], env: dict[str, str]) -> tuple[tuple[float, float], subprocess.CompletedProcess]:
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    r = subprocess.run(cmd, env=env, capture_output=True)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (wall, r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime), r


def main() -> None:
    db, rounds = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 7
    py, mambo = sys.executable, str(TREE / "mambo.py")
    base = {**os.environ, "PYTHONPATH": str(TREE), "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    base.pop("MAMBO_NO_HELPER", None)
    off = base | {"MAMBO_NO_HELPER": "1"}
    hybrid = [py, mambo, "--db", db, "search", "-s", "hybrid", "john cena"]
    bm25 = [py, mambo, "--db", db, "search", "-s", "bm25", "john cena"]
    rows: dict[str, list[tuple[float, float]]] = {}
    for _ in range(rounds):
        run = Path(tempfile.mkdtemp())
        log = run / "log"
        on = base | {"XDG_RUNTIME_DIR": str(run), "MAMBO_HELPER_LOG": str(log)}
        rows.setdefault("python -c pass", []).append(timed([py, "-c", "pass"], off)[0])
        rows.setdefault("mambo --version", []).append(timed([py, mambo, "--version"], off)[0])
        rows.setdefault("bm25, no helper", []).append(timed(bm25, off)[0])
        rows.setdefault("hybrid, no helper", []).append(timed(hybrid, off)[0])
        first, r1 = timed(hybrid, on)
        while "ready" not in (log.read_text() if log.exists() else ""):
            time.sleep(0.05)
        second, r2 = timed(hybrid, on)
        third, r3 = timed(hybrid, on)
        rows.setdefault("hybrid, helper: 1st call (starts it)", []).append(first)
        rows.setdefault("hybrid, helper: 2nd call", []).append(second)
        rows.setdefault("hybrid, helper: 3rd call", []).append(third)
        rows.setdefault("bm25, helper (a later call)", []).append(timed(bm25, on)[0])
        assert r1.stdout == r2.stdout == r3.stdout and r1.returncode == r2.returncode == r3.returncode
        words = log.read_text().split()
        assert words.count("answer") == 3, words
        os.kill(int(words[1]), signal.SIGTERM)
        time.sleep(0.5)
        shutil.rmtree(run)
    print("| what | wall median | fastest | CPU median |\n|---|---|---|---|")
    for what, v in rows.items():
        walls, cpus = [w for w, _ in v], [c for _, c in v]
        print(f"| {what} | {statistics.median(walls):.2f} s | {min(walls):.2f} s | {statistics.median(cpus):.2f} s |")


if __name__ == "__main__":
    main()
