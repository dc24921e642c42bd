"""``tabverify check --lake LAKE STATEMENT``: the evidence table is retrieved from a lake, then the
statement is verified against it; the output names the table and the runners-up."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tabverify.lake.indexing import build_lake
from tests.cli.conftest import run

TABLES = {
    "league.csv": "week,date,opponent,result,attendance\n"
    "1,september 8,dayton rivers,w 21 - 7,4500\n2,september 15,albany comets,l 10 - 14,3200\n"
    "3,september 22,dayton rivers,w 17 - 3,5100\n4,september 29,salem miners,w 28 - 0,2900\n",
    "planets.csv": "planet,moons\nmercury,0\nvenus,0\nearth,1\nmars,2\n",
    "election.csv": "district,incumbent,party\nohio 1,tom luken,democratic\nohio 2,bill gradison,republican\n",
    "films.csv": "year,title,studio\n1994,pulp fiction,miramax\n1997,jackie brown,miramax\n",
    "cup.csv": "round,clubs remaining,new entries this round\nfirst round,156,86\nthird round,59,none\n",
}


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("check-lake")
    source = root / "tables"
    source.mkdir()
    for name, content in TABLES.items():
        (source / name).write_text(content, encoding="utf-8")
    build_lake(source, root / "lake", "lexical", captions={"election.csv": "ohio house elections"})
    return root / "lake"


def error_line(result: subprocess.CompletedProcess[str]) -> str:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 2, result.stdout + result.stderr
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "Traceback" not in result.stderr
    return lines[0]


def test_check_lake_names_the_table_and_the_runners_up(lake: Path) -> None:
    result = run("check", "--lake", str(lake), "there be 2 game against the dayton river",
                 "mars have 3 moon")  # fmt: skip
    assert result.returncode == 1, result.stderr  # the second statement is refuted
    out = result.stdout
    assert "ENTAILED" in out and "REFUTED" in out
    assert "table: league.csv" in out and "table: planets.csv" in out
    assert out.count("runners-up: ") == 2
    assert "program: " in out


def test_check_lake_json_carries_the_evidence_table(lake: Path) -> None:
    result = run("check", "--lake", str(lake), "tom luken be the democratic incumbent of ohio 1", "--json")
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    assert payload["lake"] == str(lake)
    (verdict,) = payload["verdicts"]
    assert verdict["label"] == "ENTAILED" and verdict["evidence_table"] == "election.csv"
    assert isinstance(verdict["runners_up"], list) and "election.csv" not in verdict["runners_up"]
    assert verdict["runners_up"]


def test_check_with_a_table_file_has_no_lake_fields(tmp_path: Path) -> None:
    table = tmp_path / "planets.csv"
    table.write_text(TABLES["planets.csv"], encoding="utf-8")
    result = run("check", str(table), "mars have 2 moon", "--json")
    assert result.returncode == 0, result.stderr
    (verdict,) = json.loads(result.stdout)["verdicts"]
    assert "evidence_table" not in verdict and "runners_up" not in verdict


def test_usage_errors_exit_2_with_one_line(lake: Path, tmp_path: Path) -> None:
    table = tmp_path / "planets.csv"
    table.write_text(TABLES["planets.csv"], encoding="utf-8")
    assert "no such folder" in error_line(
        run("check", "--lake", str(tmp_path / "missing"), "mars have 2 moon")
    )
    empty = tmp_path / "empty"
    empty.mkdir()
    error_line(run("check", "--lake", str(empty), "mars have 2 moon"))  # not a lake
    error_line(run("check", "--lake", str(table), "mars have 2 moon"))  # a file, not a lake
    assert "not a TABLE file" in error_line(run("check", "--lake", str(lake), str(table), "mars have 2 moon"))
    assert "not a TABLE file" in error_line(
        run("check", "--lake", str(lake), "other.csv", "mars have 2 moon")
    )
    assert "--db" in error_line(run("check", "--lake", str(lake), "--db", str(table), "mars have 2 moon"))
    assert "--table" in error_line(run("check", "--lake", str(lake), "--table", "t", "mars have 2 moon"))
    # a statement no table matches is NOT ENOUGH INFO (exit 1), and the others are still checked
    both = run("check", "--lake", str(lake), "zzqx qqvw", "mars have 2 moon")
    assert both.returncode == 1 and "Traceback" not in both.stderr, both.stderr
    assert "NOT ENOUGH INFO" in both.stdout and "no table of the lake" in both.stdout
    assert "mars have 2 moon" in both.stdout
