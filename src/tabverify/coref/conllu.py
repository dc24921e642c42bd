"""CorefUD CoNLL-U: coreference in the MISC column (``Entity=``), read and written.

Brackets follow CorefUD 1.0: ``(e1-person-2-`` opens a mention of entity e1 whose head is its 2nd
word (the field order comes from ``# global.Entity``), ``e1)`` closes it, ``(e1-person-1-)`` is a
one-word mention, ``e1[1/2]`` marks the parts of a discontinuous mention. Mentions cover every node
between their brackets, empty nodes (``5.1``) included; a mention whose head is an empty node is a
zero. Multi-word tokens (``1-2``) are kept out of the word sequence (their words carry the mentions).
Words are identified by sentence and ``ID``, so key and response may differ in their empty nodes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from tabverify.coref.document import Document, Mention, WordSequence, text_order
from tabverify.coref.source import CorefFormatError, listed, read_source, shown
from tabverify.text.spans import Span

EMPTY_NODE = "∅"
"""How an empty node (a dropped pronoun) appears in the text rebuilt from the tokens."""

BRACKET = re.compile(
    r"\((?P<open>[^()\[\-]+)(?P<part>\[\d+/\d+\])?(?P<attrs>-[^()]*)?(?P<single>\))?"
    r"|(?P<close>[^()\[\-]+)(?P<cpart>\[\d+/\d+\])?\)"
)
TOKEN_ID = re.compile(r"^(?:\d+|\d+-\d+|\d+\.\d+)$")


@dataclass
class _Open:
    entity: str
    words: list[int] = field(default_factory=list)
    head: int | None = None


@dataclass(frozen=True)
class ConlluDocument(Document):
    """A document read from CoNLL-U: words carry their ids (``"3:5.1"``) and empty nodes their DEPS."""

    word_ids: tuple[str, ...] = ()
    deps: dict[int, frozenset[tuple[str, str]]] = field(default_factory=dict, compare=False)


@dataclass
class _DocumentState:
    doc_id: str
    fields: list[str]
    where: str
    words: WordSequence = field(default_factory=WordSequence)
    word_ids: list[str] = field(default_factory=list)
    empty: list[bool] = field(default_factory=list)
    deps: dict[int, frozenset[tuple[str, str]]] = field(default_factory=dict)
    entities: dict[str, list[Mention]] = field(default_factory=dict)
    open: list[_Open] = field(default_factory=list)
    pending: dict[str, _Open] = field(default_factory=dict)  # discontinuous mentions being collected

    def add_word(self, form: str, word_id: str, empty: bool, new_sentence: bool) -> int:
        self.word_ids.append(word_id)
        self.empty.append(empty)
        return self.words.add(EMPTY_NODE if empty and form in ("", "_") else form, new_sentence)

    def finish(self, opened: _Open, where: str) -> None:
        words = sorted(set(opened.words))
        if opened.head is not None and not 0 <= opened.head < len(words):
            raise CorefFormatError(
                f"{where}: the head of a mention of {opened.entity[:20]} is its word {opened.head + 1}, but the "
                f"mention has {len(words)} word(s); the head field counts the mention's words from 1"
            )
        head = words[opened.head] if opened.head is not None else words[0]
        units = tuple(self.words.words[i] for i in words)
        kind = "phrase" if len(units) > 1 else "word"
        zero = self.empty[head]
        deps = self.deps.get(head, frozenset()) if zero else frozenset()
        mention = Mention(units, self.words.words[head], kind, None, zero, deps)
        self.entities.setdefault(opened.entity, []).append(mention)

    def build(self) -> ConlluDocument:
        if self.open or self.pending:
            names = sorted({o.entity for o in self.open} | set(self.pending))
            raise CorefFormatError(
                f"{self.where}: document {shown(self.doc_id)} ends with unclosed mention(s) of {listed(names)}; "
                "every opening bracket needs its closing one"
            )

        def first(item: tuple[str, list[Mention]]) -> tuple[object, ...]:
            # udapi's order (the CorefUD scorer's): by the first mention - its first word, then the
            # longer mention, then its last word - and then by entity id
            m = min(item[1], key=lambda m: (m.units[0], -len(m.units), m.units[-1]))
            return (m.units[0], -len(m.units), m.units[-1], item[0])

        entities = sorted(self.entities.items(), key=first)
        return ConlluDocument(
            self.doc_id,
            self.words.text,
            tuple(tuple(sorted(mentions, key=text_order)) for _, mentions in entities),
            tuple(self.words.words),
            "corefud",
            tuple(name for name, _ in entities),
            tuple(self.word_ids),
            dict(self.deps),
        )


def _head_index(attrs: str | None, fields: list[str], where: str) -> int | None:
    """The 0-based head position given in a bracket's attributes, or None when there is none."""
    if not attrs or "head" not in fields:
        return None
    values = attrs.split("-")  # attrs starts with '-': values[0] is empty, values[1:] follow fields[1:]
    position = fields.index("head")
    if position >= len(values) or values[position] in ("", "_"):
        return None
    value = values[position]
    if not value.isdigit() or int(value) < 1:
        raise CorefFormatError(
            f"{where}: the head of a mention is {shown(value)}; it must be a word number of the mention, from 1"
        )
    return int(value) - 1


def _parse_deps(value: str, sentence: int) -> frozenset[tuple[str, str]]:
    if value in ("", "_"):
        return frozenset()
    result = set()
    for item in value.split("|"):
        parent, _, relation = item.partition(":")
        result.add((f"{sentence}:{parent}", relation))
    return frozenset(result)


def read_conllu(path: str | Path) -> list[Document]:
    """Documents of a CorefUD CoNLL-U file (``# newdoc id =`` starts a document).

    Raises:
        CorefFormatError: a token line without 10 columns, an ID or HEAD that is not a word
            number, a bracket closing an entity that is not open, a head outside its mention, a
            document without tokens, or mentions left open at the end of a document.
    """
    path = Path(path)
    documents: list[Document] = []
    fields = ["eid", "etype", "head", "other"]
    state: _DocumentState | None = None
    sentence, new_sentence = 0, False
    heads: list[tuple[str, int]] = []  # (HEAD, line) of the current sentence, checked at its end
    words_in_sentence = 0

    def end_sentence() -> None:
        nonlocal heads, words_in_sentence
        for value, number in heads:
            if int(value) > words_in_sentence:
                raise CorefFormatError(
                    f"{path}:{number}: HEAD {value} is not a word of this sentence (it has "
                    f"{words_in_sentence}); HEAD is 0 or the ID of a word of the same sentence"
                )
        heads, words_in_sentence = [], 0

    def end_document() -> None:
        if state is None:
            return
        if not state.words.words:
            raise CorefFormatError(
                f"{path}: document {shown(state.doc_id)} has no tokens; remove its '# newdoc' line or give it "
                "its sentences"
            )
        documents.append(state.build())

    lines = read_source(path).splitlines()
    for number, line in enumerate(lines, start=1):
        if line.startswith("#"):
            newdoc = re.match(r"^#\s*newdoc(?:\s+id\s*=\s*(.*))?$", line.strip())
            entity_fields = re.match(r"^#\s*global\.Entity\s*=\s*(\S+)", line.strip())
            if entity_fields:
                fields = entity_fields.group(1).split("-")
                if state is not None:
                    state.fields = fields
            if newdoc:
                end_sentence()
                end_document()
                doc_id = (newdoc.group(1) or f"{path.stem}-{len(documents) + 1}").strip()
                state = _DocumentState(doc_id, fields, str(path))
            continue
        if not line.strip():
            end_sentence()
            if state is not None and state.words.words:
                sentence += 1
                new_sentence = True
            continue
        columns = line.split("\t")
        where = f"{path}:{number}"
        if len(columns) != 10:
            raise CorefFormatError(f"{where}: a CoNLL-U token line needs 10 tab-separated columns")
        token_id, head = columns[0], columns[6]
        if not TOKEN_ID.match(token_id):
            raise CorefFormatError(f"{where}: ID {shown(token_id)} is not a word number (1, 1-2 or 1.1)")
        if "-" in token_id:
            continue  # a multi-word token: its words follow
        empty = "." in token_id
        if not empty:
            words_in_sentence = max(words_in_sentence, int(token_id))
        if head != "_" and not (head.isascii() and head.isdigit()):
            raise CorefFormatError(
                f"{where}: HEAD {shown(head)} is not a word number; use 0 for the root or _"
            )
        if head != "_":
            heads.append((head, number))
        if state is None:
            state = _DocumentState(path.stem, fields, str(path))
        index = state.add_word(columns[1], f"{sentence}:{token_id}", empty, new_sentence)
        new_sentence = False
        if empty:
            state.deps[index] = _parse_deps(columns[8], sentence)
        entity = next((item[7:] for item in columns[9].split("|") if item.startswith("Entity=")), "")
        _apply_brackets(state, entity, index, where)
    end_sentence()
    end_document()
    return documents


def _apply_brackets(state: _DocumentState, value: str, index: int, where: str) -> None:
    """Apply one word's Entity brackets in their order, as udapi does: the word belongs to every
    mention still open; a closing bracket ends the latest open mention of its entity, an opening
    one starts a mention here, a one-word bracket is a whole mention (or part) by itself."""
    for opened in state.open:
        opened.words.append(index)
    position = 0
    for match in BRACKET.finditer(value):
        if value[position : match.start()].strip():
            raise CorefFormatError(f"{where}: cannot read Entity={shown(value)}")
        position = match.end()
        if match.group("open"):
            entity, part = match.group("open"), match.group("part")
            head = _head_index(match.group("attrs"), state.fields, where)
            opened = _Open(entity + (part or ""), [index], head)
            if match.group("single"):
                _finish(state, opened, entity, part, where)
            else:
                state.open.append(opened)
            continue
        entity, part = match.group("close"), match.group("cpart")
        key = entity + (part or "")
        for i in range(len(state.open) - 1, -1, -1):
            if state.open[i].entity == key:
                _finish(state, state.open.pop(i), entity, part, where)
                break
        else:
            raise CorefFormatError(
                f"{where}: '{key[:20]})' closes a mention of {entity[:20]} that is not open"
            )
    if value[position:].strip():
        raise CorefFormatError(f"{where}: cannot read Entity={shown(value)}")


def _finish(state: _DocumentState, opened: _Open, entity: str, part: str | None, where: str) -> None:
    """A closed bracket: a mention, or one part of a discontinuous mention (complete at its last)."""
    if part is None:
        opened.entity = entity
        state.finish(opened, where)
        return
    number, total = (int(x) for x in part.strip("[]").split("/"))
    collected = state.pending.setdefault(entity, _Open(entity, [], opened.head))
    collected.words.extend(opened.words)
    if number == 1 and opened.head is not None:
        collected.head = opened.head
    if number == total:
        state.finish(state.pending.pop(entity), where)


def write_conllu(documents: Iterable[Document], path: str | Path) -> None:
    """Write token-based documents as CorefUD CoNLL-U (one sentence per text line; heads kept).

    The format pairs the parts of a discontinuous mention (``e1[1/2]``, ``e1[2/2]``) by entity, so
    an entity with two discontinuous mentions reads back as written only when they do not interleave.
    It cannot write two crossing mentions of one entity (words 1-3 and 2-4: ``(e1``, ``(e1``,
    ``e1)``, ``e1)`` reads back as 1-4 and 2-3), so such a document raises CorefFormatError.
    """
    lines: list[str] = []
    for doc in documents:
        if not doc.words:
            raise CorefFormatError(
                f"document {shown(doc.doc_id)} has no words; CoNLL-U needs a token document"
            )
        lines += [f"# newdoc id = {doc.doc_id}", "# global.Entity = eid-etype-head-other"]
        index = {span: i for i, span in enumerate(doc.words)}
        opens: dict[int, list[tuple[int, str]]] = {}  # word -> (run length, bracket)
        closes: dict[int, list[tuple[int, str]]] = {}  # word -> (run start, bracket)
        for e, entity in enumerate(doc.entities, start=1):
            _refuse_crossing(doc, entity, index)
            for mention in entity:
                words = [index[u] for u in mention.units]
                head = words.index(index[mention.head]) + 1 if mention.head in index else 1
                contiguous = words == list(range(words[0], words[-1] + 1))
                groups = [words] if contiguous else _runs(words)
                for p, run in enumerate(groups, start=1):
                    part = "" if len(groups) == 1 else f"[{p}/{len(groups)}]"
                    single = ")" if len(run) == 1 else ""
                    opens.setdefault(run[0], []).append((len(run), f"(e{e}{part}-x-{head}-{single}"))
                    if len(run) > 1:
                        closes.setdefault(run[-1], []).append((run[0], f"e{e}{part})"))
        sentence, token = 0, 0
        lines.append("# sent_id = 1")
        for i, span in enumerate(doc.words):
            if i and doc.text[doc.words[i - 1].end : span.start] == "\n":
                sentence += 1
                token = 0
                lines += ["", f"# sent_id = {sentence + 1}"]
            token += 1
            # udapi's rules: closing brackets first, shorter mentions closing first; then opening
            # brackets, longer mentions first (one-word brackets last), so brackets nest
            entity = "".join(b for _, b in sorted(closes.get(i, []), key=lambda c: -c[0]))
            entity += "".join(b for _, b in sorted(opens.get(i, []), key=lambda o: -o[0]))
            misc = f"Entity={entity}" if entity else "_"
            lines.append("\t".join([str(token), span.of(doc.text), "_", "_", "_", "_", "0", "_", "_", misc]))
        lines.append("")
    Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")


def _refuse_crossing(doc: Document, entity: tuple[Mention, ...], index: dict[Span, int]) -> None:
    """CorefFormatError when two contiguous mentions of ``entity`` cross (overlap, neither inside
    the other): a sweep in text order keeping the chain of mentions that nest."""
    spans = sorted({(m.start, m.end) for m in entity if _contiguous(m, index)},
                   key=lambda s: (s[0], -s[1]))  # fmt: skip
    chain: list[tuple[int, int]] = []
    for start, end in spans:
        while chain and chain[-1][1] <= start:
            chain.pop()
        if chain and chain[-1][1] < end:
            (a, b), (c, d) = chain[-1], (start, end)
            raise CorefFormatError(
                f"document {shown(doc.doc_id)}: two mentions of one entity cross (characters {a}-{b} "
                f"and {c}-{d}); CoNLL-U cannot write that - write JSON (--format json) instead"
            )
        chain.append((start, end))


def _contiguous(mention: Mention, index: dict[Span, int]) -> bool:
    """No word of the document (``index``: word -> position) lies between two units of the mention."""
    words = [index[u] for u in mention.units]
    return words == list(range(words[0], words[-1] + 1))


def _runs(words: list[int]) -> list[list[int]]:
    runs: list[list[int]] = [[words[0]]]
    for w in words[1:]:
        if w == runs[-1][-1] + 1:
            runs[-1].append(w)
        else:
            runs.append([w])
    return runs
