"""What a run counts: files by outcome, and the CPU time each stage spent (`mambo bench ingest`)."""

from __future__ import annotations

import collections
import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass


@dataclass
class IngestStats:
    added: int = 0
    updated: int = 0
    duplicates: int = 0
    skipped: int = 0
    errors: int = 0
    unread: int = 0  # files or folders skipped: not indexed at all (errors also counts warnings)
    seen: int = 0


class StageClock:
    """CPU milliseconds by stage over the run (workers' and this process's), for `mambo bench ingest`."""

    def __init__(self) -> None:
        self.cpu_ms: collections.Counter[str] = collections.Counter()
        self._inner = 0.0

    @contextlib.contextmanager
    def __call__(self, stage: str, *, children: bool = False) -> Iterator[None]:
        """Adds this process's CPU time inside the block to cpu_ms[stage] (nested blocks count once,
        in the inner stage); children=True adds what child processes that ended in it spent (the
        embedding model's one-time export)."""
        import resource

        start, kids = time.process_time(), resource.getrusage(resource.RUSAGE_CHILDREN)
        outer = self._inner
        self._inner = 0.0
        try:
            yield
        finally:
            spent = (time.process_time() - start) * 1000
            self.cpu_ms[stage] += spent - self._inner
            self._inner = outer + spent
            if children:
                now = resource.getrusage(resource.RUSAGE_CHILDREN)
                self.cpu_ms[stage] += (now.ru_utime - kids.ru_utime + now.ru_stime - kids.ru_stime) * 1000
