"""The value index of a database table: each column's distinct values with their counts and first
rows, and its number range - built once per table with a few aggregate queries, saved in a cache
folder, and reused so that linking a statement never scans the table.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from sqlglot import exp

from tabverify.database.core import Database
from tabverify.errors import DatabaseError
from tabverify.files import read_json
from tabverify.table import CellRef

INDEX_VERSION = 1
MAX_VALUES = 20_000
"""Distinct values kept per column (the most frequent ones); a column with more is marked
incomplete, and text predicates on it are compiled without its value list."""
FULL_ROWS = 100_000
"""Tables up to this many rows keep every row of every value (the linker then sees each cell, as
for an in-memory table); larger ones keep each value's first row and its count."""
BUILD_TIMEOUT_S = 300.0
"""Longest one index query may run."""


@dataclass(frozen=True, slots=True)
class ValueEntry:
    """One distinct value of a column: its text as the compiler writes cells, how many rows hold
    it, and the row keys of the first of them (all of them on tables up to :data:`FULL_ROWS`)."""

    text: str
    count: int
    rows: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class ColumnValues:
    """What the index knows of one column.

    Attributes:
        name: the column's header.
        values: distinct values, most frequent first (ties in table order), at most :data:`MAX_VALUES`.
        distinct: how many distinct values the column has.
        complete: ``values`` lists every distinct value.
        minimum / maximum: the column's number range (numbers and dates), None for text.
    """

    name: str
    values: tuple[ValueEntry, ...]
    distinct: int
    complete: bool
    minimum: float | None = None
    maximum: float | None = None


@dataclass(frozen=True)
class ValueIndex:
    """The value index of one table (see the module docstring).

    Attributes:
        table: the table's name.
        fingerprint: what the index was built from (target, table, size and time of the file or
            the row count of a server table); a cached index whose fingerprint differs is rebuilt.
        n_rows: the table's row count.
        columns: per column, in header order.
        build_s: seconds the build took.
    """

    table: str
    fingerprint: str
    n_rows: int
    columns: tuple[ColumnValues, ...]
    build_s: float = 0.0

    def distinct_texts(self) -> dict[int, tuple[str, ...]]:
        """The complete distinct value lists, by column (what the compiler decides text
        predicates over)."""
        return {j: tuple(v.text for v in c.values) for j, c in enumerate(self.columns) if c.complete}

    def entries(self):  # -> list[CellEntry]; imported lazily: text depends on nothing here
        """The index as the linker reads it (:class:`tabverify.text.linking.CellEntry` per value)."""
        from tabverify.text.linking import CellEntry

        return [
            CellEntry(j, v.text, tuple(CellRef(r, j) for r in v.rows), v.count)
            for j, column in enumerate(self.columns)
            for v in column.values
        ]

    def to_json(self) -> dict[str, object]:
        """The index as JSON (what :meth:`save` writes)."""
        return {"version": INDEX_VERSION, **asdict(self)}

    @classmethod
    def from_json(cls, data: object) -> ValueIndex:
        """Read an index written by :meth:`to_json`.

        Raises:
            DatabaseError: the JSON is not an index of this version.
        """
        try:
            assert isinstance(data, dict) and data.get("version") == INDEX_VERSION
            columns = tuple(
                ColumnValues(
                    str(c["name"]),
                    tuple(ValueEntry(str(v[0]), int(v[1]), tuple(int(r) for r in v[2])) for v in c["values"]),
                    int(c["distinct"]),
                    bool(c["complete"]),
                    None if c["minimum"] is None else float(c["minimum"]),
                    None if c["maximum"] is None else float(c["maximum"]),
                )
                for c in data["columns"]
            )
            return cls(
                str(data["table"]),
                str(data["fingerprint"]),
                int(data["n_rows"]),
                columns,
                float(data["build_s"]),
            )
        except (AssertionError, KeyError, TypeError, ValueError, IndexError) as exc:
            raise DatabaseError(f"not a tabverify value index (version {INDEX_VERSION}): {exc}") from None

    def save(self, path: Path) -> None:
        """Write the index atomically (a temporary file renamed over ``path``)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        data = self.to_json()
        data["columns"] = [
            {
                **{k: v for k, v in asdict(c).items() if k != "values"},
                "values": [[v.text, v.count, list(v.rows)] for v in c.values],
            }
            for c in self.columns
        ]
        partial = path.with_name(f".{path.name}.{os.getpid()}.part")
        partial.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
        os.replace(partial, path)


def fingerprint(db: Database, table: str, n_rows: int) -> str:
    """What identifies a table's content for the cache: the file's path, size and modification
    time (files), or the server target and the row count (PostgreSQL)."""
    parts = [db.dialect, db.target, table, str(n_rows)]
    path = Path(db.target)
    if db.dialect != "postgres" and path.exists():
        info = path.stat()
        parts += [str(path.resolve()), str(info.st_size), str(info.st_mtime_ns)]
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:32]


def default_cache_dir() -> Path:
    """Where value indexes are kept: ``$TABVERIFY_CACHE`` or ``$XDG_CACHE_HOME/tabverify`` (by
    default ``~/.cache/tabverify``), folder ``values``. The database itself is never written."""
    root = os.environ.get("TABVERIFY_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "tabverify"
    )
    return Path(root) / "values"


def _rows(db: Database, query: exp.Expression, max_rows: int) -> list[tuple[object, ...]]:
    result = db.query(
        query.sql(dialect=db.dialect), max_rows=max_rows, max_bytes=200_000_000, timeout_s=BUILD_TIMEOUT_S
    )
    if not result.ok:
        raise DatabaseError(f"building the value index of {db.target}: {result.error}")
    return [tuple(row) for row in result.rows]


def build_value_index(
    db: Database,
    base: exp.Expression,
    table: str,
    header: tuple[str, ...],
    numeric: tuple[bool, ...],
    progress: Callable[[int, int], None] | None = None,
) -> ValueIndex:
    """Build the value index of a table with aggregate queries, one column at a time.

    ``base`` is the table as the program compiler sees it (a relation with ``c<j>_text``,
    ``c<j>_num`` and ``_row`` columns, see :mod:`tabverify.program.sql`); ``numeric`` says which
    columns get a number range. ``progress(done, total)`` is called after each column.

    Raises:
        DatabaseError: a query failed or ran past :data:`BUILD_TIMEOUT_S`.
    """
    started = time.perf_counter()
    source = exp.Subquery(this=base, alias=exp.TableAlias(this=exp.to_identifier("b")))
    n_rows = int(_rows(db, exp.select("count(*)").from_(source.copy()), 1)[0][0])
    columns = []
    for j, name in enumerate(header):
        text = exp.column(f"c{j}_text")
        counted = (
            exp.select(
                text.copy(),
                exp.func("count", exp.Star()).as_("n"),
                exp.func("min", exp.column("_row")).as_("f"),
            )
            .from_(source.copy())
            .where(exp.Not(this=exp.Is(this=text.copy(), expression=exp.Null())))
            .group_by(text.copy())
        )
        distinct = int(
            _rows(
                db,
                exp.select("count(*)").from_(
                    exp.Subquery(this=counted.copy(), alias=exp.TableAlias(this=exp.to_identifier("d")))
                ),
                1,
            )[0][0]
        )
        top = _rows(
            db,
            counted.order_by(exp.Ordered(this=exp.column("n"), desc=True), exp.column("f")).limit(MAX_VALUES),
            MAX_VALUES,
        )
        rows_of: dict[str, list[int]] = {}
        if n_rows <= FULL_ROWS:
            for value, row in _rows(
                db,
                exp.select(text.copy(), exp.column("_row"))
                .from_(source.copy())
                .where(exp.Not(this=exp.Is(this=text.copy(), expression=exp.Null())))
                .order_by(exp.column("_row")),
                FULL_ROWS,
            ):
                rows_of.setdefault(str(value), []).append(int(row))  # type: ignore[arg-type]
        values = tuple(
            ValueEntry(str(value), int(count), tuple(rows_of.get(str(value), [int(first)])))  # type: ignore[arg-type]
            for value, count, first in top
        )
        minimum = maximum = None
        if numeric[j]:
            low, high = _rows(
                db,
                exp.select(
                    exp.func("min", exp.column(f"c{j}_num")), exp.func("max", exp.column(f"c{j}_num"))
                ).from_(source.copy()),
                1,
            )[0]
            minimum = None if low is None else float(low)  # type: ignore[arg-type]
            maximum = None if high is None else float(high)  # type: ignore[arg-type]
        columns.append(ColumnValues(name, values, distinct, distinct <= MAX_VALUES, minimum, maximum))
        if progress is not None:
            progress(j + 1, len(header))
    return ValueIndex(
        table, fingerprint(db, table, n_rows), n_rows, tuple(columns), time.perf_counter() - started
    )


def cached_value_index(
    db: Database,
    table: str,
    n_rows: int,
    build: Callable[[], ValueIndex],
    cache_dir: Path | None = None,
) -> tuple[ValueIndex, bool]:
    """The table's value index from the cache folder when it is there and current, else built with
    ``build()`` and saved. Returns the index and whether it was built now.

    A cache folder that cannot be written is not an error: the index is used unsaved (and rebuilt
    next time).
    """
    folder = cache_dir or default_cache_dir()
    key = fingerprint(db, table, n_rows)
    path = folder / f"{key}.json"
    if path.is_file():
        try:
            index = ValueIndex.from_json(read_json(path))
            if index.fingerprint == key:
                return index, False
        except Exception:  # noqa: BLE001 - a damaged cache file is rebuilt, never trusted
            pass
    index = build()
    try:
        index.save(path)
    except OSError:
        pass
    return index, True
