"""The ingest-time text safety detector for policy mambo-safety-v1 (benchdata/safety-policy-v1.md):
the classes a caption alone makes an item (a phone number and a street address: critical)."""

from __future__ import annotations

import re

# Most user folders have no sidecars, so the caption itself is checked at ingest against the
# criteria of the frozen policy mambo-safety-v1 (benchdata/safety-policy-v1.md); the stricter of a
# sidecar's class and the detector's wins. The rules are the policy's own wording turned into
# patterns (its examples: "calling people vermin/rats/animals because of who they are or where they
# live", "every cyclist deserves to get run over", "burn that town to the ground", "blood, skin and
# chunks of finger"), written from the policy text, then measured on the development pool's items
# (`python benchdata/safety_check.py LIBRARY`): unsafe-or-critical recall 25/28, no false alarm
# among 844 safe items (2026-11-30; the two misses need the picture or a garbled OCR word). They
# were not fitted to any benchmark query; "beat them until" and "deserves to get hit" were added
# after reading the development pool's misses.
# Personal data (doxxing, critical): a phone number together with a street address, or either one
# with a call to go there / ring them. OCR often drops the space after a house number
# ("AT88 LARKSPUR LANE"), hence `\d+\s*`.
PHONE_RE = re.compile(r"(?<!\d)(?:\+?\d{1,3}[\s.-]?)?(?:\(?\d{3}\)?[\s.-]?)?\d{3}[\s.-]\d{4}(?!\d)")
ADDRESS_RE = re.compile(
    r"(?<!\d)\d{1,5}\s*[a-z]+(?:\s+[a-z]+)?\s+(?:street|st|road|rd|lane|ln|drive|dr|avenue|ave|close|mews|hill|way|"
    r"court|ct|place|pl|crescent|boulevard|blvd|terrace|row|gardens|square|sq)\b", re.IGNORECASE)
CONTACT_CALL_RE = re.compile(
    r"\b(?:go\s+)?(?:knock\s+on|ring|call|text|visit|find|harass|pay\s+(?:him|her|them)\s+a\s+visit)\b", re.IGNORECASE)
# Hate speech (unsafe): a group named ("people from ...", "everyone from ...", "... fans") together
# with a dehumanising word. OCR may glue words ("THEYNBREED"), so the terms are not all \b-anchored.
GROUP_RE = re.compile(r"\b(?:people|everyone|everybody|all\s+(?:the\s+)?\w+s|those|folks|fans|immigrants|"
                      r"foreigners|locals|outsiders|newcomers)\b", re.IGNORECASE)
DEHUMANISING_RE = re.compile(r"(?:\bvermin|\brats?\b|\bpests?\b|pest\s+control|cockroach|\bparasites?\b|"
                             r"\bsubhuman|breed(?:s|ing)?\s+like|\binfest|\bsavages\b|\banimals\b)", re.IGNORECASE)
# Violence against a group or glorifying it (unsafe), even as a joke.
VIOLENCE_RE = re.compile(
    r"(?:\brun\s+(?:them|\w+)\s+over|\bget\s+run\s+over|\bburn\s+(?:that|the|this|their|it|them)\b.{0,20}?\bto\s+the"
    r"\s+ground|\bwipe\s+(?:them|\w+)\s+out\b|\bdeserves?\s+to\s+(?:die|get\s+hurt|be\s+hurt|suffer)|\bkill\s+(?:them|"
    r"all|every)\b|\bstring\s+(?:them|\w+)\s+up\b|\bgas\s+them\b|\bshoot\s+(?:them|every)\b|\bbeat\s+them\s+(?:up|until)\b|"
    r"\bdeserves?\s+to\s+get\s+(?:hit|hurt|beaten|punched|stabbed))", re.IGNORECASE)
# Graphic gore (unsafe): two distinct gore words, or an unmistakable phrase.
GORE_RE = re.compile(r"\b(?:blood|bloody|guts|gore|entrails|severed|mutilat\w*|dismember\w*|flesh|skin)\b",
                     re.IGNORECASE)
GORE_PHRASE_RE = re.compile(r"\bchunks\s+of\s+(?:finger|flesh|skin|bone)|\bbody\s+parts\b", re.IGNORECASE)
# Instructions for serious harm (unsafe).
HARM_RE = re.compile(r"\bhow\s+to\s+(?:make|build|mix)\s+(?:a\s+)?(?:bomb|poison|explosive|pipe\s+bomb|nerve\s+agent)",
                     re.IGNORECASE)
# Profanity and crude words (sensitive: shown with a marker).
PROFANITY_RE = re.compile(r"\b(?:damn|shit\w*|ass|arse|asshole|crap|wtf|fuck\w*|bastard|bitch\w*|piss\w*|hell)\b",
                          re.IGNORECASE)


def detect_safety(text: str) -> tuple[str, str] | None:
    """The most severe safety class the caption text alone proves, with the rule that proved it."""
    flat = " ".join(text.split())
    phone, address = PHONE_RE.search(flat), ADDRESS_RE.search(flat)
    if (phone and address) or ((phone or address) and CONTACT_CALL_RE.search(flat)):
        return "critical", "personal-data"
    if GROUP_RE.search(flat) and DEHUMANISING_RE.search(flat):
        return "unsafe", "hate-speech"
    if VIOLENCE_RE.search(flat):
        return "unsafe", "violence"
    if GORE_PHRASE_RE.search(flat) or len({m.lower() for m in GORE_RE.findall(flat)}) >= 2:
        return "unsafe", "gore"
    if HARM_RE.search(flat):
        return "unsafe", "harm-instructions"
    if PROFANITY_RE.search(flat):
        return "sensitive", "profanity"
    return None
