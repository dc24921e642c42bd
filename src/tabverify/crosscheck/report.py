"""The crosscheck report: the matched source table, the cell pairs, and the copies that are wrong.

A discrepancy is a target number whose row and column correspond to a source cell (by the
alignment) but whose value does not agree with it. Only cells whose meaning is established are
judged (:func:`judged_cells`): rows tied to a source row by at least two agreeing result cells (or
by one value specific on both sides under the same name), named like it and not marked by the target as its own, reproduced or re-implemented results;
columns whose headers agree. Rows and columns whose cells disagree more often than they agree hold
another experiment, and raise none; nor does an alignment in which no judged row is named like its
source row (:func:`_anchored`: a table sharing values by chance), nor a value far from the source's
in a row tied only through size and cost columns (:func:`_setup_only`: a retrained baseline). A
discrepancy is classified by what most likely happened:

- ``rounding``: close to the source value but not its correct rounding (0.354 for 0.3546);
- ``scale``: off by a power of ten (6.84 for 68.4); the percent/fraction factor 100 counts only
  where the rest of the column is copied without it (0.4567 among percentages);
- ``digit``: one digit changed (0.978 for 0.977);
- ``transposition``: two neighbouring digits swapped (0.977 for 0.797);
- ``row_swap`` / ``column_swap``: the values of two rows (columns) exchanged in the target;
- ``permuted``: three or more values of a row (or column) copied in another order;
- ``other_row`` / ``other_column``: the value is the source's value for another row (column);
- ``header``: a column's numbers match one source column while its header names another;
- ``different``: none of these.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum
from pathlib import Path

from tabverify.crosscheck.cells import (
    Alignment,
    CellPair,
    NumberIndex,
    check_numbers,
    check_time,
    label_words,
    lowest_header,
    same_name,
)
from tabverify.crosscheck.tables import (
    DEFAULT_MODEL,
    MAX_ALIGNED_TABLES,
    OWN_STUDY_NOTE,
    SPECIFIC_DIGITS,
    Candidate,
    MatchModel,
    choose,
    own_study,
    rank_tables,
    shortlist,
    significant_digits,
)
from tabverify.errors import TableError
from tabverify.table.documents import read_tables
from tabverify.table.grid import Grid
from tabverify.table.model import Table
from tabverify.table.numbers import Agreement
from tabverify.table.scientific import Measurement, compare, contradiction

Position = tuple[int, int]


class DiscrepancyKind(StrEnum):
    """What most likely went wrong with a copied number."""

    ROUNDING = "rounding"
    SCALE = "scale"
    DIGIT = "digit"
    TRANSPOSITION = "transposition"
    ROW_SWAP = "row_swap"
    COLUMN_SWAP = "column_swap"
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


MIN_TIES = 2
"""Agreeing result cells (:func:`is_result`) a target row needs before its other cells are judged:
one shared value (an input size, a small count, a baseline number two papers both report) ties
rows that are not copies of each other."""

_MARK = re.compile(r"\\ddagger|\\dagger|\\ast|\\star|\\#|[†‡*∗⋆§¶#]")
_MARK_NAMES = {"\\dagger": "†", "\\ddagger": "‡", "\\ast": "*", "∗": "*", "\\star": "*", "⋆": "*", "\\#": "#"}
# words saying a result was produced by the citing paper itself (its method, its runs of others')
_OWN_WORDS = re.compile(
    r"\bours?\b|\bproposed\b|\bthis (?:work|paper)\b|reproduc|re-?implement|"
    r"\bre-?(?:run|train|test|evaluat)|\bby us\b|\bourselves\b|"
    r"\bwe (?:re-?)?(?:ran|run|obtain|train|evaluat|test|measur|comput|implement)",
    re.IGNORECASE,
)
# ... unless the words attribute the run to a cited work ("re-implemented by [31]"): then it is a copy
_BY_OTHERS = re.compile(r"\bby\s+(?:\[|\\cite|[A-Z][\w.-]*(?:\s+et\s+al\.?)?\s*[\[(])")
# where a mark's explanation ends: a sentence's full stop (not "et al." or "e.g."), or a semicolon
_CLAUSE_END = re.compile(r"(?<!\bal)(?<!\be\.g)(?<!\bi\.e)(?<=[a-z0-9\])])\.\s|;")
_MARKED_WITH = re.compile(
    r"\b(?:marked|denoted|indicated|shown|labell?ed)\s+(?:with|by|as|in)\s*$", re.IGNORECASE
)
_COMPONENT = re.compile(r"\s*(?:\+|\bw/o?|\bwith(?:out)?\b)\s*", re.IGNORECASE)


def _marks(text: str) -> set[str]:
    """The footnote marks written in ``text`` (``\\dagger`` and ``†`` are one mark)."""
    return {_MARK_NAMES.get(m.group(), m.group()) for m in _MARK.finditer(text)}


def own_marks(legend: str) -> set[str]:
    """The marks that a caption or legend explains as the citing paper's own results, reproductions
    or re-implementations ("* means re-implemented", "†: our implementation", "results we re-ran are
    marked with ‡"); not those attributing a run to a cited work ("‡: re-implemented by [31]")."""
    found = set()
    matches = list(_MARK.finditer(legend))
    for k, match in enumerate(matches):
        end = matches[k + 1].start() if k + 1 < len(matches) else len(legend)
        after = legend[match.end() : min(end, match.end() + 150)]
        after = _CLAUSE_END.split(after)[0]
        before = re.split(r"[.;:]", legend[max(0, match.start() - 100) : match.start()])[-1]
        explained = before + " " + after if _MARKED_WITH.search(before) else after
        if _says_own(explained):
            found.add(_MARK_NAMES.get(match.group(), match.group()))
    return found


def _says_own(text: str) -> bool:
    """Whether a label or legend text says the result is the citing paper's own run, and does not
    attribute it to a cited work ("Proposed by [3]", "re-implemented by Chen et al. [31]")."""
    return bool(_OWN_WORDS.search(text)) and not _BY_OTHERS.search(text)


def _legend(target: Grid) -> str:
    """The caption and the grid's text-only rows (notes under a table: "* denotes ...")."""
    notes = [
        target.text(i, 0)
        for i in range(target.header_row_count, target.n_rows)
        if not any((i, j) in target.measurements for j in range(target.n_columns))
        and len({target.text(i, j) for j in range(target.n_columns)} - {""}) == 1
    ]
    return " ".join([target.caption, *notes])


def own_rows(target: Grid) -> tuple[set[int], set[Position]]:
    """The rows (and the single cells) the target marks as its own results, reproductions or
    re-implementations, which are therefore not copies: rows labelled so ("Ours", "DCD (ours)",
    "X (reproduced)"), rows under a section row labelled so ("Our implementation"), and rows or cells
    carrying a mark the caption or legend explains so (:func:`own_marks`)."""
    marks = own_marks(_legend(target))
    rows: set[int] = set()
    cells: set[Position] = set()
    section_is_own = False
    for i in range(target.header_row_count, target.n_rows):
        texts = {target.text(i, j) for j in range(target.n_columns)} - {""}
        numbers = any((i, j) in target.measurements for j in range(target.n_columns))
        if not numbers and len(texts) == 1:  # a section row: it names the rows below it
            section_is_own = _says_own(texts.pop())
            continue
        label = target.row_label(i)
        if section_is_own or _says_own(label) or _marks(label) & marks:
            rows.add(i)
        elif marks:
            cells.update(
                (i, j)
                for j in range(target.n_columns)
                if (i, j) in target.measurements and _marks(target.text(i, j)) & marks
            )
    return rows, cells


def is_result(m: Measurement) -> bool:
    """A number that can tie two rows: written with decimals, a suffix (25.6M) or at least three
    digits; a small whole number (an epoch count, a rank, a layer count) is shared by chance."""
    return m.decimals > 0 or m.suffix is not None or abs(m.value) >= 100


def added_components_differ(a: str, b: str) -> bool:
    """True when two labels name one base with different added components: "X+Y" / "X", "X w/ Z" /
    "X" (the additions' words compared; a lone letter such as "P+L" adds nothing checkable)."""
    base_a, *added_a = _COMPONENT.split(a)
    base_b, *added_b = _COMPONENT.split(b)
    if not same_name(base_a, base_b):
        return False
    return label_words(" ".join(added_a)) != label_words(" ".join(added_b))


def _same_row(target_label: str, source_label: str, ties: int, specific: int) -> bool:
    """A target row tied by ``ties`` agreeing result cells is the source row when the tie reaches
    :data:`MIN_TIES` and the labels do not add different components to one base ("X+Y" against
    "X"). Labels named differently otherwise ("Reed et al." against "Bootstrap": authors against a
    method) do not keep the rows apart: two agreeing result cells are the evidence. One tie is
    enough when it is a specific value (:func:`_specific`: "40.6", not "224" or "0.5") and the two
    rows carry the same name: then the name and the value agree."""
    if added_components_differ(target_label, source_label):
        return False
    if ties >= MIN_TIES:
        return True
    return ties == 1 and specific == 1 and same_name(target_label, source_label)


def _abbreviates(short: str, long: str) -> bool:
    """``short`` (three letters at least) is ``long`` shortened: its letters in order, the first the
    same ("Acc" / "Accuracy", "Cop" / "Completeness")."""
    if len(short) < 3 or len(short) > len(long) or short[0] != long[0]:
        return False
    rest = iter(long[1:])
    return all(ch in rest for ch in short[1:])


def _squashed(label: str) -> str:
    return "".join(ch for ch in label.lower() if ch.isalnum())


def _headers_agree(target_label: str, source_label: str) -> bool:
    """Column headers that share a word, name the same thing, abbreviate one another ("Acc." /
    "Accuracy", "F_{ps}" / "Fps"), or of which one says nothing."""
    x, y = label_words(target_label), label_words(source_label)
    if not x or not y or x & y or same_name(target_label, source_label):
        return True
    if any(_abbreviates(a, b) or _abbreviates(b, a) for a in x for b in y):
        return True
    squashed = _squashed(target_label), _squashed(source_label)
    return squashed[0] in squashed[1] or squashed[1] in squashed[0]


def _source_label(source: Grid, line: int, axis: int, transposed: bool) -> str:
    """The label of source line ``line`` that a target row (axis 0) or column (axis 1) corresponds to."""
    return source.row_label(line) if (axis == 0) != transposed else source.column_label(line)


def _target_position(alignment: Alignment, s: Position) -> Position | None:
    """The target position that corresponds to source position ``s``, or None."""
    rows = {v: k for k, v in alignment.rows.items()}
    columns = {v: k for k, v in alignment.columns.items()}
    row_line, column_line = (s[1], s[0]) if alignment.transposed else s
    if row_line not in rows or column_line not in columns:
        return None
    return rows[row_line], columns[column_line]


def _scale_slips(alignment: Alignment) -> set[CellPair]:
    """Pairs agreeing only through the percent/fraction factor of 100 in a target column (a row, for a
    transposed copy) whose other pairs - at least one - agree without it: a unit is changed for a
    whole column, so one such cell among values copied as written is a slip (45.67 copied as 0.4567)."""
    line = 1 if not alignment.transposed else 0
    by_line: dict[int, list[CellPair]] = defaultdict(list)
    for pair in alignment.pairs:
        by_line[pair.target[line]].append(pair)
    slips = set()
    for pairs in by_line.values():
        scaled = [p for p in pairs if p.agreement is Agreement.SCALED]
        if len(scaled) == 1 and len(pairs) > 1:
            slips.add(scaled[0])
    return slips


def _specific(m: Measurement) -> bool:
    """A value two unrelated rows seldom share: written with decimals and at least
    :data:`SPECIFIC_DIGITS` significant digits ("72.8", not "224", "100" or "0.5": whole numbers are
    mostly settings - input sizes, epochs, layer counts - that many rows share)."""
    return m.decimals > 0 and significant_digits(m.value) >= SPECIFIC_DIGITS


def _ties(
    target: Grid, source: Grid, alignment: Alignment, own_cells: set[Position]
) -> tuple[Counter[int], Counter[int]]:
    """Per target row, its agreeing result cells (:func:`is_result`; scale slips and own cells not
    counted), and how many of them are specific (:func:`_specific`) on both sides: "68.99" agrees
    with "69M" by rounding, but the two share only two digits."""
    slips = _scale_slips(alignment)
    numbers = target.data_measurements
    tied = [
        p
        for p in alignment.pairs
        if p not in slips and p.target not in own_cells and is_result(numbers[p.target])
    ]
    specific = [
        p
        for p in tied
        if _specific(numbers[p.target])
        and (other := source.data_measurements.get(p.source)) is not None
        and _specific(other)
    ]
    return Counter(p.target[0] for p in tied), Counter(p.target[0] for p in specific)


def _mostly_copied(found: list[Discrepancy], ties: Counter[int], named: set[int]) -> list[Discrepancy]:
    """The discrepancies of rows that disagree in fewer cells than they agree: a copy with slips.
    A row disagreeing as often as it agrees holds another experiment (another version of the
    source, another setting) sharing some values, not a miscopied one. Values the source holds
    elsewhere in the same row or column (swaps, misplaced values) are its own, so they do not
    count against the row. A row in ``named`` (tied by one specific value under the same name,
    :func:`_same_row`) keeps one wrong cell: its name is the second piece of evidence."""
    wrong = Counter(d.target[0] for d in found if d.found_at is None)
    return [
        d
        for d in found
        if wrong[d.target[0]] < ties[d.target[0]] or (d.target[0] in named and wrong[d.target[0]] == 1)
    ]


def _mostly_copied_columns(found: list[Discrepancy], agreeing: Counter[int]) -> list[Discrepancy]:
    """The discrepancies of columns that, over the judged rows, do not disagree in more cells than
    they agree (``agreeing``: agreeing pairs per target column) - the column counterpart of
    :func:`_mostly_copied`. A column whose cells mostly differ from the source column it was paired
    with holds another setting (another schedule, another detector under the same metric name)
    that a few values share by chance, not a miscopied column. One wrong cell is no pattern: a
    column is set aside only from two. Values the source holds elsewhere do not count against the
    column, as for rows."""
    wrong = Counter(d.target[1] for d in found if d.found_at is None)
    return [d for d in found if wrong[d.target[1]] < 2 or wrong[d.target[1]] <= agreeing[d.target[1]]]


# header words of columns that describe a model or its set-up (its size, cost, input and schedule)
# rather than an outcome: two rows agreeing only there are the same architecture, maybe not the
# same experiment
_SETUP_WORDS = frozenset(
    "param params parameter parameters flops gflops tflops mflops macs gmacs madds throughput fps "
    "latency memory size resolution epoch epochs batch steps iterations iters".split()
)
_SETUP_MARK = re.compile(r"#\s*p\b", re.IGNORECASE)  # "#P (M)": the parameter count


# header words of columns timed on some machine: a citing paper measures speed again on its own
# hardware, so a value far from the source's there is a new measurement, not a miscopy
_TIMED_WORDS = frozenset("fps throughput latency speed runtime".split())


def _remeasured(found: list[Discrepancy], target: Grid) -> list[Discrepancy]:
    """Drops the ``different`` discrepancies of columns timed on hardware (frames per second,
    throughput, latency, speed, run time, named by the column's own lowest header: a group header
    above, "Same training speed", does not make its metrics timed): a near miss there (a digit, a
    rounding, a neighbour's value) is still a slip worth a look."""
    timed = {c for c in range(target.n_columns) if label_words(lowest_header(target, c)) & _TIMED_WORDS}
    return [d for d in found if not (d.kind is DiscrepancyKind.DIFFERENT and d.target[1] in timed)]


def _is_setup_column(label: str) -> bool:
    """A column whose header names the model's size or cost, its input or its schedule ("#Params",
    "GFLOPs", "Image Size", "Epochs") rather than a result."""
    return bool(label_words(label) & _SETUP_WORDS) or _SETUP_MARK.search(label) is not None


def _setup_only(
    found: list[Discrepancy], target: Grid, alignment: Alignment, own_cells: set[Position]
) -> list[Discrepancy]:
    """Drops the ``different`` discrepancies of rows tied to their source row only through set-up
    columns (:func:`_is_setup_column`). Two rows agreeing in parameters and FLOPs are the same
    architecture; a result far from the source's is then most likely another training run (a paper
    retraining a baseline with its own recipe), while a near miss - one digit, a rounding, a value
    of the next row - is still a slip worth a look."""
    setup = {c for c in range(target.n_columns) if _is_setup_column(target.column_label(c))}
    numbers = target.data_measurements
    by_row: dict[int, set[bool]] = defaultdict(set)
    for p in alignment.pairs:
        if p.target not in own_cells and is_result(numbers[p.target]):
            by_row[p.target[0]].add(p.target[1] in setup)
    weak = {row for row, kinds in by_row.items() if kinds == {True}}
    return [d for d in found if not (d.kind is DiscrepancyKind.DIFFERENT and d.target[0] in weak)]


_BY_AUTHORS = re.compile(r"\bet\s*al\b", re.IGNORECASE)


def _anchored(target: Grid, source: Grid, alignment: Alignment, rows: set[int]) -> bool:
    """Some judged target row (``rows``, :func:`judged_cells`) is named like the source row it is
    tied to (:func:`_may_name`). A copied table repeats at least one method's name with its
    numbers; an alignment of values alone, every row named otherwise than its source row
    ("PVTv1-Medium" against "MoCo v2"), is a table that shares a few numbers by chance, and its
    differences are not copying errors."""
    return any(
        _may_name(target.row_label(row), _source_label(source, alignment.rows[row], 0, alignment.transposed))
        for row in rows
        if row in alignment.rows
    )


def _may_name(target_label: str, source_label: str) -> bool:
    """Two row labels that may name one method: the same name (:func:`same_name`), a shared word
    that is not a number ("iCAN gao2018ican" / "iCAN [5] COCO R50 A+S"), or a target row named by
    its authors ("Chen et al.": the source may name the method instead, which no word test checks)."""
    return (
        same_name(target_label, source_label)
        or any(not w.isdigit() for w in label_words(target_label) & label_words(source_label))
        or _BY_AUTHORS.search(target_label) is not None
    )


def judged_cells(
    target: Grid, source: Grid, alignment: Alignment
) -> tuple[set[int], set[int], set[Position]]:
    """The target rows and columns whose cells are judged, and the cells left out (own marks).

    A row is judged when it is tied to its source row by at least :data:`MIN_TIES` agreeing result
    cells (or one specific value under the same name), is not one the target marks as its own (:func:`own_rows`) and names the same method
    (:func:`_same_row`); a column when its header agrees with the source column's
    (:func:`_headers_agree`)."""
    own, own_cells = own_rows(target)
    ties, specific = _ties(target, source, alignment, own_cells)
    rows = {
        row
        for row, n in ties.items()
        if row not in own
        and _same_row(
            target.row_label(row),
            _source_label(source, alignment.rows[row], 0, alignment.transposed),
            n,
            specific[row],
        )
    }
    columns = {
        column
        for column, line in alignment.columns.items()
        if _headers_agree(target.column_label(column), _source_label(source, line, 1, alignment.transposed))
    }
    return rows, columns, own_cells


def _digits(m: Measurement) -> str:
    return "".join(ch for ch in format(abs(m.value), "f") if ch.isdigit())


def _changed_digits(a: Measurement, b: Measurement) -> list[int] | None:
    """The places where the digits of two numbers written alike (same length, same precision) differ."""
    x, y = _digits(a), _digits(b)
    if len(x) != len(y) or a.exponent != b.exponent:
        return None
    return [i for i in range(len(x)) if x[i] != y[i]]


def _transposition(a: Measurement, b: Measurement) -> bool:
    changed = _changed_digits(a, b)
    if changed is None or len(changed) != 2 or changed[1] != changed[0] + 1:
        return False
    x, y, i = _digits(a), _digits(b), changed[0]
    return x[i] == y[i + 1] and x[i + 1] == y[i]


def _digit_slip(a: Measurement, b: Measurement) -> bool:
    changed = _changed_digits(a, b)
    return changed is not None and len(changed) == 1


def _scale_slip(a: Measurement, b: Measurement) -> int | None:
    for power in (1, -1, 2, -2, 3, -3):
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


def _found(target: Grid, t: Position, source: Grid, s: Position) -> tuple[list[Position], list[Position]]:
    """Where the source holds a value agreeing with target cell ``t`` in the row, and in the column,
    of ``s`` (``s`` itself left out), looked up by value (:class:`NumberIndex`) rather than by
    scanning the line, so that a tall table with many disagreeing cells stays linear."""
    m = target.data_measurements[t]
    index = NumberIndex.of(source)
    near: set[Position] = set()
    for key in NumberIndex.of(target).variants.get(t, ()):
        near.update(index.positions.get(key, ()))
    agreeing = sorted(
        p
        for p in near
        if p != s
        and (p[0] == s[0] or p[1] == s[1])
        and compare(m, index.numbers[p], copy=True) is not Agreement.DIFFERENT
    )
    return [p for p in agreeing if p[0] == s[0]], [p for p in agreeing if p[1] == s[1]]


def _line(grid: Grid, position: Position, axis: int) -> str:
    """A source row (axis 0) or column (axis 1) as prose: by its label, and by its 0-based position
    (as positions are printed everywhere else), so "column 3" is never read as the third column."""
    label = grid.row_label(position[0]) if axis == 0 else grid.column_label(position[1])
    where = f"{'row' if axis == 0 else 'column'} at position {position[axis]}"
    return f"in '{label}' ({where})" if label else f"in the {where}"


def _swap(
    target: Grid, source: Grid, alignment: Alignment, t: Position, s: Position, found_at: Position
) -> DiscrepancyKind | None:
    """ROW_SWAP (COLUMN_SWAP) when the target cell that corresponds to ``found_at`` - where the source
    holds this cell's value - holds this cell's source value: two values exchanged, whether or not
    the other cell is judged itself."""
    other = _target_position(alignment, found_at)
    here = target.data_measurements.get(other) if other is not None and other != t else None
    if other is None or here is None:
        return None
    if compare(here, source.data_measurements[s], copy=True) is Agreement.DIFFERENT:
        return None
    return DiscrepancyKind.ROW_SWAP if other[1] == t[1] else DiscrepancyKind.COLUMN_SWAP


def _classify(
    target: Grid, source: Grid, alignment: Alignment, t: Position, s: Position
) -> tuple[DiscrepancyKind, str, Position | None]:
    # in cells of several numbers, the first pair that disagrees is what was miscopied
    whole = target.data_measurements[t], source.data_measurements[s]
    tm, sm = contradiction(*whole) or whole
    t_text, s_text = target.text(*t), source.text(*s)
    same_row, same_column = _found(target, t, source, s)
    for found_at in [*same_row, *same_column]:
        swap = _swap(target, source, alignment, t, s, found_at)
        if swap is not None:
            lines = "rows" if swap is DiscrepancyKind.ROW_SWAP else "columns"
            axis = 1 if found_at[0] == s[0] else 0
            return (
                swap,
                f"{t_text} is the source's value {_line(source, found_at, axis)} and {s_text}, this cell's "
                f"source value, sits in that place of the target: the two {lines} were swapped",
                found_at,
            )
    for found, axis, kind in (
        (same_row, 1, DiscrepancyKind.OTHER_COLUMN),
        (same_column, 0, DiscrepancyKind.OTHER_ROW),
    ):
        if found:
            where = "row" if axis == 1 else "column"
            return (
                kind,
                f"{t_text} is the source's value {_line(source, found[0], axis)} of the same {where}, "
                f"not {_line(source, s, axis)} ({s_text})",
                found[0],
            )
    if _transposition(tm, sm):
        return (
            DiscrepancyKind.TRANSPOSITION,
            f"{t_text} is {s_text} with two neighbouring digits swapped",
            None,
        )
    if _digit_slip(tm, sm):
        return DiscrepancyKind.DIGIT, f"{t_text} is {s_text} with one digit changed", None
    power = _scale_slip(tm, sm)
    if power is not None:
        return DiscrepancyKind.SCALE, f"{t_text} is {s_text} times 10^{power}", None
    if _rounding_slip(tm, sm):
        return DiscrepancyKind.ROUNDING, f"{t_text} is not {s_text} correctly rounded", None
    return DiscrepancyKind.DIFFERENT, f"{t_text} differs from the source's {s_text}", None


def find_discrepancies(target: Grid, source: Grid, alignment: Alignment) -> list[Discrepancy]:
    """Target numbers in corresponding rows and columns whose value disagrees with the source.

    Only cells of judged rows and columns are checked (:func:`judged_cells`): a row tied to its source
    row by at least two agreeing result cells (or one specific value under the same name), named like
    it, not marked as the target's own; a
    column whose header agrees. Nothing is judged, header flags included, when no judged row is named
    like its source row (:func:`_anchored`). A number agreeing only through the factor 100 where the
    rest of its column agrees without it is a scale slip. Values that merely coincide with another
    table's therefore raise no alarms; nor do a plain value and a signed change ("4.20" / "+13.76"),
    a value written with fewer digits however few ("0.880" / "0.9": precision, not a contradiction),
    or another value in a column timed on hardware (FPS, throughput, latency: measured again).
    Cells of several numbers ("65.5 / 84.5") are compared number by number.
    """
    rows, columns, own_cells = judged_cells(target, source, alignment)
    ties, _ = _ties(target, source, alignment, own_cells)
    if not _anchored(target, source, alignment, rows):
        return []  # no row named like its source row: no cell, no header is judged
    slips = _scale_slips(alignment)
    slip_targets = {p.target for p in slips}
    paired = {p.target for p in alignment.pairs} - slip_targets
    used_sources = {p.source for p in alignment.pairs if p not in slips}
    found: list[Discrepancy] = []
    for t, m in sorted(target.data_measurements.items()):
        if t in paired or t in own_cells or t[0] not in rows or t[1] not in columns:
            continue
        s = alignment.source_position(t)
        if s is None or s in used_sources:
            continue
        other = source.data_measurements.get(s)
        if other is None or len(other.others) != len(m.others) or other.signed != m.signed:
            continue
        if t not in slip_targets and contradiction(m, other) is None:
            continue  # agreeing, or written with fewer digits (0.880 / 0.9): no contradiction
        kind, evidence, where = _classify(target, source, alignment, t, s)
        found.append(Discrepancy(t, s, target.text(*t), source.text(*s), kind, evidence, where))
    found = _mostly_copied(found, ties, {row for row in rows if ties[row] == 1})
    found = _mostly_copied_columns(
        found, Counter(p.target[1] for p in alignment.pairs if p not in slips and p.target[0] in rows)
    )
    found = _setup_only(found, target, alignment, own_cells)
    found = _remeasured(found, target)
    found = _mark_permutations(found)
    found.extend(_header_swaps(target, source, alignment))
    return found


def _mark_permutations(found: list[Discrepancy]) -> list[Discrepancy]:
    """Three or more misplaced values whose places are each other's in a cycle: the order was
    permuted (two values exchanged are a swap, classified already)."""
    misplaced = {d.source: d for d in found if d.found_at is not None}
    result = []
    for d in found:
        if (
            d.kind in (DiscrepancyKind.OTHER_ROW, DiscrepancyKind.OTHER_COLUMN)
            and d.found_at in misplaced
            and misplaced[d.found_at].found_at is not None
        ):
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


def _header_overhangs(grid: Grid) -> bool:
    """A headed column with no text in any body row: the header row does not line up with the body
    (an extra header cell, "val | test" over one column, shifts every header after it), so the
    source's headers cannot say which column is which."""
    body = range(grid.header_row_count, grid.n_rows)
    return (
        grid.header_row_count > 0
        and len(body) > 0
        and any(
            grid.column_label(c).strip() and not any(grid.text(r, c).strip() for r in body)
            for c in range(grid.n_columns)
        )
    )


MAX_ABBREVIATION_WORDS = 12
"""Header words compared for abbreviations ("Avg" / "Average") at most, on each side: headers
are a few words; longer ones are compared word for word only (every pair would cost time)."""


def _header_swaps(target: Grid, source: Grid, alignment: Alignment) -> list[Discrepancy]:
    """Columns whose numbers match one source column while their header names another one: another
    source header whose words all appear in the target column's own header (its lowest header
    cell, when that has words: a group header above, "Mask R-CNN 1x", does not name the metric
    "AP^mask") fits it better than the matched one. Words abbreviating each other count as shared
    ("Avg(Hard)" fits "Average(hard)"), and a header of numbers alone ("1") names no column."""
    if alignment.transposed or target.header_row_count == 0 or _header_overhangs(source):
        return []
    counts = Counter(p.target[1] for p in alignment.pairs)
    source_labels = {j: label_words(source.column_label(j)) for j in range(source.n_columns)}
    swaps = []
    for tc, sc in sorted(alignment.columns.items()):
        if counts[tc] < 2:
            continue
        words = label_words(target.text(target.header_row_count - 1, tc)) or label_words(
            target.column_label(tc)
        )

        check_time()
        abbreviations = len(words) <= MAX_ABBREVIATION_WORDS

        def fit(
            label: frozenset[str], words: frozenset[str] = words, abbreviations: bool = abbreviations
        ) -> int:
            shared = {
                a
                for a in label
                if a in words
                or (
                    abbreviations
                    and len(label) <= MAX_ABBREVIATION_WORDS
                    and any(_abbreviates(a, b) for b in words)
                )
            }
            return len(shared) - len(label - shared)

        mapped = fit(source_labels.get(sc, frozenset()))
        # a header naming the column better: all its words in the target's ("Avg" for "Average"),
        # one of them a word (a number alone, "1", names nothing)
        named = [
            j
            for j, label in source_labels.items()
            if j != sc and label <= words and not all(w.isdigit() for w in label) and fit(label) > mapped
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
    model: MatchModel | None = DEFAULT_MODEL,
    max_aligned: int = MAX_ALIGNED_TABLES,
) -> Report:
    """Find which source table the target's numbers come from, pair the cells, list the wrong copies.

    Args:
        target: the table that quotes numbers: a :class:`Grid`, a :class:`Table`, or a document path
            (its first table is used; see :func:`tabverify.table.read_tables`).
        sources: the cited source's tables: grids, tables, or document paths (all their tables).
        model: the "no match" decision (:class:`~tabverify.crosscheck.tables.MatchModel`; default:
            the one fitted on the arXiVeri development pairs). None takes the best-ranked source
            table whatever its evidence, for when the source table is known.
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
    factor = model.unlabelled_factor if model is not None else DEFAULT_MODEL.unlabelled_factor
    ranking = rank_tables(target, sources, indices, factor)
    warnings = (note,) if note else ()
    if model is None:
        best = ranking[0] if ranking and ranking[0].alignment.pairs else None
    else:
        best = choose(target, ranking, model)
        if own_study(target):
            warnings = (*warnings, OWN_STUDY_NOTE)
    if best is None:
        return Report(target, sources, None, tuple(ranking), (), (), warnings)
    source = sources[best.index]
    # a target may stack what the source puts side by side: every copied block is judged
    discrepancies = [
        d
        for block in (best.alignment, *best.alignment.blocks)
        for d in find_discrepancies(target, source, block)
    ]
    return Report(
        target,
        sources,
        best.index,
        tuple(ranking),
        best.alignment.all_pairs(),
        tuple(discrepancies),
        warnings,
    )
