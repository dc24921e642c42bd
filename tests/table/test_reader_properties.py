"""Property-based tests: every reader, fed arbitrary text or bytes of bounded size, either reads it or
raises TabverifyError - never another exception - and what it reads is well formed.

Inputs mix random text with the fragments each format is made of, so that the structured paths
(spans, quotes, rules, nested JSON) are reached, not only the "no table found" one.
"""

from __future__ import annotations

import json
import math
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tabverify.crosscheck import crosscheck
from tabverify.errors import TabverifyError
from tabverify.table import (
    Grid,
    Table,
    agreement,
    compare,
    load_table,
    parse_decimal,
    parse_measurement,
    parse_quantity,
    read_html_tables,
    read_latex_tables,
    read_markdown_tables,
    read_tables,
    table_from_json,
)
from tabverify.table.documents import read_paper_json
from tabverify.table.scientific import display_text

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def mixed(fragments: list[str], max_parts: int = 40) -> st.SearchStrategy[str]:
    """Text made of a format's fragments and random characters."""
    part = st.one_of(st.sampled_from(fragments), st.text(max_size=8))
    return st.lists(part, max_size=max_parts).map("".join)


_HTML_PARTS = [
    "<table>", "</table>", "<tr>", "</tr>", "<td>", "</td>", "<th>", "</th>", "<thead>", "</thead>",
    '<td colspan="3">', '<td rowspan="2">', "<td rowspan=0 colspan=-1>", '<th colspan="999999">',
    "<caption>", "</caption>", "<figure>", "<figcaption>", "</figure>", "<br>", "<script>", "</script>",
    "<!--", "-->", "<![CDATA[", "]]>", "<!doctype html>", "<?xml?>", "&amp;", "&#x41;", "&#99999999;",
    "<", ">", "</", "/>", '"', "'", "45.3", "\\textbf{1}", "\x00",
]  # fmt: skip
_CELL_HTML = mixed(
    ["<tr>", "<td>", "</td>", "<th>", '<td colspan="2">', '<td rowspan="3">', "</tr>", "45.3", "x"]
)
HTML = st.one_of(mixed(_HTML_PARTS), st.builds("<table>{}</table>".format, _CELL_HTML))
_LATEX_PARTS = [
    "\\begin{tabular}{lcc}", "\\begin{tabular*}{\\linewidth}{cc}", "\\begin{longtable}{c}", "\\end{tabular}",
    "\\end{longtable}", "\\begin{table}", "\\end{table}", "\\caption{", "}", "{", "&", "\\&", "\\\\",
    "\\\\[2pt]", "\\hline", "\\midrule", "\\cmidrule(lr){2-3}", "\\multicolumn{2}{c}{", "\\multicolumn{",
    "\\multirow{-3}{*}{", "\\multirow[t]{2}{*}{", "%", "\\%", "$\\pm$", "45.3", "\\textbf{7}", "1e400",
]  # fmt: skip
_LATEX_BODY = mixed(
    ["&", " & ", "\\\\\n", "\\hline", "\\midrule", "\\multicolumn{2}{c}{x}", "\\multicolumn{3}{c}{", "}",
     "\\multirow{2}{*}{y}", "\\multirow{-2}{*}{z}", "\\multirow{99999}{*}{w}", "{", "%", "45.3", "a"]
)  # fmt: skip
LATEX = st.one_of(
    mixed(_LATEX_PARTS),
    st.builds(
        "\\begin{{table}}\\caption{{t}}\\begin{{tabular}}{{cc}}{}\\end{{tabular}}\\end{{table}}".format,
        _LATEX_BODY,
    ),
)
_MD_CELL = st.one_of(st.sampled_from(["45.3", " x ", "", "\\|", "a|b", "1e3"]), st.text(max_size=5))
_MD_LINE = st.lists(_MD_CELL, min_size=1, max_size=4).map(lambda cells: "|" + "|".join(cells) + "|")
MARKDOWN = st.one_of(
    mixed(["|", " | ", "|---|", "|:--:|", "---", "\n", "\\|", "Table 1:", "**Table**", "45.3", "a"]),
    st.builds(
        lambda caption, header, rows: "\n".join([caption, header, "|---|---|", *rows]),
        st.sampled_from(["", "Table 2: results"]),
        _MD_LINE,
        st.lists(_MD_LINE, max_size=5),
    ),
)
DELIMITED = mixed([",", ";", "\t", "#", "|", '"', '""', "\n", "\r\n", "\x00", "1e999999", "45.3", "a", " "])
_NUMBER_PARTS = [
    "1", "0", "9", ".", ",", "e", "E", "+", "-", "\u2212", "%", "\\%", "$", "k", "M", "B", " ", "(", ")",
    "/", "±", "\\pm", "_{", "}", "^", "\\textbf{", "st", "th", "june", "1958", ":", "~", "≈", "↑", "\\uparrow",
    "e999999", "999999999999999999999", "-1e-400",
]  # fmt: skip
NUMBERS = st.one_of(
    mixed(_NUMBER_PARTS, max_parts=12),
    st.builds(
        "{}{}{}".format,
        st.sampled_from(["", "$", "~", "-", "+", "\\textbf{", "$\\mathbf{"]),
        st.one_of(
            st.decimals(allow_nan=False, allow_infinity=False).map(str),
            st.floats(allow_nan=False, allow_infinity=False).map(repr),
            st.integers().map(str),
        ),
        st.sampled_from(["", "%", "\\%", "M", "k", " ± 0.2", "}", "}$", " (+1.2)", " / 3.4", "e400", " ms"]),
    ),
)
JSON_VALUES: st.SearchStrategy[Any] = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=10),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=6), children, max_size=5)
    ),
    max_leaves=25,
)
JSON_TABLES = st.one_of(
    JSON_VALUES,
    st.fixed_dictionaries({"header": JSON_VALUES, "rows": JSON_VALUES}),
    st.fixed_dictionaries({"header": st.lists(st.text(max_size=5), max_size=4), "rows": st.lists(st.lists(JSON_VALUES, max_size=4), max_size=4)}),
    st.lists(st.dictionaries(st.text(max_size=5), JSON_VALUES, max_size=4), max_size=4),
)  # fmt: skip
PAPERS = st.one_of(
    JSON_VALUES,
    st.fixed_dictionaries({"list_table_and_caption": JSON_VALUES}),
    st.fixed_dictionaries(
        {"list_table_and_caption": st.lists(st.one_of(JSON_VALUES, st.fixed_dictionaries({"table": HTML | JSON_VALUES, "caption": JSON_VALUES})), max_size=4)}
    ),
)  # fmt: skip


def well_formed(grid: Grid) -> None:
    """Rectangular, every origin inside the grid, every spanned position pointing at an origin."""
    width = grid.n_columns
    for row in grid.cells:
        assert len(row) == width
        for cell in row:
            r, c = cell.origin
            assert 0 <= r < grid.n_rows and 0 <= c < width
            assert grid[cell.origin].origin == cell.origin
    for position, m in grid.measurements.items():
        assert grid.is_origin(*position) and math.isfinite(float(m.value))


def reads_or_refuses(read: Callable[[], object]) -> object:
    try:
        return read()
    except TabverifyError:
        return None


def in_file(data: bytes, suffix: str) -> Callable[[Callable[[Path], object]], object]:
    """Run a reader on ``data`` written to a fresh file with the given suffix."""

    def run(read: Callable[[Path], object]) -> object:
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / f"input{suffix}"
            path.write_bytes(data)
            return reads_or_refuses(lambda: read(path))

    return run


@SETTINGS
@given(HTML)
def test_html_reader(text: str) -> None:
    grids = reads_or_refuses(lambda: read_html_tables(text))
    for grid in grids or []:  # type: ignore[attr-defined]
        well_formed(grid)


@SETTINGS
@given(LATEX)
def test_latex_reader(text: str) -> None:
    grids = reads_or_refuses(lambda: read_latex_tables(text))
    for grid in grids or []:  # type: ignore[attr-defined]
        well_formed(grid)


@SETTINGS
@given(MARKDOWN)
def test_markdown_reader(text: str) -> None:
    grids = reads_or_refuses(lambda: read_markdown_tables(text))
    for grid in grids or []:  # type: ignore[attr-defined]
        well_formed(grid)


@SETTINGS
@given(
    st.one_of(DELIMITED.map(str.encode), st.binary(max_size=200)),
    st.sampled_from([".csv", ".tsv", ".html.csv", ".txt"]),
)
def test_table_file_readers(data: bytes, suffix: str) -> None:
    table = in_file(data, suffix)(load_table)
    if table is not None:
        assert isinstance(table, Table) and all(len(row) == table.n_columns for row in table.rows)
        assert any(h.strip() for h in table.header)  # never a header of empty names


@SETTINGS
@given(
    st.one_of(
        st.binary(max_size=300), HTML.map(str.encode), LATEX.map(str.encode), DELIMITED.map(str.encode)
    ),
    st.sampled_from([".html", ".tex", ".md", ".csv", ".tsv", ".json", ".dat"]),
)
def test_document_reader(data: bytes, suffix: str) -> None:
    grids = in_file(data, suffix)(read_tables)
    for grid in grids or []:  # type: ignore[attr-defined]
        well_formed(grid)


@SETTINGS
@given(JSON_TABLES)
def test_json_table_reader(data: Any) -> None:
    table = reads_or_refuses(lambda: table_from_json(data))
    assert table is None or isinstance(table, Table)
    text = json.dumps(data).encode()
    in_file(text, ".json")(load_table)


@SETTINGS
@given(st.one_of(st.binary(max_size=200), st.text(max_size=200).map(str.encode)))
def test_json_file_reader_on_any_bytes(data: bytes) -> None:
    in_file(data, ".json")(load_table)
    in_file(data, ".json")(read_tables)


@SETTINGS
@given(PAPERS)
def test_paper_json_reader(data: Any) -> None:
    grids = reads_or_refuses(lambda: read_paper_json(data))
    for grid in grids or []:  # type: ignore[attr-defined]
        well_formed(grid)


@SETTINGS
@given(st.one_of(NUMBERS, st.text(max_size=40)))
def test_number_readers(text: str) -> None:
    quantity = parse_quantity(text)
    if quantity is not None:
        assert math.isfinite(quantity.value)
        assert quantity.second is None or math.isfinite(quantity.second)
    measurement = parse_measurement(text)
    if measurement is not None:
        assert measurement.value.is_finite() and abs(measurement.value.adjusted()) <= 300
        assert agreement(measurement.number, measurement.number).value == "exact"
        assert compare(measurement, measurement).value == "exact"
    value = parse_decimal(text)
    assert value is None or value.is_finite()
    assert isinstance(display_text(text), str)


@SETTINGS
@given(
    st.lists(st.lists(NUMBERS, min_size=1, max_size=4), min_size=1, max_size=5),
    st.lists(st.lists(NUMBERS, min_size=1, max_size=4), min_size=1, max_size=5),
)
def test_crosscheck_of_arbitrary_cells(target_rows: list[list[str]], source_rows: list[list[str]]) -> None:
    target, source = Grid.from_rows(target_rows), Grid.from_rows(source_rows)
    report = crosscheck(target, [source])
    for pair in report.pairs:
        assert pair.target in target.data_measurements and pair.source in source.data_measurements
    assert isinstance(json.dumps(report.to_dict()), str)
