"""Typed, memoised program search (LPA's latent program search, made fast).

Programs are built bottom-up from the linked entities: views (filters, superlatives, ordinal
rows), then values and numbers over views (hop, count, aggregates), then booleans (comparisons
with the linked literals, only, all_*, and). Every node is evaluated once when it is built;
views that select the same rows are kept once, so no two programs compute the same
intermediate value the same way twice. Trigger words decide which function families are tried.

:func:`search` runs the stages below in order; each stage is one function over the shared
:class:`_State`. Every bound on the work lives in :class:`SearchLimits`, and the result says
which of them cut the search (:attr:`SearchResult.cut`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, fields
from typing import ClassVar

from tabverify.errors import ProgramExecutionError, ProgramTypeError
from tabverify.program.functions import Context, run_function
from tabverify.program.tree import AllRows, Call, Header, Literal, Node
from tabverify.program.triggers import active_families, ranks_by_direction
from tabverify.program.values import literal_quantity
from tabverify.table import Table
from tabverify.table.quantity import ORDINAL_WORDS
from tabverify.text.linking import Link, Linking
from tabverify.text.normalize import Token
from tabverify.text.spans import Span


@dataclass(frozen=True, slots=True)
class Candidate:
    """A complete program found by the search: a boolean program and the links it consumed."""

    program: Call
    value: bool
    used: frozenset[Span]


@dataclass(frozen=True)
class SearchLimits:
    """Every bound on the work of verifying one statement, in one place.

    Two kinds of limit. The bounds in :attr:`REPORTED` never bind on TabFact's statements (the
    largest values seen on val and a fifth of train are noted below); they stop hostile or unusual input (a
    statement of many kilobytes, a table with hundreds of columns) from running for minutes, and a
    verdict says when one of them cut the work. The others shape the search on every statement
    (the shipped models were trained with them); :attr:`SearchResult.cut` names them when they
    bind, verdicts do not.

    Attributes:
        max_statement_chars: longest statement accepted; a longer one is refused with an error
            (TabFact: 278 characters at most).
        max_cell_links: cell links programs are built from (a mention links once per column
            holding its value), the first ones in linking order kept (TabFact: 118 at most).
        max_number_links: linked numbers programs are built from, the first ones kept (TabFact:
            23 at most).
        max_evaluations: function evaluations of one search; when they are spent the search
            stops building programs and keeps those it has (TabFact: about 13,000 at most).
        max_cells_read: cells the evaluations may read (a filter over 30 rows reads 30); spent
            like ``max_evaluations``, it bounds the work on tall tables (TabFact: about 150,000 at most).
        max_views: distinct row selections (filters, superlatives, ordinal rows) kept.
        max_candidates: boolean programs kept before conjunctions are added.
        max_and_pairs: conjunctions ``and{a; b}`` of two partial programs added at the end.
        max_partial_programs: best partial programs considered for conjunctions.
        max_columns: numeric columns aggregated and compared (the ones the statement names first).
        max_compare_columns: numeric columns for nested comparisons, nth-superlatives and all_*,
            and further numeric columns compared between two rows.
        max_bases: first-level views that superlatives, ordinals and all_* are applied to, and
            single rows or filters paired with each other in row and count comparisons.
        max_milliseconds: wall-clock time of one search; when it is spent the search stops like
            ``max_evaluations`` (0: no limit; a table of a database gets
            ``tabverify.program.database_table.SEARCH_MILLISECONDS`` by default).
    """

    max_statement_chars: int = 1000
    max_cell_links: int = 200
    max_number_links: int = 40
    max_evaluations: int = 50_000
    max_cells_read: int = 1_000_000
    max_views: int = 120
    max_candidates: int = 800
    max_and_pairs: int = 150
    max_partial_programs: int = 40
    max_columns: int = 4
    max_compare_columns: int = 2
    max_bases: int = 6
    max_milliseconds: int = 0

    REPORTED: ClassVar[frozenset[str]] = frozenset(
        {
            "max_statement_chars",
            "max_cell_links",
            "max_number_links",
            "max_evaluations",
            "max_cells_read",
            "max_milliseconds",
        }
    )
    """The limits a verdict reports when they cut the work (they never bind on ordinary input)."""

    def __post_init__(self) -> None:
        for item in fields(self):
            value = getattr(self, item.name)
            if not isinstance(value, int) or value < 0:
                raise ValueError(f"SearchLimits.{item.name} must be a non-negative integer, not {value!r}")

    def describe(self, name: str) -> str:
        """A sentence for users saying that the limit ``name`` cut the work, and what it means."""
        value = getattr(self, name)
        what = {
            "max_statement_chars": f"the statement is longer than {value} characters",
            "max_cell_links": f"only the first {value} links of the statement to cells were used",
            "max_number_links": f"only the first {value} numbers of the statement were used",
            "max_evaluations": f"the search stopped after {value} function evaluations",
            "max_cells_read": f"the search stopped after reading {value} cells",
            "max_views": f"only {value} row selections were tried",
            "max_candidates": f"the search kept the first {value} candidate programs",
            "max_and_pairs": f"only {value} conjunctions of two programs were tried",
            "max_partial_programs": f"only the best {value} partial programs were combined",
            "max_columns": f"only {value} numeric columns were aggregated",
            "max_compare_columns": f"only {value} numeric columns were compared in nested programs",
            "max_bases": f"only {value} row selections were combined further",
            "max_milliseconds": f"the search stopped after {value / 1000:g} s",
        }[name]
        return f"{what} (limit SearchLimits.{name}); a reading beyond it was not considered"


@dataclass(frozen=True)
class SearchResult:
    """What :func:`search` found.

    Attributes:
        candidates: the boolean programs, in build order.
        cut: the limits that cut the search (names of :class:`SearchLimits` fields, in the order
            they first bound).
        evaluations: the function evaluations it spent.
        cells_read: the cells those evaluations read.
    """

    candidates: list[Candidate]
    cut: tuple[str, ...] = ()
    evaluations: int = 0
    cells_read: int = 0


@dataclass(frozen=True, slots=True)
class _Item:
    node: Node
    value: object
    used: frozenset[Span]


@dataclass(frozen=True)
class _Entities:
    """What the search builds programs from: the statement's links and the table's column roles."""

    cells: list[Link]
    numbers: list[Link]  # numbers, dates, ordinals that are not ranks (whole numeric cells included)
    ordinals: list[Link]
    cell_spans: frozenset[Span]
    spans: frozenset[Span]  # every linked cell and number: the statement's entities
    numeric: list[int]  # number and date columns
    aggregated: list[int]  # numeric columns worth aggregating, the ones the statement names first
    named: list[int]  # columns named by a header link (with repeats, in statement order)
    mentioned: frozenset[int]  # columns named by a header link or holding a linked cell
    by_column: dict[int, list[Link]]  # cell links by the column they name


@dataclass
class _State:
    table: Table
    limits: SearchLimits
    families: frozenset[str]
    ctx: Context
    views: dict[tuple[object, ...], _Item] = field(default_factory=dict)
    view_list: list[_Item] = field(default_factory=list)
    candidates: dict[str, Candidate] = field(default_factory=dict)
    evaluations: int = 0
    cells_read: int = 0
    cut: dict[str, None] = field(default_factory=dict)
    deadline: float = 0.0  # time.monotonic() when max_milliseconds is spent (0: none)

    def limit(self, name: str) -> None:
        """Note that the limit ``name`` cut the work."""
        self.cut.setdefault(name, None)

    @property
    def full(self) -> bool:
        """No more candidates are kept (conjunctions aside)."""
        if len(self.candidates) >= self.limits.max_candidates:
            self.limit("max_candidates")
            return True
        return False


class _BudgetSpent(Exception):
    """Raised inside the search when ``max_evaluations`` or ``max_cells_read`` is spent."""


def _trigger_tokens(linking: Linking) -> list[Token]:
    """The tokens whose trigger words gate the search: all but those inside a header the statement
    names with two or more words, where the word is part of the column's name ("first" in "mary
    jones be first elected in 1994" under a "first elected" column), not a superlative or an
    ordinal. After "the" the name reads as a rank too ("mary jones be the first elected")."""
    tokens = linking.tokens
    names = []
    for link in linking.headers:
        if " " not in link.text.strip():
            continue
        before = [t for t in tokens if t.span.end <= link.span.start]
        if not (before and before[-1].stem == "the"):
            names.append(link.span)
    return [t for t in tokens if not any(n.start <= t.span.start and t.span.end <= n.end for n in names)]


def search(table: Table, linking: Linking, limits: SearchLimits | None = None) -> SearchResult:
    """Enumerate boolean programs for a linked statement. Deterministic; order is build order.

    When the evaluation budget is spent the remaining stages are skipped: the programs found so
    far are kept (with their conjunctions) and :attr:`SearchResult.cut` says which limit bound.
    """
    limits = limits or SearchLimits()
    # a database table computes the functions that read rows in SQL (its run_function)
    context = Context(table, backend=getattr(table, "run_function", None))
    state = _State(table, limits, active_families(_trigger_tokens(linking)), context)
    if limits.max_milliseconds:
        state.deadline = time.monotonic() + limits.max_milliseconds / 1000
    entities = _entities(state, linking)
    try:
        _build(state, entities)
    except _BudgetSpent:
        pass
    _conjunctions(state, entities)
    return SearchResult(
        list(state.candidates.values()), tuple(state.cut), state.evaluations, state.cells_read
    )


def _build(state: _State, entities: _Entities) -> None:
    """The stages that evaluate functions, in order: views, then boolean programs over them."""
    limits = state.limits
    all_rows = _Item(AllRows(), state.table.data_row_indices, frozenset())
    _add_view(state, all_rows)
    first_level, empty_views = _filter_views(state, entities, all_rows)
    _refined_views(state, entities, first_level)
    _ranked_views(state, entities, all_rows, first_level)
    views = list(state.view_list)
    _hop_programs(state, entities, views)
    _count_and_aggregate_programs(state, entities, views, all_rows)
    if "negation" in state.families:
        for item in empty_views:
            _candidate(state, "none", (item,))
    if "all" in state.families:
        _all_programs(state, entities, [all_rows] + first_level[: limits.max_bases])
    if "most_freq" in state.families:
        _most_frequent_programs(state, entities, all_rows)
    if state.families & {"compare", "diff", "same", "ordinal"}:
        single = [v for v in views if len(v.value) == 1 and v.used]  # type: ignore[arg-type]
        _row_comparisons(state, entities, single)
    if state.families & {"compare", "diff"}:
        _count_comparisons(state, entities, first_level)


# ---- building blocks ----------------------------------------------------------------------------


def _call(state: _State, func: str, args: tuple[_Item | Node, ...]) -> _Item | None:
    """Evaluate ``func`` on already-evaluated arguments; None when an argument is missing (its
    own evaluation failed), the function fails, or the budget is spent."""
    if any(a is None for a in args):
        return None
    if state.evaluations >= state.limits.max_evaluations:
        state.limit("max_evaluations")
        raise _BudgetSpent
    if state.cells_read >= state.limits.max_cells_read:
        state.limit("max_cells_read")
        raise _BudgetSpent
    if state.deadline and time.monotonic() > state.deadline:
        state.limit("max_milliseconds")
        raise _BudgetSpent
    state.evaluations += 1
    state.cells_read += max(
        (len(a.value) for a in args if isinstance(a, _Item) and isinstance(a.value, tuple)), default=0
    )
    nodes = tuple(a.node if isinstance(a, _Item) else a for a in args)
    values = []
    used: frozenset[Span] = frozenset()
    for a in args:
        if isinstance(a, _Item):
            values.append(a.value)
            used |= a.used
        elif isinstance(a, Header):
            values.append(state.table.column_index(a.name))
        elif isinstance(a, Literal):
            values.append(a.text)
        else:
            values.append(state.table.data_row_indices)
    try:
        value = run_function(func, state.ctx, values)
    except (ProgramExecutionError, ProgramTypeError):
        return None
    return _Item(Call(func, nodes), value, used)


def _lit(link: Link) -> _Item:
    return _Item(Literal(link.literal), link.literal, frozenset({link.span}))


def _column(state: _State, column: int) -> Header:
    return Header(state.table.header[column])


def _add_view(state: _State, item: _Item | None, keep_empty: bool = False) -> _Item | None:
    """Keep a view unless it selects nothing or the same rows the same way as a kept one that
    reads no fewer of the statement's values (then the kept one is returned); None when it is
    empty or no more views are kept."""
    if item is None or (not item.value and not keep_empty):
        return None
    # views are memoised by the rows they select and the function that selected them: a filter
    # and a superlative that land on the same row are different readings, two filters are not
    # (unless the second reads more of the statement, below)
    key: tuple[object, ...] = (item.value, item.node.func if isinstance(item.node, Call) else "all_rows")
    kept = state.views.get(key)
    if kept is not None:
        if not kept.used < item.used:
            return kept
        # a second filter that keeps every row of the first still reads one more of the
        # statement's values ("when the label is atlantic, the region is the united states"):
        # kept beside it, so programs over it account for that value too
        key = (*key, item.used)
        if key in state.views:
            return state.views[key]
    if len(state.view_list) >= state.limits.max_views:
        state.limit("max_views")
        return None
    state.views[key] = item
    state.view_list.append(item)
    return item


def _view(state: _State, func: str, args: tuple[_Item | Node, ...]) -> _Item | None:
    return _add_view(state, _call(state, func, args))


def _add_candidate(state: _State, item: _Item | None) -> None:
    if item is None or not isinstance(item.value, bool) or state.full:
        return
    text = str(item.node)
    if text not in state.candidates:
        state.candidates[text] = Candidate(item.node, item.value, item.used)  # type: ignore[arg-type]


def _candidate(state: _State, func: str, args: tuple[_Item | Node, ...]) -> None:
    """Evaluate a boolean program and keep it (nothing is evaluated once the candidates are full)."""
    if not state.full:
        _add_candidate(state, _call(state, func, args))


def _ranks(ordinal: Link, tokens: tuple[Token, ...]) -> bool:
    """An ordinal followed by a direction word is only a rank ("the 2nd highest"); any other is a
    value too ("finish 6th", "the 233rd pick")."""
    after = [t.text.lower() for t in tokens if t.span.start >= ordinal.span.end]
    return ranks_by_direction(after)


def _is_ordinal(text: str) -> bool:
    lowered = text.lower()
    return lowered in ORDINAL_WORDS or (lowered[:1].isdigit() and lowered.endswith(("st", "nd", "rd", "th")))


# ---- stages ---------------------------------------------------------------------------------------


def _entities(state: _State, linking: Linking) -> _Entities:
    """The links the search uses (at most ``max_cell_links`` / ``max_number_links``) and the
    numeric columns, the ones the statement names first."""
    limits = state.limits
    cells = list(linking.cells)
    if len(cells) > limits.max_cell_links:
        state.limit("max_cell_links")
        cells = cells[: limits.max_cell_links]
    number_links = list(linking.numbers)
    if len(number_links) > limits.max_number_links:
        state.limit("max_number_links")
        number_links = number_links[: limits.max_number_links]
    cell_spans = frozenset(link.span for link in cells)
    # a number that is also a whole cell is one entity, not two
    numbers = [n for n in number_links if n.span not in cell_spans] + [
        Link(c.span, c.text, "number", None, c.literal)
        for c in cells
        if c.exact and c.literal and c.literal[0].isdigit()
    ]
    named = [link.column for link in linking.headers if link.column is not None]
    mentioned = frozenset(link.column for link in cells if link.column is not None) | frozenset(named)
    numeric = [c for c, kind in enumerate(state.table.column_types) if kind in ("number", "date")]
    ranked = sorted(numeric, key=lambda c: (c not in named, c not in mentioned, c))
    if len(ranked) > limits.max_columns:
        state.limit("max_columns")
    by_column: dict[int, list[Link]] = {}
    for link in cells:
        by_column.setdefault(link.column, []).append(link)  # type: ignore[arg-type]
    return _Entities(
        cells=cells,
        numbers=[n for n in numbers if not _is_ordinal(n.literal) or not _ranks(n, linking.tokens)],
        ordinals=[n for n in numbers if _is_ordinal(n.literal)],
        cell_spans=cell_spans,
        spans=cell_spans | frozenset(n.span for n in number_links),
        numeric=numeric,
        aggregated=ranked[: limits.max_columns],
        named=named,
        mentioned=mentioned,
        by_column=by_column,
    )


def _filter_views(state: _State, entities: _Entities, all_rows: _Item) -> tuple[list[_Item], list[_Item]]:
    """First-level views: filters on the linked cells and numbers. Returns the views (a view may
    repeat when two links select the same rows) and the filters that selected no row."""
    first_level: list[_Item] = []
    empty_views: list[_Item] = []
    for link in entities.cells:
        item = _call(state, "filter_eq", (all_rows, _column(state, link.column), _lit(link)))  # type: ignore[arg-type]
        view = _add_view(state, item)
        if view is not None:
            first_level.append(view)
        elif item is not None and not item.value:
            empty_views.append(item)
        if "negation" in state.families:
            _view(state, "filter_not_eq", (all_rows, _column(state, link.column), _lit(link)))  # type: ignore[arg-type]
    # numbers and dates that name no whole cell still select rows of a number or date column
    # ("may 13 , 1998" for the cell "13 may 1998")
    for number in entities.numbers:
        if number.span in entities.cell_spans:
            continue
        for c in entities.numeric:
            item = _call(state, "filter_eq", (all_rows, _column(state, c), _lit(number)))
            if item is not None and item.value and len(item.value) < max(2, len(all_rows.value)):  # type: ignore[arg-type]
                view = _add_view(state, item)
                if view is not None:
                    first_level.append(view)
    if "compare" in state.families:
        for number in entities.numbers:
            if not number.literal[:1].isdigit():
                continue
            for c in entities.aggregated:
                for func in ("filter_greater", "filter_less", "filter_greater_eq", "filter_less_eq"):
                    view = _view(state, func, (all_rows, _column(state, c), _lit(number)))
                    if view is not None:
                        first_level.append(view)
    return first_level, empty_views


def _refined_views(state: _State, entities: _Entities, first_level: list[_Item]) -> None:
    """Second-level views: a second filter on a first-level view."""
    compare_columns = entities.aggregated[: state.limits.max_compare_columns]
    # a view two links selected is listed twice; refining it twice would only repeat the work
    for view in {id(v): v for v in first_level}.values():
        for link in entities.cells:
            if link.span not in view.used:
                _view(state, "filter_eq", (view, _column(state, link.column), _lit(link)))  # type: ignore[arg-type]
        if "compare" in state.families:
            for number in entities.numbers:
                if number.span in view.used:
                    continue
                for c in compare_columns:
                    for func in ("filter_greater", "filter_less"):
                        _view(state, func, (view, _column(state, c), _lit(number)))


def _ranked_views(state: _State, entities: _Entities, all_rows: _Item, first_level: list[_Item]) -> None:
    """Superlative (argmax/argmin, nth_argmax/nth_argmin) and ordinal (first/last) rows."""
    # a superlative needs rows to choose among
    choices = [v for v in first_level if len(v.value) > 1]  # type: ignore[arg-type]
    bases = [all_rows] + choices[: state.limits.max_bases]
    if "superlative" in state.families:
        for base in bases:
            for c in entities.aggregated:
                for func in ("argmax", "argmin"):
                    _view(state, func, (base, _column(state, c)))
        for number in entities.ordinals:
            if number.literal.lower() in ("2nd", "3rd", "second", "third", "4th", "fourth"):
                for c in entities.aggregated[: state.limits.max_compare_columns]:
                    for func in ("nth_argmax", "nth_argmin"):
                        _view(state, func, (all_rows, _column(state, c), _lit(number)))
    if "ordinal" in state.families:
        for base in bases:
            for func in ("first", "last"):
                _view(state, func, (base,))


def _hop_programs(state: _State, entities: _Entities, views: list[_Item]) -> None:
    """Values read from views of at most three rows, compared with the linked literals."""
    negation = "negation" in state.families
    compare = "compare" in state.families
    headers = state.table.header
    for view in views:
        if len(view.value) > 3:  # type: ignore[arg-type]
            continue
        filtered_on = set(view.node.headers) if isinstance(view.node, Call) else set()
        for c in range(len(headers)):
            if state.full:
                return
            if (
                headers[c] in filtered_on
                and isinstance(view.node, Call)
                and view.node.func.startswith("filter")
            ):
                continue  # reading back the column the view was filtered on says nothing new
            wanted = [lk for lk in entities.by_column.get(c, []) if lk.span not in view.used]
            is_numeric = c in entities.numeric
            if (
                not wanted
                and not (is_numeric and entities.numbers)
                and not (len(view.value) == 1 and c in entities.mentioned)  # type: ignore[arg-type]
            ):
                continue
            hop = _call(state, "hop", (view, _column(state, c)))
            if hop is None:
                continue
            for link in wanted:
                _candidate(state, "eq", (hop, _lit(link)))
                if negation:
                    _candidate(state, "not_eq", (hop, _lit(link)))
            if not is_numeric:
                continue
            for number in entities.numbers:
                if number.span not in view.used:
                    _candidate(state, "eq", (hop, _lit(number)))
                    if compare and c in entities.named:
                        _candidate(state, "greater", (hop, _lit(number)))
                        _candidate(state, "less", (hop, _lit(number)))


def _count_and_aggregate_programs(
    state: _State, entities: _Entities, views: list[_Item], all_rows: _Item
) -> None:
    """Counts of filtered views compared with numbers, only{...} (alone and with the value it
    names), and aggregates (avg, sum, max, min) compared with numbers."""
    families = state.families
    for view in views:
        if not isinstance(view.node, AllRows) and not view.node.func.startswith("filter"):  # type: ignore[union-attr]
            continue  # counting the rows of a superlative or ordinal selection says nothing
        count = _call(state, "count", (view,))
        for number in entities.numbers:
            if number.span in view.used:
                continue
            _candidate(state, "eq", (count, _lit(number)))  # type: ignore[arg-type]
            quantity = literal_quantity(number.literal)
            # "more than 1994 games" is not a reading: compare counts with numbers a count can reach
            reachable = quantity is not None and 0 <= quantity.value <= len(all_rows.value)  # type: ignore[arg-type]
            if "compare" in families and reachable and number.literal[:1].isdigit():
                _candidate(state, "greater", (count, _lit(number)))  # type: ignore[arg-type]
                _candidate(state, "less", (count, _lit(number)))  # type: ignore[arg-type]
        if view is not all_rows and "only" in families:
            _only_programs(state, entities, view)
        if len(view.value) > 1:  # type: ignore[arg-type]
            for func, family in (
                ("avg", "avg"),
                ("sum", "sum"),
                ("max", "superlative"),
                ("min", "superlative"),
            ):
                if family not in families:
                    continue
                for c in entities.aggregated:
                    if state.full:
                        return
                    aggregate = _call(state, func, (view, _column(state, c)))
                    if aggregate is None:
                        continue
                    for number in entities.numbers:
                        if number.span not in view.used:
                            _candidate(state, "eq", (aggregate, _lit(number)))


def _only_programs(state: _State, entities: _Entities, view: _Item) -> None:
    """only{V}, and "X is the only one with Y": and{only{V}; eq{hop{V; column of X}; X}}."""
    only = _call(state, "only", (view,))
    _add_candidate(state, only)
    if only is None or not view.node.func.startswith("filter"):  # type: ignore[union-attr]
        return
    for link in entities.cells:
        if link.span in view.used or state.full:
            continue
        hop = _call(state, "hop", (view, _column(state, link.column)))  # type: ignore[arg-type]
        equal = _call(state, "eq", (hop, _lit(link))) if hop is not None else None
        if equal is not None:
            _candidate(state, "and", (only, equal))


def _all_programs(state: _State, entities: _Entities, bases: list[_Item]) -> None:
    """all_eq / all_not_eq with linked cells and all_greater... with numbers, over the whole
    table and the first-level views."""
    for base in bases:
        for link in entities.cells:
            if link.span in base.used:
                continue
            _candidate(state, "all_eq", (base, _column(state, link.column), _lit(link)))  # type: ignore[arg-type]
            if "negation" in state.families:
                _candidate(state, "all_not_eq", (base, _column(state, link.column), _lit(link)))  # type: ignore[arg-type]
        for number in entities.numbers:
            if number.span in base.used:
                continue
            for c in entities.aggregated[: state.limits.max_compare_columns]:
                for func in ("all_greater", "all_less", "all_greater_eq", "all_less_eq"):
                    _candidate(state, func, (base, _column(state, c), _lit(number)))


def _most_frequent_programs(state: _State, entities: _Entities, all_rows: _Item) -> None:
    """eq{most_freq{all_rows; column}; value} for the linked cells of each column."""
    for c, column_links in entities.by_column.items():
        if state.full:
            return
        frequent = _call(state, "most_freq", (all_rows, _column(state, c)))
        for link in column_links:
            _candidate(state, "eq", (frequent, _lit(link)))  # type: ignore[arg-type]


def _row_comparisons(state: _State, entities: _Entities, rows: list[_Item]) -> None:
    """greater / diff / eq / before between the values of two selected rows in one column
    ("X scored more than Y")."""
    table = state.table
    families = state.families
    paired = rows[: state.limits.max_bases]
    for i, view_a in enumerate(paired):
        for view_b in paired[i + 1 :]:
            if view_a.value == view_b.value or view_a.used & view_b.used:
                continue
            row_a, row_b = view_a.value[0], view_b.value[0]  # type: ignore[index]
            filtered = set(view_a.node.headers) | set(view_b.node.headers)  # type: ignore[union-attr]
            also_numbers = [
                c
                for c in range(table.n_columns)
                if c not in entities.aggregated
                and table.rows[row_a][c].quantity is not None
                and table.rows[row_b][c].quantity is not None
            ]
            columns = list(entities.aggregated) + also_numbers[: state.limits.max_compare_columns]
            for c in columns:
                if table.header[c] in filtered or state.full:
                    continue
                hop_a = _call(state, "hop", (view_a, _column(state, c)))
                hop_b = _call(state, "hop", (view_b, _column(state, c)))
                if hop_a is None or hop_b is None:
                    continue
                for left, right in ((hop_a, hop_b), (hop_b, hop_a)):
                    if "compare" in families:
                        _candidate(state, "greater", (left, right))
                    if "diff" in families:
                        _difference_programs(state, entities, left, right, left.used | right.used)
                if "same" in families:
                    _candidate(state, "eq", (hop_a, hop_b))
                    _shared_value_programs(state, entities.numbers, hop_a, hop_b)
            if "same" in families:
                for c, column_links in entities.by_column.items():
                    if table.header[c] in filtered or c in columns or state.full:
                        continue
                    hop_a = _call(state, "hop", (view_a, _column(state, c)))
                    hop_b = _call(state, "hop", (view_b, _column(state, c)))
                    if hop_a is not None and hop_b is not None:
                        _shared_value_programs(state, column_links, hop_a, hop_b)
            if families & {"ordinal", "compare"}:
                _candidate(state, "before", (view_a, view_b))


def _shared_value_programs(state: _State, values: list[Link], hop_a: _Item, hop_b: _Item) -> None:
    """and{eq{hop{A; c}; v}; eq{hop{B; c}; v}}: two rows hold one same linked value v ("X and Y
    both scored 4", "both use the same class, professional")."""
    for value in values:
        if value.span in hop_a.used or value.span in hop_b.used or state.full:
            continue
        equal_a = _call(state, "eq", (hop_a, _lit(value)))
        equal_b = _call(state, "eq", (hop_b, _lit(value)))
        if equal_a is not None and equal_b is not None:
            _candidate(state, "and", (equal_a, equal_b))


def _count_comparisons(state: _State, entities: _Entities, first_level: list[_Item]) -> None:
    """Counts of two filters on the same column ("4 more jacksonian than anti-masonic members")."""
    counted = [v for v in first_level if v.node.func == "filter_eq"][: state.limits.max_bases]  # type: ignore[union-attr]
    for i, view_a in enumerate(counted):
        for view_b in counted[i + 1 :]:
            if view_a.used & view_b.used or view_a.node.args[1] != view_b.node.args[1]:  # type: ignore[union-attr]
                continue
            count_a, count_b = _call(state, "count", (view_a,)), _call(state, "count", (view_b,))
            for left, right in ((count_a, count_b), (count_b, count_a)):
                _candidate(state, "greater", (left, right))  # type: ignore[arg-type]
                _difference_programs(state, entities, left, right, view_a.used | view_b.used)  # type: ignore[arg-type]


def _difference_programs(
    state: _State, entities: _Entities, left: _Item, right: _Item, used: frozenset[Span]
) -> None:
    """eq{diff{left; right}; n} for the numbers not consumed by ``used``."""
    if state.full:
        return
    difference = _call(state, "diff", (left, right))
    for number in entities.numbers:
        if number.span not in used:
            _candidate(state, "eq", (difference, _lit(number)))  # type: ignore[arg-type]


def _conjunctions(state: _State, entities: _Entities) -> None:
    """and{a; b} of two partial programs that consume different entities (not evaluated: the
    value is the conjunction of the two values)."""
    limits = state.limits
    if len(entities.spans) < 2:
        return
    partial = [c for c in state.candidates.values() if c.used and len(c.used) < len(entities.spans)]
    partial.sort(key=lambda c: (-len(c.used), c.program.size))
    if len(partial) > limits.max_partial_programs:
        state.limit("max_partial_programs")
        partial = partial[: limits.max_partial_programs]
    pairs = 0
    for i, a in enumerate(partial):
        for b in partial[i + 1 :]:
            if a.used & b.used:
                continue
            if pairs >= limits.max_and_pairs:
                state.limit("max_and_pairs")
                return
            pairs += 1
            program = Call("and", (a.program, b.program))
            state.candidates.setdefault(
                str(program), Candidate(program, a.value and b.value, a.used | b.used)
            )
