"""Hostile input, one test per class: tiny files that expand to huge grids, files past the size
limits, constructs that made parsing take time growing with the square of the input, malformed JSON
shapes. Each must be one TableError naming the limit, or a correct reading - never a traceback,
gigabytes of memory or a hang."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tabverify.errors import DatasetError, TableError, TableSizeError
from tabverify.table import html as html_reader
from tabverify.table import load_table, read_html_tables, read_latex_tables, read_markdown_tables, read_tables
from tabverify.table.documents import read_paper_json
from tabverify.table.grid import MAX_GRID_CELLS, MAX_SPAN, CellBudget, Grid
from tabverify.table.readers import MAX_TABLE_CELLS, MAX_TABLE_COLUMNS


def test_a_130_byte_multicolumn_bomb_is_refused() -> None:
    tex = "\\begin{tabular}{cc}\n\\multicolumn{100000000}{c}{x} & 1\\\\\n\\end{tabular}\n"
    assert len(tex) < 130
    with pytest.raises(TableError, match=rf"multicolumn\{{100000000\}} spans more than {MAX_SPAN}"):
        read_latex_tables(tex)
    with pytest.raises(TableError, match="spans more than"):
        read_latex_tables("\\begin{tabular}{c}\\multirow{-99999}{*}{x}\\\\\\end{tabular}")


def test_multirow_spans_count_against_the_document() -> None:
    row = "\\multirow{1000}{*}{x} \\\\\n"
    with pytest.raises(TableSizeError, match=f"more than {MAX_GRID_CELLS:,} cells"):
        read_latex_tables("\\begin{tabular}{c}\n" + row * 3000 + "\\end{tabular}")


def test_colspan_on_every_row_is_refused_early() -> None:
    row = "<tr>" + '<td colspan="1000">1</td>' * 10 + "</tr>"
    html = "<table>" + row * 1000 + "</table>"  # 300 KB that expanded to 10 million cells
    with pytest.raises(TableSizeError, match=f"more than {MAX_GRID_CELLS:,}"):
        read_html_tables(html)


def test_rowspans_count_the_cells_they_fill() -> None:
    # one cell spanning 200 rows and 100 columns: tiny markup, 20,000 cells
    html = '<table><tr><td rowspan="200" colspan="100">1</td></tr>' + "<tr></tr>" * 300 + "</table>"
    assert read_html_tables(html, budget=CellBudget("page", limit=40_000))[0].n_rows == 301
    with pytest.raises(TableSizeError, match="expand to more than 10,000 cells"):
        read_html_tables(html, budget=CellBudget("page", limit=10_000))


def test_oversized_spans_are_capped_as_browsers_do() -> None:
    grid = read_html_tables('<table><tr><td colspan="99999">a</td></tr><tr><td>1</td></tr></table>')[0]
    assert grid.n_columns == MAX_SPAN and grid.text(0, MAX_SPAN - 1) == "a"


def test_the_tables_of_one_document_share_the_cell_limit() -> None:
    table = "<table>" + ("<tr>" + "<td>1</td>" * 10 + "</tr>") * 30 + "</table>"  # 300 cells
    assert len(read_paper_json([{"table": table}], budget=CellBudget("paper", limit=1000))) == 1
    # four such entries: each read alone is within the limit, together they are not
    with pytest.raises(TableSizeError, match="its tables expand to more than 1,000 cells"):
        read_paper_json([{"table": table}] * 4, budget=CellBudget("paper", limit=1000))


def test_markup_with_millions_of_rows_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(html_reader, "MAX_GRID_CELLS", 10_000)  # the same check, reached sooner
    with pytest.raises(TableSizeError, match="more than 10,000 table rows and cells"):
        read_html_tables("<table>" + "<tr>" * 10_001)


def test_a_line_of_millions_of_pipes_or_commas_is_refused(tmp_path: Path) -> None:
    with pytest.raises(TableSizeError):
        read_markdown_tables("|a|b|\n|---|---|\n" + "|" * (MAX_GRID_CELLS + 10) + "\n")
    path = tmp_path / "wide.csv"
    path.write_text("a,b\n" + "," * (MAX_GRID_CELLS + 10) + "\n", encoding="utf-8")
    with pytest.raises(TableError, match=f"more than {MAX_GRID_CELLS:,} cells"):
        read_tables(path)
    with pytest.raises(TableError, match=f"more than {MAX_TABLE_CELLS:,} cells"):
        load_table(path)


def test_tables_have_bounded_rows_and_columns(tmp_path: Path) -> None:
    wide = tmp_path / "wide.csv"
    wide.write_text(",".join(f"c{j}" for j in range(MAX_TABLE_COLUMNS + 1)) + "\n", encoding="utf-8")
    with pytest.raises(TableError, match=f"more than the {MAX_TABLE_COLUMNS:,} a table may have"):
        load_table(wide)
    long = tmp_path / "long.html.csv"
    long.write_text("a#b\n" + "1#2\n" * (MAX_TABLE_CELLS // 2), encoding="utf-8")
    with pytest.raises(TableError, match="cells"):
        load_table(long)
    records = tmp_path / "records.json"
    records.write_text(json.dumps({"header": ["a", "b"], "rows": [[1, 2]] * (MAX_TABLE_CELLS // 2)}))
    with pytest.raises(TableError, match="cells a table may have"):
        load_table(records)


def test_a_one_megabyte_csv_field_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "big.csv"
    path.write_text('a,b\n"' + "x" * 1_000_000 + '",1\n', encoding="utf-8")
    for read in (load_table, read_tables):
        with pytest.raises(TableError, match="never closed; check the quoting"):
            read(path)


def test_unclosable_html_constructs_are_text() -> None:
    # each of these made html.parser rescan the rest of the page: 400 KB of "</" took 16 s
    for filler in ("</", "<a ", "<!-- x >", "<![CDATA[ x >"):
        grid = read_html_tables("<table><tr><td>" + filler * 50_000)[0]
        assert grid.n_rows == 1 and grid.text(0, 0).startswith(filler.strip())


def test_thousands_of_tabulars_and_nested_ones_read_in_one_pass() -> None:
    tex = "\\begin{table}\\caption{Many}" + "\\begin{tabular}{c}1\\\\\\end{tabular}" * 20_000
    grids = read_latex_tables(tex)
    assert len(grids) == 20_000 and grids[-1].caption == "Many" and grids[-1].name.endswith("#table20000")
    nested = read_latex_tables("\\begin{tabular}{c}" * 3_000 + "x" + "\\end{tabular}" * 3_000)
    assert len(nested) == 1 and nested[0].n_rows == 1  # the inner ones are the cell's text
    with pytest.raises(TableError, match="has no \\\\end"):
        read_latex_tables("\\begin{tabular}{c}" * 30_000 + "x\\end{tabular}")


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        (["x", 1, None], "entry 1 of the table list is text"),
        ([{"table": 5}], 'has a "table" that is a number'),
        (
            [{"table": "<table><tr><td>1</td></tr></table>", "caption": {"a": 1}}],
            '"caption" that is an object',
        ),
        (7, "must be a list"),
    ],
)
def test_mistyped_paper_records_are_clear_errors(tmp_path: Path, entries: object, message: str) -> None:
    path = tmp_path / "paper.json"
    path.write_text(json.dumps({"list_table_and_caption": entries}), encoding="utf-8")
    with pytest.raises(TableError, match=message):
        read_tables(path)


def test_null_table_or_caption_values_are_empty(tmp_path: Path) -> None:
    path = tmp_path / "paper.json"
    entries = [{"table": None}, {"table": "<table><tr><td>1.5</td></tr></table>", "caption": None}]
    path.write_text(json.dumps({"list_table_and_caption": entries}), encoding="utf-8")
    grids = read_tables(path)
    assert len(grids) == 1 and grids[0].caption == "" and grids[0].name == "paper.json#table1"


def test_json_nested_ten_thousand_deep_and_nan_are_refused(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 10_000 + "]" * 10_000, encoding="utf-8")
    nan = tmp_path / "nan.json"
    nan.write_text('{"list_table_and_caption": [{"table": NaN}]}', encoding="utf-8")
    for read in (load_table, read_tables):
        with pytest.raises(TableError, match="nested deeper than"):
            read(deep)
        with pytest.raises(TableError, match="not a JSON number"):
            read(nan)


def test_a_nameless_header_line_is_an_error_not_a_shift(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text(",,\n1,2,3\n4,5,6\n", encoding="utf-8")
    for read in (load_table, read_tables):
        with pytest.raises(TableError, match="no column names"):
            read(path)
    # a header naming only some columns (TabFact's row-number column) is read as written
    path.write_text(",b,c\n1,2,3\n", encoding="utf-8")
    assert load_table(path).header == ("", "b", "c")


def test_grids_from_rows_are_bounded() -> None:
    with pytest.raises(TableSizeError):
        Grid.from_rows([["x"] * 2000] * 1000)


def test_malformed_arxiveri_data_is_a_dataset_error(tmp_path: Path) -> None:
    from tabverify.bench.arxiveri import load_pairs

    truth = tmp_path / "ground_truth" / "table_match" / "t1"
    truth.mkdir(parents=True)
    (truth / "s1.json").write_text(json.dumps({"target_table": "<table><tr><td>1</td></tr></table>"}))
    (tmp_path / "source_papers").mkdir()
    (tmp_path / "source_papers" / "s1.json").write_text(json.dumps({"list_table_and_caption": ["x", None]}))
    with pytest.raises(DatasetError, match="entry 1 must be an object"):
        load_pairs(tmp_path)
    (tmp_path / "source_papers" / "s1.json").write_text(json.dumps({"list_table_and_caption": []}))
    cells = tmp_path / "ground_truth" / "cell_match" / "t1"
    cells.mkdir(parents=True)
    (cells / "s1.json").write_text(json.dumps([{"rowIndex": 0, "colIndex": 0}]))
    with pytest.raises(DatasetError, match="alternating target and source cells"):
        load_pairs(tmp_path)


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("wide.html", "<table><tr>" + "<td>1</td>" * 5000 + "</tr></table>"),
        ("wide.md", "|" + "a|" * 1500 + "\n|" + "---|" * 1500 + "\n|" + "1|" * 1500 + "\n"),
        ("wide.tex", "\\begin{tabular}{c}\n" + " & ".join(["1"] * 1500) + " \\\\\n\\end{tabular}\n"),
    ],
)
def test_every_grid_reader_refuses_more_columns_than_a_table_may_have(
    tmp_path: Path, name: str, text: str
) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(TableSizeError, match=r"columns, more than the 1,000 a table may have"):
        read_tables(path)


def test_a_grid_of_exactly_the_column_limit_is_read(tmp_path: Path) -> None:
    from tabverify.table.grid import MAX_GRID_COLUMNS

    path = tmp_path / "t.html"
    path.write_text("<table><tr>" + "<td>1</td>" * MAX_GRID_COLUMNS + "</tr></table>")
    assert read_tables(path)[0].n_columns == MAX_GRID_COLUMNS


def _release(root: Path, cells: object | None) -> None:
    source = "<table><tr><td>m</td><td>AP</td></tr><tr><td>a</td><td>38.2</td></tr></table>"
    truth = root / "ground_truth" / "table_match" / "t1"
    truth.mkdir(parents=True)
    (truth / "s1.json").write_text(json.dumps({"target_table": source, "source_table": source}))
    (root / "source_papers").mkdir()
    (root / "source_papers" / "s1.json").write_text(
        json.dumps({"list_table_and_caption": [{"table": source, "caption": "T1"}]})
    )
    if cells is not None:
        folder = root / "ground_truth" / "cell_match" / "t1"
        folder.mkdir(parents=True)
        (folder / "s1.json").write_text(json.dumps(cells))


def _cell(row: int, column: int) -> dict[str, object]:
    return {"rowIndex": row, "colIndex": column, "value": "38.2"}


def test_a_missing_cell_annotation_is_a_dataset_error_naming_the_file(tmp_path: Path) -> None:
    from tabverify.bench.arxiveri import load_pairs

    _release(tmp_path, None)
    with pytest.raises(DatasetError, match=r"cell_match/t1/s1\.json is missing"):
        load_pairs(tmp_path)


@pytest.mark.parametrize(
    ("target", "source", "message"),
    [
        ((99999999999, 1), (1, 1), "target cell at rowIndex 99999999999, colIndex 1 lies outside"),
        ((1, 1), (1, -5), "source cell at rowIndex 1, colIndex -5 lies outside"),
        ((1, 1), (2, 0), r"source cell .* \(a 2 x 2 grid"),
    ],
)
def test_annotated_cells_outside_the_grid_are_a_dataset_error(
    tmp_path: Path, target: tuple[int, int], source: tuple[int, int], message: str
) -> None:
    from tabverify.bench.arxiveri import load_pairs

    _release(tmp_path, [_cell(*target), _cell(*source)])
    with pytest.raises(DatasetError, match=message):
        load_pairs(tmp_path)


def test_annotated_cells_inside_the_grid_are_loaded(tmp_path: Path) -> None:
    from tabverify.bench.arxiveri import load_pairs

    _release(tmp_path, [_cell(1, 1), _cell(1, 1)])
    (pair,) = load_pairs(tmp_path)
    assert pair.gold_cells == frozenset({((1, 1), (1, 1))}) and pair.gold_index == 0
