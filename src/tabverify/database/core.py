"""The engine-independent half of a database: argument checks, the parser layer, caps, error kinds,
the follow-up row count, the cached schema. Engines (``duck``, ``lite``, ``pg``) fill in the rest."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from sqlglot import exp

from tabverify.database.result import QueryResult, check_limits, collect
from tabverify.database.safety import Checked, check
from tabverify.database.schema import Schema, TableSchema, attach_descriptions
from tabverify.errors import DatabaseError
from tabverify.text.normalize import one_line

COUNT_TIMEOUT_S = 5.0
"""How long :meth:`Database.schema` waits for one table's ``COUNT(*)`` before leaving it unknown."""


class QueryTimeout(Exception):
    """Raised inside an engine when the deadline passed (turned into error_kind "timeout")."""


class EngineRefusal(Exception):
    """Raised inside an engine by its own statement check (turned into error_kind "refused")."""


def batches(
    fetchmany: Callable[[int], Sequence[Sequence[object]]], limit: int
) -> Iterator[Sequence[Sequence[object]]]:
    """Batches from a cursor's ``fetchmany`` until ``limit`` rows were read or the rows ran out."""
    left = limit
    while left > 0:
        batch = fetchmany(min(left, 1000))
        if not batch:
            return
        left -= len(batch)
        yield batch


class Database:
    """One open database, read-only. Use :func:`tabverify.database.connect` to get one.

    :meth:`query` is the only way tabverify reads a database: it never raises for a bad query (the
    error comes back in the :class:`QueryResult`), and it is safe to call from several threads
    (queries on one database run one at a time).
    """

    dialect: str = ""

    def __init__(self, target: str, descriptions: Path | None = None, descriptions_explicit: bool = False):
        self.target = target
        self._descriptions = descriptions
        self._descriptions_explicit = descriptions_explicit
        self._lock = threading.RLock()
        self._schema: Schema | None = None
        self._closed = False

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.target} ({self.dialect})>"

    # ---- public API ----------------------------------------------------------------------------

    def query(
        self,
        sql: str | exp.Expression,
        *,
        max_rows: int = 100,
        max_bytes: int = 1_000_000,
        timeout_s: float = 10.0,
        params: Sequence[Any] | None = None,
    ) -> QueryResult:
        """Run one read-only query and return at most ``max_rows`` rows (and about ``max_bytes``).

        Refused statements (writes, settings, files, more than one statement), timeouts, syntax
        and execution errors come back as ``QueryResult.error`` / ``error_kind``; only invalid
        arguments (caps out of range) raise ValueError. ``sql`` may be a sqlglot tree built in code
        (tabverify's compiled programs): it is checked as a tree and printed in the engine's dialect.
        """
        check_limits(max_rows, max_bytes, timeout_s)
        if params is not None and (isinstance(params, str | bytes) or not isinstance(params, Sequence)):
            raise ValueError("params must be a sequence (list or tuple) of values, or None")
        started = time.monotonic()
        checked = check(sql, self.dialect)
        if isinstance(sql, exp.Expression):
            sql = checked.statement
        if checked.refusal is not None:
            return QueryResult(
                sql=sql, error=checked.refusal, error_kind="refused", elapsed_s=time.monotonic() - started
            )
        return self._run(sql, checked, max_rows, max_bytes, timeout_s, params, started)

    def schema(self) -> Schema:
        """Tables and views with columns, keys, row counts and descriptions (computed once)."""
        with self._lock:
            self._check_open()
            if self._schema is None:
                tables = sorted(self._introspect(), key=lambda t: (t.name.casefold(), t.name))
                warnings: list[str] = []
                if self._descriptions is not None:
                    tables, warnings = attach_descriptions(
                        tables, self._descriptions, self._descriptions_explicit
                    )
                self._schema = Schema(self.target, self.dialect, tuple(tables), tuple(warnings))
            return self._schema

    def table(self, name: str) -> TableSchema:
        """The table or view called ``name`` (case-insensitive); DatabaseError naming the tables if none."""
        return self.schema().table(name)

    def close(self) -> None:
        """Close the connection (and remove any temporary copy); further queries raise DatabaseError."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._close()

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- shared machinery ------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise DatabaseError(f"{self.target}: the database was closed; connect again")

    def _query_unchecked(
        self, sql: str, *, max_rows: int = 100, max_bytes: int = 1_000_000, timeout_s: float = 10.0
    ) -> QueryResult:
        """The engine path alone, without the parser layer: for tests that show the engine's own
        read-only enforcement. Never used by tabverify itself."""
        check_limits(max_rows, max_bytes, timeout_s)
        return self._run(sql, Checked(sql), max_rows, max_bytes, timeout_s, None, time.monotonic())

    def _run(
        self,
        sql: str,
        checked: Checked,
        max_rows: int,
        max_bytes: int,
        timeout_s: float,
        params: Sequence[Any] | None,
        started: float,
    ) -> QueryResult:
        deadline = started + timeout_s
        with self._lock:
            self._check_open()
            try:
                columns, rows, truncated = self._fetch(
                    checked.statement, params, max_rows, max_bytes, deadline
                )
            except QueryTimeout:
                return QueryResult(
                    sql=sql,
                    error=f"timeout: the query ran longer than {timeout_s:g} s; narrow it (WHERE, LIMIT) "
                    "or aggregate in SQL",
                    error_kind="timeout",
                    elapsed_s=time.monotonic() - started,
                )
            except EngineRefusal as exc:
                return QueryResult(
                    sql=sql,
                    error=f"refused: {exc}",
                    error_kind="refused",
                    elapsed_s=time.monotonic() - started,
                )
            except Exception as exc:  # an engine error: classified, never raised
                kind, message = self._classify(exc)
                return QueryResult(
                    sql=sql, error=message, error_kind=kind, elapsed_s=time.monotonic() - started
                )
            total = None
            if truncated and checked.is_query:
                total = self._count(checked.statement, params, deadline)
            return QueryResult(
                sql=sql,
                columns=tuple(columns),
                rows=tuple(rows),
                truncated=truncated,
                total_rows=total,
                elapsed_s=time.monotonic() - started,
            )

    def _count(self, statement: str, params: Sequence[Any] | None, deadline: float) -> int | None:
        """The query's full row count, or None when it does not finish before the deadline."""
        if deadline - time.monotonic() < 0.01:
            return None
        wrapped = f"SELECT count(*) FROM (\n{statement}\n) AS tabverify_count"
        try:
            _, rows, _ = self._fetch(wrapped, params, 1, 1_000, deadline)
        except Exception:
            return None
        value = rows[0][0] if rows else None
        return value if isinstance(value, int) else None

    @staticmethod
    def _rows(
        fetchmany: Callable[[int], Sequence[Sequence[object]]], max_rows: int, max_bytes: int
    ) -> tuple[list[tuple[object, ...]], bool]:
        return collect(batches(fetchmany, max_rows + 1), max_rows, max_bytes)

    # ---- engine hooks ------------------------------------------------------------------------------

    def _fetch(
        self, statement: str, params: Sequence[Any] | None, max_rows: int, max_bytes: int, deadline: float
    ) -> tuple[list[str], list[tuple[object, ...]], bool]:
        """Run one statement before ``deadline`` (raise QueryTimeout after it); return the column
        names, at most ``max_rows`` plain rows and whether rows were left out."""
        raise NotImplementedError

    def _classify(self, exc: Exception) -> tuple[str, str]:
        """(error_kind, one-line message) for an engine exception."""
        return "execution", one_line(f"{type(exc).__name__}: {exc}")

    def _introspect(self) -> list[TableSchema]:
        raise NotImplementedError

    def _close(self) -> None:
        raise NotImplementedError
