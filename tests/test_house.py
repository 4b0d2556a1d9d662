"""House style, checked over the tree. No line of the code, the tests, schema.sql or the migrations
names a work session or an issue by number: a comment says what the code does and why, and the
history lives in docs/ and the commit messages. And the comment block directly above a module-level
constant in mambomeme/ or mambo.py stays under 10 lines: the reason and today's numbers beside the
value, the sweep behind it in docs/decisions.md."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
HISTORY = re.compile(r"\b([Ss]ession|[Ii]ssue)s? ?#?[0-9]+")
MAX_BLOCK = 10


def _files(*patterns: str) -> list[Path]:
    return sorted(p for pattern in patterns for p in REPO.glob(pattern))


def test_no_line_names_a_session_or_an_issue() -> None:
    # Every line, not only comments: no string literal of these files (test data included) needs
    # such a number either, so the simplest check is also the strictest.
    found = [
        f"{p.relative_to(REPO)}:{n}: {line.strip()}"
        for p in _files("mambomeme/*.py", "mambomeme/*.sql", "mambo.py", "tests/*.py", "schema.sql", "migrations/*.sql")
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if HISTORY.search(line)
    ]
    assert not found, "\n".join(found)


def comment_blocks_above_constants(path: Path) -> list[tuple[int, int]]:
    """(line of a module-level assignment, how many comment lines run directly above it)."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    out = []
    for node in ast.parse(text).body:
        if isinstance(node, ast.Assign | ast.AnnAssign):
            n = 0
            while node.lineno - 2 - n >= 0 and lines[node.lineno - 2 - n].lstrip().startswith("#"):
                n += 1
            out.append((node.lineno, n))
    return out


def test_comment_blocks_above_constants_stay_short() -> None:
    blocks = {p: comment_blocks_above_constants(p) for p in _files("mambomeme/*.py", "mambo.py")}
    assert sum(len(b) for b in blocks.values()) > 100  # the measure sees the constants
    long = [
        f"{p.relative_to(REPO)}:{line}: {n} comment lines" for p, b in blocks.items() for line, n in b if n >= MAX_BLOCK
    ]
    assert not long, "\n".join(long)


def test_the_measure_counts_a_block(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("# one\n# two\n\n# three\nA = 1\nB = 2  # beside\n\ndef f():\n    # inside\n    c = 3\n")
    assert comment_blocks_above_constants(module) == [(5, 1), (6, 0)]
