"""Trigger words: a family of functions is only searched when the statement carries one of its
triggers (LPA's pruning, extended with the lemmatized forms of the TabFact release)."""

from __future__ import annotations

from collections.abc import Sequence

from tabverify.text.normalize import Token, stem

UP_WORDS = frozenset(
    "highest largest biggest greatest most maximum max longest more larger bigger greater higher "
    "longer over above exceed exceeds exceeded exceeding".split()
)
"""Words whose direction is "larger values" whatever the column (superlatives and comparatives)."""
DOWN_WORDS = frozenset(
    "lowest smallest least fewest minimum min shortest less fewer smaller lower shorter under below".split()
)
"""Words whose direction is "smaller values" whatever the column."""
EITHER_WORDS = frozenset(
    "first last earliest latest oldest youngest newest best worst top bottom fastest slowest "
    "before after earlier later older younger newer better worse beat outscore outscored since until "
    "between within beyond past record peak lead leader".split()
)
"""Comparison words whose direction depends on the column (a date, a rank, a time): they license
a comparison program in either direction."""

_TRIGGERS: dict[str, tuple[str, ...]] = {
    "count": ("there", "number", "total", "count", "time", "amount", "how", "many", "game", "match",
              "occasion", "all", "both", "of", "few", "several", "more", "less", "most", "least",
              "once", "twice", "thrice", "single", "double", "triple", "only", "just", "exactly", "have",
              "be", "in", "with", "win", "lose", "play", "score", "hold", "take", "make"),
    "avg": ("average", "mean", "avg", "per", "typical", "averag"),
    "sum": ("sum", "total", "combine", "combin", "overall", "together", "altogether", "all", "accumulate", "aggregate"),
    "diff": ("difference", "gap", "than", "more", "less", "fewer", "differ", "margin", "between", "apart",
             "older", "younger", "higher", "lower", "longer", "shorter", "after", "before", "earlier", "later",
             "bigger", "larger", "smaller", "ahead", "behind"),
    "compare": ("than", "more", "less", "fewer", "greater", "larger", "smaller", "higher", "lower", "bigger",
                "longer", "shorter", "older", "younger", "earlier", "later", "before", "after", "above", "below",
                "over", "under", "exceed", "beat", "better", "worse", "good", "bad", "outscore", "most", "least",
                "top", "bottom", "at", "beyond", "within", "past", "only", "both", "same", "also", "while"),
    "superlative": ("highest", "lowest", "most", "least", "largest", "smallest", "biggest", "best", "worst",
                    "top", "bottom", "first", "last", "earliest", "latest", "oldest", "youngest", "newest",
                    "longest", "shortest", "fastest", "slowest", "maximum", "minimum", "max", "min", "record",
                    "greatest", "fewest", "high", "low", "large", "small", "big", "long", "short", "early",
                    "late", "old", "young", "new", "good", "bad", "great", "few", "lead", "leader", "peak"),
    "ordinal": ("first", "second", "third", "fourth", "fifth", "last", "1st", "2nd", "3rd", "4th", "5th",
                "final", "begin", "start", "end", "open", "close", "next", "previous", "prior"),
    "only": ("only", "unique", "sole", "solely", "single", "alone", "just", "one", "exclusive", "lone"),
    "all": ("all", "every", "each", "both", "always", "entire", "whole", "any", "none", "never", "no"),
    "negation": ("not", "no", "never", "n't", "neither", "nor", "none", "fail", "different", "outside",
                 "without", "except", "other", "nobody", "nothing", "unlike"),
    "same": ("same", "both", "equal", "also", "as", "tie", "identical", "too", "share", "match"),
    "most_freq": ("most", "common", "frequent", "often", "majority", "usual", "popular", "predominant"),
    "half": ("half", "third", "majority", "quarter"),
}  # fmt: skip

_STEMMED: dict[str, frozenset[str]] = {
    family: frozenset(stem(word) for word in words) | frozenset(words) for family, words in _TRIGGERS.items()
}


def active_families(tokens: tuple[Token, ...] | list[Token]) -> frozenset[str]:
    """Function families whose trigger words occur among the tokens."""
    words = {t.stem for t in tokens} | {t.text.lower() for t in tokens}
    if any(t.text.lower().endswith(("er", "est")) and len(t.text) > 4 for t in tokens):
        words.add("more")  # comparative / superlative adjectives ("taller", "heaviest")
    active = {family for family, triggers in _STEMMED.items() if words & triggers}
    if any(t.text.lower().endswith("est") and len(t.text) > 4 for t in tokens):
        active.add("superlative")
    return frozenset(active)


TRIGGER_WORDS: frozenset[str] = frozenset().union(*_STEMMED.values())
"""Every trigger word (surface and stemmed forms)."""


def ranks_by_direction(words_after: Sequence[str]) -> bool:
    """True when the (lower-case) words right after an ordinal make it a rank to order by ("2nd
    highest", "third most"): one of the next two is a direction word or a superlative in -est."""
    return any(w in UP_WORDS or w in DOWN_WORDS or w in EITHER_WORDS or (len(w) > 4 and w.endswith("est"))
               for w in words_after[:2])  # fmt: skip
