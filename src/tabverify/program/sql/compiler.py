"""The SQL visitor over the program tree: one compile function per function name, parallel to
:data:`tabverify.program.functions.FUNCTIONS`.

Every view becomes a common table expression selecting the row keys ``_row`` (row order is the
order of ``_row``; every ordinal function orders by it explicitly). Scalars are expressions with
scalar subqueries over those views. Each compiled node carries its *error*: a SQL expression that
is a message when the memory executor would raise at that node, else NULL; errors combine in the
executor's order of evaluation (arguments left to right, then the function).

Text predicates against values whose possible texts are known (a literal, or a cell of a column
whose distinct texts the :class:`SqlTable` holds) are decided in Python by the memory executor's
own rules and compiled to ``text IN (...)``; numeric comparisons are SQL over the prepared
number, kind and decimals (:mod:`tabverify.program.sql.expr`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Literal as TypingLiteral

from sqlglot import exp

from tabverify.errors import ProgramExecutionError
from tabverify.program.execute import resolve_header
from tabverify.program.functions import FUNCTIONS
from tabverify.program.sql import expr as x
from tabverify.program.sql.expr import M, Q
from tabverify.program.sql.table import FIELDS, SqlTable, column_name, native_kind, summary_labels
from tabverify.program.tree import AllRows, Call, Header, Literal, Node
from tabverify.program.values import (
    inflected_forms,
    literal_quantity,
    normalize_text,
    text_match,
    text_of,
    values_match,
)
from tabverify.table import Table

ROW = "b"
"""The alias of the base relation inside a view's WHERE clause (the row a filter tests)."""

BASE = "_base"
"""The CTE a native table is read through (see :func:`native_base`)."""

MAX_PAIRS = 50_000
"""Most (text, text) pairs decided in Python for a relation between two column values."""


@dataclass(frozen=True)
class View:
    """A compiled view: the name of its CTE, and its error (a message expression, or None)."""

    name: str
    err: M = None
    where: exp.Expression | None = None
    """For all_rows and filters over it: the predicate on the base row (alias :data:`ROW`) that
    selects the view, so that a filter of it, or a test of its rows, reads the table once instead
    of joining the view's row keys (on a table of millions of rows that join dominates)."""


@dataclass(frozen=True)
class Value:
    """A compiled scalar.

    ``type`` says which Python type the memory executor would hold: ``const`` (a literal, known
    now: ``py``), ``num`` (a computed float, ``expr``), ``cell`` (a Cell of column ``column`` in
    the one-row relation ``source``, or in the tested row when ``source`` is :data:`ROW`),
    ``text`` (a str taken from such a cell: most_freq), ``bool`` (``expr``), ``column`` (a
    header: ``column``). ``kind`` is the kind of a ``num`` when it may be a date (max and min of a
    date column stay dates, as :class:`tabverify.program.values.DateNumber` in memory); None: a
    plain number.
    """

    type: TypingLiteral["const", "num", "cell", "text", "bool", "column"]
    py: object = None
    expr: M = None
    column: int = -1
    source: str = ""
    err: M = None
    kind: M = None


Compiled = View | Value


def _decade_start(value: Value) -> int | None:
    """The first year of the decade a literal names ("1940s": 1940), as values_match reads it."""
    if value.type != "const":
        return None
    from tabverify.program.values import decade_start

    return decade_start(str(value.py))


_DECADE_PATTERNS = tuple(f"{p}{s}" for p in ("1__0", "20_0") for s in ("s", " s", "'s", " 's"))


def _decade_like(norm: M) -> M:
    """Whether a normalised text is written as a decade (LIKE patterns: every engine has LIKE)."""
    if x.known(norm):
        from tabverify.program.values import decade_start

        return decade_start(str(norm)) is not None
    return x.or_(*(exp.Like(this=x.sql(norm), expression=exp.Literal.string(p)) for p in _DECADE_PATTERNS))


def errors(*errs: M) -> M:
    """The first error in evaluation order (COALESCE, folded)."""
    rest: list[M] = []
    for e in errs:
        if e is None:
            continue
        if x.known(e):
            if not rest:
                return e
            rest.append(e)
            break
        rest.append(e)
    if not rest:
        return None
    if len(rest) == 1:
        return rest[0]
    return exp.Coalesce(this=x.sql(rest[0]), expressions=[x.sql(e) for e in rest[1:]])


def _err_of(args: list[Compiled]) -> M:
    return errors(*(a.err for a in args))


@dataclass
class Compiler:
    """Compiles the nodes of one program against one table (holds the CTEs made so far)."""

    table: SqlTable
    inline: bool = False
    ctes: dict[str, exp.Select] = field(default_factory=dict)
    _memo: dict[Node, Compiled] = field(default_factory=dict)
    _resolver: Table | None = None

    # ---- relations and fields ------------------------------------------------------------------

    def base(self, alias: str = ROW) -> exp.Expression:
        """The base relation (the prepared table, or the native table's derived relation)."""
        if self.table.kind == "prepared":
            return exp.table_(self.table.name, quoted=True, alias=alias)
        # inlined where it is read, never a CTE: an engine may materialise a CTE read twice, and
        # the derived relation of a table of millions of rows must stay a projection of it. It is
        # a placeholder until the query is complete: prune_native fills in the fields it reads
        placeholder = exp.select("_row").from_(exp.table_(self.table.name, quoted=True))
        placeholder.meta["native_base"] = True
        return exp.Subquery(this=placeholder, alias=exp.TableAlias(this=exp.to_identifier(alias)))

    def ref(self, name: str, alias: str | None = None) -> exp.Expression:
        """A reference to a CTE (or, compiling inline, its query as a subquery)."""
        if self.inline:
            return exp.Subquery(
                this=self.ctes[name].copy(), alias=exp.TableAlias(this=exp.to_identifier(alias or name))
            )
        table = exp.to_table(name)
        if alias:
            table.set("alias", exp.TableAlias(this=exp.to_identifier(alias)))
        return table

    def add_cte(self, prefix: str, select: exp.Select) -> str:
        name = f"{prefix}{len(self.ctes) + 1}"
        self.ctes[name] = select
        return name

    def rows_of(self, view: View) -> exp.Expression:
        """``b._row IN (SELECT _row FROM view)`` (or the view's own predicate, when it has one)."""
        if view.where is not None:
            return view.where.copy()
        return exp.column("_row", table=ROW).isin(query=exp.select("_row").from_(self.ref(view.name)))

    def count(self, view: View) -> exp.Expression:
        return exp.Subquery(this=exp.select(exp.func("COUNT", exp.Star())).from_(self.ref(view.name)))

    def first_row(self, view: View) -> exp.Expression:
        return exp.Subquery(this=exp.select(exp.func("MIN", exp.column("_row"))).from_(self.ref(view.name)))

    def exists(self, where: M, view: View | None = None) -> M:
        """Does some row of the view (all rows when None) satisfy ``where``?"""
        if x.known(where) and not where:
            return False
        conditions = [self.rows_of(view)] if view is not None else []
        if not (x.known(where) and where):
            conditions.append(x.sql(where))
        query = exp.select("1").from_(self.base())
        if conditions:
            query = query.where(exp.and_(*conditions))
        return exp.Exists(this=query)

    def field(self, value: Value, name: str) -> exp.Expression:
        """Field ``name`` of a cell value (``c3_num`` of the tested row, or of a one-row CTE)."""
        column = column_name(value.column, name)
        if value.source == ROW:
            return exp.column(column, table=ROW)
        return exp.Subquery(this=exp.select(column).from_(self.ref(value.source)))

    def text(self, value: Value) -> M:
        """``text_of`` the value."""
        if value.type == "const":
            return str(value.py)
        if value.type == "num":
            return format_number_sql(value.expr)
        return self.field(value, "text")

    def norm(self, value: Value) -> M:
        """``normalize_text(text_of(value))``."""
        if value.type == "const":
            return normalize_text(str(value.py))
        if value.type == "num":
            return format_number_sql(value.expr)
        return self.field(value, "norm")

    def quantity(self, value: Value) -> Q:
        """``quantity_of(value)`` as SQL fields."""
        if value.type == "const":
            q = literal_quantity(str(value.py))
            if q is None:
                return Q.absent()
            return Q(True, q.value, q.kind, q.decimals, q.second, x.scale_of(q.decimals))
        if value.type == "num":
            if value.kind is None:
                return Q(True, value.expr, "number", -1, None, x.scale_of(-1))
            # a date keeps its kind and whole-day precision; any other kind is a plain number
            dated = x.eq(value.kind, "date")
            return Q(
                True,
                value.expr,
                x.if_(dated, "date", "number"),
                x.if_(dated, 0, -1),
                None,
                x.if_(dated, 1.0, x.scale_of(-1)),
            )
        if value.type in ("cell", "text"):
            num = self.field(value, "num")
            present: M = exp.Not(this=exp.Is(this=num, expression=exp.Null()))
            if value.type == "text":  # a str reads its whole text only, never a loose number
                present = x.and_(present, x.not_(self.field(value, "loose")))
            return Q(
                present,
                num,
                self.field(value, "kind"),
                self.field(value, "dec"),
                self.field(value, "second"),
                self.field(value, "scale"),
            )
        raise ProgramExecutionError(f"a {value.type} has no number")

    def domain(self, value: Value) -> list[tuple[str, object]] | None:
        """The (text, Python value) pairs the value may take, when known."""
        if value.type == "const":
            return [(str(value.py), value.py)]
        if value.type in ("cell", "text"):
            texts = self.table.distinct_of(value.column)
            if texts is None:
                return None
            if value.type == "cell":
                return [(t, self.table.cell(value.column, t)) for t in texts]
            return [(t, t) for t in texts]
        return None

    def relation(
        self,
        a: Value,
        b: Value,
        rule: Callable[[object, object], bool],
        fallback: Callable[[Value, Value], M],
    ) -> M:
        """``rule(a, b)`` decided in Python over the texts both may take, else ``fallback`` in SQL."""
        da, db = self.domain(a), self.domain(b)
        if da is not None and db is not None and len(da) * len(db) <= MAX_PAIRS:
            if len(da) == 1 and a.type == "const":
                return _in(self.text(b), [t for t, v in db if rule(a.py, v)], len(db))
            if len(db) == 1 and b.type == "const":
                return _in(self.text(a), [t for t, v in da if rule(v, b.py)], len(da))
            whens = []
            for t, v in da:
                inner = _in(self.text(b), [u for u, w in db if rule(v, w)], len(db))
                whens.append(
                    exp.If(this=exp.EQ(this=self.text(a), expression=x.sql(t)), true=x.boolean(inner))
                )
            if not whens:
                return False
            return exp.Case(ifs=whens, default=exp.false())
        return x.boolean(fallback(a, b))

    def values_match(self, a: Value, b: Value) -> M:
        return self.relation(a, b, values_match, self._values_match_sql)

    def integer_test(self, a: Value, b: Value) -> M:
        """``values_match`` of a cell of a native integer column and a literal whole number, as
        the one comparison it comes to (the texts of two whole numbers match exactly when their
        values are equal); None when the pair is not of that kind."""
        for cell, other in ((a, b), (b, a)):
            if (
                cell.type == "cell"
                and other.type == "const"
                and self.table.kind == "native"
                and native_kind(self.table.sql_types[cell.column]) == ("number", 0)
                and _WHOLE_NUMBER.fullmatch(str(other.py).strip())
            ):
                return x.eq(self.field(cell, "num"), float(str(other.py).strip()))
        return None

    def _values_match_sql(self, a: Value, b: Value) -> M:
        shortcut = self.integer_test(a, b)
        if shortcut is not None:
            return shortcut
        texty = a.type in ("const", "cell", "text") and b.type in ("const", "cell", "text")
        text = x.and_(texty, self._text_match_sql(a, b)) if texty else False
        for literal, cell in ((a, b), (b, a)):
            if literal.type == "const" and cell.type == "cell":
                # values_match's inflection rule: the cell holds the literal's last word inflected
                forms = inflected_forms(str(literal.py))
                text = x.or_(text, *(_contains(self.norm(cell), form) for form in forms))
        qa, qb = self.quantity(a), self.quantity(b)
        for literal, other, q in ((a, b, qb), (b, a, qa)):
            start = _decade_start(literal) if other.type in ("cell", "text") else None
            if start is not None:  # values_match's decade rule: "1940s" holds 1940 to 1949
                return x.or_(text, self._in_decade_sql(start, other, q, x.numbers_equal(qa, qb)))
        return x.or_(text, x.numbers_equal(qa, qb))

    def _in_decade_sql(self, start: int, other: Value, q: Q, otherwise: M) -> M:
        """``_in_decade`` of a decade starting at ``start`` and ``other``'s quantity ``q``:
        whether its year falls in the decade, else ``otherwise`` (the number comparison) when it
        is no year or is itself written as a decade."""
        year = x.if_(x.eq(q.kind, "date"), x.date_year(q.value), q.value)
        yearly = x.and_(
            q.present,
            x.or_(
                x.and_(x.eq(q.kind, "date"), x.ge(q.value, 10000)),
                x.and_(
                    x.in_(q.kind, ("year", "number")), x.eq(q.value, x.floor(q.value)), x.le(q.decimals, 0)
                ),
            ),
            x.not_(_decade_like(self.norm(other))),
        )
        return x.if_(yearly, x.and_(x.ge(year, start), x.le(year, start + 9)), otherwise)

    def text_match(self, a: Value, b: Value) -> M:
        return self.relation(a, b, lambda p, q: text_match(text_of(p), text_of(q)), self._text_match_sql)

    def _text_match_sql(self, a: Value, b: Value) -> M:
        """Equal after normalisation, or one contains the other as whole words (no typo rule)."""
        na, nb = self.norm(a), self.norm(b)
        return x.or_(
            x.and_(x.eq(na, nb), x.ne(na, "")),
            x.and_(x.ne(nb, ""), _contains(na, nb)),
            x.and_(x.ne(na, ""), _contains(nb, na)),
        )

    def exact(self, a: Value, b: Value) -> M:
        """``normalize_text`` of both texts equal (filter_eq's preference for exact matches)."""
        return self.relation(
            a,
            b,
            lambda p, q: normalize_text(text_of(p)) == normalize_text(text_of(q)),
            lambda p, q: x.eq(self.norm(p), self.norm(q)),
        )

    def order(self, a: Value, b: Value, wanted: tuple[int, ...]) -> M:
        """``order(a, b) in wanted`` (false when they do not compare)."""
        defined, va, vb = x.order(self.quantity(a), self.quantity(b))
        tests = []
        if 1 in wanted:
            tests.append(x.gt(va, vb))
        if 0 in wanted:
            tests.append(x.eq(va, vb))
        if -1 in wanted:
            tests.append(x.lt(va, vb))
        return x.boolean(x.and_(defined, x.or_(*tests)))

    # ---- compiling -----------------------------------------------------------------------------

    def header(self, name: str) -> int:
        if self._resolver is None:
            self._resolver = Table(self.table.header, ())
        return resolve_header(self._resolver, name)

    def need_order(self, func: str) -> None:
        if not self.table.ordered:
            raise ProgramExecutionError(
                f"{func} needs the table's row order, and {self.table.name!r} has none: give the table "
                "a primary key"
            )

    def compile(self, node: Node, expected: str = "obj") -> Compiled:
        """Compile one node (memoised: a repeated subtree is one CTE)."""
        found = self._memo.get(node)
        if found is not None:
            return found
        compiled: Compiled
        if isinstance(node, AllRows):
            compiled = View(self.add_cte("v", all_rows_select(self)), where=exp.column("_data", table=ROW))
        elif isinstance(node, Literal):
            compiled = Value("const", py=node.text)
        elif isinstance(node, Header):
            compiled = Value("column", column=self.header(node.name))
        else:
            signature = FUNCTIONS[node.func]
            args = [self.compile(a, t) for a, t in zip(node.args, signature.args, strict=True)]
            compiled = SQL_FUNCTIONS[node.func](self, node, args)
            if isinstance(compiled, Value) and compiled.type == "num":
                compiled = replace(compiled, expr=self.hoist(compiled.expr))
        self._memo[node] = compiled
        return compiled

    def hoist(self, value: M) -> M:
        """A computed number as a one-row CTE, so that the rules that read it several times
        (precision equality) repeat a short reference, not its query."""
        if x.known(value) or self.inline or isinstance(value, exp.Column):
            return value
        name = self.add_cte("n", exp.select(exp.alias_(x.sql(value), "v")))
        return exp.Subquery(this=exp.select("v").from_(self.ref(name)))

    def with_ctes(self, select: exp.Select) -> exp.Select:
        """``select`` with the CTEs compiled so far (and a native base reduced to the fields the
        query reads, see :func:`prune_native`)."""
        for name, query in self.ctes.items():
            select = select.with_(name, as_=query)
        return prune_native(select, self.table)


_WHOLE_NUMBER = re.compile(r"-?\d{1,15}")

_FIELD_RE = re.compile(r"^c\d+_[a-z]+$")


def prune_native(tree: exp.Expression, table: SqlTable) -> exp.Expression:
    """Fill each native base relation of a compiled query with only the fields the query reads:
    every field of every column (with the CASE maps of distinct values) would otherwise be built,
    printed into every query and computed for every row."""
    if table.kind != "native":
        return tree
    used = {column.name for column in tree.find_all(exp.Column) if _FIELD_RE.match(column.name)}
    base = native_base(table, used)
    for select in list(tree.find_all(exp.Select)):
        if select.meta.get("native_base"):
            select.set("expressions", [p.copy() for p in base.expressions])
    return tree


def _in(text: M, options: list[str], universe: int) -> M:
    if not options:
        return False
    if len(options) == universe and not x.known(text):
        return exp.Not(this=exp.Is(this=text, expression=exp.Null()))
    if x.known(text):
        return text in options
    return exp.In(this=text, expressions=[exp.Literal.string(o) for o in options])


def _contains(haystack: M, needle: M) -> M:
    if x.known(haystack) and x.known(needle):
        return bool(needle) and f" {needle} " in f" {haystack} "
    pad = exp.Literal.string(" ")
    h = exp.DPipe(this=exp.DPipe(this=pad, expression=x.sql(haystack)), expression=pad.copy())
    n = exp.DPipe(this=exp.DPipe(this=pad.copy(), expression=x.sql(needle)), expression=pad.copy())
    return exp.GT(this=exp.StrPosition(this=h, substr=n), expression=exp.Literal.number(0))


def format_number_sql(value: M) -> M:
    """``format_number`` of a computed number: whole numbers as digits; others as the engine
    casts a double rounded to 4 decimals (may differ from Python's form: documented)."""
    from tabverify.program.values import format_number

    if x.known(value):
        return None if value is None else format_number(float(value))
    v = x.sql(value)
    whole = exp.cast(exp.cast(v.copy(), exp.DataType.build("bigint")), exp.DataType.build("text"))
    frac = exp.cast(exp.Round(this=v.copy(), decimals=exp.Literal.number(4)), exp.DataType.build("text"))
    return x.if_(exp.EQ(this=v.copy(), expression=exp.Floor(this=v.copy())), whole, frac)


def all_rows_select(c: Compiler) -> exp.Select:
    return exp.select(exp.column("_row", table=ROW)).from_(c.base()).where(exp.column("_data", table=ROW))


# ---- native tables: the base relation ----------------------------------------------------------


def native_base(table: SqlTable, fields: set[str] | None = None) -> exp.Select:
    """The derived relation a native table is read through: ``_row``, ``_data`` and the fields of
    :data:`FIELDS` per column (all of them, or the ``c<j>_<field>`` names in ``fields``), computed
    from the database's own columns and types."""
    source = exp.table_(table.name, quoted=True)
    projections: list[exp.Expression] = [exp.alias_(_native_row_key(table), "_row")]
    texts = [native_cell_text(table, j) for j in range(len(table.columns))]
    labels = [exp.Literal.string(s) for s in summary_labels()]
    # only a text column can hold the label "total" (a number or a date never does)
    labelled = [t for j, t in enumerate(texts[:2]) if native_kind(table.sql_types[j])[0] == "text"]
    summary: exp.Expression = exp.false()
    if labelled:
        summary = exp.or_(
            *(exp.Lower(this=exp.Trim(this=t.copy())).isin(*[lab.copy() for lab in labels]) for t in labelled)
        )
    # a row labelled "total" is a summary; unlike an in-memory table, a native table whose every
    # row is so labelled is not read as all data (that would need a pass over the whole table)
    projections.append(exp.alias_(exp.Not(this=exp.paren(summary.copy())), "_data"))
    for j, text in enumerate(texts):
        wanted = None if fields is None else {n for n in FIELDS if column_name(j, n) in fields}
        if wanted == set():
            continue
        cache = table._cells  # the per-table cache (keys (j, text) hold cells, (j, None) fields)
        built = cache.get((j, None))  # type: ignore[call-overload]
        if built is None:
            built = cache[(j, None)] = native_fields(table, j, text)  # type: ignore[index]
        for name, value in built.items():  # type: ignore[union-attr]
            if wanted is None or name in wanted:
                projections.append(exp.alias_(value.copy(), column_name(j, name)))
    base = exp.select(*projections).from_(source)
    base.meta["native_base"] = True
    return base


def _native_row_key(table: SqlTable) -> exp.Expression:
    """The row key of a native table, whose order is the row order: the engine's rowid, or a
    single integer primary key, as they are (no window over the table); a composite or text key
    is numbered with ROW_NUMBER (one sort of the table per query: give such a table an integer
    key for speed)."""
    if table.order_by == ("rowid",):
        return exp.column("rowid")
    if len(table.order_by) == 1:
        j = table.columns.index(table.order_by[0]) if table.order_by[0] in table.columns else -1
        if j >= 0 and native_kind(table.sql_types[j]) == ("number", 0):
            return exp.column(table.order_by[0], quoted=True)
    if table.order_by:
        order = [exp.Ordered(this=exp.column(c, quoted=True)) for c in table.order_by]
        row = exp.Window(this=exp.func("ROW_NUMBER"), order=exp.Order(expressions=order))
    else:
        row = exp.Window(this=exp.func("ROW_NUMBER"))
    return exp.Sub(this=row, expression=exp.Literal.number(1))


def native_cell_text(table: SqlTable, j: int) -> exp.Expression:
    """The cell text of a native value: integers as their digits, floats and decimals as the
    engine casts them to text, dates as ``YYYY-MM-DD`` (timestamps: their date), NULL as ''."""
    column = exp.column(table.columns[j], quoted=True)
    kind, _ = native_kind(table.sql_types[j])
    text_type = exp.DataType.build("text")
    if kind == "date":
        if table.dialect == "sqlite":
            value: exp.Expression = exp.func("STRFTIME", exp.Literal.string("%Y-%m-%d"), column)
        else:
            value = exp.cast(exp.cast(column, exp.DataType.build("date")), text_type)
    else:
        value = exp.cast(column, text_type)
    return exp.Coalesce(this=value, expressions=[exp.Literal.string("")])


def native_fields(table: SqlTable, j: int, text: exp.Expression) -> dict[str, exp.Expression]:
    """The fields of :data:`FIELDS` for native column ``j`` (see :func:`native_table`)."""
    column = exp.column(table.columns[j], quoted=True)
    kind, decimals = native_kind(table.sql_types[j])
    double = exp.DataType.build("double")
    out: dict[str, exp.Expression] = {
        "text": text.copy(),
        "norm": exp.Lower(this=exp.Trim(this=text.copy())),
        "lower": exp.Lower(this=text.copy()),
    }
    null = exp.Null()
    if kind == "number":
        present = exp.Not(this=exp.Is(this=column.copy(), expression=exp.Null()))
        out |= {
            "num": exp.cast(column.copy(), double),
            "kind": exp.Case(ifs=[exp.If(this=present, true=exp.Literal.string("number"))]),
            "dec": x.sql(decimals),
            "scale": x.sql(x.scale_of(decimals)),
            "second": exp.cast(null.copy(), double),
        }
    elif kind == "date":
        if table.dialect == "sqlite":
            parts = [
                exp.cast(exp.func("STRFTIME", exp.Literal.string(f), column.copy()), double)
                for f in ("%Y", "%m", "%d")
            ]
        else:
            parts = [
                exp.cast(exp.Extract(this=exp.var(u), expression=column.copy()), double)
                for u in ("YEAR", "MONTH", "DAY")
            ]
        num = exp.Add(
            this=exp.Add(
                this=exp.Mul(this=parts[0], expression=exp.Literal.number(10000)),
                expression=exp.Mul(this=parts[1], expression=exp.Literal.number(100)),
            ),
            expression=parts[2],
        )
        present = exp.Not(this=exp.Is(this=column.copy(), expression=exp.Null()))
        out |= {
            "num": num,
            "kind": exp.Case(ifs=[exp.If(this=present, true=exp.Literal.string("date"))]),
            "dec": x.sql(0),
            "scale": x.sql(1.0),
            "second": exp.cast(null.copy(), double),
        }
    else:
        texts = table.distinct_of(j)
        fields: dict[str, list[exp.If]] = {
            k: [] for k in ("num", "kind", "dec", "scale", "second", "loose", "oor", "norm")
        }
        if texts:
            from tabverify.program.values import out_of_range_number, quantity_of

            for t in texts:
                cell = table.cell(j, t)
                q = quantity_of(cell)
                when = exp.EQ(this=text.copy(), expression=exp.Literal.string(t))
                fields["norm"].append(exp.If(this=when.copy(), true=exp.Literal.string(normalize_text(t))))
                if q is not None:
                    for k, v in (
                        ("num", q.value),
                        ("kind", q.kind),
                        ("dec", q.decimals),
                        ("scale", x.scale_of(q.decimals)),
                        ("second", q.second),
                        ("loose", cell.quantity is None),
                    ):
                        if v is not None:
                            fields[k].append(exp.If(this=when.copy(), true=x.sql(v)))
                elif out_of_range_number(cell) is not None:
                    fields["oor"].append(exp.If(this=when.copy(), true=exp.true()))
        for k in ("num", "kind", "dec", "scale", "second"):
            out[k] = exp.Case(ifs=fields[k]) if fields[k] else x.sql(None)
        out["num"] = exp.cast(out["num"], double)
        out["second"] = exp.cast(out["second"], double)
        if fields["norm"]:
            out["norm"] = exp.Case(ifs=fields["norm"], default=out["norm"])
        for k in ("loose", "oor"):
            if fields[k]:
                out[k] = exp.Case(ifs=fields[k], default=exp.false())
    out.setdefault("loose", exp.false())
    out.setdefault("oor", exp.false())
    return {name: out[name] for name in FIELDS}


# ---- the functions -----------------------------------------------------------------------------

SqlFunction = Callable[[Compiler, Call, list[Compiled]], Compiled]
SQL_FUNCTIONS: dict[str, SqlFunction] = {}


def _register(*names: str):
    def decorator(fn: SqlFunction) -> SqlFunction:
        for name in names:
            SQL_FUNCTIONS[name] = fn
        return fn

    return decorator


def _view(a: Compiled) -> View:
    assert isinstance(a, View)
    return a


def _value(a: Compiled) -> Value:
    assert isinstance(a, Value)
    return a


def _column(a: Compiled) -> int:
    assert isinstance(a, Value) and a.type == "column"
    return a.column


def _row_value(column: int) -> Value:
    return Value("cell", column=column, source=ROW)


def _test(c: Compiler, test: str, cell: Value, value: Value) -> M:
    """A test of _FILTER_TESTS (functions.py) on the tested row's cell."""
    if test == "eq":
        return c.values_match(cell, value)
    if test == "not_eq":
        return x.not_(c.values_match(cell, value))
    if test == "str_eq":
        return c.text_match(cell, value)
    if test == "str_not_eq":
        return x.not_(c.text_match(cell, value))
    wanted = {"greater": (1,), "less": (-1,), "greater_eq": (0, 1), "less_eq": (0, -1)}[test]
    return c.order(cell, value, wanted)


def _filter_condition(c: Compiler, view: View, where: M) -> exp.Expression:
    conditions = [c.rows_of(view)]
    if not (x.known(where) and where):
        conditions.append(x.sql(x.boolean(where)))
    return exp.and_(*conditions)


def _filter_select(c: Compiler, view: View, where: M) -> exp.Select:
    condition = _filter_condition(c, view, where)
    return exp.select(exp.column("_row", table=ROW)).from_(c.base()).where(condition)


def _filter_view(c: Compiler, view: View, where: M, err: M) -> View:
    """A view of the rows of ``view`` that satisfy ``where``; it keeps a predicate of its own when
    ``view`` has one (a filter chain from all_rows)."""
    condition = _filter_condition(c, view, where)
    select = exp.select(exp.column("_row", table=ROW)).from_(c.base()).where(condition.copy())
    return View(c.add_cte("v", select), err, where=condition if view.where is not None else None)


def _make_filter(test: str) -> SqlFunction:
    def compile_filter(c: Compiler, call: Call, args: list[Compiled]) -> Compiled:
        view, column, value = _view(args[0]), _column(args[1]), _value(args[2])
        where = _test(c, test, _row_value(column), value)
        return _filter_view(c, view, where, _err_of(args))

    return compile_filter


def _make_all(test: str) -> SqlFunction:
    def compile_all(c: Compiler, call: Call, args: list[Compiled]) -> Compiled:
        view, column, value = _view(args[0]), _column(args[1]), _value(args[2])
        holds = _test(c, test, _row_value(column), value)
        value_expr = x.and_(c.exists(True, view), x.not_(c.exists(x.not_(holds), view)))
        return Value("bool", expr=value_expr, err=_err_of(args))

    return compile_all


_TESTS = ("eq", "not_eq", "str_eq", "str_not_eq", "greater", "less", "greater_eq", "less_eq")
for _t in _TESTS:
    SQL_FUNCTIONS[f"filter_{_t}"] = _make_filter(_t)
    SQL_FUNCTIONS[f"all_{_t}"] = _make_all(_t)


def _filter_eq_where(c: Compiler, view: View, column: int, value: Value) -> M:
    cell = _row_value(column)
    shortcut = c.integer_test(cell, value)
    if shortcut is not None:
        return shortcut  # exact and loose matches are the same rows: no exact-match preference
    exact = c.exact(cell, value)
    match = c.values_match(cell, value)
    if (x.known(exact) and not exact) or (not x.known(exact) and not x.known(match) and exact == match):
        return match
    return x.if_(c.exists(exact, view), x.boolean(exact), x.boolean(match))


def _filter_eq_select(c: Compiler, view: View, column: int, value: Value) -> exp.Select:
    return _filter_select(c, view, _filter_eq_where(c, view, column, value))


@_register("filter_eq")
def _filter_eq(c: Compiler, call: Call, args: list[Compiled]) -> Compiled:
    view, column, value = _view(args[0]), _column(args[1]), _value(args[2])
    return _filter_view(c, view, _filter_eq_where(c, view, column, value), _err_of(args))


@_register("filter_not_eq")
def _filter_not_eq(c: Compiler, call: Call, args: list[Compiled]) -> Compiled:
    view, column, value = _view(args[0]), _column(args[1]), _value(args[2])
    matched = c.add_cte("v", _filter_eq_select(c, view, column, value))
    outside = exp.Not(this=exp.column("_row", table=ROW).isin(query=exp.select("_row").from_(c.ref(matched))))
    return View(c.add_cte("v", _filter_select(c, view, outside)), _err_of(args))


@_register("filter_all")
def _filter_all(c: Compiler, call: Call, args: list[Compiled]) -> Compiled:
    view = _view(args[0])
    return View(view.name, _err_of(args), where=view.where)


def _short(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _numeric_err(c: Compiler, view: View, column: int) -> M:
    """The errors of ``_numeric_cells``: a number out of range in the view, or no number at all."""
    header = c.table.header[column]
    oor = exp.column(column_name(column, "oor"), table=ROW)
    num = exp.column(column_name(column, "num"), table=ROW)
    return x.if_(
        c.exists(oor, view),
        f"column {header!r}: a cell of the selected rows writes a number out of the range tabverify "
        "reads as numbers, so the column cannot be ranked or added up",
        x.if_(
            c.exists(exp.Not(this=exp.Is(this=num, expression=exp.Null())), view),
            None,
            f"column {header!r} has no numbers in the selected rows",
        ),
    )


def _ordinal(c: Compiler, n: Value) -> tuple[M, M]:
    """(n, error) of ``_ordinal``: a whole number."""
    q = c.quantity(n)
    if n.type == "const":
        if not q.present or q.value != int(q.value):
            raise ProgramExecutionError(f"{text_of(n.py)!r} is not an ordinal position")
        return float(int(q.value)), None
    bad = x.or_(x.not_(q.present), x.ne(q.value, x.floor(q.value)))
    return q.value, x.if_(bad, "the position is not an ordinal (a whole number)", None)


def _ranked(c: Compiler, view: View, column: int, largest: bool, n: M) -> str:
    """The rows of the view holding a number, ranked (largest or smallest first, ties in row order):
    a CTE of ``_row``, ``_num``, ``_kind`` and ``_rank``. For a position known now, only the ranked row itself
    (ORDER BY ... LIMIT 1 OFFSET n-1: one pass keeping the top n, where numbering every row would
    sort the whole view)."""
    num = exp.column(column_name(column, "num"), table=ROW)
    kind = exp.alias_(exp.column(column_name(column, "kind"), table=ROW), "_kind")
    key = exp.Ordered(this=num.copy(), desc=largest)
    numbers = exp.and_(c.rows_of(view), exp.Not(this=exp.Is(this=num.copy(), expression=exp.Null())))
    if x.known(n):
        select = (
            exp.select(
                exp.column("_row", table=ROW),
                exp.alias_(num.copy(), "_num"),
                kind,
                exp.alias_(x.sql(n), "_rank"),
            )
            .from_(c.base())
            .where(numbers)
            .order_by(key, exp.Ordered(this=exp.column("_row", table=ROW)))
            .limit(1)
        )
        if int(n) > 1:  # type: ignore[arg-type]
            select = select.offset(int(n) - 1)  # type: ignore[arg-type]
        return c.add_cte("r", select)
    window = exp.Window(
        this=exp.func("ROW_NUMBER"),
        order=exp.Order(expressions=[key, exp.Ordered(this=exp.column("_row", table=ROW))]),
    )
    select = (
        exp.select(
            exp.column("_row", table=ROW), exp.alias_(num.copy(), "_num"), kind, exp.alias_(window, "_rank")
        )
        .from_(c.base())
        .where(numbers)
    )
    return c.add_cte("r", select)


def _nth(c: Compiler, view: View, column: int, n: M, n_err: M, largest: bool, prior: M) -> tuple[str, M]:
    """The ranked CTE and the error of ``_nth_cell``."""
    ranked = _ranked(c, view, column, largest, n)
    num = exp.column(column_name(column, "num"), table=ROW)
    total = exp.Subquery(
        this=exp.select(exp.func("COUNT", exp.Star()))
        .from_(c.base())
        .where(exp.and_(c.rows_of(view), exp.Not(this=exp.Is(this=num, expression=exp.Null()))))
    )
    out_of = x.if_(
        x.or_(x.lt(n, 1), x.gt(n, total)),
        "asked for a ranked row beyond the rows holding numbers",
        None,
    )
    return ranked, errors(prior, n_err, _numeric_err(c, view, column), out_of)


def _rank_where(n: M) -> exp.Expression:
    return exp.EQ(this=exp.column("_rank"), expression=x.sql(n))


def _make_nth_arg(largest: bool, fixed: int | None) -> SqlFunction:
    def compile_nth_arg(c: Compiler, call: Call, args: list[Compiled]) -> Compiled:
        view, column = _view(args[0]), _column(args[1])
        n, n_err = (float(fixed), None) if fixed is not None else _ordinal(c, _value(args[2]))
        ranked, err = _nth(c, view, column, n, n_err, largest, _err_of(args))
        select = exp.select("_row").from_(c.ref(ranked)).where(_rank_where(n))
        return View(c.add_cte("v", select), err)

    return compile_nth_arg


SQL_FUNCTIONS["argmax"] = _make_nth_arg(True, 1)
SQL_FUNCTIONS["argmin"] = _make_nth_arg(False, 1)
SQL_FUNCTIONS["nth_argmax"] = _make_nth_arg(True, None)
SQL_FUNCTIONS["nth_argmin"] = _make_nth_arg(False, None)


def _make_nth_value(largest: bool) -> SqlFunction:
    def compile_nth_value(c: Compiler, call: Call, args: list[Compiled]) -> Compiled:
        view, column = _view(args[0]), _column(args[1])
        n, n_err = _ordinal(c, _value(args[2]))
        ranked, err = _nth(c, view, column, n, n_err, largest, _err_of(args))
        value = exp.Subquery(this=exp.select("_num").from_(c.ref(ranked)).where(_rank_where(n)))
        kind = exp.Subquery(this=exp.select("_kind").from_(c.ref(ranked)).where(_rank_where(n)))
        return Value("num", expr=value, err=err, kind=kind)

    return compile_nth_value


SQL_FUNCTIONS["nth_max"] = _make_nth_value(True)
SQL_FUNCTIONS["nth_min"] = _make_nth_value(False)


def _make_position(n: int) -> SqlFunction:
    def compile_position(c: Compiler, call: Call, args: list[Compiled]) -> Compiled:
        c.need_order(call.func)
        view = _view(args[0])
        row = exp.column("_row")
        select = exp.select("_row").from_(c.ref(view.name))
        if n > 0:
            select = select.order_by(row).limit(1).offset(n - 1) if n > 1 else select.order_by(row).limit(1)
        else:
            select = select.order_by(exp.Ordered(this=row, desc=True)).limit(1)
        err = x.if_(x.lt(c.count(view), max(n, 1)), "the view has too few rows for that position", None)
        return View(c.add_cte("v", select), errors(_err_of(args), err))

    return compile_position


for _n, _word in enumerate(("first", "second", "third", "fourth", "fifth"), start=1):
    SQL_FUNCTIONS[_word] = _make_position(_n)
SQL_FUNCTIONS["last"] = _make_position(-1)


def _as_double(e: exp.Expression) -> exp.Expression:
    return exp.cast(e, exp.DataType.build("double"))


@_register("count")
def _count(c: Compiler, call: Call, args: list[Compiled]) -> Compiled:
    return Value("num", expr=_as_double(c.count(_view(args[0]))), err=_err_of(args))


@_register("uniq")
def _uniq(c: Compiler, call: Call, args: list[Compiled]) -> Compiled:
    view, column = _view(args[0]), _column(args[1])
    lower = exp.column(column_name(column, "lower"), table=ROW)
    select = (
        exp.select(exp.Count(this=exp.Distinct(expressions=[lower]))).from_(c.base()).where(c.rows_of(view))
    )
    return Value("num", expr=_as_double(exp.Subquery(this=select)), err=_err_of(args))


def _make_aggregate(name: str, arithmetic: bool) -> SqlFunction:
    def compile_aggregate(c: Compiler, call: Call, args: list[Compiled]) -> Compiled:
        view, column = _view(args[0]), _column(args[1])
        num = exp.column(column_name(column, "num"), table=ROW)
        kind = exp.column(column_name(column, "kind"), table=ROW)
        if name == "avg":
            agg: exp.Expression = exp.Div(
                this=exp.func("SUM", num.copy()),
                expression=exp.Nullif(this=_as_double(exp.func("COUNT", num.copy())), expression=x.sql(0.0)),
            )
        else:
            agg = exp.func(name.upper(), num.copy())
        value = exp.Subquery(this=exp.select(agg).from_(c.base()).where(c.rows_of(view)))
        err = errors(_err_of(args), _numeric_err(c, view, column))
        if arithmetic:
            dated = c.exists(exp.EQ(this=kind, expression=exp.Literal.string("date")), view)
            err = errors(
                err,
                x.if_(
                    dated,
                    f"{name} does arithmetic, and a cell is a date: dates can be compared (max, min, "
                    "argmax, greater...) or subtracted as full dates (diff gives years), not added",
                    None,
                ),
            )
            return Value("num", expr=_as_double(value), err=err)
        # max / min: the kind of the first row (in row order) holding the extreme, as in memory
        ranked = _ranked(c, view, column, name == "max", 1.0)
        extreme_kind = exp.Subquery(this=exp.select("_kind").from_(c.ref(ranked)))
        return Value("num", expr=_as_double(value), err=err, kind=extreme_kind)

    return compile_aggregate


for _name, _arith in (("sum", True), ("avg", True), ("max", False), ("min", False)):
    SQL_FUNCTIONS[_name] = _make_aggregate(_name, _arith)


def _date_err(name: str, *qs: Q) -> M:
    dated = x.or_(*(x.and_(q.present, x.eq(q.kind, "date")) for q in qs))
    return x.if_(
        dated,
        f"{name} does arithmetic, and a value is a date: dates can be compared or subtracted as full "
        "dates (diff gives years), not added",
        None,
    )


def _number_err(c: Compiler, v: Value, q: Q) -> M:
    if v.type == "const" and not q.present:
        from tabverify.program.values import out_of_range_number

        unreadable = out_of_range_number(str(v.py))
        if unreadable is not None:
            return (
                f"{_short(unreadable)!r} is out of the range tabverify reads as numbers "
                "(magnitudes beyond 10**±300)"
            )
        return f"{_short(str(v.py))!r} is not a number"
    return x.if_(x.not_(q.present), "a value is not a number", None)


@_register("diff")
def _diff(c: Compiler, call: Call, args: list[Compiled]) -> Compiled:
    a, b = _value(args[0]), _value(args[1])
    qa, qb = c.quantity(a), c.quantity(b)
    years = x.and_(
        qa.present,
        qb.present,
        x.eq(qa.kind, "date"),
        x.eq(qb.kind, "date"),
        x.ge(qa.value, 10000),
        x.ge(qb.value, 10000),
    )
    value = x.if_(years, x.sub(x.date_year(qa.value), x.date_year(qb.value)), x.sub(qa.value, qb.value))
    err = x.if_(years, None, errors(_date_err("diff", qa, qb), _number_err(c, a, qa), _number_err(c, b, qb)))
    return Value("num", expr=value, err=errors(_err_of(args), err))


@_register("add")
def _add(c: Compiler, call: Call, args: list[Compiled]) -> Compiled:
    a, b = _value(args[0]), _value(args[1])
    qa, qb = c.quantity(a), c.quantity(b)
    err = errors(_date_err("add", qa, qb), _number_err(c, a, qa), _number_err(c, b, qb))
    return Value("num", expr=x.add(qa.value, qb.value), err=errors(_err_of(args), err))


@_register("hop", "num_hop", "str_hop")
def _hop(c: Compiler, call: Call, args: list[Compiled]) -> Compiled:
    c.need_order(call.func)
    view, column = _view(args[0]), _column(args[1])
    select = (
        exp.select("*")
        .from_(c.base())
        .where(exp.EQ(this=exp.column("_row", table=ROW), expression=c.first_row(view)))
    )
    err = x.if_(x.eq(c.count(view), 0), "hop on an empty view: the filter selected no rows", None)
    return Value("cell", column=column, source=c.add_cte("h", select), err=errors(_err_of(args), err))


@_register("most_freq")
def _most_freq(c: Compiler, call: Call, args: list[Compiled]) -> Compiled:
    view, column = _view(args[0]), _column(args[1])
    lower = exp.column(column_name(column, "lower"), table=ROW)
    counted = (
        exp.select(
            exp.column("_row", table=ROW),
            exp.alias_(
                exp.Window(this=exp.func("COUNT", exp.Star()), partition_by=[lower]),
                "_n",
            ),
        )
        .from_(c.base())
        .where(c.rows_of(view))
        .subquery("f")
    )
    best = (
        exp.select("_row")
        .from_(counted)
        .order_by(exp.Ordered(this=exp.column("_n"), desc=True), exp.column("_row"))
        .limit(1)
    )
    select = exp.select("*").from_(c.base()).where(exp.column("_row", table=ROW).isin(query=best))
    err = x.if_(x.eq(c.count(view), 0), "most_freq on an empty view", None)
    return Value("text", column=column, source=c.add_cte("m", select), err=errors(_err_of(args), err))


def _bool(expr: M, args: list[Compiled], err: M = None) -> Value:
    return Value("bool", expr=x.boolean(expr), err=errors(_err_of(args), err))


@_register("eq", "round_eq")
def _eq(c: Compiler, call: Call, args: list[Compiled]) -> Compiled:
    return _bool(c.values_match(_value(args[0]), _value(args[1])), args)


@_register("not_eq")
def _not_eq(c: Compiler, call: Call, args: list[Compiled]) -> Compiled:
    return _bool(x.not_(c.values_match(_value(args[0]), _value(args[1]))), args)


@_register("str_eq")
def _str_eq(c: Compiler, call: Call, args: list[Compiled]) -> Compiled:
    return _bool(c.text_match(_value(args[0]), _value(args[1])), args)


@_register("not_str_eq")
def _not_str_eq(c: Compiler, call: Call, args: list[Compiled]) -> Compiled:
    return _bool(x.not_(c.text_match(_value(args[0]), _value(args[1]))), args)


def _make_ordered(wanted: int) -> SqlFunction:
    def compile_ordered(c: Compiler, call: Call, args: list[Compiled]) -> Compiled:
        a, b = _value(args[0]), _value(args[1])
        qa, qb = c.quantity(a), c.quantity(b)
        defined, va, vb = x.order(qa, qb)
        holds = x.gt(va, vb) if wanted == 1 else x.lt(va, vb)
        err = x.if_(
            defined,
            None,
            errors(
                _number_err(c, a, qa), _number_err(c, b, qb), "the two values cannot be compared as numbers"
            ),
        )
        return _bool(x.and_(defined, holds), args, err)

    return compile_ordered


SQL_FUNCTIONS["greater"] = _make_ordered(1)
SQL_FUNCTIONS["less"] = _make_ordered(-1)


def _truth(v: Compiled) -> M:
    value = _value(v)
    if value.type != "bool":
        raise ProgramExecutionError("and/not need booleans")
    return value.expr


@_register("and")
def _and(c: Compiler, call: Call, args: list[Compiled]) -> Compiled:
    return _bool(x.and_(_truth(args[0]), _truth(args[1])), args)


@_register("not")
def _not(c: Compiler, call: Call, args: list[Compiled]) -> Compiled:
    return _bool(x.not_(_truth(args[0])), args)


def _make_count_test(test: Callable[[exp.Expression, Compiler], exp.Expression]) -> SqlFunction:
    def compile_count_test(c: Compiler, call: Call, args: list[Compiled]) -> Compiled:
        return _bool(test(c.count(_view(args[0])), c), args)

    return compile_count_test


def _data_count(c: Compiler) -> exp.Expression:
    return exp.Subquery(
        this=exp.select(exp.func("COUNT", exp.Star())).from_(c.base()).where(exp.column("_data", table=ROW))
    )


SQL_FUNCTIONS["only"] = _make_count_test(lambda n, c: exp.EQ(this=n, expression=x.sql(1)))
SQL_FUNCTIONS["several"] = _make_count_test(lambda n, c: exp.GT(this=n, expression=x.sql(1)))
SQL_FUNCTIONS["zero"] = _make_count_test(lambda n, c: exp.EQ(this=n, expression=x.sql(0)))
SQL_FUNCTIONS["none"] = SQL_FUNCTIONS["zero"]
SQL_FUNCTIONS["half"] = _make_count_test(
    lambda n, c: exp.LTE(
        this=exp.Abs(this=exp.Sub(this=exp.Mul(this=x.sql(2), expression=n), expression=_data_count(c))),
        expression=x.sql(1),
    )
)
SQL_FUNCTIONS["one_third"] = _make_count_test(
    lambda n, c: exp.LTE(
        this=exp.Abs(this=exp.Sub(this=exp.Mul(this=x.sql(3), expression=n), expression=_data_count(c))),
        expression=x.sql(2),
    )
)


def _make_before(after: bool) -> SqlFunction:
    def compile_before(c: Compiler, call: Call, args: list[Compiled]) -> Compiled:
        c.need_order(call.func)
        a, b = _view(args[0]), _view(args[1])
        ra, rb = c.first_row(a), c.first_row(b)
        holds = exp.GT(this=ra, expression=rb) if after else exp.LT(this=ra, expression=rb)
        empty = x.if_(x.or_(x.eq(c.count(a), 0), x.eq(c.count(b), 0)), f"{call.func}: empty view", None)
        return _bool(holds, args, empty)

    return compile_before


SQL_FUNCTIONS["before"] = _make_before(False)
SQL_FUNCTIONS["after"] = _make_before(True)


@_register("within")
def _within(c: Compiler, call: Call, args: list[Compiled]) -> Compiled:
    view, column, value = _view(args[0]), _column(args[1]), _value(args[2])
    return _bool(c.exists(c.values_match(_row_value(column), value), view), args)


@_register("samerow")
def _samerow(c: Compiler, call: Call, args: list[Compiled]) -> Compiled:
    view = _view(args[0])
    col_a, a, col_b, b = _column(args[1]), _value(args[2]), _column(args[3]), _value(args[4])
    both = x.and_(c.values_match(_row_value(col_a), a), c.values_match(_row_value(col_b), b))
    return _bool(c.exists(both, view), args)


def base_relation(table: SqlTable, fields: set[str] | None = None) -> exp.Select:
    """The relation every compiled query reads: ``_row``, ``_data`` and the fields of
    :data:`FIELDS` per column (``c0_text``, ``c0_num``...). A prepared table is that relation
    already; a native table is read through :func:`native_base` (with only ``fields``, the
    ``c<j>_<field>`` names a query reads, when given)."""
    if table.kind == "prepared":
        return exp.select("*").from_(exp.table_(table.name, quoted=True))
    return native_base(table, fields)
