"""Typed, memoised program search (LPA's latent program search, made fast).

Programs are built bottom-up from the linked entities: views (filters, superlatives, ordinal
rows), then values and numbers over views (hop, count, aggregates), then booleans (comparisons
with the linked literals, only, all_*, and). Every node is evaluated once when it is built;
views that select the same rows are kept once, so no two programs compute the same
intermediate value the same way twice. Trigger words decide which function families are tried.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tabverify.errors import ProgramExecutionError
from tabverify.program.functions import FUNCTIONS, Context
from tabverify.program.tree import AllRows, Call, Header, Literal, Node
from tabverify.program.triggers import active_families
from tabverify.program.values import literal_quantity
from tabverify.table import Table
from tabverify.text.linking import Link, Linking
from tabverify.text.spans import Span


@dataclass(frozen=True, slots=True)
class Candidate:
    """A complete program found by the search: a boolean program and the links it consumed."""

    program: Call
    value: bool
    used: frozenset[Span]


@dataclass(frozen=True, slots=True)
class _Item:
    node: Node
    value: object
    used: frozenset[Span]


@dataclass
class SearchLimits:
    """Bounds that keep the search fast (the defaults take a few milliseconds per statement)."""

    max_views: int = 80
    max_candidates: int = 600
    max_and_pairs: int = 150
    max_columns: int = 4


@dataclass
class _State:
    table: Table
    ctx: Context
    views: dict[tuple[tuple[int, ...], str], _Item] = field(default_factory=dict)
    view_list: list[_Item] = field(default_factory=list)
    candidates: dict[str, Candidate] = field(default_factory=dict)


def _call(state: _State, func: str, args: tuple[_Item | Node, ...]) -> _Item | None:
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
        value = FUNCTIONS[func].impl(state.ctx, *values)
    except (ProgramExecutionError, ValueError, TypeError, ZeroDivisionError, IndexError):
        return None
    return _Item(Call(func, nodes), value, used)


def _lit(link: Link) -> _Item:
    return _Item(Literal(link.literal), link.literal, frozenset({link.span}))


def _add_view(
    state: _State, item: _Item | None, limits: SearchLimits, keep_empty: bool = False
) -> _Item | None:
    if item is None or (not item.value and not keep_empty):
        return None
    # views are memoised by the rows they select and the function that selected them: a filter
    # and a superlative that land on the same row are different readings, two filters are not
    key = (item.value, item.node.func if isinstance(item.node, Call) else "all_rows")
    if key in state.views or len(state.view_list) >= limits.max_views:
        return state.views.get(key) if key in state.views else None
    state.views[key] = item
    state.view_list.append(item)
    return item


def _add_candidate(state: _State, item: _Item | None, limits: SearchLimits) -> None:
    if item is None or not isinstance(item.value, bool) or len(state.candidates) >= limits.max_candidates:
        return
    text = str(item.node)
    if text not in state.candidates:
        state.candidates[text] = Candidate(item.node, item.value, item.used)  # type: ignore[arg-type]


def search(table: Table, linking: Linking, limits: SearchLimits | None = None) -> list[Candidate]:
    """Enumerate boolean programs for a linked statement. Deterministic; order is build order."""
    limits = limits or SearchLimits()
    families = active_families(linking.tokens)
    state = _State(table, Context(table))
    headers = table.header
    numeric = [c for c, kind in enumerate(table.column_types) if kind in ("number", "date")]
    mentioned = linking.mentioned_columns
    header_cols = [link.column for link in linking.headers if link.column is not None]
    # numeric columns worth aggregating: the ones the statement names first
    numeric_ranked = sorted(numeric, key=lambda c: (c not in header_cols, c not in mentioned, c))
    agg_columns = numeric_ranked[: limits.max_columns]
    cell_links = list(linking.cells)
    number_links = list(linking.numbers)
    cell_spans = {link.span for link in cell_links}
    # a number that is also a whole cell is one entity, not two
    numbers = [n for n in number_links if n.span not in cell_spans] + [
        Link(c.span, c.text, "number", None, c.literal)
        for c in cell_links
        if c.exact and c.literal and c.literal[0].isdigit()
    ]

    ordinals = [n for n in numbers if _is_ordinal(n.literal)]
    numbers = [n for n in numbers if not _is_ordinal(n.literal)]
    all_rows = _Item(AllRows(), table.data_row_indices, frozenset())
    _add_view(state, all_rows, limits)
    negation = "negation" in families

    # ---- views level 1: filters on linked cells and numbers
    first_level: list[_Item] = []
    empty_views: list[_Item] = []
    for link in cell_links:
        item = _call(state, "filter_eq", (all_rows, Header(headers[link.column]), _lit(link)))
        view = _add_view(state, item, limits)
        if view is not None:
            first_level.append(view)
        elif item is not None and not item.value:
            empty_views.append(item)
        if negation:
            _add_view(
                state,
                _call(state, "filter_not_eq", (all_rows, Header(headers[link.column]), _lit(link))),
                limits,
            )
    # numbers and dates that name no whole cell still select rows of a number or date column
    # ("may 13 , 1998" for the cell "13 may 1998")
    for number in numbers:
        if number.span in cell_spans:
            continue
        for c in numeric:
            item = _call(state, "filter_eq", (all_rows, Header(headers[c]), _lit(number)))
            if item is not None and item.value and len(item.value) < max(2, len(all_rows.value)):  # type: ignore[arg-type]
                view = _add_view(state, item, limits)
                if view is not None:
                    first_level.append(view)
    if "compare" in families:
        for number in numbers:
            if not number.literal[:1].isdigit():
                continue
            for c in agg_columns:
                for func in ("filter_greater", "filter_less", "filter_greater_eq", "filter_less_eq"):
                    view = _add_view(
                        state, _call(state, func, (all_rows, Header(headers[c]), _lit(number))), limits
                    )
                    if view is not None:
                        first_level.append(view)
    # ---- views level 2: a second filter on a first-level view
    for view in list(first_level):
        for link in cell_links:
            if link.span in view.used:
                continue
            item = _call(state, "filter_eq", (view, Header(headers[link.column]), _lit(link)))
            _add_view(state, item, limits)
        if "compare" in families:
            for number in numbers:
                if number.span in view.used:
                    continue
                for c in agg_columns[:2]:
                    for func in ("filter_greater", "filter_less"):
                        _add_view(state, _call(state, func, (view, Header(headers[c]), _lit(number))), limits)
    # ---- superlative and ordinal views
    # a superlative needs rows to choose among
    bases = [all_rows] + [v for v in first_level if len(v.value) > 1][:6]  # type: ignore[arg-type]
    if "superlative" in families:
        for base in bases:
            for c in agg_columns:
                for func in ("argmax", "argmin"):
                    _add_view(state, _call(state, func, (base, Header(headers[c]))), limits)
        for number in ordinals:
            if number.literal.lower() in ("2nd", "3rd", "second", "third", "4th", "fourth"):
                for c in agg_columns[:2]:
                    for func in ("nth_argmax", "nth_argmin"):
                        _add_view(
                            state, _call(state, func, (all_rows, Header(headers[c]), _lit(number))), limits
                        )
    if "ordinal" in families:
        for base in bases:
            for func in ("first", "last"):
                _add_view(state, _call(state, func, (base,)), limits)

    views = state.view_list
    # ---- booleans over views
    links_by_column: dict[int, list[Link]] = {}
    for link in cell_links:
        links_by_column.setdefault(link.column, []).append(link)  # type: ignore[arg-type]
    single = [v for v in views if len(v.value) == 1]  # type: ignore[arg-type]
    for view in views:
        if len(view.value) > 3:  # type: ignore[arg-type]
            continue
        filtered_on = set(view.node.headers) if isinstance(view.node, Call) else set()
        for c in range(len(headers)):
            if (
                headers[c] in filtered_on
                and isinstance(view.node, Call)
                and view.node.func.startswith("filter")
            ):
                continue  # reading back the column the view was filtered on says nothing new
            wanted = [lk for lk in links_by_column.get(c, []) if lk.span not in view.used]
            is_numeric = c in numeric
            if not wanted and not (is_numeric and numbers) and not (view in single and c in mentioned):
                continue
            hop = _call(state, "hop", (view, Header(headers[c])))
            if hop is None:
                continue
            for link in wanted:
                _add_candidate(state, _call(state, "eq", (hop, _lit(link))), limits)
                if negation:
                    _add_candidate(state, _call(state, "not_eq", (hop, _lit(link))), limits)
            if is_numeric:
                for number in numbers:
                    if number.span not in view.used:
                        _add_candidate(state, _call(state, "eq", (hop, _lit(number))), limits)
                        if "compare" in families and c in header_cols:
                            _add_candidate(state, _call(state, "greater", (hop, _lit(number))), limits)
                            _add_candidate(state, _call(state, "less", (hop, _lit(number))), limits)
    # counts and aggregates compared with numbers
    for view in views:
        if not isinstance(view.node, AllRows) and not view.node.func.startswith("filter"):  # type: ignore[union-attr]
            continue  # counting the rows of a superlative or ordinal selection says nothing
        count = _call(state, "count", (view,))
        for number in numbers:
            if number.span in view.used:
                continue
            _add_candidate(state, _call(state, "eq", (count, _lit(number))), limits)
            quantity = literal_quantity(number.literal)
            # "more than 1994 games" is not a reading: compare counts with numbers a count can reach
            reachable = quantity is not None and 0 <= quantity.value <= len(all_rows.value)  # type: ignore[arg-type]
            if "compare" in families and reachable and number.literal[:1].isdigit():
                _add_candidate(state, _call(state, "greater", (count, _lit(number))), limits)
                _add_candidate(state, _call(state, "less", (count, _lit(number))), limits)
        if view is not all_rows and "only" in families:
            only = _call(state, "only", (view,))
            _add_candidate(state, only, limits)
            # "X is the only one with Y": only{V} and eq{hop{V; column of X}; X}
            if only is not None and view.node.func.startswith("filter"):  # type: ignore[union-attr]
                for link in cell_links:
                    if link.span in view.used:
                        continue
                    hop = _call(state, "hop", (view, Header(headers[link.column])))
                    eq = _call(state, "eq", (hop, _lit(link))) if hop is not None else None
                    if eq is not None:
                        _add_candidate(state, _call(state, "and", (only, eq)), limits)
        if len(view.value) > 1:  # type: ignore[arg-type]
            for func, family in (
                ("avg", "avg"),
                ("sum", "sum"),
                ("max", "superlative"),
                ("min", "superlative"),
            ):
                if family not in families:
                    continue
                for c in agg_columns:
                    agg = _call(state, func, (view, Header(headers[c])))
                    if agg is None:
                        continue
                    for number in numbers:
                        if number.span not in view.used:
                            _add_candidate(state, _call(state, "eq", (agg, _lit(number))), limits)
    if negation:
        for item in empty_views:
            _add_candidate(state, _call(state, "none", (item,)), limits)
    # all_* over the whole table and first-level views
    if "all" in families:
        for base in [all_rows] + first_level[:6]:
            for link in cell_links:
                if link.span in base.used:
                    continue
                _add_candidate(
                    state, _call(state, "all_eq", (base, Header(headers[link.column]), _lit(link))), limits
                )
                if negation:
                    _add_candidate(
                        state,
                        _call(state, "all_not_eq", (base, Header(headers[link.column]), _lit(link))),
                        limits,
                    )
            for number in numbers:
                if number.span in base.used:
                    continue
                for c in agg_columns[:2]:
                    for func in ("all_greater", "all_less", "all_greater_eq", "all_less_eq"):
                        _add_candidate(
                            state, _call(state, func, (base, Header(headers[c]), _lit(number))), limits
                        )
    if "most_freq" in families:
        for c, column_links in links_by_column.items():
            freq = _call(state, "most_freq", (all_rows, Header(headers[c])))
            for link in column_links:
                _add_candidate(state, _call(state, "eq", (freq, _lit(link))), limits)
    # comparisons between two rows on the same column ("X scored more than Y")
    if families & {"compare", "diff", "same", "ordinal"}:
        _row_comparisons(state, [v for v in single if v.used], agg_columns, numbers, families, limits)
    # counts of two filters on the same column ("4 more jacksonian than anti-masonic members")
    if families & {"compare", "diff"}:
        counted = [v for v in first_level if v.node.func == "filter_eq"]  # type: ignore[union-attr]
        for i, view_a in enumerate(counted[:6]):
            for view_b in counted[i + 1 : 6]:
                if view_a.used & view_b.used or view_a.node.args[1] != view_b.node.args[1]:  # type: ignore[union-attr]
                    continue
                count_a, count_b = _call(state, "count", (view_a,)), _call(state, "count", (view_b,))
                for left, right in ((count_a, count_b), (count_b, count_a)):
                    _add_candidate(state, _call(state, "greater", (left, right)), limits)
                    diff = _call(state, "diff", (left, right))
                    for number in numbers:
                        if number.span not in view_a.used | view_b.used:
                            _add_candidate(state, _call(state, "eq", (diff, _lit(number))), limits)
    # conjunctions of two partial programs that consume different entities
    _conjunctions(state, linking, limits)
    return list(state.candidates.values())


def _row_comparisons(
    state: _State,
    rows: list[_Item],
    agg_columns: list[int],
    numbers: list[Link],
    families: frozenset[str],
    limits: SearchLimits,
) -> None:
    """greater / diff / eq / before between the values of two selected rows in one column."""
    table = state.table
    for i, view_a in enumerate(rows[:6]):
        for view_b in rows[i + 1 : 6]:
            if view_a.value == view_b.value or view_a.used & view_b.used:
                continue
            row_a, row_b = view_a.value[0], view_b.value[0]  # type: ignore[index]
            filtered = set(view_a.node.headers) | set(view_b.node.headers)  # type: ignore[union-attr]
            columns = (
                list(agg_columns)
                + [
                    c
                    for c in range(table.n_columns)
                    if c not in agg_columns
                    and table.rows[row_a][c].quantity is not None
                    and table.rows[row_b][c].quantity is not None
                ][:2]
            )
            for c in columns:
                if table.header[c] in filtered:
                    continue
                hop_a = _call(state, "hop", (view_a, Header(table.header[c])))
                hop_b = _call(state, "hop", (view_b, Header(table.header[c])))
                if hop_a is None or hop_b is None:
                    continue
                for left, right in ((hop_a, hop_b), (hop_b, hop_a)):
                    if "compare" in families:
                        _add_candidate(state, _call(state, "greater", (left, right)), limits)
                    if "diff" in families:
                        diff = _call(state, "diff", (left, right))
                        for number in numbers:
                            if number.span not in left.used | right.used:
                                _add_candidate(state, _call(state, "eq", (diff, _lit(number))), limits)
                if "same" in families:
                    _add_candidate(state, _call(state, "eq", (hop_a, hop_b)), limits)
            if families & {"ordinal", "compare"}:
                _add_candidate(state, _call(state, "before", (view_a, view_b)), limits)


def _conjunctions(state: _State, linking: Linking, limits: SearchLimits) -> None:
    entities = {link.span for link in linking.cells} | {link.span for link in linking.numbers}
    if len(entities) < 2:
        return
    partial = [c for c in state.candidates.values() if c.used and len(c.used) < len(entities)]
    partial.sort(key=lambda c: (-len(c.used), c.program.size))
    partial = partial[:40]
    pairs = 0
    for i, a in enumerate(partial):
        for b in partial[i + 1 :]:
            if a.used & b.used:
                continue
            if pairs >= limits.max_and_pairs:
                return
            pairs += 1
            state.candidates.setdefault(
                str(Call("and", (a.program, b.program))),
                Candidate(Call("and", (a.program, b.program)), a.value and b.value, a.used | b.used),
            )


def _is_ordinal(text: str) -> bool:
    from tabverify.table.quantity import ORDINAL_WORDS

    lowered = text.lower()
    return lowered in ORDINAL_WORDS or (lowered[:1].isdigit() and lowered.endswith(("st", "nd", "rd", "th")))
