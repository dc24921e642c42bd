"""``tabverify sql``: one read-only query (or the schema) from the shell, as a user runs it."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tests.cli.conftest import run


@pytest.fixture
def database(tmp_path: Path) -> Path:
    path = tmp_path / "league.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE teams (id INTEGER PRIMARY KEY, name TEXT NOT NULL, wins INTEGER)")
    conn.executemany("INSERT INTO teams VALUES (?, ?, ?)", [(i, f"team {i}", i % 7) for i in range(1, 31)])
    conn.execute("INSERT INTO teams VALUES (31, ?, 0)", ("\x1b[31mred\x1b[0m [bold]x[/bold]",))
    conn.commit()
    conn.close()
    return path


def test_query_prints_an_aligned_table(database: Path) -> None:
    result = run("sql", str(database), "SELECT id, name FROM teams WHERE id <= 2 ORDER BY id")
    assert result.returncode == 0, result.stderr
    lines = [line.rstrip() for line in result.stdout.splitlines() if line.strip()]
    assert lines[0].split() == ["id", "name"]
    assert lines[-1].split() == ["2", "team", "2"]
    assert "(2 rows" in result.stderr


def test_truncated_query_says_so(database: Path) -> None:
    result = run("sql", str(database), "SELECT * FROM teams", "--max-rows", "3")
    assert result.returncode == 0
    assert "showing 3 of 31 rows; aggregate in SQL" in result.stderr


def test_json_output_is_the_query_result(database: Path) -> None:
    result = run("sql", str(database), "SELECT count(*) AS n FROM teams", "--json")
    assert result.returncode == 0
    payload = json.loads(result.stdout)
    assert payload["columns"] == ["n"] and payload["rows"] == [[31]] and payload["ok"] is True


def test_refused_query_exits_2_with_one_line(database: Path) -> None:
    before = database.read_bytes()
    result = run("sql", str(database), "DROP TABLE teams")
    assert result.returncode == 2
    assert result.stderr.startswith("error: refused:") and len(result.stderr.strip().splitlines()) == 1
    assert database.read_bytes() == before


def test_refused_query_in_json_exits_2(database: Path) -> None:
    result = run("sql", str(database), "SELECT 1; DELETE FROM teams", "--json")
    assert result.returncode == 2 and json.loads(result.stdout)["error_kind"] == "refused"


def test_timeout_exits_2(database: Path) -> None:
    query = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r"
    result = run("sql", str(database), query, "--timeout", "0.5")
    assert result.returncode == 2 and result.stderr.startswith("error: timeout:")


def test_control_characters_and_markup_are_shown_as_written(database: Path) -> None:
    result = run("sql", str(database), "SELECT name FROM teams WHERE id = 31")
    assert result.returncode == 0
    assert (
        "\x1b" not in result.stdout and "\\x1b[31mred" in result.stdout and "[bold]x[/bold]" in result.stdout
    )


def test_missing_database_and_bad_options(tmp_path: Path, database: Path) -> None:
    missing = run("sql", str(tmp_path / "nope.sqlite"), "SELECT 1")
    assert missing.returncode == 2 and "nope.sqlite: no such file or folder" in missing.stderr
    assert run("sql", str(database), "SELECT 1", "--max-rows", "0").returncode == 2
    assert run("sql", str(database), "SELECT 1", "--timeout", "0").returncode == 2
    neither = run("sql", str(database))
    assert neither.returncode == 2 and "--schema" in neither.stderr


def test_schema_lists_tables_columns_keys_and_counts(database: Path) -> None:
    result = run("sql", str(database), "--schema")
    assert result.returncode == 0, result.stderr
    assert "table teams (31 rows)" in result.stdout
    assert "id  INTEGER  [primary key, not null]" in result.stdout
    payload = json.loads(run("sql", str(database), "--schema", "--json").stdout)
    assert payload["tables"][0]["name"] == "teams" and payload["tables"][0]["row_count"] == 31


def test_help_has_examples() -> None:
    result = run("sql", "--help")
    assert result.returncode == 0 and "tabverify sql data.sqlite" in result.stdout
