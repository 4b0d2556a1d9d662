"""The ingest-time text safety detector for policy mambo-safety-v1 (benchdata/safety-policy-v1.md):
the class a caption alone makes an item, the rule that decided it and the words that fired.

Most user folders have no sidecars, so the caption itself is checked at ingest against the criteria
of the frozen policy; the stricter of a sidecar's class and the detector's wins, and a person's
decision (`mambo safety set`) wins over both."""

from __future__ import annotations

import re
from typing import NamedTuple

# A detector that hides a person's own files must be precise: each rule needs a harmful relation
# between words, never one word (a group AND a dehumanising predicate, a violent outcome AND a human
# target, a phone number AND an address). benchdata/safety_check.py, 2026-11-30: 0 of 339 harmless
# captions hidden (target <= 1 %), 28/28 dev unsafe + critical caught. See docs/decisions.md#text-safety.
# Rules that see a group of people near violence or a dehumanising comparison without that relation
# mark the meme `sensitive` (shown, with a marker: dark humour is sensitive under the policy) rather
# than withhold it: real captions joke this way far more often than they incite.
RULES_VERSION = "mambo-text-rules-3"


class Detection(NamedTuple):
    safety: str  # the policy class: sensitive, unsafe or critical
    rule: str  # personal-data, hate-speech, violence, gore, harm-instructions, profanity
    words: tuple[str, ...]  # what fired, as found in the text (for `mambo safety`)


def _ocr(word: str) -> str:
    """A trigger word as OCR may read it: PP-OCR drops or confuses the narrow glyph i (and l)."""
    return "".join("[il1|!]?" if c == "i" else re.escape(c) for c in word)


def _any(words: str) -> str:
    return "(?:" + "|".join(_ocr(w) for w in words.split()) + ")"


# ── personal data (critical): a phone number with a street address, or either one with a call to
# go after the person ("spam him", "ring ... all night", "knock on"). A phone or an address alone is
# everyday ("42 wallaby way", "867-5309", "party at 3 park lane"). OCR often drops the space after a
# house number ("AT88 LARKSPUR LANE"), hence `\d+\s*` and no \b before the number.
PHONE_RE = re.compile(r"(?<!\d)(?:\+?\d{1,3}[\s.-]?)?(?:\(?\d{3}\)?[\s.-]?)?\d{3}[\s.-]\d{4}(?!\d)")
ADDRESS_RE = re.compile(
    r"(?<!\d)\d{1,5}[a-z]?\s*[a-z]+(?:\s+[a-z]+)?\s+(?:street|st|road|rd|lane|ln|drive|dr|avenue|ave|close|mews|hill|"
    r"way|court|ct|place|pl|crescent|boulevard|blvd|terrace|row|gardens|square|sq)\b",
    re.IGNORECASE,
)
PURSUE_RE = re.compile(
    r"\b(?:(?:spam|ring|call|phone|text|message|visit|find|harass|hound|doxx?|stalk|egg|troll)\s+(?:him|her|them)\b|"
    r"(?:ring|call|text|phone|spam)\s+(?:\w+\s+){0,2}?\(?\d{3}|harass\w*|knock\s+on\b|hunt\s+(?:him|her|them)\s+down|pay\s+(?:him|her|them)\s+a\s+visit|"
    r"(?:ring|call|text|spam)\b.{0,30}\ball\s+(?:\w\s+)?night)|t[il1]{0,2}ll\s+(?:he|she|they)\W*\w?\W*pays?\b",
    re.IGNORECASE,
)

# ── hate speech (unsafe): a dehumanising predicate about people. Strong terms (vermin, cockroaches,
# subhuman, ...) need only a human subject ("everyone from X is vermin", "they breed like
# cockroaches"); weak ones (rats, animals, pests, ...) also need a group named by where its people
# live or come from, because "gym rats", "party animals" and "people and animals" are everyday.
HUMAN = (
    r"(?:people|everyone|everybody|folks|they|them|those|these|immigrants|foreigners|migrants|refugees|outsiders|"
    r"newcomers|locals|fans)"
)
COPULA = r"(?:are|is|r|re|be|=)\s+(?:all\s+|just\s+|nothing\s+but\s+|basically\s+|literally\s+|like\s+)?"
STRONG = _any("vermin cockroaches roaches subhuman subhumans parasites infestation lice maggots")
WEAK = _any("rats animals pests savages beasts scum filth")
ORIGIN_RE = re.compile(
    r"\b(?:people|everyone|everybody|folks|those|families|fans)\s+(?:from|in|of)\s+\w+|"
    r"\b(?:immigrants|foreigners|migrants|refugees|outsiders)\b|\b\w+\s+(?:people|folks|fans)\s+"
    r"(?:at|in|moving|moved|on|are|is)\b",
    re.IGNORECASE,
)
STRONG_PREDICATE_RE = re.compile(
    rf"\b{HUMAN}(?:\s+\w+){{0,4}}\s+{COPULA}{STRONG}\b|"
    rf"\b{HUMAN}(?:\s+\w+){{0,2}}\s+(?:infest|swarm|overrun)\w*\s+(?:our|the|this|my)\b|"
    rf"\b(?:they|people|them|those\s+\w+)\s+(?:breed|multiply|spread)\s+like\s+"
    rf"{_any('rats cockroaches roaches vermin flies lice maggots')}\b",
    re.IGNORECASE,
)
WEAK_PREDICATE_RE = re.compile(rf"\b{HUMAN}(?:\s+\w+){{0,4}}\s+{COPULA}{WEAK}\b", re.IGNORECASE)
# With such a group named, the usual dehumanising frames: a strong term anywhere ("... cockroaches,
# the lot of them"), a weak one in a slur-like frame ("like rats", "bunch of animals", "filthy
# rats"), or a swarm ("crawling with", "overrun by").
STRONG_ANY_RE = re.compile(rf"\b{STRONG}\b|\bsub\s*human", re.IGNORECASE)
WEAK_FRAME_RE = re.compile(
    rf"\b(?:like|bunch\s+of|pack\s+of|nest\s+of|filthy|dirty|disgusting|nothing\s+but|"
    rf"breed\w*\s+like)\s+{WEAK}\b|\b{WEAK}\s*(?:the\s+lot\s+of\s+them|all\s+of\s+them)\b|"
    rf"\b(?:crawling\s+with|overrun\s+(?:by|with)|swarming\s+with)\s+(?:them|those|these|\w+\s+people)",
    re.IGNORECASE,
)
# Pest control or exclusion called on such a group ("people from X moving into our street / call
# pest control"; "keep them out of our schools").
GROUP_ACTION_RE = re.compile(
    r"\bpest\s+control\b|\bexterminat\w*|\bkeep\s+them\s+out\s+of\s+our\b|"
    r"\bsend\s+them\s+(?:all\s+)?back\b|\bdeport\s+them\b|\bban\s+them\s+all\b",
    re.IGNORECASE,
)

# ── violence against people (unsafe), even as a joke: a violent outcome wished on a human target
# ("every cyclist deserves to get run over"), not on a printer, a project or a game boss.
OUTCOME = _any("die hit hurt beaten punched stabbed shot killed") + "|run\\s+over"
TARGET = r"(?:every|all|everyone|everybody|people|those|them|they|anyone|anybody|whoever|each)"
VIOLENCE_RE = re.compile(
    rf"\b{TARGET}\b(?:\s+\w+){{0,6}}?\s+(?:deserves?|should|ought)\s+(?:to\s+)?(?:get|be)?\s*(?:{OUTCOME})\b|"
    r"\brun\s+(?:them|those\s+\w+|(?:all|every)\s+\w+)\s+over\b(?!\s+to\b)|"
    r"\bburn\s+(?:(?:the|that|this|their|whole|entire)\s+){0,2}(?:town|city|village|street|place|neighbourhood|"
    r"estate|houses?|homes?)\s+(?:down|to\s+the\s+ground)|\bburn\s+them\s+(?:all|alive)\b|"
    r"\b(?:kill|shoot|gas|hang|exterminate|string\s+up)\s+(?:them\s+all|every\s+(?:last|single)\s+one|all\s+of\s+them)\b|"
    r"\b(?:beat|punch|hit|slap|kick)\s+(?:them|those\s+\w+)\s+(?:up\s+)?until\s+(?:they|he|she)\s+"
    r"(?:learn|understand|get\s+it|stop|bleed|cry|move)\b|\bbeat\s+(?:them|those\s+\w+)\s+(?:to\s+death|senseless)\b",
    re.IGNORECASE,
)

# A violent imperative on "them" when the caption names a group of people ("people who stand on
# the left ... shoot them"); without a group, "kill them with kindness", "wipe them out (the weeds)"
# and "string them up (the lights)" are everyday.
GROUP_CONTEXT_RE = re.compile(
    r"\b(?:people|everyone|everybody|anyone|anybody|those|folks)\s+(?:who|from|in|that)\b|"
    r"\b\w+\s+fans\b|\b(?:immigrants|foreigners|migrants|refugees)\b",
    re.IGNORECASE,
)
VIOLENT_ON_THEM_RE = re.compile(
    r"\b(?:kill|shoot|gas|hang|stab|punch|beat|drown|lynch|string|wipe|hunt|torch|bomb)\s+"
    r"(?:them|em)\b(?!\s+(?:with|at|in|on|to|for|a|the)\b)",
    re.IGNORECASE,
)

# ── a group of people in the caption (sensitive unless a rule above proves more). Groups by the
# characteristics hate speech targets (ethnicity, nationality, religion, sexuality, gender identity,
# disability) and the groups jokes pick on by age. Named beside violence, in a generalising question,
# or compared to vermin, the meme is marked: the policy's dark humour, shown with a marker, while a
# person decides (`mambo safety review`); only the explicit "kill all the <group>" is withheld.
PEOPLE_GROUP = (
    r"(?:jews|jewish\s+people|muslims|christians|catholics|hindus|sikhs|atheists|arabs|blacks|whites|asians|"
    r"africans|mexicans|latinos|immigrants|refugees|migrants|gypsies|gays|lesbians|homosexuals|queers|"
    r"trans\s+people|transgenders?|autistic\s+(?:kids?|people|children)|autists?|retards|disabled\s+people|"
    r"cripples|millennials|boomers|zoomers|gen\s+z(?:ers)?|feminists|"
    r"(?:black|white|brown|asian|gay|jewish|muslim|mexican|chinese|indian|trans|autistic|disabled|fat|old|"
    r"poor)\s+(?:people|folks|guys|men|women|kids|children))"
)
# OCR reads the hard c of "autistic" as g ("AUTISTIG"): the word rules see it restored.
OCR_GROUP_FIXES = ((re.compile(r"\bautistig\b"), "autistic"),)
GROUP_RE = re.compile(rf"\b{PEOPLE_GROUP}\b", re.IGNORECASE)
KILL_ALL_RE = re.compile(
    rf"\b(?:kill|gas|shoot|exterminate|hang|burn|nuke|genocide)\s+(?:all|every)\s+(?:of\s+)?(?:the\s+)?"
    rf"(?:\w+\s+)?{PEOPLE_GROUP}\b",
    re.IGNORECASE,
)
VIOLENT_ACT_RE = re.compile(
    r"\b(?:kill\w*|murder\w*|shoot|shot|stab\w*|gas(?:sed)?|hang(?:ed)?|lynch\w*|drown\w*|bomb\w*|slaughter\w*|"
    r"behead\w*|massacre\w*|genocide|holocaust|(?:push|pushed|throw|threw|thrown)\s+(?:\w+\s+){0,3}off|"
    r"(?:bite|bites|bit|cut|cuts|rip|rips)\s+(?:\w+\s+){0,4}off|beat\s+up|run\s+over)\b",
    re.IGNORECASE,
)
GROUP_QUESTION_RE = re.compile(
    rf"\bwhy\s+(?:do|don\s*t|does|doesn\s*t|are|aren\s*t|can\s*t|cant|is|isn\s*t)\s+(?:\w+\s+){{0,3}}"
    rf"{PEOPLE_GROUP}\b|\b(?:all|most)\s+{PEOPLE_GROUP}\s+(?:are|is|can\s*t|cant|don\s*t|never|always)\b",
    re.IGNORECASE,
)
VERMIN = _any("rats roaches cockroaches vermin animals savages")
VERMIN_RE = re.compile(
    rf"\b(?:breed\w*|multiply\w*|live|living|act\w*)\s+like\s+{VERMIN}\b",
    re.IGNORECASE,
)
# "They need to be shot" wishes violence as "should" does, but "need to be shot / hit" is also a
# film crew's or a setlist's job: marked, not withheld.
NEED_VIOLENCE_RE = re.compile(
    rf"\b{TARGET}\b(?:\s+\w+){{0,6}}?\s+needs?\s+to\s+(?:get|be)\s+(?:{OUTCOME})\b", re.IGNORECASE
)
# Slurs against a group: one word never withholds a meme (it may be reclaimed, quoted or a name), so
# a slur marks it.
SLUR_RE = re.compile(
    r"\b(?:fags?|faggots?|retards?|retarded|trann(?:y|ies)|niggers?|niggas?|spics?|chinks?|kikes?|wetbacks?|"
    r"dykes?|towelheads?|ragheads?|gooks?|beaners?)\b",
    re.IGNORECASE,
)


# ── graphic gore (unsafe): two distinct gore words, or a wound described: chunks of flesh, a
# body part cut off or lying somewhere. "blood type", "body parts" (biology class), "flesh wound",
# "guts" (courage) and "skin care" alone are everyday.
GORE_RE = re.compile(
    r"\b(?:blood|guts|entrails|intestines|severed|mutilat\w*|dismember\w*|decapitat\w*|"
    r"disembowel\w*|flesh)\b",
    re.IGNORECASE,
)
BODY = r"(?:finger|fingertip|toe|ear|thumb|hand|nose|eyeball|tongue)s?"
GORE_PHRASE_RE = re.compile(
    rf"\bchunks\s+of\s+(?:finger|flesh|skin|bone|brain)|\b(?:skin|flesh)\s+(?:hanging|peeled|ripped|torn)\s+off\b|"
    rf"\bbone\s+sticking\s+out\b|\b{BODY}\s+(?:was|were|came|went|got|is|lay|lying)\s+(?:clean\s+)?(?:off\b|"
    rf"severed|(?:cut|sliced|chopped|ripped|bitten)\s+off|on\s+the\s+(?:floor|ice|ground|board|table|road|pavement))|"
    rf"\b(?:sliced|chopped|cut|bit|ripped|tore|torn)\s+(?:my|his|her|their|your|the)?\s*{BODY}\s+(?:clean\s+)?off\b",
    re.IGNORECASE,
)

# ── instructions for serious harm (unsafe). "bomb-ass lasagna" and "the bomb" are slang (matched on
# the text with its punctuation, so the hyphen is seen).
HARM_RE = re.compile(
    r"\bhow\s+to\s+(?:make|build|mix|cook)\s+(?:a\s+|an\s+|your\s+own\s+)?(?:pipe\s+)?(?:bomb|poison|"
    r"explosives?|nerve\s+agent|napalm|ricin|meth)\b(?![-'\w])",
    re.IGNORECASE,
)

# ── profanity and crude words (sensitive: shown with a marker).
PROFANITY_RE = re.compile(
    r"\b(?:damn|shit\w*|bullshit|ass|arse|asshole|crap\w*|wtf|fuck\w*|bastard|bitch\w*|piss\w*|"
    r"hell|dick|dicks|cock|pussy|cunt|slut|whore|tits|penis)\b",
    re.IGNORECASE,
)


# What a saved meme carries besides its caption and that splits a caption's words apart ("KILL ALL
# THE / imgflip.com / JEWS"): a site's watermark (a domain, or the meme generator's name as OCR
# reads it) and a phone's status bar ("1:21 71%").
NOISE_RE = re.compile(
    r"\b[\w-]+\.(?:com|net|org|co|io|me|gg|tv)\b|\bim[gq][fl][il1|]{1,2}[ip]\b|\b\d{1,2}:\d{2}\b|\b\d{1,3}\s?%",
    re.IGNORECASE,
)


def _words(text: str) -> str:
    """Text for the word rules: lower case, watermarks and status bars out, punctuation and OCR's
    stray glyphs ("LEFT-OF-THE", "EASTΛFERNHOLLOW", "pARE:") and apostrophes ("they're") turned
    into single spaces."""
    return " ".join(re.sub(r"[^a-z0-9]+", " ", NOISE_RE.sub(" ", text.lower())).split())


def _fired(*matches: re.Match | None) -> tuple[str, ...]:
    return tuple(dict.fromkeys(m.group(0) for m in matches if m))


def _group_marked(words: str) -> Detection | None:
    """A group of people beside violence, in a generalising question, or compared to vermin, or a
    slur: the meme is marked sensitive (the relation that would withhold it is not proved)."""
    for pattern, fix in OCR_GROUP_FIXES:
        words = pattern.sub(fix, words)
    group = GROUP_RE.search(words)
    if group and (act := VIOLENT_ACT_RE.search(words)):
        return Detection("sensitive", "group-violence", _fired(group, act))
    if question := GROUP_QUESTION_RE.search(words):
        return Detection("sensitive", "group-joke", _fired(question))
    if need := NEED_VIOLENCE_RE.search(words):
        return Detection("sensitive", "violence", _fired(need))
    if vermin := VERMIN_RE.search(words):
        return Detection("sensitive", "dehumanising", _fired(vermin))
    if slur := SLUR_RE.search(words):
        return Detection("sensitive", "slur", _fired(slur))
    return None


def detect_safety(text: str) -> Detection | None:
    """The most severe safety class the caption text alone proves, with its rule and the words
    that fired; None when the text proves nothing (the item stays as its sidecar says)."""
    flat = " ".join(text.split())
    words = _words(text)
    phone, address, pursue = PHONE_RE.search(flat), ADDRESS_RE.search(flat), PURSUE_RE.search(flat)
    if (phone and address) or ((phone or address) and pursue):
        return Detection("critical", "personal-data", _fired(phone, address, pursue))
    origin = ORIGIN_RE.search(words)
    strong = STRONG_PREDICATE_RE.search(words)
    weak = (
        WEAK_PREDICATE_RE.search(words) or STRONG_ANY_RE.search(words) or WEAK_FRAME_RE.search(words)
        if origin
        else None
    )
    action = GROUP_ACTION_RE.search(words) if origin else None
    if strong or weak or action:
        return Detection("unsafe", "hate-speech", _fired(origin, strong, weak, action))
    if violence := VIOLENCE_RE.search(words) or KILL_ALL_RE.search(words):
        return Detection("unsafe", "violence", _fired(violence))
    if (group := GROUP_CONTEXT_RE.search(words)) and (violence := VIOLENT_ON_THEM_RE.search(words)):
        return Detection("unsafe", "violence", _fired(group, violence))
    gore = {m.group(0).lower(): m for m in GORE_RE.finditer(words)}
    if (phrase := GORE_PHRASE_RE.search(words)) or len(gore) >= 2:
        return Detection("unsafe", "gore", _fired(phrase, *(gore.values() if len(gore) >= 2 else ())))
    if harm := HARM_RE.search(flat):
        return Detection("unsafe", "harm-instructions", _fired(harm))
    if marked := _group_marked(words):
        return marked
    if profanity := PROFANITY_RE.search(words):
        return Detection("sensitive", "profanity", _fired(profanity))
    return None
