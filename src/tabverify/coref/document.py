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

CONVENTIONS = ("conll", "corefud", "first")
"""How a mention listed more than once (in two entities, or twice in one) is scored; each reader
sets the convention of the reference scorer of its format:

- ``conll`` (CoNLL-2012 and KibutzR files; the CoNLL reference scorer, Perl v8.01): the key keeps
  every copy, the response keeps the first (entities in the order the file opens them), and a
  mention is looked up in the last key entity that lists it.
- ``corefud`` (CoNLL-U; the CorefUD scorer v1.2): a copy inside one entity is dropped, copies in
  different entities are kept on both sides, and a mention is looked up in the last entity that
  lists it (entities ordered by their first mention, as udapi orders them).
- ``first`` (JSON; no reference scorer): each side keeps the first entity that lists a mention, so
  each side is a partition and identical files score 1.
"""


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
        if len(self.units) == 1:
            return self.units[0].end - self.units[0].start
        return sum(u.end - u.start for u in self.units)

    def overlap(self, other: Mention) -> int:
        """Characters covered by both mentions."""
        if len(self.units) == 1 and len(other.units) == 1:  # the usual case, kept fast
            a, b = self.units[0], other.units[0]
            return max(0, min(a.end, b.end) - max(a.start, b.start))
        total = 0
        for a in self.units:
            for b in other.units:
                total += max(0, min(a.end, b.end) - max(a.start, b.start))
        return total

    def __str__(self) -> str:
        return "+".join(f"[{u.start},{u.end})" for u in self.units)


def text_order(mention: Mention) -> tuple[tuple[int, int], ...]:
    """A sort key giving mentions' own order (by their units' starts, then ends), computed fast."""
    return tuple((u.start, u.end) for u in mention.units)


@dataclass(frozen=True)
class Document:
    """A document: its id, text and entities (each a tuple of mentions in text order).

    Attributes:
        doc_id: pairs key and response documents.
        text: the raw text, or for token formats the tokens joined by spaces.
        entities: the clusters as the file lists them; a singleton entity has one mention. A mention
            listed more than once stays listed: ``convention`` says how it is scored.
        words: spans of the words, for token formats (empty for character formats).
        convention: one of :data:`CONVENTIONS`, set by the reader from the file's format.
        entity_ids: the entities' names in the file (CoNLL numbers, CoNLL-U eids), parallel to
            ``entities``; empty when the file has none (then entities are numbered from 1).
    """

    doc_id: str
    text: str
    entities: tuple[tuple[Mention, ...], ...]
    words: tuple[Span, ...] = ()
    convention: str = field(default="first", compare=False)
    entity_ids: tuple[str, ...] = field(default=(), compare=False)

    @cached_property
    def mentions(self) -> tuple[Mention, ...]:
        """Every distinct mention, in text order."""
        return tuple(sorted({m for entity in self.entities for m in entity}, key=text_order))

    def entity_label(self, index: int) -> str:
        """The name of entity ``index`` (0-based) in the file, or its 1-based number."""
        return self.entity_ids[index] if index < len(self.entity_ids) else str(index + 1)

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

        entities = tuple(tuple(move(m) for m in e) for e in self.entities)
        return Document(self.doc_id, text, entities, words, self.convention, self.entity_ids)

    def mention_text(self, mention: Mention) -> str:
        """The text of a mention; the pieces of a discontinuous mention are joined by " … "."""
        pieces = [mention.units[0]]
        for unit in mention.units[1:]:
            if self.text[pieces[-1].end : unit.start].strip():
                pieces.append(unit)  # something stands between: a gap
            else:
                pieces[-1] = Span(pieces[-1].start, unit.end)
        return " … ".join(p.of(self.text) for p in pieces)


@dataclass
class WordSequence:
    """The text of a token document as it is read: words joined by a space, sentences by a newline;
    each word's span is kept (the one builder of the CoNLL-2012 and CoNLL-U readers)."""

    parts: list[str] = field(default_factory=list)
    words: list[Span] = field(default_factory=list)
    length: int = 0

    def add(self, form: str, new_sentence: bool = False) -> int:
        """Append a word (an empty form is written ``_``); returns its index."""
        if self.parts:
            self.parts.append("\n" if new_sentence else " ")
            self.length += 1
        form = form or "_"
        self.parts.append(form)
        self.words.append(Span(self.length, self.length + len(form)))
        self.length += len(form)
        return len(self.words) - 1

    @property
    def text(self) -> str:
        """The text so far."""
        return "".join(self.parts)


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
