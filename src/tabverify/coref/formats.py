"""Readers and writers of coreference documents.

- CoNLL-2012 (``#begin document`` blocks, coreference brackets in the last column; brackets may
  be concatenated without ``|``).
- CorefUD CoNLL-U (``Entity=`` in MISC, discontinuous mentions ``e1[1/2]``, multi-word tokens,
  empty nodes), read and written.
- JSON with character offsets: ``{"doc_id", "text", "clusters": [[[start, end], ...], ...]}`` per
  document (a list, or one object per line), including the IAHLT layout
  (``{"text", "clusters": [{"mentions": [[start, end, {...}]]}]}``) where U+200B marks morpheme
  boundaries; written in the same layout.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from tabverify import files
from tabverify.coref.document import KINDS, SUBKINDS, Document, Mention, classify_span
from tabverify.errors import TabverifyError
from tabverify.text.spans import Span

log = logging.getLogger(__name__)

FORMATS = ("conll", "conllu", "json", "kibutzr")
EMPTY_NODE = "∅"


class CorefFormatError(TabverifyError):
    """A coreference file could not be read (unbalanced brackets, spans outside the text, ...)."""


def _read(path: Path) -> str:
    return files.read_text(path, "coreference file", CorefFormatError)


@dataclass
class _Builder:
    """Collects words and mentions of one token-based document."""

    doc_id: str
    parts: list[str] = field(default_factory=list)
    words: list[Span] = field(default_factory=list)
    length: int = 0
    entities: dict[str, list[Mention]] = field(default_factory=dict)

    def add_word(self, form: str, new_sentence: bool = False) -> int:
        if self.parts:
            separator = "\n" if new_sentence else " "
            self.parts.append(separator)
            self.length += 1
        form = form or "_"
        self.parts.append(form)
        self.words.append(Span(self.length, self.length + len(form)))
        self.length += len(form)
        return len(self.words) - 1

    def add_mention(self, entity: str, word_indices: list[int], head: int | None, zero: bool = False) -> None:
        units = tuple(self.words[i] for i in sorted(set(word_indices)))
        kind = "phrase" if len(units) > 1 else "word"
        mention = Mention(units, self.words[head] if head is not None else None, kind, None, zero)
        self.entities.setdefault(entity, []).append(mention)

    def build(self, source: str) -> Document:
        text = "".join(self.parts)
        return Document(
            self.doc_id, text, _dedupe(self.entities.values(), f"{source} {self.doc_id}"), tuple(self.words)
        )


def _dedupe(entities: Iterable[list[Mention]], where: str) -> tuple[tuple[Mention, ...], ...]:
    """Entities with each mention kept once (its first occurrence); one warning per document."""
    seen: set[Mention] = set()
    dropped: list[Mention] = []
    result = []
    for entity in entities:
        kept = []
        for mention in entity:
            if mention in seen:
                dropped.append(mention)
                continue
            seen.add(mention)
            kept.append(mention)
        if kept:
            result.append(tuple(sorted(kept)))
    if dropped:
        log.warning(
            "%s: %d duplicate mention(s) dropped, first occurrence kept (e.g. %s)",
            where,
            len(dropped),
            dropped[0],
        )
    return tuple(result)


# CoNLL-2012 -------------------------------------------------------------------------------------

_BRACKET = re.compile(r"\((\d+)\)|\((\d+)|(\d+)\)")
_BEGIN = re.compile(r"^#\s*begin document\s*(.*?)\s*$")


def read_conll(path: str | Path) -> list[Document]:
    """Documents of a CoNLL-2012 file (coreference brackets in the last column).

    Raises:
        CorefFormatError: an unbalanced bracket, a column that is not a bracket expression, or a
            ``#begin document`` without ``#end document``.
    """
    path = Path(path)
    documents: list[Document] = []
    builder: _Builder | None = None
    open_mentions: dict[str, list[int]] = {}
    new_sentence = False
    for number, raw in enumerate(_read(path).splitlines(), start=1):
        line = raw.rstrip("\r\n")
        begin = _BEGIN.match(line)
        if begin:
            if builder is not None:
                raise CorefFormatError(f"{path}:{number}: #begin document inside document {builder.doc_id!r}")
            builder, open_mentions, new_sentence = _Builder(begin.group(1)), {}, False
            continue
        if re.match(r"^#\s*end document", line):
            if builder is None:
                raise CorefFormatError(f"{path}:{number}: #end document without #begin document")
            unclosed = [entity for entity, starts in open_mentions.items() if starts]
            if unclosed:
                raise CorefFormatError(
                    f"{path}:{number}: document {builder.doc_id!r} ends with unclosed mention(s) of entity "
                    f"{', '.join(unclosed)}; every '(N' needs a matching 'N)'"
                )
            documents.append(builder.build(path.name))
            builder = None
            continue
        if not line.strip():
            new_sentence = True
            continue
        if line.startswith("#") or builder is None:
            continue
        columns = line.split()
        if len(columns) == 5 and columns[3] == "_" and columns[1].isdigit() and columns[2].isdigit():
            form = columns[0]  # KibutzR: form, sentence, position, _, coreference
        else:
            form = columns[3] if len(columns) >= 5 else columns[1] if len(columns) > 1 else columns[0]
        index = builder.add_word(form, new_sentence)
        new_sentence = False
        cell = columns[-1]
        if cell in ("-", "_") or len(columns) < 2:
            continue
        position = 0
        for match in _BRACKET.finditer(cell):
            if cell[position : match.start()].strip("|"):
                raise CorefFormatError(f"{path}:{number}: cannot read coreference column {cell!r}")
            position = match.end()
            single, start, end = match.groups()
            if single is not None:
                builder.add_mention(single, [index], index)
            elif start is not None:
                open_mentions.setdefault(start, []).append(index)
                builder.entities.setdefault(start, [])  # entities keep the order they were opened in
            else:
                starts = open_mentions.get(end)
                if not starts:
                    raise CorefFormatError(
                        f"{path}:{number}: '{end})' closes a mention of entity {end} that was never opened"
                    )
                first = starts.pop()
                builder.add_mention(end, list(range(first, index + 1)), first)
        if cell[position:].strip("|"):
            raise CorefFormatError(f"{path}:{number}: cannot read coreference column {cell!r}")
    if builder is not None:
        raise CorefFormatError(f"{path}: document {builder.doc_id!r} has no '#end document' line")
    return documents


# JSON -------------------------------------------------------------------------------------------


def _json_documents(data: object, source: str) -> list[Document]:
    records = data if isinstance(data, list) else [data]
    documents = []
    for number, record in enumerate(records, start=1):
        if not isinstance(record, dict) or "text" not in record or "clusters" not in record:
            raise CorefFormatError(f"{source}: record {number} needs 'text' and 'clusters'")
        text = str(record["text"])
        metadata = record.get("metadata") if isinstance(record.get("metadata"), dict) else {}
        doc_id = str(
            record.get("doc_id") or record.get("doc_key") or record.get("id") or metadata.get("doc_id")
            or f"{Path(source).stem}-{number}"
        )  # fmt: skip
        entities = []
        for cluster in record["clusters"]:
            spans = cluster.get("mentions", []) if isinstance(cluster, dict) else cluster
            mentions = []
            for item in spans:
                try:
                    start, end = int(item[0]), int(item[1])
                except (TypeError, ValueError, IndexError) as exc:
                    raise CorefFormatError(
                        f"{source}: document {doc_id!r}: mention {item!r} is not [start, end]"
                    ) from exc
                if not 0 <= start < end <= len(text):
                    raise CorefFormatError(
                        f"{source}: document {doc_id!r}: mention [{start}, {end}) lies outside the text "
                        f"(length {len(text)}); offsets are 0-based characters, end exclusive"
                    )
                extra = item[2] if len(item) > 2 and isinstance(item[2], dict) else {}
                span = Span(start, end)
                kind, subkind = classify_span(text, span)
                kind, subkind = str(extra.get("kind") or kind), extra.get("subkind", subkind)
                if kind not in KINDS or (subkind is not None and subkind not in SUBKINDS):
                    raise CorefFormatError(
                        f"{source}: document {doc_id!r}: mention {item!r}: kind must be one of {', '.join(KINDS)} "
                        f"and subkind one of {', '.join(SUBKINDS)}"
                    )
                mentions.append(Mention((span,), None, kind, subkind))
            entities.append(mentions)
        documents.append(Document(doc_id, text, _dedupe(entities, f"{source} {doc_id}")))
    return documents


def read_json(path: str | Path) -> list[Document]:
    """Documents from JSON (a list or one object) or JSON Lines, with character offsets."""
    path = Path(path)
    text = _read(path)
    try:
        return _json_documents(json.loads(text), path.name)
    except json.JSONDecodeError:
        pass
    records = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise CorefFormatError(f"{path}:{number}: invalid JSON ({exc.msg})") from exc
    return _json_documents(records, path.name)


def write_json(documents: Iterable[Document], path: str | Path) -> None:
    """Write documents as JSON Lines with character offsets and mention kinds."""
    with Path(path).open("w", encoding="utf-8") as out:
        for doc in documents:
            clusters = [
                [
                    [m.start, m.end, {"kind": m.kind, **({"subkind": m.subkind} if m.subkind else {})}]
                    for m in e
                ]
                for e in doc.entities
            ]
            out.write(
                json.dumps({"doc_id": doc.doc_id, "text": doc.text, "clusters": clusters}, ensure_ascii=False)
            )
            out.write("\n")


# how many letters a pronominal suffix takes in writing (ביתו: ו = _הוא; ביתכם: כם = _אתם)
_SUFFIX_LETTERS = {"_אנחנו": 2, "_אתם": 2, "_אתן": 2}


def _word_end(raw: str, start: int) -> int:
    end = start
    while end < len(raw) and (raw[end].isalnum() or raw[end] in "'\"״׳"):
        end += 1
    return end


def _morpheme_spans(forms: list[str], raw: str) -> list[Span | None] | None:
    """Character spans of KibutzR morphemes in the raw text, or None when they cannot be aligned.

    Written morphemes are found in order. ``ה_`` (an article the spelling drops) and ``_של_`` take
    no characters (None). A stem followed by a pronominal suffix (``_הוא``) is written as one piece
    whose spelling may change (את + _הם = אותם, מן + _היא = ממנה): the two share what is left of the
    word, the suffix taking its last letter (two for אנחנו, אתם, אתן).
    """
    spans: list[Span | None] = [None] * len(forms)
    position = 0
    i = 0
    while i < len(forms):
        form = forms[i]
        if form.endswith("_") and len(form) > 1:
            i += 1
            continue
        start = position
        while start < len(raw) and raw[start].isspace():
            start += 1
        if form.startswith("_") and len(form) > 1:  # a suffix with no stem before it in this word
            end = _word_end(raw, start if start == position else position)
            spans[i] = Span(position, end) if end > position else None
            position = end
            i += 1
            continue
        following = i + 1
        while following < len(forms) and forms[following].endswith("_") and len(forms[following]) > 1:
            following += 1
        suffix = forms[following] if following < len(forms) else ""
        if suffix.startswith("_") and len(suffix) > 1 and not suffix.endswith("_"):
            end = _word_end(raw, start)
            letters = _SUFFIX_LETTERS.get(suffix, 1)
            if end - letters > start and raw[start].isalpha():
                spans[i], spans[following] = Span(start, end - letters), Span(end - letters, end)
                position = end
                i = following + 1
                continue
        found = raw.find(form, position, position + len(form) + 40)
        if found == -1:
            return None
        spans[i] = Span(found, found + len(form))
        position = found + len(form)
        i += 1
    return spans


def read_kibutzr(path: str | Path, raw_dir: str | Path | None = None) -> list[Document]:
    """KibutzR files (morpheme-level CoNLL: form, sentence, position, _, coreference).

    With ``raw_dir`` holding ``<n>.txt`` for ``htb:<n>.conllu``, mentions are moved onto the raw
    text as character spans (sub-word mentions then sit inside their words); otherwise the document
    is token-based over the morphemes.
    """
    path = Path(path)
    documents = read_conll(path)
    raw_path = Path(raw_dir) / f"{path.stem.split(':')[-1]}.txt" if raw_dir is not None else None
    if raw_path is None or not raw_path.exists() or len(documents) != 1:
        if raw_dir is not None:
            log.warning("%s: no raw text %s; scoring over morphemes", path.name, raw_path)
        return documents
    doc = documents[0]
    raw = raw_path.read_text(encoding="utf-8")
    spans = _morpheme_spans([w.of(doc.text) for w in doc.words], raw)
    if spans is None:
        log.warning(
            "%s: the morphemes do not align with %s; scoring over morphemes", path.name, raw_path.name
        )
        return documents
    index = {w: i for i, w in enumerate(doc.words)}
    entities = []
    for entity in doc.entities:
        moved = []
        for mention in entity:
            covered = [spans[index[u]] for u in mention.units if spans[index[u]] is not None]
            if not covered:  # only unwritten morphemes: anchor on the character before them
                at = spans[index[mention.units[0]] - 1] if index[mention.units[0]] else None
                covered = [Span(at.end - 1, at.end)] if at is not None and at.end else []
            if not covered:
                continue
            span = Span(covered[0].start, covered[-1].end)  # type: ignore[union-attr]
            kind, subkind = classify_span(raw, span)
            moved.append(Mention((span,), None, kind, subkind))
        entities.append(moved)
    return [Document(doc.doc_id, raw, _dedupe(entities, f"{path.name} {doc.doc_id}"))]


def detect_format(path: Path) -> str:
    """``conll``, ``conllu`` or ``json`` from the name, else from the first lines."""
    name = path.name.lower()
    if name.endswith((".json", ".jsonl")):
        return "json"
    head = _read(path)[:4000]
    if "#begin document" in head or "# begin document" in head:
        return "conll"  # also KibutzR's .conllu files, which hold CoNLL-2012 blocks
    if name.endswith(".conllu"):
        return "conllu"
    if head.lstrip().startswith(("{", "[")):
        return "json"
    if "#begin document" in head or "# begin document" in head:
        return "conll"
    if "Entity=" in head or "# newdoc" in head or "# sent_id" in head:
        return "conllu"
    return "conll"


def read_documents(path: str | Path, fmt: str = "auto", raw_dir: str | Path | None = None) -> list[Document]:
    """Documents of a file, or of every file in a folder (in name order), in any supported format.

    ``raw_dir`` (KibutzR): a folder of raw texts onto which morpheme-level files are aligned.
    """
    path = Path(path)
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith("."))
        if not files:
            raise CorefFormatError(f"{path}: the folder holds no files")
        return [doc for file in files for doc in read_documents(file, fmt, raw_dir)]
    fmt = detect_format(path) if fmt == "auto" else fmt
    if fmt == "kibutzr" or (fmt == "conll" and raw_dir is not None):
        return read_kibutzr(path, raw_dir)
    if fmt == "conll":
        return read_conll(path)
    if fmt == "conllu":
        from tabverify.coref.conllu import read_conllu

        return read_conllu(path)
    if fmt == "json":
        return read_json(path)
    raise CorefFormatError(f"unknown format {fmt!r}; use auto, {', '.join(FORMATS)}")
