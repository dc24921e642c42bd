"""Coreference documents: a text, mentions as character spans (possibly inside words), entities.

Every format is read into this one coordinate system. Token-based formats (CoNLL-2012, CoNLL-U)
get a text rebuilt from their tokens (empty nodes appear as "∅"), and a mention is the set of its
word spans, so discontinuous mentions and heads keep their word structure. Character-based formats
(JSON, IAHLT) give one span per mention, which may sit inside a word: the suffix "ו" of "ביתו".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from tabverify.text.spans import Span

KINDS = ("word", "subword", "phrase")
SUBKINDS = ("embedded_pronoun", "clitic")


@dataclass(frozen=True, slots=True, order=True)
class Mention:
    """One mention.

    Attributes:
        units: the word spans of the mention in text order (one span for a character mention);
            two mentions are the same mention when their units are equal.
        head: the span of the head word, when the format gives one.
        kind: ``word``, ``subword`` or ``phrase``.
        subkind: for sub-word mentions, ``embedded_pronoun`` or ``clitic`` when known.
        zero: the head is an empty node (a dropped pronoun in CoNLL-U).
        deps: for zeros, the enhanced dependencies of the empty node as (parent id, relation) pairs,
            parent ids written "sentence:ord"; used to match zeros by their dependencies.
    """

    units: tuple[Span, ...]
    head: Span | None = field(default=None, compare=False)
    kind: str = field(default="word", compare=False)
    subkind: str | None = field(default=None, compare=False)
    zero: bool = field(default=False, compare=False)
    deps: frozenset[tuple[str, str]] = field(default=frozenset(), compare=False)

    @classmethod
    def of(cls, start: int, end: int, kind: str | None = None, subkind: str | None = None) -> Mention:
        """A contiguous character mention ``[start, end)``."""
        return cls((Span(start, end),), None, kind or "word", subkind)

    @property
    def start(self) -> int:
        """First character."""
        return self.units[0].start

    @property
    def end(self) -> int:
        """One past the last character."""
        return self.units[-1].end

    @property
    def span(self) -> Span:
        """The smallest span covering the mention."""
        return Span(self.start, self.end)

    @property
    def length(self) -> int:
        """Characters covered (gaps of discontinuous mentions excluded)."""
        return sum(len(u) for u in self.units)

    def overlap(self, other: Mention) -> int:
        """Characters covered by both mentions."""
        total = 0
        for a in self.units:
            for b in other.units:
                total += max(0, min(a.end, b.end) - max(a.start, b.start))
        return total

    def __str__(self) -> str:
        return "+".join(f"[{u.start},{u.end})" for u in self.units)


@dataclass(frozen=True)
class Document:
    """A document: its id, text and entities (each a tuple of mentions in text order).

    Attributes:
        doc_id: pairs key and response documents.
        text: the raw text, or for token formats the tokens joined by spaces.
        entities: the clusters; a singleton entity has one mention.
        words: spans of the words, for token formats (empty for character formats).
    """

    doc_id: str
    text: str
    entities: tuple[tuple[Mention, ...], ...]
    words: tuple[Span, ...] = ()

    @cached_property
    def mentions(self) -> tuple[Mention, ...]:
        """Every mention, in text order."""
        return tuple(sorted(m for entity in self.entities for m in entity))

    def rebased(self, text: str, words_by_id: dict[str, Span], words: tuple[Span, ...]) -> Document:
        """This document on another word inventory (``words_by_id`` maps each of its word ids to the
        new span), so the same word has the same span in key and response."""
        ids: tuple[str, ...] = getattr(self, "word_ids", ()) or tuple(str(i) for i in range(len(self.words)))
        target = [words_by_id[i] for i in ids]
        index = {span: i for i, span in enumerate(self.words)}

        def move(m: Mention) -> Mention:
            units = tuple(sorted(target[index[u]] for u in m.units))
            head = target[index[m.head]] if m.head is not None else None
            return Mention(units, head, m.kind, m.subkind, m.zero, m.deps)

        return Document(self.doc_id, text, tuple(tuple(move(m) for m in e) for e in self.entities), words)

    def mention_text(self, mention: Mention) -> str:
        """The text of a mention; the pieces of a discontinuous mention are joined by " … "."""
        pieces = [mention.units[0]]
        for unit in mention.units[1:]:
            if self.text[pieces[-1].end : unit.start].strip():
                pieces.append(unit)  # something stands between: a gap
            else:
                pieces[-1] = Span(pieces[-1].start, unit.end)
        return " … ".join(p.of(self.text) for p in pieces)


def _order(word_id: str) -> tuple[float, ...]:
    """Sort key of a word id: "3:15.1" -> (3, 15, 1); plain positions "7" -> (7,)."""
    return tuple(float(part) for part in word_id.replace(":", ".").split(".") if part)


def shared_words(key: Document, response: Document) -> tuple[Document, Document]:
    """Key and response of a token format on one word inventory: words are matched by id (CoNLL-U:
    sentence and ID, so the two may differ in their empty nodes) or by position (CoNLL-2012), and
    laid out in document order."""
    key_ids: tuple[str, ...] = getattr(key, "word_ids", ()) or tuple(str(i) for i in range(len(key.words)))
    response_ids: tuple[str, ...] = getattr(response, "word_ids", ()) or tuple(
        str(i) for i in range(len(response.words))
    )
    if set(response_ids) <= set(key_ids):
        spans = dict(zip(key_ids, key.words, strict=True))
        return key, response.rebased(key.text, spans, key.words)
    forms = {i: span.of(key.text) for i, span in zip(key_ids, key.words, strict=True)}
    for i, span in zip(response_ids, response.words, strict=True):
        forms.setdefault(i, span.of(response.text))
    parts: list[str] = []
    spans = {}
    length = 0
    for word_id in sorted(forms, key=_order):
        if parts:
            parts.append(" ")
            length += 1
        spans[word_id] = Span(length, length + len(forms[word_id]))
        parts.append(forms[word_id])
        length += len(forms[word_id])
    text = "".join(parts)
    words = tuple(spans[i] for i in sorted(forms, key=_order))
    return key.rebased(text, spans, words), response.rebased(text, spans, words)


MORPHEME_BOUNDARY = "\u200b"
PREFIX_CLITICS = set("הובכלמש")


def _in_word(ch: str) -> bool:
    return ch.isalnum() or ch == MORPHEME_BOUNDARY or ch in "'\"״׳"


def classify_span(text: str, span: Span) -> tuple[str, str | None]:
    """(kind, subkind) of a character mention.

    ``phrase`` when it holds a space; else ``subword`` when it starts or ends inside an orthographic
    word (U+200B, the IAHLT morpheme mark, joins morphemes within a word), with ``clitic`` for a one-
    or two-letter prefix of a word and ``embedded_pronoun`` for a short ending; else ``word``.
    """

    def boundary(offset: int) -> bool:
        return (
            offset <= 0 or offset >= len(text) or not (_in_word(text[offset - 1]) and _in_word(text[offset]))
        )

    if any(ch.isspace() for ch in span.of(text).strip()):
        return "phrase", None
    starts_word, ends_word = boundary(span.start), boundary(span.end)
    if starts_word and ends_word:
        return "word", None
    core = span.of(text).strip(MORPHEME_BOUNDARY)
    if starts_word and len(core) <= 2 and all(ch in PREFIX_CLITICS for ch in core):
        return "subword", "clitic"
    if ends_word and len(core) <= 3 and " " not in core:
        return "subword", "embedded_pronoun"
    return "subword", None
