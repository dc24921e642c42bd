"""JSON with character offsets, read and written.

``{"doc_id", "text", "clusters": [[[start, end], ...], ...]}`` per document (a list, one object, or
one object per line), including the IAHLT layout
(``{"text", "clusters": [{"mentions": [[start, end, {...}]]}]}``) where U+200B marks morpheme
boundaries. Offsets are 0-based characters, end exclusive; a mention's optional third element is an
object that may give its ``kind`` and ``subkind`` (a given kind has no subkind unless one is given;
otherwise both are read from the text, see :func:`~tabverify.coref.document.classify_span`). A mention
must cover at least one character inside the text: an empty (``[3, 3]``) or reversed (``[4, 0]``)
mention is an error. The document id is the first of ``doc_id``, ``doc_key``, ``id`` and
``metadata.doc_id`` that is given and not empty; it must be a string or an integer (an integer ``7``
is the id ``"7"``); without any, a record is ``<file stem>-<record number>``. Every value is
checked: anything else is a :class:`CorefFormatError` naming the document and the mention.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tabverify.coref.document import KINDS, SUBKINDS, Document, Mention, classify_span, text_order
from tabverify.coref.source import CorefFormatError, parse_json_source, read_source, shown
from tabverify.text.spans import Span

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _offset(value: object) -> int | None:
    """An offset: an integer (not a bool, a float or a string)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _mention(item: object, text: str, where: str) -> Mention:
    shape = '[start, end] or [start, end, {"kind": ..., "subkind": ...}] with integer offsets'
    if not isinstance(item, list) or len(item) not in (2, 3):
        raise CorefFormatError(f"{where}: mention {shown(item)} is not {shape}")
    start, end = _offset(item[0]), _offset(item[1])
    extra = item[2] if len(item) == 3 else {}
    if start is None or end is None or not isinstance(extra, dict):
        raise CorefFormatError(f"{where}: mention {shown(item)} is not {shape}")
    if start == end:
        raise CorefFormatError(
            f"{where}: mention [{start}, {end}] is empty; offsets are 0-based characters, end exclusive, "
            "so a mention of one character is [start, start + 1]"
        )
    if end < start:
        raise CorefFormatError(
            f"{where}: mention [{start}, {end}] ends before it starts; write [start, end], end exclusive"
        )
    if start < 0 or end > len(text):
        raise CorefFormatError(
            f"{where}: mention [{start}, {end}] lies outside the text (length {len(text)}); "
            "offsets are 0-based characters, end exclusive"
        )
    span = Span(start, end)
    kind, subkind = classify_span(text, span)
    if "kind" in extra:  # a given kind comes with its own subkind (none unless given)
        kind, subkind = extra["kind"], extra.get("subkind")
    elif "subkind" in extra:
        subkind = extra["subkind"]
    if kind not in KINDS or (subkind is not None and subkind not in SUBKINDS):
        raise CorefFormatError(
            f"{where}: mention {shown(item)}: kind must be one of {', '.join(KINDS)} and subkind one of "
            f"{', '.join(SUBKINDS)} (or absent)"
        )
    return Mention((span,), None, kind, subkind)


def _document(record: object, number: int, source: str) -> Document:
    if not isinstance(record, dict) or "text" not in record or "clusters" not in record:
        raise CorefFormatError(f"{source}: record {number} needs 'text' and 'clusters'")
    text = record["text"]
    metadata = record.get("metadata") if isinstance(record.get("metadata"), dict) else {}
    doc_id: Any = next(
        (v for v in (record.get("doc_id"), record.get("doc_key"), record.get("id"), metadata.get("doc_id"))
         if v is not None and v != ""),
        f"{Path(source).stem}-{number}",
    )  # fmt: skip
    if isinstance(doc_id, bool) or not isinstance(doc_id, str | int):
        raise CorefFormatError(
            f"{source}: record {number}: the document id {shown(doc_id)} must be a string or an integer"
        )
    doc_id = str(doc_id)  # an integer id 7 is the id "7"
    if not isinstance(text, str):
        raise CorefFormatError(
            f"{source}: document {shown(doc_id)}: 'text' is a {type(text).__name__}; it must be the text as a string"
        )
    clusters = record["clusters"]
    if not isinstance(clusters, list):
        raise CorefFormatError(f"{source}: document {shown(doc_id)}: 'clusters' must be a list of clusters")
    entities = []
    for c, cluster in enumerate(clusters, start=1):
        spans = cluster.get("mentions") if isinstance(cluster, dict) else cluster
        if not isinstance(spans, list):
            raise CorefFormatError(
                f"{source}: document {shown(doc_id)}: cluster {c} must be a list of mentions "
                "(or an object with a 'mentions' list)"
            )
        where = f"{source}: document {shown(doc_id)}, cluster {c}"
        mentions = tuple(sorted((_mention(item, text, where) for item in spans), key=text_order))
        if mentions:
            entities.append(mentions)
    return Document(doc_id, text, tuple(entities), convention="first")


def json_records(text: str, path: Path) -> list[object]:
    """The records of a JSON file's ``text``: a list, one object, or JSON Lines (one per line).

    Raises:
        CorefFormatError: invalid JSON (``NaN``/``Infinity`` included, nesting capped), naming the
            line for JSON Lines.
    """
    try:
        data = parse_json_source(text, str(path))
    except CorefFormatError as whole:
        lines = [(n, line) for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
        if len(lines) < 2:
            raise
        data = []
        for n, line in lines:
            try:
                data.append(parse_json_source(line, f"{path}:{n}"))
            except CorefFormatError:
                if n == lines[0][0]:
                    raise whole from None  # not JSON Lines either: report the file as a whole
                raise
    return data if isinstance(data, list) else [data]


def read_json(path: str | Path) -> list[Document]:
    """Documents from JSON (a list or one object) or JSON Lines, with character offsets.

    Raises:
        CorefFormatError: invalid JSON (:func:`json_records`), or a record, cluster or mention of
            another shape (see the module documentation).
    """
    path = Path(path)
    records = json_records(read_source(path), path)
    return [_document(record, number, path.name) for number, record in enumerate(records, start=1)]


def document_record(doc: Document) -> dict[str, object]:
    """One document as the JSON record :func:`write_json` writes (and :func:`read_json` reads):
    ``doc_id``, ``text`` and ``clusters`` of ``[start, end, {"kind", "subkind"}]`` character spans."""
    clusters = [[[m.start, m.end, {"kind": m.kind, "subkind": m.subkind}] for m in e] for e in doc.entities]
    return {"doc_id": doc.doc_id, "text": doc.text, "clusters": clusters}


def document_line(doc: Document) -> str:
    """One document as a line of JSON Lines (with its newline), as :func:`write_json` writes it.

    Text stays as it is (Hebrew is not escaped), except a lone surrogate (from a ``"\\ud800"``
    escape in the input), which cannot be written as UTF-8: it is written as the same escape, so
    the line is valid JSON that reads back to the same text and offsets."""
    line = json.dumps(document_record(doc), ensure_ascii=False, allow_nan=False)
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group(0)):04x}", line) + "\n"


def write_json(documents: Iterable[Document], path: str | Path) -> None:
    """Write documents as JSON Lines with character offsets and mention kinds."""
    with Path(path).open("w", encoding="utf-8") as out:
        for doc in documents:
            out.write(document_line(doc))
