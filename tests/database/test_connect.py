"""Opening databases: targets recognised by their bytes, clear one-line errors, schemas with keys and
row counts, BIRD descriptions, data files as tables, and never a lock against other readers."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import duckdb
import pytest

from tabverify.database import ColumnSchema, QueryResult, connect
from tabverify.errors import DatabaseError
from tests.database.conftest import file_state, setup_postgres


def test_missing_file_names_the_target(tmp_path: Path) -> None:
    with pytest.raises(
        DatabaseError, match=r"nope\.sqlite: no such file or folder; give a DuckDB or SQLite file"
    ):
        connect(tmp_path / "nope.sqlite")


def test_text_file_named_duckdb_is_not_a_database(tmp_path: Path) -> None:
    fake = tmp_path / "x.duckdb"
    fake.write_text("hello, I am text\n")
    with pytest.raises(DatabaseError, match=r"x\.duckdb: not a DuckDB or SQLite database"):
        connect(fake)


def test_empty_and_truncated_files(tmp_path: Path, sqlite_path: Path) -> None:
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    with pytest.raises(DatabaseError, match="the file is empty"):
        connect(empty)
    broken = tmp_path / "broken.sqlite"
    broken.write_bytes(sqlite_path.read_bytes()[:100] + b"\x00" * 50)
    with pytest.raises(DatabaseError, match=r"broken\.sqlite"):
        connect(broken).schema()


def test_folder_without_data_files(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("nothing here")
    with pytest.raises(DatabaseError, match="no .parquet, .csv or .tsv files in this folder"):
        connect(tmp_path)


def test_unreachable_postgres_fails_fast_without_password() -> None:
    started = time.monotonic()
    with pytest.raises(DatabaseError) as raised:
        connect("postgresql://reader:s3cret-pw@127.0.0.1:1/db")
    message = str(raised.value)
    assert time.monotonic() - started < 10
    assert "s3cret-pw" not in message and message.startswith(
        "postgresql://reader@127.0.0.1:1/db: cannot connect"
    )
    assert raised.value.__cause__ is None and raised.value.__suppress_context__


def test_bad_arguments_are_value_errors(sqlite_path: Path) -> None:
    with connect(sqlite_path) as db:
        for caps in (
            {"max_rows": 0},
            {"max_rows": 100_001},
            {"timeout_s": 0},
            {"timeout_s": 601},
            {"max_bytes": 0},
        ):
            with pytest.raises(ValueError):
                db.query("SELECT 1", **caps)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="threads"):
        connect(sqlite_path, threads=0)


def test_file_type_is_read_from_magic_bytes_not_extension(
    tmp_path: Path, sqlite_path: Path, duckdb_path: Path
) -> None:
    sqlite_as_db = tmp_path / "really-sqlite.duckdb"
    sqlite_as_db.write_bytes(sqlite_path.read_bytes())
    duck_as_data = tmp_path / "really-duckdb.data"
    duck_as_data.write_bytes(duckdb_path.read_bytes())
    with connect(sqlite_as_db) as db:
        assert db.dialect == "sqlite"
    with connect(duck_as_data) as db:
        assert db.dialect == "duckdb" and db.query("SELECT count(*) FROM t").rows == ((50,),)


def test_closed_database_says_so(sqlite_path: Path) -> None:
    db = connect(sqlite_path)
    db.close()
    db.close()  # twice is fine
    with pytest.raises(DatabaseError, match="closed"):
        db.query("SELECT 1")


@pytest.mark.parametrize("engine", ["duckdb", "sqlite", "postgres"], indirect=True)
def test_schema_types_keys_and_counts(engine) -> None:
    schema = engine.db.schema()
    assert schema is engine.db.schema()  # cached
    assert {"t", "u"} <= set(schema.table_names)
    t = engine.db.table("T")  # case-insensitive
    assert [c.name for c in t.columns] == ["id", "name", "score"]
    assert t.primary_key == ("id",) and t.column("id").primary_key and not t.column("id").nullable
    assert not t.column("name").nullable and t.column("score").nullable
    assert t.column("score").type.upper() in {"DOUBLE", "REAL", "DOUBLE PRECISION"}
    assert t.row_count == 50 and t.row_count_exact
    u = engine.db.table("u")
    assert [(f.columns, f.ref_table, f.ref_columns) for f in u.foreign_keys] == [(("t_id",), "t", ("id",))]
    with pytest.raises(DatabaseError, match=r"no table named 'nope' in .*; its tables are: .*t, u"):
        engine.db.table("nope")
    assert schema.to_dict()["tables"][0]["columns"]


def test_postgres_large_table_count_is_an_estimate(postgres_server) -> None:
    postgres_server.admin("CREATE TABLE IF NOT EXISTS wide_est (a int)")
    postgres_server.admin("GRANT SELECT ON wide_est TO reader")
    postgres_server.admin("UPDATE pg_class SET reltuples = 5000000 WHERE relname = 'wide_est'")
    with connect(postgres_server.reader_url) as db:
        table = db.table("wide_est")
        assert table.row_count == 5_000_000 and not table.row_count_exact
    postgres_server.admin("DROP TABLE wide_est")


def _descriptions(folder: Path) -> None:
    folder.mkdir()
    (folder / "t.csv").write_bytes(
        "\ufefforiginal_column_name,column_name,column_description,data_format,value_description\r\n"
        "ID ,,identification of the row,integer,\r\n"
        "name,Full Name,,text,\r\n"
        'score,,the score,real,"0-100; higher is better"\r\n'.encode()
    )
    (folder / "U.csv").write_bytes(
        b"original_column_name,column_name,column_description,data_format,value_description\n"
        b"t_id,,points to t \x95 its id,integer,\n"
    )


def test_bird_descriptions_next_to_the_database(tmp_path: Path, sqlite_path: Path) -> None:
    _descriptions(tmp_path / "database_description")
    with connect(sqlite_path) as db:
        t = db.table("t")
        assert t.column("id").description == "identification of the row"
        assert t.column("name").description == "Full Name"
        assert t.column("score").value_description == "0-100; higher is better"
        assert db.table("u").column("t_id").description == "points to t • its id"  # Windows-1252 file
        assert db.table("u").column("id").description is None


def test_bird_descriptions_given_explicitly(tmp_path: Path, duckdb_path: Path) -> None:
    _descriptions(tmp_path / "docs")
    with connect(duckdb_path, descriptions=tmp_path / "docs") as db:
        assert db.table("t").column("score").description == "the score"
    with pytest.raises(DatabaseError, match="not a folder"):
        connect(duckdb_path, descriptions=tmp_path / "missing")


def test_folder_of_parquet_csv_tsv_files(tmp_path: Path) -> None:
    data = tmp_path / "lake"
    data.mkdir()
    (data / "cities.csv").write_text("city,population\nhaifa,285000\neilat,52000\n")
    (data / "2020 scores.tsv").write_text("team\tpoints\nhawks\t102\n")
    duckdb.connect().execute(
        f"COPY (SELECT range AS n FROM range(10)) TO '{data / 'numbers.parquet'}' (FORMAT parquet)"
    )
    before = file_state(data)
    with connect(data) as db:
        assert set(db.schema().table_names) == {"cities", "t_2020_scores", "numbers"}
        assert db.query("SELECT sum(population) FROM cities").rows == ((337000,),)
        assert db.query("SELECT points FROM t_2020_scores").rows == ((102,),)
        assert db.table("numbers").row_count == 10
        assert db.query("SELECT * FROM read_csv('/etc/passwd')").error_kind == "refused"
        assert db._conn.execute("SELECT current_setting('enable_external_access')").fetchone() == (False,)  # type: ignore[attr-defined]
    assert file_state(data) == before


def test_single_csv_file(tmp_path: Path) -> None:
    path = tmp_path / "league.csv"
    path.write_text("team,wins\nhawks,3\nowls,1\n")
    with connect(path) as db:
        result = db.query("SELECT team FROM league ORDER BY wins DESC", max_rows=1)
        assert result.rows == (("hawks",),) and result.truncated and result.total_rows == 2


def test_duckdb_query_leaves_no_timer_thread_behind(tmp_path: Path) -> None:
    """The timeout timer is joined before a query returns: a daemon timer thread still winding
    down when the interpreter exits aborted the process (exit 134, "FATAL: exception not
    rethrown") after the right error message, in about half the runs of a failing CLI command."""
    path = tmp_path / "league.csv"
    path.write_text("team,wins\nhawks,3\nowls,1\n")
    with connect(path) as db:
        before = {t.ident for t in threading.enumerate()}
        for _ in range(20):
            assert db.query("SELECT count(*) FROM league").ok
            left = [t for t in threading.enumerate() if t.ident not in before]
            assert left == [], left


def test_bad_csv_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "broken.parquet"
    path.write_bytes(b"PAR1 this is not really parquet")
    with pytest.raises(DatabaseError, match=r"broken\.parquet: cannot read as PARQUET"):
        connect(path)


def test_values_are_plain_python(tmp_path: Path, duckdb_path: Path) -> None:
    with connect(duckdb_path) as db:
        result = db.query(
            "SELECT 1.50::DECIMAL(10,2) AS d, 2::DECIMAL(10,2) AS i, DATE '2020-01-31' AS day, "
            "'\\x00\\x01'::BLOB AS b, repeat('z', 40)::BLOB AS long_blob, NULL AS nothing, true AS yes, [1, 2] AS list"
        )
    assert result.ok, result.error
    assert result.rows == ((1.5, 2, "2020-01-31", "0x0001", "<40 bytes>", None, True, [1, 2]),)
    assert isinstance(result, QueryResult) and result.to_dict()["rows"][0][2] == "2020-01-31"


def test_params_are_bound(sqlite_path: Path) -> None:
    with connect(sqlite_path) as db:
        assert db.query("SELECT name FROM t WHERE id = ?", params=[7]).rows == (("name 7",),)


def test_two_readers_at_once_never_lock_each_other(sqlite_path: Path, duckdb_path: Path) -> None:
    with connect(sqlite_path) as first, connect(sqlite_path) as second:
        assert first.query("SELECT count(*) FROM t").rows == second.query("SELECT count(*) FROM t").rows
    script = (
        "import sys, time; from tabverify.database import connect\n"
        "db = connect(sys.argv[1]); print(db.query('SELECT count(*) FROM t').rows[0][0], flush=True); time.sleep(2)\n"
    )
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(duckdb_path)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    with connect(duckdb_path) as db:  # a third reader while both processes hold the file
        assert db.query("SELECT count(*) FROM t").rows == ((50,),)
    outputs = [p.communicate(timeout=60) for p in processes]
    assert [o[0].strip() for o in outputs] == ["50", "50"], outputs
    # a writer can open it again once the readers are gone (no lock left behind)
    writer = duckdb.connect(str(duckdb_path))
    writer.close()


def test_sqlite_reader_does_not_block_a_writer(sqlite_path: Path) -> None:
    import sqlite3

    with connect(sqlite_path) as db:
        assert db.query("SELECT count(*) FROM t").ok
        writer = sqlite3.connect(sqlite_path, timeout=1)
        writer.execute("INSERT INTO t VALUES (51, 'new', 0)")
        writer.commit()
        writer.close()
        assert db.query("SELECT count(*) FROM t").rows == ((51,),)


def test_postgres_descriptions_and_target_display(postgres_server, tmp_path: Path) -> None:
    setup_postgres(postgres_server)
    _descriptions(tmp_path / "docs")
    with connect(postgres_server.reader_url, descriptions=tmp_path / "docs") as db:
        assert db.target == postgres_server.reader_url
        assert db.table("t").column("id").description == "identification of the row"
        assert isinstance(db.table("t").columns[0], ColumnSchema)
