"""The command line, run as a user runs it (a real process, real files, exit codes): `crosscheck` and `tables`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.conftest import run


def test_crosscheck_exit_1_with_discrepancy_and_html(tmp_path: Path) -> None:
    from tests.crosscheck.conftest import SOURCE_TEX, target_html

    (tmp_path / "cited.tex").write_text(SOURCE_TEX, encoding="utf-8")
    (tmp_path / "paper.html").write_text(target_html(), encoding="utf-8")
    page = tmp_path / "report.html"
    result = run("crosscheck", str(tmp_path / "paper.html"), "--source", str(tmp_path / "cited.tex"),
                 "--html", str(page))  # fmt: skip
    assert result.returncode == 1, result.stderr
    assert "1 discrepancy\n" in result.stdout and "66.9" in result.stdout and "digit" in result.stdout
    assert page.exists() and "66.9" in page.read_text(encoding="utf-8")
    missing = tmp_path / "no-such-folder" / "report.html"
    refused = run("crosscheck", str(tmp_path / "paper.html"), "--source", str(tmp_path / "cited.tex"),
                  "--html", str(missing))  # fmt: skip
    assert refused.returncode == 2 and "does not exist" in refused.stderr and not missing.parent.exists()


def test_crosscheck_exit_0_and_json(tmp_path: Path) -> None:
    from tests.crosscheck.conftest import SOURCE_TEX, TARGET_ROWS, target_html

    rows = [r for r in TARGET_ROWS if not r[0].startswith("ConvNeXt")]
    (tmp_path / "cited.tex").write_text(SOURCE_TEX, encoding="utf-8")
    (tmp_path / "paper.html").write_text(target_html(rows), encoding="utf-8")
    result = run("crosscheck", str(tmp_path / "paper.html"), "--table", "1", "--source",
                 str(tmp_path / "cited.tex"), "--json")  # fmt: skip
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["discrepancies"] == 0
    assert (
        data["results"][0]["source_table"] == 2
    )  # numbered from 1, like --table and data["results"][0]["target_table"] == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--source", "{dir}/cited.tex", "--table", "3"], "has 1 table(s)"),
        (["--source", "{dir}/missing.html"], "no such file"),
        (["--source", "{dir}/empty.html"], "empty"),
        ([], "Missing option '--source'"),
    ],
)
def test_crosscheck_bad_input_exits_2(tmp_path: Path, args: list[str], message: str) -> None:
    from tests.crosscheck.conftest import SOURCE_TEX, target_html

    (tmp_path / "cited.tex").write_text(SOURCE_TEX, encoding="utf-8")
    (tmp_path / "paper.html").write_text(target_html(), encoding="utf-8")
    (tmp_path / "empty.html").write_text("", encoding="utf-8")
    result = run("crosscheck", str(tmp_path / "paper.html"), *[a.format(dir=tmp_path) for a in args])
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_tables_lists_tables_with_captions(tmp_path: Path) -> None:
    from tests.crosscheck.conftest import SOURCE_TEX

    (tmp_path / "cited.tex").write_text(SOURCE_TEX, encoding="utf-8")
    result = run("tables", str(tmp_path / "cited.tex"))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("1. 3 x 3, 4 numbers  Ablation of the neck.")
    assert lines[1].startswith("2. 5 x 4, 12 numbers  Detection results on COCO val2017.")
    data = json.loads(run("tables", str(tmp_path / "cited.tex"), "--json").stdout)
    assert data[1]["rows"][2][1] == r"\textbf{43.7}" and data[1]["header_rows"] == 1
    assert run("tables", str(tmp_path / "nothing.tex")).returncode == 2
