"""The crosscheck report: the matched source table, the cell pairs, and the copies that are wrong.

A discrepancy is a target number whose row and column correspond to a source cell (by the
alignment) but whose value does not agree with it. It is classified by what most likely happened:

- ``rounding``: close to the source value but not its correct rounding (0.354 for 0.3546);
- ``scale``: off by a power of ten that is not the accepted percent/fraction factor (6.84 for 68.4);
- ``digit``: one digit changed or two neighbouring digits swapped (0.977 for 0.997);
- ``permuted``: the values of a row (or column) were copied in another order;
- ``other_row`` / ``other_column``: the value is the source's value for another row (column);
- ``header``: a column's numbers match one source column while its header names another;
- ``different``: none of these.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum
from pathlib import Path

from tabverify.crosscheck.cells import Alignment, CellPair, check_numbers, label_words, same_name
from tabverify.crosscheck.tables import MAX_ALIGNED_TABLES, MIN_SUPPORT, Candidate, rank_tables, shortlist
from tabverify.errors import TableError
from tabverify.table.documents import read_tables
from tabverify.table.grid import Grid
from tabverify.table.model import Table
from tabverify.table.numbers import Agreement
from tabverify.table.scientific import Measurement, compare

Position = tuple[int, int]


class DiscrepancyKind(StrEnum):
    """What most likely went wrong with a copied number."""

    ROUNDING = "rounding"
    SCALE = "scale"
    DIGIT = "digit"
    PERMUTED = "permuted"
    OTHER_ROW = "other_row"
    OTHER_COLUMN = "other_column"
    HEADER = "header"
    DIFFERENT = "different"


@dataclass(frozen=True)
class Discrepancy:
    """A copied number that does not match its source.

    Attributes:
        target: position of the wrong cell in the target grid.
        source: position of the source cell it corresponds to.
        target_text, source_text: the two cells as written.
        kind: the classification.
        evidence: one sentence saying why, for people.
        found_at: where the target's value does appear in the source, when it does.
    """

    target: Position
    source: Position
    target_text: str
    source_text: str
    kind: DiscrepancyKind
    evidence: str
    found_at: Position | None = None

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready dict."""
        return {
            "target": list(self.target),
            "source": list(self.source),
            "target_text": self.target_text,
            "source_text": self.source_text,
            "kind": str(self.kind),
            "evidence": self.evidence,
            "found_at": list(self.found_at) if self.found_at else None,
        }


@dataclass(frozen=True)
class Report:
    """The result of checking one target table against the tables of one source.

    Numbering: in :meth:`to_dict` (and every output built on it) tables are numbered from 1, as
    ``tabverify tables`` lists them (``source_table``, ``ranking[].table``); cell positions are 0-based
    ``(row, column)`` offsets into the expanded grid, header rows included (``pairs``,
    ``discrepancies``). The Python attributes index lists: ``source_index`` and
    :attr:`Candidate.index` are 0-based positions in ``sources``.

    Attributes:
        target: the target table.
        sources: the candidate source tables.
        source_index: the 0-based index of the matched source table in ``sources``, or None ("no match").
        ranking: every candidate compared, with its evidence, best first.
        pairs: the agreeing cell pairs (target position, source position).
        discrepancies: the copied numbers that disagree with their source cell.
        warnings: what a limit cut short (e.g. only some of thousands of source tables compared
            in full); empty when the work was complete.
    """

    target: Grid
    sources: tuple[Grid, ...]
    source_index: int | None
    ranking: tuple[Candidate, ...]
    pairs: tuple[CellPair, ...]
    discrepancies: tuple[Discrepancy, ...]
    warnings: tuple[str, ...] = ()

    @property
    def source(self) -> Grid | None:
        """The matched source table, or None."""
        return self.sources[self.source_index] if self.source_index is not None else None

    @property
    def ok(self) -> bool:
        """True when no copied number is wrong."""
        return not self.discrepancies

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready dict: tables numbered from 1, cell positions 0-based (see the class docstring)."""
        return {
            "target": self.target.name,
            "target_caption": self.target.caption,
            "source_table": self.source_index + 1 if self.source_index is not None else None,
            "source_name": self.source.name if self.source is not None else None,
            "source_caption": self.source.caption if self.source is not None else None,
            "ranking": [
                {
                    "table": c.index + 1,
                    "support": round(c.support, 3),
                    "text_similarity": round(c.text_similarity, 3),
                }
                for c in self.ranking
            ],
            "pairs": [
                {
                    **p.to_dict(),
                    "target_text": self.target.text(*p.target),
                    "source_text": self.source.text(*p.source) if self.source is not None else "",
                }
                for p in self.pairs
            ],
            "discrepancies": [d.to_dict() for d in self.discrepancies],
            "warnings": list(self.warnings),
        }


def _digits(m: Measurement) -> str:
    return "".join(ch for ch in format(m.value, "f") if ch.isdigit())


def _digit_slip(a: Measurement, b: Measurement) -> bool:
    x, y = _digits(a), _digits(b)
    if len(x) != len(y) or a.exponent != b.exponent:
        return False
    different = [i for i in range(len(x)) if x[i] != y[i]]
    if len(different) == 1:
        return True
    i = different[0] if len(different) == 2 else -1
    return len(different) == 2 and different[1] == i + 1 and x[i] == y[i + 1] and x[i + 1] == y[i]


def _scale_slip(a: Measurement, b: Measurement) -> int | None:
    for power in (1, -1, 3, -3):
        factor = Decimal(10) ** power
        scaled = Measurement(b.text, b.value * factor)
        if compare(a, scaled, scale=False) is not Agreement.DIFFERENT:
            return power
    return None


def _rounding_slip(a: Measurement, b: Measurement) -> bool:
    if a.exponent == b.exponent:
        return False
    coarse = a if a.exponent > b.exponent else b
    unit = Decimal(1).scaleb(coarse.exponent)
    return abs(a.value - b.value) <= unit


def _found(m: Measurement, source: Grid, positions: Sequence[Position]) -> Position | None:
    for position in positions:
        other = source.data_measurements.get(position)
        if other is not None and not other.multi and compare(m, other) is not Agreement.DIFFERENT:
            return position
    return None


def _line(grid: Grid, position: Position, axis: int) -> str:
    """A source row (axis 0) or column (axis 1) as prose: by its label, and by its 0-based position
    (as positions are printed everywhere else), so "column 3" is never read as the third column."""
    label = grid.row_label(position[0]) if axis == 0 else grid.column_label(position[1])
    where = f"{'row' if axis == 0 else 'column'} at position {position[axis]}"
    return f"in '{label}' ({where})" if label else f"in the {where}"


def _classify(
    target: Grid, source: Grid, alignment: Alignment, t: Position, s: Position
) -> tuple[DiscrepancyKind, str, Position | None]:
    tm, sm = target.data_measurements[t], source.data_measurements[s]
    t_text, s_text = target.text(*t), source.text(*s)
    same_row = [(s[0], j) for j in range(source.n_columns) if j != s[1]]
    same_column = [(i, s[1]) for i in range(source.n_rows) if i != s[0]]
    in_row, in_column = _found(tm, source, same_row), _found(tm, source, same_column)
    if in_row is not None:
        return (
            DiscrepancyKind.OTHER_COLUMN,
            f"{t_text} is the source's value {_line(source, in_row, 1)} of the same row, "
            f"not {_line(source, s, 1)} ({s_text})",
            in_row,
        )
    if in_column is not None:
        return (
            DiscrepancyKind.OTHER_ROW,
            f"{t_text} is the source's value {_line(source, in_column, 0)} of the same column, "
            f"not {_line(source, s, 0)} ({s_text})",
            in_column,
        )
    power = _scale_slip(tm, sm)
    if power is not None:
        return DiscrepancyKind.SCALE, f"{t_text} is {s_text} times 10^{power}", None
    if _rounding_slip(tm, sm):
        return DiscrepancyKind.ROUNDING, f"{t_text} is not {s_text} correctly rounded", None
    if _digit_slip(tm, sm):
        return DiscrepancyKind.DIGIT, f"{t_text} differs from {s_text} by a typo-like digit change", None
    return DiscrepancyKind.DIFFERENT, f"{t_text} differs from the source's {s_text}", None


def _source_label(source: Grid, position: Position, axis: int, transposed: bool) -> str:
    """The label of the source line a target row (axis 0) or column (axis 1) corresponds to."""
    if (axis == 0) != transposed:
        return source.row_label(position[0])
    return source.column_label(position[1])


def _rows_with_same_meaning(target: Grid, source: Grid, alignment: Alignment) -> set[int]:
    """Target rows named like the source line they correspond to (a source row, or for a transposed
    copy a source column) that hold an agreeing pair. (Rows whose only number is miscopied are not
    checked: on the arXiVeri pairs, same-named rows without an agreeing value are mostly other
    experiments - re-runs, other settings - not copying errors.)"""
    return {
        pair.target[0]
        for pair in alignment.pairs
        if same_name(
            target.row_label(pair.target[0]), _source_label(source, pair.source, 0, alignment.transposed)
        )
    }


def _columns_with_same_meaning(target: Grid, source: Grid, alignment: Alignment) -> set[int]:
    """Target columns with an agreeing pair under a header sharing a word with the label of the source
    line they correspond to, or with three agreeing pairs (notations differ: "E_m" / "E_xi")."""
    counts = Counter(p.target[1] for p in alignment.pairs)
    columns = {c for c, n in counts.items() if n >= 3}
    for pair in alignment.pairs:
        source_label = _source_label(source, pair.source, 1, alignment.transposed)
        if label_words(target.column_label(pair.target[1])) & label_words(source_label):
            columns.add(pair.target[1])
    return columns


def find_discrepancies(target: Grid, source: Grid, alignment: Alignment) -> list[Discrepancy]:
    """Target numbers in corresponding rows and columns whose value disagrees with the source.

    A cell is checked only when its meaning is established: its row holds an agreeing pair and is
    named like the source row it corresponds to, and its column holds an agreeing pair under a
    header sharing a word with the source's (or three agreeing pairs). Values that merely coincide
    with another table's therefore raise no alarms; nor do a plain value and a signed change
    ("4.20" / "+13.76").
    """
    paired = {p.target for p in alignment.pairs}
    used_sources = {p.source for p in alignment.pairs}
    rows = _rows_with_same_meaning(target, source, alignment)
    columns = _columns_with_same_meaning(target, source, alignment)
    found: list[Discrepancy] = []
    for t, m in sorted(target.data_measurements.items()):
        if t in paired or m.multi or t[0] not in rows or t[1] not in columns:
            continue
        s = alignment.source_position(t)
        if s is None or s in used_sources:
            continue
        other = source.data_measurements.get(s)
        if (
            other is None
            or other.multi
            or other.signed != m.signed
            or compare(m, other) is not Agreement.DIFFERENT
        ):
            continue
        kind, evidence, where = _classify(target, source, alignment, t, s)
        found.append(Discrepancy(t, s, target.text(*t), source.text(*s), kind, evidence, where))
    found = _mark_permutations(found)
    found.extend(_header_swaps(target, source, alignment))
    return found


def _mark_permutations(found: list[Discrepancy]) -> list[Discrepancy]:
    """Two or more misplaced values whose places are each other's: the order was permuted."""
    misplaced = {d.source: d for d in found if d.found_at is not None}
    result = []
    for d in found:
        if d.found_at is not None and d.found_at in misplaced and misplaced[d.found_at].found_at is not None:
            axis = "columns" if d.kind is DiscrepancyKind.OTHER_COLUMN else "rows"
            result.append(
                Discrepancy(
                    d.target,
                    d.source,
                    d.target_text,
                    d.source_text,
                    DiscrepancyKind.PERMUTED,
                    f"{d.target_text} and its neighbours were copied with their {axis} permuted: "
                    f"the source has {d.target_text} at {list(d.found_at)} and {d.source_text} here",
                    d.found_at,
                )  # fmt: skip
            )
        else:
            result.append(d)
    return result


def _header_swaps(target: Grid, source: Grid, alignment: Alignment) -> list[Discrepancy]:
    """Columns whose numbers match one source column while their header names another one: another
    source header whose words all appear in the target header fits it better than the matched one."""
    if alignment.transposed or target.header_row_count == 0:
        return []
    counts = Counter(p.target[1] for p in alignment.pairs)
    source_labels = {j: label_words(source.column_label(j)) for j in range(source.n_columns)}
    swaps = []
    for tc, sc in sorted(alignment.columns.items()):
        if counts[tc] < 2:
            continue
        words = label_words(target.column_label(tc))

        def fit(label: frozenset[str], words: frozenset[str] = words) -> int:
            return len(label & words) - len(label - words)

        mapped = fit(source_labels.get(sc, frozenset()))
        named = [
            j
            for j, label in source_labels.items()
            if j != sc and label and label <= words and fit(label) > mapped
        ]
        if len(named) != 1:
            continue
        row = target.header_row_count - 1
        swaps.append(
            Discrepancy(
                (row, tc),
                (source.header_row_count - 1, sc),
                target.column_label(tc),
                source.column_label(sc),
                DiscrepancyKind.HEADER,
                f"the numbers under '{target.column_label(tc)}' are the source's '{source.column_label(sc)}' "
                f"column; the source's '{source.column_label(named[0])}' is the column at position {named[0]}",
                (source.header_row_count - 1, named[0]),
            )  # fmt: skip
        )
    return swaps


TableLike = Grid | Table | str | Path


def as_grids(value: TableLike | Sequence[TableLike]) -> list[Grid]:
    """Grids from a grid, a :class:`Table`, a document path (every table in it) or a list of those."""
    if isinstance(value, Grid):
        return [value]
    if isinstance(value, Table):
        return [Grid.from_table(value)]
    if isinstance(value, (str, Path)):
        return read_tables(value)
    grids: list[Grid] = []
    for item in value:
        grids.extend(as_grids(item))
    return grids


def crosscheck(
    target: TableLike,
    sources: TableLike | Sequence[TableLike],
    min_support: float = MIN_SUPPORT,
    max_aligned: int = MAX_ALIGNED_TABLES,
) -> Report:
    """Find which source table the target's numbers come from, pair the cells, list the wrong copies.

    Args:
        target: the table that quotes numbers: a :class:`Grid`, a :class:`Table`, or a document path
            (its first table is used; see :func:`tabverify.table.read_tables`).
        sources: the cited source's tables: grids, tables, or document paths (all their tables).
        min_support: evidence below which no source table is chosen (default: the calibrated value).
        max_aligned: the most source tables aligned in full; beyond, those holding the most of the
            target's numbers are, and ``report.warnings`` says so (see
            :func:`tabverify.crosscheck.tables.shortlist`).

    Returns:
        a :class:`Report`; ``report.ok`` is False when some copied number is wrong.

    Raises:
        TableError: a document cannot be read or holds no table; or no source table was given.
        TableSizeError: the target or a source table holds more than
            :data:`~tabverify.crosscheck.cells.MAX_CROSSCHECK_NUMBERS` numbers.
    """
    target = as_grids(target)[0] if not isinstance(target, Grid) else target
    sources = tuple(as_grids(sources))
    if not sources:
        raise TableError("no source tables to check against; pass at least one source table or document")
    check_numbers(target, "the target table")
    for number, source in enumerate(sources, start=1):
        check_numbers(source, f"source table {number}")
    indices, note = shortlist(target, sources, max_aligned)
    ranking = rank_tables(target, sources, indices)
    warnings = (note,) if note else ()
    best = ranking[0] if ranking and ranking[0].support >= min_support else None
    if best is None:
        return Report(target, sources, None, tuple(ranking), (), (), warnings)
    source = sources[best.index]
    discrepancies = find_discrepancies(target, source, best.alignment)
    return Report(
        target, sources, best.index, tuple(ranking), best.alignment.pairs, tuple(discrepancies), warnings
    )
