"""The Table, Column and Cell types every part of tabverify shares."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from tabverify.table.quantity import Quantity, parse_quantity

COLUMN_TYPES = ("number", "date", "text")


@dataclass(frozen=True, slots=True)
class Cell:
    """One table cell: its original text and, when it holds one, its parsed number or date."""

    text: str
    quantity: Quantity | None = None

    @classmethod
    def parse(cls, text: str) -> Cell:
        """Build a cell from raw text, parsing the number/date it holds."""
        text = text.strip()
        return cls(text, parse_quantity(text))

    @property
    def value(self) -> float | None:
        """The numeric value (dates encoded as yyyymmdd), or None for text cells."""
        return self.quantity.value if self.quantity is not None else None

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True, slots=True)
class CellRef:
    """The position of a cell: 0-based data row (header excluded) and column index."""

    row: int
    column: int


@dataclass(frozen=True)
class Table:
    """A table with one header row and rectangular data rows.

    Create tables with :func:`tabverify.load_table` or :meth:`Table.from_rows`.
    """

    header: tuple[str, ...]
    rows: tuple[tuple[Cell, ...], ...]
    caption: str = ""
    name: str = ""
    _index: dict[str, int] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_rows(
        cls,
        header: Sequence[str],
        rows: Sequence[Sequence[object]],
        caption: str = "",
        name: str = "",
    ) -> Table:
        """Build a table from a header and rows of plain values (converted with ``str``).

        Header names are made addressable with :func:`unique_names`: a repeated name gets a suffix
        (``a,a,,b`` -> ``a``, ``a (2)``, ``""``, ``b``); an empty name stays empty.

        Raises:
            TableError: when a row's length differs from the header's.
        """
        from tabverify.errors import TableError

        header_t = unique_names([str(h).strip() for h in header])
        built = []
        for number, row in enumerate(rows, start=1):
            if len(row) != len(header_t):
                raise TableError(
                    f"{name or 'table'}: data row {number} has {len(row)} cells but the header has "
                    f"{len(header_t)}; make every row as long as the header"
                )
            built.append(
                tuple(c if isinstance(c, Cell) else Cell.parse("" if c is None else str(c)) for c in row)
            )
        return cls(header_t, tuple(built), caption, name)

    @property
    def n_rows(self) -> int:
        """Number of data rows (the header is not counted)."""
        return len(self.rows)

    @property
    def n_columns(self) -> int:
        """Number of columns."""
        return len(self.header)

    def column_index(self, name: str) -> int | None:
        """The index of the column called ``name`` (case- and space-insensitive), or None."""
        if not self._index:
            for i, h in enumerate(self.header):
                self._index.setdefault(_norm_header(h), i)
        return self._index.get(_norm_header(name))

    def column(self, index: int) -> list[Cell]:
        """The cells of one column, top to bottom."""
        return [row[index] for row in self.rows]

    def cell(self, ref: CellRef) -> Cell:
        """The cell at a position."""
        return self.rows[ref.row][ref.column]

    @cached_property
    def column_types(self) -> tuple[str, ...]:
        """Inferred type of each column: ``number``, ``date`` or ``text``.

        A column is numeric (or date) when at least 80% of its non-empty cells parse as such.
        """
        types = []
        for j in range(self.n_columns):
            cells = [r[j] for r in self.rows if r[j].text not in ("", "-", "n/a", "none", "—")]
            if not cells:
                types.append("text")
                continue
            dates = sum(1 for c in cells if c.quantity is not None and c.quantity.kind == "date")
            numbers = sum(1 for c in cells if c.quantity is not None and c.quantity.kind != "date")
            if dates >= 0.8 * len(cells):
                types.append("date")
            elif numbers + dates >= 0.8 * len(cells):
                types.append("number")
            else:
                types.append("text")
        return tuple(types)

    @cached_property
    def data_row_indices(self) -> tuple[int, ...]:
        """Indices of the rows that are data, not a summary: a row labelled "total" in one of its
        first two cells is left out, as readers of the table leave it out of counts and maxima."""
        data = tuple(i for i, row in enumerate(self.rows) if not _is_summary_row(row))
        # a table whose every row carries such a label is a table of labels, not of summaries
        return data if data else tuple(range(self.n_rows))

    def __iter__(self) -> Iterator[tuple[Cell, ...]]:
        return iter(self.rows)

    def to_records(self) -> list[dict[str, str]]:
        """The table as a list of {header: cell text} dicts."""
        return [{h: c.text for h, c in zip(self.header, row, strict=True)} for row in self.rows]


def unique_names(names: Sequence[str]) -> tuple[str, ...]:
    """Column names each addressable by :meth:`Table.column_index`: the first of names equal up to
    case and spaces is kept, each later one gets `` (2)``, `` (3)``... (the first such suffix not
    already a name). Empty names stay empty: such a column (TabFact's unnamed row-number column) is
    addressed by position.

    >>> unique_names(["a", "A", "", "b", ""])
    ('a', 'A (2)', '', 'b', '')
    """
    taken = {_norm_header(n) for n in names if n}
    seen: set[str] = set()
    result = []
    for name in names:
        key = _norm_header(name)
        if name and key in seen:
            count = 2
            while _norm_header(f"{name} ({count})") in taken:
                count += 1
            name = f"{name} ({count})"
            key = _norm_header(name)
            taken.add(key)
        seen.add(key)
        result.append(name)
    return tuple(result)


def _norm_header(name: str) -> str:
    return " ".join(name.lower().split())


_SUMMARY_LABELS = {"total", "totals", "grand total", "total:", "overall", "sum", "all"}


def _is_summary_row(row: tuple[Cell, ...]) -> bool:
    return any(c.text.lower().strip() in _SUMMARY_LABELS for c in row[:2])
