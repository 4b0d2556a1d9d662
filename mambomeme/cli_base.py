"""What every command module shares with the click command line: the context settings, the
library a command works on, a user's error (library.MamboError) as click's one-line error, and
the pieces that let `mambo --help` and completion start without importing the commands' work
(choices and defaults looked up when used, help listed in full sentences)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import click

from mambomeme.library import DB, default_db_path
from mambomeme.output import MamboError

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


def open_library(ctx: click.Context, *, create: bool = False) -> DB:
    """The library a command works on: --db, else $MAMBO_DB, else the per-user default; closed with the command."""
    path = ctx.obj["db_path"] or default_db_path()
    db = DB(path, create=create)
    ctx.call_on_close(db.close)
    return db


def as_click(e: MamboError, code: int | None = None) -> click.ClickException:
    """click prints "Error: MESSAGE" on stderr and exits with the error's status (2, as ripgrep
    does: 1 means "no match"), or `code`."""
    error = click.ClickException(e.format_message())
    error.exit_code = code or e.exit_code
    return error


class LazyChoice(click.Choice):
    """A choice whose values come from a module the command line does not import at start (the
    search systems, the label scopes): looked up the first time the help, completion or parsing
    of that one command needs them."""

    def __init__(self, load: Callable[[], Sequence[str]]) -> None:
        self._load = functools.cache(load)
        super().__init__(())

    @property  # type: ignore[override]
    def choices(self) -> Sequence[str]:
        return tuple(self._load())

    @choices.setter
    def choices(self, _value: Sequence[str]) -> None:
        pass


class LazyDefault(click.Option):
    """An option whose default is a module's constant (`--batch-size` is ingest.INGEST_BATCH),
    read only when this command is parsed or its help shown, and shown in that help."""

    def __init__(self, *args: Any, load_default: Callable[[], Any], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._load_default = load_default

    def get_default(self, ctx: click.Context, call: bool = True) -> Any:
        return self._load_default()


def short_help(command: click.Command) -> str:
    """A command's first sentence, whole: a listing wraps it rather than cut it with "..."."""
    return command.get_short_help_str(limit=1_000)


class FullHelpGroup(click.Group):
    """A group that lists its commands in the order given (`order`, the rest after) with their
    first sentence in full, under named sections: `sections` maps a heading to its commands."""

    def __init__(
        self, *args: Any, order: Sequence[str] = (), sections: dict[str, Sequence[str]] | None = None, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.order = tuple(order)
        self.sections = sections or {}

    def list_commands(self, ctx: click.Context) -> list[str]:
        names = super().list_commands(ctx)
        return [n for n in self.order if n in names] + [n for n in names if n not in self.order]

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        listed = [n for n in self.list_commands(ctx) if (c := self.get_command(ctx, n)) is not None and not c.hidden]
        placed = {n for names in self.sections.values() for n in names}
        groups = {"Commands": [n for n in listed if n not in placed]}
        groups |= {title: [n for n in names if n in listed] for title, names in self.sections.items()}
        for title, names in groups.items():
            if names:
                with formatter.section(title):
                    formatter.write_dl([(n, short_help(self.get_command(ctx, n))) for n in names])
