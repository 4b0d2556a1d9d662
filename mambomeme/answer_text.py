"""How a search answer is printed on the command line: the text list with its "weaker matches"
line, `--json` lines (every line of a found answer is a result), paths for xargs and xdg-open
(exact bytes), and the notes beside an answer on stderr (weaker matches left out, not confident,
memes withheld: a count, never which)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import click

from mambomeme.output import clean_line, json_line, path_bytes

WEAKER_LINE = "── weaker matches ──"


def echo_results(results: list[Any]) -> None:
    """The text list: each result, and a "weaker matches" line before the first weaker one."""
    from mambomeme.search import format_result

    divided = False
    for r in results:
        if r.evidence == "weaker" and not divided:
            click.echo(WEAKER_LINE)
            divided = True
        click.echo(format_result(r))


def weaker_note(n: int, limit: int) -> str:
    """What a list that stopped at the divider says on stderr: how many weaker matches it left out."""
    return f"{n} weaker match{'es' if n != 1 else ''} not shown (-n {limit} lists them)"


def not_confident_note(query: str) -> str:
    """What --nearest says on stderr when it shows the nearest memes of a "no match"."""
    return f'not confident: nothing fits "{clean_line(query)}" well; these are the nearest'


def withheld_note(n: int) -> str:
    from mambomeme.safety_review import withheld_note as note

    return note(n)


def json_answer(query: str, results: list[Any], withheld: int, *, unsure: bool = False) -> None:
    """--json: a line a result, each a result (with its rank), so a reader takes every line of a
    found answer as one; what the answer says beside its results rides on each of them (memes
    withheld, --nearest's "not_confident"); "no match" is the one line without a result."""
    from mambomeme.search import result_json

    said = ({"not_confident": True} if unsure else {}) | ({"withheld": withheld} if withheld else {})
    for r in results:
        click.echo(json_line({"query": clean_line(query)} | result_json(r) | said))
    if not results:
        click.echo(json_line({"query": clean_line(query), "no_match": True} | said))


def no_match_message(withheld: int, note: Callable[[int], str] = withheld_note) -> str:
    """ "no match", and how many withheld memes hold the query's words (a count, never which; `note`
    says it for another kind of query, a picture)."""
    return f"no match ({note(withheld)})" if withheld else "no match"


def result_path(r: Any) -> str:
    """A result's absolute path as it is on disk (what `-l` prints, for xargs and xdg-open)."""
    from mambomeme.search import result_json

    return result_json(r)["path"]


def echo_paths(paths: list[str], *, null: bool = False) -> None:
    """Paths for xargs and xdg-open: exact bytes (library.path_bytes), written as bytes so that
    nothing on the way strips what looks like an escape sequence from a name."""
    data = path_bytes(paths, null=null, tty=sys.stdout.isatty())
    if data:
        click.echo(data, nl=False)
