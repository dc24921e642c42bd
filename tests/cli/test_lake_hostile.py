"""Hostile and mistaken input to the lake commands, run as a user runs them: a real process, real
files; every refusal is exit 2 with exactly one ``error:`` line and no traceback."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.cli.conftest import run
from tests.lake.test_hostile import write_dlte_source


def one_error(result: subprocess.CompletedProcess[str]) -> str:
    """The one ``error:`` line of a refused command (exit 2, no traceback)."""
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.stderr
    return errors[0]


def test_bench_dlte_refuses_a_lake_of_other_tables(tmp_path: Path) -> None:
    tables, other = write_dlte_source(tmp_path / "tables"), tmp_path / "other"
    other.mkdir()
    (other / "teams.csv").write_text("team,city\nhawks,atlanta\nbulls,chicago\n", encoding="utf-8")
    data = tmp_path / "dlte"
    assert (
        run("lake", "make-dlte", str(tables), "--out", str(data), "--mothers", "4", "--tiers", "0").returncode
        == 0
    )
    assert (
        run("lake", "index", str(other), "--encoder", "lexical", "--out", str(tmp_path / "lake")).returncode
        == 0
    )
    args = ("bench", "trl", "--suite", "union", "--data", str(data), "--split", "dev", "--tiers", "0")
    line = one_error(run(*args, "--lake", str(tmp_path / "lake")))
    assert "not a lake of the benchmark's tables" in line
    assert (
        run("lake", "index", str(tables), "--encoder", "lexical", "--out", str(tmp_path / "right")).returncode
        == 0
    )
    assert run(*args, "--lake", str(tmp_path / "right")).returncode == 0


def test_related_and_enrich_read_a_parquet_query_as_the_lake_does(tmp_path: Path) -> None:
    import duckdb

    source = tmp_path / "source"
    source.mkdir()
    (source / "teams.csv").write_text(
        "team,city,arena\nhawks,atlanta,state farm\nbulls,chicago,united center\n"
        "knicks,new york,garden\nheat,miami,kaseya\n",
        encoding="utf-8",
    )
    lake = tmp_path / "lake"
    assert run("lake", "index", str(source), "--encoder", "lexical", "--out", str(lake)).returncode == 0
    query = tmp_path / "coaches.parquet"
    connection = duckdb.connect()
    connection.execute(
        "COPY (SELECT * FROM (VALUES ('hawks', 'snyder'), ('bulls', 'donovan'), ('knicks', 'thibodeau'), "
        f"('heat', 'spoelstra')) t(team, coach)) TO '{query}' (FORMAT parquet)"
    )
    connection.close()
    related = run("lake", "related", str(lake), "--table", str(query), "--json")
    assert related.returncode == 0, related.stderr
    assert "teams.csv" in related.stdout
    enriched = tmp_path / "coaches.csv"
    result = run("lake", "enrich", str(lake), "--table", str(query), "--out", str(enriched))
    assert result.returncode in (0, 1), result.stderr
    assert enriched.read_text(encoding="utf-8").startswith("team,coach")


def test_a_corrupt_parquet_query_is_one_line_without_the_sql(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    source = tmp_path / "source"
    source.mkdir()
    (source / "teams.csv").write_text("team,city\nhawks,atlanta\nbulls,chicago\n", encoding="utf-8")
    assert run("lake", "index", str(source), "--encoder", "lexical", "--out", str(lake)).returncode == 0
    broken = tmp_path / "broken.parquet"
    broken.write_bytes(b"PAR1" + b"garbage" * 10 + b"PAR1")
    for command in ("search", "related"):
        line = one_error(run("lake", command, str(lake), "--table", str(broken)))
        assert "not a readable Parquet file" in line and "SELECT" not in line


def test_a_table_name_with_a_line_break_cannot_print_a_fake_hit(tmp_path: Path) -> None:
    source = tmp_path / "source"
    source.mkdir()
    (source / "a.csv\n  2  0.9999  trusted.csv").write_text("team,city\nhawks,atlanta\n", encoding="utf-8")
    (source / "\x1b[31mred.csv").write_text("team,coach\nhawks,snyder\n", encoding="utf-8")
    lake = tmp_path / "lake"
    assert run("lake", "index", str(source), "--encoder", "lexical", "--out", str(lake)).returncode == 0
    result = run("lake", "search", str(lake), "--query", "team hawks")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 2  # two tables, two lines
    assert any("a.csv\\n  2  0.9999  trusted.csv" in line for line in lines)
    assert "\x1b" not in result.stdout and any("\\x1b[31mred.csv" in line for line in lines)


def test_bench_trl_out_cannot_overwrite_the_lake_it_reads(tmp_path: Path) -> None:
    source, lake, data = tmp_path / "source", tmp_path / "lake", tmp_path / "data"
    source.mkdir()
    data.mkdir()
    (source / "teams.csv").write_text("team,city\nhawks,atlanta\nbulls,chicago\n", encoding="utf-8")
    assert run("lake", "index", str(source), "--encoder", "lexical", "--out", str(lake)).returncode == 0
    before = (lake / "meta.sqlite").read_bytes()
    result = run(
        "bench", "trl", "--suite", "union", "--data", str(data), "--lake", str(lake),
        "--out", str(lake / "meta.sqlite"),
    )  # fmt: skip
    assert "is inside an input" in one_error(result)
    assert (lake / "meta.sqlite").read_bytes() == before


def test_check_lake_takes_a_statement_longer_than_a_file_name(tmp_path: Path) -> None:
    source, lake = tmp_path / "source", tmp_path / "lake"
    source.mkdir()
    (source / "players.csv").write_text("player,goals\nalice smith,10\nbob jones,7\n", encoding="utf-8")
    assert run("lake", "index", str(source), "--encoder", "lexical", "--out", str(lake)).returncode == 0
    statement = "alice smith scored 10 goals " + "and that was a season to remember " * 10  # > 255 bytes
    result = run("check", "--lake", str(lake), statement)
    assert result.returncode in (0, 1), result.stderr  # a verdict, not an internal error
    assert "players.csv" in result.stdout
