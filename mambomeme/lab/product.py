"""The one door from benchdata's scripts into the product: every product name a script uses, and only
those. The scripts import from the lab (this module, bench, calibrate, evaluation, nomatch, scoring),
never from a product module, so a product module that is renamed or moved is mended here once
(tests/test_layout.py holds both rules)."""

from __future__ import annotations

from mambomeme import query_plan
from mambomeme.by_image import REASONS, SIMILAR_CAPTION_MIN, probe_file, rank
from mambomeme.dense_memory import VectorMatrix
from mambomeme.embed import (
    EMBED_DIM,
    EMBED_MODEL_NAME,
    WEIGHTS_SHA256,
    Embedder,
    cache_dir,
    embed_text,
    export_atomically,
    field_texts,
    get_embedder,
    onnx_session,
)
from mambomeme.images import assign_groups, read_image
from mambomeme.ingest import item_look
from mambomeme.library import DB, ROOT
from mambomeme.ocr import OCR
from mambomeme.output import clean_line
from mambomeme.query_plan import (
    ARTICLES,
    FILLER_WORDS,
    REAL_WORD_MIN_COUNT,
    STOPWORDS,
    coverage,
    english_frequencies,
    holds_word,
    idf_weights,
    item_words,
    normalise_query,
    plan_query,
)
from mambomeme.safety_meaning import WEIGHTS_FILE, meaning_model, prototype_features
from mambomeme.safety_text import RULES_VERSION, detect_safety
from mambomeme.search import (
    DEFAULT_SYSTEMS,
    Result,
    Searcher,
    evidence_features,
    evidence_score,
    plan_for,
    searcher_for,
    sync_systems,
    system_config,
)
from mambomeme.sidecars import Metadata
from mambomeme.state import file_params, restate
from mambomeme.templates import known_text
from mambomeme.tui import decode_preview
from mambomeme.tui_images import CELL_PX, fit, png, sixel
from mambomeme.upkeep import forget_files
from mambomeme.words import GLUED_MIN_LENGTH, LIBRARY_WORD_MIN_DOCS, PIECE_MIN_COUNT, split_glued

__all__ = [
    # the library file and the checkout whose code runs
    "DB",
    "ROOT",
    "clean_line",
    "Metadata",
    "file_params",
    "restate",
    "forget_files",
    # embedding
    "EMBED_DIM",
    "EMBED_MODEL_NAME",
    "WEIGHTS_SHA256",
    "Embedder",
    "cache_dir",
    "export_atomically",
    "embed_text",
    "field_texts",
    "get_embedder",
    "onnx_session",
    "VectorMatrix",
    # reading a query
    "ARTICLES",
    "FILLER_WORDS",
    "REAL_WORD_MIN_COUNT",
    "STOPWORDS",
    "coverage",
    "english_frequencies",
    "holds_word",
    "idf_weights",
    "item_words",
    "normalise_query",
    "plan_query",
    "query_plan",  # the module itself: experiments patch one of its rules to measure another
    # words run together
    "GLUED_MIN_LENGTH",
    "LIBRARY_WORD_MIN_DOCS",
    "PIECE_MIN_COUNT",
    "split_glued",
    # search
    "DEFAULT_SYSTEMS",
    "Result",
    "Searcher",
    "evidence_features",
    "evidence_score",
    "plan_for",
    "searcher_for",
    "sync_systems",
    "system_config",
    # pictures, OCR, groups and templates
    "OCR",
    "ocr_text",
    "read_image",
    "assign_groups",
    "item_look",
    "known_text",
    # the search screen's pictures
    "decode_preview",
    "CELL_PX",
    "fit",
    "png",
    "sixel",
    # search by image
    "REASONS",
    "SIMILAR_CAPTION_MIN",
    "probe_file",
    "rank",
    # safety signals
    "RULES_VERSION",
    "detect_safety",
    "WEIGHTS_FILE",
    "meaning_model",
    "prototype_features",
]


def ocr_text(lines: list) -> str:
    """The text OCR keeps of recognised lines ([box, (text, score)] each): boxes joined into lines
    in reading order, as `OCR.read` returns it. The OCR experiments rebuild it from their own
    recogniser's lines."""
    return OCR._text(lines)
