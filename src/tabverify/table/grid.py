"""Grids: tables as laid out on the page, header rows included, spans expanded.

A :class:`Grid` is what the HTML, LaTeX, Markdown and CSV readers produce. Position ``(row, column)``
is 0-based over every row of the table (header rows too) on the rowspan/colspan-expanded grid: a cell
with ``colspan=3`` fills three positions, each holding the cell's text and pointing to its origin (the
top-left position). This is the index convention of the arXiVeri annotations.

Every reader bounds what it builds: one span covers at most :data:`MAX_SPAN` rows or columns, one
table has at most :data:`MAX_GRID_COLUMNS` columns (:func:`check_columns`, as for a CSV
:class:`~tabverify.table.model.Table`), and the tables of one document expand to at most
:data:`MAX_GRID_CELLS` cells (:class:`CellBudget`),
so a 130-byte ``\\multicolumn{100000000}`` or a page of ``colspan=1000`` cells is one clear
:class:`~tabverify.errors.TableError`, not gigabytes of memory.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property

from tabverify.errors import TableSizeError
from tabverify.table.model import Table
from tabverify.table.scientific import Measurement, is_bound, parse_measurement

MAX_SPAN = 1000
"""The most rows or columns one cell may span (browsers cap ``colspan`` at 1000 too)."""

MAX_GRID_COLUMNS = 1000
"""The most columns one grid may have, spans expanded (the limit of the CSV/JSON table readers)."""

MAX_GRID_CELLS = 1_000_000
"""The most cells the tables of one document may expand to (spans expanded, fillers counted)."""


class CellBudget:
    """The cells the readers of one document may still create; shared by all its tables.

    Readers :meth:`spend` before they build, so a document that would expand past the limit is
    refused before the memory is taken.
    """

    def __init__(self, source: str, limit: int = MAX_GRID_CELLS) -> None:
        self.source = source
        self.limit = limit
        self.used = 0

    def spend(self, cells: int) -> None:
        """Count ``cells`` more cells, raising :class:`TableError` past the limit."""
        self.used += cells
        self.check(0)

    def check(self, cells: int) -> None:
        """Raise :class:`TableError` when ``cells`` more cells would pass the limit (counts nothing)."""
        if self.used + cells > self.limit:
            raise TableSizeError(
                f"{self.source}: its tables expand to more than {self.limit:,} cells once rowspan/colspan "
                "are spread out, the most tabverify reads from one document; check the spans, or pass "
                "only the table you need"
            )


def check_columns(width: int, name: str) -> None:
    """Raise :class:`~tabverify.errors.TableSizeError` when a table of ``width`` columns is wider than
    :data:`MAX_GRID_COLUMNS` (every grid reader calls it before it lays the table out)."""
    if width > MAX_GRID_COLUMNS:
        raise TableSizeError(
            f"{name}: a row spans {width:,} columns, more than the {MAX_GRID_COLUMNS:,} a table may have; "
            "check the cell separators and colspans, or pass a narrower table"
        )


@dataclass(frozen=True, slots=True)
class GridCell:
    """One position of a grid.

    Attributes:
        text: the text of the cell covering this position (tags removed, whitespace kept).
        header: True for header cells (``<th>``, ``<thead>`` rows, rows above a LaTeX/Markdown rule).
        origin: the top-left position of the cell covering this one (itself unless spanned).
        filler: True when no cell of the source covers this position (short rows are padded).
    """

    text: str
    header: bool = False
    origin: tuple[int, int] = (0, 0)
    filler: bool = False


@dataclass(frozen=True)
class Grid:
    """A rectangular grid of cells with its caption.

    Build one with :meth:`from_rows`, :meth:`from_table` or a reader (:func:`tabverify.table.read_tables`
    for any document, :func:`tabverify.table.read_html_tables`, :func:`tabverify.table.read_latex_tables`,
    :func:`tabverify.table.read_markdown_tables`).
    """

    cells: tuple[tuple[GridCell, ...], ...]
    caption: str = ""
    name: str = ""

    @classmethod
    def from_rows(
        cls,
        rows: Sequence[Sequence[str]],
        header_rows: int = 1,
        caption: str = "",
        name: str = "",
        budget: CellBudget | None = None,
    ) -> Grid:
        """A grid from rows of text; the first ``header_rows`` rows are headers; short rows are padded.

        Raises:
            TableSizeError: the grid would be wider than :data:`MAX_GRID_COLUMNS` or hold more cells than
                ``budget`` (default: :data:`MAX_GRID_CELLS`) allows.
        """
        width = max((len(r) for r in rows), default=0)
        check_columns(width, name or "table")
        (budget or CellBudget(name or "table")).spend(len(rows) * width)
        built = []
        for i, row in enumerate(rows):
            built.append(
                tuple(
                    GridCell(str(row[j]) if j < len(row) else "", i < header_rows, (i, j), j >= len(row))
                    for j in range(width)
                )
            )
        return cls(tuple(built), caption, name)

    @classmethod
    def from_table(cls, table: Table) -> Grid:
        """A grid whose first row is the table's header."""
        rows = [list(table.header)] + [[c.text for c in row] for row in table.rows]
        return cls.from_rows(rows, 1, table.caption, table.name)

    @property
    def n_rows(self) -> int:
        """Number of grid rows, header rows included."""
        return len(self.cells)

    @property
    def n_columns(self) -> int:
        """Number of grid columns."""
        return len(self.cells[0]) if self.cells else 0

    def __getitem__(self, position: tuple[int, int]) -> GridCell:
        return self.cells[position[0]][position[1]]

    def __iter__(self) -> Iterator[tuple[GridCell, ...]]:
        return iter(self.cells)

    def text(self, row: int, column: int) -> str:
        """The stripped text at a position."""
        return self.cells[row][column].text.strip()

    def is_origin(self, row: int, column: int) -> bool:
        """True when the position is the top-left corner of its cell (not a spanned copy)."""
        return self.cells[row][column].origin == (row, column)

    @cached_property
    def measurements(self) -> dict[tuple[int, int], Measurement]:
        """The numbers of the grid: each origin position whose text reads as a number."""
        found = {}
        for i, row in enumerate(self.cells):
            for j, cell in enumerate(row):
                if cell.origin == (i, j) and not cell.filler:
                    m = parse_measurement(cell.text)
                    if m is not None:
                        found[(i, j)] = m
        return found

    @cached_property
    def data_measurements(self) -> dict[tuple[int, int], Measurement]:
        """The numbers below the header rows (header numbers such as "20%" noise ratios or epoch
        counts are labels, not results)."""
        first = self.header_row_count
        return {p: m for p, m in self.measurements.items() if p[0] >= first}

    def row_label(self, row: int) -> str:
        """The text that names a row: its cells left of the first number or bound (``>43.7``, see
        :func:`~tabverify.table.scientific.is_bound`), stripped and joined."""
        parts: list[str] = []
        for cell in self.cells[row]:
            if cell.origin in self.measurements or is_bound(cell.text):
                break
            text = cell.text.strip()
            if text and (not parts or parts[-1] != text):
                parts.append(text)
        return " ".join(parts)

    def column_label(self, column: int) -> str:
        """The header text above a column: its header-row cells, top to bottom, repeats removed."""
        parts: list[str] = []
        for i in range(self.header_row_count):
            text = self.cells[i][column].text.strip()
            if text and (not parts or parts[-1] != text):
                parts.append(text)
        return " / ".join(parts)

    @cached_property
    def header_row_count(self) -> int:
        """Rows at the top that are headers: marked as such, or (when none are marked) the rows before
        the first row holding a number outside its first column."""
        marked = 0
        for row in self.cells:
            if (
                row
                and all(c.header or c.filler or not c.text.strip() for c in row)
                and any(c.header for c in row)
            ):
                marked += 1
            else:
                break
        if marked:
            return marked
        for i, row in enumerate(self.cells):
            if any((i, j) in self.measurements for j in range(1, len(row))):
                return i
        return min(1, self.n_rows)

    def to_table(self) -> Table:
        """The grid as a :class:`Table`: header rows joined into one header, spans repeated."""
        header = [self.column_label(j) or f"column {j + 1}" for j in range(self.n_columns)]
        rows = [[c.text.strip() for c in row] for row in self.cells[self.header_row_count :]]
        return Table.from_rows(header, rows, caption=self.caption, name=self.name)
