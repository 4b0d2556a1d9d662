"""Reading a query as people type it: its words (stopwords and the filler people add, "... meme
pic"), aliases and typo corrections from the library's own vocabulary, what each route is given
(QueryPlan), what the query itself says about whether the library can answer it (QueryEvidence:
words the library never saw, words only a correction found, a known template the folder holds none
of), and how much of it an item holds (coverage, full matches)."""

from __future__ import annotations

import dataclasses
import json
import math
import re
import unicodedata
from dataclasses import dataclass
from typing import Any

from mambomeme.embed import word_pieces
from mambomeme.library import DB, get_setting
from mambomeme.output import clean_line, clean_text
from mambomeme.words import could_be_glued, english_frequencies, segment, slang_words, split_glued, substrings

STOPWORDS = frozenset(
    "a an the and or but of to in on at by for with from as is are was were be been am it its this that "
    "these those i me my we our you your he him his she her they them their what which who whom when where "
    "why how do does did not no so just than then there here up out if".split()
)
# Words people add to a request for a meme (grading guide, "Words people add": "... meme", "... pic",
# "funny ..."): they ask for a meme and say nothing about which. They are not content words: they
# neither join the word match, nor count for coverage or the "no match" evidence, nor steer the
# dense query, unless the query holds nothing else. (A caption that says "meme" is no evidence.)
FILLER_WORDS = frozenset(
    "meme memes pic pics picture pictures image images img photo photos template templates gif gifs "
    "jpg jpeg png funny lol lmao".split()
)
# A word of pyspellchecker's English frequency list (bundled, ~160k words) seen this often is a real
# word the user meant: it is never rewritten into another word of the library ("sad" 84,735 is not
# "said", "planet" 75,056 is not "plant", "kidney" 11,805, "elbow" 5,711). Rarer entries, mostly
# names and spellings people type ("jon" 882, "wen" 336, "ur" 1,403), may still be corrected.
REAL_WORD_MIN_COUNT = 2000


def normalise_query(text: str) -> list[str]:
    """Query text -> search tokens. NFKC folds full-width and compatibility forms, casefold
    handles casing (ß -> ss), diacritics are stripped like the FTS5 tokenizer does, and anything
    that is not a letter or digit separates tokens: FTS5 operators, quotes and control characters
    become plain text and can never be a syntax error."""
    text = clean_text(unicodedata.normalize("NFKC", text)).casefold()
    text = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    return re.findall(r"[^\W_]+", text)[:64]


def is_real_word(word: str) -> bool:
    return english_frequencies()[word] >= REAL_WORD_MIN_COUNT


def glued_words(db: DB, words: list[str], docs: dict[str, int]) -> dict[str, list[str]]:
    """The query words that are words run together ("nobodygetsonline"), each with its words
    (words.split_glued, by the library's document counts `docs` and those of the pieces, kept to
    words: "aintnobodygottime" reads "aint nobody got time"). A word two memes hold is matched as
    typed, as the typo correction leaves it: split, the word itself could drop out of the word
    match as a common word, leaving only its pieces."""
    maybe = [t for t in words if could_be_glued(t, docs, library_word_docs=2)]
    if not maybe:
        return {}
    pieces = sorted({p for t in maybe for p in [*segment(t), *substrings(t)]})
    counts = docs | {term: int(n) for term, n in db.q("vocabulary_docs", {"terms": json.dumps(pieces)})}
    slang = slang_words(db)
    return {t: split for t in maybe if (split := split_glued(t, counts, slang, library_word_docs=2, words_only=True))}


@dataclass
class QueryPlan:
    """What one query becomes for each route."""

    text: str
    tokens: list[str]
    expanded: list[str]  # tokens + every alternative's words: the word route's query
    content: list[str]  # the tokens that carry meaning (not stopwords or filler): coverage counts these
    alternatives: dict[str, list[list[str]]]  # token -> other ways to write it (aliases, corrections)
    word_match: str
    trigram_match: str
    dense_text: str = ""  # what the dense route embeds: the expanded words without filler
    unknown: list[str] = dataclasses.field(default_factory=list)  # content words the library cannot match
    corrected: list[str] = dataclasses.field(default_factory=list)  # ... that only a typo correction matched
    absent_templates: list[str] = dataclasses.field(default_factory=list)  # known templates named, none held
    guesses: dict[str, list[str]] = dataclasses.field(default_factory=dict)  # token -> its typo corrections
    # The last word while it is still being typed (the live list): it matches every word it starts
    # ("ca" -> "cat", "car"), in the word route (an FTS5 prefix query) and in coverage.
    prefix: str | None = None
    # A word typed run together -> its words: the query is read as if they had been typed apart.
    glued: dict[str, list[str]] = dataclasses.field(default_factory=dict)

    @property
    def dense_query(self) -> str:
        """The text the dense route encodes (the query itself when it is all filler)."""
        return self.dense_text or self.text

    def aliases(self, token: str) -> list[list[str]]:
        """The token's alternatives that are aliases, sure ways to write it: its typo corrections
        (`guesses`) are the last of its alternatives, and are left out."""
        alts = self.alternatives.get(token, [])
        return alts[: len(alts) - len(self.guesses.get(token, []))]


@dataclass(frozen=True)
class QueryEvidence:
    """What the query itself says about whether the library can answer it (the "no match" rule)."""

    content_words: int
    unknown_share: float  # content words the library has never seen, with no alias or correction
    corrected_share: float = 0.0  # content words the library never saw that a typo correction stands in for
    absent_template: bool = False  # the query names a known template the library holds no meme of
    # The share of the library's memes whose sidecar gave them text besides the caption: a library
    # of bare images (0) and an annotated one have "no match" models of their own (EMPTY_RULES).
    described: float = 1.0

    @staticmethod
    def of(plan: QueryPlan, described: float = 1.0) -> QueryEvidence:
        n = len(plan.content)
        return QueryEvidence(
            n,
            len(plan.unknown) / n if n else 1.0,
            len(plan.corrected) / n if n else 0.0,
            bool(plan.absent_templates),
            described,
        )


def edits1(word: str) -> set[str]:
    """Every string one edit away (deletion, swap, substitution, insertion of a letter or digit)."""
    letters = "abcdefghijklmnopqrstuvwxyz0123456789"
    splits = [(word[:i], word[i:]) for i in range(len(word) + 1)]
    return (
        {a + b[1:] for a, b in splits if b}
        | {a + b[1] + b[0] + b[2:] for a, b in splits if len(b) > 1}
        | {a + c + b[1:] for a, b in splits if b for c in letters}
        | {a + c + b for a, b in splits for c in letters}
    ) - {word}


# Two typos in one word ("wexmore" for "wexmoor") only when nothing is one edit away, for a word English
# does not know, to a word with its first two letters, from 7 letters (at 6, "stonks" and "thanos"
# became "stops" and "than"). Dev v2 hybrid noisy 0.876 -> 0.924 annotated, 0.593 -> 0.642 bare; each
# guard's cost without it: docs/decisions.md#two-edit-typos.
TWO_EDITS_MIN_LENGTH = 7


def corrections(db: DB, word: str, most: int = 2, *, two_edits: bool = True) -> list[str]:
    """Words of the library one edit away (insertion, deletion, substitution or swap, at any
    position: "aight" -> "ight", "imma" -> "ima"), the most common first; failing those, for a long
    word English does not know, words two edits away that start with its first two letters. A word
    seen in only one document (often OCR noise) is a candidate only when no word seen more often is."""
    found = [(int(docs), term) for term, docs in db.q("vocabulary_docs", {"terms": json.dumps(sorted(edits1(word)))})]
    if (
        not found
        and two_edits
        and len(word) >= TWO_EDITS_MIN_LENGTH
        and word[0].isalpha()
        and not english_frequencies()[word]
    ):
        near = db.q(
            "vocabulary_by_prefix",
            {
                "low": word[:2],
                "high": word[0] + chr(ord(word[1]) + 1),
                "shortest": len(word) - 2,
                "longest": len(word) + 2,
            },
        )
        found = [(int(docs), term) for term, docs in near if edit_distance(word, term, 2) <= 2]
    frequent = [f for f in found if f[0] >= 2] or found
    return [term for _docs, term in sorted(frequent, reverse=True)[:most]]


def edit_distance(a: str, b: str, bound: int) -> int:
    """Damerau-Levenshtein distance (optimal string alignment) of a and b, or bound + 1 once it is
    sure to exceed `bound`."""
    if abs(len(a) - len(b)) > bound:
        return bound + 1
    before, row = None, list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            current[j] = min(row[j] + 1, current[j - 1] + 1, row[j - 1] + (ca != cb))
            if before is not None and j > 1 and ca == b[j - 2] and a[i - 2] == cb:  # a swap (OSA)
                current[j] = min(current[j], before[j - 2] + 1)
        if min(current) > bound:
            return bound + 1
        before, row = row, current
    return row[-1]


# A word two memes hold is a word of the library (as for typo corrections), not one meme's OCR
# misread. Not swept: the rule's numbers (dev v2 annotated hybrid noisy 0.909 -> 0.926, nothing else
# moved) are in benchdata/experiments/query_compounds-result.txt, docs/decisions.md#query-compounds.
JOINED_MIN_DOCS = 2

# How many of the library's words an unfinished last word stands for in the dense text (the most
# common first: "jo" reads as "jo john"); the word route matches all of them by the prefix itself.
PREFIX_COMPLETIONS = 1


def plan_query(
    db: DB,
    query: str,
    *,
    aliases: bool = True,
    correct: bool = True,
    two_edits: bool = False,
    prefix: bool = False,
    split: bool = True,
    exact: frozenset[str] = frozenset(),
) -> QueryPlan:
    """With `prefix`, the query is still being typed: its last word, unless a space or a mark
    follows it, is the start of a word (fzf's habit: "ca" and "jo" show what "cat" and "john" would).
    With `split`, words typed run together are read apart (spaced_plan); `exact`: words never
    read as typos (the pieces of a split)."""
    text = clean_line(unicodedata.normalize("NFKC", query))[:1000]
    tokens = normalise_query(text)
    alternatives: dict[str, list[list[str]]] = {t: [] for t in tokens}
    for t in alternatives if aliases else ():
        alternatives[t] += [normalise_query(exp) for (exp,) in db.q("aliases", {"term": t})]
    aliased = {t for t, alts in alternatives.items() if alts}  # sure alternatives, before corrections
    meaningful = [t for t in alternatives if t not in STOPWORDS]
    content = [t for t in meaningful if t not in FILLER_WORDS] or meaningful or list(alternatives)
    docs = {term: int(n) for term, n in db.q("vocabulary_docs", {"terms": json.dumps(content)})} if content else {}
    ends_in_word = bool(re.search(r"[^\W_]\Z", unicodedata.normalize("NFKC", query)))
    last = tokens[-1] if prefix and ends_in_word and tokens and tokens[-1] in content else None
    completions = (
        [
            t
            for (t,) in db.q(
                "vocabulary_completions", {"low": last, "high": last + "\U0010ffff", "most": PREFIX_COMPLETIONS + 1}
            )
            if t != last
        ][:PREFIX_COMPLETIONS]
        if last
        else []
    )
    if last and not completions and not docs.get(last):
        last = None  # nothing in the library starts with it: read as a whole word (typos, "no match")
    # Typos: a query word the library's vocabulary does not know (or knows from one document only,
    # often OCR noise) is (a) corrected to the library's words one edit away, which join the word
    # query, unless it is a real English word the user meant, and (b) split into trigrams for the
    # fuzzy route. Known words need neither: trigram matching of common words costs ~10 ms per
    # query at 10k items and adds junk (`mambo bench ablation`).
    grams: list[str] = []
    guesses: dict[str, list[str]] = {}
    for t in content:
        if len(t) < 3 or t.isdigit() or docs.get(t, 0) >= 2 or t == last:
            continue
        grams += [t[i : i + 3] for i in range(len(t) - 2)]
        # Slang (a word with an alias: tfw, wifi) is what the user meant: never read as a typo.
        if correct and t not in aliased and t not in exact and not is_real_word(t):
            guesses[t] = [c for c in corrections(db, t, two_edits=two_edits) if c != t]
            alternatives[t] += [[c] for c in guesses[t]]
    # Run together ("nobodygetsonline"): its words are searched beside it. A word the corrector
    # found a library word for is read as that typo ("chese" is "cheese", not "che se").
    maybe_glued = [t for t in content if t not in aliased and t != last and not guesses.get(t)] if split else []
    glued = glued_words(db, maybe_glued, docs)
    for t, pieces in glued.items():
        alternatives[t].append(pieces)
    # Apart, one word ("mail-box", "mail box": "mailbox"): each word may be held as the joined one.
    joined = joined_words(db, text, tokens)
    for pair, word in joined.items():
        for t in pair:
            alternatives[t].append([word])
    unseen = [t for t in content if not docs.get(t) and t != last]
    unknown = [t for t in unseen if not alternatives[t]]
    # A word the library never saw, matched only through a correction or a split, is a guess (an
    # "elon" read as "melon"): the "no match" evidence weighs it apart from a word the library holds.
    corrected = [t for t in unseen if alternatives[t] and t not in aliased]
    expanded = list(dict.fromkeys(tokens + [w for alts in alternatives.values() for alt in alts for w in alt]))
    grams = list(dict.fromkeys(grams))[:48]
    # Words in more than half of the library carry no BM25 weight (FTS5 clamps their IDF to 1e-6)
    # but make FTS5 score most documents ("a" is in 93 % of benchmark v1): left out of the MATCH
    # unless nothing else is left. They still count for coverage and the dense route. Filler words
    # ("meme", "pic") are left out the same way.
    common = {t for (t,) in db.q("common_words", {"terms": json.dumps(expanded)})} if expanded else set()
    matched = (
        [t for t in expanded if t not in common and t not in FILLER_WORDS]
        or [t for t in expanded if t not in common]
        or expanded
    )
    # The dense route reads the query as it was typed, each word followed by what it stands for
    # ("wifi not wrking again" -> "wifi not wrking working again", "ngl i snoozd ..." -> "ngl not
    # gonna lie i snoozd snooze ..."), not with the alternatives strung on at the end, where they
    # read as more query ("wifi not wrking again working"). Dev v2, judged labels, hybrid annotated:
    # CorrectEmpty 0.892 -> 0.914 ("elon musk memes lol", "hasta la vista baby"), noisy +0.003,
    # nothing else moved (benchdata/experiments/query-reading-result.txt).
    # The dense route reads a glued word's pieces only when they add what the model would not read in
    # the word itself (dense_pieces), and never a joined word: what was typed stands for it.
    unread = {tuple(ps) for t, ps in glued.items() if not dense_pieces(t, ps)} | {(w,) for w in joined.values()}
    in_place = [
        w
        for t in tokens
        for w in (
            t,
            *(w for alt in alternatives[t] if tuple(alt) not in unread for w in alt),
            *(completions if t == last and not docs.get(t) else ()),
        )
    ]
    dense_words = [t for t in dict.fromkeys(in_place) if t not in FILLER_WORDS] or expanded
    if glued:
        spaced = " ".join(" ".join(glued.get(t, [t])) for t in tokens) + ("" if ends_in_word else " ")
        read = plan_query(
            db,
            spaced,
            aliases=aliases,
            correct=correct,
            two_edits=two_edits,
            prefix=prefix,
            split=False,
            exact=frozenset(p for ps in glued.values() for p in ps),
        )
        # The dense route reads each glued word followed by its words, as it was typed; for "no
        # match" the words of a glued word the library never saw are guesses, as a correction is
        # ("thanos": than os).
        guessed = [p for t in glued if t in corrected for p in glued[t] if p in read.content and p not in read.unknown]
        read = dataclasses.replace(
            read, dense_text=" ".join(dense_words), corrected=list(dict.fromkeys(read.corrected + guessed))
        )
        return spaced_plan(read, text, glued)
    # Every token a quoted string: nothing the user types is FTS5 syntax. '""' matches nothing.
    return QueryPlan(
        text=text,
        tokens=tokens,
        expanded=expanded,
        content=content,
        alternatives=alternatives,
        word_match=" OR ".join(
            [f'"{t}"' for t in matched if t != last or len(t) >= 3]
            + ([f'"{last}"*'] if last else [])
            + phrase_match(tokens, last, common)
        )
        or '""',
        trigram_match=" OR ".join(f'"{g}"' for g in grams) or '""',
        dense_text=" ".join(dense_words),
        unknown=unknown,
        corrected=corrected,
        absent_templates=absent_templates(db, tokens, content, set(unseen)),
        prefix=last,
        guesses=guesses,
    )


def joined_words(db: DB, text: str, tokens: list[str]) -> dict[tuple[str, str], str]:
    """Two query words joined by a mark ("mail-box", "spider-man", "i'm") that the library holds as
    one word of two memes or more, each pair with that word: a compound people write with a hyphen
    matches the way a caption or a name wrote it ("mailbox"). Words typed apart are left apart: a
    caption's OCR runs common words together ("hotright"), and joining them drew such memes above
    the ones sought (benchdata/experiments/query_compounds-result.txt)."""
    pairs = {
        (a, b) for chunk in text.split() for ts in [normalise_query(chunk)] for a, b in zip(ts, ts[1:], strict=False)
    }
    if not pairs:
        return {}
    words = {a + b: (a, b) for a, b in sorted(pairs)}
    held = db.q("vocabulary_docs", {"terms": json.dumps(sorted(words))})
    return {words[w]: w for w, n in held if int(n) >= JOINED_MIN_DOCS and w not in tokens}


def dense_pieces(word: str, pieces: list[str]) -> bool:
    """Whether the dense text follows a glued word with its pieces: only when the model does not
    read the word as those pieces itself ("furball" is read fur ball: the pieces would weigh twice
    and draw the query towards balls; "hidethepainharold" is read hide the pa in har old)."""
    return word_pieces(word) != pieces


def phrase_match(tokens: list[str], last: str | None, common: set[str]) -> list[str]:
    """The words as typed, in order, as one FTS5 phrase (filler and an unfinished last word left
    out): a meme holding them side by side gains its BM25 weight over memes holding the same words
    apart, as a person reading the list would rank them ("if i told you" in "what if i told you ..."
    above "i told you, if ..."). A phrase of one word adds nothing; one holding a word of most of
    the library (`common`) would make FTS5 read that word's every position: left out."""
    words = [t for t in (tokens[:-1] if last else tokens) if t not in FILLER_WORDS]
    return ['"' + " ".join(words) + '"'] if len(words) >= 2 and not common.intersection(words) else []


def spaced_plan(plan: QueryPlan, text: str, glued: dict[str, list[str]]) -> QueryPlan:
    """The plan of a query with words run together (`glued`: each with its words), read as if its
    words had been typed apart (`plan`): coverage, the typed share and "no match" see the words, as
    they would for the spaced query (the dense text is the caller's). A meme holding the glued word
    itself (a caption OCR read run together and the index left whole) still matches: the word
    joins the word match and stands in for each of its words."""
    for word, pieces in glued.items():
        for p in pieces:
            plan.alternatives.setdefault(p, []).append([word])
    words = [f'"{w}"' for w in glued if w not in plan.expanded]
    return dataclasses.replace(
        plan,
        text=text,
        expanded=plan.expanded + list(glued),
        word_match=" OR ".join(([plan.word_match] if plan.word_match != '""' else []) + words),
        glued=glued,
    )


# Known templates a query names ("distracted boyfriend meme", "drake meme"): "the folder holds no meme
# of the template you named" is evidence of its own for "no match". A query names a template when it
# holds every word of one of its names or aliases (two words or more), or a name-like word of one
# (not a common English word, REAL_WORD_MIN_COUNT) that the library never saw ("drake"; not "sad").
@dataclass(frozen=True)
class TemplateNames:
    # template id, name, the tokens of each name and alias, and each one's words (stopwords and
    # filler left out: what a query must hold to name it)
    phrases: list[tuple[int, str, list[list[str]], list[frozenset[str]]]]
    by_word: dict[str, set[int]]  # word -> indexes into phrases


# By library file, templates revision and count: the search screen plans a query on more than one
# connection (its encode-ahead thread's and the search's), and each costs ~3 ms to build.
_TEMPLATE_NAMES: dict[tuple[str, str, int], TemplateNames] = {}


def template_names(db: DB) -> TemplateNames:
    """The words of every known template's names and aliases, read again when the templates change."""
    key = (str(db.path), get_setting(db, "templates_revision") or "", int(db.q1("template_count")[0]))
    if key not in _TEMPLATE_NAMES:
        phrases, by_word = [], {}
        for template_id, name, aliases in db.q("template_names"):
            tokens = [t for t in (normalise_query(n) for n in [name, *json.loads(aliases)]) if t]
            words = [frozenset(w for w in ts if w not in STOPWORDS and w not in FILLER_WORDS) for ts in tokens]
            for w in frozenset().union(*words):
                by_word.setdefault(w, set()).add(len(phrases))
            phrases.append((template_id, name, tokens, words))
        found = TemplateNames(phrases, by_word)
        if len(_TEMPLATE_NAMES) >= 8:  # a few libraries per process at most (tests, benchmarks)
            _TEMPLATE_NAMES.clear()
        _TEMPLATE_NAMES[key] = found
        return found
    return _TEMPLATE_NAMES.get(key) or template_names(db)


def absent_templates(db: DB, tokens: list[str], content: list[str], unseen: set[str]) -> list[str]:
    """The known templates the query names of which the library holds no meme it may show."""
    names = template_names(db)
    candidates = {i for t in content if t in names.by_word for i in names.by_word[t]}
    if not candidates:
        return []
    # only a word of some template's names can name one alone: the others need no frequency lookup
    unseen = {t for t in unseen if t in names.by_word and not is_real_word(t)}
    have = set(tokens)
    absent = []
    for i in sorted(candidates):
        template_id, name, phrases, words = names.phrases[i]
        if not any((len(ws) >= 2 and ws <= have) or (ws & unseen) for ws in words):
            continue
        # Its names and aliases as FTS5 phrases on the template field (tokens quoted: no syntax).
        match = "template : (" + " OR ".join('"' + " ".join(ts) + '"' for ts in phrases) + ")"
        if not db.q1("template_held", {"template_id": template_id, "match": match})[0]:
            absent.append(name)
    return absent


def within_one_edit(a: str, b: str) -> bool:
    """Damerau-Levenshtein distance <= 1 (one insertion, deletion, substitution or swap)."""
    if a == b:
        return True
    la, lb = len(a), len(b)
    if abs(la - lb) > 1:
        return False
    if la == lb:
        diff = [i for i in range(la) if a[i] != b[i]]
        return len(diff) == 1 or (
            len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]]
        )
    if la > lb:
        a, b = b, a
    i = 0
    while i < len(a) and a[i] == b[i]:
        i += 1
    return a[i:] == b[i + 1 :]


def coverage(plan: QueryPlan, item_words: set[str], weights: dict[str, float] | None = None) -> float:
    """Share of the query's content words found in an item: exactly, through one of its
    alternatives (all of an alias's meaningful words), or (3+ letters) within one edit. With
    `weights` (word -> weight, e.g. idf_weights), the share of the words' total weight."""
    if not plan.content:
        return 0.0
    total = hit = 0.0
    for t in plan.content:
        w = weights[t] if weights else 1.0
        total += w
        if holds_word(plan, t, item_words):
            hit += w
        # One edit of a word of 3+ letters leaves its first or its last letter in place: an exact
        # prefilter that skips ~90 % of the edit-distance checks (the costliest Python of a search).
        elif len(t) >= 3 and any(
            within_one_edit(t, w_)
            for w_ in item_words
            if abs(len(w_) - len(t)) <= 1 and (w_[0] == t[0] or w_[-1] == t[-1])
        ):
            hit += w
    return hit / total if total else 0.0


def idf_weights(db: DB, plan: QueryPlan) -> dict[str, float]:
    """Each content word's inverse document frequency in the library, log(1 + N / (1 + docs)): a
    word in a handful of memes weighs more than one in hundreds; a word the library lacks (a typo
    found through its correction) weighs most."""
    n = max(int(db.q1("vocabulary_size_documents")[0]), 1)
    docs = {t: int(d) for t, d in db.q("vocabulary_docs", {"terms": json.dumps(plan.content)})}
    return {t: math.log(1 + n / (1 + docs.get(t, 0))) for t in plan.content}


def item_words(details: dict[str, Any]) -> set[str]:
    parts = [
        details["title"],
        details.get("template_text") or details["template"],
        details["description"],
        caption_words(details),
        " ".join(json.loads(details["entities"])),
        " ".join(json.loads(details["tags"])),
    ]
    return words_of(" ".join(parts))


def words_of(text: str) -> set[str]:
    return set(words_in_order(text))


def words_in_order(text: str) -> list[str]:
    if text.isascii():  # the common case, 10x cheaper than the full Unicode normalisation
        return re.findall(r"[^\W_]+", text.lower())
    return normalise_query(text)


def naming_texts(details: dict[str, Any]) -> tuple[str, str]:
    """The text of the fields that name a meme (title, template, people) and of its caption."""
    names = " ".join(
        [
            details["title"],
            details.get("template_text") or details["template"],
            " ".join(json.loads(details["entities"])),
        ]
    )
    return names, caption_words(details)


def naming_fields(details: dict[str, Any]) -> tuple[set[str], set[str]]:
    """The words of the fields that name a meme and of its caption (naming_texts)."""
    names, caption = naming_texts(details)
    return words_of(names), words_of(caption)


def caption_words(details: dict[str, Any]) -> str:
    """The caption as the word index holds it: the words of each run-together token right after
    it (or, in a library whose captions were not yet read again, after the caption)."""
    return details.get("ocr_spaced") or f"{details['ocr_text']} {details.get('ocr_words') or ''}"


def full_match(plan: QueryPlan, details: dict[str, Any]) -> bool:
    """Whether one field that names the meme (its title, template, people) or its caption holds
    every content word of the query: the evidence KEEP_FULL_MATCHES keeps on top."""
    return bool(plan.content) and any(holds_all(plan, words) for words in naming_fields(details))


# Words people add or drop freely when they recall a phrase ("a snowman", "snowman"): no evidence
# that a meme holds what was typed.
ARTICLES = frozenset({"a", "an", "the"})


def typed_share(plan: QueryPlan, details: dict[str, Any]) -> float:
    """The share of what the user typed that one naming field or the caption holds: each word typed
    (small words included, filler and articles left out) and each pair of them typed side by side,
    held side by side. Among memes holding every content word of "zinnia from it", the caption
    "when zinnia from it asks ..." holds all of it, "zinnia the ram" little; of "where id put
    my", "this is where id put my ..." holds more than "where i put ... id my"."""
    typed = [t for t in dict.fromkeys(plan.tokens) if t not in FILLER_WORDS and t not in ARTICLES]
    if not typed:
        return 0.0
    said = [t for t in plan.tokens if t not in FILLER_WORDS]
    pairs = {(a, b) for a, b in zip(said, said[1:], strict=False) if a not in ARTICLES and b not in ARTICLES}
    best = 0.0
    for text in naming_texts(details):  # the naming fields, then the caption (naming_fields)
        order = words_in_order(text)
        words = set(order)
        held = sum(holds_word(plan, t, words) for t in typed) + len(pairs & set(zip(order, order[1:], strict=False)))
        best = max(best, held / (len(typed) + len(pairs)))
    return best


def holds_word(plan: QueryPlan, token: str, words: set[str], *, guesses: bool = True) -> bool:
    """The query word is among `words` exactly, or through one of its alternatives (all of an
    alias's meaningful words, or, unless `guesses` is False, a typo correction)."""
    if token in words or (token == plan.prefix and any(w.startswith(token) for w in words)):
        return True
    guessed = [] if guesses else [[c] for c in plan.guesses.get(token, [])]
    alts = [
        [w for w in alt if w not in STOPWORDS] or alt for alt in plan.alternatives.get(token, []) if alt not in guessed
    ]
    return any(alt and all(w in words for w in alt) for alt in alts)


def holds_query(plan: QueryPlan, details: dict[str, Any]) -> bool:
    """ "The words are there": one field that names the meme, or its caption, holds every content word
    of the query, exactly, by an alias or (the last word while typing) as a prefix. A typo correction
    is a guess ("thta" -> "that" or the OCR noise "thea"; "drake" -> "brake") and counts only in a
    field that also holds every other word the user typed, small words included, and at least one
    of them without a guess: "thta is how it" in "that is how it ...", never a lone corrected name."""
    if not plan.content:
        return False
    typed = [t for t in dict.fromkeys(plan.tokens) if t not in FILLER_WORDS and t not in ARTICLES]
    for words in naming_fields(details):
        if not holds_all(plan, words):
            continue
        sure = {t for t in dict.fromkeys(plan.tokens + plan.content) if holds_word(plan, t, words, guesses=False)}
        if all(t in sure for t in plan.content) or (
            any(t in sure for t in typed) and all(holds_word(plan, t, words) for t in typed)
        ):
            return True
    return False


def holds_all(plan: QueryPlan, words: set[str]) -> bool:
    """Every content word, exactly or through an alternative; no edit distance here: "cat" must
    not keep a caption about a car on top."""
    return all(holds_word(plan, t, words) for t in plan.content)
