"""The typed function set of the table program language (TabFact / LPA / Logic2Text names).

Types: ``view`` (rows of the table, in table order), ``header`` (a column), ``num``, ``str``,
``obj`` (a cell value: number or text), ``bool``. Every function is registered once, with its
signature and its implementation; the parser, the search and the executor all read this table.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from tabverify.errors import ProgramExecutionError, ProgramTypeError
from tabverify.program.values import (
    DateNumber,
    normalize_text,
    order,
    out_of_range_number,
    quantity_of,
    text_match,
    text_of,
    values_match,
)
from tabverify.table import Cell, CellRef, Quantity, Table

View = tuple[int, ...]


Backend = Callable[[str, Sequence[object]], object]
"""Computes a function where the rows live (a database): ``backend(name, args)`` returns the value,
or ``NotImplemented`` to let the in-memory implementation compute it."""


@dataclass
class Context:
    """What a function sees while running: the table, (when tracing) the evidence cells read, and
    the backend of a table whose rows live in a database."""

    table: Table
    evidence: set[CellRef] | None = None
    backend: Backend | None = None

    def touch(self, row: int, column: int) -> None:
        """Record that a cell contributed to the result."""
        if self.evidence is not None:
            self.evidence.add(CellRef(row, column))


@dataclass(frozen=True)
class Function:
    """A function of the language: its name, argument types, return type and implementation."""

    name: str
    args: tuple[str, ...]
    returns: str
    impl: Callable[..., object] = field(repr=False)
    doc: str = ""


FUNCTIONS: dict[str, Function] = {}


def compatible(produced: str, expected: str) -> bool:
    """Can a value of type ``produced`` be passed where ``expected`` is required?"""
    if produced == expected:
        return True
    if expected == "obj":
        return produced in ("num", "str")
    if produced == "obj":
        return expected in ("num", "str")
    return False


def run_function(name: str, ctx: Context, args: Sequence[object]) -> object:
    """Apply the function ``name`` to evaluated arguments.

    Raises:
        ProgramExecutionError: the function cannot compute a value from these arguments (an empty
            view, a column without numbers, dates added, a number too large to read...), or the
            result overflows (is not a finite number).
    """
    try:
        value = NotImplemented if ctx.backend is None else ctx.backend(name, args)
        if value is NotImplemented:
            value = FUNCTIONS[name].impl(ctx, *args)
    except (ProgramExecutionError, ProgramTypeError):
        raise
    except (ValueError, TypeError, ArithmeticError, IndexError) as exc:
        raise ProgramExecutionError(f"{name} failed: {exc}") from exc
    if isinstance(value, float) and not math.isfinite(value):
        raise ProgramExecutionError(f"{name}: the result overflows ({value}, not a finite number)")
    return value


def _register(name: str, args: tuple[str, ...], returns: str, doc: str):
    def decorator(impl: Callable[..., object]) -> Callable[..., object]:
        FUNCTIONS[name] = Function(name, args, returns, impl, doc)
        return impl

    return decorator


def _numeric_cells(ctx: Context, view: View, column: int) -> list[tuple[int, Quantity]]:
    """The rows of the view whose cell in the column holds a number or date, with that quantity.

    Cells without a number are skipped (a "-" or "n/a" in a column of numbers), but a cell whose
    number is too large to read (beyond ``10**±300``) is an error: skipping it would let max, min,
    sum, argmax... answer as if it were not there.
    """
    out = []
    for r in view:
        cell = ctx.table.rows[r][column]
        q = quantity_of(cell)
        if q is not None:
            out.append((r, q))
            continue
        unreadable = out_of_range_number(cell)
        if unreadable is not None:
            ctx.touch(r, column)
            raise ProgramExecutionError(
                f"column {ctx.table.header[column]!r}, data row {r + 1}: {_short(unreadable)!r} is out of "
                "the range tabverify reads as numbers, so the column cannot be ranked or added up"
            )
    if not out:
        raise ProgramExecutionError(
            f"column {ctx.table.header[column]!r} has no numbers in the selected rows"
        )
    return out


# ---- views -------------------------------------------------------------------------------------

_FILTER_TESTS: dict[str, Callable[[Cell, object], bool]] = {
    "eq": lambda cell, value: values_match(cell, value),
    "not_eq": lambda cell, value: not values_match(cell, value),
    "str_eq": lambda cell, value: text_match(cell.text, text_of(value)),
    "str_not_eq": lambda cell, value: not text_match(cell.text, text_of(value)),
    "greater": lambda cell, value: order(cell, value) == 1,
    "less": lambda cell, value: order(cell, value) == -1,
    "greater_eq": lambda cell, value: order(cell, value) in (0, 1),
    "less_eq": lambda cell, value: order(cell, value) in (0, -1),
}


def _make_filter(test: Callable[[Cell, object], bool]):
    def run(ctx: Context, view: View, column: int, value: object) -> View:
        rows = ctx.table.rows
        kept = tuple(r for r in view if test(rows[r][column], value))
        for r in kept:
            ctx.touch(r, column)
        return kept

    return run


def _make_all(test: Callable[[Cell, object], bool]):
    def run(ctx: Context, view: View, column: int, value: object) -> bool:
        if not view:
            return False
        rows = ctx.table.rows
        for r in view:
            ctx.touch(r, column)
            if not test(rows[r][column], value):
                return False
        return True

    return run


def _exact_first(view: View, column: int, value: object, ctx: Context) -> set[int] | None:
    """Rows whose cell equals the value exactly, when any does: then containment matches
    ("1.2" for "1.2 tsi") are not wanted."""
    wanted = normalize_text(text_of(value))
    rows = ctx.table.rows
    exact = {r for r in view if normalize_text(rows[r][column].text) == wanted}
    return exact or None


def _filter_eq(ctx: Context, view: View, column: int, value: object) -> View:
    exact = _exact_first(view, column, value, ctx)
    test = _FILTER_TESTS["eq"]
    kept = tuple(r for r in view if (r in exact if exact else test(ctx.table.rows[r][column], value)))
    for r in kept:
        ctx.touch(r, column)
    return kept


def _filter_not_eq(ctx: Context, view: View, column: int, value: object) -> View:
    matched = set(_filter_eq(Context(ctx.table), view, column, value))
    kept = tuple(r for r in view if r not in matched)
    for r in kept:
        ctx.touch(r, column)
    return kept


for _suffix, _test in _FILTER_TESTS.items():
    _register(
        f"filter_{_suffix}",
        ("view", "header", "obj"),
        "view",
        f"rows of the view whose cell in the column satisfies '{_suffix}' against the value",
    )(_make_filter(_test))
    _register(
        f"all_{_suffix}",
        ("view", "header", "obj"),
        "bool",
        f"true when every row of the (non-empty) view satisfies '{_suffix}'",
    )(_make_all(_test))
FUNCTIONS["filter_eq"] = replace(FUNCTIONS["filter_eq"], impl=_filter_eq)
FUNCTIONS["filter_not_eq"] = replace(FUNCTIONS["filter_not_eq"], impl=_filter_not_eq)


@_register("filter_all", ("view", "header"), "view", "the view unchanged (the column is only a hint)")
def _filter_all(ctx: Context, view: View, column: int) -> View:
    return view


@_register("argmax", ("view", "header"), "view", "the row with the largest number in the column")
def _argmax(ctx: Context, view: View, column: int) -> View:
    return _nth_arg(ctx, view, column, 1, largest=True)


@_register("argmin", ("view", "header"), "view", "the row with the smallest number in the column")
def _argmin(ctx: Context, view: View, column: int) -> View:
    return _nth_arg(ctx, view, column, 1, largest=False)


def _nth_arg(ctx: Context, view: View, column: int, n: int, largest: bool) -> View:
    return (_nth_cell(ctx, view, column, n, largest)[0],)


def _nth_cell(ctx: Context, view: View, column: int, n: int, largest: bool) -> tuple[int, Quantity]:
    """The row holding the n-th largest (or smallest) number or date of the column, and its value."""
    values = _numeric_cells(ctx, view, column)
    ordered = sorted(values, key=lambda rq: (-rq[1].value, rq[0]) if largest else (rq[1].value, rq[0]))
    if n < 1 or n > len(ordered):
        raise ProgramExecutionError(f"asked for number {n} of {len(ordered)} ranked rows")
    row, quantity = ordered[n - 1]
    ctx.touch(row, column)
    return row, quantity


def _ordinal(value: object) -> int:
    q = quantity_of(value)
    if q is None or q.value != int(q.value):
        raise ProgramExecutionError(f"{text_of(value)!r} is not an ordinal position")
    return int(q.value)


@_register("nth_argmax", ("view", "header", "num"), "view", "the row with the n-th largest number")
def _nth_argmax(ctx: Context, view: View, column: int, n: object) -> View:
    return _nth_arg(ctx, view, column, _ordinal(n), largest=True)


@_register("nth_argmin", ("view", "header", "num"), "view", "the row with the n-th smallest number")
def _nth_argmin(ctx: Context, view: View, column: int, n: object) -> View:
    return _nth_arg(ctx, view, column, _ordinal(n), largest=False)


def _position(ctx: Context, view: View, n: int) -> View:
    if not view or n > len(view):
        raise ProgramExecutionError(f"the view has {len(view)} rows, no row number {n}")
    return (view[n - 1] if n > 0 else view[n],)


for _n, _word in enumerate(("first", "second", "third", "fourth", "fifth"), start=1):
    _register(_word, ("view",), "view", f"the {_word} row of the view, in table order")(
        lambda ctx, view, _n=_n: _position(ctx, view, _n)
    )
_register("last", ("view",), "view", "the last row of the view, in table order")(
    lambda ctx, view: _position(ctx, view, -1)
)

# ---- numbers -----------------------------------------------------------------------------------


@_register("count", ("view",), "num", "the number of rows")
def _count(ctx: Context, view: View) -> float:
    return float(len(view))


@_register("uniq", ("view", "header"), "num", "the number of distinct values in the column")
def _uniq(ctx: Context, view: View, column: int) -> float:
    return float(len({ctx.table.rows[r][column].text.lower() for r in view}))


def _no_dates(name: str, quantities: Sequence[Quantity]) -> None:
    """Arithmetic on calendar dates is meaningless (they are held as YYYYMMDD numbers)."""
    date = next((q for q in quantities if q.kind == "date"), None)
    if date is not None:
        raise ProgramExecutionError(
            f"{name} does arithmetic, and {date.text!r} is a date: dates can be compared "
            "(max, min, argmax, greater...) or subtracted as full dates (diff gives years), not added"
        )


def _aggregate(name: str, reduce: Callable[[list[float]], float], arithmetic: bool):
    def run(ctx: Context, view: View, column: int) -> float:
        values = _numeric_cells(ctx, view, column)
        if arithmetic:
            _no_dates(name, [q for _, q in values])
        for r, _ in values:
            ctx.touch(r, column)
        return float(reduce([q.value for _, q in values]))

    return run


def _extreme(largest: bool):
    """max / min: the largest (smallest) number of the column; when that value is a date, a
    :class:`DateNumber`, so that it still compares as a date (the earliest date is "september 13",
    not the number 913 tabverify orders dates by)."""

    def run(ctx: Context, view: View, column: int) -> float:
        values = _numeric_cells(ctx, view, column)
        for r, _ in values:
            ctx.touch(r, column)
        pick = max if largest else min
        value, kind = pick(((q.value, q.kind) for _, q in values), key=lambda vk: vk[0])
        return DateNumber(value) if kind == "date" else float(value)

    return run


_register("sum", ("view", "header"), "num", "the sum of the column (not of dates)")(
    _aggregate("sum", sum, True)
)
_register("avg", ("view", "header"), "num", "the mean of the column (not of dates)")(
    _aggregate("avg", lambda v: sum(v) / len(v), True)
)
_register("max", ("view", "header"), "num", "the largest number in the column (a date stays a date)")(
    _extreme(True)
)
_register("min", ("view", "header"), "num", "the smallest number in the column (a date stays a date)")(
    _extreme(False)
)


def _nth_value(ctx: Context, view: View, column: int, n: object, largest: bool) -> float:
    quantity = _nth_cell(ctx, view, column, _ordinal(n), largest)[1]
    return DateNumber(quantity.value) if quantity.kind == "date" else quantity.value


_register("nth_max", ("view", "header", "num"), "num", "the n-th largest number in the column")(
    lambda ctx, view, column, n: _nth_value(ctx, view, column, n, True)
)
_register("nth_min", ("view", "header", "num"), "num", "the n-th smallest number in the column")(
    lambda ctx, view, column, n: _nth_value(ctx, view, column, n, False)
)


def _short(text: str, limit: int = 40) -> str:
    """Text shortened for a message (a 400-digit number is shown by its start)."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _number(value: object) -> float:
    q = quantity_of(value)
    if q is None:
        unreadable = out_of_range_number(value)
        if unreadable is not None:
            raise ProgramExecutionError(
                f"{_short(unreadable)!r} is out of the range tabverify reads as numbers (magnitudes beyond 10**±300)"
            )
        raise ProgramExecutionError(f"{_short(text_of(value))!r} is not a number")
    return q.value


def _diff(ctx: Context, a: object, b: object) -> float:
    qa, qb = quantity_of(a), quantity_of(b)
    if (
        qa is not None
        and qb is not None
        and qa.kind == qb.kind == "date"
        and min(qa.value, qb.value) >= 10000
    ):
        return float(qa.value // 10000 - qb.value // 10000)  # dates differ by years
    _no_dates("diff", [q for q in (qa, qb) if q is not None])
    return _number(a) - _number(b)


def _add(ctx: Context, a: object, b: object) -> float:
    _no_dates("add", [q for q in (quantity_of(a), quantity_of(b)) if q is not None])
    return _number(a) + _number(b)


_register("diff", ("obj", "obj"), "num", "left minus right (full dates: difference in years)")(_diff)
_register("add", ("obj", "obj"), "num", "left plus right (not of dates)")(_add)

# ---- values ------------------------------------------------------------------------------------


@_register("hop", ("view", "header"), "obj", "the value in the column of the view's first row")
def _hop(ctx: Context, view: View, column: int) -> Cell:
    if not view:
        raise ProgramExecutionError("hop on an empty view: the filter selected no rows")
    ctx.touch(view[0], column)
    return ctx.table.rows[view[0]][column]


_register("num_hop", ("view", "header"), "obj", "hop, read as a number")(_hop)
_register("str_hop", ("view", "header"), "obj", "hop, read as text")(_hop)


@_register("most_freq", ("view", "header"), "obj", "the most frequent value in the column")
def _most_freq(ctx: Context, view: View, column: int) -> str:
    if not view:
        raise ProgramExecutionError("most_freq on an empty view")
    counts = Counter(ctx.table.rows[r][column].text.lower() for r in view)
    best = max(counts.values())
    for r in view:
        if counts[ctx.table.rows[r][column].text.lower()] == best:
            ctx.touch(r, column)
    # first value (in table order) among the most frequent
    return next(
        ctx.table.rows[r][column].text for r in view if counts[ctx.table.rows[r][column].text.lower()] == best
    )


# ---- booleans ----------------------------------------------------------------------------------

_register(
    "eq",
    ("obj", "obj"),
    "bool",
    "same value (numbers at the less precise side's precision: eq{3; 3.4} holds)",
)(lambda ctx, a, b: values_match(a, b))
_register("not_eq", ("obj", "obj"), "bool", "different values")(lambda ctx, a, b: not values_match(a, b))
_register("round_eq", ("obj", "obj"), "bool", "equal after rounding")(lambda ctx, a, b: values_match(a, b))
_register("str_eq", ("obj", "obj"), "bool", "one text contains the other")(
    lambda ctx, a, b: text_match(text_of(a), text_of(b))
)
_register("not_str_eq", ("obj", "obj"), "bool", "neither text contains the other")(
    lambda ctx, a, b: not text_match(text_of(a), text_of(b))
)


def _ordered(a: object, b: object, wanted: int) -> bool:
    result = order(a, b)
    if result is None:
        for value in (a, b):
            _number(value)  # says which side is out of range, or not a number
        raise ProgramExecutionError(f"cannot compare {text_of(a)!r} with {text_of(b)!r} as numbers")
    return result == wanted


_register("greater", ("obj", "obj"), "bool", "left is larger")(lambda ctx, a, b: _ordered(a, b, 1))
_register("less", ("obj", "obj"), "bool", "left is smaller")(lambda ctx, a, b: _ordered(a, b, -1))


def _truth(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise ProgramTypeError(
            f"{name} needs booleans (comparisons such as eq{{...}}), got {text_of(value)!r}"
        )
    return value


_register("and", ("bool", "bool"), "bool", "both are true")(
    lambda ctx, a, b: all((_truth("and", a), _truth("and", b)))
)
_register("not", ("bool",), "bool", "negation")(lambda ctx, a: not _truth("not", a))
_register("only", ("view",), "bool", "the view has exactly one row")(lambda ctx, view: len(view) == 1)
_register("several", ("view",), "bool", "the view has more than one row")(lambda ctx, view: len(view) > 1)
_register("zero", ("view",), "bool", "the view is empty")(lambda ctx, view: len(view) == 0)
_register("none", ("view",), "bool", "the view is empty (alias of zero)")(lambda ctx, view: len(view) == 0)
_register("half", ("view",), "bool", "the view holds about half of the table's rows")(
    lambda ctx, view: abs(2 * len(view) - len(ctx.table.data_row_indices)) <= 1
)
_register("one_third", ("view",), "bool", "the view holds about a third of the table's rows")(
    lambda ctx, view: abs(3 * len(view) - len(ctx.table.data_row_indices)) <= 2
)


def _first_row(view: View, what: str) -> int:
    if not view:
        raise ProgramExecutionError(f"{what}: empty view")
    return view[0]


_register("before", ("view", "view"), "bool", "the first view's row comes before the second's")(
    lambda ctx, a, b: _first_row(a, "before") < _first_row(b, "before")
)
_register("after", ("view", "view"), "bool", "the first view's row comes after the second's")(
    lambda ctx, a, b: _first_row(a, "after") > _first_row(b, "after")
)


@_register("within", ("view", "header", "obj"), "bool", "the value appears in the column of the view")
def _within(ctx: Context, view: View, column: int, value: object) -> bool:
    return any(values_match(ctx.table.rows[r][column], value) for r in view)


@_register(
    "samerow",
    ("view", "header", "obj", "header", "obj"),
    "bool",
    "some row holds both values (first in the first column, second in the second)",
)
def _samerow(ctx: Context, view: View, col_a: int, a: object, col_b: int, b: object) -> bool:
    rows = ctx.table.rows
    for r in view:
        if values_match(rows[r][col_a], a) and values_match(rows[r][col_b], b):
            ctx.touch(r, col_a)
            ctx.touch(r, col_b)
            return True
    return False
