"""The tables programs compile against: a :class:`SqlTable` describes where the cells are and how
each column's text, number, kind and precision are read in SQL.

Two kinds of table share one description:

- *prepared*: a :class:`~tabverify.table.Table` written once into a new DuckDB or SQLite file by
  :func:`prepare_table`, every cell stored with tabverify's own reading of it (so SQL reads exactly
  the numbers, dates, kinds, decimals and normalised text the memory executor reads);
- *native*: a table already in a user's database (:func:`native_table`), whose SQL types say what
  its values are.

Either way the compiler sees one relation (the *base*) with the positional columns of
:data:`FIELDS` per column ``j`` (``c0_text``, ``c0_num``, ...), ``_row`` (0-based position in row
order) and ``_data`` (not a "total" summary row).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from sqlglot import exp

from tabverify.errors import ProgramExecutionError
from tabverify.program.values import normalize_text, out_of_range_number, quantity_of
from tabverify.table import Cell, Table

Dialect = Literal["duckdb", "sqlite", "postgres"]
DIALECTS: tuple[str, ...] = ("duckdb", "sqlite", "postgres")

FIELDS: dict[str, str] = {
    "text": "text",  # the cell text as written (stripped)
    "norm": "text",  # normalize_text(text)
    "lower": "text",  # text.lower() (uniq and most_freq group by it)
    "num": "double",  # quantity_of(cell).value: the whole text, else its first loose number
    "kind": "text",  # the quantity's kind (number, percent, ordinal, range, date, duration, year)
    "dec": "integer",  # written decimals (-1: computed / unknown precision)
    "scale": "double",  # float(10 ** dec), the factor precision equality scales by
    "second": "double",  # the second number of a range or score
    "loose": "boolean",  # the number is the loose first number of a text cell (not the whole text)
    "oor": "boolean",  # the cell writes a number out of the range tabverify reads (1e400)
}
"""The prepared fields of each column, with their SQL types."""

META_TABLE = "_tabverify_meta"
LAYOUT_VERSION = 1
MAX_DISTINCT = 5000
"""Columns with more distinct texts than this are compiled without their distinct values."""

_SUMMARY_LABELS = ("total", "totals", "grand total", "total:", "overall", "sum", "all")
# the labels of tabverify.table.model._is_summary_row (kept equal by a test)


class QueryResultLike(Protocol):
    """What :func:`run_program` reads of a query result (``tabverify.database.QueryResult``)."""

    ok: bool
    error: str | None
    rows: Sequence[Sequence[Any]]
    columns: Sequence[str]


class DatabaseLike(Protocol):
    """What the compiler needs of a database (``tabverify.database.Database``)."""

    dialect: str

    def query(self, sql: str, *args: Any, **kwargs: Any) -> Any: ...

    def table(self, name: str) -> Any: ...


def column_name(j: int, name: str) -> str:
    """The positional column name of field ``name`` of column ``j`` (``c3_num``)."""
    return f"c{j}_{name}"


@dataclass(frozen=True)
class SqlTable:
    """A table programs compile against.

    Attributes:
        name: the table's name in the database.
        dialect: ``duckdb``, ``sqlite`` or ``postgres`` (sqlglot dialect names).
        header: the column headers programs name (resolved as the memory executor resolves them).
        column_types: ``number``, ``date`` or ``text`` per column (informative).
        kind: ``prepared`` (cells stored with tabverify's reading) or ``native``.
        distinct: per column, its distinct cell texts when known (text predicates against a
            literal are then decided in Python by the memory executor's own rule), else None.
        columns: native tables: the database's column names, by position.
        sql_types: native tables: the database's column types, by position.
        order_by: native tables: the columns giving row order (primary key), ``("rowid",)``, or
            ``()`` when the table has no order (ordinal functions are refused).
    """

    name: str
    dialect: str
    header: tuple[str, ...]
    column_types: tuple[str, ...]
    kind: Literal["prepared", "native"] = "prepared"
    distinct: tuple[tuple[str, ...] | None, ...] = ()
    columns: tuple[str, ...] = ()
    sql_types: tuple[str, ...] = ()
    order_by: tuple[str, ...] = ("_row",)
    _cells: dict[tuple[int, str], Cell] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.dialect not in DIALECTS:
            raise ValueError(f"unknown SQL dialect {self.dialect!r}; choose one of {', '.join(DIALECTS)}")
        if not self.distinct:
            object.__setattr__(self, "distinct", (None,) * len(self.header))

    @property
    def ordered(self) -> bool:
        """Does the table have a row order (first, last, hop, before... need one)?"""
        return bool(self.order_by)

    def distinct_of(self, j: int) -> tuple[str, ...] | None:
        """The distinct texts of column ``j`` when known and few enough to enumerate."""
        values = self.distinct[j]
        return values if values is not None and len(values) <= MAX_DISTINCT else None

    def cell(self, j: int, text: str) -> Cell:
        """The cell a distinct text of column ``j`` stands for (parsed as tables parse cells)."""
        key = (j, text)
        found = self._cells.get(key)
        if found is None:
            found = self._cells[key] = Cell.parse(text)
        return found

    @classmethod
    def from_prepared(cls, db: DatabaseLike, name: str = "t") -> SqlTable:
        """Reopen a table written by :func:`prepare_table` (its header and distinct values are
        read back from the file's metadata table).

        Raises:
            ProgramExecutionError: the database holds no prepared table of that name.
        """
        result = db.query(
            exp.select("value")
            .from_(exp.table_(META_TABLE, quoted=True))
            .where(exp.column("name").eq(exp.Literal.string(name)))
            .sql(dialect=db.dialect),
        )
        if not result.ok or not result.rows:
            raise ProgramExecutionError(
                f"no table {name!r} prepared by tabverify in this database ({result.error or 'no metadata'})"
            )
        meta = json.loads(result.rows[0][0])
        return cls(
            name=name,
            dialect=db.dialect,
            header=tuple(meta["header"]),
            column_types=tuple(meta["column_types"]),
            kind="prepared",
            distinct=tuple(tuple(d) for d in meta["distinct"]),
        )


def _cell_fields(cell: Cell) -> tuple[object, ...]:
    q = quantity_of(cell)
    if q is None:
        return (
            cell.text,
            normalize_text(cell.text),
            cell.text.lower(),
            None,
            None,
            None,
            None,
            None,
            False,
            out_of_range_number(cell) is not None,
        )
    return (
        cell.text,
        normalize_text(cell.text),
        cell.text.lower(),
        q.value,
        q.kind,
        q.decimals,
        float(10**q.decimals),
        q.second,
        cell.quantity is None,
        False,
    )


def prepared_rows(table: Table) -> list[tuple[object, ...]]:
    """The rows :func:`prepare_table` writes: ``_row``, ``_data``, then the fields of each column."""
    data = set(table.data_row_indices)
    out = []
    for r, row in enumerate(table.rows):
        values: list[object] = [r, r in data]
        for cell in row:
            values.extend(_cell_fields(cell))
        out.append(tuple(values))
    return out


def _create_statements(table: Table, name: str, dialect: str) -> list[str]:
    columns = [
        exp.ColumnDef(this=exp.to_identifier("_row"), kind=exp.DataType.build("bigint")),
        exp.ColumnDef(this=exp.to_identifier("_data"), kind=exp.DataType.build("boolean")),
    ]
    for j in range(table.n_columns):
        for fname, ftype in FIELDS.items():
            columns.append(
                exp.ColumnDef(this=exp.to_identifier(column_name(j, fname)), kind=exp.DataType.build(ftype))
            )
    create = exp.Create(
        this=exp.Schema(this=exp.table_(name, quoted=True), expressions=columns), kind="TABLE"
    )
    meta = exp.Create(
        this=exp.Schema(
            this=exp.table_(META_TABLE, quoted=True),
            expressions=[
                exp.ColumnDef(this=exp.to_identifier("name"), kind=exp.DataType.build("text")),
                exp.ColumnDef(this=exp.to_identifier("value"), kind=exp.DataType.build("text")),
            ],
        ),
        kind="TABLE",
        exists=True,
    )
    return [meta.sql(dialect=dialect), create.sql(dialect=dialect)]


_DUCKDB_WRITER: list[Any] = []
_DUCKDB_LOCK = threading.Lock()


def _write_duckdb(
    path: Path,
    statements: list[str],
    insert: str,
    insert_meta: str,
    rows: list[tuple[object, ...]],
    width: int,
    name: str,
    meta: str,
) -> None:
    """Write a new DuckDB file through one in-memory connection that ATTACHes it (a fresh
    connection per file costs five times as much: TabFact prepares thousands of small tables)."""
    import duckdb

    with _DUCKDB_LOCK:
        if not _DUCKDB_WRITER:
            _DUCKDB_WRITER.append(duckdb.connect(":memory:"))
        con = _DUCKDB_WRITER[0]
        target = exp.Literal.string(str(path)).sql(dialect="duckdb")
        con.execute(f"ATTACH {target} AS _tabverify_new")
        try:
            con.execute("USE _tabverify_new")
            for statement in statements:
                con.execute(statement)
            if rows:
                # one statement for every row: DuckDB's executemany prepares per row
                many = f"({', '.join('?' * width)})"
                head = insert.split(" VALUES ")[0]
                con.execute(
                    f"{head} VALUES {', '.join([many] * len(rows))}", [v for row in rows for v in row]
                )
            con.execute(insert_meta, [name, meta])
        finally:
            con.execute("USE memory")
            con.execute("DETACH _tabverify_new")


def prepare_table(table: Table, path: Path, dialect: str = "duckdb", name: str = "t") -> SqlTable:
    """Write a table into a new DuckDB or SQLite file at ``path``, every cell with tabverify's own
    reading of it (the layout of :data:`FIELDS`), and describe it.

    Raises:
        FileExistsError: ``path`` exists (the file is created, never overwritten).
        ValueError: a dialect other than duckdb or sqlite.
    """
    path = Path(path)
    if dialect not in ("duckdb", "sqlite"):
        raise ValueError(f"prepare_table writes duckdb or sqlite files, not {dialect!r}")
    if path.exists():
        raise FileExistsError(f"{path} exists; prepare_table writes a new database file")
    distinct = tuple(tuple(dict.fromkeys(c.text for c in table.column(j))) for j in range(table.n_columns))
    meta = json.dumps(
        {
            "version": LAYOUT_VERSION,
            "header": list(table.header),
            "column_types": list(table.column_types),
            "distinct": [list(d) for d in distinct],
        }
    )
    rows = prepared_rows(table)
    width = 2 + len(FIELDS) * table.n_columns
    statements = _create_statements(table, name, dialect)
    insert = (
        f"INSERT INTO {exp.table_(name, quoted=True).sql(dialect=dialect)} VALUES ({', '.join('?' * width)})"
    )
    insert_meta = f"INSERT INTO {exp.table_(META_TABLE, quoted=True).sql(dialect=dialect)} VALUES (?, ?)"
    if dialect == "duckdb":
        _write_duckdb(path, statements, insert, insert_meta, rows, width, name, meta)
    else:
        import sqlite3

        con = sqlite3.connect(str(path))
        try:
            for statement in statements:
                con.execute(statement)
            con.executemany(insert, rows)
            con.execute(insert_meta, [name, meta])
            con.commit()
        finally:
            con.close()
    return SqlTable(
        name=name,
        dialect=dialect,
        header=table.header,
        column_types=table.column_types,
        kind="prepared",
        distinct=distinct,
    )


# ---- native tables -----------------------------------------------------------------------------

_INTEGER_RE = re.compile(
    r"^(tiny|small|medium|big|huge|u?)?int(eger)?\d*|^u(tiny|small|big|huge)?int|^serial|^bigserial|^smallserial|^int\d"
)
_FLOAT_RE = re.compile(r"^(double|float|real)")
_DECIMAL_RE = re.compile(r"^(decimal|numeric)(\s*\(\s*\d+\s*,\s*(\d+)\s*\))?")
_DATE_RE = re.compile(r"^(date|timestamp|datetime)")


def native_kind(sql_type: str) -> tuple[str, int]:
    """How a native column's SQL type is read: (``number`` | ``date`` | ``text``, decimals).

    Integers are numbers with 0 decimals; DECIMAL(p, s) numbers with s decimals; floats (REAL,
    DOUBLE, FLOAT) numbers of unknown precision (-1, as a computed value: a literal is compared at
    its own precision); DATE, TIMESTAMP and DATETIME dates; anything else text.
    """
    t = sql_type.strip().lower()
    if t.startswith("bool"):
        return "text", 0
    if _INTEGER_RE.match(t):
        return "number", 0
    if _FLOAT_RE.match(t):
        return "number", -1
    m = _DECIMAL_RE.match(t)
    if m:
        return "number", int(m.group(3)) if m.group(3) else -1
    if _DATE_RE.match(t):
        return "date", 0
    return "text", 0


def native_table(
    db: DatabaseLike, name: str, distinct: Mapping[int, Sequence[str]] | None = None
) -> SqlTable:
    """Describe a table of a user's database for the compiler, from its schema.

    Numeric SQL types are numbers, DATE/TIMESTAMP dates (see :func:`native_kind`), other columns
    text, whose numbers are read only through their distinct values (``distinct[j]``: the column's
    distinct cell texts as :func:`native_cell_text` writes them) when given. Row order is the
    primary key, else the engine's rowid (DuckDB, SQLite); a PostgreSQL table without a key has
    none, and programs that need one (first, last, hop, before, after) are refused.
    """
    schema = db.table(name)
    columns = tuple(c.name for c in schema.columns)
    sql_types = tuple(str(c.type) for c in schema.columns)
    kinds = tuple(native_kind(t)[0] for t in sql_types)
    key = tuple(getattr(schema, "primary_key", ()) or ())
    if key:
        order_by = key
    elif db.dialect in ("duckdb", "sqlite"):
        order_by = ("rowid",)
    else:
        order_by = ()
    given = dict(distinct or {})
    return SqlTable(
        name=schema.name,
        dialect=db.dialect,
        header=columns,
        column_types=kinds,
        kind="native",
        distinct=tuple(tuple(given[j]) if j in given else None for j in range(len(columns))),
        columns=columns,
        sql_types=sql_types,
        order_by=order_by,
    )


def summary_labels() -> tuple[str, ...]:
    """The "total" labels that mark a summary row (as the memory table reads them)."""
    return _SUMMARY_LABELS
