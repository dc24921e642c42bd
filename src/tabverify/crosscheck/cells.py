"""Cell matching: which target cells hold the same number with the same meaning as a source cell.

Meaning is read from the table's structure rather than its words: the rows and columns of a copied
block keep their order, so a target row corresponds to one source row and a target column to one
source column (or, for a transposed copy, rows to columns). The correspondence is voted by the
values the two tables share, ambiguous values voting less; a cell pair is reported when its row and
column correspond and its values agree (exactly, after rounding, or after a x100 scale). Repeated
values with different meanings are thus told apart by where they sit.

A column keeps its source column when one of its values is miscopied: a row tied by many values
outvotes one tied by a single coincidence; a column is found by its lowest header ("M" under another
group header); values exchanged between rows of the block still name their column; and a column
nothing voted for is placed by the block's order (between two columns whose source columns are as
far apart, or next to one when the labels share a word) unless it disagrees with the source in two
or more rows of the block - then it is another measurement, not a copy.

The work per table pair is bounded: a table taking part holds at most :data:`MAX_CROSSCHECK_NUMBERS`
numbers (:func:`check_numbers`; scientific tables hold a few thousand at most), so that a large
data table is one clear :class:`~tabverify.errors.TableSizeError`, not minutes and gigabytes.
"""

from __future__ import annotations

import re
import time
import weakref
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
from decimal import Decimal, InvalidOperation
from typing import Any, TypeVar

from tabverify.errors import TableSizeError, TimeLimitError
from tabverify.table.grid import Grid
from tabverify.table.numbers import WRITTEN_ROUNDINGS, Agreement
from tabverify.table.scientific import MAX_MEASUREMENT_TEXT, Measurement, compare, parse_measurement

Position = tuple[int, int]
_HUNDRED = Decimal(100)
AGREEMENT_WEIGHT = {Agreement.EXACT: 1.0, Agreement.ROUNDED: 0.8, Agreement.SCALED: 0.7}
UNLABELLED_FACTOR = 0.25
"""Weight of a pair whose row labels and column headers both disagree, in :attr:`CellPair.weight` and
the ranking of source tables: the value the arXiVeri benchmark chooses from (0, 0.25, 0.5, 1) on all
its development pairs; its cross-validation chooses it on each fold's training pairs only."""
MAX_OPTIONS = 12


@dataclass(frozen=True, slots=True)
class CellPair:
    """A target cell and the source cell it was copied from.

    Attributes:
        target, source: (row, column) on the expanded grids, header rows included.
        agreement: how the two values relate (exact, rounded, scaled; ``different`` in discrepancies).
        labelled: the row labels or the column headers of the two cells share a word.
        row_labelled: the row labels share a word (the same method or setting: the strongest sign
            that the number was copied, since values alone coincide across unrelated tables).
    """

    target: Position
    source: Position
    agreement: Agreement
    labelled: bool = False
    row_labelled: bool = False

    @property
    def weight(self) -> float:
        """Evidence the pair gives: its agreement weight, full when the row labels or column headers
        share a word, a quarter when only the values agree."""
        return AGREEMENT_WEIGHT.get(self.agreement, 0.0) * (1.0 if self.labelled else UNLABELLED_FACTOR)

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready dict."""
        return {
            "target": list(self.target),
            "source": list(self.source),
            "agreement": str(self.agreement),
            "labels_agree": self.labelled,
        }


@dataclass(frozen=True)
class Alignment:
    """How the rows and columns of a target table correspond to those of a source table.

    Attributes:
        rows: target row -> source row (for a transposed copy: target row -> source column).
        columns: target column -> source column (transposed: target column -> source row).
        transposed: True when the target's rows are the source's columns.
        pairs: the cell pairs whose values agree, one-to-one.
        support: the summed :attr:`CellPair.weight` of ``pairs`` (the evidence for this source table).
        blocks: further copied blocks of other target rows, each an alignment of its own (a target
            that stacks what the source puts side by side: one split's columns under the other's, the
            same methods listed twice); empty for most copies. ``pairs`` and ``support`` are the
            main block's; :meth:`all_pairs` holds every block's.
    """

    rows: dict[int, int]
    columns: dict[int, int]
    transposed: bool
    pairs: tuple[CellPair, ...]
    support: float
    blocks: tuple[Alignment, ...] = ()

    def all_pairs(self) -> tuple[CellPair, ...]:
        """The agreeing pairs of the main block and of every further block, one-to-one."""
        return self.pairs + tuple(p for block in self.blocks for p in block.pairs)

    def source_position(self, target: Position) -> Position | None:
        """The source position a target position corresponds to, or None when its row or column
        has no counterpart."""
        row, column = self.rows.get(target[0]), self.columns.get(target[1])
        if row is None or column is None:
            return None
        return (column, row) if self.transposed else (row, column)


def _key(value: Decimal) -> Decimal:
    return value.normalize()


MAX_COARSE_DIGITS = 8
"""Coarser writings of a number keep at most this many significant digits (the writings of a
80-digit cell would otherwise cost hundreds of roundings each; at 16, 100,000 numbers of 16
decimals took 2.7 GB). Scientific tables write up to about six."""


def _variants(m: Measurement) -> set[Decimal]:
    """Values ``m`` may be written as elsewhere: itself, rounded to fewer digits, times or over 100."""
    keys = set()
    for base in (m.value, m.value * _HUNDRED, m.value / _HUNDRED):
        keys.add(_key(base))
        exponent = base.as_tuple().exponent
        if not isinstance(exponent, int):
            continue
        # coarser writings keep two significant digits at least (as :func:`rounds_to` demands)
        for e in range(max(exponent + 1, base.adjusted() - MAX_COARSE_DIGITS + 1), min(1, base.adjusted())):
            quantum = Decimal(1).scaleb(e)
            for rounding in WRITTEN_ROUNDINGS:
                try:
                    keys.add(_key(base.quantize(quantum, rounding=rounding)))
                except InvalidOperation:
                    continue
    return keys


MAX_CROSSCHECK_NUMBERS = 20_000
"""The most numbers a table may hold to take part in a crosscheck (as target or source): the
pairing costs time and memory per number (a table of 20,000 numbers checked against itself takes
about 8 s and 200 MB), and scientific tables hold a few thousand numbers at most."""


MAX_RUN_NUMBERS = 400_000
"""The most numbers one crosscheck run may hold in all (the target tables checked and every source
table): each table stays under :data:`MAX_CROSSCHECK_NUMBERS`, but many of them multiply time and
memory (three sources of 20 tables of 19,000 numbers took 2 minutes and 2.3 GB)."""

MAX_TABLE_PAIRS = 50_000
"""The most (target table, source table) pairs one run may weigh: every target table is ranked
against every source table (20,000 one-row tables against one source take about 4 s, and the
report prints one line per pair); a paper's tables against its sources' are a few thousand pairs."""


DEFAULT_TIMEOUT_S = 30.0
"""The seconds a ``tabverify crosscheck`` run may take (``--timeout``; counting, comparing, the report): the size
limits above bound the work, but tables built to collide (thousands of equal values) can still take
minutes; a paper against its sources takes well under a second."""

_DEADLINE: ContextVar[tuple[float, float] | None] = ContextVar("crosscheck_deadline", default=None)


@contextmanager
def time_limit(seconds: float | None) -> Iterator[None]:
    """Within the block, the crosscheck's work raises :class:`~tabverify.errors.TimeLimitError` once
    ``seconds`` have passed (None: no limit of its own). Checked while tables are counted, indexed,
    compared and rendered, so the run stops within a fraction of a second of the limit."""
    if seconds is None:  # no limit of its own: one in force outside the block still holds
        yield
        return
    if not seconds > 0:
        raise ValueError(f"time limit {seconds!r}: give seconds above 0, or None for no limit")
    token = _DEADLINE.set((time.monotonic() + seconds, seconds))
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def check_time() -> None:
    """Raise :class:`~tabverify.errors.TimeLimitError` when the :func:`time_limit` in force has passed."""
    deadline = _DEADLINE.get()
    if deadline is not None and time.monotonic() > deadline[0]:
        raise TimeLimitError(
            f"the crosscheck ran past its time limit of {deadline[1]:g} s; check some target tables "
            "with --table N, fewer sources per run, or give --timeout more seconds"
        )


def check_workload(targets: Sequence[Grid], sources: Sequence[Grid]) -> None:
    """Raise :class:`~tabverify.errors.TableSizeError` when a run over these target and source tables
    would exceed :data:`MAX_TABLE_PAIRS` pairs or :data:`MAX_RUN_NUMBERS` numbers in all; the message
    says which limit and what to do (``--table N``, fewer sources)."""
    pairs = len(targets) * len(sources)
    if pairs > MAX_TABLE_PAIRS:
        raise TableSizeError(
            f"{len(targets):,} target tables x {len(sources):,} source tables is {pairs:,} pairs; one run "
            f"weighs at most {MAX_TABLE_PAIRS:,}: check some target tables with --table N, or fewer sources"
        )
    numbers = 0
    for index, grid in enumerate([*targets, *sources]):
        side = "target" if index < len(targets) else "source"
        check_numbers(grid, f"{side} table {1 + (index if index < len(targets) else index - len(targets))}")
        numbers += len(grid.data_measurements)
        if numbers > MAX_RUN_NUMBERS:
            raise TableSizeError(
                f"the target and source tables of this run hold more than {MAX_RUN_NUMBERS:,} numbers in "
                "all; check some target tables with --table N, or fewer sources per run"
            )


def check_numbers(grid: Grid, label: str, limit: int = MAX_CROSSCHECK_NUMBERS) -> None:
    """Raise :class:`~tabverify.errors.TableSizeError` when ``grid`` holds more than ``limit`` numbers.

    Counting stops at ``limit + 1``, and cells are read only when more than ``limit`` of them hold a
    digit at all, so refusing a table of a million cells costs about as much as reading ``limit``.
    ``label`` names the table in the message ("target table 1", "source table 3").
    """
    check_time()
    # a cell longer than MAX_MEASUREMENT_TEXT is text whatever it holds: not scanned for digits
    cells = [
        cell.text
        for i, row in enumerate(grid.cells)
        for j, cell in enumerate(row)
        if cell.origin == (i, j)
        and not cell.filler
        and len(cell.text) <= MAX_MEASUREMENT_TEXT
        and any(ch.isdigit() for ch in cell.text)
    ]
    if len(cells) <= limit:
        return
    found = 0
    for count, text in enumerate(cells):
        if count % 1024 == 0:
            check_time()
        if parse_measurement(text) is not None:
            found += 1
            if found > limit:
                name = f" ({grid.name})" if grid.name and grid.name not in label else ""
                raise TableSizeError(
                    f"{label}{name} holds more than {limit:,} numbers; crosscheck compares tables of at "
                    f"most {limit:,} numbers (scientific tables hold a few thousand): pass only the "
                    "table that was copied, or the rows that matter"
                )


T = TypeVar("T")
_PER_GRID: dict[int, dict[str, Any]] = {}


def per_grid(grid: Grid, name: str, compute: Callable[[Grid], T]) -> T:
    """``compute(grid)``, computed once per grid object and forgotten with it.

    Grids are immutable, so what the crosscheck derives from one (its number index, its labels)
    holds as long as the grid lives; a grid checked against thousands of others is indexed once.
    """
    slot = _PER_GRID.get(id(grid))
    if slot is None:
        slot = _PER_GRID[id(grid)] = {}
        weakref.finalize(grid, _PER_GRID.pop, id(grid), None)
    if name not in slot:
        slot[name] = compute(grid)
    return slot[name]  # type: ignore[no-any-return]


@dataclass(frozen=True)
class NumberIndex:
    """The numbers of a grid's data cells, the values each may be written as elsewhere
    (:func:`_variants`; of a cell holding several numbers, those of its first), and the positions
    holding each such value."""

    numbers: dict[Position, Measurement]
    variants: dict[Position, set[Decimal]]
    positions: dict[Decimal, list[Position]]

    @classmethod
    def of(cls, grid: Grid) -> NumberIndex:
        """The index of a grid, built once per grid (:func:`per_grid`)."""
        return per_grid(grid, "numbers", cls._build)

    @classmethod
    def _build(cls, grid: Grid) -> NumberIndex:
        check_numbers(grid, grid.name or "a table")
        numbers = dict(grid.data_measurements)
        variants = {}
        for count, (p, m) in enumerate(numbers.items()):
            if count % 256 == 0:
                check_time()
            variants[p] = _variants(m)
        positions: dict[Decimal, list[Position]] = defaultdict(list)
        for position, keys in variants.items():
            for key in keys:
                positions[key].append(position)
        return cls(numbers, variants, dict(positions))


def candidate_pairs(target: Grid, source: Grid) -> dict[Position, list[tuple[Position, Agreement]]]:
    """For each target number, the source numbers whose values agree with it (any position).

    Values found in more than :data:`MAX_OPTIONS` source cells say nothing about where a number came
    from (0.0, 100, small counts); they are left out here and paired later by position alone.
    """
    index = NumberIndex.of(source).positions
    source_numbers = NumberIndex.of(source).numbers
    target_index = NumberIndex.of(target)
    found: dict[Position, list[tuple[Position, Agreement]]] = {}
    # tables repeat values, so each pair of written numbers is compared once per call
    agreements: dict[tuple[object, object], Agreement] = {}
    for count, (position, m) in enumerate(target.data_measurements.items()):
        if count % 256 == 0:
            check_time()
        near: set[Position] = set()
        for key in target_index.variants[position]:
            hits = index.get(key, ())
            if len(hits) > MAX_OPTIONS * 4:
                break
            near.update(hits)
        else:
            near = near if len(near) <= MAX_OPTIONS * 4 else set()
        if not near:
            continue
        mine = (str(m.value), m.percent, m.suffix, tuple(map(str, m.others)))
        options = []
        for s in sorted(near):
            other = source_numbers[s]
            # written forms, not Decimal equality: 45.30 and 45.3 round differently
            pair = (mine, (str(other.value), other.percent, other.suffix, tuple(map(str, other.others))))
            agreement = agreements.get(pair)
            if agreement is None:
                agreement = agreements[pair] = compare(m, other, copy=True)
            if agreement is not Agreement.DIFFERENT:
                options.append((s, agreement))
        if options and len(options) <= MAX_OPTIONS:
            found[position] = options
    return found


def _best_map(votes: dict[tuple[int, int], float]) -> dict[int, int]:
    """A one-to-one map from target to source indices, taking the strongest votes first."""
    mapping: dict[int, int] = {}
    taken: set[int] = set()
    for (t, s), _ in sorted(votes.items(), key=lambda item: (-item[1], item[0])):
        if t not in mapping and s not in taken:
            mapping[t] = s
            taken.add(s)
    return mapping


_LABEL_WORD = re.compile(r"[a-z]{2,}|\d+")
# citations in a label: "[12]", "(Smith et al., 2021)", "DBLP:conf/...", "he2016deep"; every
# repetition is bounded, so that a label of 200,000 "[" or "(" is scanned in linear time
_CITATION = re.compile(
    r"\[[^\]]{0,200}\]|\([^()]{0,200}\)|\bDBLP:\S{1,200}|\b[a-z]{1,40}\d{4}[a-z]{1,40}\b", re.IGNORECASE
)
_YEAR = re.compile(r"\d{4}")
MAX_LABEL_TEXT = 1000
"""Characters of a row or column label read for its words (a longer label is cut there)."""
_LATEX_COMMAND = re.compile(r"\\[a-zA-Z]+")
# words that name no particular row or column ("Ours" names a different method in each paper)
_GENERIC = {"ours", "our", "the", "of", "and", "with", "method", "methods", "model", "models", "et", "al"}


def _citation(match: re.Match[str]) -> str:
    """A citation is removed; a bracket in parentheses only when it holds a year ("(2021)", not
    "(ms)")."""
    found = match.group(0)
    return found if found.startswith("(") and not _YEAR.search(found) else " "


def label_words(text: str) -> frozenset[str]:
    """The words of a row or column label: citations ("[12]", "DBLP:...", "(Smith 2021)"), LaTeX
    commands, one-letter words and generic words ("ours", "method") removed."""
    text = _LATEX_COMMAND.sub(" ", _CITATION.sub(_citation, text[:MAX_LABEL_TEXT])).lower()
    return frozenset(w for w in _LABEL_WORD.findall(text) if w not in _GENERIC)


def _trigrams(words: frozenset[str]) -> set[str]:
    grams = set()
    for word in words:
        if not word.isdigit():
            padded = f" {word} "
            grams.update(padded[i : i + 3] for i in range(len(padded) - 2))
    return grams


def same_name(a: str, b: str) -> bool:
    """Two row or column labels name the same thing: half of all their words are shared ("Swin-T [20]
    Transformer" / "Swin-T"), or their letters nearly agree and their numbers are the same
    ("CasMVSNet" / "CascadeMVSNet"; not "ResNet-18" / "ResNet-50")."""
    x, y = label_words(a), label_words(b)
    if not x or not y:
        return False
    if len(x & y) * 2 >= len(x | y):
        return True
    if {w for w in x if w.isdigit()} != {w for w in y if w.isdigit()}:
        return False
    gx, gy = _trigrams(x), _trigrams(y)
    return bool(gx and gy) and 4 * len(gx & gy) >= len(gx) + len(gy)  # Dice >= 0.5


def _similarity(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def _row_names(grid: Grid) -> dict[int, frozenset[str]]:
    return per_grid(
        grid, "rows", lambda g: {i: label_words(g.row_label(i)) for i in range(g.header_row_count, g.n_rows)}
    )


def _column_names(grid: Grid) -> dict[int, frozenset[str]]:
    return per_grid(
        grid, "columns", lambda g: {j: label_words(g.column_label(j)) for j in range(g.n_columns)}
    )


def lowest_header(grid: Grid, column: int) -> str:
    """The lowest header text of a column: the metric it holds where the headers above group it."""
    texts = [grid.text(i, column) for i in range(grid.header_row_count)]
    return next((t for t in reversed(texts) if t.strip()), "")


def _bottom_headers(grid: Grid) -> dict[int, frozenset[str]]:
    """Per column, its lowest header text (:func:`lowest_header`), lower-cased and without LaTeX
    commands, spaces or punctuation ("B@4" -> "b4", "M" -> "m"), as a one-element set; empty where the
    column has no header text."""

    def build(g: Grid) -> dict[int, frozenset[str]]:
        found = {}
        for j in range(g.n_columns):
            squashed = "".join(
                ch for ch in _LATEX_COMMAND.sub("", lowest_header(g, j)).lower() if ch.isalnum()
            )
            found[j] = frozenset({squashed}) if squashed else frozenset()
        return found

    return per_grid(grid, "bottom headers", build)


def _bottom_words(grid: Grid) -> dict[int, frozenset[str]]:
    """Per column, the label words (:func:`label_words`) of its lowest header text."""
    return per_grid(
        grid, "bottom words", lambda g: {j: label_words(lowest_header(g, j)) for j in range(g.n_columns)}
    )


def _label_votes(
    votes: dict[tuple[int, int], float],
    target: dict[int, frozenset[str]],
    source: dict[int, frozenset[str]],
    fallback: tuple[dict[int, frozenset[str]], dict[int, frozenset[str]]] | None = None,
) -> None:
    """One vote for each target line whose label words equal those of exactly one source line: how
    lines full of common values ("0.0", "100") still find their counterpart. A target line finding
    none is looked up in ``fallback`` (target, source): the columns' lowest headers, which name the
    metric ("M", "B@4") where the headers above differ (a group header one table has, another lacks)."""
    lookups = [(target, source), *([fallback] if fallback else [])]
    index_by: list[dict[frozenset[str], list[int]]] = []
    for _, lines in lookups:
        by_words: dict[frozenset[str], list[int]] = defaultdict(list)
        for index, words in lines.items():
            if words:
                by_words[words].append(index)
        index_by.append(by_words)
    for index in target:
        for (names, _), by_words in zip(lookups, index_by, strict=True):
            same = by_words.get(names.get(index, frozenset()), [])
            if len(same) == 1:
                votes[(index, same[0])] += 1.0
                break


def _align(
    target: Grid,
    source: Grid,
    candidates: dict[Position, list[tuple[Position, Agreement]]],
    transposed: bool,
) -> Alignment:
    check_time()

    def source_axes(s: Position) -> Position:
        return (s[1], s[0]) if transposed else s

    target_rows, target_columns = _row_names(target), _column_names(target)
    source_rows, source_columns = _row_names(source), _column_names(source)
    if transposed:
        source_rows, source_columns = source_columns, source_rows
    headers = None if transposed else (_bottom_headers(target), _bottom_headers(source))
    # first pass: column votes from every candidate, ambiguous values voting less
    column_votes: dict[tuple[int, int], float] = defaultdict(float)
    for (_, tc), options in candidates.items():
        weight = 1.0 / len(options)
        for s, agreement in options:
            column_votes[(tc, source_axes(s)[1])] += weight * AGREEMENT_WEIGHT[agreement]
    _label_votes(column_votes, target_columns, source_columns, headers)
    columns = _best_map(column_votes)
    # second pass: rows voted by candidates in the chosen columns; rows whose labels share words
    # ("Swin-S [31]" / "Swin-S") win over rows that merely share values
    row_votes: dict[tuple[int, int], float] = defaultdict(float)
    for (tr, tc), options in candidates.items():
        for s, agreement in options:
            sr, sc = source_axes(s)
            if columns.get(tc) == sc:
                row_votes[(tr, sr)] += AGREEMENT_WEIGHT[agreement]
    for tr, sr in list(row_votes):
        row_votes[(tr, sr)] += _similarity(target_rows.get(tr, frozenset()), source_rows.get(sr, frozenset()))
    _label_votes(row_votes, target_rows, source_rows)
    rows = _best_map(row_votes)
    # third pass: columns again, voted only by candidates in the chosen rows; a row tied by many
    # values is a copy, one tied by a single value may be a coincidence, so each vote counts as many
    # times as its row is tied
    tied: dict[int, int] = defaultdict(int)
    for (tr, _), options in candidates.items():
        tied[tr] += any(source_axes(s)[0] == rows.get(tr) for s, _ in options)
    column_votes = defaultdict(float)
    for (tr, tc), options in candidates.items():
        for s, agreement in options:
            sr, sc = source_axes(s)
            if rows.get(tr) == sr:
                column_votes[(tc, sc)] += AGREEMENT_WEIGHT[agreement] * tied[tr]
    _label_votes(column_votes, target_columns, source_columns, headers)
    columns = _keep_permuted(_best_map(column_votes), rows, candidates, source_axes)
    # last: columns nothing voted for, placed by the order of the block and their labels
    block = {tr: sr for tr, sr in rows.items() if tied[tr] >= 2}
    words = (target_columns, source_columns) if transposed else (_bottom_words(target), _bottom_words(source))
    n_source = source.n_rows if transposed else source.n_columns
    columns = _fill_gaps(
        columns, target.n_columns, n_source, *words, _fits_block(target, source, block, source_axes)
    )
    pairs = _pairs_by_position(target, source, rows, columns, transposed)
    support = sum(p.weight for p in pairs)
    return Alignment(rows, columns, transposed, tuple(pairs), support)


def _keep_permuted(
    columns: dict[int, int],
    rows: dict[int, int],
    candidates: dict[Position, list[tuple[Position, Agreement]]],
    source_axes: Callable[[Position], Position],
) -> dict[int, int]:
    """``columns`` completed for the target columns whose values are a source column's, copied with
    their rows permuted: two values exchanged between rows (a row swap) leave their column no vote
    from its own rows, yet each value sits, in the free source column, in the row of another target
    row whose value in turn sits in the next one, closing a cycle. Values that only coincide with
    another row's (a different metric sharing a few values) close no cycle and map nothing."""
    back = {sr: tr for tr, sr in rows.items()}
    # (tc, sc) -> target row -> the target rows whose source rows hold its value in source column sc
    moved: dict[tuple[int, int], dict[int, set[int]]] = defaultdict(lambda: defaultdict(set))
    for (tr, tc), options in candidates.items():
        if tc in columns or tr not in rows:
            continue
        for s, _ in options:
            sr, sc = source_axes(s)
            if sr in back and sr != rows[tr]:
                moved[(tc, sc)][tr].add(back[sr])
    cycled: dict[tuple[int, int], int] = {}
    for line, step in moved.items():
        closed = 0
        for start in step:
            seen, frontier = set(), set(step[start])
            while frontier and start not in seen:
                seen |= frontier
                frontier = {nxt for tr in frontier for nxt in step.get(tr, ())} - seen
            closed += start in seen
        cycled[line] = closed
    taken = set(columns.values())
    completed = dict(columns)
    for (tc, sc), n in sorted(cycled.items(), key=lambda item: (-item[1], item[0])):
        if n >= 2 and tc not in completed and sc not in taken:
            completed[tc] = sc
            taken.add(sc)
    return completed


def _fits_block(
    target: Grid, source: Grid, block: dict[int, int], source_axes: Callable[[Position], Position]
) -> Callable[[int, int], bool]:
    """Whether target column ``tc`` may be source column ``sc``: in the rows of the block (``block``:
    target row -> source row, rows tied by two values or more) a column copied and then miscopied
    disagrees in one row at most; more is another measurement (a throughput the citing paper
    measured again), not a copy."""
    target_numbers, source_numbers = target.data_measurements, source.data_measurements

    def fits(tc: int, sc: int) -> bool:
        wrong = 0
        for tr, sr in block.items():
            m, other = target_numbers.get((tr, tc)), source_numbers.get(source_axes((sr, sc)))
            if m is not None and other is not None and compare(m, other, copy=True) is Agreement.DIFFERENT:
                wrong += 1
        return wrong <= 1

    return fits


def _fill_gaps(
    columns: dict[int, int],
    n_target: int,
    n_source: int,
    target_words: dict[int, frozenset[str]],
    source_words: dict[int, frozenset[str]],
    fits: Callable[[int, int], bool],
) -> dict[int, int]:
    """``columns`` completed by the order of a copied block, for target columns nothing voted for (a
    column whose only copied value was miscopied): a run of unmapped target columns between two
    mapped ones whose source columns are as far apart, and free, takes the source columns between
    them in order; an unmapped column next to a mapped one takes the free source column next to that
    one's source column when their labels (``target_words``, ``source_words``) share a word. Either
    only where ``fits`` (:func:`_fits_block`) allows the pair of columns."""
    completed = dict(columns)
    taken = set(completed.values())
    mapped = sorted(completed)
    for a, b in zip(mapped, mapped[1:], strict=False):
        sa, sb = completed[a], completed[b]
        if (
            b - a > 1
            and sb - sa == b - a
            and not any(sa < sc < sb for sc in taken)
            and all(fits(a + k, sa + k) for k in range(1, b - a))
        ):
            for k in range(1, b - a):
                completed[a + k] = sa + k
                taken.add(sa + k)
    changed = True
    while changed:
        changed = False
        for tc in range(n_target):
            if tc in completed:
                continue
            for step in (-1, 1):
                neighbour = completed.get(tc + step)
                sc = neighbour - step if neighbour is not None else -1
                if (
                    0 <= sc < n_source
                    and sc not in taken
                    and target_words.get(tc, frozenset()) & source_words.get(sc, frozenset())
                    and fits(tc, sc)
                ):
                    completed[tc] = sc
                    taken.add(sc)
                    changed = True
                    break
    return completed


def _pairs_by_position(
    target: Grid, source: Grid, rows: dict[int, int], columns: dict[int, int], transposed: bool
) -> list[CellPair]:
    """Every target number whose row and column correspond and whose value agrees with the source
    cell there. The maps are one-to-one, so the pairs are too."""
    source_numbers = source.data_measurements
    row_words, column_words = _row_names(target), _column_names(target)
    source_row_words, source_column_words = _row_names(source), _column_names(source)
    if transposed:  # the target's rows are the source's columns: compare labels along the same axis
        source_row_words, source_column_words = source_column_words, source_row_words
    pairs = []
    for (tr, tc), m in sorted(target.data_measurements.items()):
        if tr not in rows or tc not in columns:
            continue
        s = (columns[tc], rows[tr]) if transposed else (rows[tr], columns[tc])
        other = source_numbers.get(s)
        if other is None:
            continue
        agreement = compare(m, other, copy=True)
        if agreement is Agreement.DIFFERENT:
            continue
        row_labelled = bool(row_words[tr] & source_row_words.get(rows[tr], frozenset()))
        labelled = row_labelled or bool(column_words[tc] & source_column_words.get(columns[tc], frozenset()))
        pairs.append(CellPair((tr, tc), s, agreement, labelled, row_labelled))
    return pairs


def align(target: Grid, source: Grid) -> Alignment:
    """The row/column correspondence between a target and a source table, and the agreeing pairs.

    Both orientations are tried (the source as is, and transposed); the one whose agreeing pairs
    have more labels agreeing wins, then the one with more agreeing pairs (both summed by agreement
    weight: exact 1, rounded 0.8, scaled 0.7). Target rows left unmapped that copy another block of
    the source are aligned again, as :attr:`Alignment.blocks` (:func:`_further_blocks`).
    """
    candidates = candidate_pairs(target, source)
    main = _oriented(target, source, candidates)
    if not candidates:
        return main
    blocks = _further_blocks(target, source, candidates, main)
    return replace(main, blocks=blocks) if blocks else main


def _oriented(
    target: Grid, source: Grid, candidates: dict[Position, list[tuple[Position, Agreement]]]
) -> Alignment:
    """The alignment of the better orientation (:func:`align`)."""
    straight = _align(target, source, candidates, transposed=False)
    if not candidates:
        return straight
    flipped = _align(target, source, candidates, transposed=True)
    return flipped if _orientation_evidence(flipped) > _orientation_evidence(straight) else straight


BLOCK_TIES = 2
"""A further copied block is at least this many target rows, each tied to its source line by at least
this many agreeing values (one value, or one row, is shared by chance; the discrepancy rules ask two
ties of a row too)."""


def _further_blocks(
    target: Grid,
    source: Grid,
    candidates: dict[Position, list[tuple[Position, Agreement]]],
    main: Alignment,
) -> tuple[Alignment, ...]:
    """Copied blocks beyond the main one: the candidates of target rows no block maps yet, to source
    cells no block pairs yet, aligned again; kept while :data:`BLOCK_TIES` rows are tied by
    :data:`BLOCK_TIES` values each, with only those rows. A target that stacks one split's columns
    under another's corresponds to its source in two blocks, which no single one-to-one map of rows
    and columns can hold."""
    blocks: list[Alignment] = []
    mapped_rows = set(main.rows)
    used = {p.source for p in main.pairs}
    while True:
        check_time()
        residual = {}
        for t, options in candidates.items():
            kept = [(s, a) for s, a in options if s not in used]
            if t[0] not in mapped_rows and kept:
                residual[t] = kept
        if not residual:
            break
        found = _oriented(target, source, residual)
        pairs = tuple(p for p in found.pairs if p.target[0] not in mapped_rows and p.source not in used)
        ties = Counter(p.target[0] for p in pairs)
        rows = {tr: sr for tr, sr in found.rows.items() if ties[tr] >= BLOCK_TIES}
        if len(rows) < BLOCK_TIES:  # also ends the search: every block maps new rows
            break
        pairs = tuple(p for p in pairs if p.target[0] in rows)
        blocks.append(replace(found, rows=rows, pairs=pairs, support=sum(p.weight for p in pairs)))
        mapped_rows |= set(rows)
        used |= {p.source for p in pairs}
    return tuple(blocks)


def _orientation_evidence(alignment: Alignment) -> tuple[float, float]:
    """(agreement weight of the pairs whose labels agree, agreement weight of all pairs)."""
    weights = [(AGREEMENT_WEIGHT.get(p.agreement, 0.0), p.labelled) for p in alignment.pairs]
    return sum(w for w, labelled in weights if labelled), sum(w for w, _ in weights)


def match_cells(target: Grid, source: Grid) -> list[CellPair]:
    """Pairs of cells holding the same number with the same meaning, one-to-one, in every copied
    block (see :func:`align`)."""
    return list(align(target, source).all_pairs())
