"""Coreference by mention ranking: each mention picks its best-scoring earlier mention, or none.

A logistic model scores (antecedent, mention) pairs with features that carry Hebrew signal: the
pronoun type (suffix pronoun ``_הוא``, free pronoun, nominal), gender and number (from the pronoun,
else from the head's ending: ות plural feminine, ים plural masculine, ה/ת singular feminine), exact
and head string match without clitics, the anaphor's stems all among the antecedent's
(by definiteness), distance in sentences and mentions, nesting, apposition
(``X , Y``) and quotation (inside or outside quotes, first-person pronouns). Decoding is best-first:
a mention links to its highest-scoring antecedent among the previous :data:`WINDOW` mentions when
that score passes the model's threshold; links are closed transitively into clusters.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

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


class PairScorer(Protocol):
    """A second pair scorer added to the feature model's log-odds (the e5 network), with its own link
    thresholds (nominal, pronoun)."""

    thresholds: tuple[float, float]

    def link_scores(
        self, tokens: Sequence[Token], infos: list[MentionInfo], pairs: list[tuple[int, int]]
    ) -> np.ndarray: ...


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
    opens_sentence: bool = False


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
    """:func:`describe` for each mention (text order), with quotation read from the open quote marks
    before it, and whether it is the first mention of its sentence."""
    quotes = np.cumsum([t.form in ('"', "״") for t in tokens]) if tokens else np.zeros(0)
    infos, seen = [], set()
    for span in spans:
        info = describe(tokens, span, bool((quotes[span[0] - 1] if span[0] else 0) % 2))
        infos.append(replace(info, opens_sentence=info.sentence not in seen))
        seen.add(info.sentence)
    return infos


def _bucket(value: int) -> str:
    for limit in (0, 1, 2, 3, 5, 8, 12, 20):
        if value <= limit:
            return str(limit)
    return "20+"


def pair_features(
    tokens: Sequence[Token],
    antecedent: MentionInfo,
    mention: MentionInfo,
    between: int,
    ranks: tuple[int, int],
) -> list[str]:
    """Features of linking ``mention`` to the earlier ``antecedent`` (``between`` mentions apart;
    ``ranks``: how many closer mentions agree with ``mention`` in gender and number, and share its head)."""
    a, m = antecedent, mention
    types = f"{a.type}>{m.type}"
    sentences = _bucket(m.sentence - a.sentence)
    nested = (a.span[0] <= m.span[0] and m.span[1] <= a.span[1]) or (
        m.span[0] <= a.span[0] and a.span[1] <= m.span[1]
    )
    agree = (
        "same" if a.agreement == m.agreement else "unknown" if "?" in a.agreement + m.agreement else "differ"
    )
    agree_rank, head_rank = (_bucket(r) for r in ranks)
    features = [
        "bias",
        f"types={types}",
        f"sent={sentences}|types={types}",
        f"between={_bucket(between)}|m={m.type}",
        f"agree={agree}|types={types}",
        f"agree={agree}|rank={agree_rank}|m={m.type}",
        f"agr={a.agreement}>{m.agreement}|m={m.type}",
        f"nested={nested}|types={types}",
        f"quoted={a.quoted}>{m.quoted}|m={m.agreement}",
    ]
    a_stems, m_stems = set(a.words.split()), set(m.words.split())
    if a.words and a.words == m.words:
        features += ["exact", f"exact|types={types}", f"exact|rank={head_rank}"]
    elif a.head == m.head:
        features += [
            f"head_match|types={types}",
            f"head_match|sent={sentences}",
            f"head_match|rank={head_rank}",
        ]
    elif len(a.head) > 2 and a.head[:3] == m.head[:3]:
        features += [f"head_prefix|types={types}", f"head_prefix|sent={sentences}"]
    shared = len(a_stems & m_stems)
    if shared and not (a.words == m.words):
        features.append(f"shared={min(shared, 3)}|of={min(len(m_stems), 4)}|types={types}")
    if m.type in PRONOUN_TYPES:
        features.append(f"pron={m.first}|ant_head_end={a.head[-1:]}|ant={a.type}")
        features.append(f"pron={m.first}|ant_first={a.first}")
        features.append(f"pron={m.first}|a={a.type}|sent={sentences}|rank={agree_rank}")
        features.append(f"ant_opens={a.opens_sentence}|sent={sentences}|agree={agree}|m={m.type}")
    else:
        features.append(f"heads={a.head}>{m.head}")
        # the anaphor's stems all in the antecedent's: "the minister" after "the finance minister"
        if m_stems and m_stems <= a_stems and a.words != m.words:
            inner = tokens[m.span[0] : m.span[1] + 1]
            head_at = next((k for k, t in enumerate(inner) if t.kind == "stem"), 0)
            definite = any(t.kind == "article" for t in inner[: head_at + 1])  # ה before the head
            features.append(f"contained|def={definite}|sent={sentences}")
    if a.span[1] + 2 == m.span[0] and tokens[a.span[1] + 1].form == ",":
        features.append(f"apposition|types={types}")
    if m.span[0] and tokens[m.span[0] - 1].kind == "stem" and m.type == "suffix_pron":
        features.append(f"host={tokens[m.span[0] - 1].form}|agree={agree}")
    return features


MAX_FAR = 100
"""Earlier same-head mentions beyond the window offered as antecedents: the most recent ones only, so a
text repeating one head thousands of times stays linear (KibutzR train offers at most 40 with gold
mentions, so training is unchanged)."""

_SCORE_BATCH = 20_000
"""Pairs scored at a time when resolving (their feature lists are not all held at once)."""


def _pairs(
    tokens: Sequence[Token], infos: Sequence[MentionInfo]
) -> Iterator[tuple[tuple[int, int], list[str]]]:
    """Each (antecedent, mention) pair to score, with its features: the previous :data:`WINDOW`
    mentions, and the :data:`MAX_FAR` most recent earlier mentions with the same head."""
    by_head: dict[str, list[int]] = {}
    for i, m in enumerate(infos):
        agreeing = same_head = 0
        window = range(i - 1, max(-1, i - WINDOW - 1), -1)
        far = [j for j in reversed(by_head.get(m.head, [])[-(WINDOW + MAX_FAR) :]) if j < i - WINDOW]
        for j in [*window, *far[:MAX_FAR]]:
            a = infos[j]
            yield (j, i), pair_features(tokens, a, m, i - j - 1, (agreeing, same_head))
            agreeing += a.agreement == m.agreement
            same_head += a.head == m.head
        by_head.setdefault(m.head, []).append(i)


def pair_rows(
    tokens: Sequence[Token], infos: Sequence[MentionInfo]
) -> tuple[list[tuple[int, int]], list[list[str]]]:
    """The (antecedent, mention) pairs to score and their features (:func:`_pairs`), as lists."""
    pairs, rows = [], []
    for pair, row in _pairs(tokens, infos):
        pairs.append(pair)
        rows.append(row)
    return pairs, rows


PRONOUN_TYPES = frozenset({"pron", "suffix_pron", "demonstrative"})


def score_pairs(
    tokens: Sequence[Token], spans: Sequence[MorphRange], model: LinearModel
) -> tuple[list[MentionInfo], list[tuple[int, int]], np.ndarray]:
    """The mentions (text order), their candidate pairs and the pairs' log-odds."""
    infos = describe_all(tokens, sorted(spans))
    pairs: list[tuple[int, int]] = []
    scores: list[np.ndarray] = []
    batch: list[list[str]] = []
    for pair, row in _pairs(tokens, infos):
        pairs.append(pair)
        batch.append(row)
        if len(batch) == _SCORE_BATCH:
            scores.append(model.scores(batch))
            batch = []
    scores.append(model.scores(batch) if batch else np.zeros(0))
    return infos, pairs, np.concatenate(scores)


def decode(
    infos: Sequence[MentionInfo],
    pairs: Sequence[tuple[int, int]],
    scores: np.ndarray,
    thresholds: Sequence[float],
) -> list[list[MorphRange]]:
    """Best-first clusters, in text order: a mention joins its best-scoring antecedent whose score passes
    the threshold of its type (``thresholds[0]`` nominal, ``thresholds[-1]`` pronouns and
    demonstratives) and whose cluster holds no personal pronoun of another person, gender or number."""
    limits = [thresholds[-1] if info.type in PRONOUN_TYPES else thresholds[0] for info in infos]
    parent = list(range(len(infos)))
    pronouns = [{info.agreement} if info.type in ("pron", "suffix_pron") else set() for info in infos]

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    options: dict[int, list[tuple[float, int]]] = {}
    for (j, i), score in zip(pairs, scores, strict=True):
        if score > limits[i]:
            options.setdefault(i, []).append((-float(score), j))
    for i in sorted(options):
        mine = pronouns[root(i)]
        for _, j in sorted(options[i]):
            theirs = pronouns[root(j)]
            if mine and theirs and not mine & theirs:
                continue
            top = root(j)
            if top != root(i):
                pronouns[top] = theirs | pronouns[root(i)]
                parent[root(i)] = top
            break
    groups: dict[int, list[MorphRange]] = {}
    for i, info in enumerate(infos):
        groups.setdefault(root(i), []).append(info.span)
    return list(groups.values())


def cluster(
    tokens: Sequence[Token],
    spans: Sequence[MorphRange],
    model: LinearModel,
    network: PairScorer | None = None,
) -> list[list[MorphRange]]:
    """Clusters of the mentions ``spans`` (text order), singletons included. With ``network``, a pair's
    score is the model's log-odds plus the network's ``link_scores``, decoded with the network's
    thresholds."""
    infos, pairs, scores = score_pairs(tokens, spans, model)
    if network is None:
        return decode(infos, pairs, scores, model.thresholds)
    return decode(infos, pairs, scores + network.link_scores(tokens, infos, pairs), network.thresholds)
