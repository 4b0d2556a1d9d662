"""MamboMeme's command line: the click group and its commands, thin (parse, call, print); mambo.py
runs it.

The work is done in the mambomeme package (docs/architecture.md): library (the file), ingest,
templates, search, upkeep, then the features (tui and terminal, sqlshell) and the lab (benchmarks,
evaluation), whose commands are gathered under `mambo eval`. A command imports the modules it
needs when it runs, so that `mambo --help`, `--version` and completion load none of them."""

from __future__ import annotations

import functools
import json
import os
import shlex
import signal
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from mambomeme.answer_text import (
    echo_paths,
    echo_results,
    json_answer,
    no_match_message,
    not_confident_note,
    result_path,
    weaker_note,
    withheld_note,
)
from mambomeme.cli_base import CONTEXT, FullHelpGroup, LazyChoice, LazyDefault, as_click, open_library
from mambomeme.library import __version__, db_error_message, default_db_path, get_setting, list_roots, set_setting
from mambomeme.output import MamboError, NoLibrary, clean_line, clean_text, json_line, show_path

if TYPE_CHECKING:
    from mambomeme.library import DB
    from mambomeme.query_plan import QueryPlan
    from mambomeme.search import Answer, Searcher

# The user's commands in the order `mambo --help` lists them: finding, filling, fixing, then the rest.
USER_COMMANDS = (
    "search",
    "add",
    "status",
    "label",
    "templates",
    "safety",
    "private",
    "demo",
    "sql",
    "systems",
    "settings",
    "roots",
    "check",
    "prune",
    "help",
)
# The lab's commands, under `mambo eval`; their old top-level names still run them (unlisted).
EVAL_COMMANDS = ("bench", "judge", "run", "score", "interactions")


class MamboGroup(FullHelpGroup):
    """The top-level group: an SQLite failure anywhere below (disk full, read-only file, a lock held
    too long) becomes one line on stderr and exit status 2, never a traceback. `--db` is accepted
    anywhere before a `--` (`mambo search x --db lib.sqlite`, as people type it), not only before
    the command. `mambo bench ...`, `mambo judge ...` (each of EVAL_COMMANDS) run `mambo eval`'s
    command of that name without being listed."""

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        found = super().get_command(ctx, cmd_name)
        if found is None and cmd_name in EVAL_COMMANDS:
            return evaluation_commands().get(cmd_name)
        return found

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        front: list[str] = []
        rest: list[str] = []
        i = 0
        while i < len(args):
            a = args[i]
            if a == "--":
                rest += args[i:]
                break
            if a == "--db" and i + 1 < len(args) and rest:
                front += args[i : i + 2]
                i += 2
                continue
            if a.startswith("--db=") and rest:
                front.append(a)
            else:
                rest.append(a)
            i += 1
        return super().parse_args(ctx, front + rest)

    def invoke(self, ctx: click.Context) -> Any:
        import apsw

        try:
            return super().invoke(ctx)
        except MamboError as e:
            raise as_click(e) from e
        except apsw.Error as e:
            raise as_click(library_error(ctx, e)) from e


def user_name() -> str:
    """Who decides, when --by is not given: the login name ($USER, else the system's), else "owner"."""
    import getpass

    try:
        return os.environ.get("USER") or os.environ.get("USERNAME") or getpass.getuser() or "owner"
    except (KeyError, OSError):  # no name for this uid (a container)
        return "owner"


def library_error(ctx: click.Context, e: Exception) -> MamboError:
    """An SQLite failure as the user's one line: what happened to which library, and what to do."""
    path = (ctx.obj or {}).get("db_path") or os.environ.get("MAMBO_DB")
    return MamboError(db_error_message(e, path))


@click.group(
    cls=MamboGroup,
    context_settings=CONTEXT,
    order=USER_COMMANDS,
    sections={"Evaluation (benchmarks, judging, scorecards)": ["eval"]},
)
@click.version_option(__version__, "--version", prog_name="mambo")
@click.option(
    "--db",
    "db_path",
    envvar="MAMBO_DB",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Library file (default: $MAMBO_DB, else the per-user data folder).",
)
@click.pass_context
def cli(ctx: click.Context, db_path: Path | None) -> None:
    """MamboMeme: find the meme you remember, in one local SQLite file.

    \b
    Examples:
      mambo add ~/Pictures/memes        index a folder (OCR, embeddings, previews)
      mambo search "john cena"          print the best matches
      mambo status                      what the library holds
      mambo demo                        try it on the built-in demo library
    """
    ctx.ensure_object(dict)
    ctx.obj["db_path"] = db_path


@cli.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@click.option(
    "--batch-size",
    cls=LazyDefault,
    load_default=lambda: _ingest_batch(),
    show_default=True,
    type=click.IntRange(1, 1000),
    help="Images per committed transaction.",
)
@click.option("--workers", type=click.IntRange(1, 64), help="OCR worker processes (default: one per core, max 4).")
@click.option(
    "--no-sidecars",
    is_flag=True,
    help="Ignore sidecars and mambo.jsonl manifests: index the folder bare (as a downloads folder).",
)
@click.pass_context
def add(
    ctx: click.Context, paths: tuple[Path, ...], quiet: bool, batch_size: int, workers: int | None, no_sidecars: bool
) -> None:
    """Index image files and folders (png, jpg, gif, webp).

    Unchanged files are skipped, changed ones updated, exact duplicates recorded against their
    original. Sidecar metadata is read from NAME.json beside an image or a folder's mambo.jsonl.
    Every new image is matched against the known templates (`mambo templates list`).
    Work is committed in batches: after Ctrl-C, run the same command again to resume.
    """
    readable = [p for p in paths if p.exists() and os.access(p, os.R_OK | (os.X_OK if p.is_dir() else 0))]
    if not readable:
        # Nothing to read: fail before the library is opened, so a typo creates no empty library.
        what = ", ".join(show_path(p) for p in paths[:3]) + (" ..." if len(paths) > 3 else "")
        raise MamboError(
            f"nothing to add: {what} {'does' if len(paths) == 1 else 'do'} not exist or cannot be "
            "read; give an image file or a folder of images"
        )
    if not quiet and sys.stderr.isatty():
        # Said before the engines load (seconds on a cold machine): the progress bar follows.
        click.echo(
            f"mambo: adding {', '.join(show_path(p) for p in readable[:3])}"
            f"{' ...' if len(readable) > 3 else ''} to {show_path(ctx.obj['db_path'] or default_db_path())}",
            err=True,
        )
    from mambomeme.ingest import Ingester
    from mambomeme.library import disk_full_message
    from mambomeme.safety_review import recheck_if_stale
    from mambomeme.safety_text import RULES_VERSION
    from mambomeme.upkeep import finish_pending

    db = open_library(ctx, create=True)
    if db.full_disk:
        raise MamboError(disk_full_message(db.path))
    if db.readonly:
        raise MamboError(
            f"{show_path(db.path)} is read-only (the file or its folder): `mambo add` must write to "
            "it; make both writable, or choose another library with --db"
        )
    ing = Ingester(db, progress=not quiet, batch=batch_size, workers=workers, sidecars=not no_sidecars)
    try:
        s = ing.run(list(paths))
    except KeyboardInterrupt:
        s = ing.stats
        click.echo(
            f"\nmambo: interrupted; {s.added} new item(s) were saved. Run the same `mambo add` again to resume.",
            err=True,
        )
        sys.exit(130)
    rechecked = recheck_if_stale(db)  # a library made under older text rules is re-checked once
    # A label or template change interrupted between its transactions: its vectors, its vocabulary.
    finish_pending(db, lambda: (ing.embedder, ing.model_id))
    click.echo(
        f"added {s.added}, updated {s.updated}, exact duplicates {s.duplicates}, "
        f"unchanged {s.skipped}, errors {s.errors}"
    )
    if rechecked and rechecked["changed"] and not quiet:
        click.echo(
            f"safety: re-checked {rechecked['items']} item(s) with {RULES_VERSION} and the caption-meaning "
            "model; "
            f"{rechecked['changed']} changed class (`mambo safety` lists what is marked)"
        )
    if s.unread:
        # As ripgrep does when some files could not be read: the rest is done, the status says not all.
        click.echo(
            f"mambo: {s.unread} file(s) skipped, each named above (`mambo status` lists recent errors); "
            "the rest is indexed",
            err=True,
        )
        ctx.exit(2)


def _ingest_batch() -> int:
    from mambomeme.ingest import INGEST_BATCH

    return INGEST_BATCH


class QueryCommand(click.Command):
    """A command whose QUERY words may start with `-` (`mambo search "-x"`, `mambo search -5 degrees`):
    an argument that is not one of the command's options is a word of the query, wherever it
    stands. A `--word` that is no option is a usage error, as in ripgrep (a mistyped `--jsn` must
    not become the query): after `--` it is query text."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        names = {n for p in self.get_params(ctx) if isinstance(p, click.Option) for n in p.opts + p.secondary_opts}
        valued = {n: p for p in self.get_params(ctx) if isinstance(p, click.Option) and not p.is_flag for n in p.opts}

        def attached(a: str) -> bool:
            """-n5, -sbm25: a short option with its value, not a query such as "-no way" or "-nope"."""
            opt = valued.get(a[:2]) if not a.startswith("--") else None
            if opt is None or not a[2:] or any(c.isspace() for c in a):
                return False
            try:
                opt.type.convert(a[2:], opt, ctx)
            except click.BadParameter:
                return False
            return True

        keep: list[str] = []
        queries: list[str] = []
        i = 0
        while i < len(args):
            a = args[i]
            if a == "--":
                queries += args[i + 1 :]
                break
            known = not a.startswith("-") or a == "-" or a in names or a.split("=", 1)[0] in names or attached(a)
            if not known and a.startswith("--") and not any(c.isspace() for c in a):
                import difflib

                close = difflib.get_close_matches(a.split("=", 1)[0], sorted(n for n in names if n.startswith("--")), 1)
                raise click.UsageError(
                    f"no such option: {a}"
                    + (f" (did you mean {close[0]}?)" if close else "")
                    + f"; to search for it, put -- before it: mambo {self.name} -- {a}",
                    ctx,
                )
            if not known:
                queries.append(a)
            else:
                keep.append(a)
                if a in valued and i + 1 < len(args):  # an option's value may start with "-" too
                    keep.append(args[i + 1])
                    i += 1
            i += 1
        return super().parse_args(ctx, keep + (["--", *queries] if queries else []))


def _default_systems() -> list[str]:
    from mambomeme.search import DEFAULT_SYSTEMS

    return sorted(DEFAULT_SYSTEMS)


def _default_system() -> str:
    from mambomeme.search import DEFAULT_SYSTEM

    return DEFAULT_SYSTEM


class SystemChoice(LazyChoice):
    """The search systems as choices (listed in the help, completed by the shell); a wrong value is
    echoed through the sanitiser, as every text from outside is."""

    def __init__(self) -> None:
        super().__init__(_default_systems)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        try:
            return super().convert(value, param, ctx)
        except click.BadParameter:
            self.fail(
                f"no search system named {clean_line(str(value))!r}: choose one of {', '.join(self.choices)}",
                param,
                ctx,
            )


SYSTEM_HELP = (
    "Search system: hybrid (words and meaning, the default), bm25 (words only, no model to "
    "load), dense (meaning only). `mambo systems` shows their configurations."
)


@cli.command(cls=QueryCommand)
@click.argument("words", nargs=-1, metavar="[QUERY]...")
@click.option(
    "--system",
    "-s",
    cls=LazyDefault,
    load_default=_default_system,
    show_default=True,
    type=SystemChoice(),
    help=SYSTEM_HELP,
)
@click.option(
    "-n",
    "limit",
    default=10,
    show_default=True,
    type=click.IntRange(1, 100),
    help='How many results. Without it, a list (and -l) stops at the "weaker matches" divider: the best 10 '
    "whose evidence is not much weaker than the first's; with it, N results, the weaker ones too.",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help='Results as JSON lines, each with its query (no match: one {"no_match": true} line).',
)
@click.option(
    "--paths",
    "-l",
    "--files-with-matches",
    "paths_only",
    is_flag=True,
    help="Print only each result's absolute path, one a line (its exact bytes; escaped on a terminal).",
)
@click.option(
    "--null",
    "-0",
    "null",
    is_flag=True,
    help="End each printed path (-l, or the screen's choice) with NUL, not a newline: for `xargs -0`. "
    "A path holding a newline needs it.",
)
@click.option(
    "--nearest",
    is_flag=True,
    help='Always answer: where it would say "no match", the nearest memes, with a "not confident" note on '
    'stderr (--json: "not_confident": true on each result); exit 0. The screen: Ctrl-R.',
)
@click.option("--query", "-q", "typed", metavar="TEXT", help="Open the full-screen search with TEXT typed in.")
@click.option(
    "--multi",
    "-m",
    is_flag=True,
    help="The full-screen search: Tab / Shift-Tab mark several memes, and Enter prints each path (fzf's -m).",
)
@click.option("--record-events", is_flag=True, help="TUI: record interaction events (off unless asked).")
@click.option("--wait-ready", is_flag=True, help="TUI: accept searches only once the model is loaded.")
@click.option(
    "--image",
    metavar="FILE",
    help="Search by a picture: its exact and near copies, the same meme re-captured, its template, "
    "then memes whose caption means the same; each result says why.",
)
@click.pass_context
def search(
    ctx: click.Context,
    words: tuple[str, ...],
    system: str,
    limit: int,
    as_json: bool,
    paths_only: bool,
    null: bool,
    nearest: bool,
    typed: str | None,
    multi: bool,
    record_events: bool,
    wait_ready: bool,
    image: str | None,
) -> None:
    """Search the library; the words after `search` are one query.

    No quotes needed.

    \b
    With a QUERY: print the results; exit 0, or 1 and "no match" on stderr, as grep and ripgrep do
    (2: an error). With --nearest, the nearest memes instead of "no match", and exit 0.
    The list (and -l) stops where the evidence stops: results much weaker than the first (by
    their words and their meaning) are left out, unless -n asks for N results; the list then
    shows a "weaker matches" line before them, and --json gives each result its "evidence".
    Without one, on a terminal: the full-screen search, drawn on the terminal even when stdout is
    a pipe or a file; choosing prints the path there (with -m, each one marked with Tab, one a
    line), so it works like a picker (fzf):
      xdg-open "$(mambo search)"
      mambo search -m -0 | xargs -r -0 cp -t ~/picked
      mambo search -q "john cena"         the screen, with the query typed in (always the screen)
    With queries piped in: one query a line, a block of results for each (with -l, each block
    ends with a blank line, or with -0 with an empty NUL-ended record; no match: the end alone);
    exit 1 if any query had no match.
    \b
    Examples:
      mambo search john cena
      mambo search -l cat | head -1       the best match's path
      mambo search -l -n 20 cat           20 paths, weaker matches too
      mambo search -l -0 cat | xargs -0 ls -l
      mambo search --json -n 3 monday
      mambo search --nearest -l -n 3 qwzx    the nearest memes, even where nothing fits well
      mambo search --image shot.png       does the library hold this meme, its copies, its template?
    """
    import apsw
    from click.core import ParameterSource

    # -n given: that many results; not given: the list stops at the "weaker matches" divider
    asked = ctx.get_parameter_source("limit") not in (ParameterSource.DEFAULT, None)
    try:
        if image is not None and (words or typed is not None or multi or nearest):
            raise MamboError("--image searches by a picture: give no QUERY, -q, -m or --nearest with it")
        if as_json and (paths_only or null):
            raise MamboError(f"choose one of --json and {'-0/--null' if null else '--paths'}")
        if image is not None:
            ctx.exit(_search_image(ctx, image, limit, as_json, paths_only, null))
        _search(
            ctx,
            " ".join(words) if words else None,
            system,
            limit,
            as_json,
            paths_only,
            typed,
            record_events,
            wait_ready,
            multi,
            null,
            nearest,
            asked,
        )
    except MamboError as e:  # ripgrep's codes: 1 is "no match", so an error is 2
        raise as_click(e, code=2) from e
    except apsw.Error as e:  # a damaged or busy library is an error too, never "no match"
        raise as_click(library_error(ctx, e), code=2) from e


def _search(
    ctx: click.Context,
    query: str | None,
    system: str,
    limit: int,
    as_json: bool,
    paths_only: bool,
    typed: str | None,
    record_events: bool,
    wait_ready: bool,
    multi: bool = False,
    null: bool = False,
    nearest: bool = False,
    asked: bool = True,
) -> None:
    if query is not None:  # a one-shot search: the helper that keeps the model loaded answers it, if one runs
        from mambomeme.search_helper import forwarded

        code = forwarded(ctx)
        if code is not None:
            ctx.exit(code)
    paths_only = paths_only or null  # -0 prints paths
    # -q is the screen with TEXT typed in (fzf's --query), wherever stdin and stdout go; without it,
    # a terminal on stdin gets the screen and piped stdin holds queries.
    screen = query is None and (typed is not None or sys.stdin.isatty())
    if screen and as_json:
        raise MamboError(
            "--json prints the results of a QUERY (or of queries piped in); the screen prints the "
            "chosen paths: give a QUERY, as `mambo search --json cat`"
        )
    from mambomeme.embed import waiting_note, waiting_to_embed
    from mambomeme.search import above_divider, searcher_for, sync_systems

    db = open_library(ctx)
    sync_systems(db)
    if query is None:
        if screen:
            from mambomeme.tui_shell import run_tui

            ctx.exit(
                run_tui(
                    db,
                    system,
                    limit=limit,
                    record_events=record_events,
                    wait_ready=wait_ready,
                    query=typed or "",
                    multi=multi,
                    null=null,
                )
            )
        if prompt_loop(
            db, system, limit, as_json=as_json, paths_only=paths_only, null=null, nearest=nearest, asked=asked
        ):
            ctx.exit(1)  # some query had no match (ripgrep: 1 when nothing matched)
        return
    waiting = waiting_to_embed(db)
    if waiting:
        click.echo(f"note: {waiting_note(waiting)}", err=True)
    answer, unsure = answer_for(searcher_for(db, system), query, system, limit, nearest=nearest)
    results, withheld = answer.results, withheld_count(db, answer.plan)
    listed = results if asked else above_divider(results)
    if paths_only:
        echo_paths([result_path(r) for r in listed], null=null)
    if as_json:
        json_answer(query, results, withheld, unsure=unsure)
    if not (paths_only or as_json):
        echo_results(listed)
        if len(listed) < len(results) and sys.stdout.isatty():  # a person reads it: say what -n adds
            click.echo(f"note: {weaker_note(len(results) - len(listed), limit)}", err=True)
    if not results:
        click.echo(no_match_message(withheld), err=True)
        ctx.exit(1)
    if unsure:
        click.echo(f"note: {not_confident_note(query)}", err=True)
    if withheld and not as_json:  # --json says it on its last line
        click.echo(f"note: {withheld_note(withheld)}", err=True)


def _search_image(ctx: click.Context, image: str, limit: int, as_json: bool, paths_only: bool, null: bool) -> int:
    """`mambo search --image FILE`: printed as a QUERY's answer is (text, -l, -0, --json with each
    result's reason); 1 when nothing is found."""
    from mambomeme.by_image import format_match, match_json, search_file, withheld_note
    from mambomeme.search import sync_systems

    db = open_library(ctx)
    sync_systems(db)
    answer = search_file(db, image, limit)
    results, withheld = answer.results, answer.withheld
    said = {"image": clean_line(image)} | ({"withheld": withheld} if withheld else {})
    if paths_only or null:
        echo_paths([result_path(r) for r in results], null=null)
    for r in results if as_json else ():
        click.echo(json_line(said | match_json(r)))
    for r in results if not (paths_only or null or as_json) else ():
        click.echo(format_match(r))
    if not results:
        if as_json:
            click.echo(json_line(said | {"no_match": True}))
        click.echo(no_match_message(withheld, withheld_note), err=True)
        return 1
    if withheld and not as_json:
        click.echo(f"note: {withheld_note(withheld)}", err=True)
    return 0


def answer_for(
    searcher: Searcher, query: str, system: str, limit: int, *, nearest: bool = False
) -> tuple[Answer, bool]:
    """The answer to `query`, and whether it holds the nearest memes where the answer is "no match"
    (--nearest: the list the search had before its "no match" rule; an answer the rule lets
    through is the same with or without --nearest)."""
    import dataclasses

    answer = searcher.answer(query, system, limit)
    if not nearest or answer.results:
        return answer, False
    return dataclasses.replace(answer, results=answer.nearest), bool(answer.nearest)


def withheld_count(db: DB, plan: QueryPlan) -> int:
    """How many withheld memes hold the query's words: every answer says it (a count, never which)."""
    from mambomeme.safety_review import withheld_matches

    return withheld_matches(db, plan)


def prompt_loop(
    db: DB,
    system: str,
    limit: int,
    *,
    as_json: bool = False,
    paths_only: bool = False,
    null: bool = False,
    nearest: bool = False,
    asked: bool = True,
) -> int:
    """Queries read one a line (piped into `mambo search`; a terminal gets the full-screen search);
    at a prompt, a blank line quits; returns how many queries had no match.
    With --json: each query's results as JSON lines (each with its query), nothing else. With -l
    (or -0): each query's paths, then a blank line (or an empty NUL-ended record), so the n-th
    block answers the n-th query even when one has no match. With --nearest: the nearest memes
    where a query has no match, said "not confident". Without -n (`asked`), each list and each
    block of paths stops at the "weaker matches" divider."""
    from mambomeme.search import above_divider, searcher_for

    searcher = searcher_for(db, system)
    interactive = sys.stdin.isatty()
    missed = 0
    while True:
        try:
            query = input("search> " if interactive else "")
        except (EOFError, KeyboardInterrupt):
            break
        if not query.strip():
            if interactive:
                break
            continue
        t0 = time.perf_counter()
        answer, unsure = answer_for(searcher, query, system, limit, nearest=nearest)
        results, withheld = answer.results, withheld_count(db, answer.plan)
        listed = results if asked else above_divider(results)
        ms = (time.perf_counter() - t0) * 1000
        missed += not results
        if as_json:
            json_answer(query, results, withheld, unsure=unsure)
            continue
        if paths_only:
            echo_paths([result_path(r) for r in listed], null=null)
            click.echo("\0" if null else "", nl=not null)  # the block's end
            if not results:
                click.echo(f"{no_match_message(withheld)}: {clean_line(query)}", err=True)
            if unsure:
                click.echo(f"note: {not_confident_note(query)}", err=True)
            if results and withheld:
                click.echo(f"note: {withheld_note(withheld)}: {clean_line(query)}", err=True)
            continue
        click.echo(f"» {clean_line(query)}")
        echo_results(listed)
        said = f"{len(listed)} results" if results else no_match_message(withheld)
        said = f"{len(listed)} nearest (not confident: nothing fits well)" if unsure else said
        said += f" ({weaker_note(len(results) - len(listed), limit)})" if len(listed) < len(results) else ""
        said += f" ({withheld_note(withheld)})" if results and withheld else ""
        click.echo(f"{said} in {ms:.0f} ms ({clean_line(system)})")
    return missed


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="As JSON.")
@click.pass_context
def status(ctx: click.Context, as_json: bool) -> None:
    """Counts, size, models, schema version and recent ingest errors."""
    from mambomeme.dense_index import IVF_MIN_VECTORS
    from mambomeme.embed import waiting_note, waiting_to_embed
    from mambomeme.safety_review import review_counts
    from mambomeme.upkeep import library_status

    db = open_library(ctx)
    st = library_status(db)
    st["safety_review"] = review_counts(db)
    st["waiting_to_embed"] = waiting_to_embed(db)
    if as_json:
        click.echo(json.dumps(st, indent=2))
        return
    click.echo(f"library   {show_path(st['database'])} ({st['bytes'] / 1e6:.1f} MB, schema {st['schema_version']})")
    click.echo(
        f"items     {st['items']} ({st['files']} files, {st['duplicate_files']} exact duplicates, "
        f"{st['perceptual_groups']} perceptual groups, {st['template_groups']} templates)"
    )
    click.echo("safety    " + ", ".join(f"{k} {v}" for k, v in st["safety"].items()))
    rv = st["safety_review"]
    click.echo(
        f"review    {rv['text_marked']} marked by the text rules ({rv['text_hidden']} hidden), "
        f"{rv['meaning_marked']} of {rv['meaning_scored']} by the caption meaning "
        f"({rv['meaning_hidden']} hidden), "
        f"{rv['picture_marked']} of {rv['picture_scored']} by the picture signal, {rv['decided']} decided by "
        f"a person; {rv['hidden']} hidden in all (`mambo safety`)"
    )
    if rv["text_rules_stale"]:
        click.echo(
            f"note      classes come from older caption signals: `mambo safety recheck` applies {rv['text_rules']}"
        )
    for e in rv["engines"]:
        click.echo(
            f"safety    {e['kind']} {clean_line(e['name'])} {clean_line(e['version'])}"
            + (f" sha256 {e['weights_sha256'][:12]}" if e["weights_sha256"] else "")
            + f": {e['items']} items"
        )
    click.echo(
        "templates "
        + (", ".join(f"{v} {k}" for k, v in st["templates"].items()) or "none loaded yet")
        + f"; {st['recognised']} items recognised, {st['with_derived_fields']} with derived fields"
    )
    avg = st["preview_bytes"] / st["previews"] if st["previews"] else 0
    click.echo(f"previews  {st['previews']} ({st['preview_bytes'] / 1e6:.2f} MB, {avg / 1e3:.1f} KB each)")
    for m in st["models"]:
        click.echo(
            f"model     {clean_line(m['name'])} @ {clean_line(m['revision'])} sha256 {m['weights_sha256'][:12]} "
            f"dim {m['dim']}: {m['items']} items"
        )
    for o in st["ocr_engines"]:
        click.echo(f"ocr       {clean_line(o['name'])} {clean_line(o['version'])}: {o['items']} items")
    if st["waiting_to_embed"]:
        click.echo(f"note      {waiting_note(st['waiting_to_embed'])}")
    vi = st["vector_index"]
    click.echo(
        f"vectors   coarse index of {vi['clusters']} clusters, trained on {vi['trained_vectors']} vectors "
        f"at {vi['trained_at'][:19]}"
        if vi
        else f"vectors   searched exactly (a coarse index is trained from {IVF_MIN_VECTORS:,} vectors)"
    )
    for r in st["roots"]:
        click.echo(f"root      {clean_line(r['name'])} -> {show_path(r['path'])} ({r['files']} files)")
    if st["recent_errors"]:
        click.echo(f"errors    {st['errors']} in all; most recent:")
        for e in st["recent_errors"]:
            click.echo(f"  {e['at'][:19]} {show_path(e['path'])}: {clean_line(e['message'])}")


@cli.command()
@click.option("--no-files", is_flag=True, help="Skip re-hashing the image files.")
@click.pass_context
def check(ctx: click.Context, no_files: bool) -> None:
    """Integrity check, and stored checksums against the files."""
    import apsw

    from mambomeme.upkeep import check_library, raw_integrity

    try:
        db = open_library(ctx)
    except NoLibrary:
        raise  # nothing to check: one line, as every read-only command says it
    except (MamboError, apsw.Error) as e:
        # Too damaged to open: the check's report is still a list, starting with why.
        message = e.format_message() if isinstance(e, MamboError) else db_error_message(e, ctx.obj["db_path"])
        click.echo(f"problem: {message}")
        for p in raw_integrity(ctx.obj["db_path"] or default_db_path()):
            click.echo(f"problem: {p}")
        raise MamboError("the library cannot be opened (see the problems above)") from None
    problems, notes = check_library(db, verify_files=not no_files)
    for n in notes:
        click.echo(f"note: {n}")
    for p in problems:
        click.echo(f"problem: {p}")
    if problems:
        raise MamboError(f"{len(problems)} problem(s) found")
    click.echo("ok")


@cli.command(name="prune")
@click.option("--force", is_flag=True, help="Prune even when a root would lose more than half of its files.")
@click.pass_context
def prune_cmd(ctx: click.Context, force: bool) -> None:
    """Forget files that no longer exist (and items left with no file).

    A root that would lose more than half of its files (an unmounted drive, an emptied folder)
    stops the prune unless --force. Labels of pruned memes are kept and come back with the file.
    """
    from mambomeme.upkeep import PruneRefused, prune

    try:
        files, items, skipped, held = prune(open_library(ctx), force=force)
    except PruneRefused as e:
        root, n_gone, n = e.roots[0]
        raise MamboError(
            f"nothing pruned: {n_gone} of the {n} files of root {clean_line(root)!r} are gone (is "
            "its drive mounted?); if they were deleted on purpose, run `mambo prune --force`"
        ) from None
    for name in skipped:
        click.echo(
            f"note: root {clean_line(name)!r} is missing entirely; skipped (re-point it with `mambo roots move`)"
        )
    click.echo(f"pruned {files} file(s), {items} item(s)")
    if held:
        click.echo(
            f"kept private: {held} meme(s) whose pruned file was private by its sidecar or manifest line and "
            "whose content lives on under another name (`mambo private ID --clear` publishes one)"
        )


@cli.group(context_settings=CONTEXT)
def roots() -> None:
    """The folders the library's files live in."""


@roots.command(name="list")
@click.pass_context
def roots_list(ctx: click.Context) -> None:
    """List roots."""
    for _rid, name, path, n in list_roots(open_library(ctx)):
        exists = "" if Path(path).is_dir() else "  (missing)"
        click.echo(f"{clean_line(name)}\t{show_path(path)}\t{n} files{exists}")


@roots.command(name="move")
@click.argument("name")
@click.argument("new_path", type=click.Path(file_okay=False, exists=True, path_type=Path))
@click.option("--force", is_flag=True, help="Move even when the folder does not hold the root's files.")
@click.pass_context
def roots_move(ctx: click.Context, name: str, new_path: Path, force: bool) -> None:
    """Re-point root NAME at NEW_PATH (the images were moved or the database copied)."""
    from mambomeme.upkeep import move_root

    moved = move_root(open_library(ctx), name, new_path, force=force)
    click.echo(f"{clean_line(name)} -> {show_path(moved)}")


# -- Templates and group labels -----------------------------------------------------------------


@cli.group(context_settings=CONTEXT)
def templates() -> None:
    """Known templates: the bundled catalogue and your own.

    \b
    Examples:
      mambo templates list                                  what is known (catalogue and yours)
      mambo templates add base.jpg --name "Office Cat" --alias "desk cat"
      mambo templates remove office-cat
    A new template is matched against the library's memes at once (only against that template).
    """


def _open_templates(ctx: click.Context, *, create: bool = True) -> DB:
    from mambomeme.templates import sync_catalogue

    db = open_library(ctx, create=create)
    sync_catalogue(db)
    return db


def _rerecognise(db: DB, quiet: bool = False) -> None:
    # Each batch recognises, derives and embeds in one transaction: the model is loaded before the
    # first one takes the write lock. What an interruption leaves is finished by the next `mambo add`
    # (the items' recognised revision; the vocabulary, finish_pending).
    from mambomeme.embed import get_embedder, model_id_for
    from mambomeme.templates import recognise_existing

    if not quiet:  # loading the model takes seconds before the first batch's progress line
        click.echo("matching the library's memes against the templates again…", err=True)
    embedder = get_embedder()
    checked, changed, missing = recognise_existing(db, lambda: (embedder, model_id_for(db)), quiet=quiet)
    if checked:
        click.echo(
            f"re-recognised {checked} item(s): {changed} changed"
            + (f", {missing} skipped (files not on this machine)" if missing else "")
        )


@templates.command(name="list")
@click.option("--source", type=click.Choice(["catalogue", "user"]), help="Only these.")
@click.option("--json", "as_json", is_flag=True, help="As JSON lines.")
@click.pass_context
def templates_list(ctx: click.Context, source: str | None, as_json: bool) -> None:
    """List known templates: id, source, views, memes recognised, name."""
    rows = _open_templates(ctx, create=False).rows("list_templates", {"source": source})
    width = max((len(clean_line(r["slug"])) for r in rows), default=0)  # the whole id: `templates remove` takes it
    for r in rows:
        if as_json:
            click.echo(json.dumps(r | {"aliases": json.loads(r["aliases"])}, ensure_ascii=False))
        else:
            click.echo(
                f"{clean_line(r['slug']):<{width}} {r['source']:<9} {r['views']} view(s) "
                f"{r['items']:>4} meme(s)  {clean_line(r['name'])}"
            )


@templates.command(name="add")
@click.argument("image", type=click.Path(path_type=Path))
@click.option("--name", required=True, help="The template's name.")
@click.option("--alias", "aliases", multiple=True, help="Another name (repeatable).")
@click.option("--description", default="", help="A literal description of the picture (searchable).")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar while re-recognising.")
@click.pass_context
def templates_add(
    ctx: click.Context, image: Path, name: str, aliases: tuple[str, ...], description: str, quiet: bool
) -> None:
    """Add IMAGE (a blank template picture, or any meme on it) as a template named NAME."""
    from mambomeme.templates import add_user_template, read_template_picture, user_template_slug

    user_template_slug(name)
    view = read_template_picture(image)
    db = _open_templates(ctx)
    slug = add_user_template(db, name, view, aliases, description)
    click.echo(f"added template {slug} ({len(view['orb_desc']) // 32} ORB features)")
    _rerecognise(db, quiet)


@templates.command(name="remove")
@click.argument("template_id")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar while re-recognising.")
@click.pass_context
def templates_remove(ctx: click.Context, template_id: str, quiet: bool) -> None:
    """Remove a template by its id (see `mambo templates list`); its memes are recognised again."""
    from mambomeme.templates import remove_user_template

    db = _open_templates(ctx)
    remove_user_template(db, template_id)
    click.echo(f"removed template {clean_line(template_id)}")
    _rerecognise(db, quiet)


@cli.command()
@click.argument("item")
@click.option(
    "--template", "template_name", help="Name its template (a known template's name, id or alias, or any name)."
)
@click.option("--entity", "entities", multiple=True, help="Name a person, character or thing in it (repeatable).")
@click.option("--tag", "tags", multiple=True, help="A topic (repeatable).")
@click.option(
    "--group",
    "scope",
    type=LazyChoice(lambda: _labels().SCOPES),
    default="template",
    show_default=True,
    help="Apply to its template group, its near-identical copies, or this meme.",
)
@click.option("--clear", is_flag=True, help="Remove the labels given from this meme (and so from its group).")
@click.option(
    "--as-template",
    is_flag=True,
    help="Make this meme's picture the template --template names (as "
    "`mambo templates add` does), so every meme on that template is found by its name.",
)
@click.pass_context
def label(
    ctx: click.Context,
    item: str,
    template_name: str | None,
    entities: tuple[str, ...],
    tags: tuple[str, ...],
    scope: str,
    clear: bool,
    as_template: bool,
) -> None:
    """Label one meme (ITEM: its id or path), and with it its group.

    \b
    Examples:
      mambo label ~/memes/IMG_2144.jpg --template "Anvil Champ" --entity "john cena"
      mambo label 42 --tag work --group perceptual
      mambo label 42 --clear
      mambo label 42 --template "Office Cat" --as-template   its lookalikes follow
    Labels are derived fields (shown as such); a sidecar's own values always win.
    """
    from mambomeme.embed import get_embedder, model_id_for
    from mambomeme.labels import item_file, label_meme, resolve_item
    from mambomeme.templates import add_user_template, read_template_picture, sync_catalogue, user_template_slug

    db = open_library(ctx)
    item_id = resolve_item(db, item)
    if as_template:
        if not template_name or clear:
            raise MamboError("--as-template needs --template NAME (the new template's name), without --clear")
        if (path := item_file(db, item_id)) is None:
            raise MamboError(
                "none of this meme's files is on this machine: point its root at them (`mambo roots "
                "move`) or give a picture (`mambo templates add FILE --name NAME`)"
            )
        user_template_slug(template_name)
        view = read_template_picture(path)
        sync_catalogue(db)
        slug = add_user_template(db, template_name, view, (), "")
        click.echo(f"added template {slug} from this meme ({len(view['orb_desc']) // 32} ORB features)")
        _rerecognise(db)  # every meme matched again: progress on stderr (tens of seconds on a large library)
        if not (entities or tags):
            return
        template_name = None  # the template itself now names every meme recognised on it
    done = label_meme(
        db,
        item_id,
        template=template_name,
        entities=entities,
        tags=tags,
        scope=scope,
        clear=clear,
        load_model=lambda: (get_embedder(), model_id_for(db)),
    )
    what = "cleared labels of" if clear else "labelled"
    click.echo(f"{what} {done.reached} meme(s) ({done.scope if not clear else 'its groups'}); {done.changed} changed")
    if template_name and scope == "template" and done.scope != "template":
        click.echo(
            f"note: this meme's template is not recognised, so the label reaches only it and its "
            f"near-identical copies; to name every meme on that template, run `mambo label {item_id} "
            f"--template {shlex.quote(clean_line(template_name))} --as-template`",
            err=True,
        )
    for fld, n in done.sidecar_wins.items():
        click.echo(
            f"note: {n} of them show their sidecar's {fld} (a sidecar's values win over labels): change "
            f'"{fld}" in the sidecar to let the label show',
            err=True,
        )


@cli.group(context_settings=CONTEXT, invoke_without_command=True)
@click.option("--json", "as_json", is_flag=True, help="As JSON lines.")
@click.pass_context
def safety(ctx: click.Context, as_json: bool) -> None:
    """Review what the safety signals marked, and decide.

    The policy is mambo-safety-v1.

    \b
    With no subcommand: every meme a signal marked or a person decided, with
    its class, the rule and the words that fired, and the caption-meaning
    score with its bars (your own files: the list shows the words so you can
    judge them; search never shows hidden memes).
    \b
    Examples:
      mambo safety                          # the review list
      mambo safety review                   # decide them one at a time, one key each
      mambo safety set 42 safe --by alex    # a person's decision wins over the detector
      mambo safety clear 42                 # take it back: the automatic class returns
      mambo safety detect "every cyclist deserves to get run over"   # both caption signals
      mambo safety recheck                  # re-apply the current caption signals to stored captions
    """
    if ctx.invoked_subcommand is not None:
        return
    from mambomeme.safety_batch import caption_line, why
    from mambomeme.safety_review import review_list

    rows = review_list(open_library(ctx))
    for r in rows:
        if as_json:
            click.echo(json_line(r))
            continue
        click.echo(f"{r['item_id']:>6}  {r['safety']:<9} {show_path(r['path'])}\n        " + "; ".join(why(r)))
        # The words a reviewer judges (the owner's own file), cut to one line, and how to decide.
        click.echo(
            f"        caption: {caption_line(r['caption'])}\n"
            f"        decide: mambo safety set {r['item_id']} safe|sensitive|unsafe|critical"
        )
    if not as_json:
        click.echo(
            f"{len(rows)} meme(s) marked or decided"
            + (": `mambo safety review` decides them one key each" if rows else "")
        )


@safety.command(name="set")
@click.argument("item")
@click.argument("klass", metavar="CLASS", type=click.Choice(["safe", "sensitive", "unsafe", "critical"]))
@click.option("--by", "decided_by", default=user_name, show_default="$USER", help="Who decides (a person).")
@click.option("--note", default="", help="Why (kept with the decision).")
@click.pass_context
def safety_set(ctx: click.Context, item: str, klass: str, decided_by: str, note: str) -> None:
    """A person's decision on ITEM (its id or file path): wins over the detector and the picture signal,
    applies to its exact and near-identical copies, and survives re-ingest; wins over sidecars too."""
    from mambomeme.labels import resolve_item
    from mambomeme.safety_review import decide

    db = open_library(ctx)
    d = decide(db, resolve_item(db, item), klass, decided_by, note)
    click.echo(
        f"meme {d['item_id']}: {d['decided']} (was {d['before']}, {clean_line(d['before_source'])}), "
        f"decided by {d['decided_by']} (person)"
    )


@safety.command(name="review")
@click.option("--all", "include_decided", is_flag=True, help="Also the memes a person has decided (to revisit).")
@click.option("--by", "decided_by", default=user_name, show_default="$USER", help="Who decides (a person).")
@click.pass_context
def safety_review(ctx: click.Context, include_decided: bool, decided_by: str) -> None:
    """Decide the memes the safety signals doubt, one at a time, one key each.

    Withheld memes first, then marked ones; each shows its path, the words
    read from it and why. Keys: s safe, e sensitive, u unsafe, c critical
    (or 1-4), space skip, o open the picture ($MAMBO_OPENER, else xdg-open),
    q or Esc stop. Every decision is kept as it is made, as `mambo safety
    set` would make it; a meme whose copy was just decided is passed over.
    """
    from mambomeme.labels import item_file
    from mambomeme.safety_batch import keys, run

    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise MamboError(
            "mambo safety review reads one key per meme: run it in a terminal (in a script: "
            "`mambo safety --json` lists them, `mambo safety set ID CLASS` decides)"
        )
    db = open_library(ctx)
    try:
        with keys() as read_key:
            tally = run(
                db,
                decided_by,
                include_decided=include_decided,
                read_key=read_key,
                say=click.echo,
                file_of=lambda item_id: item_file(db, item_id),
            )
    except KeyboardInterrupt:
        click.echo("\nreview stopped: every decision made so far is kept")
        raise SystemExit(130) from None
    click.echo(tally.summary())


@safety.command(name="clear")
@click.argument("item")
@click.pass_context
def safety_clear(ctx: click.Context, item: str) -> None:
    """Take back the decision on ITEM: the automatic class (sidecar, detector, picture) returns."""
    from mambomeme.labels import resolve_item
    from mambomeme.safety_review import withdraw

    db = open_library(ctx)
    d = withdraw(db, resolve_item(db, item))
    click.echo(f"meme {d['item_id']}: {d['safety']} ({clean_line(d['source'])}), was {d['before']} by decision")


@cli.command(context_settings=CONTEXT)
@click.argument("item")
@click.option("--clear", is_flag=True, help="Take the privacy decision back (sidecars that say private still hold).")
@click.option("--by", "decided_by", default=user_name, show_default="$USER", help="Who decides.")
@click.option("--note", default="", help="Why (kept with the decision).")
@click.pass_context
def private(ctx: click.Context, item: str, clear: bool, decided_by: str, note: str) -> None:
    """Make ITEM (its id or file path) private: never shown, with its exact and near-identical
    copies, through every later `add`, re-check and safety decision. --clear takes it back.

    \b
    Examples:
      mambo private 42                      # meme 42 and its copies are never shown
      mambo private images/x.png --note "my face"
      mambo private 42 --clear              # shown again, unless a sidecar says private
    """
    from mambomeme.labels import resolve_item
    from mambomeme.state import clear_private, make_private

    db = open_library(ctx)
    item_id = resolve_item(db, item)
    if not clear:
        who = clean_line(decided_by).strip()[:100] or "owner"
        make_private(db, item_id, who, clean_line(note)[:500])
        n = int(db.q1("privacy_followers", {"item_id": item_id})[0])
        click.echo(
            f"meme {item_id}: private, decided by {who}"
            + (f"; {n} near-identical cop{'y' if n == 1 else 'ies'} too" if n else "")
        )
        return
    r = clear_private(db, item_id)
    if not r["private"]:
        click.echo(f"meme {item_id}: not private" + ("" if r["had_decision"] else " (it had no privacy decision)"))
    elif r["private_file"]:
        click.echo(
            f"meme {item_id}: still private: {show_path(r['private_file'])} is private by its "
            f"{clean_line(r['file_source'] or 'metadata')}; edit that, then run `mambo add`"
        )
    else:
        click.echo(
            f"meme {item_id}: still private: a near-identical copy is private (`mambo private ID --clear` "
            "on that copy, or edit its sidecar)"
        )


@safety.command(name="recheck")
@click.pass_context
def safety_recheck(ctx: click.Context) -> None:
    """Re-run the current text rules on every meme's stored OCR text and the caption-meaning model
    on its stored caption vector (decisions stay in force)."""
    from mambomeme.safety_review import caption_signals_version, recheck

    c = recheck(open_library(ctx))
    click.echo(
        f"re-checked {c['items']} meme(s) with {caption_signals_version()} ({c['meaning_scored']} captions "
        f"scored): {c['changed']} changed class"
    )


@safety.command(name="detect")
@click.argument("texts", nargs=-1)
@click.option(
    "--file", "file", type=click.File("r", encoding="utf-8"), help="One caption per line ('#' lines skipped)."
)
@click.option("--json", "as_json", is_flag=True, help="As JSON lines.")
def safety_detect(texts: tuple[str, ...], file: Any, as_json: bool) -> None:
    """What the caption signals say about TEXTS (or each line of --file): the class (the more severe
    of the two), the text rule and the words that fired, and the caption-meaning score."""
    from mambomeme.embed import get_embedder
    from mambomeme.library import SAFETY_CLASSES
    from mambomeme.safety_meaning import meaning_model
    from mambomeme.safety_text import detect_safety

    lines = list(texts) + ([ln.strip() for ln in file if ln.strip() and not ln.startswith("#")] if file else [])
    if not lines:
        raise MamboError("nothing to check: give a caption, or --file FILE with one caption per line")
    meanings = meaning_model().judge(get_embedder().encode([" ".join(t.split()) for t in lines]))
    for text, m in zip(lines, meanings, strict=True):
        found = detect_safety(text)
        rule_class = found.safety if found else "safe"
        row = {
            "text": clean_line(text),
            "safety": max(rule_class, m.safety, key=SAFETY_CLASSES.index),
            "rule": found.rule if found else "",
            "words": list(found.words) if found else [],
            "text_safety": rule_class,
            "meaning_safety": m.safety,
            "meaning_rule": m.rule,
            "meaning_score": m.score,
        }
        click.echo(
            json_line(row)
            if as_json
            else f"{row['safety']:<9} {row['rule'] or '-':<17} meaning {m.score:.2f} {m.rule:<13} {row['text']}"
            + (f"  ({', '.join(clean_line(w) for w in row['words'])})" if row["words"] else "")
        )


SETTINGS = {
    "interaction_events": ("off", ("on", "off"), "record TUI interaction events (render, preview, open, copy, choose)")
}


@cli.command()
@click.argument("key", required=False, type=click.Choice(sorted(SETTINGS)))
@click.argument("value", required=False)
@click.pass_context
def settings(ctx: click.Context, key: str | None, value: str | None) -> None:
    """Show or change the library's settings.

    \b
      mambo settings                             list them
      mambo settings interaction_events on       opt in to interaction events (default off)
    """
    db = open_library(ctx, create=key is not None and value is not None)  # reading creates nothing
    if key and value is not None:
        allowed = SETTINGS[key][1]
        if value not in allowed:
            raise MamboError(f"{key} takes one of: {', '.join(allowed)}")
        with db.write():
            set_setting(db, key, value)
    for name, (default, _allowed, doc) in SETTINGS.items():
        if key in (None, name):
            value = get_setting(db, name)
            click.echo(f"{name} = {clean_line(value) if value is not None else default}    # {doc}")


# What each default system is for, in a line (`mambo systems`; its configuration with -v).
SYSTEM_PURPOSES = {
    "hybrid": "words and meaning: the typed words (typos corrected) and what they mean; loads the model",
    "bm25": "words only: the typed words (typos corrected); no model to load, the fastest start",
    "dense": "meaning only: memes whose text means what the query says, without sharing a word",
}


@cli.command()
@click.option("--verbose", "-v", is_flag=True, help='Each system\'s configuration: routes, depth, "no match" model.')
@click.pass_context
def systems(ctx: click.Context, verbose: bool) -> None:
    """List the search systems, which one is the default, and what each is for."""
    from mambomeme.search import DEFAULT_SYSTEM, describe_empty_rule, list_systems, sync_systems

    db = open_library(ctx)
    sync_systems(db)
    rows = list_systems(db)
    width = max((len(r[0]) for r in rows), default=0)
    for name, version, sha, created, _notes, config in rows:
        mark = "*" if name == DEFAULT_SYSTEM else " "
        # Rows of a library file are data from elsewhere too: printed through the sanitiser.
        click.echo(clean_text(f"{mark} {name:<{width}} v{version}  {SYSTEM_PURPOSES.get(name, _notes or '')}"))
        if not verbose:
            continue
        cfg = json.loads(config)
        routes = "+".join(f"{k}:{v:g}" for k, v in cfg["route_weights"].items() if v)
        probe = f"(probe {cfg['ivf_probe']})" if cfg["dense_index"] == "ivf" else ""
        click.echo(
            clean_text(
                f"    {sha[:12]}  {created[:19]}  routes={routes} dense={cfg['dense_index']}{probe} "
                f"depth={cfg['candidate_depth']} rrf_k={cfg['rrf_k']}"
            )
        )
        click.echo(clean_text(f"    no match: {describe_empty_rule(cfg['empty_rule'])}"))
    click.echo(f"* the default; another: mambo search -s NAME{'' if verbose else ' (its configuration: -v)'}")


@cli.command()
@click.option("--fresh", is_flag=True, help="Rebuild the demo library from scratch.")
@click.pass_context
def demo(ctx: click.Context, fresh: bool) -> None:
    """Build the demo library from the built-in memes and search it."""
    from mambomeme.ingest import Ingester
    from mambomeme.library import DB, FIXTURE_DIR
    from mambomeme.search import DEFAULT_SYSTEM, sync_systems
    from mambomeme.tui_shell import run_tui

    path = ctx.obj["db_path"] or default_db_path().with_name("demo.sqlite")
    images = FIXTURE_DIR / "images"
    if not images.is_dir():
        raise MamboError(f"demo images not found at {show_path(images)}: reinstall mambo")
    if fresh:
        for suffix in ("", "-wal", "-shm"):
            Path(str(path) + suffix).unlink(missing_ok=True)
    db = DB(path)
    ctx.call_on_close(db.close)
    click.echo(f"demo library: {show_path(path)}", err=True)
    t0 = time.monotonic()
    s = Ingester(db, progress=sys.stderr.isatty()).run([images])
    click.echo(
        f"indexed {s.added} new, {s.skipped} unchanged, {s.duplicates} duplicates, {s.errors} errors "
        f"in {time.monotonic() - t0:.1f} s",
        err=True,
    )
    sync_systems(db)
    if sys.stdin.isatty():
        ctx.exit(run_tui(db, DEFAULT_SYSTEM))
    prompt_loop(db, DEFAULT_SYSTEM, 10)


@cli.command()
@click.argument("statement", required=False)
@click.option("--json", "as_json", is_flag=True, help="Rows as JSON lines (blobs as hex).")
@click.option("--csv", "as_csv", is_flag=True, help="Rows as CSV with a header line (blobs as hex).")
@click.option("--write", is_flag=True, help="Open the library for writing (read-only otherwise).")
@click.pass_context
def sql(ctx: click.Context, statement: str | None, as_json: bool, as_csv: bool, write: bool) -> None:
    """SQL on the library; start with the `library` view.

    sqlite-vec is loaded (vec0 tables and KNN work).

    \b
    With a STATEMENT: run it and print the rows as a table (or --json, --csv).
    Without one: an SQLite shell (apsw's); statements piped on stdin run in turn.
    The library's named queries: .queries, .query NAME, SELECT * FROM mambo_queries.
    Read-only unless --write; never migrates; refuses a file that is not a library.

    \b
    Examples:
      mambo sql "SELECT path, ocr_text FROM library WHERE template = 'Anvil Champ'"
      mambo sql --json "SELECT * FROM slice_metrics WHERE run_id = (SELECT max(run_id) FROM runs)"
      mambo sql < report.sql
    """
    from mambomeme import sqlshell

    if as_json and as_csv:
        raise MamboError("choose one of --json and --csv")
    if (as_json or as_csv) and statement is None:
        raise MamboError('--json and --csv format one statement: give it, as `mambo sql --json "SELECT ..."`')
    path = ctx.obj["db_path"] or default_db_path()
    con, note = sqlshell.open_for_sql(path, write=write)
    ctx.call_on_close(lambda: sqlshell.close(con))
    if statement is None:
        ctx.exit(sqlshell.run_shell(con, path, writable=write, note=note))
    if note:
        click.echo(f"mambo: {note}", err=True)
    fmt = "json" if as_json else "csv" if as_csv else "table"
    changed = sqlshell.run_statement(con, statement, write=write, fmt=fmt, out=sys.stdout)
    if changed:
        click.echo(f"{changed} row(s) changed", err=True)


@cli.command(name="help")
@click.argument("names", nargs=-1, metavar="[COMMAND]...")
@click.pass_context
def help_cmd(ctx: click.Context, names: tuple[str, ...]) -> None:
    """Show the help of mambo, or of COMMAND.

    `mambo help search`, `mambo help templates add`."""
    command: click.Command = cli
    parent = ctx.find_root()
    for name in names:
        sub = command.get_command(parent, name) if isinstance(command, click.Group) else None
        if sub is None:
            raise click.UsageError(f"no command {clean_line(name)!r}: `mambo help` lists them", ctx)
        parent = click.Context(sub, info_name=name, parent=parent)
        command = sub
    click.echo(command.get_help(parent))


def _labels() -> Any:
    from mambomeme import labels

    return labels


@functools.cache
def evaluation_commands() -> dict[str, click.Command]:
    """The lab's commands, gathered from its modules the first time one is asked for: `mambo bench`
    (every benchmark), judge, run, score, interactions. The wheel leaves the lab out (pyproject.toml):
    there, asking for one of them is the user's one-line error."""
    try:
        from mambomeme.lab import bench, calibrate, evaluation_commands, nomatch, scale
    except ModuleNotFoundError as e:
        if e.name != "mambomeme.lab":  # the lab is there and something it needs is not: say which
            raise
        raise MamboError(
            "mambo eval needs a checkout of MamboMeme (the evaluation lab is not installed): run ./mambo eval there"
        ) from None

    group = FullHelpGroup(name="bench", help=bench.bench.help, context_settings=CONTEXT, commands=bench.bench.commands)
    for command in (
        *scale.BENCH_COMMANDS,
        *calibrate.BENCH_COMMANDS,
        *nomatch.BENCH_COMMANDS,
        *evaluation_commands.BENCH_COMMANDS,
    ):
        group.add_command(command)
    found = {"bench": group} | {c.name: c for c in evaluation_commands.COMMANDS if c.name}
    assert set(found) == set(EVAL_COMMANDS), sorted(found)
    return found


class EvalGroup(FullHelpGroup):
    """`mambo eval`: its commands are the lab's, imported only when one of them is used or listed
    (without the lab, that is a one-line error and exit status 2)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(EVAL_COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return evaluation_commands().get(cmd_name) if cmd_name in EVAL_COMMANDS else None


@cli.group(name="eval", cls=EvalGroup, context_settings=CONTEXT)
def eval_group() -> None:
    """Benchmarks, judging and scorecards (for developers).

    How well and how fast search does.

    \b
    Examples:
      mambo eval bench cold --db demo.sqlite      start-up and first-search times
      mambo eval run dev --system hybrid          one system over a benchmark partition
      mambo eval score --bare bare.sqlite         the scorecard
    The old names (`mambo bench ...`, `mambo score ...`) run the same commands.
    """


def main() -> None:
    # Quiet exit on a closed pipe (`mambo search x | head`).
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    try:
        cli(prog_name="mambo")
    except KeyboardInterrupt:
        click.echo("mambo: interrupted", err=True)
        sys.exit(130)


if __name__ == "__main__":
    main()
