"""Hostile input against three scans that took time growing with the square of the input: the
``\\caption[`` regex of the LaTeX reader, ``\\multicolumn`` nested thousands deep in one LaTeX cell,
and the Markdown ``|---|`` line test on a long blank line. Each input took 14 s or more before; each
must now be read right (or refused with a TableError) well inside a bound generous enough for a
slow, shared machine."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

from tabverify.errors import TableError
from tabverify.table import read_latex_tables, read_markdown_tables, read_tables
from tabverify.table.grid import Grid
from tabverify.table.latex import _MAX_MULTI

T = TypeVar("T")

BOUND_S = 10.0  # the inputs below took 14 s to over a minute before; they now take well under 1 s
TABULAR = "\\begin{tabular}{lc}\nA & 1.5 \\\\\nB & 2.5 \\\\\n\\end{tabular}\n"


def timed(read: Callable[[], T]) -> T:
    """What ``read`` returns, failing the test when it takes longer than :data:`BOUND_S`."""
    start = time.perf_counter()
    result = read()
    elapsed = time.perf_counter() - start
    assert elapsed < BOUND_S, f"took {elapsed:.1f} s"
    return result


def refused(read: Callable[[], object]) -> TableError:
    """The TableError ``read`` raises, failing the test when it takes longer than :data:`BOUND_S`."""
    start = time.perf_counter()
    with pytest.raises(TableError) as raised:
        read()
    elapsed = time.perf_counter() - start
    assert elapsed < BOUND_S, f"took {elapsed:.1f} s"
    return raised.value


def rows(grid: Grid) -> list[list[str]]:
    return [[grid.text(r, c) for c in range(grid.n_columns)] for r in range(grid.n_rows)]


def test_many_caption_brackets_without_a_close_are_read_in_linear_time(tmp_path: Path) -> None:
    path = tmp_path / "cap.tex"
    path.write_text("\\caption[" * 60_000 + TABULAR)  # 540 KB; the 360 KB one took 14.5 s
    (grid,) = timed(lambda: read_tables(path))
    assert rows(grid) == [["A", "1.5"], ["B", "2.5"]]
    assert grid.caption == ""


def test_a_real_caption_after_many_open_brackets_is_still_found() -> None:
    tex = (
        "\\begin{table}\n" + "\\caption[" * 60_000 + "\\caption{Main results}\n" + TABULAR + "\\end{table}\n"
    )
    (grid,) = timed(lambda: read_latex_tables(tex))
    assert grid.caption == "Main results"
    assert rows(grid) == [["A", "1.5"], ["B", "2.5"]]


@pytest.mark.parametrize(
    ("caption", "expected"),
    [
        ("\\caption{Plain}", "Plain"),
        ("\\caption*{Starred}", "Starred"),
        ("\\caption [Short] \n {Long one}", "Long one"),
        ("\\caption[Short with \\caption[ inside]{Long}", "Long"),
        ("\\caption[no close {Skipped}\\caption{Next}", "Next"),
        ("\\caption[a] x \\caption[b]{Second}", "Second"),
    ],
)
def test_caption_forms_read_as_before(caption: str, expected: str) -> None:
    (grid,) = read_latex_tables("\\begin{table}\n" + caption + "\n" + TABULAR + "\\end{table}\n")
    assert grid.caption == expected


def nested_multicolumn(depth: int) -> str:
    return "\\multicolumn{1}{c}{" * depth + "1.5" + "}" * depth


def test_multicolumn_nested_thousands_deep_is_read_in_linear_time(tmp_path: Path) -> None:
    depth = 4_000  # 80 KB in one cell; took 16 s before
    path = tmp_path / "multi.tex"
    path.write_text(
        "\\begin{tabular}{lc}\nA & " + nested_multicolumn(depth) + " \\\\\nB & 2.5 \\\\\n\\end{tabular}\n"
    )
    (grid,) = timed(lambda: read_tables(path))
    # the first _MAX_MULTI levels are unwrapped, the rest stay in the cell as written
    assert rows(grid) == [["A", nested_multicolumn(depth - _MAX_MULTI)], ["B", "2.5"]]


@pytest.mark.parametrize("depth", [1, 2, _MAX_MULTI])
def test_multicolumn_nested_a_few_deep_is_unwrapped_fully(depth: int) -> None:
    (grid,) = read_latex_tables(
        "\\begin{tabular}{lc}\nA & " + nested_multicolumn(depth) + " \\\\\n\\end{tabular}\n"
    )
    assert rows(grid) == [["A", "1.5"]]


def test_multicolumn_and_multirow_nested_keep_their_spans() -> None:
    tex = (
        "\\begin{tabular}{lcc}\n"
        "A & \\multicolumn{2}{c}{\\multirow{2}{*}{\\textbf{9.5}}} \\\\\n"
        "B & & \\\\\n"
        "C & 1 & 2 \\\\\n"
        "\\end{tabular}\n"
    )
    (grid,) = read_latex_tables(tex)
    assert rows(grid) == [
        ["A", "\\textbf{9.5}", "\\textbf{9.5}"],
        ["B", "\\textbf{9.5}", "\\textbf{9.5}"],
        ["C", "1", "2"],
    ]


def test_a_long_blank_line_under_a_header_is_no_table(tmp_path: Path) -> None:
    path = tmp_path / "blank.md"
    path.write_text("| a | b |\n" + " " * 40_000 + "x\n")  # took 22 s before
    assert "no Markdown pipe table" in str(refused(lambda: read_tables(path)))


@pytest.mark.parametrize(
    "line",
    [
        " " * 40_000 + "|" + " " * 40_000,  # only separator characters, but no dashes
        "--" + " " * 60_000 + "-",
        "| -- " * 10_000 + "x",  # (not slow before, but the same language)
        "-" * 60_000 + " " * 60_000 + ":x",
    ],
)
def test_long_lines_almost_a_separator_are_no_table(line: str) -> None:
    assert "no Markdown pipe table" in str(refused(lambda: read_markdown_tables("| a | b |\n" + line + "\n")))


def test_a_separator_with_long_blank_runs_is_read(tmp_path: Path) -> None:
    blank = " " * 40_000
    path = tmp_path / "wide.md"
    path.write_text("| a | b |\n" + blank + "|" + blank + ":---" + blank + "|---:|" + blank + "\n| 1 | 2 |\n")
    (grid,) = timed(lambda: read_tables(path))
    assert rows(grid) == [["a", "b"], ["1", "2"]]


@pytest.mark.parametrize(
    ("separator", "is_table"),
    [
        ("|---|---|", True),
        ("---|---", True),
        ("| :-- | --: |", True),
        ("|:---:|", True),
        ("  |---|---|  ", True),
        ("|-|-|", True),  # one hyphen a cell is a delimiter row (GitHub Flavored Markdown)
        ("| :- | -: |", True),
        ("| --- | x |", False),
        ("|---||---|", False),
    ],
)
def test_separator_lines(separator: str, is_table: bool) -> None:
    text = "| a | b |\n" + separator + "\n| 1 | 2 |\n"
    if is_table:
        (grid,) = read_markdown_tables(text)
        assert grid.text(1, 0) == "1"
    else:
        with pytest.raises(TableError):
            read_markdown_tables(text)


def _cells(grid: Grid) -> list[list[str]]:
    return [[cell.text for cell in row] for row in grid.cells]


def test_a_tag_with_a_million_attributes_keeps_only_its_spans() -> None:
    from tabverify.table.html import MAX_TAG_ATTRIBUTES, _defuse, read_html_tables

    junk = " ".join(f"a{i % 10}=1" for i in range(1_000_000))
    page = f"<table><tr><td {junk} colspan=\"2\" rowspan='1'>x</td></tr><tr><td>1.5</td><td>2.5</td></tr></table>"
    assert len(_defuse(page)) < 200  # the attributes html.parser would hold as a million tuples are gone
    grid = timed(lambda: read_html_tables(page)[0])
    assert _cells(grid) == [["x", "x"], ["1.5", "2.5"]]  # the colspan still applies
    # a tag under the bound is read as written, spans and the last of repeated attributes included
    class_attribute = "c" * (MAX_TAG_ATTRIBUTES - 100)
    normal = f'<table><tr><td class="{class_attribute}" colspan=3 colspan="2">x</td></tr><tr><td>1</td><td>2</td></tr></table>'
    assert _defuse(normal) == normal
    long = normal.replace(class_attribute, class_attribute * 3)
    assert (
        _cells(read_html_tables(long)[0]) == _cells(read_html_tables(normal)[0]) == [["x", "x"], ["1", "2"]]
    )


def test_the_tag_end_is_found_where_html_parser_finds_it() -> None:
    import html.parser
    import random

    from tabverify.table.html import _LOCATE_TAG_END

    pieces = ["a", "b", "=", "==", " ", "\t", "/", '"', "'", "<", ">", "x1", "colspan", "\n", "-", "/>", "`"]
    rng = random.Random(0)
    for _ in range(20_000):
        tag = "<" + rng.choice("abtdX") + "".join(rng.choice(pieces) for _ in range(rng.randint(0, 14)))
        expected = html.parser.locatestarttagend_tolerant.match(tag, 0).end()  # type: ignore[attr-defined]
        assert _LOCATE_TAG_END.match(tag, 0).end() == expected, tag


@pytest.mark.parametrize("opening", ["<td/", '<td t="<" ', "<x.y ", '<td t=">" '])
def test_long_tags_the_simple_forms_miss_are_shortened_too(opening: str) -> None:
    from tabverify.table.html import _defuse

    junk = " ".join(f"a{i % 10}=1" for i in range(200_000))
    page = f"<table><tr><td>{opening}{junk}>x</td></tr><tr><td>1.5</td></tr></table>"
    assert len(_defuse(page)) < 200


def test_a_long_tag_keeps_quoted_brackets_and_ignores_spans_inside_values() -> None:
    from tabverify.table.html import read_html_tables

    filler = "x" * 4200
    quoted = (
        f'<table><tr><td data-x="{filler}>" colspan=2>A</td></tr><tr><td>1.5</td><td>2.5</td></tr></table>'
    )
    assert _cells(read_html_tables(quoted)[0]) == [["A", "A"], ["1.5", "2.5"]]
    inside = f'<table><tr><td title="see colspan=3" data-x="{filler}">A</td></tr><tr><td>1</td><td>2</td><td>3</td></tr></table>'
    assert _cells(read_html_tables(inside)[0]) == [["A", "", ""], ["1", "2", "3"]]


def test_many_unclosed_html_tables_in_markdown_are_read_in_one_pass() -> None:
    # each unclosed <table> ends at its blank line; finding the ends rescanned the rest of the text
    # for every block before (quadratic: these 20,000 blocks took over 2 minutes)
    text = "<table>\n<tr><td>1.5</td></tr>\n\n" * 20_000 + "<table><tr><td>" + "<table>" * 5_000 + "\n"
    grids = timed(lambda: read_markdown_tables(text))
    assert len(grids) == 20_001
