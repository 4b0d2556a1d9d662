"""What every command module shares with the click command line: the context settings, the
library a command works on, and a user's error (library.MamboError) as click's one-line error."""

from __future__ import annotations

import click

from mambomeme.library import DB, MamboError, default_db_path

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


def open_library(ctx: click.Context, *, create: bool = False) -> DB:
    """The library a command works on: --db, else $MAMBO_DB, else the per-user default; closed with the command."""
    path = ctx.obj["db_path"] or default_db_path()
    db = DB(path, create=create)
    ctx.call_on_close(db.close)
    return db


def as_click(e: MamboError, code: int | None = None) -> click.ClickException:
    """click prints "Error: MESSAGE" on stderr and exits with the error's status (1; 2 for no
    library), or `code` (2 where 1 means "no match")."""
    error = click.ClickException(e.format_message())
    error.exit_code = code or e.exit_code
    return error
