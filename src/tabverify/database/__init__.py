"""One safe, read-only query layer over DuckDB, SQLite and PostgreSQL: :func:`connect` opens a
database, :meth:`Database.query` is the only way tabverify reads one (docs/database.md)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from tabverify.database.core import Database
from tabverify.database.result import QueryResult
from tabverify.database.schema import DESCRIPTION_FOLDER, ColumnSchema, ForeignKey, Schema, TableSchema
from tabverify.errors import DatabaseError

__all__ = ["connect", "Database", "QueryResult", "Schema", "TableSchema", "ColumnSchema", "ForeignKey"]

SQLITE_MAGIC = b"SQLite format 3\x00"
DUCKDB_MAGIC = b"DUCK"  # at byte 8 of a DuckDB file
PARQUET_MAGIC = b"PAR1"

_HELP = "give a DuckDB or SQLite file, a Parquet/CSV/TSV file or a folder of them, or a postgresql:// URL"


def _head(path: Path, target: str) -> bytes:
    """The first 16 bytes of a regular file (DatabaseError for anything else)."""
    try:
        info = path.stat()
    except FileNotFoundError:
        raise DatabaseError(f"{target}: no such file or folder; {_HELP}") from None
    except OSError as exc:
        raise DatabaseError(f"{target}: cannot read ({exc.strerror or exc})") from None
    if not stat.S_ISREG(info.st_mode):
        raise DatabaseError(f"{target}: not a regular file (a device, FIFO or socket); {_HELP}")
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(descriptor, "rb") as handle:
            return handle.read(16)
    except OSError as exc:
        raise DatabaseError(f"{target}: cannot read ({exc.strerror or exc})") from None


def _check_int(name: str, value: int, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{name} must be an integer from {low} to {high:,}, got {value!r}")


def connect(
    target: str | Path,
    *,
    descriptions: str | Path | None = None,
    memory_limit_mb: int = 1024,
    threads: int = 2,
) -> Database:
    """Open a database read-only.

    ``target``: a DuckDB file, an SQLite file (recognised by their first bytes, whatever the
    extension), a Parquet/CSV/TSV file or a folder of them (each file becomes a table named after
    it, loaded into a temporary read-only DuckDB copy), or a ``postgresql://`` / ``postgres://`` URL.
    ``descriptions``: a folder of BIRD ``<table>.csv`` column descriptions; by default a
    ``database_description/`` folder next to the database file (or inside the data folder) is used
    when present. ``memory_limit_mb`` and ``threads`` bound DuckDB.

    The file is never modified and never write-locked. Raises :class:`DatabaseError` with one line
    naming the target (never a password) when it cannot be opened.
    """
    _check_int("memory_limit_mb", memory_limit_mb, 64, 1_048_576)
    _check_int("threads", threads, 1, 256)
    if isinstance(target, str) and target.lower().startswith(("postgresql://", "postgres://")):
        from tabverify.database.pg import PostgresDatabase

        if descriptions is not None:
            folder = Path(descriptions)
            database = PostgresDatabase(target)
            database._descriptions, database._descriptions_explicit = folder, True
            if not folder.is_dir():
                database.close()
                raise DatabaseError(
                    f"descriptions {folder}: not a folder; name a folder of <table>.csv description files"
                )
            return database
        return PostgresDatabase(target)
    if not isinstance(target, str | Path):
        raise TypeError(f"target must be a path or a URL string, got {type(target).__name__}")
    shown = str(target)
    if isinstance(target, str) and "://" in target:
        raise DatabaseError(f"{target.split('://', 1)[0]}://...: not a supported URL; {_HELP}")
    path = Path(target).expanduser()
    explicit = descriptions is not None
    if explicit:
        folder: Path | None = Path(descriptions)  # type: ignore[arg-type]
        if not folder.is_dir():  # type: ignore[union-attr]
            raise DatabaseError(
                f"descriptions {descriptions}: not a folder; name a folder of <table>.csv description files"
            )
    else:
        base = path if path.is_dir() else path.parent
        folder = base / DESCRIPTION_FOLDER
    from tabverify.database import duck

    if path.is_dir():
        files = duck.data_files(path, shown)
        return duck.FilesDatabase(files, shown, memory_limit_mb=memory_limit_mb, threads=threads,
                                  descriptions=folder, descriptions_explicit=explicit)  # fmt: skip
    head = _head(path, shown)
    if head.startswith(SQLITE_MAGIC):
        from tabverify.database.lite import SQLiteDatabase

        return SQLiteDatabase(path, shown, descriptions=folder, descriptions_explicit=explicit)
    if head[8:12] == DUCKDB_MAGIC:
        return duck.DuckDBDatabase(path, shown, memory_limit_mb=memory_limit_mb, threads=threads,
                                   descriptions=folder, descriptions_explicit=explicit)  # fmt: skip
    suffix = path.suffix.lower()
    if suffix in duck.DATA_SUFFIXES:
        if duck.DATA_SUFFIXES[suffix] == "parquet" and not head.startswith(PARQUET_MAGIC):
            raise DatabaseError(f"{shown}: not a Parquet file (it does not start with PAR1); check the file")
        files = duck.data_files_single(path, shown)
        return duck.FilesDatabase(files, shown, memory_limit_mb=memory_limit_mb, threads=threads,
                                  descriptions=folder, descriptions_explicit=explicit)  # fmt: skip
    if not head:
        raise DatabaseError(f"{shown}: the file is empty; {_HELP}")
    raise DatabaseError(
        f"{shown}: not a DuckDB or SQLite database (its first bytes match neither) and not a "
        f".parquet/.csv/.tsv file; {_HELP}"
    )
