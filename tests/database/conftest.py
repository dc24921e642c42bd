"""Databases written by the tests themselves (DuckDB, SQLite, Parquet/CSV, a real PostgreSQL), each
with a snapshot function that proves a hostile query changed nothing."""

from __future__ import annotations

import hashlib
import os
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pytest

from tabverify.database import Database, connect
from tests.postgres import PostgresServer, postgres_server, postgres_url  # noqa: F401  (pytest fixtures)

ROWS = [(i, f"name {i}", i * 1.5) for i in range(1, 51)]
"""Table ``t`` (id primary key, name, score): 50 rows. Table ``u`` (id, t_id -> t.id): 3 rows."""
U_ROWS = [(1, 1), (2, 2), (3, 50)]

ENGINES = ("duckdb", "sqlite", "postgres")


def write_sqlite(path: Path) -> Path:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT NOT NULL, score REAL)")
    conn.execute("CREATE TABLE u (id INTEGER PRIMARY KEY, t_id INTEGER REFERENCES t(id))")
    conn.executemany("INSERT INTO t VALUES (?, ?, ?)", ROWS)
    conn.executemany("INSERT INTO u VALUES (?, ?)", U_ROWS)
    conn.commit()
    conn.close()
    return path


def write_duckdb(path: Path) -> Path:
    conn = duckdb.connect(str(path))
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, name VARCHAR NOT NULL, score DOUBLE)")
    conn.execute("CREATE TABLE u (id INTEGER PRIMARY KEY, t_id INTEGER REFERENCES t(id))")
    conn.executemany("INSERT INTO t VALUES (?, ?, ?)", ROWS)
    conn.executemany("INSERT INTO u VALUES (?, ?)", U_ROWS)
    conn.close()
    return path


def setup_postgres(server: PostgresServer) -> None:
    server.create_table(
        "t", [{"id": i, "name": n, "score": s} for i, n, s in ROWS],
        {"id": "integer primary key", "name": "text not null", "score": "double precision"},
    )  # fmt: skip
    server.create_table(
        "u",
        [{"id": i, "t_id": t} for i, t in U_ROWS],
        {"id": "integer primary key", "t_id": "integer references t(id)"},
    )


def file_state(folder: Path) -> dict[str, tuple[str, int]]:
    """Every file in ``folder`` (recursively): sha256 and mtime - a new, changed or touched file shows."""
    state = {}
    for root, _, names in os.walk(folder):
        for name in names:
            path = Path(root, name)
            state[str(path.relative_to(folder))] = (
                hashlib.sha256(path.read_bytes()).hexdigest(),
                path.stat().st_mtime_ns,
            )
    return state


@dataclass
class Engine:
    """An open database and how to take a snapshot of everything a hostile query could change."""

    name: str
    db: Database
    snapshot: Callable[[], object]
    folder: Path | None = None


def _duckdb_engine(tmp_path: Path) -> Engine:
    path = write_duckdb(tmp_path / "data.duckdb")
    db = connect(path)

    def snapshot() -> object:
        relations = db._conn.execute(  # type: ignore[attr-defined]
            "SELECT database_name, schema_name, table_name FROM duckdb_tables() ORDER BY ALL"
        ).fetchall()
        rows = db._conn.execute("SELECT * FROM t ORDER BY id").fetchall()  # type: ignore[attr-defined]
        settings = db._conn.execute(  # type: ignore[attr-defined]
            "SELECT name, value FROM duckdb_settings() WHERE name IN ('enable_external_access', "
            "'lock_configuration', 'threads', 'memory_limit') ORDER BY name"
        ).fetchall()
        return file_state(tmp_path), relations, rows, settings

    return Engine("duckdb", db, snapshot, tmp_path)


def _sqlite_engine(tmp_path: Path) -> Engine:
    path = write_sqlite(tmp_path / "data.sqlite")
    db = connect(path)

    def snapshot() -> object:
        independent = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            schema = independent.execute("SELECT type, name, sql FROM sqlite_master ORDER BY name").fetchall()
            rows = independent.execute("SELECT * FROM t ORDER BY id").fetchall()
        finally:
            independent.close()
        return file_state(tmp_path), schema, rows

    return Engine("sqlite", db, snapshot, tmp_path)


def _postgres_engine(server: PostgresServer) -> Engine:
    setup_postgres(server)
    db = connect(server.reader_url)

    def snapshot() -> object:
        relations = server.admin(
            "SELECT n.nspname, c.relname, c.relkind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg_toast%' "
            "ORDER BY 1, 2"
        )
        rows = server.admin("SELECT * FROM t ORDER BY id")
        settings = server.admin(
            "SELECT setdatabase, setrole, setconfig FROM pg_db_role_setting ORDER BY 1, 2"
        )
        roles = server.admin("SELECT rolname, rolsuper, rolcreatedb FROM pg_roles ORDER BY 1")
        return relations, rows, settings, roles

    return Engine("postgres", db, snapshot)


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    """Each engine in turn, with tables t and u (see :data:`ROWS`)."""
    if request.param == "duckdb":
        made = _duckdb_engine(tmp_path)
    elif request.param == "sqlite":
        made = _sqlite_engine(tmp_path)
    else:
        made = _postgres_engine(request.getfixturevalue("postgres_server"))
    try:
        yield made
    finally:
        made.db.close()


@pytest.fixture
def sqlite_path(tmp_path: Path) -> Path:
    return write_sqlite(tmp_path / "data.sqlite")


@pytest.fixture
def duckdb_path(tmp_path: Path) -> Path:
    return write_duckdb(tmp_path / "data.duckdb")
