"""`mambo add` as a package, in the steps of a run: walk (the files to ingest and their library
root), analyse (decode, OCR, recognition; in worker processes), write (a batch to the library in one
transaction), groups (near-identical groups), stats (what a run counts) and pipeline (the run:
batches, progress, errors, upkeep).

Callers import from here; the submodules import one another directly.
"""

from mambomeme.ingest.analyse import Analysis, analyse
from mambomeme.ingest.groups import REGROUP_SETTING, item_look, regroup
from mambomeme.ingest.pipeline import INGEST_BATCH, Ingester
from mambomeme.ingest.stats import IngestStats
from mambomeme.ingest.walk import Found, find_root, utf8_path, walk

__all__ = [
    "INGEST_BATCH",
    "REGROUP_SETTING",
    "Analysis",
    "Found",
    "IngestStats",
    "Ingester",
    "analyse",
    "find_root",
    "item_look",
    "regroup",
    "utf8_path",
    "walk",
]
