"""DuckDB databases (read-only files, and Parquet/CSV/TSV files loaded into a temporary read-only
copy): the engine refuses writes, file access and setting changes; a timer interrupts long queries."""

from __future__ import annotations

import re
import shutil
import tempfile
import threading
import time
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb

from tabverify.database.core import Database, EngineRefusal, QueryTimeout
from tabverify.database.schema import ColumnSchema, ForeignKey, TableSchema
from tabverify.errors import DatabaseError
from tabverify.text.normalize import one_line

DATA_SUFFIXES = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".tsv": "tsv"}
"""File kinds a folder (or a single file) of data may hold, by suffix."""

MAX_DATA_FILES = 1000
MAX_DATA_BYTES = 5 * 1024**3

_ALLOWED_TYPES = {"SELECT"}


def locked_config(memory_limit_mb: int, threads: int) -> dict[str, Any]:
    """The settings every DuckDB connection of tabverify runs with (then locked)."""
    return {
        "enable_external_access": False,
        "autoinstall_known_extensions": False,
        "autoload_known_extensions": False,
        "memory_limit": f"{memory_limit_mb}MB",
        "threads": threads,
        "lock_configuration": True,
    }


def quote(name: str) -> str:
    """An identifier quoted for DuckDB, SQLite and PostgreSQL alike."""
    return '"' + name.replace('"', '""') + '"'


class DuckDBDatabase(Database):
    """A DuckDB file opened ``read_only=True`` with external access off and the configuration locked."""

    dialect = "duckdb"

    def __init__(
        self,
        path: Path,
        target: str,
        *,
        memory_limit_mb: int,
        threads: int,
        descriptions: Path | None = None,
        descriptions_explicit: bool = False,
    ):
        super().__init__(target, descriptions, descriptions_explicit)
        try:
            self._conn = duckdb.connect(
                str(path), read_only=True, config=locked_config(memory_limit_mb, threads)
            )
        except duckdb.IOException as exc:
            message = one_line(str(exc), 300)
            if "lock" in message.lower():
                raise DatabaseError(
                    f"{target}: is locked by another process writing to it ({message}); close that program first"
                ) from None
            raise DatabaseError(f"{target}: cannot open as a DuckDB database ({message})") from None
        except duckdb.Error as exc:
            raise DatabaseError(
                f"{target}: cannot open as a DuckDB database ({one_line(str(exc), 300)}); "
                "is it a DuckDB file written by a compatible version?"
            ) from None

    def _engine_statement_check(self, statement: str) -> None:
        """DuckDB's own parser: exactly one statement, and a SELECT (a second line behind sqlglot,
        and the only one for text sqlglot cannot parse)."""
        statements = self._conn.extract_statements(statement)
        if len(statements) != 1:
            raise EngineRefusal(f"one statement per query (found {len(statements)}); send them one at a time")
        kind = statements[0].type.name
        if kind not in _ALLOWED_TYPES:
            raise EngineRefusal(f"only read-only queries (SELECT) are allowed, not {kind}")

    def _fetch(
        self, statement: str, params: Sequence[Any] | None, max_rows: int, max_bytes: int, deadline: float
    ) -> tuple[list[str], list[tuple[object, ...]], bool]:
        self._engine_statement_check(statement)
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise QueryTimeout
        state = {"running": True}
        guard = threading.Lock()

        def interrupt() -> None:
            with guard:
                if state["running"]:
                    self._conn.interrupt()

        timer = threading.Timer(remaining, interrupt)
        timer.daemon = True
        timer.start()
        try:
            cursor = self._conn.execute(statement, list(params) if params is not None else None)
            columns = [d[0] for d in (cursor.description or [])]
            rows, truncated = self._rows(cursor.fetchmany, max_rows, max_bytes)
        except duckdb.InterruptException:
            raise QueryTimeout from None
        finally:
            with guard:
                state["running"] = False
            timer.cancel()
            timer.join()  # a timer thread still alive at interpreter exit aborts the process
        return columns, rows, truncated

    def _classify(self, exc: Exception) -> tuple[str, str]:
        message = one_line(str(exc))
        if isinstance(exc, duckdb.ParserException):
            return "syntax", f"syntax error: {message}"
        if isinstance(exc, duckdb.PermissionException) or (
            isinstance(exc, duckdb.Error) and ("read-only mode" in message or "has been locked" in message)
        ):
            return "refused", f"refused by the database engine: {message}"
        if isinstance(exc, duckdb.OutOfMemoryException):
            return "execution", f"out of memory: {message}; aggregate in SQL or narrow the query"
        return "execution", message

    def _scalar(self, sql: str, timeout_s: float) -> object:
        _, rows, _ = self._fetch(sql, None, 1, 100_000, time.monotonic() + timeout_s)
        return rows[0][0] if rows else None

    def _all(self, sql: str) -> list[tuple[object, ...]]:
        return self._conn.execute(sql).fetchall()

    def _introspect(self) -> list[TableSchema]:
        database = self._all("SELECT current_database()")[0][0]
        relations: dict[tuple[str, str], str] = {}
        for schema, name in self._all(
            f"SELECT schema_name, table_name FROM duckdb_tables() WHERE NOT internal AND database_name = '{database}'"
        ):
            relations[(str(schema), str(name))] = "table"
        for schema, name in self._all(
            f"SELECT schema_name, view_name FROM duckdb_views() WHERE NOT internal AND database_name = '{database}'"
        ):
            relations[(str(schema), str(name))] = "view"
        columns: dict[tuple[str, str], list[tuple[str, str, bool]]] = {}
        for schema, table, column, kind, nullable in self._all(
            "SELECT schema_name, table_name, column_name, data_type, is_nullable FROM duckdb_columns() "
            f"WHERE database_name = '{database}' ORDER BY schema_name, table_name, column_index"
        ):
            columns.setdefault((str(schema), str(table)), []).append((str(column), str(kind), bool(nullable)))
        keys: dict[tuple[str, str], tuple[str, ...]] = {}
        foreign: dict[tuple[str, str], list[ForeignKey]] = {}
        for schema, table, kind, names, ref_table, ref_names in self._all(
            "SELECT schema_name, table_name, constraint_type, constraint_column_names, referenced_table, "
            f"referenced_column_names FROM duckdb_constraints() WHERE database_name = '{database}'"
        ):
            key = (str(schema), str(table))
            if kind == "PRIMARY KEY":
                keys[key] = tuple(names)
            elif kind == "FOREIGN KEY":
                foreign.setdefault(key, []).append(ForeignKey(tuple(names), str(ref_table), tuple(ref_names)))
        tables = []
        for (schema, name), kind in relations.items():
            shown = name if schema == "main" else f"{schema}.{name}"
            primary = keys.get((schema, name), ())
            cols = tuple(
                ColumnSchema(column, declared, nullable, column in primary)
                for column, declared, nullable in columns.get((schema, name), [])
            )
            try:
                count = self._scalar(f"SELECT count(*) FROM {quote(schema)}.{quote(name)}", 5.0)
            except Exception:
                count = None
            tables.append(
                TableSchema(
                    shown,
                    cols,
                    primary,
                    tuple(foreign.get((schema, name), ())),
                    count if isinstance(count, int) else None,
                    True,
                    kind,
                )
            )
        return tables

    def _close(self) -> None:
        self._conn.close()


def table_name(stem: str, taken: set[str]) -> str:
    """A file stem as an SQL identifier: letters, digits and ``_``, not starting with a digit, unique."""
    name = re.sub(r"\W+", "_", stem, flags=re.ASCII).strip("_") or "table"
    if name[0].isdigit():
        name = f"t_{name}"
    candidate, n = name, 2
    while candidate.casefold() in taken:
        candidate, n = f"{name}_{n}", n + 1
    taken.add(candidate.casefold())
    return candidate


def data_files(folder: Path, target: str) -> list[Path]:
    """The Parquet/CSV/TSV files directly in ``folder`` (subfolders such as database_description
    are not read), bounded in number and total size."""
    try:
        entries = sorted(
            p for p in folder.iterdir() if p.suffix.lower() in DATA_SUFFIXES and not p.name.startswith(".")
        )
    except OSError as exc:
        raise DatabaseError(f"{target}: cannot list the folder ({exc.strerror or exc})") from None
    files = [p for p in entries if p.is_file()]
    if not files:
        raise DatabaseError(
            f"{target}: no .parquet, .csv or .tsv files in this folder; name a database file or a folder of data files"
        )
    if len(files) > MAX_DATA_FILES:
        raise DatabaseError(
            f"{target}: {len(files):,} data files is more than tabverify opens ({MAX_DATA_FILES:,}); split the folder"
        )
    total = sum(p.stat().st_size for p in files)
    if total > MAX_DATA_BYTES:
        raise DatabaseError(
            f"{target}: {total / 1024**3:.1f} GB of data files is more than tabverify loads (5 GB); "
            "convert them to a DuckDB database file and open that"
        )
    return files


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def build_copy(files: list[Path], target: str, memory_limit_mb: int, threads: int) -> tuple[Path, Path]:
    """Load each file into a table of a new DuckDB file in a temporary folder; return (folder, file).

    Views over the files would stop working once external access is switched off (DuckDB 2.0
    checks access when a view is read), so the data is copied into tables; the copy is then
    opened read-only like any DuckDB file and removed on close."""
    folder = Path(tempfile.mkdtemp(prefix="tabverify-db-"))
    path = folder / "data.duckdb"
    try:
        conn = duckdb.connect(str(path), config={"memory_limit": f"{memory_limit_mb}MB", "threads": threads,
                                                 "autoinstall_known_extensions": False})  # fmt: skip
        try:
            taken: set[str] = set()
            for file in files:
                kind = DATA_SUFFIXES[file.suffix.lower()]
                if kind == "parquet":
                    source = f"read_parquet({_literal(str(file))})"
                elif kind == "tsv":
                    source = f"read_csv({_literal(str(file))}, delim='\\t', header=true)"
                else:
                    source = f"read_csv({_literal(str(file))})"
                name = table_name(file.stem, taken)
                try:
                    conn.execute(f"CREATE TABLE {quote(name)} AS SELECT * FROM {source}")
                except duckdb.Error as exc:
                    raise DatabaseError(
                        f"{file}: cannot read as {kind.upper()} ({one_line(str(exc), 300)})"
                    ) from None
            conn.execute("CHECKPOINT")
        finally:
            conn.close()
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return folder, path


class FilesDatabase(DuckDBDatabase):
    """Parquet/CSV/TSV files (a folder of them, or one file) as tables of a read-only DuckDB copy."""

    def __init__(
        self,
        files: list[Path],
        target: str,
        *,
        memory_limit_mb: int,
        threads: int,
        descriptions: Path | None = None,
        descriptions_explicit: bool = False,
    ):
        folder, path = build_copy(files, target, memory_limit_mb, threads)
        self._cleanup = weakref.finalize(self, shutil.rmtree, folder, True)
        try:
            super().__init__(
                path,
                target,
                memory_limit_mb=memory_limit_mb,
                threads=threads,
                descriptions=descriptions,
                descriptions_explicit=descriptions_explicit,
            )
        except BaseException:
            self._cleanup()
            raise

    def _close(self) -> None:
        super()._close()
        self._cleanup()


def data_files_single(path: Path, target: str) -> list[Path]:
    """One data file, bounded in size like a folder."""
    size = path.stat().st_size
    if size > MAX_DATA_BYTES:
        raise DatabaseError(
            f"{target}: {size / 1024**3:.1f} GB is more than tabverify loads (5 GB); "
            "convert it to a DuckDB database file and open that"
        )
    return [path]
