"""Entity linking: which spans of a statement name cells, columns and numbers of a table.

Longest match wins (a span that names a whole cell beats a shorter one); ties go to whole-cell
matches over partial ones. Works on raw and lemmatized text alike because both the statement and
the cells are compared by stems. The caption is not linked (it is context, not evidence).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from functools import lru_cache

from tabverify.table import CellRef, Table, parse_quantity
from tabverify.table.quantity import MONTHS, NUMBER_WORDS, ORDINAL_WORDS
from tabverify.text.normalize import Token, stem_key, tokenize
from tabverify.text.spans import Span

STOP_WORDS = frozenset(
    "the a an of in on at to for by with and or be have do that this there it its as from than "
    "which who whom what when where while than then also not no all each every any only".split()
)
_MAX_NGRAM = 10


@dataclass(frozen=True, slots=True)
class Link:
    """One linked span of the statement.

    Attributes:
        span: where it is in the statement (character offsets).
        text: the statement's words.
        kind: ``cell`` (names cell values), ``header`` (names a column) or ``number``.
        column: the column the value lives in (cells) or is named (headers); None for numbers.
        literal: the value to put in a program: the cell's own text for a whole-cell match, the
            matching words of the cell for a partial match, the number as written for numbers.
        cells: the cells it names.
        exact: the span names the whole cell (not a part of it).
    """

    span: Span
    text: str
    kind: str
    column: int | None
    literal: str
    cells: tuple[CellRef, ...] = ()
    exact: bool = True


@dataclass(frozen=True)
class Linking:
    """All links of a statement against one table, plus its tokens."""

    statement: str
    tokens: tuple[Token, ...]
    cells: tuple[Link, ...]
    headers: tuple[Link, ...]
    numbers: tuple[Link, ...]

    @property
    def mentioned_columns(self) -> frozenset[int]:
        """Columns named by a header link or holding a linked cell."""
        return frozenset(link.column for link in self.cells + self.headers if link.column is not None)


class TableIndex:
    """Stem n-gram lookups over a table's cells and headers, built once per table."""

    def __init__(self, table: Table) -> None:
        self.table = table
        self.whole: dict[tuple[str, ...], list[CellRef]] = defaultdict(list)
        self.partial: dict[tuple[str, ...], list[tuple[CellRef, int, int]]] = defaultdict(list)
        self.cell_tokens: dict[CellRef, list[Token]] = {}
        for r, row in enumerate(table.rows):
            for c, cell in enumerate(row):
                tokens = [t for t in tokenize(cell.text) if t.text[0].isalnum()]
                if not tokens:
                    continue
                ref = CellRef(r, c)
                self.cell_tokens[ref] = tokens
                stems = tuple(t.stem for t in tokens)
                self.whole[stems].append(ref)
                if len(stems) > 1:
                    for i in range(len(stems)):
                        for j in range(i + 1, min(len(stems), i + _MAX_NGRAM) + 1):
                            if j - i < len(stems):
                                self.partial[stems[i:j]].append((ref, i, j))
        self.headers: dict[tuple[str, ...], list[int]] = defaultdict(list)
        for c, header in enumerate(table.header):
            stems = stem_key(header)
            for i in range(len(stems)):
                for j in range(i + 1, len(stems) + 1):
                    if j - i == len(stems) or not all(s in STOP_WORDS for s in stems[i:j]):
                        self.headers[stems[i:j]].append(c)


@lru_cache(maxsize=64)
def _index_for(table: Table) -> TableIndex:
    return TableIndex(table)


def _cell_literal(index: TableIndex, ref: CellRef, i: int, j: int) -> str:
    tokens = index.cell_tokens[ref]
    text = index.table.rows[ref.row][ref.column].text
    return text[tokens[i].span.start : tokens[j - 1].span.end]


def _is_number_token(token: Token) -> bool:
    word = token.text.lower()
    return (token.text[0].isdigit() or word in NUMBER_WORDS or word in ORDINAL_WORDS) and word not in (
        "once",
        "single",
        "double",
        "triple",
    )


def link(statement: str, table: Table) -> Linking:
    """Link a statement to a table's cells, headers and numbers."""
    index = _index_for(table)
    tokens = tuple(tokenize(statement))
    words = [t for t in tokens if t.text[0].isalnum()]
    stems = [t.stem for t in words]
    used = [False] * len(words)
    cells: list[Link] = []

    def span_of(i: int, j: int) -> Span:
        return Span(words[i].span.start, words[j - 1].span.end)

    # 1. whole-cell matches, longest first
    for n in range(min(_MAX_NGRAM, len(words)), 0, -1):
        for i in range(len(words) - n + 1):
            if any(used[i : i + n]):
                continue
            key = tuple(stems[i : i + n])
            if n == 1 and (key[0] in STOP_WORDS):
                continue
            refs = index.whole.get(key)
            if not refs:
                continue
            span = span_of(i, i + n)
            by_column: dict[int, list[CellRef]] = defaultdict(list)
            for ref in refs:
                by_column[ref.column].append(ref)
            for column, column_refs in by_column.items():
                literal = table.rows[column_refs[0].row][column].text
                cells.append(
                    Link(span, span.of(statement), "cell", column, literal, tuple(column_refs), True)
                )
            for k in range(i, i + n):
                used[k] = True
    # 2. partial matches (part of a cell) on what is left, longest first; single words only when
    #    they are not stop words, numbers or very short
    for n in range(min(_MAX_NGRAM, len(words)), 0, -1):
        for i in range(len(words) - n + 1):
            if any(used[i : i + n]):
                continue
            key = tuple(stems[i : i + n])
            if all(s in STOP_WORDS for s in key):
                continue
            if n == 1 and (len(key[0]) < 3 or _is_number_token(words[i])):
                continue
            hits = index.partial.get(key)
            if not hits:
                continue
            span = span_of(i, i + n)
            by_column2: dict[int, list[tuple[CellRef, int, int]]] = defaultdict(list)
            for hit in hits:
                by_column2[hit[0].column].append(hit)
            if n == 1 and (
                len(by_column2) > 3
                or any(
                    len({h[0].row for h in hits_}) > max(2, 0.6 * table.n_rows)
                    for hits_ in by_column2.values()
                )
            ):
                continue  # a common word found in most rows carries no information
            for column, column_hits in by_column2.items():
                ref, a, b = column_hits[0]
                literal = _cell_literal(index, ref, a, b)
                refs = tuple(dict.fromkeys(h[0] for h in column_hits))
                cells.append(Link(span, span.of(statement), "cell", column, literal, refs, False))
            for k in range(i, i + n):
                used[k] = True
    # 3. headers (may overlap cell links: "the 1st member" names a column and a value)
    headers: list[Link] = []
    taken = [False] * len(words)
    for n in range(min(6, len(words)), 0, -1):
        for i in range(len(words) - n + 1):
            if any(taken[i : i + n]):
                continue
            key = tuple(stems[i : i + n])
            if n == 1 and key[0] in STOP_WORDS:
                continue
            columns = index.headers.get(key)
            if not columns:
                continue
            span = span_of(i, i + n)
            for column in columns:
                headers.append(Link(span, span.of(statement), "header", column, table.header[column]))
            for k in range(i, i + n):
                taken[k] = True
    # 4. numbers: digits, number words, ordinals, and dates ("october 15", "11 june 1958")
    numbers: list[Link] = []
    i = 0
    while i < len(words):
        word = words[i].text.lower()
        date_end = None
        for n in (3, 2):
            if i + n <= len(words):
                span = span_of(i, i + n)
                q = parse_quantity(span.of(statement))
                if q is not None and q.kind == "date":
                    date_end = i + n
                    break
        if date_end is None and word in MONTHS and len(word) > 3:
            numbers.append(Link(span_of(i, i + 1), words[i].text, "number", None, words[i].text))
            i += 1
            continue
        if date_end is not None:
            span = span_of(i, date_end)
            numbers.append(Link(span, span.of(statement), "number", None, span.of(statement)))
            i = date_end
            continue
        if _is_number_token(words[i]):
            text = words[i].text
            q = parse_quantity(text)
            if q is not None:
                numbers.append(Link(words[i].span, text, "number", None, text))
        i += 1
    return Linking(statement, tokens, tuple(cells), tuple(headers), tuple(numbers))
