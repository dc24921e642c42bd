"""A real PostgreSQL server for tests: a throwaway cluster on a free port, with a superuser
(``admin_url``) and a SELECT-only role (``reader_url``), stopped at the end of the session.

Use it from any test folder's conftest::

    from tests.postgres import postgres_server, postgres_url  # noqa: F401  (pytest fixtures)

Skipped when PostgreSQL is not installed (``CI=true`` turns that skip into a failure; ``.ci/run``
installs Debian's ``postgresql``).
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

DATABASE = "tabverify_test"
READER = "reader"

READER_SQL = f"""
CREATE ROLE {READER} LOGIN;
REVOKE ALL ON DATABASE {DATABASE} FROM PUBLIC;
REVOKE TEMP ON DATABASE {DATABASE} FROM PUBLIC;
GRANT CONNECT ON DATABASE {DATABASE} TO {READER};
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
GRANT USAGE ON SCHEMA public TO {READER};
GRANT SELECT ON ALL TABLES IN SCHEMA public TO {READER};
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT ON TABLES TO {READER};
"""
"""The SELECT-only role of the documented deployment (docs/database.md shows the same SQL)."""


def find_binaries() -> Path | None:
    """The folder holding ``initdb`` and ``pg_ctl``: PATH first, then Debian's versioned folders."""
    initdb = shutil.which("initdb")
    if initdb and shutil.which("pg_ctl"):
        return Path(os.path.realpath(initdb)).parent
    for folder in sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name) if Path(p).parent.name.isdigit() else 0, reverse=True):  # fmt: skip
        if Path(folder, "initdb").exists() and Path(folder, "pg_ctl").exists():
            return Path(folder)
    return None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class PostgresServer:
    """A running throwaway cluster."""

    bin: Path
    data: Path
    port: int
    as_postgres: bool

    @property
    def admin_url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{DATABASE}"

    @property
    def reader_url(self) -> str:
        return f"postgresql://{READER}@127.0.0.1:{self.port}/{DATABASE}"

    def admin(self, sql: str, params: Sequence[object] | None = None) -> list[tuple[object, ...]]:
        """Run SQL as the superuser (autocommit) and return its rows, if any."""
        import psycopg

        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            cursor = conn.execute(sql, params)  # type: ignore[arg-type]
            return cursor.fetchall() if cursor.description else []

    def create_table(
        self, name: str, rows: Sequence[dict[str, object]], types: dict[str, str] | None = None
    ) -> None:
        """Create (or replace) table ``name`` from dicts, readable by the reader role."""
        import psycopg
        from psycopg import sql

        columns = list(rows[0])
        types = types or {}

        def guess(column: str) -> str:
            if column in types:
                return types[column]
            value = rows[0][column]
            return "bigint" if isinstance(value, int) and not isinstance(value, bool) else (
                "double precision" if isinstance(value, float) else "text")  # fmt: skip

        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP TABLE IF EXISTS {} CASCADE").format(sql.Identifier(name)))
            spec = sql.SQL(", ").join(
                sql.SQL("{} {}").format(sql.Identifier(c), sql.SQL(guess(c))) for c in columns
            )
            conn.execute(sql.SQL("CREATE TABLE {} ({})").format(sql.Identifier(name), spec))
            insert = sql.SQL("INSERT INTO {} VALUES ({})").format(
                sql.Identifier(name), sql.SQL(", ").join(sql.Placeholder() * len(columns))
            )
            with conn.cursor() as cursor:
                cursor.executemany(insert, [tuple(r[c] for c in columns) for r in rows])
            conn.execute(
                sql.SQL("GRANT SELECT ON {} TO {}").format(sql.Identifier(name), sql.Identifier(READER))
            )


def _run(command: list[str], as_postgres: bool, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    if as_postgres:
        command = ["runuser", "-u", "postgres", "--", *command]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout)


def start_server(root: Path) -> PostgresServer:
    """initdb + pg_ctl start in ``root`` (as the postgres user when running as root)."""
    binaries = find_binaries()
    if binaries is None:
        pytest.skip(
            "PostgreSQL is not installed (no initdb/pg_ctl; `apt-get install postgresql`, .ci/run does it)"
        )
    as_postgres = os.geteuid() == 0
    data, sockets = root / "data", root / "sock"
    sockets.mkdir(parents=True)
    if as_postgres:
        shutil.chown(root, "postgres")
        shutil.chown(sockets, "postgres")
    init = _run([str(binaries / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8",
                 "--no-sync"], as_postgres)  # fmt: skip
    if init.returncode != 0:
        raise RuntimeError(f"initdb failed: {init.stderr.strip()[-800:]}")
    port = free_port()
    options = f"-p {port} -k {sockets} -c listen_addresses=127.0.0.1 -c fsync=off"
    start = _run([str(binaries / "pg_ctl"), "-D", str(data), "-l", str(data / "log"), "-o", options, "-w", "-t", "60",
                  "start"], as_postgres)  # fmt: skip
    server = PostgresServer(binaries, data, port, as_postgres)
    if start.returncode != 0:
        log = (data / "log").read_text(errors="replace")[-800:] if (data / "log").exists() else ""
        raise RuntimeError(f"pg_ctl start failed: {start.stderr.strip()[-400:]} {log}")
    return server


def stop_server(server: PostgresServer) -> None:
    _run(
        [str(server.bin / "pg_ctl"), "-D", str(server.data), "-m", "fast", "-w", "stop"],
        server.as_postgres,
        60,
    )


def setup_database(server: PostgresServer) -> None:
    """The test database, the reader role, and a small fixture table ``scores``."""
    import psycopg

    deadline = time.monotonic() + 30
    while True:
        try:
            with psycopg.connect(
                f"postgresql://postgres@127.0.0.1:{server.port}/postgres", autocommit=True
            ) as conn:
                conn.execute(f"CREATE DATABASE {DATABASE}")
            break
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    with psycopg.connect(server.admin_url, autocommit=True) as conn:
        for statement in READER_SQL.strip().split(";\n"):
            if statement.strip():
                conn.execute(statement)
    server.create_table(
        "scores",
        [
            {"id": 1, "team": "hawks", "points": 102},
            {"id": 2, "team": "owls", "points": 97},
            {"id": 3, "team": "crows", "points": 110},
        ],  # fmt: skip
    )
    server.admin("ALTER TABLE scores ADD PRIMARY KEY (id)")


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A running PostgreSQL server for the test session (see the module docstring)."""
    root = Path(tempfile.mkdtemp(prefix="tabverify-pg-"))
    server: PostgresServer | None = None
    try:
        server = start_server(root)
        setup_database(server)
        yield server
    finally:
        if server is not None:
            stop_server(server)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_url(postgres_server: PostgresServer) -> str:
    """The SELECT-only reader's URL of the session's PostgreSQL server."""
    return postgres_server.reader_url
