"""The verifier over database tables: the same verdicts as in memory (prepared DuckDB/SQLite files,
native typed tables in DuckDB, SQLite and PostgreSQL), verdicts that name their SQL and source,
the value index cache, and a database left exactly as it was."""

from __future__ import annotations

import hashlib
import sqlite3
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from tabverify.database import connect
from tabverify.program.database_table import DatabaseTable, open_table
from tabverify.program.search import SearchLimits
from tabverify.program.sql import prepare_table
from tabverify.table import Table
from tabverify.verify import TableVerifier
from tests.conftest import ELECTION_ROWS
from tests.postgres import postgres_server  # noqa: F401, F811  (pytest fixture)

STATEMENTS = {
    "there be 3 incumbent from the democratic party": "ENTAILED",
    "there be 2 incumbent from the republican party": "ENTAILED",
    "mary jones was first elected in 1986": "ENTAILED",
    "john smith was first elected in 1994": "REFUTED",
    "mary jones has the most votes": "ENTAILED",
    "lisa white has the most votes": "REFUTED",
    "tom green has the fewest votes": "ENTAILED",
    "the total votes is 258780": "ENTAILED",
}
COLUMNS = '(district {t}, incumbent {t}, party {t}, "first elected" INTEGER, votes INTEGER)'
READER = """
import sys, duckdb, sqlite3
path, kind = sys.argv[1], sys.argv[2]
if kind == "native_duckdb":
    conn = duckdb.connect(path, read_only=True)
else:
    conn = sqlite3.connect("file:" + path + "?mode=ro", uri=True)
print(conn.execute("SELECT count(*) FROM election").fetchone()[0])
"""
NATIVE_ROWS = [(r[0], r[1], r[2], int(r[3]), int(r[4].replace(",", ""))) for r in ELECTION_ROWS[1:]]


@pytest.fixture(scope="module")
def verifier() -> TableVerifier:
    # no time bound: a loaded machine must not cut the search and change a verdict
    return TableVerifier(limits=SearchLimits(max_milliseconds=600_000))


@pytest.fixture
def memory_verdicts(verifier: TableVerifier, election: Table) -> dict[str, object]:
    verdicts = {s: verifier.verify(s, election) for s in STATEMENTS}
    assert {s: v.label.value for s, v in verdicts.items()} == STATEMENTS
    return verdicts


def native_duckdb(path: Path) -> Path:
    conn = duckdb.connect(str(path))
    conn.execute("CREATE TABLE election " + COLUMNS.format(t="VARCHAR"))
    conn.executemany("INSERT INTO election VALUES (?, ?, ?, ?, ?)", NATIVE_ROWS)
    conn.close()
    return path


def native_sqlite(path: Path) -> Path:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE election " + COLUMNS.format(t="TEXT"))
    conn.executemany("INSERT INTO election VALUES (?, ?, ?, ?, ?)", NATIVE_ROWS)
    conn.commit()
    conn.close()
    return path


def digest(path: Path) -> tuple[str, int]:
    return hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns


@pytest.mark.parametrize("dialect", ["duckdb", "sqlite"])
@pytest.mark.parametrize("python_rows", [64, 0])
def test_prepared_table_gives_the_memory_verdicts_and_programs(
    verifier, memory_verdicts, election, tmp_path, dialect, python_rows
):
    path = tmp_path / f"election.{dialect}"
    prepare_table(election, path, dialect)
    with connect(path) as db:
        table = open_table(db, "t", cache_dir=tmp_path / "cache", python_rows=python_rows)
        for statement, expected in memory_verdicts.items():
            verdict = verifier.verify(statement, table)
            assert (verdict.label, verdict.program) == (expected.label, expected.program), statement


@pytest.mark.parametrize("make", [native_duckdb, native_sqlite], ids=["duckdb", "sqlite"])
@pytest.mark.parametrize("python_rows", [64, 0])
def test_native_table_gives_the_memory_labels(verifier, memory_verdicts, tmp_path, make, python_rows):
    path = make(tmp_path / "native.db")
    with connect(path) as db:
        table = open_table(db, "election", cache_dir=tmp_path / "cache", python_rows=python_rows)
        labels = {s: verifier.verify(s, table).label.value for s in STATEMENTS}
    assert labels == STATEMENTS


def test_postgres_native_table_gives_the_memory_labels(
    verifier,
    memory_verdicts,
    postgres_server,  # noqa: F811
    tmp_path,
):
    rows = [
        dict(zip(("district", "incumbent", "party", "first elected", "votes"), r, strict=True))
        for r in NATIVE_ROWS
    ]
    postgres_server.create_table(
        "election", rows, {"first elected": "integer", "votes": "integer", "district": "text primary key"}
    )
    with connect(postgres_server.reader_url) as db:
        for python_rows in (64, 0):
            table = open_table(db, "election", cache_dir=tmp_path, python_rows=python_rows)
            labels = {s: verifier.verify(s, table).label.value for s in STATEMENTS}
            assert labels == STATEMENTS, python_rows


def test_verdict_names_its_sql_source_trace_and_native_cells(verifier, tmp_path):
    path = native_sqlite(tmp_path / "votes.sqlite")
    with connect(path) as db:
        table = open_table(db, "election", cache_dir=tmp_path / "cache")
        verdict = verifier.verify("mary jones was first elected in 1986", table)
        assert verdict.entailed
        assert verdict.sql and str(path) in verdict.source and "election" in verdict.source
        assert verdict.trace and all(step.kind == "query" and step.text for step in verdict.trace)
        rerun = db.query(verdict.sql)
        assert rerun.ok and rerun.rows
        # evidence cells are (row key, column) of the native table: SQLite's rowid, from 1
        keys = {ref.row for ref in verdict.evidence}
        columns = {table.header[ref.column] for ref in verdict.evidence}
        assert columns == {"incumbent", "first elected"}
        (key,) = keys
        assert list(db.query(f"SELECT incumbent FROM election WHERE rowid = {key}").rows) == [("mary jones",)]
        assert table.row_texts([key])[key][1] == "mary jones"


def test_queries_of_a_time_bounded_search_get_only_the_time_left(tmp_path, monkeypatch):
    import time

    from tabverify.program import database_table

    path = native_sqlite(tmp_path / "votes.sqlite")
    with connect(path) as db:
        table = open_table(db, "election", cache_dir=tmp_path / "cache")
        assert table.query_timeout() == database_table.QUERY_TIMEOUT_S  # no search running
        table.deadline = time.monotonic() + 1.0
        assert 0.5 < table.query_timeout() <= 1.0
        table.deadline = time.monotonic() - 5  # spent: the floor, never zero or negative
        assert table.query_timeout() == database_table.MIN_QUERY_S
        table.deadline = time.monotonic() - 5
        assert table.data_row_indices.count == len(NATIVE_ROWS)  # counted with the full limit all the same
        assert table.deadline < time.monotonic()  # and the bound is back afterwards
        table.deadline = 0.0
        seen: list[float] = []
        original = db.query

        def spy(sql, **kwargs):
            seen.append(kwargs["timeout_s"])
            return original(sql, **kwargs)

        monkeypatch.setattr(db, "query", spy)
        TableVerifier(limits=SearchLimits(max_milliseconds=2000)).verify(
            "mary jones was first elected in 1986", table
        )
        # the search's queries run under its 2 s bound; the evidence query after it gets the full limit
        assert seen and min(seen) <= 2.0 and seen[-1] == database_table.QUERY_TIMEOUT_S
        assert table.deadline == 0.0


def test_value_index_is_cached_reused_and_rebuilt_when_the_file_changes(tmp_path, monkeypatch):
    import tabverify.program.database_table as module

    path = native_duckdb(tmp_path / "votes.duckdb")
    cache = tmp_path / "cache"
    builds = []
    real = module.build_value_index
    monkeypatch.setattr(module, "build_value_index", lambda *a, **k: builds.append(1) or real(*a, **k))
    with connect(path) as db:
        open_table(db, "election", cache_dir=cache)
    written = list(cache.glob("*.json"))
    assert len(written) == 1 and builds
    stamp, built = written[0].stat().st_mtime_ns, len(builds)
    with connect(path) as db:
        again = open_table(db, "election", cache_dir=cache)
    assert len(builds) == built and written[0].stat().st_mtime_ns == stamp
    assert again.n_rows == 5
    conn = duckdb.connect(str(path))
    conn.execute("INSERT INTO election VALUES ('ohio 6', 'ann lee', 'green', 2004, 1000)")
    conn.close()
    with connect(path) as db:
        changed = open_table(db, "election", cache_dir=cache)
    assert len(builds) > built and changed.n_rows == 6


@pytest.mark.parametrize("make", [native_duckdb, native_sqlite], ids=["duckdb", "sqlite"])
def test_database_unchanged_and_unlocked_after_verification(verifier, tmp_path, make):
    path = make(tmp_path / "votes.db")
    before = digest(path)
    with connect(path) as db:
        table = open_table(db, "election", cache_dir=tmp_path / "cache")
        verifier.verify("there be 3 incumbent from the democratic party", table)
        # while open: another process reads the file (DuckDB and SQLite)
        reader = subprocess.run([sys.executable, "-c", READER, str(path), make.__name__], capture_output=True,
                                text=True, timeout=120)  # fmt: skip
        assert reader.returncode == 0 and reader.stdout.strip() == "5", reader.stderr
    assert digest(path) == before
    # after close: a writer works
    if make is native_duckdb:
        writer = duckdb.connect(str(path))
        writer.execute("DELETE FROM election WHERE votes < 0")
    else:
        writer = sqlite3.connect(path, timeout=1)
        writer.execute("DELETE FROM election WHERE votes < 0")
        writer.commit()
    writer.close()


@pytest.mark.parametrize("engine", ["duckdb", "sqlite"])
def test_user_column_named_rowid_does_not_make_row_keys(verifier, tmp_path, engine):
    """A column called rowid hides the engine's: its NULLs and repeats were taken as row keys
    (int(None) crashed; repeated keys merged rows)."""
    path = tmp_path / f"dup.{engine}"
    rows = [("alpha", 1, 10), ("beta", 1, 20), ("gamma", None, 30), ("delta", None, 40)]
    if engine == "duckdb":
        conn = duckdb.connect(str(path))
        conn.execute("CREATE TABLE t (name VARCHAR, rowid INTEGER, score INTEGER)")
        conn.executemany("INSERT INTO t VALUES (?, ?, ?)", rows)
        conn.close()
    else:
        lite = sqlite3.connect(path)
        lite.execute("CREATE TABLE t (name TEXT, rowid INTEGER, score INTEGER)")
        lite.executemany("INSERT INTO t VALUES (?, ?, ?)", rows)
        lite.commit()
        lite.close()
    with connect(path) as db:
        table = open_table(db, "t", cache_dir=tmp_path / "cache")
        assert isinstance(table, DatabaseTable) and table.n_rows == 4
        keys = {r for c in table.index.columns for v in c.values for r in v.rows}
        assert len(keys) == 4
        verdict = verifier.verify("there be 4 name", table)
        assert verdict.entailed
        if engine == "sqlite":  # SQLite's rowid is still reachable as _rowid_: the row order stays
            assert verifier.verify("delta has the highest score", table).entailed


def test_wide_native_table_opens_in_linear_time(tmp_path):
    """300 columns: every index query carried every column (minutes); one column each now."""
    path = tmp_path / "wide.duckdb"
    conn = duckdb.connect(str(path))
    conn.execute(f"CREATE TABLE wide ({', '.join(f'col{i} INTEGER' for i in range(300))})")
    conn.execute(f"INSERT INTO wide VALUES ({', '.join(str(i) for i in range(300))})")
    conn.close()
    lengths: list[int] = []
    with connect(path) as db:
        query = db.query

        def recorded(sql, *args, **kwargs):
            lengths.append(len(sql if isinstance(sql, str) else sql.sql()))
            return query(sql, *args, **kwargs)

        db.query = recorded  # type: ignore[method-assign]
        table = open_table(db, "wide", cache=False)
        assert table.n_columns == 300 and table.n_rows == 1
        assert table.index.columns[299].values[0].text == "299"
        assert table.index.columns[7].minimum == 7.0
    # each index query reads one column: its SQL does not grow with the table's width
    assert lengths and max(lengths) < 3000
