#!/usr/bin/env python3
"""MamboMeme's command line: `./mambo` runs this file, and `mambo` (pip-installed) calls its `main`.

The click group and its commands are in mambomeme/cli.py: Python caches a module's bytecode,
never a script's, and compiling the commands' ~990 lines cost each start ~13 ms. A running search
helper is asked first, before click and the commands are imported: a one-shot search it answers
costs this process ~0.05 s of start instead of ~0.2 s (docs/benchmarks.md, "One-shot searches")."""

import sys
from typing import Any

__all__ = ["main"]  # and `cli`, below


def main() -> None:
    from mambomeme.search_helper import answered_early

    code = answered_early(sys.argv[1:])
    if code is not None:
        sys.exit(code)
    from mambomeme.cli import main as run

    run()


def __getattr__(name: str) -> Any:
    """`mambo.cli`, the click group, imported when first asked for (tests and completion use it)."""
    if name == "cli":
        from mambomeme.cli import cli

        return cli
    raise AttributeError(name)


if __name__ == "__main__":
    main()
