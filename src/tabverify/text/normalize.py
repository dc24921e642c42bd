"""Tokens with character offsets, and a light stemmer that makes raw and lemmatized text meet.

The TabFact release lemmatizes statements ("there be 3 democrat", "win"), while tables and users
write raw text ("democrats", "won"). Linking compares *stems*: both sides go through the same
light, deterministic reduction, so a plural in a cell meets a singular in a statement.

Also the small text helpers every layer shares: :func:`one_line` (bounded one-line text for
messages and prompts) and :func:`letter_words` (a case- and punctuation-blind key).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from tabverify.text.spans import Span

# a number keeps its exponent ("1e5", "1.5e-3": one token, read as 100000 and 0.0015, never as 1
# followed by a word "e" and another number)
_TOKEN_RE = re.compile(
    r"\d+(?:[.,:]\d+)*(?:[eE][-+]?\d+\b|st|nd|rd|th|%)?|[^\W\d_]+(?:'[^\W\d_]+)?|[^\w\s]", re.UNICODE
)

# irregular forms the lemmatizer produced in the release, mapped so raw text meets it (public: claim
# retrieval adds them to keyword queries)
IRREGULAR = {
    "was": "be", "were": "be", "is": "be", "are": "be", "been": "be", "being": "be", "am": "be",
    "won": "win", "lost": "lose", "had": "have", "has": "have", "did": "do", "does": "do",
    "scored": "score", "played": "play", "went": "go", "came": "come", "took": "take",
    "got": "get", "made": "make", "held": "hold", "men": "man", "women": "woman",
    "children": "child", "people": "person", "feet": "foot", "ran": "run", "began": "begin",
    "left": "leave", "drew": "draw", "drawn": "draw", "beat": "beat", "led": "lead",
    "better": "good", "best": "good", "worse": "bad", "worst": "bad",
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Token:
    """A token of a text: its surface form, its stem and where it sits."""

    text: str
    stem: str
    span: Span


@lru_cache(maxsize=500_000)
def stem(word: str) -> str:
    """A light stem: lower-case, irregular forms, plural and -ed/-ing endings stripped."""
    w = word.lower()
    if w in IRREGULAR:
        return IRREGULAR[w]
    if not w.isalpha() or len(w) <= 3:
        return w
    if w.endswith("ies") and len(w) > 4:
        return w[:-3] + "y"
    if w.endswith(("sses", "shes", "ches", "xes", "zes")):
        return w[:-2]
    if w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    if w.endswith("ed") and len(w) > 5:
        w = w[:-2]
        if w.endswith("i"):
            w = w[:-1] + "y"
    elif w.endswith("ing") and len(w) > 6:
        w = w[:-3]
    if len(w) > 4 and w.endswith("e"):
        w = w[:-1]
    return w


def tokenize(text: str) -> list[Token]:
    """Split text into word, number and punctuation tokens, keeping character offsets."""
    return [Token(m.group(0), stem(m.group(0)), Span(m.start(), m.end())) for m in _TOKEN_RE.finditer(text)]


def one_line(message: object, limit: int = 500) -> str:
    """A message (or any text for a person or a model) on one line, whitespace folded, cut to
    ``limit`` characters with a visible "…"; empty for None or a ``limit`` of 0 or less."""
    if message is None or limit <= 0:
        return ""
    text = " ".join(str(message).split())
    return text if len(text) <= limit else text[: max(1, limit - 1)].rstrip() + "…"


def letter_words(text: str) -> str:
    """The ASCII-letter words of ``text``, upper case, one space apart (``"nei (subjective)!"`` ->
    ``"NEI SUBJECTIVE"``): a key that ignores case, digits and punctuation."""
    return " ".join(re.sub(r"[^A-Za-z]+", " ", text).upper().split())


@lru_cache(maxsize=500_000)
def stem_key(text: str) -> tuple[str, ...]:
    """The stems of the meaningful tokens of a text (punctuation dropped), used as a lookup key."""
    return tuple(t.stem for t in tokenize(text) if t.text[0].isalnum())
