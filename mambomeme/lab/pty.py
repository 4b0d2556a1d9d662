"""The one PTY harness: the full-screen search started as its own process in the declared 80x24
PTY (TERM=xterm-256color, pexpect) and driven as a person does: type a query, press the submit key
(Ctrl-S: search now without choosing; Enter would choose and quit), wait for that search's status
line (drawn after the whole list). `mambo score`, `mambo bench tui`,
`mambo bench calibrate` and `mambo bench cold` measure through it."""

from __future__ import annotations

import os
import random
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from mambomeme.lab.bench import pct
from mambomeme.library import ROOT
from mambomeme.search import DEFAULT_SYSTEM

ENV = {"TERM": "xterm-256color", "BLESSED_QUERY_TIMEOUT_SECONDS": "0", "COLUMNS": "80", "LINES": "24"}


def tui_argv(db_path: Path | str, system: str, *extra: str) -> list[str]:
    """How to start the full-screen search as its own process."""
    return [sys.executable, str(ROOT / "mambo.py"), "--db", str(db_path), "search", "--system", system, *extra]


def time_to_model_ready(db_path: Path | str, system: str = DEFAULT_SYSTEM) -> float:
    """Seconds from launching the full-screen search to its status line saying "model ready"."""
    t0 = time.perf_counter()
    app = MeasuredTUI(db_path, system, wait_ready=False, ready="model ready")
    ready = time.perf_counter() - t0
    app.close()
    return ready


class MeasuredTUI:
    """One full-screen search in the PTY. Started with --wait-ready (by default), measuring begins
    once the model is ready (`ready_s`: seconds from launch)."""

    status_re = re.compile(r"(no match|\d+\+? results?) · ([\d.]+) ms[^\n]*?search #(\d+) ")

    def __init__(
        self,
        db_path: Path | str,
        system: str,
        *,
        wait_ready: bool = True,
        ready: str | list[str] = ("model ready", "lexical system"),
    ) -> None:
        import pexpect

        argv = tui_argv(db_path, system, *(["--wait-ready"] if wait_ready else []))
        self.child = pexpect.spawn(
            argv[0], argv[1:], env={**os.environ, **ENV}, dimensions=(24, 80), encoding="utf-8", timeout=120
        )
        self.child.delaybeforesend = None
        self.seq = 0
        t_start = time.perf_counter()
        self.child.expect(list(ready) if not isinstance(ready, str) else ready, timeout=180)
        self.ready_s = time.perf_counter() - t_start

    def submit(
        self, q: str, enter_after_s: float = 0.0, timeout_ms: float | None = None
    ) -> tuple[float, float | None, str | None, str | None]:
        """(submit-to-render ms, the search time the app reports, "no match" or "N results", error).
        The submit key (Ctrl-S) is sent `enter_after_s` after the query line shows the text (0: a
        paste and the submit at once). A search not drawn within `timeout_ms` is charged `timeout_ms`, with an error."""
        import pexpect

        child = self.child
        child.send("\x15")  # Ctrl-U: back to the query line, emptied
        child.send(q)
        # Wait until the query line shows the typed text, so the submit is its own keypress.
        child.expect_exact(q[-12:], timeout=30)
        if enter_after_s:
            time.sleep(enter_after_s)
        self.seq += 1
        t0 = time.perf_counter()
        child.send("\x13")  # Ctrl-S: search now, without choosing
        deadline = t0 + (timeout_ms / 1000 if timeout_ms is not None else 30)
        while True:
            try:
                child.expect(self.status_re, timeout=max(0.001, deadline - time.perf_counter()))
            except pexpect.TIMEOUT:
                if timeout_ms is None:
                    raise
                # Resynchronise before the next search: wait (uncharged) for this one's status.
                child.expect(re.compile(rf"search #{self.seq} "), timeout=120)
                return timeout_ms, None, None, f"timeout after {timeout_ms:g} ms"
            if int(child.match.group(3)) == self.seq:
                break
        ms = (time.perf_counter() - t0) * 1000
        if timeout_ms is not None and ms > timeout_ms:
            return timeout_ms, float(child.match.group(2)), child.match.group(1), f"timeout after {timeout_ms:g} ms"
        return ms, float(child.match.group(2)), child.match.group(1), None

    def close(self) -> bool:
        """Quit with Esc; whether the terminal was restored (alternate screen left, cursor shown)."""
        import pexpect

        restored = False
        try:
            if self.child.isalive():
                self.child.send("\x1b")
                self.child.expect(pexpect.EOF, timeout=30)
                tail = self.child.before or ""
                restored = "\x1b[?1049l" in tail and "\x1b[?25h" in tail
        finally:
            if self.child.isalive():
                self.child.terminate(force=True)
        return restored


def measure_latencies(
    db_path: Path | str,
    queries: list[str],
    systems: list[str],
    n: int = 1000,
    warmups: int = 20,
    seed: int = 0,
    block: int = 50,
    enter_after_s: float = 0.0,
) -> dict[str, dict[str, Any]]:
    """Submit-to-render of several systems, for ratios that hold on a busy machine: one app per
    system, all started before measuring, each given the same queries in the same order, taking
    turns every `block` searches so that every system sees the same load."""
    rng = random.Random(seed)
    order, q = [], ""
    for _ in range(warmups + n):
        # Never the same query twice in a row: its query line would not change, so there
        # would be nothing to wait for before sending the submit key.
        q = rng.choice([x for x in queries if x != q] or queries)
        order.append(q)
    apps: dict[str, MeasuredTUI] = {}
    got: dict[str, list[tuple[float, float | None, str | None, str | None]]] = {s: [] for s in systems}
    try:
        for system in systems:
            apps[system] = MeasuredTUI(db_path, system)
        for start in range(0, len(order), block):
            for system in systems:
                got[system] += [apps[system].submit(x, enter_after_s) for x in order[start : start + block]]
    finally:
        for app in apps.values():
            app.close()
    out = {}
    for system in systems:
        measured = got[system][warmups:]
        times, app_ms = [m[0] for m in measured], [m[1] for m in measured if m[1] is not None]
        out[system] = {
            "n": len(times),
            "warmups": warmups,
            "system": system,
            "seed": seed,
            "queries": len(queries),
            "enter_after_ms": round(enter_after_s * 1000),
            "startup_to_model_ready_s": round(apps[system].ready_s, 2),
            "submit_to_render_ms": {
                "p50": pct(times, 50),
                "p95": pct(times, 95),
                "p99": pct(times, 99),
                "mean": round(statistics.fmean(times), 2),
                "max": round(max(times), 2),
            },
            "app_search_ms": {"p50": pct(app_ms, 50), "p95": pct(app_ms, 95)},
            "no_match_share": round(sum(m[2] == "no match" for m in measured) / max(1, len(measured)), 3),
        }
    return out
