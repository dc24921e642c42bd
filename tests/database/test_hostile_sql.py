"""Hostile SQL against each engine: every query is refused or stopped, never raises, and leaves the
data, the files and the settings exactly as they were. Engine-level read-only is shown on its own
too (the parser layer bypassed)."""

from __future__ import annotations

import sqlite3

import duckdb
import pytest

from tabverify.database import QueryResult
from tests.database.conftest import ROWS, Engine

ALL = ("duckdb", "sqlite", "postgres")
STOPPED = {"refused", "timeout", "syntax", "execution"}

# (case id, {engine: sql}); one SQL for every engine under the key "*"
CASES: list[tuple[str, dict[str, str]]] = [
    ("insert", {"*": "INSERT INTO t VALUES (999, 'x', 1.0)"}),
    ("update", {"*": "UPDATE t SET name = 'x'"}),
    ("delete", {"*": "DELETE FROM t"}),
    ("drop", {"*": "DROP TABLE t"}),
    ("create", {"*": "CREATE TABLE z (a INTEGER)"}),
    ("create-as", {"*": "CREATE TABLE z AS SELECT * FROM t"}),
    ("alter", {"*": "ALTER TABLE t ADD COLUMN z INTEGER"}),
    ("rename", {"*": "ALTER TABLE t RENAME TO t2"}),
    ("two-statements", {"*": "SELECT 1; DROP TABLE t"}),
    ("block-comment-hides-statement", {"*": "SELECT 1 /* harmless */; DELETE FROM t"}),
    ("line-comment-then-delete", {"*": "-- just a comment\nDELETE FROM t"}),
    ("comment-inside-keyword-gap", {"*": "SELECT 1;/**/DELETE/**/FROM t"}),
    ("temp-table", {"*": "CREATE TEMP TABLE z AS SELECT 1 AS a"}),
    ("temp-view", {"*": "CREATE TEMP VIEW z AS SELECT 1 AS a"}),
    ("begin", {"*": "BEGIN"}),
    ("commit", {"*": "COMMIT"}),
    ("rollback", {"*": "ROLLBACK"}),
    ("transaction-around-delete", {"*": "BEGIN; DELETE FROM t; COMMIT"}),
    ("delete-in-cte", {"*": "WITH x AS (DELETE FROM t RETURNING *) SELECT * FROM x"}),
    ("insert-in-cte", {"*": "WITH x AS (INSERT INTO t VALUES (999, 'x', 1.0) RETURNING *) SELECT * FROM x"}),
    ("delete-in-subquery", {"*": "SELECT * FROM (DELETE FROM t RETURNING *) AS x"}),
    ("insert-select-with-cte", {"*": "WITH a AS (SELECT 999, 'x', 1.0) INSERT INTO t SELECT * FROM a"}),
    ("select-into", {"duckdb": "SELECT * INTO z FROM t", "postgres": "SELECT * INTO z FROM t"}),
    (
        "replace-into",
        {
            "sqlite": "REPLACE INTO t VALUES (1, 'x', 0)",
            "duckdb": "INSERT OR REPLACE INTO t VALUES (1, 'x', 0)",
        },
    ),
    ("truncate", {"duckdb": "TRUNCATE t", "postgres": "TRUNCATE t"}),
    (
        "attach",
        {"duckdb": "ATTACH 'attached.db' AS other", "sqlite": "ATTACH DATABASE 'attached.db' AS other"},
    ),
    ("attach-memory", {"duckdb": "ATTACH ':memory:' AS other", "sqlite": "ATTACH ':memory:' AS other"}),
    ("detach", {"duckdb": "DETACH data", "sqlite": "DETACH DATABASE main"}),
    ("install-extension", {"duckdb": "INSTALL httpfs"}),
    ("load-extension", {"duckdb": "LOAD json", "postgres": "LOAD 'auto_explain'"}),
    ("load_extension-function", {"sqlite": "SELECT load_extension('/tmp/evil.so')"}),
    ("copy-to-file", {"duckdb": "COPY t TO 'out.csv'", "postgres": "COPY t TO '/tmp/tabverify-out.csv'"}),
    ("copy-from-file", {"duckdb": "COPY t FROM '/etc/passwd'", "postgres": "COPY t FROM '/etc/passwd'"}),
    ("copy-to-program", {"postgres": "COPY t TO PROGRAM 'touch /tmp/tabverify-pwned'"}),
    ("export-database", {"duckdb": "EXPORT DATABASE 'exported'"}),
    ("read_csv", {"duckdb": "SELECT * FROM read_csv('/etc/passwd')"}),
    (
        "read_csv-in-subquery",
        {"duckdb": "SELECT count(*) FROM t WHERE name IN (SELECT * FROM read_csv_auto('/etc/passwd'))"},
    ),
    ("string-as-table", {"duckdb": "SELECT * FROM '/etc/passwd'"}),
    ("quoted-file-as-table", {"duckdb": 'SELECT * FROM "/etc/hostname"'}),
    ("glob", {"duckdb": "SELECT * FROM glob('/*')"}),
    ("read_text", {"duckdb": "SELECT * FROM read_text('/etc/passwd')"}),
    ("read_blob", {"duckdb": "SELECT * FROM read_blob('/etc/passwd')"}),
    ("query-function", {"duckdb": "SELECT * FROM query('SELECT * FROM read_csv(''/etc/passwd'')')"}),
    ("pg_read_file", {"postgres": "SELECT pg_read_file('/etc/passwd')"}),
    ("pg_ls_dir", {"postgres": "SELECT * FROM pg_ls_dir('/')"}),
    ("lo_import", {"postgres": "SELECT lo_import('/etc/passwd')"}),
    ("dblink", {"postgres": "SELECT * FROM dblink('dbname=postgres', 'DROP TABLE t') AS x(a text)"}),
    ("fts3_tokenizer", {"sqlite": "SELECT fts3_tokenizer('simple')"}),
    ("pragma-journal-mode", {"sqlite": "PRAGMA journal_mode=delete"}),
    ("pragma-writable-schema", {"sqlite": "PRAGMA writable_schema=1"}),
    ("pragma-query-only-off", {"sqlite": "PRAGMA query_only=0"}),
    ("pragma-duckdb", {"duckdb": "PRAGMA enable_profiling"}),
    ("set-external-access", {"duckdb": "SET enable_external_access = true"}),
    ("set-threads", {"duckdb": "SET threads = 64"}),
    ("reset-all", {"duckdb": "RESET ALL", "postgres": "RESET ALL"}),
    ("set-statement-timeout", {"postgres": "SET statement_timeout = 0"}),
    ("set-read-only-off", {"postgres": "SET default_transaction_read_only = off"}),
    ("set_config", {"postgres": "SELECT set_config('statement_timeout', '0', false)"}),
    ("set-transaction-read-write", {"postgres": "SET TRANSACTION READ WRITE"}),
    ("vacuum", {"*": "VACUUM"}),
    ("vacuum-into", {"sqlite": "VACUUM INTO 'copy.sqlite'"}),
    ("checkpoint", {"duckdb": "CHECKPOINT", "postgres": "CHECKPOINT"}),
    ("create-secret", {"duckdb": "CREATE SECRET s (TYPE s3, KEY_ID 'a', SECRET 'b')"}),
    ("listen", {"postgres": "LISTEN channel"}),
    ("notify", {"postgres": "NOTIFY channel, 'hello'"}),
    ("do-block", {"postgres": "DO $$ BEGIN DELETE FROM t; END $$"}),
    ("call", {"postgres": "CALL some_procedure()"}),
    ("prepare", {"postgres": "PREPARE p AS DELETE FROM t"}),
    ("execute", {"postgres": "EXECUTE p"}),
    ("lock-table", {"postgres": "LOCK TABLE t IN ACCESS EXCLUSIVE MODE"}),
    ("select-for-update", {"postgres": "SELECT * FROM t FOR UPDATE"}),
    ("advisory-lock", {"postgres": "SELECT pg_advisory_lock(1)"}),
    ("grant", {"postgres": "GRANT ALL ON t TO PUBLIC"}),
    ("cancel-other-sessions", {"postgres": "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"}),
]

TIMEOUT_CASES: list[tuple[str, dict[str, str]]] = [
    ("huge-cross-join", {
        "duckdb": "SELECT count(*) FROM range(1000000) a, range(1000000) b",
        "sqlite": "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 1000000000000) "
                  "SELECT count(*) FROM r",
        "postgres": "SELECT count(*) FROM generate_series(1, 1000000) a, generate_series(1, 1000000) b",
    }),
    ("recursive-runaway", {"*": "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r"}),
    ("cross-join-of-tables", {"*": "SELECT count(*) FROM t a, t b, t c, t d, t e, t f"}),
    ("pg_sleep", {"postgres": "SELECT pg_sleep(30)"}),
]  # fmt: skip


def _params(cases: list[tuple[str, dict[str, str]]]) -> list[object]:
    found = []
    for name, by_engine in cases:
        for engine in ALL:
            sql = by_engine.get(engine, by_engine.get("*"))
            if sql is not None:
                found.append(pytest.param(engine, sql, id=f"{engine}-{name}"))
    return found


def _run(engine: Engine, sql: str, **caps: object) -> QueryResult:
    before = engine.snapshot()
    result = engine.db.query(sql, **caps)  # type: ignore[arg-type]
    assert engine.snapshot() == before, f"{sql!r} changed the database"
    # the connection stays usable afterwards
    assert engine.db.query("SELECT count(*) FROM t").rows == ((len(ROWS),),)
    return result


@pytest.mark.parametrize(("engine", "sql"), _params(CASES), indirect=["engine"])
def test_hostile_statement_is_refused_or_stopped(engine: Engine, sql: str) -> None:
    result = _run(engine, sql, timeout_s=5)
    assert not result.ok and result.error_kind in STOPPED, result
    assert result.rows == ()
    assert "\n" not in (result.error or "")


@pytest.mark.parametrize(("engine", "sql"), _params(TIMEOUT_CASES), indirect=["engine"])
def test_runaway_query_hits_the_deadline(engine: Engine, sql: str) -> None:
    result = _run(engine, sql, timeout_s=1)
    assert result.error_kind == "timeout", result
    assert result.error is not None and result.error.startswith("timeout: the query ran longer than 1 s")
    assert result.elapsed_s < 4


@pytest.mark.parametrize("engine", ALL, indirect=True)
@pytest.mark.parametrize(
    "sql",
    ["SELECT ';DROP TABLE t' AS x", "SELECT 'DELETE FROM t; -- ' AS x", "SELECT '/* */; ATTACH ''x''' AS x"],
)
def test_statements_inside_strings_are_harmless_text(engine: Engine, sql: str) -> None:
    """The parser layer reads SQL, it is not a keyword filter: these are plain SELECTs."""
    result = _run(engine, sql)
    assert result.ok, result
    assert (
        len(result.rows) == 1
        and isinstance(result.rows[0][0], str)
        and result.rows[0][0].startswith(("';", "DEL", ";", "/*"))
    )


@pytest.mark.parametrize("engine", ALL, indirect=True)
def test_trailing_semicolon_and_comment_are_one_statement(engine: Engine) -> None:
    result = _run(engine, "SELECT count(*) AS n FROM t;  -- all rows\n")
    assert result.ok and result.rows == ((50,),)


@pytest.mark.parametrize("engine", ALL, indirect=True)
def test_max_rows_truncates_with_total_and_notice(engine: Engine) -> None:
    result = _run(engine, "SELECT * FROM t ORDER BY id", max_rows=5)
    assert result.ok and result.truncated
    assert [row[0] for row in result.rows] == [1, 2, 3, 4, 5]
    assert result.total_rows == 50
    assert result.notice is not None and result.notice.startswith("showing 5 of 50 rows; aggregate in SQL")
    assert result.to_dict()["notice"] == result.notice


@pytest.mark.parametrize("engine", ALL, indirect=True)
def test_max_bytes_stops_adding_rows(engine: Engine) -> None:
    wide = {
        "duckdb": "repeat('x', 1000)",
        "sqlite": "substr(hex(zeroblob(500)), 1, 1000)",
        "postgres": "repeat('x', 1000)",
    }
    result = _run(engine, f"SELECT id, {wide[engine.name]} AS wide FROM t ORDER BY id", max_bytes=5_000)
    assert result.ok and result.truncated
    assert 1 <= len(result.rows) < 5 and result.total_rows == 50


@pytest.mark.parametrize("engine", ALL, indirect=True)
def test_huge_text_value_is_cut(engine: Engine) -> None:
    huge = {
        "duckdb": "repeat('y', 50000)",
        "sqlite": "substr(hex(zeroblob(25000)), 1, 50000)",
        "postgres": "repeat('y', 50000)",
    }
    result = _run(engine, f"SELECT {huge[engine.name]} AS big")
    assert result.ok
    value = result.rows[0][0]
    assert isinstance(value, str) and len(value) == 10_000 + len("…[cut]") and value.endswith("…[cut]")


@pytest.mark.parametrize("engine", ALL, indirect=True)
def test_errors_come_back_in_the_result(engine: Engine) -> None:
    syntax = engine.db.query("SELEC * FROM t")
    assert syntax.error_kind == "syntax" and syntax.error is not None
    missing = engine.db.query("SELECT no_such_column FROM t")
    assert missing.error_kind == "execution" and "no_such_column" in (missing.error or "")
    with pytest.raises(Exception) as raised:
        missing.raise_for_error()
    assert type(raised.value).__name__ == "DatabaseError"
    refused = engine.db.query("DROP TABLE t")
    with pytest.raises(Exception) as raised:
        refused.raise_for_error()
    assert type(raised.value).__name__ == "UnsafeQueryError"


# ---- the engine alone (parser layer bypassed) --------------------------------------------------


def test_duckdb_engine_refuses_writes_files_and_settings_on_its_own(tmp_path, duckdb_path) -> None:
    from tabverify.database import connect
    from tests.database.conftest import file_state

    before = file_state(tmp_path)
    with connect(duckdb_path) as db:
        conn = db._conn  # type: ignore[attr-defined]
        for sql, error in [
            ("INSERT INTO t VALUES (999, 'x', 1)", duckdb.InvalidInputException),
            ("DROP TABLE t", duckdb.InvalidInputException),
            ("SELECT * FROM read_csv('/etc/passwd')", duckdb.PermissionException),
            ("ATTACH 'other.db' AS other", duckdb.PermissionException),
            ("COPY t TO 'out.csv'", duckdb.Error),
            ("SET enable_external_access = true", duckdb.InvalidInputException),
        ]:
            with pytest.raises(error):
                conn.execute(sql)
        assert db._query_unchecked("DELETE FROM t").error_kind == "refused"
        assert db.query("SELECT count(*) FROM t").rows == ((50,),)
    assert file_state(tmp_path) == before


def test_sqlite_authorizer_refuses_on_its_own(tmp_path, sqlite_path) -> None:
    from tabverify.database import connect
    from tests.database.conftest import file_state

    before = file_state(tmp_path)
    with connect(sqlite_path) as db:
        conn = db._conn  # type: ignore[attr-defined]
        for sql in [
            "DELETE FROM t",
            "CREATE TEMP TABLE z (a)",
            f"ATTACH DATABASE '{tmp_path / 'new.db'}' AS other",
            "PRAGMA writable_schema = 1",
            "PRAGMA journal_mode = delete",
            f"VACUUM INTO '{tmp_path / 'copy.db'}'",
        ]:
            with pytest.raises(sqlite3.DatabaseError, match="not authorized|authorization denied"):
                conn.execute(sql)
        result = db._query_unchecked("UPDATE t SET name = 'x'")
        assert result.error_kind == "refused" and "not authorized" in (result.error or "")
    assert file_state(tmp_path) == before


def test_postgres_reader_role_refuses_on_its_own(postgres_server) -> None:
    import psycopg

    from tabverify.database import connect
    from tests.database.conftest import setup_postgres

    setup_postgres(postgres_server)
    with psycopg.connect(postgres_server.reader_url, autocommit=True) as conn:
        for sql in [
            "INSERT INTO t VALUES (999, 'x', 1)",
            "DELETE FROM t",
            "CREATE TABLE z (a int)",
            "CREATE TEMP TABLE z (a int)",
            "DROP TABLE t",
        ]:
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(sql)
    # even a superuser URL runs every query in a READ ONLY transaction, one statement per cursor
    with connect(postgres_server.admin_url) as admin:
        for sql in ["DELETE FROM t", "WITH x AS (DELETE FROM t RETURNING *) SELECT * FROM x",
                    "SELECT 1; DELETE FROM t", "SELECT * FROM t FOR UPDATE"]:  # fmt: skip
            assert not admin._query_unchecked(sql).ok, sql
    assert postgres_server.admin("SELECT count(*) FROM t") == [(50,)]
