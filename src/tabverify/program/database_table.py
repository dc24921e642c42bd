"""A database table as the program search sees it: the header, column types and row count, a value
index for linking, and views that are WHERE clauses run by the engine, not lists of rows.

The search builds programs node by node exactly as over an in-memory table; every function that
reads rows (filters, superlatives, aggregates, hop...) is compiled to SQL with
:mod:`tabverify.program.sql` and run through the safe query layer, so nothing is loaded whole into
Python. Functions of counts and of already-computed values (eq, greater, only, and...) run in
Python as they always do.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path

from sqlglot import exp

from tabverify.database import Database
from tabverify.database.values import ColumnValues, ValueIndex, build_value_index, cached_value_index
from tabverify.errors import ProgramExecutionError
from tabverify.program.functions import FUNCTIONS, Context
from tabverify.program.sql import SqlTable, base_relation, compile_view, run_program
from tabverify.program.tree import AllRows, Call, Header, Literal, Node
from tabverify.program.values import format_number
from tabverify.table import Cell, CellRef
from tabverify.text.linking import TableIndex

MATERIALIZE = 64
"""A view of at most this many rows is known by its row keys (two filters that select the same
rows are one view, as in memory); a larger one is known by its SQL and its row count."""
QUERY_TIMEOUT_S = 20.0
"""Longest one query of a search may run; a query that runs longer fails like a function that
cannot compute (the program is not a candidate) and the verdict's trace shows it."""

MIN_QUERY_S = 0.2
"""The shortest time limit a query of a time-bounded search gets."""
SEARCH_MILLISECONDS = 3000
"""Default time bound of the program search over a database table (``SearchLimits.max_milliseconds``):
the search keeps the programs found so far and the verdict says the bound cut it."""

# functions that read rows in table order: refused on a table that has none
_ORDERED = frozenset(
    {"first", "second", "third", "fourth", "fifth", "last", "hop", "num_hop", "str_hop", "before", "after"}
)

# functions of a view that read nothing but its size: Python answers them from the count
_COUNTED = frozenset({"count", "only", "several", "zero", "none", "half", "one_third"})


@dataclass(eq=False)
class SqlView:
    """The rows a view node selects in a database table: its node, its row count, and its row
    keys in row order when it has at most :data:`MATERIALIZE` rows."""

    node: Node
    count: int
    keys: tuple[int, ...] | None
    sql: str = ""

    def __len__(self) -> int:
        return self.count

    def __bool__(self) -> bool:
        return self.count > 0

    def __getitem__(self, index: int) -> int:
        if self.keys is None:
            raise ProgramExecutionError(f"the view has {self.count} rows; its rows are not read one by one")
        return self.keys[index]

    def __iter__(self):
        if self.keys is None:
            raise ProgramExecutionError(f"the view has {self.count} rows; its rows are not read one by one")
        return iter(self.keys)

    def _identity(self) -> object:
        return self.keys if self.keys is not None else (self.count, self.sql)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SqlView) and self._identity() == other._identity()

    def __hash__(self) -> int:
        return hash(self._identity())


class _Rows:
    """``table.rows[key]``: the cells of one row, read by key when first asked for (cached)."""

    def __init__(self, table: DatabaseTable) -> None:
        self.table = table
        self.cache: dict[int, tuple[Cell, ...]] = {}

    def fetch(self, keys: Sequence[int]) -> None:
        """Read the rows with these keys in one query (the ones not read yet)."""
        missing = sorted({int(k) for k in keys if k not in self.cache})
        for start in range(0, len(missing), 500):
            chunk = missing[start : start + 500]
            t = self.table
            select = (
                exp.select(exp.column("_row"), *(exp.column(f"c{j}_text") for j in range(t.n_columns)))
                .from_(
                    exp.Subquery(
                        this=base_relation(t.sql_table, {f"c{j}_text" for j in range(t.n_columns)}),
                        alias=exp.TableAlias(this=exp.to_identifier("b")),
                    )
                )
                .where(exp.column("_row").isin(*(exp.Literal.number(k) for k in chunk)))
            )
            for row in t.select(select, len(chunk)):
                self.cache[int(row[0])] = tuple(
                    Cell.parse("" if value is None else str(value)) for value in row[1:]
                )
            for k in chunk:
                self.cache.setdefault(k, tuple(Cell("") for _ in range(t.n_columns)))

    def __getitem__(self, key: int) -> tuple[Cell, ...]:
        if key not in self.cache:
            self.fetch([key])
        return self.cache[key]

    def __len__(self) -> int:
        return self.table.n_rows


@dataclass
class DatabaseTable:
    """A database table for the search and the verifier (see the module docstring).

    Attributes:
        db: the open database (read through :meth:`Database.query` only).
        sql_table: how programs compile against the table.
        index: its value index.
        python_rows: a function of views of at most this many rows (at most :data:`MATERIALIZE`)
            reads those rows once and computes in Python, exactly as the in-memory executor; 0
            computes every function in SQL.
        deadline: ``time.monotonic()`` when the running search's time bound is spent (0: none);
            queries get only the time left, so one slow query cannot overrun the bound.
        trace: every query run for it so far, as ``(sql, rows returned, seconds, error)`` (the
            verifier takes each statement's share).
    """

    db: Database
    sql_table: SqlTable
    index: ValueIndex
    caption: str = ""
    python_rows: int = MATERIALIZE
    deadline: float = 0.0
    trace: list[tuple[str, int | None, float, str | None]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.rows = _Rows(self)
        self._views: dict[str, SqlView] = {}
        self._values: dict[str, object] = {}

    @property
    def name(self) -> str:
        """The table's name in the database."""
        return self.sql_table.name

    @property
    def header(self) -> tuple[str, ...]:
        """The column names."""
        return self.sql_table.header

    @property
    def n_columns(self) -> int:
        """Number of columns."""
        return len(self.sql_table.header)

    @property
    def n_rows(self) -> int:
        """Number of rows (summary rows included), from the value index."""
        return self.index.n_rows

    @cached_property
    def column_types(self) -> tuple[str, ...]:
        """``number``, ``date`` or ``text`` per column, as the compiler reads them."""
        return self.sql_table.column_types

    def column_index(self, name: str) -> int | None:
        """The index of the column called ``name`` (case- and space-insensitive), or None."""
        wanted = " ".join(name.lower().split())
        for i, header in enumerate(self.header):
            if " ".join(header.lower().split()) == wanted:
                return i
        return None

    @cached_property
    def linking_index(self) -> TableIndex:
        """The linker's index, built from the value index (never from the rows)."""
        return TableIndex(self.header, self.index.n_rows, self.index.entries())

    @cached_property
    def data_row_indices(self) -> SqlView:
        """The data rows (all rows but "total" summaries) as a view. Counted with the full query
        time limit even inside a time-bounded search: every program starts from it."""
        deadline, self.deadline = self.deadline, 0.0
        try:
            return self.view(AllRows())
        finally:
            self.deadline = deadline

    def row_texts(self, keys: Sequence[int]) -> dict[int, list[str]]:
        """The cell texts of the rows with these keys (one query)."""
        self.rows.fetch(keys)
        return {k: [c.text for c in self.rows[k]] for k in keys}

    # ---- queries -------------------------------------------------------------------------------

    def query_timeout(self) -> float:
        """The time limit of the next query: :data:`QUERY_TIMEOUT_S`, or what is left of
        :attr:`deadline` (at least :data:`MIN_QUERY_S`) while a time-bounded search runs."""
        if not self.deadline:
            return QUERY_TIMEOUT_S
        return min(QUERY_TIMEOUT_S, max(MIN_QUERY_S, self.deadline - time.monotonic()))

    def select(self, query: exp.Expression, max_rows: int) -> list[tuple[object, ...]]:
        """Run a query through the safe layer, recording it in :attr:`trace`.

        Raises:
            ProgramExecutionError: the query failed (the message says why).
        """
        result = self.db.query(query, max_rows=max_rows, max_bytes=50_000_000, timeout_s=self.query_timeout())
        self.trace.append((result.sql, len(result.rows), result.elapsed_s, result.error))
        if not result.ok:
            raise ProgramExecutionError(f"the query failed: {result.error}")
        return [tuple(row) for row in result.rows]

    def view(self, node: Node) -> SqlView:
        """The rows a view node selects: its count and, when few, its keys (one query, cached)."""
        select = compile_view(node, self.sql_table)
        sql = select.sql(dialect=self.db.dialect)
        cached = self._views.get(sql)
        if cached is not None:
            return cached
        # the count first (the engine counts without keeping the rows), the keys only when few
        inner = exp.Subquery(this=select, alias=exp.TableAlias(this=exp.to_identifier("v")))
        count = int(self.select(exp.select(exp.func("count", exp.Star())).from_(inner.copy()), 1)[0][0])  # type: ignore[arg-type]
        keys = None
        if count <= MATERIALIZE:
            rows = self.select(exp.select(exp.column("_row")).from_(inner).limit(MATERIALIZE), MATERIALIZE)
            keys = tuple(int(r[0]) for r in rows)  # type: ignore[arg-type]
        view = SqlView(node, count, keys, sql)
        self._views[sql] = view
        return view

    def value(self, node: Call) -> object:
        """The value of a node that returns a number, a cell or a boolean (one query, cached)."""
        key = str(node)
        if key in self._values:
            found = self._values[key]
            if isinstance(found, ProgramExecutionError):
                raise found
            return found
        started = time.perf_counter()
        try:
            execution = run_program(node, self.db, self.sql_table, timeout_s=self.query_timeout())
        except ProgramExecutionError as exc:
            self.trace.append((key, None, time.perf_counter() - started, str(exc)))
            if "timeout" not in str(exc):  # a query cut by the search's time bound may run later
                self._values[key] = exc
            raise
        self.trace.append((execution.sql, 1, time.perf_counter() - started, None))
        self._values[key] = execution.value
        return execution.value

    # ---- the search's backend ------------------------------------------------------------------

    def _node(self, value: object) -> Node:
        if isinstance(value, SqlView):
            return value.node
        if isinstance(value, bool):
            raise ProgramExecutionError("a boolean cannot be an argument here")
        if isinstance(value, int):
            return Header(self.header[value])
        if isinstance(value, Cell):
            return Literal(value.text)
        if isinstance(value, float):
            return Literal(format_number(value))
        return Literal(str(value))

    def run_function(self, name: str, args: Sequence[object]) -> object:
        """Apply a function whose arguments include a view: in SQL, or from the view's row count.
        Returns :data:`NotImplemented` for functions Python computes from values alone."""
        if name in _ORDERED and not self.sql_table.ordered:
            # refused here too, not only when compiled: a small view computed in Python would
            # otherwise find a program that the SQL evidence then refuses
            raise ProgramExecutionError(
                f"{name} needs the table's row order, and {self.name!r} has none: give the table a primary key"
            )
        views = [a for a in args if isinstance(a, SqlView)]
        if not views:
            return NotImplemented
        if name in _COUNTED:
            n = views[0].count
            total = self.data_row_indices.count
            return {
                "count": float(n),
                "only": n == 1,
                "several": n > 1,
                "zero": n == 0,
                "none": n == 0,
                "half": abs(2 * n - total) <= 1,
                "one_third": abs(3 * n - total) <= 2,
            }[name]
        if all(v.keys is not None and v.count <= self.python_rows for v in views):
            # a few rows: read them once (cached) and compute as the in-memory executor does; the
            # views this returns are row keys, and the functions over them stay in Python
            self.rows.fetch([k for v in views for k in v.keys or ()])
            plain = [a.keys if isinstance(a, SqlView) else a for a in args]
            return FUNCTIONS[name].impl(Context(self), *plain)  # type: ignore[arg-type]
        node = Call(name, tuple(self._node(a) for a in args))
        if FUNCTIONS[name].returns == "view":
            return self.view(node)
        return self.value(node)

    # ---- evidence ------------------------------------------------------------------------------

    @property
    def source(self) -> str:
        """Where the table lives, for verdicts: ``target : table``."""
        return f"{self.db.target} : {self.name}"

    def first_keys(self, node: Node, limit: int) -> tuple[int, ...]:
        """The keys of the first ``limit`` rows (in row order) a view node selects."""
        inner = exp.Subquery(
            this=compile_view(node, self.sql_table), alias=exp.TableAlias(this=exp.to_identifier("v"))
        )
        rows = self.select(exp.select(exp.column("_row")).from_(inner).limit(limit), limit)
        return tuple(int(r[0]) for r in rows)  # type: ignore[arg-type]

    def evidence(self, program: Call, rows_per_view: int = 20) -> tuple[object, frozenset[CellRef], str]:
        """Run a program for a verdict: its value (as JSON holds it), the cells it read, and its SQL.

        The cells are, for each function that reads a column, that column in the rows it read:
        the rows a filter or superlative kept, the first row a hop read, the rows an aggregate
        added up - at most ``rows_per_view`` rows each (the SQL is the full evidence).

        Raises:
            ProgramExecutionError: the program cannot run on the table.
        """
        started = time.perf_counter()
        execution = run_program(program, self.db, self.sql_table, timeout_s=QUERY_TIMEOUT_S)
        self.trace.append((execution.sql, 1, time.perf_counter() - started, None))
        cells: set[CellRef] = set()
        for node in program.walk():
            if not isinstance(node, Call):
                continue
            columns = [self.column_index(a.name) for a in node.args if isinstance(a, Header)]
            columns = [c for c in columns if c is not None]
            if not columns or not isinstance(node.args[0], (Call, AllRows)):
                continue
            signature = FUNCTIONS[node.func]
            if signature.args[0] != "view":
                continue
            if signature.returns == "view":
                keys = self.first_keys(node, rows_per_view)
            elif node.func in ("hop", "num_hop", "str_hop"):
                keys = self.first_keys(node.args[0], 1)
            else:
                keys = self.first_keys(node.args[0], rows_per_view)
            cells.update(CellRef(k, c) for k in keys for c in columns)
        return execution.json, frozenset(cells), execution.sql


def _unshadowed_row_order(db: Database, sql_table: SqlTable) -> SqlTable:
    """A native table ordered by the engine's rowid, but with a column of its own named ``rowid``
    (which hides the engine's): SQLite's rowid is still ``_rowid_`` or ``oid`` when those names are
    free; otherwise the table has no row order (like a PostgreSQL table without a key) - never the
    user's column, whose NULLs and repeats would make row keys that are not keys."""
    names = {c.lower() for c in sql_table.columns}
    if sql_table.order_by != ("rowid",) or "rowid" not in names:
        return sql_table
    alias = next((a for a in ("_rowid_", "oid") if a not in names), None) if db.dialect == "sqlite" else None
    return replace(sql_table, order_by=(alias,) if alias else ())


def open_table(
    db: Database,
    name: str,
    cache_dir: Path | None = None,
    cache: bool = True,
    progress: Callable[[int, int], None] | None = None,
    python_rows: int = MATERIALIZE,
) -> DatabaseTable:
    """A table of an open database, ready for the verifier: its description for the compiler
    (a prepared table when the database holds tabverify's layout, else the native table) and its
    value index, read from the cache folder or built now (and saved there when ``cache``).

    Raises:
        DatabaseError: no such table, or the index could not be built.
    """
    from tabverify.program.sql import native_table

    schema = db.table(name)
    try:
        sql_table = SqlTable.from_prepared(db, schema.name)
    except Exception:  # noqa: BLE001 - not tabverify's layout: a native table
        sql_table = native_table(db, schema.name)

    if sql_table.kind == "native":
        sql_table = _unshadowed_row_order(db, sql_table)

    def build() -> ValueIndex:
        numeric = tuple(kind in ("number", "date") for kind in sql_table.column_types)
        if sql_table.kind == "prepared":
            fields = {f"c{j}_{f}" for j in range(len(sql_table.header)) for f in ("text", "num")}
            return build_value_index(
                db, base_relation(sql_table, fields), schema.name, sql_table.header, numeric, progress
            )
        # a native table: one column at a time, through a relation of that column alone (a base of
        # every column in every query made a wide table's index quadratic: 300 columns took minutes)
        columns: list[ColumnValues] = []
        built: ValueIndex | None = None
        for j, header in enumerate(sql_table.header):
            base = base_relation(sql_table, {f"c{j}_text", f"c{j}_num"})
            base.set("expressions", [e for e in base.expressions if e.alias_or_name != "_data"])
            renamed = exp.select(
                exp.column("_row"),
                exp.column(f"c{j}_text").as_("c0_text"),
                *([exp.column(f"c{j}_num").as_("c0_num")] if numeric[j] else []),
            ).from_(exp.Subquery(this=base, alias=exp.TableAlias(this=exp.to_identifier("n"))))
            built = build_value_index(db, renamed, schema.name, (header,), (numeric[j],))
            columns.extend(built.columns)
            if progress is not None:
                progress(j + 1, len(sql_table.header))
        if built is None:
            return build_value_index(db, base_relation(sql_table, set()), schema.name, (), (), progress)
        return replace(built, columns=tuple(columns))

    n_rows = schema.row_count if schema.row_count is not None else -1
    index = cached_value_index(db, schema.name, n_rows, build, cache_dir)[0] if cache else build()
    if sql_table.kind == "native":
        sql_table = _unshadowed_row_order(db, native_table(db, schema.name, distinct=index.distinct_texts()))
    return DatabaseTable(db, sql_table, index, python_rows=min(python_rows, MATERIALIZE))
