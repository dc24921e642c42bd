"""Coreference by mention ranking: each mention picks its best-scoring earlier mention, or none.

A logistic model scores (antecedent, mention) pairs with features that carry Hebrew signal: the
pronoun type (suffix pronoun ``_הוא``, free pronoun, nominal), gender and number (from the pronoun,
else from the head's ending: ות plural feminine, ים plural masculine, ה/ת singular feminine), exact
and head string match without clitics, distance in sentences and mentions, nesting, apposition
(``X , Y``) and quotation (inside or outside quotes, first-person pronouns). Decoding is best-first:
a mention links to its highest-scoring antecedent among the previous :data:`WINDOW` mentions when
that score passes the model's threshold; links are closed transitively into clusters.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tabverify.coref.resolver.data import MorphRange, Token
from tabverify.coref.resolver.model import LinearModel

WINDOW = 40
"""How many earlier mentions a mention may link to."""

PRONOUNS = {
    "אני": "1sg", "אנחנו": "1pl", "אנו": "1pl", "אתה": "2msg", "את": "2fsg", "אתם": "2mpl", "אתן": "2fpl",
    "הוא": "3msg", "היא": "3fsg", "הם": "3mpl", "הן": "3fpl",
}  # fmt: skip
"""Personal pronouns (free, or as suffixes ``_הוא``) and their person, gender and number."""

DEMONSTRATIVES = frozenset({"זה", "זו", "זאת", "אלה", "אלו", "הזה", "הזו", "הזאת", "האלה", "אותו", "אותה"})


@dataclass(frozen=True, slots=True)
class MentionInfo:
    """What the pair features read from one mention."""

    span: MorphRange
    sentence: int
    type: str
    agreement: str
    head: str
    words: str
    first: str
    quoted: bool


def _agreement(form: str) -> str:
    if form.endswith("ות"):
        return "fpl"
    if form.endswith("ים"):
        return "mpl"
    if form.endswith(("ה", "ת")):
        return "fsg"
    return "msg?"


def describe(tokens: Sequence[Token], span: MorphRange, quoted: bool) -> MentionInfo:
    """The pair-feature view of the mention ``tokens[span[0]..span[1]]``."""
    inner = tokens[span[0] : span[1] + 1]
    stems = [t.form for t in inner if t.kind == "stem"]
    first = inner[0]
    bare = first.form.strip("_")
    if len(inner) == 1 and bare in PRONOUNS:
        kind = "suffix_pron" if first.kind == "suffix" else "pron"
        agreement = PRONOUNS[bare]
    elif stems and stems[0] in DEMONSTRATIVES and len(inner) == 1:
        kind, agreement = "demonstrative", _agreement(stems[0])
    else:
        kind = "nominal" if len(inner) > 1 else "name_or_noun"
        agreement = _agreement(stems[0]) if stems else "?"
    head = stems[0] if stems else bare
    return MentionInfo(span, first.sentence, kind, agreement, head, " ".join(stems), bare, quoted)


def describe_all(tokens: Sequence[Token], spans: Sequence[MorphRange]) -> list[MentionInfo]:
    """:func:`describe` for each mention, with quotation read from the open quote marks before it."""
    quotes = np.cumsum([t.form in ('"', "״") for t in tokens]) if tokens else np.zeros(0)
    return [describe(tokens, s, bool((quotes[s[0] - 1] if s[0] else 0) % 2)) for s in spans]


def _bucket(value: int) -> str:
    for limit in (0, 1, 2, 3, 5, 8, 12, 20):
        if value <= limit:
            return str(limit)
    return "20+"


def pair_features(
    tokens: Sequence[Token], antecedent: MentionInfo, mention: MentionInfo, between: int
) -> list[str]:
    """Features of linking ``mention`` to the earlier ``antecedent`` (``between`` mentions apart)."""
    a, m = antecedent, mention
    types = f"{a.type}>{m.type}"
    sentences = _bucket(m.sentence - a.sentence)
    nested = a.span[0] <= m.span[0] and m.span[1] <= a.span[1]
    agree = (
        "same" if a.agreement == m.agreement else "unknown" if "?" in a.agreement + m.agreement else "differ"
    )
    features = [
        "bias",
        f"types={types}",
        f"sent={sentences}|types={types}",
        f"between={_bucket(between)}|m={m.type}",
        f"agree={agree}|types={types}",
        f"agr={a.agreement}>{m.agreement}|m={m.type}",
        f"nested={nested}|types={types}",
        f"quoted={a.quoted}>{m.quoted}|m={m.agreement}",
    ]
    if a.words and a.words == m.words:
        features += ["exact", f"exact|types={types}"]
    elif a.head == m.head:
        features += ["head_match", f"head_match|types={types}", f"head_match|sent={sentences}"]
    elif a.words and m.words and (a.words in m.words or m.words in a.words):
        features.append(f"contains|types={types}")
    if m.type in ("pron", "suffix_pron", "demonstrative"):
        features.append(f"pron={m.first}|ant_head_end={a.head[-1:]}|ant={a.type}")
        features.append(f"pron={m.first}|ant_first={a.first}")
    else:
        features.append(f"heads={a.head}>{m.head}")
    if a.span[1] + 2 == m.span[0] and tokens[a.span[1] + 1].form == ",":
        features.append(f"apposition|types={types}")
    if m.span[0] and tokens[m.span[0] - 1].kind == "stem" and m.type == "suffix_pron":
        features.append(f"host={tokens[m.span[0] - 1].form}|agree={agree}")
    return features


def candidate_pairs(infos: Sequence[MentionInfo]) -> list[tuple[int, int]]:
    """(antecedent, mention) index pairs within the window, antecedent first in the text."""
    return [(j, i) for i in range(len(infos)) for j in range(max(0, i - WINDOW), i)]


def cluster(
    tokens: Sequence[Token], spans: Sequence[MorphRange], model: LinearModel
) -> list[list[MorphRange]]:
    """Clusters of the mentions ``spans`` (text order), singletons included."""
    spans = sorted(spans)
    infos = describe_all(tokens, spans)
    pairs = candidate_pairs(infos)
    rows = [pair_features(tokens, infos[j], infos[i], i - j - 1) for j, i in pairs]
    scores = model.scores(rows)
    parent = list(range(len(spans)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    best: dict[int, tuple[float, int]] = {}
    for (j, i), score in zip(pairs, scores, strict=True):
        if score > model.threshold and score > best.get(i, (-np.inf, -1))[0]:
            best[i] = (float(score), j)
    for i, (_, j) in sorted(best.items()):
        parent[root(i)] = root(j)
    groups: dict[int, list[MorphRange]] = {}
    for i, span in enumerate(spans):
        groups.setdefault(root(i), []).append(span)
    return list(groups.values())
