"""The hard cases of Hebrew coreference, counted on a scored response: what the system did with each.

The cases are the spec's (../shared/specs/hebrew-coref.md): long-distance agreement-only links,
generic vs specific article ה-, zero subjects. Each is defined from the KEY alone - the entities as
scored, after the singleton and zero options - so the same gold mentions are counted for every
response:

- ``long_distance_pronoun``: a gold pronoun (:func:`is_pronoun`: a personal pronoun such as הוא,
  היא, הם, free or after prefix letters, or a pronominal suffix such as the ו of ביתו) linked
  to its nearest earlier mention of the same entity when that antecedent is FAR - at least
  :data:`FAR_SENTENCES` sentence ends lie between them (a sentence end: ``.``, ``!``, ``?`` or ``…``,
  closing quotes allowed, then a space or the end; or a line break, once per end), so the antecedent is not in the anaphor's
  sentence nor the one before - and shares no word with the anaphor (only gender and number
  agreement can link them).
- ``article_singleton`` and ``article_in_entity``: gold mentions that open with a WRITTEN article
  ה- (after any prefix letters the mention holds, as in והבית), as the resolver's segmenter
  (:mod:`tabverify.coref.resolver.morph`) analyses the key text (:func:`article_openings`); split
  into singletons (often generic: "the public", "the economy") and mentions of multi-mention
  entities (specific). When the options remove singletons there are none of the first kind.
- ``zero``: gold zero mentions (headed by an empty node, CoNLL-U/CorefUD); none when the key format
  has no empty nodes (KibutzR, JSON) or the options remove zeros.

Outcomes, from the alignment the scores were computed with (a gold mention is found when a system
mention is aligned to it):

- a link: ``right`` when both mentions are found in one system entity; ``missed`` when either is not
  found; ``unlinked`` when the anaphor's system mention is alone in its entity; else ``wrong``.
- a singleton: ``right`` when its system mention is alone in its entity (left generic), ``wrong``
  when linked to anything; ``missed`` when not found.
- a mention of a multi-mention entity (article, zero): ``right`` when its system entity holds
  another mention aligned to the same gold entity; ``unlinked`` when alone; else ``wrong``;
  ``missed`` when not found.
"""

from __future__ import annotations

import heapq
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from tabverify.coref.document import Document, Mention, text_order
from tabverify.coref.duplicates import last_listing
from tabverify.coref.resolver.links import PRONOUNS
from tabverify.coref.resolver.morph import PRONOUN_TAILS, segment

CATEGORIES = ("long_distance_pronoun", "article_singleton", "article_in_entity", "zero")
OUTCOMES = ("right", "wrong", "unlinked", "missed")

FAR_SENTENCES = 2
"""Sentence ends between an antecedent and its anaphor from which the link counts as long-distance."""

EXAMPLES = 6
"""Examples kept per category (failures first, then right ones; each in document and text order)."""

_SENTENCE_END = re.compile(r"[.!?…]+[\"'״׳)\]]*(?:[^\S\n]*\n|(?=\s|$))|\n")  # "הלך.\n" is one end
_WORD = re.compile(r"\w+")


class ScoredPair(Protocol):
    """What is read of a scored document pair (:class:`tabverify.coref.score.DocumentAlignment`):
    the documents, the entities as scored (a mention belongs to the last that lists it) and the
    alignment (response mention -> key mention)."""

    @property
    def key(self) -> Document: ...
    @property
    def response(self) -> Document: ...
    @property
    def key_entities(self) -> tuple[tuple[Mention, ...], ...]: ...
    @property
    def response_entities(self) -> tuple[tuple[Mention, ...], ...]: ...
    @property
    def alignment(self) -> Mapping[Mention, Mention]: ...


@dataclass(frozen=True)
class HardCase:
    """One gold mention (or link) of a hard case and what the system did with it.

    Attributes:
        category: one of :data:`CATEGORIES`.
        outcome: one of :data:`OUTCOMES`.
        key: the key document (its text gives the context).
        mention: the gold mention (for a link, the anaphor).
        antecedent: for a link, the nearest earlier gold mention of its entity; else None.
        system: what the system did, in words: its entity's name and what else that entity holds
            (for a link, also the antecedent's entity).
    """

    category: str
    outcome: str
    key: Document
    mention: Mention
    antecedent: Mention | None
    system: str


@dataclass(frozen=True)
class HardCases:
    """Counts and examples of the hard cases over every scored document pair.

    Attributes:
        counts: category -> outcome -> how many gold mentions (links for ``long_distance_pronoun``).
        examples: category -> the first cases that failed, then the first right ones, as many in all
            as asked (:data:`EXAMPLES` by default).
        notes: why a category may be empty (singletons or zeros removed by the options).
    """

    counts: dict[str, dict[str, int]]
    examples: dict[str, tuple[HardCase, ...]] = field(repr=False)
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, object]:
        """``{category: {outcome: count, ..., "total": n}, ..., "notes": [...]}`` (JSON-ready)."""
        result: dict[str, object] = {
            category: {**counts, "total": sum(counts.values())} for category, counts in self.counts.items()
        }
        result["notes"] = list(self.notes)
        return result


def sentence_ends(text: str) -> int:
    """How many sentence ends ``text`` holds (see the module documentation).

    >>> sentence_ends("הוא בא. היא הלכה! ו")
    2
    """
    return len(_SENTENCE_END.findall(text))


def is_pronoun(key: Document, mention: Mention) -> bool:
    """A gold mention that is a personal pronoun (:data:`~tabverify.coref.resolver.links.PRONOUNS`,
    free or after prefix letters, as in והוא), or a pronominal suffix: a sub-word mention ending its
    word whose letters are a suffix's (:data:`~tabverify.coref.resolver.morph.PRONOUN_TAILS`: the ו of
    ביתו, the ם of להם). The reader's sub-kind alone would also take a short stem after a prefix
    (the ארץ of בארץ)."""
    text = key.mention_text(mention)
    return text in PRONOUNS or (mention.subkind == "embedded_pronoun" and text in PRONOUN_TAILS.values())


def article_openings(text: str) -> frozenset[int]:
    """The offsets at which a mention opens with a written article ה-: the article's own offset and
    those of the prefix letters written before it in its word (ו and ה of והבית), as the resolver's
    segmenter analyses ``text``."""
    openings: set[int] = set()
    run: list[int] = []  # offsets of the prefix morphemes just before, within the word
    for morph in segment(text):
        if morph.kind == "article" and morph.form == "ה":
            openings.update(run)
            openings.add(morph.start)
        run = [*run, morph.start] if morph.kind == "prefix" else []
    return frozenset(openings)


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text))


@dataclass(frozen=True)
class _Found:
    category: str
    outcome: str
    mention: Mention
    antecedent: Mention | None = None


class _Pair:
    """One scored document pair, indexed so that each outcome is answered without walking an entity."""

    def __init__(self, scored: ScoredPair) -> None:
        self.scored = scored
        self.gold_of = last_listing(scored.key_entities)
        self.system_of = last_listing(scored.response_entities)
        self.found = {k: s for s, k in scored.alignment.items()}
        self.members: dict[int, list[Mention]] = {}
        for m, j in self.system_of.items():
            self.members.setdefault(j, []).append(m)
        self.aligned_gold: dict[int, Counter[int]] = {}  # system entity -> gold entity -> aligned mentions
        for s, k in scored.alignment.items():
            self.aligned_gold.setdefault(self.system_of[s], Counter())[self.gold_of[k]] += 1
        self.gold_members: dict[int, list[Mention]] = {}
        for m, i in self.gold_of.items():
            self.gold_members.setdefault(i, []).append(m)
        for mentions in self.gold_members.values():
            mentions.sort(key=text_order)

    def describe(self, mention: Mention) -> str:
        """What the system did with a gold mention, in words."""
        s = self.found.get(mention)
        if s is None:
            return "not found"
        j = self.system_of[s]
        others = [m for m in self.members[j] if m != s]
        name = "S" + self.scored.response.entity_label(j)
        if not others:
            return f"found, alone in {name}"
        shown = ", ".join(
            self.scored.response.mention_text(m) for m in heapq.nsmallest(4, others, key=text_order)
        )
        more = f" and {len(others) - 4} more" if len(others) > 4 else ""
        return f"found, in {name} with {shown}{more}"

    def mention_outcome(self, mention: Mention) -> str:
        """The outcome of a gold mention of a multi-mention entity."""
        s = self.found.get(mention)
        if s is None:
            return "missed"
        j = self.system_of[s]
        if len(self.members[j]) == 1:
            return "unlinked"
        return "right" if self.aligned_gold[j][self.gold_of[mention]] > 1 else "wrong"

    def singleton_outcome(self, mention: Mention) -> str:
        """The outcome of a gold singleton: ``right`` when left alone."""
        s = self.found.get(mention)
        if s is None:
            return "missed"
        return "right" if len(self.members[self.system_of[s]]) == 1 else "wrong"

    def link_outcome(self, anaphor: Mention, antecedent: Mention) -> str:
        """The outcome of a gold link."""
        a, b = self.found.get(anaphor), self.found.get(antecedent)
        if a is None or b is None:
            return "missed"
        if self.system_of[a] == self.system_of[b]:
            return "right"
        return "unlinked" if len(self.members[self.system_of[a]]) == 1 else "wrong"

    def cases(self) -> list[_Found]:
        """Every hard case of this document pair, in text order."""
        key = self.scored.key
        needs_articles = any("ה" in key.text[m.start : m.start + 4] for m in self.gold_of)
        articles = article_openings(key.text) if needs_articles else frozenset()
        cases = []
        for entity in self.gold_members.values():
            for n, mention in enumerate(entity):
                if mention.zero:
                    cases.append(_Found("zero", self.mention_outcome(mention), mention))
                elif mention.start in articles and len(entity) == 1:
                    cases.append(_Found("article_singleton", self.singleton_outcome(mention), mention))
                elif mention.start in articles:
                    cases.append(_Found("article_in_entity", self.mention_outcome(mention), mention))
                if not is_pronoun(key, mention):
                    continue
                earlier = (entity[i] for i in range(n - 1, -1, -1) if entity[i].end <= mention.start)
                antecedent = next(earlier, None)
                if antecedent is None:
                    continue
                far = sentence_ends(key.text[antecedent.end : mention.start]) >= FAR_SENTENCES
                if far and not _words(key.mention_text(mention)) & _words(key.mention_text(antecedent)):
                    outcome = self.link_outcome(mention, antecedent)
                    cases.append(_Found("long_distance_pronoun", outcome, mention, antecedent))
        return sorted(cases, key=lambda c: text_order(c.mention))

    def example(self, found: _Found) -> HardCase:
        """The case with the system's doing in words (for a link, where the antecedent went too)."""
        system = self.describe(found.mention)
        if found.antecedent is not None:
            s = self.found.get(found.antecedent)
            where = (
                "not found" if s is None else "in S" + self.scored.response.entity_label(self.system_of[s])
            )
            system = f"{system}; the antecedent {where}"
        return HardCase(
            found.category, found.outcome, self.scored.key, found.mention, found.antecedent, system
        )


def hard_cases(
    alignments: Sequence[ScoredPair], options: Mapping[str, object], examples: int = EXAMPLES
) -> HardCases:
    """The hard cases of a scored response (see the module documentation): counts per category
    and outcome, and up to ``examples`` cases per category, failures first.

    Args:
        alignments: the scored document pairs (:attr:`tabverify.coref.score.CorefResult.alignments`).
        options: the scoring options (:attr:`~tabverify.coref.score.CorefResult.options`); their
            ``singletons`` and ``zeros`` entries say whether a category is empty by construction.
    """
    counts = {category: dict.fromkeys(OUTCOMES, 0) for category in CATEGORIES}
    failures: dict[str, list[tuple[_Pair, _Found]]] = {category: [] for category in CATEGORIES}
    successes: dict[str, list[tuple[_Pair, _Found]]] = {category: [] for category in CATEGORIES}
    for scored in alignments:
        pair = _Pair(scored)
        for found in pair.cases():
            counts[found.category][found.outcome] += 1
            kept = successes if found.outcome == "right" else failures
            if len(kept[found.category]) < examples:
                kept[found.category].append((pair, found))
    chosen = {
        category: tuple(
            pair.example(found) for pair, found in (failures[category] + successes[category])[:examples]
        )
        for category in CATEGORIES
    }
    notes = []
    if options.get("singletons") != "kept":
        notes.append("singletons were removed before alignment, so no ה- singleton is counted")
    if options.get("zeros") == "removed":
        notes.append("zero mentions were removed by the options, so none is counted")
    elif not any(counts["zero"].values()):
        notes.append("the key holds no zero mentions (its format has no empty nodes, or none is annotated)")
    return HardCases(counts, chosen, tuple(notes))
