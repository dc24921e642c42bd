"""SQL expressions that fold at compile time: the building blocks of the compiler.

A *maybe-constant* (:data:`M`) is either a Python value known when compiling (a literal's number,
kind or decimals) or a sqlglot expression. Every helper here folds when its operands are known, so
a comparison against a program literal is specialised on the literal's parsed quantity instead of
testing its kind in SQL. The numeric rules of the memory executor (``aligned_numbers``,
``numbers_equal``, ``same_at_precision``, ``order``) are written once, over these helpers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from sqlglot import exp

M = exp.Expression | bool | int | float | str | None
"""A maybe-constant: a Python value known at compile time, or a SQL expression."""


def known(x: M) -> bool:
    """Is the value known at compile time?"""
    return not isinstance(x, exp.Expression)


def sql(x: M) -> exp.Expression:
    """The SQL expression of a maybe-constant (Python values become literals, never text)."""
    if isinstance(x, exp.Expression):
        return x
    if x is None:
        return exp.Null()
    if isinstance(x, bool):
        return exp.Boolean(this=x)
    if isinstance(x, int):
        return exp.Literal.number(str(x))
    if isinstance(x, float):
        if not math.isfinite(x):
            raise ValueError(f"{x} has no SQL literal")
        if x.is_integer() and abs(x) < 1e15:
            return exp.Literal.number(str(int(x)))  # an integer meets only doubles: exact
        text = repr(x)
        # a decimal literal (0.1) is DECIMAL in DuckDB and NUMERIC in PostgreSQL: say it is a double
        return exp.cast(exp.Literal.number(text), exp.DataType.build("double"))
    if isinstance(x, str):
        return exp.Literal.string(x)
    raise TypeError(f"no SQL literal for {x!r}")


def boolean(x: M) -> exp.Expression:
    """A predicate that is never NULL (NULL reads as false)."""
    if known(x):
        return sql(bool(x))
    if isinstance(x, (exp.Boolean, exp.Coalesce)):
        return x
    return exp.Coalesce(this=x, expressions=[exp.false()])


def and_(*xs: M) -> M:
    """Conjunction; a known False wins, known Trues drop out."""
    rest = []
    for x in xs:
        if known(x):
            if not x:
                return False
        else:
            rest.append(x)
    if not rest:
        return True
    return exp.and_(*[exp.paren(r, copy=False) for r in rest], copy=False) if len(rest) > 1 else rest[0]


def or_(*xs: M) -> M:
    """Disjunction; a known True wins, known Falses drop out."""
    rest = []
    for x in xs:
        if known(x):
            if x:
                return True
        else:
            rest.append(x)
    if not rest:
        return False
    return exp.or_(*[exp.paren(r, copy=False) for r in rest], copy=False) if len(rest) > 1 else rest[0]


def not_(x: M) -> M:
    """Negation of a predicate (NULL read as false first)."""
    if known(x):
        return not x
    return exp.Not(this=exp.paren(boolean(x), copy=False))


def if_(cond: M, then: M, otherwise: M) -> M:
    """CASE WHEN cond THEN then ELSE otherwise END, folded when cond is known."""
    if known(cond):
        return then if cond else otherwise
    if known(then) and known(otherwise) and then == otherwise and type(then) is type(otherwise):
        return then
    return exp.Case(ifs=[exp.If(this=cond, true=sql(then))], default=sql(otherwise))


def _binary(cls: type[exp.Expression], op, a: M, b: M) -> M:
    if known(a) and known(b):
        if a is None or b is None:
            return None
        return op(a, b)
    return cls(this=exp.paren(sql(a), copy=False), expression=exp.paren(sql(b), copy=False))


def eq(a: M, b: M) -> M:
    return _binary(exp.EQ, lambda x, y: x == y, a, b)


def ne(a: M, b: M) -> M:
    return _binary(exp.NEQ, lambda x, y: x != y, a, b)


def lt(a: M, b: M) -> M:
    return _binary(exp.LT, lambda x, y: x < y, a, b)


def le(a: M, b: M) -> M:
    return _binary(exp.LTE, lambda x, y: x <= y, a, b)


def gt(a: M, b: M) -> M:
    return _binary(exp.GT, lambda x, y: x > y, a, b)


def ge(a: M, b: M) -> M:
    return _binary(exp.GTE, lambda x, y: x >= y, a, b)


def add(a: M, b: M) -> M:
    return _binary(exp.Add, lambda x, y: x + y, a, b)


def sub(a: M, b: M) -> M:
    return _binary(exp.Sub, lambda x, y: x - y, a, b)


def mul(a: M, b: M) -> M:
    if known(b) and b == 1 and not isinstance(b, bool):
        return a
    if known(a) and a == 1 and not isinstance(a, bool):
        return b
    return _binary(exp.Mul, lambda x, y: x * y, a, b)


def floor(a: M) -> M:
    if known(a):
        return None if a is None else float(math.floor(a))
    return exp.Floor(this=sql(a))


def ceil(a: M) -> M:
    if known(a):
        return None if a is None else float(math.ceil(a))
    return exp.Ceil(this=sql(a))


def abs_(a: M) -> M:
    if known(a):
        return None if a is None else abs(a)
    return exp.Abs(this=sql(a))


def in_(kind: M, options: tuple[str, ...]) -> M:
    """Is a (maybe-constant) kind one of ``options``."""
    if known(kind):
        return kind in options
    return or_(*(eq(kind, o) for o in options))


def distinct_from(a: M, b: M) -> M:
    """``a != b`` with None equal to None (Python's comparison of two ``second`` values)."""
    if known(a) and known(b):
        return a != b
    return exp.NullSafeNEQ(this=sql(a), expression=sql(b))


@dataclass(frozen=True)
class Q:
    """A quantity as SQL sees it: whether the value has one, and its fields (maybe-constants).

    ``scale`` is ``10 ** decimals`` as a float, the factor :func:`same_at_precision` scales by.
    """

    present: M
    value: M
    kind: M
    decimals: M
    second: M
    scale: M

    @classmethod
    def absent(cls) -> Q:
        return cls(False, None, None, None, None, None)


def scale_of(decimals: int) -> float:
    """The factor the memory rule multiplies by for ``decimals`` (``10**-1`` for computed values)."""
    return float(10**decimals)


def date_year(a: M) -> M:
    """``a // 10000`` for a date held as yyyymmdd (non-negative)."""
    return floor(_div(a, 10000))


def _div(a: M, b: float) -> M:
    if known(a):
        return None if a is None else a / b
    # a division by a double literal: never SQLite's integer division
    divisor = exp.cast(exp.Literal.number(str(b)), exp.DataType.build("double"))
    return exp.Div(this=exp.paren(sql(a), copy=False), expression=divisor)


def month_day(a: M) -> M:
    """``a % 10000`` for a non-negative yyyymmdd (portable: PostgreSQL has no % on doubles)."""
    if known(a):
        return None if a is None else a % 10000
    return sub(a, mul(10000.0, floor(_div(a, 10000))))


def aligned(left: Q, right: Q) -> tuple[M, M, M]:
    """:func:`tabverify.program.values.aligned_numbers` in SQL: (defined, a, b)."""
    a, b = left.value, right.value
    ld, rd = eq(left.kind, "date"), eq(right.kind, "date")
    both = and_(ld, rd)
    small = or_(lt(a, 10000), lt(b, 10000))
    left_year = and_(ld, in_(right.kind, ("year", "number")), ge(a, 10000))
    right_year = and_(rd, in_(left.kind, ("year", "number")), ge(b, 10000))
    a2 = if_(both, if_(small, month_day(a), a), if_(left_year, date_year(a), a))
    b2 = if_(both, if_(small, month_day(b), b), if_(right_year, date_year(b), b))
    defined = if_(or_(ld, rd), or_(both, left_year, right_year), True)
    return defined, a2, b2


def same_at_precision(precise: M, written: M, scale: M) -> M:
    """:func:`tabverify.table.numbers.same_at_precision` in SQL: ``precise`` rounded half to even
    or truncated, at the scale of ``10**decimals``, within 1e-6 of ``written``."""
    if known(precise) and known(written) and known(scale):
        from tabverify.table.numbers import same_at_precision as rule

        if precise is None or written is None or scale is None:
            return False
        decimals = round(math.log10(scale))
        return rule(float(precise), float(written), decimals)
    x = mul(precise, scale)
    w = mul(written, scale)
    f = floor(x)
    frac = sub(x, f)
    even = if_(
        gt(frac, 0.5),
        add(f, 1.0),
        if_(lt(frac, 0.5), f, if_(eq(sub(f, mul(2.0, floor(mul(f, 0.5)))), 0.0), f, add(f, 1.0))),
    )
    trunc = if_(ge(x, 0.0), f, ceil(x))
    return or_(lt(abs_(sub(even, w)), 1e-6), lt(abs_(sub(trunc, w)), 1e-6))


def numbers_equal(left: Q, right: Q) -> M:
    """:func:`tabverify.program.values.numbers_equal` in SQL (false when either has no quantity)."""
    defined, a, b = aligned(left, right)
    lr, rr = eq(left.kind, "range"), eq(right.kind, "range")
    blocked = if_(
        ne(lr, rr) if known(lr) and known(rr) else exp.NEQ(this=boolean(lr), expression=boolean(rr)),
        and_(ge(left.decimals, 0), ge(right.decimals, 0)),
        distinct_from(left.second, right.second),
    )
    ld, rd = left.decimals, right.decimals
    precision = if_(
        or_(lt(ld, 0), and_(gt(ld, rd), ge(rd, 0))),
        same_at_precision(a, b, right.scale),
        if_(
            or_(lt(rd, 0), and_(gt(rd, ld), ge(ld, 0))),
            same_at_precision(b, a, left.scale),
            le(abs_(sub(a, b)), 1e-9),
        ),
    )
    return and_(left.present, right.present, defined, not_(blocked), or_(eq(a, b), precision))


def order(left: Q, right: Q) -> tuple[M, M, M]:
    """:func:`tabverify.program.values.order` in SQL: (defined, a, b) - compare ``a`` with ``b``
    where ``defined`` holds (both numbers, and comparable: a date against a year, ...)."""
    defined, a, b = aligned(left, right)
    return and_(left.present, right.present, defined), a, b
