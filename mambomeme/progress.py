"""A progress line on stderr for long runs (`mambo add`, re-recognition, embedding again)."""

from __future__ import annotations

import sys
import time


class Progress:
    """count, rate and time left on stderr: redrawn in place on a terminal, a line every few
    seconds otherwise (logs, CI)."""

    def __init__(self, total: int, *, enabled: bool = True):
        self.total = total
        self.start = time.monotonic()
        self.last = 0.0
        self.tty = sys.stderr.isatty()
        self.enabled = enabled

    def update(self, done: int, note: str = "", *, final: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if not final and now - self.last < (0.2 if self.tty else 5.0):
            return
        self.last = now
        elapsed = max(now - self.start, 1e-6)
        rate = done / elapsed
        left = (self.total - done) / rate if rate > 0 else 0
        width = 24
        fill = int(width * done / self.total) if self.total else width
        bar = "#" * fill + "-" * (width - fill)
        # Nothing done yet: no rate and no time left to state (not "0.0/s  left 0s").
        pace = (
            f"{rate:.1f}/s  " + ("done in " + _fmt_secs(elapsed) if final else "left " + _fmt_secs(left))
            if done or final
            else ""
        )
        msg = "  ".join(x for x in (f"[{bar}] {done}/{self.total}", pace, note) if x)
        if self.tty:
            sys.stderr.write("\r\x1b[2K" + msg[:200] + ("\n" if final else ""))
        else:
            sys.stderr.write(msg + "\n")
        sys.stderr.flush()


def _fmt_secs(s: float) -> str:
    s = int(round(s))
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"
