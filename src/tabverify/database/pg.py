"""PostgreSQL databases (psycopg 3): every query runs in a READ ONLY transaction with our own
``statement_timeout``, through a server-side cursor (one statement, rows fetched on demand), and is
rolled back. Real safety comes from connecting as a SELECT-only role (docs/database.md)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from tabverify.database.core import Database, QueryTimeout
from tabverify.database.duck import quote
from tabverify.database.schema import ColumnSchema, ForeignKey, TableSchema
from tabverify.errors import DatabaseError
from tabverify.text.normalize import one_line

EXACT_COUNT_LIMIT = 1_000_000
"""Tables the planner estimates above this many rows get the estimate (``row_count_exact=False``)."""

CONNECT_TIMEOUT_S = 5


def display_url(url: str) -> str:
    """The URL without its password (and without query parameters, which may hold one)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        if ":" in host:
            host = f"[{host}]"
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return url.split("://", 1)[0] + "://…"
    user = f"{parts.username}@" if parts.username else ""
    return urlunsplit((parts.scheme, f"{user}{host}{port}", parts.path, "", ""))


def _scrub(message: str, url: str) -> str:
    try:
        password = urlsplit(url).password
    except ValueError:
        password = None
    text = one_line(message, 300)
    if password:
        text = text.replace(password, "***")
    return text


class PostgresDatabase(Database):
    """A PostgreSQL database reached by a ``postgresql://`` URL."""

    dialect = "postgres"

    def __init__(self, url: str):
        super().__init__(display_url(url))
        try:
            import psycopg
        except ImportError:
            raise DatabaseError(
                f"{self.target}: PostgreSQL needs psycopg; install it with `pip install 'tabverify[postgres]'`"
            ) from None
        self._psycopg = psycopg
        try:
            self._conn = psycopg.connect(url, connect_timeout=CONNECT_TIMEOUT_S, autocommit=False)
        except psycopg.Error as exc:
            raise DatabaseError(
                f"{self.target}: cannot connect ({_scrub(str(exc), url)}); check the host, port, database "
                "name and user, and that the server is running"
            ) from None
        except Exception as exc:  # malformed URLs surface as ValueError/ProgrammingError
            raise DatabaseError(
                f"{self.target}: not a usable PostgreSQL URL ({_scrub(str(exc), url)})"
            ) from None
        self._conn.read_only = True  # every transaction starts as BEGIN READ ONLY
        self._cursors = 0

    def _set_timeout(self, cursor: Any, deadline: float) -> None:
        remaining_ms = int((deadline - time.monotonic()) * 1000)
        if remaining_ms <= 0:
            raise QueryTimeout
        cursor.execute(f"SET LOCAL statement_timeout = {max(remaining_ms, 1)}")
        cursor.execute(f"SET LOCAL idle_in_transaction_session_timeout = {max(remaining_ms, 1) + 60_000}")

    def _fetch(
        self, statement: str, params: Sequence[Any] | None, max_rows: int, max_bytes: int, deadline: float
    ) -> tuple[list[str], list[tuple[object, ...]], bool]:
        errors = self._psycopg.errors
        try:
            with self._conn.cursor() as setup:
                self._set_timeout(setup, deadline)
            self._cursors += 1
            # a server-side cursor: DECLARE ... CURSOR FOR accepts exactly one query, and rows are
            # fetched on demand instead of the whole result crossing the network
            with self._conn.cursor(name=f"tabverify_{self._cursors}") as cursor:
                cursor.execute(statement, tuple(params) if params is not None else None)
                columns = [d.name for d in (cursor.description or [])]
                rows, truncated = self._rows(cursor.fetchmany, max_rows, max_bytes)
            return columns, rows, truncated
        except errors.QueryCanceled:
            raise QueryTimeout from None
        finally:
            try:
                self._conn.rollback()
            except self._psycopg.Error:
                pass

    def _classify(self, exc: Exception) -> tuple[str, str]:
        errors = self._psycopg.errors
        message = one_line(str(exc))
        if isinstance(exc, errors.ReadOnlySqlTransaction | errors.InsufficientPrivilege):
            return "refused", f"refused by the database engine: {message}"
        if isinstance(exc, errors.SyntaxError):
            return "syntax", f"syntax error: {message}"
        if isinstance(exc, self._psycopg.OperationalError):
            return "execution", f"connection problem: {message}; reconnect"
        return "execution", message

    def _rows_of(
        self, sql: str, params: Sequence[Any] | None = None, timeout_s: float = 10.0
    ) -> list[tuple[object, ...]]:
        _, rows, _ = self._fetch(sql, params, 100_000, 50_000_000, time.monotonic() + timeout_s)
        return rows

    def _introspect(self) -> list[TableSchema]:
        relations = self._rows_of(
            "SELECT c.oid::bigint, n.nspname, c.relname, c.relkind::text, c.reltuples::float8 "
            "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE c.relkind IN ('r', 'v', 'm', 'p', 'f') AND NOT c.relispartition "
            "AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_%' "
            "AND has_table_privilege(c.oid, 'SELECT') ORDER BY n.nspname, c.relname"
        )
        if not relations:
            return []
        oids = [int(r[0]) for r in relations]  # type: ignore[call-overload]
        columns: dict[int, list[tuple[int, str, str, bool]]] = {}
        for oid, number, name, kind, nullable in self._rows_of(
            "SELECT a.attrelid::bigint, a.attnum::int, a.attname, format_type(a.atttypid, a.atttypmod), "
            "NOT a.attnotnull FROM pg_attribute a WHERE a.attrelid = ANY(%s::bigint[]::oid[]) "
            "AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attrelid, a.attnum",
            (oids,),
        ):
            columns.setdefault(int(oid), []).append((int(number), str(name), str(kind), bool(nullable)))  # type: ignore[call-overload]
        names = {int(r[0]): (str(r[1]), str(r[2])) for r in relations}  # type: ignore[call-overload]

        def shown(oid: int) -> str:
            schema, name = names.get(oid, ("?", f"oid {oid}"))
            return name if schema == "public" else f"{schema}.{name}"

        attnames = {oid: {n: name for n, name, _, _ in cols} for oid, cols in columns.items()}
        primary: dict[int, tuple[str, ...]] = {}
        foreign: dict[int, list[ForeignKey]] = {}
        for oid, kind, keys, ref_oid, ref_keys in self._rows_of(
            "SELECT conrelid::bigint, contype::text, conkey, confrelid::bigint, confkey FROM pg_constraint "
            "WHERE contype IN ('p', 'f') AND conrelid = ANY(%s::bigint[]::oid[])",
            (oids,),
        ):
            oid = int(oid)  # type: ignore[call-overload]
            local = tuple(attnames.get(oid, {}).get(k, str(k)) for k in keys or [])  # type: ignore[union-attr]
            if kind == "p":
                primary[oid] = local
            else:
                ref = int(ref_oid)  # type: ignore[call-overload]
                if ref not in attnames:
                    for number, name in self._rows_of(
                        "SELECT attnum::int, attname FROM pg_attribute WHERE attrelid = %s::bigint::oid AND attnum > 0",
                        (ref,),
                    ):
                        attnames.setdefault(ref, {})[number] = str(name)  # type: ignore[index]
                    if ref not in names:
                        for schema, name in self._rows_of(
                            "SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                            "WHERE c.oid = %s::bigint::oid",
                            (ref,),
                        ):
                            names[ref] = (str(schema), str(name))
                remote = tuple(attnames.get(ref, {}).get(k, str(k)) for k in ref_keys or [])  # type: ignore[union-attr]
                foreign.setdefault(oid, []).append(ForeignKey(local, shown(ref), remote))
        tables = []
        for oid, schema, name, kind, estimate in relations:
            oid = int(oid)  # type: ignore[call-overload]
            keys = primary.get(oid, ())
            cols = tuple(
                ColumnSchema(column, declared, nullable, column in keys)
                for _, column, declared, nullable in columns.get(oid, [])
            )
            count: int | None
            exact = True
            if isinstance(estimate, float) and estimate > EXACT_COUNT_LIMIT:
                count, exact = int(estimate), False
            else:
                try:
                    value = self._rows_of(
                        f"SELECT count(*) FROM {quote(str(schema))}.{quote(str(name))}", None, 5.0
                    )[0][0]
                    count = value if isinstance(value, int) else None
                except Exception:
                    count = None
            tables.append(
                TableSchema(
                    shown(oid),
                    cols,
                    keys,
                    tuple(foreign.get(oid, ())),
                    count,
                    exact,
                    "view" if kind in ("v", "m") else "table",
                )  # fmt: skip
            )
        return tables

    def _close(self) -> None:
        try:
            self._conn.close()
        except self._psycopg.Error:
            pass
