"""The vocabulary: the words a search knows (typo correction, "no match") are those of the memes
it may show. Made again after every change of content or of what may be shown (ingest, prune,
labels, safety and privacy decisions); `mambo check` and `mambo add` tell when it is stale."""

from __future__ import annotations

from mambomeme.library import DB


def refresh_vocabulary(db: DB) -> None:
    """Make the vocabulary again from the word index, less the words of hidden memes (call inside
    db.write())."""
    db.q("index_hidden_words")
    db.q("rewrite_vocabulary")


def vocabulary_is_stale(db: DB) -> bool:
    """Whether the vocabulary differs from what refresh_vocabulary would make now: a write that
    changed the words (a label, a template, a prune) was interrupted before the vocabulary's own
    transaction. One pass over the word index (as the refresh itself)."""
    db.q("index_hidden_words")
    return bool(db.q1("vocabulary_differences")[0])
