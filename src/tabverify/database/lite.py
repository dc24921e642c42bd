"""SQLite databases: opened with ``mode=ro``, an allow-list authorizer (read, select, functions,
recursive CTEs, a few introspection pragmas) and a progress handler that enforces the deadline."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tabverify.database.core import Database, EngineRefusal, QueryTimeout
from tabverify.database.duck import quote
from tabverify.database.safety import refused_function
from tabverify.database.schema import ColumnSchema, ForeignKey, TableSchema
from tabverify.errors import DatabaseError
from tabverify.text.normalize import one_line

READ_PRAGMAS = frozenset(
    {"table_info", "table_xinfo", "foreign_key_list", "index_list", "index_info", "index_xinfo"}
)
"""The only pragmas the authorizer lets through: read-only introspection (used by :meth:`schema`)."""

_ALLOWED_ACTIONS = {
    sqlite3.SQLITE_READ,
    sqlite3.SQLITE_SELECT,
    sqlite3.SQLITE_FUNCTION,
    sqlite3.SQLITE_RECURSIVE,
}

PROGRESS_STEPS = 10_000
"""The progress handler runs every this many virtual-machine steps (well under a millisecond)."""


def authorize(
    action: int, arg1: str | None, arg2: str | None, database: str | None, trigger: str | None
) -> int:
    """The allow-list authorizer: everything not listed is denied ("not authorized").

    For SQLITE_PRAGMA the pragma's name arrives in ``arg1`` and its argument in ``arg2``; for
    SQLITE_FUNCTION the function's name arrives in ``arg2``."""
    if action == sqlite3.SQLITE_FUNCTION:
        return (
            sqlite3.SQLITE_DENY if arg2 is not None and refused_function(arg2.lower()) else sqlite3.SQLITE_OK
        )
    if action in _ALLOWED_ACTIONS:
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_PRAGMA and arg1 is not None and arg1.lower() in READ_PRAGMAS:
        return sqlite3.SQLITE_OK
    return sqlite3.SQLITE_DENY


class SQLiteDatabase(Database):
    """An SQLite file opened through the URI ``file:...?mode=ro`` (never written, no write lock).

    ``mode=ro`` alone still allows ATTACH (which creates files) and temp tables, so the authorizer
    is what makes the connection read-only; ``immutable=1`` is not used because it would read
    wrong data if another process changed the file while it is open."""

    dialect = "sqlite"

    def __init__(
        self,
        path: Path,
        target: str,
        *,
        descriptions: Path | None = None,
        descriptions_explicit: bool = False,
    ):
        super().__init__(target, descriptions, descriptions_explicit)
        self._deadline: float | None = None
        uri = path.resolve().as_uri() + "?mode=ro"
        try:
            self._conn = sqlite3.connect(uri, uri=True, check_same_thread=False, isolation_level=None)
        except sqlite3.Error as exc:
            raise DatabaseError(
                f"{target}: cannot open as an SQLite database ({one_line(str(exc), 300)})"
            ) from None
        self._conn.set_authorizer(authorize)
        self._conn.set_progress_handler(self._progress, PROGRESS_STEPS)
        try:
            self._conn.execute("SELECT count(*) FROM sqlite_master").fetchall()
        except sqlite3.Error as exc:
            self._conn.close()
            raise DatabaseError(
                f"{target}: not a readable SQLite database ({one_line(str(exc), 300)}); check that the file is complete"
            ) from None

    def _progress(self) -> int:
        deadline = self._deadline
        return 1 if deadline is not None and time.monotonic() > deadline else 0

    def _fetch(
        self, statement: str, params: Sequence[Any] | None, max_rows: int, max_bytes: int, deadline: float
    ) -> tuple[list[str], list[tuple[object, ...]], bool]:
        if time.monotonic() >= deadline:
            raise QueryTimeout
        self._deadline = deadline
        try:
            cursor = self._conn.execute(statement, tuple(params) if params is not None else ())
            columns = [d[0] for d in (cursor.description or [])]
            rows, truncated = self._rows(cursor.fetchmany, max_rows, max_bytes)
            cursor.close()
        except sqlite3.OperationalError as exc:
            if "interrupted" in str(exc) and time.monotonic() >= deadline:
                raise QueryTimeout from None
            raise
        except sqlite3.ProgrammingError as exc:
            if "one statement" in str(exc):
                raise EngineRefusal("one statement per query; send them one at a time") from None
            raise
        finally:
            self._deadline = None
        return columns, rows, truncated

    def _classify(self, exc: Exception) -> tuple[str, str]:
        message = one_line(str(exc))
        lowered = message.lower()
        if (
            "not authorized" in lowered
            or "authorization denied" in lowered
            or "readonly" in lowered
            or "read-only" in lowered
        ):
            return "refused", f"refused by the database engine: {message}; only read-only queries are allowed"
        if "syntax error" in lowered or "incomplete input" in lowered or "unrecognized token" in lowered:
            return "syntax", f"syntax error: {message}"
        return "execution", message

    def _introspect(self) -> list[TableSchema]:
        entries = self._conn.execute(
            "SELECT name, type FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'"
        ).fetchall()
        tables = []
        for name, kind in entries:
            info = self._conn.execute(f"PRAGMA table_info({quote(name)})").fetchall()
            ordered_pk = sorted((row[5], row[1]) for row in info if row[5])
            primary = tuple(column for _, column in ordered_pk)
            columns = tuple(
                ColumnSchema(str(row[1]), str(row[2] or ""), not row[3] and not row[5], bool(row[5]))
                for row in info
            )
            groups: dict[int, list[tuple[str, str, str | None]]] = {}
            for row in self._conn.execute(f"PRAGMA foreign_key_list({quote(name)})").fetchall():
                groups.setdefault(row[0], []).append((str(row[2]), str(row[3]), row[4]))
            foreign = []
            for refs in groups.values():
                ref_table = refs[0][0]
                ref_columns = tuple(str(r[2]) if r[2] is not None else "" for r in refs)
                if not any(ref_columns):  # REFERENCES t without columns: t's primary key
                    ref_info = self._conn.execute(f"PRAGMA table_info({quote(ref_table)})").fetchall()
                    ref_columns = tuple(str(r[1]) for r in sorted(ref_info, key=lambda r: r[5]) if r[5])
                foreign.append(ForeignKey(tuple(r[1] for r in refs), ref_table, ref_columns))
            try:
                _, rows, _ = self._fetch(
                    f"SELECT count(*) FROM {quote(name)}", None, 1, 1000, time.monotonic() + 5.0
                )
                count = rows[0][0] if rows else None
            except Exception:
                count = None
            tables.append(
                TableSchema(
                    str(name),
                    columns,
                    primary,
                    tuple(foreign),
                    count if isinstance(count, int) else None,
                    True,
                    str(kind),
                )
            )
        return tables

    def _close(self) -> None:
        self._conn.close()
