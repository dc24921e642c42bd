"""Compile a whole program into one query, run it through a database, decode its value."""

from __future__ import annotations

import math
from dataclasses import dataclass

from sqlglot import exp

from tabverify.errors import ProgramExecutionError
from tabverify.program.execute import JsonValue, display_value, json_value
from tabverify.program.sql import expr as x
from tabverify.program.sql.compiler import Compiled, Compiler, Value, View, prune_native
from tabverify.program.sql.table import DatabaseLike, SqlTable
from tabverify.program.tree import Call, Node, check_program, parse_program
from tabverify.program.values import text_of
from tabverify.table import Cell

MAX_VIEW_ROWS = 100_000
"""Most rows of a view :func:`run_program` reads back (a larger view is an error)."""


@dataclass(frozen=True)
class CompiledProgram:
    """A program compiled to one query: its SQL, and how to decode the result's value column."""

    sql: str
    type: str  # view, bool, num, cell, text
    query: exp.Select


def _checked(program: Call | str) -> Call:
    if isinstance(program, str):
        return parse_program(program)
    check_program(program)
    return program


def _value_expr(c: Compiler, value: Value) -> exp.Expression:
    if value.type == "bool":
        return x.sql(x.boolean(value.expr))
    if value.type == "num":
        return x.sql(value.expr)
    if value.type in ("cell", "text"):
        return c.field(value, "text")
    return x.sql(text_of(value.py))


def compile_query(program: Call | str, table: SqlTable) -> CompiledProgram:
    """Compile a program to one SELECT: columns ``error`` (a message when the memory executor would
    raise, else NULL) and ``value`` (one row), or ``error`` and ``_row`` (one row per row of the
    view, in order; one row with a NULL ``_row`` when the view is empty) for a view.

    Raises:
        ProgramSyntaxError / ProgramTypeError: not a valid program.
        ProgramExecutionError: the program cannot run on this table whatever its rows (an unknown
            column, a position that is no ordinal, an ordinal function on a table without order).
    """
    tree = _checked(program)
    c = Compiler(table)
    compiled: Compiled = c.compile(tree)
    err = x.sql(compiled.err)
    if isinstance(compiled, View):
        head = exp.select(exp.alias_(err, "error")).subquery("e")
        select = (
            exp.select(exp.column("error", table="e"), exp.column("_row", table="w"))
            .from_(head)
            .join(c.ref(compiled.name, alias="w"), on=exp.true(), join_type="left")
            .order_by(exp.column("_row", table="w"))
        )
        kind = "view"
    else:
        select = exp.select(exp.alias_(err, "error"), exp.alias_(_value_expr(c, compiled), "value"))
        kind = compiled.type
    select = c.with_ctes(select)
    return CompiledProgram(select.sql(dialect=table.dialect), kind, select)


def compile_program(program: Call | str, table: SqlTable) -> str:
    """The one query (in the table's dialect) that computes the program's value and its error
    (see :func:`compile_query` for its columns)."""
    return compile_query(program, table).sql


def compile_view(node: Node, table: SqlTable) -> exp.Select:
    """``SELECT _row`` of a view node (its row keys: 0-based positions in row order), ordered,
    with the CTEs it needs. Errors the node would raise are not part of it (use
    :func:`compile_program` for those)."""
    c = Compiler(table)
    compiled = c.compile(node, "view")
    if not isinstance(compiled, View):
        raise ProgramExecutionError(f"{node} is not a view")
    select = exp.select("_row").from_(c.ref(compiled.name)).order_by("_row")
    return c.with_ctes(select)


def compile_value(node: Node, table: SqlTable) -> exp.Expression:
    """A scalar or boolean node as one self-contained expression (its views inlined as
    subqueries): a boolean predicate, a number, or the text of a cell. Errors are not part of it."""
    c = Compiler(table, inline=True)
    compiled = c.compile(node)
    if isinstance(compiled, View) or compiled.type == "column":
        raise ProgramExecutionError(f"{node} is not a value")
    return prune_native(_value_expr(c, compiled), table)


@dataclass(frozen=True)
class SqlExecution:
    """The outcome of running a program in a database: its value (the Python types of
    :class:`tabverify.program.Execution`: bool, float, Cell for hop, str for most_freq, a tuple of
    row keys for a view), and the SQL that computed it."""

    value: object
    sql: str
    elapsed_s: float = 0.0

    @property
    def json(self) -> JsonValue:
        """The value for JSON output (as :attr:`Execution.json`)."""
        return json_value(self.value)

    @property
    def display(self) -> str:
        """The value as users see it (as :attr:`Execution.display`)."""
        return display_value(self.value)


def decode(compiled: CompiledProgram, rows: list[tuple]) -> object:
    """The Python value of a query's rows (see :func:`compile_query`).

    Raises:
        ProgramExecutionError: the query reported an error, or a number that is not finite.
    """
    if not rows:
        raise ProgramExecutionError("the program's query returned no row")
    error = rows[0][0]
    if error is not None:
        raise ProgramExecutionError(str(error))
    if compiled.type == "view":
        return tuple(int(r[1]) for r in rows if r[1] is not None)
    value = rows[0][1]
    if compiled.type == "bool":
        return bool(value)
    if compiled.type == "num":
        if value is None:
            raise ProgramExecutionError("the program's value is undefined (NULL)")
        number = float(value)
        if not math.isfinite(number):
            raise ProgramExecutionError(f"the result overflows ({number}, not a finite number)")
        return number
    if compiled.type == "cell":
        return Cell.parse("" if value is None else str(value))
    return "" if value is None else str(value)


def run_program(
    program: Call | str, db: DatabaseLike, table: SqlTable, timeout_s: float = 10
) -> SqlExecution:
    """Compile a program, run its one query through ``db.query`` and decode the value.

    Raises:
        ProgramSyntaxError / ProgramTypeError: not a valid program.
        ProgramExecutionError: the program cannot run on this table (the same cases as the
            memory executor: an empty view for hop, a column without numbers...), or the query
            failed in the database (its message).
    """
    compiled = compile_query(program, table)
    result = db.query(compiled.sql, max_rows=MAX_VIEW_ROWS, timeout_s=timeout_s)
    if not result.ok:
        raise ProgramExecutionError(f"the program's query failed: {result.error}")
    if getattr(result, "truncated", False):
        raise ProgramExecutionError(
            f"the program's view has more than {MAX_VIEW_ROWS:,} rows; count or aggregate it instead"
        )
    value = decode(compiled, [tuple(r) for r in result.rows])
    return SqlExecution(value, compiled.sql, float(getattr(result, "elapsed_s", 0.0) or 0.0))
