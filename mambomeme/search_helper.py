"""One-shot searches at screen speed: a per-user helper process keeps the embedding model loaded
between `mambo search QUERY` calls.

The client sends the search's arguments, its working folder, its environment and whether its
streams are terminals over a Unix socket; the helper runs the same `mambo search` in its own
process with those, captures what it writes, and sends back the bytes (in order, stdout and
stderr) and the exit status, which the client writes as its own. So the output is the same with
and without the helper, byte for byte. A running helper is asked first by `mambo.py` itself, with
the raw command line, before click and the commands are imported (`answered_early`: most of a
call's time was the client's own start); the helper parses it and answers only a one-shot search,
refusing anything else, which the command line then runs as usual. `forwarded`, called by
`mambo search` with a QUERY, asks once more with the parsed search, and starts a helper when none
answers.

The socket is in $XDG_RUNTIME_DIR/mambo/ (else a 0700 folder named for the uid under the temp
folder), one per interpreter and package, and the helper answers only its own user (SO_PEERCRED).
When nothing answers, the client starts a helper (detached) and answers that call itself; any
failure talking to a helper is answered in-process, silently. MAMBO_NO_HELPER=1: never use or
start one. The helper opens the library anew for each request (the library's path is checked
against the client's), so a library changed between calls is never answered stale."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import io
import json
import os
import signal
import socket
import stat
import struct
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

# An idle helper exits after this long: a working session's or a script's searches come minutes
# apart at most, and a helper holds the model (~0.5 GB) that nobody else needs once they stop.
IDLE_SECONDS = 5 * 60
# How long a client waits for a helper's answer before answering itself: a search on a large
# library takes a few seconds at most; beyond this the helper is taken to be stuck.
ANSWER_SECONDS = 60.0
# How long a client waits to connect: a live helper accepts at once (its backlog queues callers).
CONNECT_SECONDS = 1.0
# MAMBO_HELPER_LOG (tests): the helper appends "start PID" there, "ready PID" once warm, and
# "answer PID" for each search it answers, so a test can tell who answered without any change to the output.
LOG_ENV = "MAMBO_HELPER_LOG"
NO_HELPER_ENV = "MAMBO_NO_HELPER"
FIRST_ENV = "MAMBO_HELPER_FIRST"  # the search that started a helper, run again to warm it
# A new helper loads the model once the search that started it has ended, or after this long.
STARTER_SECONDS = 30.0
# A new helper waits up to LOCK_TRIES x 0.1 s for a stale one (told so by a client) to exit.
LOCK_TRIES = 20
PACKAGE = Path(__file__).resolve().parent


_serving = False  # in the helper itself, searches run here


def enabled() -> bool:
    return not _serving and os.environ.get(NO_HELPER_ENV, "") in ("", "0")


def socket_dir() -> Path:
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and Path(runtime).is_dir():
        return Path(runtime) / "mambo"
    import tempfile

    return Path(tempfile.gettempdir()) / f"mambo-{os.getuid()}"


def code_stamp() -> str:
    """Which code answers: the interpreter, this package's folder and its files' times and sizes
    (an edited or upgraded install, whose version is written in library.py, gets a new helper,
    never an old one's answers). Read from the folder alone: the client imports none of them."""
    times = [
        f"{e.name}:{st.st_mtime_ns}:{st.st_size}"
        for d in (PACKAGE, PACKAGE / "ingest")
        for e in sorted(os.scandir(d), key=lambda e: e.name)
        if e.name.endswith((".py", ".sql")) and (st := e.stat())
    ]
    text = "\n".join([sys.executable, str(PACKAGE), *times])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def socket_path() -> Path:
    where = hashlib.sha256(f"{sys.executable}\n{PACKAGE}".encode()).hexdigest()[:12]
    return socket_dir() / f"search-{where}.sock"


def library_path(db_path: Path | None) -> str:
    """The library a search opens, as the client resolves it (the helper must resolve the same)."""
    from mambomeme.library import default_db_path

    return str(Path(db_path or default_db_path()).resolve())


# ─────────────────────────────────────────────────────────────────────────────
# Messages: a 4-byte length, then JSON (bytes travel as latin-1 text)
# ─────────────────────────────────────────────────────────────────────────────


def send(sock: socket.socket, message: dict[str, Any]) -> None:
    data = json.dumps(message).encode()
    sock.sendall(struct.pack(">I", len(data)) + data)


def receive(sock: socket.socket) -> dict[str, Any]:
    def exactly(n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("the other side closed the connection")
            buf += chunk
        return bytes(buf)

    (n,) = struct.unpack(">I", exactly(4))
    return json.loads(exactly(n))


# ─────────────────────────────────────────────────────────────────────────────
# The client
# ─────────────────────────────────────────────────────────────────────────────


def search_args(ctx: Any) -> list[str]:
    """`mambo search`'s command line for one query, from what click parsed (every option, so that
    the helper parses the same search again); the query's words as one, after `--`."""
    args = ["--db", str(ctx.obj["db_path"])] if ctx.obj.get("db_path") is not None else []
    args.append("search")
    for param in ctx.command.params:
        value = ctx.params.get(param.name)
        if param.param_type_name != "option" or value is None:
            continue
        if param.is_flag:
            args += [param.opts[0]] if value else []
        else:
            args += [param.opts[0], str(value)]
    return [*args, "--", " ".join(ctx.params["words"])]


def client_request(args: list[str]) -> dict[str, Any]:
    """What the helper needs to run `mambo ARGS` as this process would."""
    return {
        "stamp": code_stamp(),
        "args": args,
        "cwd": os.getcwd(),
        "env": dict(os.environ),
        "tty": [s.isatty() for s in (sys.stdin, sys.stdout, sys.stderr)],
        "encodings": [[s.encoding, s.errors] for s in (sys.stdout, sys.stderr)],
    }


def answered_early(argv: list[str]) -> int | None:
    """Before the command line is imported (mambo.py's first step): a running helper answers
    `mambo ARGV` if it is a one-shot search; its output written, its exit status returned. None
    (nothing written) when no helper runs or it refuses: the command line runs as usual, and a
    search then asks again (`forwarded`), starting a helper if needed."""
    if not enabled() or "search" not in argv or not socket_path().exists():
        return None
    # As cli.main does: a closed pipe ends quietly (`mambo search x | head`), Ctrl-C says so.
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    try:
        return delivered(ask(client_request(list(argv))))
    except (OSError, ValueError, AttributeError, ConnectionError):  # a dead or stuck helper
        return None
    except KeyboardInterrupt:
        sys.stderr.write("mambo: interrupted\n")
        return 130


def forwarded(ctx: Any) -> int | None:
    """Answer a one-shot search (`mambo search`'s click context, with a QUERY) through the helper:
    write its output and return its exit status, or None (nothing written) when there is no helper
    to answer; then one is started for the next call, and the caller answers this one."""
    if not enabled():
        return None
    try:
        request = client_request(search_args(ctx)) | {"library": library_path(ctx.obj.get("db_path"))}
    except (OSError, ValueError, AttributeError, KeyError, TypeError):
        return None
    try:
        code = delivered(ask(request))
    except (OSError, ValueError, ConnectionError):  # nobody listening, a dead or stuck helper
        code = None
    if code is None:
        start_helper(request)
    return code


def delivered(reply: dict[str, Any] | None) -> int | None:
    """A helper's answer written to this process's streams: its exit status; None when it refused."""
    try:
        code = int(reply["code"])  # type: ignore[index]
        chunks = [(int(fd), text.encode("latin-1")) for fd, text in reply["chunks"]]  # type: ignore[index]
        streams = (sys.stdout.buffer, sys.stderr.buffer)
    except (TypeError, KeyError, ValueError, AttributeError):  # refused, or no answer
        return None
    for fd, data in chunks:
        streams[fd].write(data)
        streams[fd].flush()
    return code


def private_folder(folder: Path) -> bool:
    """The socket's folder is this user's alone (not a look-alike another user made in /tmp)."""
    st = folder.lstat()
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o077


def ask(request: dict[str, Any]) -> dict[str, Any] | None:
    path = socket_path()
    if not path.exists() or not private_folder(path.parent):
        return None
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(CONNECT_SECONDS)
        sock.connect(str(path))
        pid, uid = peer(sock)
        if uid != os.getuid():
            return None
        sock.settimeout(ANSWER_SECONDS)
        send(sock, request)
        try:
            return receive(sock)
        except TimeoutError:  # a stuck helper: gone, so that the next one can take its place
            os.kill(pid, signal.SIGKILL)
            raise


def start_helper(first: dict[str, Any]) -> None:
    """Start a helper, detached from this terminal and session; it writes nothing to the user's
    terminal. One that finds another already serving (its lock held) exits at once. It is given
    this search (in its environment, which only its user can read) to run once as a warm-up."""
    import subprocess

    env = dict(os.environ)
    env[FIRST_ENV] = json.dumps(first)
    env["PYTHONPATH"] = os.pathsep.join(x for x in (str(PACKAGE.parent), env.get("PYTHONPATH")) if x)
    with contextlib.suppress(OSError):
        subprocess.Popen(
            # Imported, not run as __main__: one copy of this module, which knows it is serving.
            [sys.executable, "-c", "from mambomeme.search_helper import main; main()"],
            cwd="/",
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
        )


# ─────────────────────────────────────────────────────────────────────────────
# The helper
# ─────────────────────────────────────────────────────────────────────────────


class _Recorder(io.BufferedIOBase):
    """One of the client's streams: what is written goes to a shared list, tagged with the stream."""

    def __init__(self, fd: int, chunks: list[tuple[int, bytes]], tty: bool) -> None:
        self.fd, self.chunks, self.tty = fd, chunks, tty

    def writable(self) -> bool:
        return True

    def write(self, b: Any) -> int:
        self.chunks.append((self.fd, bytes(b)))
        return len(b)

    def isatty(self) -> bool:
        return self.tty


class _Stdin(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__("")
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


@contextlib.contextmanager
def client_context(request: dict[str, Any], chunks: list[tuple[int, bytes]]) -> Iterator[None]:
    """The client's environment, working folder and streams for the length of one request."""
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    saved_streams = sys.stdin, sys.stdout, sys.stderr
    try:
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        tty_in, tty_out, tty_err = request["tty"]
        (out_enc, out_err), (err_enc, err_err) = request["encodings"]
        sys.stdin = _Stdin(tty_in)
        # Unbuffered: each write is one chunk, so stdout and stderr keep the order they were written in.
        sys.stdout = io.TextIOWrapper(
            _Recorder(0, chunks, tty_out), encoding=out_enc, errors=out_err, write_through=True
        )
        sys.stderr = io.TextIOWrapper(
            _Recorder(1, chunks, tty_err), encoding=err_enc, errors=err_err, write_through=True
        )
        yield
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        os.environ.clear()
        os.environ.update(saved_env)
        os.chdir(saved_cwd)


def answer(request: dict[str, Any], run: Callable[[list[str]], None]) -> dict[str, Any]:
    """Run one search as the client would; a failure of the helper's own is a refusal (the client
    then runs the search itself, with the same result and messages it always had)."""
    chunks: list[tuple[int, bytes]] = []
    code: int | None = None
    with client_context(request, chunks):
        # A parsed search names the client's library; a raw command line (answered_early) is parsed
        # here, with the client's environment and folder, as the client would.
        if "library" in request:
            if library_path(_db_arg(request["args"])) != request["library"]:
                return {"refused": "another library"}
        elif not one_shot_search(request["args"]):
            return {"refused": "not a one-shot search"}
        chunks.clear()
        try:
            run(request["args"])
            code = 0
        except SystemExit as e:  # click's standalone mode ends every command so
            if not isinstance(e.code, int | None):
                return {"refused": "unexpected exit"}
            code = e.code or 0
        except Exception:  # noqa: BLE001 - the client reproduces it in-process, traceback and all
            return {"refused": "failed"}
        finally:
            with contextlib.suppress(Exception):
                sys.stdout.flush()
                sys.stderr.flush()
    return {"code": code, "chunks": [[fd, b.decode("latin-1")] for fd, b in chunks if b]}


def _db_arg(args: list[str]) -> Path | None:
    return Path(args[1]) if args[:1] == ["--db"] else None


def peer(conn: socket.socket) -> tuple[int, int]:
    """The process at the other end of the socket, and its user (SO_PEERCRED): pid, uid."""
    pid, uid, _gid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
    return pid, uid


def serve(run: Callable[[list[str]], None]) -> None:
    """Serve searches until IDLE_SECONDS pass without one, or SIGTERM; one helper per socket (a
    lock beside it), and a socket file nobody listens on is replaced."""
    global _serving
    _serving = True
    folder = socket_dir()
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    if folder.lstat().st_uid != os.getuid() or not folder.is_dir() or folder.is_symlink():
        return  # someone else's folder (a shared temp folder): no helper
    os.chmod(folder, 0o700)
    path = socket_path()
    lock = open(path.with_suffix(".lock"), "w")  # noqa: SIM115 - held for the helper's life
    if not take(lock):
        return  # another helper serves this socket
    stamp = code_stamp()
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    os.chmod(path, 0o600)
    server.listen(16)
    log("start")
    signal.signal(signal.SIGTERM, _stop)
    try:
        preload(run)
        log("ready")
        server.settimeout(IDLE_SECONDS)
        while True:
            try:
                conn, _ = server.accept()
            except TimeoutError:
                return
            with conn:
                if not serve_one(conn, stamp, run):
                    return
    except Stop:
        pass
    finally:
        with contextlib.suppress(OSError):  # the lock is still held: the socket file is this helper's
            path.unlink()
        server.close()


class Stop(BaseException):
    """SIGTERM: raised past the request's own handlers (a search's SystemExit is its exit status)."""


def _stop(*_: Any) -> None:
    raise Stop


def take(lock: Any) -> bool:
    """The helper's lock; a helper that is replacing a stale one waits a moment for it to go."""
    for _ in range(LOCK_TRIES):
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except OSError:
            time.sleep(0.1)
    return False


def serve_one(conn: socket.socket, stamp: str, run: Callable[[list[str]], None]) -> bool:
    """Answer one request; False when this helper should stop (its code changed on disk)."""
    try:
        conn.settimeout(ANSWER_SECONDS)
        if peer(conn)[1] != os.getuid():
            return True
        request = receive(conn)
        if request.get("stamp") != stamp:
            send(conn, {"refused": "stale"})
            return False
        reply = answer(request, run)
        if "code" in reply:
            log("answer")
        send(conn, reply)
    except (OSError, ValueError, ConnectionError, KeyError, TypeError):
        pass
    return True


def log(what: str) -> None:
    if os.environ.get(LOG_ENV):
        with open(os.environ[LOG_ENV], "a") as f:
            f.write(f"{what} {os.getpid()}\n")


def wait_for_starter() -> None:
    """Until the search that started this helper has ended (or STARTER_SECONDS): on two cores,
    starting beside it would slow that first search down."""
    starter, end = os.getppid(), time.monotonic() + STARTER_SECONDS
    while os.getppid() == starter and time.monotonic() < end:
        time.sleep(0.02)


def preload(run: Callable[[list[str]], None]) -> None:
    """Load what a search needs before the next request, by running the search that started this
    helper once more (its output dropped): the model if it uses one, the library's vectors, the
    modules."""
    with contextlib.suppress(Exception):
        answer(json.loads(os.environ.pop(FIRST_ENV)), run)


def command_line() -> Any:
    # The helper serves the command line it belongs to: it runs `mambo search` itself, found by
    # name when it runs (the command line calls this module, never the reverse at import).
    import importlib

    return importlib.import_module("mambomeme.cli").cli


def one_shot_search(args: list[str]) -> bool:
    """`mambo ARGS` is a search with a QUERY, parsed as the command line parses it; anything else
    (another command, the screen, piped queries, a usage error, --help) is the client's own."""
    cli = command_line()
    try:
        with cli.make_context("mambo", list(args)) as ctx:
            # click 8 keeps the command's name apart (_protected_args, as its Group.invoke reads it)
            words = [*getattr(ctx, "_protected_args", []), *ctx.args]
            name, command, rest = cli.resolve_command(ctx, words)
            if command is None or command.name != "search":
                return False
            with command.make_context(name, rest, parent=ctx) as sub:
                return bool(sub.params.get("words"))
    except (Exception, SystemExit):  # noqa: BLE001 - click's usage errors, --help's exit
        return False


def main() -> None:
    def run(args: list[str]) -> None:
        command_line().main(args=args, prog_name="mambo", standalone_mode=True)

    with contextlib.suppress(KeyboardInterrupt):
        wait_for_starter()
        serve(run)
