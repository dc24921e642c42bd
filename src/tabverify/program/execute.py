"""Run a program on a table, returning its value and the cells it read."""

from __future__ import annotations

import math
from dataclasses import dataclass

from tabverify.errors import ProgramExecutionError
from tabverify.program.functions import Context, run_function
from tabverify.program.tree import AllRows, Call, Header, Literal, Node, check_program, parse_program
from tabverify.program.values import text_of
from tabverify.table import Cell, CellRef, Table

JsonValue = bool | int | float | str | list[int]
"""A program value as JSON holds it (see :func:`json_value`)."""


@dataclass(frozen=True)
class Execution:
    """The outcome of running a program: its value and the evidence cells it touched."""

    value: object
    evidence: frozenset[CellRef]

    @property
    def display(self) -> str:
        """The value as users see it (:func:`display_value`)."""
        return display_value(self.value)

    @property
    def json(self) -> JsonValue:
        """The value for JSON output (see :func:`json_value`)."""
        return json_value(self.value)


def display_value(value: object) -> str:
    """A program value as users see it: True/False for booleans, the text of cells and numbers,
    ``rows 1, 2`` (1-based) for views."""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, tuple):
        return f"rows {', '.join(str(r + 1) for r in value)}"
    return text_of(value)


def json_value(value: object) -> JsonValue:
    """A program value as JSON holds it: booleans stay booleans, computed numbers are numbers
    (integers when whole), cells and literals are their text as written, views are the list of
    their 0-based data rows."""
    if isinstance(value, bool):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return int(value) if value.is_integer() else value
    if isinstance(value, int):
        return value
    if isinstance(value, tuple):
        return [int(r) for r in value]
    if isinstance(value, Cell):
        return value.text
    return text_of(value)


def _loose_header(name: str) -> str:
    """A header as :func:`resolve_header` compares it: lower case, brackets and runs of spaces
    read as one space."""
    return " ".join(name.lower().replace("(", " ").replace(")", " ").split())


def resolve_header(table: Table, name: str) -> int:
    """The column a header argument names: its header written the same way, ignoring case and
    spacing (:meth:`Table.column_index`), else the one column whose header is the same once
    brackets are read as spaces ("points (pts)" for "points pts"). A prefix or part of a header
    ("w" for "week") names no column: it could as well be another one. An empty name names the
    one column whose header is empty, and no other.

    Raises:
        ProgramExecutionError: no column (or several) matches.
    """
    if not name.strip():
        # an empty name (TabFact's unnamed first columns) names the one column without a header
        empty = [i for i, h in enumerate(table.header) if not h.strip()]
        if len(empty) == 1:
            return empty[0]
        raise ProgramExecutionError(
            f"an empty column name, and the table has {len(empty)} columns without a header; "
            f"its columns are: {', '.join(table.header)}"
        )
    index = table.column_index(name)
    if index is not None:
        return index
    wanted = _loose_header(name)
    candidates = [i for i, h in enumerate(table.header) if wanted and _loose_header(h) == wanted]
    if len(candidates) == 1:
        return candidates[0]
    problem = f"{len(candidates)} columns match {name!r}" if candidates else f"no column named {name!r}"
    raise ProgramExecutionError(f"{problem}; the table's columns are: {', '.join(table.header)}")


def evaluate(node: Node, ctx: Context) -> object:
    """Evaluate one node of a checked program tree (see :func:`execute`, which checks it)."""
    if isinstance(node, AllRows):
        return ctx.table.data_row_indices
    if isinstance(node, Literal):
        return node.text
    if isinstance(node, Header):
        return resolve_header(ctx.table, node.name)
    return run_function(node.func, ctx, [evaluate(arg, ctx) for arg in node.args])


def execute(program: Call | str, table: Table) -> Execution:
    """Run a program (a tree or brace-syntax text) on a table.

    Raises:
        ProgramSyntaxError / ProgramTypeError: the text is not a valid program, or the tree is
            not one (unknown function, wrong arguments, nested too deep).
        ProgramExecutionError: the program cannot run on this table (unknown column, empty view...).
    """
    if isinstance(program, str):
        program = parse_program(program)
    else:
        check_program(program)
    ctx = Context(table, evidence=set())
    value = evaluate(program, ctx)
    assert ctx.evidence is not None
    return Execution(value, frozenset(ctx.evidence))
