#!/usr/bin/env python3
"""MamboMeme's command line: `./mambo` runs this file, and `mambo` (pip-installed) calls its `main`.

The click group and its commands are in mambomeme/cli.py: Python caches a module's bytecode,
never a script's, and compiling the commands' ~990 lines cost each start ~13 ms."""

from mambomeme.cli import cli, main

__all__ = ["cli", "main"]

if __name__ == "__main__":
    main()
