"""The command line, run as a user runs it (a real process, real files, exit codes): `check` and `program`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.conftest import run


def test_check_exit_code_0_when_entailed(election_path: Path) -> None:
    result = run("check", str(election_path), "mary jones be first elected in 1986")
    assert result.returncode == 0, result.stderr
    assert "ENTAILED" in result.stdout
    assert "program:" in result.stdout


def test_check_exit_code_1_when_any_refuted_and_json(election_path: Path) -> None:
    result = run(
        "check",
        str(election_path),
        "mary jones be first elected in 1986",
        "mary jones be first elected in 1994",
        "--json",
    )
    assert result.returncode == 1, result.stderr
    verdicts = json.loads(result.stdout)["verdicts"]
    assert [v["label"] for v in verdicts] == ["ENTAILED", "REFUTED"]
    assert all(v["program"] for v in verdicts)


@pytest.mark.parametrize("content", [b"", b"\x00\x01binary", b"a#b\n1\n"])
def test_check_exit_code_2_on_bad_table(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "bad.html.csv"
    path.write_bytes(content)
    result = run("check", str(path), "anything")
    assert result.returncode == 2
    assert "error" in result.stderr
    assert "Traceback" not in result.stderr


def test_check_missing_file_and_missing_statement(tmp_path: Path, election_path: Path) -> None:
    assert run("check", str(tmp_path / "none.csv"), "x").returncode == 2
    assert run("check", str(election_path)).returncode == 2
    folder = run("check", str(tmp_path), "x")
    assert folder.returncode == 2 and "is a folder" in folder.stderr


def test_check_header_only_table_is_bad_input(tmp_path: Path) -> None:
    path = tmp_path / "header.csv"
    path.write_text("team,points\n", encoding="utf-8")
    result = run("check", str(path), "the hawks have 3 points")
    assert result.returncode == 2
    assert "no data rows" in result.stderr


def test_check_marks_evidence_cells_off_a_terminal(election_path: Path) -> None:
    result = run("check", str(election_path), "mary jones be first elected in 1986")
    assert "*mary jones*" in result.stdout
    assert "*cell* = evidence read by the program" in result.stdout


def test_program_run_prints_value_on_last_line(election_path: Path) -> None:
    result = run(
        "program", "run", str(election_path), "eq{count{filter_eq{all_rows; party; democratic}}; 3}=True"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "True"
    value = run("program", "run", str(election_path), "hop{argmax{all_rows; votes}; incumbent}")
    assert value.stdout.strip().splitlines()[-1] == "mary jones"


def test_program_run_bad_program_exits_2(election_path: Path) -> None:
    result = run("program", "run", str(election_path), "eq{count{all_rows}; 3")
    assert result.returncode == 2
    assert "missing '}'" in result.stderr


def test_check_json_results_are_json_booleans(election_path: Path) -> None:
    result = run("check", str(election_path), "mary jones be first elected in 1986", "--json")
    verdict = json.loads(result.stdout)["verdicts"][0]
    assert verdict["result"] is True and verdict["limits"] == []
    assert all(isinstance(a["result"], bool) for a in verdict["alternatives"])


def test_check_refuses_a_statement_beyond_the_limit_in_one_line(election_path: Path) -> None:
    result = run("check", str(election_path), "mary jones " * 5_000)
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr


COUNTRIES = """country,continent,capital,population (millions)
germany,europe,berlin,83.2
france,europe,paris,67.8
brazil,south america,brasilia,203.1
nigeria,africa,abuja,223.8
"""


def test_check_no_evidence_is_not_enough_info_exit_1(tmp_path: Path) -> None:
    path = tmp_path / "countries.csv"
    path.write_text(COUNTRIES, encoding="utf-8")
    result = run("check", str(path), "the capital of kenya is lagos")
    assert result.returncode == 1, result.stderr
    assert "NOT ENOUGH INFO" in result.stdout and "ENTAILED" not in result.stdout
    assert "no evidence found" in result.stdout and "'kenya'" in result.stdout and "'lagos'" in result.stdout
    result = run("check", str(path), "the capital of kenya is lagos", "--json")
    assert result.returncode == 1, result.stderr
    (verdict,) = json.loads(result.stdout)["verdicts"]
    assert verdict["label"] == "NOT ENOUGH INFO" and verdict["program"] == ""
    assert verdict["notes"][0].startswith("no evidence found") and verdict["guess"] in ("ENTAILED", "REFUTED")


def test_check_prints_why_the_confidence_is_lower(tmp_path: Path) -> None:
    path = tmp_path / "games.csv"
    path.write_text(
        "date,opponent,result\nnov 2,hartford,w 85 - 70\nnov 9,dayton,l 60 - 72\nnov 16,hartford,w 77 - 74\n",
        encoding="utf-8",
    )
    result = run("check", str(path), "the hawks lost both games against hartford", "--json")
    (verdict,) = json.loads(result.stdout)["verdicts"]
    if verdict["label"] != "NOT ENOUGH INFO" and "result" not in verdict["program"]:
        assert any("'lost'" in note for note in verdict["notes"]) and verdict["confidence"] < 0.75
        text = run("check", str(path), "the hawks lost both games against hartford")
        assert "note: lower confidence: 'lost'" in text.stdout


@pytest.mark.parametrize(
    "statement",
    [
        "\udcff brazil has the largest population",  # a byte that is not UTF-8 (a lone surrogate here)
        "<b>brazil</b> has the <i>largest</i> population",
        "brazil has 1e400 people",
        "brazil has " + "9" * 400 + " people",
        "brazil",  # a lone cell: linked, but no program checks it
    ],
)
def test_check_hostile_statements_give_a_verdict_not_a_traceback(tmp_path: Path, statement: str) -> None:
    path = tmp_path / "countries.csv"
    path.write_text(COUNTRIES, encoding="utf-8")
    result = run("check", str(path), statement, "--json")
    assert result.returncode in (0, 1) and "Traceback" not in result.stderr, result.stderr
    (verdict,) = json.loads(result.stdout)["verdicts"]
    assert (result.returncode == 0) == (verdict["label"] == "ENTAILED")
    assert set(verdict) >= {"label", "program", "result", "confidence", "evidence", "alternatives", "limits",
                            "notes"}  # fmt: skip
    if verdict["label"] == "NOT ENOUGH INFO":
        assert verdict["program"] == "" and verdict["guess"] in ("ENTAILED", "REFUTED")
        assert "no word of it names the table" not in verdict["notes"][0] or statement != "brazil"
