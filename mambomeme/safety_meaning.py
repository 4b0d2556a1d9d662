"""The caption's meaning as a safety signal for policy mambo-safety-v1: a linear model over the
caption's vector (the one the library already stores, from the dense model of mambomeme/embed.py)
that says how likely the caption is one of the policy's unsafe kinds (violence wished on a group,
dehumanising a group, graphic gore, a private person's data) rather than harmless.

The text rules (safety_text.py) prove a harmful relation between words they list; a caption that
says the same in other words ("those people should be thrown off a bridge") escapes them. This
signal needs no listed word. Beside the vector itself the model reads, for each class, the
caption's cosine to the nearest of that class's prototype sentences (written from the policy's
definitions; their vectors ship in the file), which carries a kind across phrasings the training
captions never used. Its weights and bars (safety_meaning.json) are made on development
material by benchdata/train_caption_meaning.py; no model is loaded to apply them: the caption's
stored vector is enough, so `mambo safety recheck` runs on any embedded library."""

from __future__ import annotations

import base64
import functools
import hashlib
import json
from pathlib import Path
from typing import Any, NamedTuple

WEIGHTS_FILE = Path(__file__).with_name("safety_meaning.json")


class Meaning(NamedTuple):
    safety: str  # safe, sensitive, unsafe or critical
    rule: str  # the unsafe kind the model finds most likely
    score: float  # 1 - P(harmless)


class MeaningModel:
    """The trained weights, their bars and the engine identity (a digest of the file)."""

    def __init__(self, path: Path = WEIGHTS_FILE) -> None:
        import numpy as np

        raw = path.read_bytes()
        data = json.loads(raw)
        self.sha256 = hashlib.sha256(raw).hexdigest()
        self.signal = str(data["signal"])
        self.model = data["model"]
        self.classes = list(data["classes"])
        self.weights = np.array(data["weights"], dtype=np.float32)
        self.bias = np.array(data["bias"], dtype=np.float32)
        dim = int(data["model"]["dimensions"])
        self.prototypes = [
            np.frombuffer(base64.b64decode(data["prototypes"][c]), dtype=np.float32).reshape(-1, dim)
            for c in self.classes
        ]
        # The bars, chosen on development material with out-of-fold scores grouped by phrase: `unsafe`
        # (withheld) is the lowest with false hides <= 1 % in each harmless set, `sensitive` (marked,
        # shown) keeps marks <= 5 %; their values and the folds are in the file's "training" and
        # docs/decisions.md#caption-meaning.
        self.unsafe_bar = float(data["bars"]["unsafe"])
        self.sensitive_bar = float(data["bars"]["sensitive"])

    def identity(self) -> dict[str, str]:
        name, _, version = self.signal.rpartition("-")
        return {"name": name, "version": version, "weights_sha256": self.sha256}

    def features(self, vecs: Any) -> Any:
        """The model's input for rows of caption vectors (prototype_features)."""
        return prototype_features(vecs, self.prototypes)

    def judge(self, vecs: Any) -> list[Meaning]:
        """One Meaning per row of caption vectors (unit vectors of the model named in the file)."""
        import numpy as np

        if len(vecs) == 0:
            return []
        logits = self.features(vecs) @ self.weights.T + self.bias
        logits -= logits.max(axis=1, keepdims=True)
        p = np.exp(logits)
        p /= p.sum(axis=1, keepdims=True)
        harmless = self.classes.index("harmless")
        out = []
        for row in p:
            score = float(1.0 - row[harmless])
            kinds = [(row[i], c) for i, c in enumerate(self.classes) if i != harmless]
            kind = max(kinds)[1]
            if score >= self.unsafe_bar:
                safety = "critical" if kind == "personal-data" else "unsafe"
            else:
                safety = "sensitive" if score >= self.sensitive_bar else "safe"
            out.append(Meaning(safety, kind, round(score, 4)))
        return out


def prototype_features(vecs: Any, prototypes: list[Any]) -> Any:
    """Each caption vector followed by its best cosine to each class's prototype sentences (one
    matrix a class, in the model's class order; vectors are unit length, so a dot product is the
    cosine). The trainer (benchdata/train_caption_meaning.py) builds its input with this too."""
    import numpy as np

    v = np.asarray(vecs, dtype=np.float32)
    return np.hstack([v, np.stack([(v @ p.T).max(axis=1) for p in prototypes], axis=1)])


@functools.cache
def meaning_model() -> MeaningModel:
    return MeaningModel()
