"""Findings of a hostile-input review of crosscheck (2026-12-01), each kept as a test: an invisible
mark must not hide a wrong copy, pathological cells and labels are read in linear time, direction
overrides are shown in the HTML report, a source given twice is read once, and the run's number cap
is checked while the sources are read."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from tabverify.bench.arxiveri import _cells
from tabverify.crosscheck import crosscheck
from tabverify.crosscheck.cells import label_words
from tabverify.crosscheck.html import escape
from tabverify.errors import DatasetError
from tabverify.examples import example
from tabverify.table.scientific import display_text, parse_measurement
from tests.cli.conftest import run
from tests.conftest import ARXIVERI, needs_dataset


@pytest.mark.parametrize("mark", ["\u200e", "\u200f", "\ufeff", "\u2066", "\u00ad"])
def test_an_invisible_mark_does_not_hide_a_wrong_copy(tmp_path: Path, mark: str) -> None:
    page = example("paper.html").read_text(encoding="utf-8")
    assert "<td>66.9</td>" in page  # the example's miscopied cell (66.6 in the source)
    target = tmp_path / "paper.html"
    target.write_text(page.replace("<td>66.9</td>", f"<td>{mark}66.9</td>"), encoding="utf-8")
    report = crosscheck(target, example("cited.tex"))
    assert [d.target_text.strip(mark) for d in report.discrepancies] == ["66.9"]
    measured = parse_measurement(f"{mark}66.9")
    assert measured is not None and str(measured.value) == "66.9"


@pytest.mark.parametrize(
    "cell",
    ["1 " + "\\footnote[" * 20_000, "1.5{" + "a" * 60_000, "\\cellcolor[" * 20_000 + "1", "\\cite[" * 20_000],
)
def test_pathological_cells_are_text_and_read_fast(cell: str) -> None:
    started = time.perf_counter()
    assert parse_measurement(cell) is None
    display_text(cell)
    assert time.perf_counter() - started < 2.0  # 8 to 19 s each before the review


@pytest.mark.parametrize("label", ["[" * 200_000, "(" * 40_000 + "1999 " * 10, "a" * 60_000 + "2016b"])
def test_pathological_labels_are_read_fast(label: str) -> None:
    started = time.perf_counter()
    label_words(label)
    assert time.perf_counter() - started < 2.0  # 19 to 34 s before the review


def test_label_citations_are_still_removed() -> None:
    assert label_words("Swin-T [20] (Liu et al., 2021) he2016deep DBLP:conf/iccv/Liu21 (ms)") == {
        "swin",
        "ms",
    }


def test_direction_overrides_are_visible_in_the_html_report() -> None:
    assert escape("<b>\u202eevil\u2066") == "&lt;b&gt;\\u202eevil\\u2066"
    assert escape("\u05e9\u05dc\u05d5\u05dd\u200f") == "\u05e9\u05dc\u05d5\u05dd\u200f"  # marks stay


def test_a_cell_index_must_be_an_integer_not_a_boolean(tmp_path: Path) -> None:
    path = tmp_path / "cells.json"
    with pytest.raises(DatasetError, match="integer rowIndex"):
        _cells([{"rowIndex": True, "colIndex": 1}, {"rowIndex": 1, "colIndex": 1}], path)
    assert _cells([{"rowIndex": 1, "colIndex": 1}, {"rowIndex": 2, "colIndex": 0}], path) == {
        ((1, 1), (2, 0))
    }


def _numbers_table(path: Path, rows: int, offset: int) -> Path:
    body = "".join(
        f"<tr><td>m{r}</td>" + "".join(f"<td>{offset + r}.{c:03d}</td>" for c in range(1, 40)) + "</tr>"
        for r in range(rows)
    )
    path.write_text(f"<table><tr><th>name</th>{'<th>x</th>' * 39}</tr>{body}</table>", encoding="utf-8")
    return path


def test_a_source_given_twice_is_read_once_and_the_run_cap_is_checked_while_reading(tmp_path: Path) -> None:
    one = _numbers_table(tmp_path / "one.html", 500, 0)  # 19,500 numbers
    target = example("paper.html")
    twice = run("crosscheck", str(target), "--source", str(one), "--source", str(one), "--json")
    assert twice.returncode in (0, 1), twice.stderr
    assert len(json.loads(twice.stdout)["results"]) == 1
    copies = [shutil.copy(one, tmp_path / f"copy{i}.html") for i in range(25)]  # 487,500 numbers
    args = [a for c in copies for a in ("--source", str(c))]
    refused = run("crosscheck", str(target), *args)
    assert refused.returncode == 2 and "400,000 numbers" in refused.stderr and "copy20.html" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1 and "Traceback" not in refused.stderr


@needs_dataset(ARXIVERI)
def test_bench_arxiveri_reads_a_source_paper_under_one_cell_budget(tmp_path: Path) -> None:
    """Every table entry of a source paper used to get its own 1,000,000-cell budget: 20 entries of
    4 KB each took 60 s and 490 MB before the benchmark went on."""
    data = tmp_path / "release"
    shutil.copytree(ARXIVERI, data)
    bomb = '<table><tr><td rowspan="1000" colspan="1000">1.5</td></tr>' + "<tr>" * 999 + "</table>"
    entries = [{"table": bomb, "caption": f"t{i}"} for i in range(3)]
    (data / "source_papers" / "2009.13158.json").write_text(json.dumps({"list_table_and_caption": entries}))
    result = run("bench", "arxiveri", "--data", str(data))
    assert result.returncode == 2 and "1,000,000 cells" in result.stderr and "Traceback" not in result.stderr


def test_a_brace_error_names_the_file_and_table(tmp_path: Path) -> None:
    page = tmp_path / "paper.tex"
    page.write_text("\\begin{tabular}{l{c}\nA & 1.5 \\\\\n\\end{tabular}\n", encoding="utf-8")
    refused = run("tables", str(page))
    assert refused.returncode == 2 and "paper.tex: table 1: unbalanced braces" in refused.stderr


def test_multirow_with_a_vertical_position_spans_its_rows() -> None:
    from tabverify.table import read_latex_tables

    tex = "\\begin{tabular}{lcc}\n\\multirow[t]{2}{*}{A} & 1 & 2 \\\\\n & 3 & 4 \\\\\n\\end{tabular}\n"
    grid = read_latex_tables(tex)[0]
    assert [[c.text for c in row] for row in grid.cells] == [["A", "1", "2"], ["A", "3", "4"]]
    assert grid.cells[1][0].origin == (0, 0)


@pytest.mark.parametrize(
    ("value", "span"),
    [
        ("3", 3),
        (" +3 ", 3),
        ("3px", 3),
        ("\u0663", 1),
        ("3_0", 3),
        ("-2", 1),
        ("0", 1),
        ("0000000000000002", 2),
    ],
)
def test_html_spans_read_ascii_digits_as_browsers_do(value: str, span: int) -> None:
    from tabverify.table.html import read_html_tables

    grid = read_html_tables(
        f'<table><tr><td colspan="{value}">x</td></tr><tr><td>1</td><td>2</td><td>3</td></tr></table>'
    )[0]
    assert [c.text for c in grid.cells[0]] == ["x"] * span + [""] * (3 - span)


def test_a_size_message_reads_an_arxiveri_file(tmp_path: Path) -> None:
    from tabverify import files

    big = tmp_path / "paper.json"
    big.write_text("[]" * 10, encoding="utf-8")
    with pytest.raises(DatasetError, match="too large for an arXiVeri JSON file"):
        files.read_json(big, "arXiVeri JSON file", DatasetError, max_bytes=5)


def test_multicolumn_with_an_unbraced_argument_still_spans() -> None:
    from tabverify.table import read_latex_tables

    tex = "\\begin{tabular}{lcc}\nA & \\multicolumn{2}{c}\\textbf{B} \\\\\nx & 1 & 2 \\\\\n\\end{tabular}\n"
    grid = read_latex_tables(tex)[0]
    assert [[c.text for c in row] for row in grid.cells] == [
        ["A", "\\textbf{B}", "\\textbf{B}"],
        ["x", "1", "2"],
    ]


def test_multirow_with_an_unbraced_star_width_spans_its_rows() -> None:
    from tabverify.table import read_latex_tables

    tex = "\\begin{tabular}{lcc}\n\\multirow{2}*{C} & 1 & 2 \\\\\n & 3 & 4 \\\\\n\\end{tabular}\n"
    grid = read_latex_tables(tex)[0]
    assert [[c.text for c in row] for row in grid.cells] == [["C", "1", "2"], ["C", "3", "4"]]
