"""CoNLL-2012 files: ``#begin document`` blocks, coreference brackets in the last column.

Brackets may be concatenated with or without ``|`` (``(12)``, ``(12``, ``12)``). Entities keep the
order in which the CoNLL reference scorer numbers them (on each line, one-token mentions before
opening brackets), and a mention listed twice stays listed: the ``conll`` convention of
:data:`tabverify.coref.document.CONVENTIONS` decides how it is scored. KibutzR's morpheme files
(form, sentence, position, ``_``, coreference) are read here too. A line of fewer than five columns
has no form column (the reference scorer's test files hold "document coreference"): its word is
written ``_``. Only the coreference column decides the score, as in the reference scorer; the forms
are compared with the other file's only to warn (see :func:`tabverify.coref.score.pair_documents`).
"""

from __future__ import annotations

import re
from pathlib import Path

from tabverify.coref.document import Document, Mention, WordSequence, text_order
from tabverify.coref.source import CorefFormatError, listed, read_source, shown

BRACKET = re.compile(r"\((\d+)\)|\((\d+)|(\d+)\)")
BEGIN = re.compile(r"^#\s*begin document\s*(.*?)\s*$")
END = re.compile(r"^#\s*end document")


class _DocumentBuilder:
    """The words and mentions of one ``#begin document`` block."""

    def __init__(self, doc_id: str, where: str) -> None:
        self.doc_id = doc_id
        self.where = where
        self.words = WordSequence()
        self.entities: dict[str, list[Mention]] = {}
        self.open: dict[str, list[int]] = {}

    def add_mention(self, entity: str, first: int, last: int) -> None:
        units = tuple(self.words.words[first : last + 1])
        kind = "phrase" if len(units) > 1 else "word"
        self.entities.setdefault(entity, []).append(Mention(units, units[0], kind))

    def read_cell(self, cell: str, index: int, where: str) -> None:
        """Apply one coreference column to word ``index``."""
        position = 0
        matches = []
        for match in BRACKET.finditer(cell):
            if cell[position : match.start()].strip("|"):
                raise CorefFormatError(f"{where}: cannot read coreference column {shown(cell)}")
            position = match.end()
            matches.append(match.groups())
        if cell[position:].strip("|"):
            raise CorefFormatError(f"{where}: cannot read coreference column {shown(cell)}")
        # the reference scorer numbers entities as it meets them: one-token mentions, then openings
        for single, _, _ in matches:
            if single is not None:
                self.entities.setdefault(single, [])
        for _, start, _ in matches:
            if start is not None:
                self.entities.setdefault(start, [])
        for single, start, end in matches:
            if single is not None:
                self.add_mention(single, index, index)
            elif start is not None:
                self.open.setdefault(start, []).append(index)
            else:
                starts = self.open.get(end)
                if not starts:
                    raise CorefFormatError(
                        f"{where}: '{end[:20]})' closes a mention of entity {end[:20]} that was never opened"
                    )
                self.add_mention(end, starts.pop(), index)

    def build(self, where: str) -> Document:
        unclosed = [entity for entity, starts in self.open.items() if starts]
        if unclosed:
            raise CorefFormatError(
                f"{where}: document {shown(self.doc_id)} ends with unclosed mention(s) of entity "
                f"{listed(unclosed)}; every '(N' needs a matching 'N)'"
            )
        if not self.words.words:
            raise CorefFormatError(
                f"{where}: document {shown(self.doc_id)} has no tokens; give each document its token lines "
                "(the key's and the response's must be the same)"
            )
        entities = [(name, mentions) for name, mentions in self.entities.items() if mentions]
        return Document(
            self.doc_id,
            self.words.text,
            tuple(tuple(sorted(mentions, key=text_order)) for _, mentions in entities),
            tuple(self.words.words),
            "conll",
            tuple(name for name, _ in entities),
        )


def read_conll(path: str | Path) -> list[Document]:
    """Documents of a CoNLL-2012 file (coreference brackets in the last column).

    Raises:
        CorefFormatError: an unbalanced bracket, a column that is not a bracket expression, a
            document without tokens, or a ``#begin document`` without ``#end document``.
    """
    path = Path(path)
    documents: list[Document] = []
    builder: _DocumentBuilder | None = None
    new_sentence = False
    for number, raw in enumerate(read_source(path).splitlines(), start=1):
        line = raw.rstrip("\r\n")
        where = f"{path}:{number}"
        begin = BEGIN.match(line)
        if begin:
            if builder is not None:
                raise CorefFormatError(f"{where}: #begin document inside document {shown(builder.doc_id)}")
            builder, new_sentence = _DocumentBuilder(begin.group(1), str(path)), False
            continue
        if END.match(line):
            if builder is None:
                raise CorefFormatError(f"{where}: #end document without #begin document")
            documents.append(builder.build(where))
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
            # CoNLL-2012 has the form in column 4; a shorter line (the reference scorer's test files
            # hold "document coreference") has none, written "_", and a one-column line is a form alone
            form = columns[3] if len(columns) >= 5 else "_" if len(columns) > 1 else columns[0]
        index = builder.words.add(form, new_sentence)
        new_sentence = False
        if len(columns) >= 2 and columns[-1] not in ("-", "_"):
            builder.read_cell(columns[-1], index, where)
    if builder is not None:
        raise CorefFormatError(f"{path}: document {shown(builder.doc_id)} has no '#end document' line")
    return documents
