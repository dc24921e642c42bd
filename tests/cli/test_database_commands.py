"""``check --db`` and ``program run --engine/--db`` as a user runs them, hostile input included:
every failure is exit 2 with one line and no traceback, and the database is left as it was."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import duckdb
import pytest

from tests.cli.conftest import run
from tests.conftest import ELECTION_ROWS, TABFACT, needs_tabfact

NATIVE_ROWS = [(r[0], r[1], r[2], int(r[3]), int(r[4].replace(",", ""))) for r in ELECTION_ROWS[1:]]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "votes.duckdb"
    conn = duckdb.connect(str(path))
    conn.execute(
        'CREATE TABLE election (district VARCHAR, incumbent VARCHAR, party VARCHAR, "first elected" INTEGER, '
        "votes INTEGER)"
    )
    conn.executemany("INSERT INTO election VALUES (?, ?, ?, ?, ?)", NATIVE_ROWS)
    conn.execute('CREATE TABLE "t; DROP TABLE election" (a INTEGER, b VARCHAR)')
    conn.execute("INSERT INTO \"t; DROP TABLE election\" VALUES (1, 'x'), (2, 'y')")
    conn.execute('CREATE TABLE "weird""name" (a INTEGER, b VARCHAR)')
    conn.execute("INSERT INTO \"weird\"\"name\" VALUES (1, 'x'), (2, 'y')")
    conn.execute("CREATE TABLE empty (a INTEGER, b VARCHAR)")
    conn.execute("CREATE TABLE nulls (a INTEGER, b VARCHAR)")
    conn.execute("INSERT INTO nulls VALUES (NULL, NULL), (NULL, NULL)")
    conn.close()
    return path


def state(path: Path) -> tuple[str, int]:
    return hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns


def one_line_error(result) -> str:
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:"), result.stderr
    return lines[0]


def test_check_exit_codes_and_json(db, tmp_path):
    before = state(db)
    cache = ["--cache", str(tmp_path / "cache")]
    ok = run("check", "--db", str(db), "--table", "election", "mary jones was first elected in 1986", *cache)
    assert ok.returncode == 0 and "ENTAILED" in ok.stdout and "sql:" in ok.stdout
    refuted = run(
        "check", "--db", str(db), "--table", "election", "john smith was first elected in 1994", *cache
    )
    assert refuted.returncode == 1 and "REFUTED" in refuted.stdout
    payload = run(
        "check", "--db", str(db), "--table", "election", "there be 3 incumbent from the democratic party",
        "--json", *cache,
    )  # fmt: skip
    assert payload.returncode == 0
    verdict = json.loads(payload.stdout)["verdicts"][0]
    assert verdict["sql"] and "election" in verdict["source"] and verdict["trace"]
    assert state(db) == before


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--table", "nope", "x"], "its tables are: election"),
        (["x"], "--cache, --caption and --models go with --db TARGET --table NAME"),
        (["--table", "empty", "there be 2 rows"], "no data rows"),
        (["--table", "election", "mary jones " * 150], "at most 1000"),
    ],
)
def test_check_refuses_bad_input_with_one_line(db, tmp_path, args, needle):
    before = state(db)
    line = one_line_error(run("check", "--db", str(db), *args, "--cache", str(tmp_path / "c")))
    assert needle in line
    assert state(db) == before


def test_check_refuses_bad_targets(tmp_path):
    corrupt = tmp_path / "corrupt.duckdb"
    corrupt.write_bytes(b"\0" * 8 + b"DUCK" + b"\x01" * 5000)
    other = tmp_path / "notes.txt"
    other.write_text("x")
    for target in (
        tmp_path / "missing.duckdb",
        corrupt,
        other,
        tmp_path,
        "postgresql://nobody@127.0.0.1:1/db",
    ):
        assert str(target).split("://")[0] in one_line_error(
            run("check", "--db", str(target), "--table", "t", "x")
        )
    assert "--table" in one_line_error(run("check", "--table", "t", "x"))


@pytest.mark.parametrize("name", ["t; DROP TABLE election", 'weird"name'])
def test_hostile_table_names_are_tables_not_sql(db, tmp_path, name):
    before = state(db)
    result = run("check", "--db", str(db), "--table", name, "there be 2 rows", "--cache", str(tmp_path / "c"))
    assert result.returncode in (0, 1) and "Traceback" not in result.stderr
    assert state(db) == before
    conn = duckdb.connect(str(db), read_only=True)
    assert conn.execute("SELECT count(*) FROM election").fetchone() == (5,)
    conn.close()


def test_markup_and_control_characters_in_a_statement(db, tmp_path):
    statement = "mary [bold]jones[/bold] \x1b[31m was first elected in 1986\x07"
    result = run("check", "--db", str(db), "--table", "election", statement, "--cache", str(tmp_path / "c"))
    assert result.returncode in (0, 1)
    assert "\x1b" not in result.stdout and "\\x1b" in result.stdout and "[bold]" in result.stdout


def test_null_table_and_a_cache_that_is_a_file(db, tmp_path):
    result = run("check", "--db", str(db), "--table", "nulls", "a is 1", "--cache", str(tmp_path / "index"))
    assert result.returncode in (0, 1) and "Traceback" not in result.stderr
    cache = tmp_path / "file"
    cache.write_text("not a folder")
    result = run("check", "--db", str(db), "--table", "nulls", "a is 1", "--cache", str(cache))
    assert result.returncode == 2 and "--cache" in one_line_error(result) and "not a folder" in result.stderr
    assert cache.read_text() == "not a folder"


def test_program_run_engines_agree(election_path):
    program = "sum{all_rows; votes}"
    values = {
        engine: run("program", "run", str(election_path), program, "--engine", engine)
        for engine in ("memory", "duckdb", "sqlite")
    }
    assert all(r.returncode == 0 for r in values.values()), {e: r.stderr for e, r in values.items()}
    last = {engine: r.stdout.strip().splitlines()[-1] for engine, r in values.items()}
    assert last["memory"] == last["duckdb"] == last["sqlite"] == "258780"
    assert "choose memory, duckdb or sqlite" in one_line_error(
        run("program", "run", str(election_path), program, "--engine", "bogus")
    )
    one_line_error(run("program", "run", str(election_path), "sum{all_rows; nosuch}", "--engine", "duckdb"))


def test_program_run_on_a_database_table(db, tmp_path):
    cache = ["--cache", str(tmp_path / "c")]
    result = run("program", "run", "--db", str(db), "--table", "election", "sum{all_rows; votes}", *cache)
    assert result.returncode == 0 and result.stdout.startswith("sql: ")
    assert result.stdout.strip().splitlines()[-1] == "258780"
    for program in ("sum{all_rows; nosuch}", "eq{count{all_rows}}", "sum{all_rows; incumbent}"):
        one_line_error(run("program", "run", "--db", str(db), "--table", "election", program, *cache))


@pytest.mark.data
@needs_tabfact()
def test_bench_tabfact_duckdb_matches_memory(tmp_path):
    accuracy = {}
    for engine in ("memory", "duckdb"):
        result = run(
            "bench", "tabfact", "--data", str(TABFACT), "--engine", engine, "--limit", "20", timeout=900
        )
        assert result.returncode == 0, result.stderr
        metrics = json.loads(result.stdout)["metrics"]
        assert metrics["failures"] == 0
        accuracy[engine] = metrics["accuracy"]
    assert accuracy["memory"] == accuracy["duckdb"]
