"""Analysing new images: decode, hash, preview, OCR, the picture signal and template recognition of
one image, in worker processes (one single-threaded OCR engine per core) when there is enough work."""

from __future__ import annotations

import functools
import os
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mambomeme.images import BadInput, ImageFacts, read_image
from mambomeme.ocr import OCR, get_ocr
from mambomeme.output import clean_line
from mambomeme.safety_picture import PictureScorer, get_picture
from mambomeme.templates import Recognition, TemplateIndex


@dataclass
class Analysis:
    """What ingest learns from one image's pixels."""

    facts: ImageFacts
    ocr_text: str
    boxes: list[list[int]]
    template: Recognition | None
    recognise_ms: float  # wall clock
    recognise_cpu_ms: float  # this process's CPU time (a worker is single-threaded)
    picture_score: float | None = None  # Open-NSFW's P(explicit) of the picture (mambomeme/safety_picture.py)
    cpu_ms: dict[str, float] = field(default_factory=dict)  # CPU by stage, for `mambo bench ingest`


def analyse(
    data: bytes, name: str, ocr: OCR, templates: TemplateIndex | None, picture: PictureScorer | None = None
) -> Analysis:
    """Decode, hash, preview, OCR, score the picture and recognise the template of one image; the
    pixels are dropped before returning."""
    facts = _stage("decoder", read_image, data, name)
    c0 = time.process_time()
    explicit = _stage("picture signal", picture.score, facts.rgb) if picture is not None else None
    cpu_ms = facts.cpu_ms | {"picture safety": (time.process_time() - c0) * 1000}
    ocr_before = dict(getattr(ocr, "cpu_ms", {}))
    text, boxes, box_texts = _stage("OCR", ocr.read_lines, facts.rgb)
    cpu_ms |= {k: v - ocr_before[k] for k, v in getattr(ocr, "cpu_ms", {}).items()}
    t0, c0 = time.perf_counter(), time.process_time()
    words = list(zip(boxes, box_texts, strict=True))
    found = None
    if templates is not None:
        found = _stage("template recognition", templates.recognise, facts.rgb, boxes, words)
    ms, cpu = (time.perf_counter() - t0) * 1000, (time.process_time() - c0) * 1000
    cpu_ms["template recognition"] = cpu
    facts.rgb = None
    return Analysis(facts, text, boxes, found, ms, cpu, explicit, cpu_ms)


def _stage(stage: str, fn: Callable[..., Any], *args: Any) -> Any:
    """One step of analysing one file. Whatever it raises (an OpenCV error, a decoder's
    ValueError, MemoryError) is that file's ingest error, never the end of the run."""
    try:
        return fn(*args)
    except BadInput:
        raise
    except Exception as e:  # noqa: BLE001 - any failure on one file is that file's error
        raise BadInput("analysis", f"{stage} failed on it ({type(e).__name__}: {clean_line(e)[:200]})") from None


_WORKER_OCR: OCR | None = None
_WORKER_TEMPLATES: TemplateIndex | None = None
_WORKER_PICTURE: PictureScorer | None = None
_WORKER_START_MS = 0.0  # the worker's start-up CPU, reported with its first result


def _worker_init(templates: tuple[list, list] | None = None) -> None:
    """An ingest worker process: Ctrl-C is the parent's to handle (no traceback per worker)."""
    global _WORKER_OCR, _WORKER_TEMPLATES, _WORKER_PICTURE, _WORKER_START_MS
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    parent = os.getppid()

    def orphan_watch() -> None:
        # If the ingest is killed (kill -9) nobody would stop this worker: leave with it.
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(0)

    threading.Thread(target=orphan_watch, daemon=True).start()
    _WORKER_OCR = OCR(threads=1)
    _WORKER_PICTURE = PictureScorer(threads=1)
    import cv2

    cv2.setNumThreads(1)  # one worker per core already
    _WORKER_TEMPLATES = TemplateIndex(*templates) if templates else None
    _WORKER_START_MS = time.process_time() * 1000


def _worker_analyse(data: bytes, name: str) -> Analysis | BadInput:
    global _WORKER_START_MS
    assert _WORKER_OCR is not None
    try:
        out = analyse(data, name, _WORKER_OCR, _WORKER_TEMPLATES, _WORKER_PICTURE)
        out.cpu_ms["workers' start"], _WORKER_START_MS = _WORKER_START_MS, 0.0
        return out
    except BadInput as e:
        return e
    except Exception as e:  # noqa: BLE001 - one file's failure is one ingest error
        return BadInput("analysis", f"analysis failed on it ({type(e).__name__}: {clean_line(e)[:200]})")


class Analyser:
    """Analysis of a run's new images: in this process, or in worker processes started on the
    first batch with enough work to pay their ~1 s start, kept for the rest of the run."""

    def __init__(self, workers: int):
        self.workers = workers
        self.templates: TemplateIndex | None = None
        self.pool: Any = None
        self._pool_broken = False

    def submit(self, jobs: list[tuple[bytes, str]]) -> Callable[[], list[Analysis | BadInput]]:
        """Start analysing (data, file name) jobs; the returned function waits for the results.
        With worker processes this runs while the previous batch is embedded and written."""
        if self.pool is None and self.workers > 1 and len(jobs) >= 4:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            # spawn, not fork: forking a process that has imported torch can deadlock its threads.
            self.pool = ProcessPoolExecutor(
                self.workers,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_worker_init,
                initargs=(self.templates.payload if self.templates else None,),
            )
        if self.pool is not None:
            futures = [self.pool.submit(_worker_analyse, data, name) for data, name in jobs]
            return functools.partial(self._collect, futures)
        return functools.partial(self._in_process, jobs)

    def _collect(self, futures: list[Any]) -> list[Analysis | BadInput]:
        from concurrent.futures.process import BrokenProcessPool

        out: list[Analysis | BadInput] = []
        for f in futures:
            try:
                out.append(f.result())
            except BrokenProcessPool:
                # A worker killed by the kernel (out of memory) or crashed in native code:
                # its files are errors, and the next batch starts new workers.
                out.append(
                    BadInput("analysis", "the worker analysing it stopped (out of memory or a crash in a decoder)")
                )
                self._pool_broken = True
            except Exception as e:  # noqa: BLE001 - one file's failure is one ingest error
                out.append(BadInput("analysis", f"analysis failed on it ({type(e).__name__})"))
        if self._pool_broken and self.pool is not None:
            self.pool.shutdown(wait=False, cancel_futures=True)
            self.pool, self._pool_broken = None, False
        return out

    def _in_process(self, jobs: list[tuple[bytes, str]]) -> list[Analysis | BadInput]:
        out: list[Analysis | BadInput] = []
        for data, name in jobs:
            try:
                out.append(analyse(data, name, get_ocr(), self.templates, get_picture()))
            except BadInput as e:
                out.append(e)
            except Exception as e:  # noqa: BLE001 - one file's failure is one ingest error
                out.append(BadInput("analysis", f"analysis failed on it ({type(e).__name__}: {clean_line(e)[:200]})"))
        return out

    def close(self) -> None:
        """Stop the worker processes (the run is over, or interrupted)."""
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None
