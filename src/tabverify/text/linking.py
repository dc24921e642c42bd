"""Entity linking: which spans of a statement name cells, columns and numbers of a table.

Longest match wins (a span that names a whole cell beats a shorter one); ties go to whole-cell
matches over partial ones. Works on raw and lemmatized text alike because both the statement and
the cells are compared by stems. The caption is not linked (it is context, not evidence).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache, partial

from tabverify.table import CellRef, Table, parse_quantity
from tabverify.table.quantity import MONTHS, NUMBER_WORDS, ORDINAL_WORDS
from tabverify.text.normalize import Token, stem_key, tokenize
from tabverify.text.spans import Span

STOP_WORDS = frozenset(
    "the a an of in on at to for by with and or be have do that this there it its as from than "
    "which who whom what when where while than then also not no all each every any only".split()
)
_MAX_NGRAM = 10  # longest cell mention, in words
_MAX_HEADER_NGRAM = 6  # longest header mention, in words


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


def ngrams(length: int, longest: int) -> Iterator[tuple[int, int]]:
    """Every ``(start, end)`` range of at most ``longest`` items in a sequence of ``length``,
    longest first, left to right: the order in which a longest-match-wins linker tries them."""
    for n in range(min(longest, length), 0, -1):
        for i in range(length - n + 1):
            yield i, i + n


@dataclass(frozen=True, slots=True)
class CellEntry:
    """One distinct text of one column, as the linker indexes it: the cells holding it (their
    positions, the first ones in table order; a value index of a large database table may keep only
    the first few) and how many cells hold it in all."""

    column: int
    text: str
    refs: tuple[CellRef, ...]
    count: int

    @property
    def first_row(self) -> int:
        """The first row holding this text (entries are ordered by it, as cells are by row)."""
        return self.refs[0].row if self.refs else 0


def table_entries(table: Table) -> list[CellEntry]:
    """The distinct texts of each column of an in-memory table, with every cell holding them."""
    grouped: dict[tuple[int, str], list[CellRef]] = {}
    for r, row in enumerate(table.rows):
        for c, cell in enumerate(row):
            grouped.setdefault((c, cell.text), []).append(CellRef(r, c))
    return [CellEntry(c, text, tuple(refs), len(refs)) for (c, text), refs in grouped.items()]


class TableIndex:
    """Stem n-gram lookups over a table's distinct cell texts and headers, built once per table.

    Built from an in-memory table (:meth:`of_table`) or from the distinct values of a database
    table (a value index), so linking never reads every cell of a large table.
    """

    def __init__(self, header: Sequence[str], n_rows: int, entries: Iterable[CellEntry]) -> None:
        self.header = tuple(header)
        self.n_rows = n_rows
        self.whole: dict[tuple[str, ...], list[CellEntry]] = defaultdict(list)
        self.partial: dict[tuple[str, ...], list[tuple[CellEntry, int, int]]] = defaultdict(list)
        self.entry_tokens: dict[tuple[int, str], list[Token]] = {}
        # entries in table order (by their first row, then column) so that the first hit of a
        # lookup is the first cell in the table, as when cells are indexed row by row
        for entry in sorted(entries, key=lambda e: (e.first_row, e.column)):
            tokens = [t for t in tokenize(entry.text) if t.text[0].isalnum()]
            if not tokens or not entry.refs:
                continue
            self.entry_tokens[(entry.column, entry.text)] = tokens
            stems = tuple(t.stem for t in tokens)
            self.whole[stems].append(entry)
            # every part of the cell (not the whole), in the cell's order
            for i, j in sorted(ngrams(len(stems), min(_MAX_NGRAM, len(stems) - 1))):
                self.partial[stems[i:j]].append((entry, i, j))
        self.headers: dict[tuple[str, ...], list[int]] = defaultdict(list)
        for c, name in enumerate(self.header):
            stems = stem_key(name)
            for i, j in sorted(ngrams(len(stems), len(stems))):
                if j - i == len(stems) or not all(s in STOP_WORDS for s in stems[i:j]):
                    self.headers[stems[i:j]].append(c)

    @classmethod
    def of_table(cls, table: Table) -> TableIndex:
        """The index of an in-memory table."""
        return cls(table.header, table.n_rows, table_entries(table))


@lru_cache(maxsize=64)
def _index_for(table: Table) -> TableIndex:
    return TableIndex.of_table(table)


def _cell_literal(index: TableIndex, entry: CellEntry, i: int, j: int) -> str:
    tokens = index.entry_tokens[(entry.column, entry.text)]
    return entry.text[tokens[i].span.start : tokens[j - 1].span.end]


def _is_number_token(token: Token) -> bool:
    word = token.text.lower()
    return (token.text[0].isdigit() or word in NUMBER_WORDS or word in ORDINAL_WORDS) and word not in (
        "once",
        "single",
        "double",
        "triple",
    )


@dataclass(frozen=True)
class _Words:
    """The word tokens of a statement (punctuation dropped) and their stems."""

    statement: str
    words: list[Token]
    stems: list[str]

    def span(self, i: int, j: int) -> Span:
        """The characters of words ``i`` to ``j`` (exclusive)."""
        return Span(self.words[i].span.start, self.words[j - 1].span.end)


def _longest_matches(
    words: _Words, longest: int, taken: list[bool], match: Callable[[int, int, tuple[str, ...]], list[Link]]
) -> list[Link]:
    """Offer ``match`` every n-gram of at most ``longest`` words that overlaps no word already
    ``taken``, longest first; the words of an n-gram it links (returns links for) are taken."""
    found: list[Link] = []
    for i, j in ngrams(len(words.words), longest):
        if any(taken[i:j]):
            continue
        links = match(i, j, tuple(words.stems[i:j]))
        if links:
            found.extend(links)
            for k in range(i, j):
                taken[k] = True
    return found


_SIGNS = {"+": "+", "-": "-", "\u2212": "-"}


def _written_sign(text: str, end: int | None) -> str | None:
    """The sign written just before a number: before position ``end`` of a statement ("to par of
    + 2"), or at the start of a cell's text when ``end`` is None ("- 2"); None when there is none
    or the dash joins two numbers ("3 - 2")."""
    if end is None:
        head = text.lstrip()
        return _SIGNS.get(head[:1]) if head[1:].lstrip()[:1].isdigit() else None
    before = text[:end].rstrip()
    sign = _SIGNS.get(before[-1:])
    if sign is None:
        return None
    rest = before[:-1].rstrip()
    return None if rest[-1:].isdigit() else sign


def _whole_cell_links(words: _Words, index: TableIndex, i: int, j: int, key: tuple[str, ...]) -> list[Link]:
    """Links for words that name whole cells, one per column holding such a cell."""
    if j - i == 1 and key[0] in STOP_WORDS:
        return []
    entries = index.whole.get(key)
    if not entries:
        return []
    span = words.span(i, j)
    sign = _written_sign(words.statement, span.start)
    by_column: dict[int, list[CellEntry]] = defaultdict(list)
    for entry in entries:
        by_column[entry.column].append(entry)
    links = []
    for column, column_entries in by_column.items():
        if sign is not None:
            # "+ 2" and "- 2" share their words: the statement's sign picks the cells it names
            column_entries = [
                e for e in column_entries if _written_sign(e.text, None) == sign
            ] or column_entries
        refs = tuple(sorted((ref for e in column_entries for ref in e.refs), key=lambda ref: ref.row))
        first = min(column_entries, key=lambda e: e.first_row)
        links.append(Link(span, span.of(words.statement), "cell", column, first.text, refs, True))
    return links


def _partial_cell_links(words: _Words, index: TableIndex, i: int, j: int, key: tuple[str, ...]) -> list[Link]:
    """Links for words that name part of cells; single words only when they are not stop words,
    numbers or very short, and not found in most rows (a common word carries no information)."""
    if all(s in STOP_WORDS for s in key):
        return []
    if j - i == 1 and (len(key[0]) < 3 or _is_number_token(words.words[i])):
        return []
    hits = index.partial.get(key)
    if not hits:
        return []
    by_column: dict[int, list[tuple[CellEntry, int, int]]] = defaultdict(list)
    for hit in hits:
        by_column[hit[0].column].append(hit)
    if j - i == 1 and (
        len(by_column) > 3
        or any(
            # the rows holding the word: each distinct text counted once, however often it holds it
            sum({id(h[0]): h[0].count for h in column_hits}.values()) > max(2, 0.6 * index.n_rows)
            for column_hits in by_column.values()
        )
    ):
        return []
    span = words.span(i, j)
    links = []
    for column, column_hits in by_column.items():
        entry, a, b = min(column_hits, key=lambda h: h[0].first_row)
        refs = tuple(
            sorted(dict.fromkeys(ref for h in column_hits for ref in h[0].refs), key=lambda ref: ref.row)
        )
        links.append(
            Link(
                span, span.of(words.statement), "cell", column, _cell_literal(index, entry, a, b), refs, False
            )
        )
    return links


def _header_links(words: _Words, index: TableIndex, i: int, j: int, key: tuple[str, ...]) -> list[Link]:
    """Links for words that name columns (all or a meaningful part of a header)."""
    if j - i == 1 and key[0] in STOP_WORDS:
        return []
    span = words.span(i, j)
    return [
        Link(span, span.of(words.statement), "header", column, index.header[column])
        for column in index.headers.get(key, ())
    ]


def _number_links(words: _Words) -> list[Link]:
    """Numbers, left to right: digits, number words, ordinals, and dates ("october 15",
    "11 june 1958", the longest date starting at a word first); a month name alone is kept too."""
    tokens, statement = words.words, words.statement
    numbers: list[Link] = []
    i = 0
    while i < len(tokens):
        date_end = next(
            (
                i + n
                for n in (3, 2)
                if i + n <= len(tokens)
                and (q := parse_quantity(words.span(i, i + n).of(statement))) is not None
                and q.kind == "date"
            ),
            None,
        )
        if date_end is not None:
            span = words.span(i, date_end)
            numbers.append(Link(span, span.of(statement), "number", None, span.of(statement)))
            i = date_end
            continue
        word = tokens[i].text
        if word.lower() in MONTHS and len(word.lower()) > 3:
            numbers.append(Link(tokens[i].span, word, "number", None, word))
        elif _is_number_token(tokens[i]) and parse_quantity(word) is not None:
            numbers.append(Link(tokens[i].span, word, "number", None, word))
        i += 1
    return numbers


def link(statement: str, table: Table, index: TableIndex | None = None) -> Linking:
    """Link a statement to a table's cells, headers and numbers.

    Cells first (whole-cell matches, then partial ones on the words left over), then headers
    (which may overlap cell links: "the 1st member" names a column and a value), then numbers.
    The work grows with the statement's length times the longest n-gram; callers bound the
    statement's length (``SearchLimits.max_statement_chars`` in the verifier). ``index`` replaces the
    table's own index (a database table's value index, see :mod:`tabverify.database.values`).
    """
    if index is None:
        index = _index_for(table)
    tokens = tuple(tokenize(statement))
    word_tokens = [t for t in tokens if t.text[0].isalnum()]
    words = _Words(statement, word_tokens, [t.stem for t in word_tokens])
    used = [False] * len(word_tokens)
    cells = _longest_matches(words, _MAX_NGRAM, used, partial(_whole_cell_links, words, index))
    cells += _longest_matches(words, _MAX_NGRAM, used, partial(_partial_cell_links, words, index))
    headers = _longest_matches(
        words, _MAX_HEADER_NGRAM, [False] * len(word_tokens), partial(_header_links, words, index)
    )
    return Linking(statement, tokens, tuple(cells), tuple(headers), tuple(_number_links(words)))
