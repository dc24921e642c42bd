"""Grid readers: HTML (spans, malformed markup, no entity resolution), LaTeX, Markdown, CSV, documents."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest

from tabverify.errors import TableError
from tabverify.table import Grid, read_html_tables, read_latex_tables, read_markdown_tables, read_tables

SPANNED = """
<table>
  <caption>Results on COCO</caption>
  <thead>
    <tr><th rowspan="2">Model</th><th colspan="2">COCO</th><th rowspan="2">Params</th></tr>
    <tr><th>AP</th><th>AP<sub>50</sub></th></tr>
  </thead>
  <tbody>
    <tr><td>ResNet-50 [12]</td><td>38.2</td><td>58.1</td><td>26M</td></tr>
    <tr><td rowspan="2">Swin</td><td>43.7</td><td colspan="2">66.6</td></tr>
    <tr><td>44.0</td><td>67.0</td><td>29M</td></tr>
  </tbody>
</table>
"""


def texts(grid: Grid) -> list[list[str]]:
    return [[c.text.strip() for c in row] for row in grid.cells]


def test_html_spans_are_expanded_with_header_rows_kept() -> None:
    grid = read_html_tables(SPANNED)[0]
    assert grid.caption == "Results on COCO"
    assert texts(grid) == [
        ["Model", "COCO", "COCO", "Params"],
        ["Model", "AP", "AP50", "Params"],
        ["ResNet-50 [12]", "38.2", "58.1", "26M"],
        ["Swin", "43.7", "66.6", "66.6"],
        ["Swin", "44.0", "67.0", "29M"],
    ]
    assert grid.header_row_count == 2
    assert grid[(1, 0)].origin == (0, 0) and not grid.is_origin(1, 0)
    assert grid.is_origin(3, 2) and not grid.is_origin(3, 3)
    assert grid.column_label(2) == "COCO / AP50"
    assert grid.row_label(4) == "Swin"
    # numbers are read once, at the origin of their cell
    assert (3, 2) in grid.measurements and (3, 3) not in grid.measurements
    assert (0, 1) not in grid.data_measurements


def test_html_malformed_markup_is_tolerated() -> None:
    html = "<div><table><tr><td>a<td>1.5<tr><td>b</td><td>2.5</b></td></tr><td>c<td>3.5</table>"
    grid = read_html_tables(html)[0]
    assert texts(grid) == [["a", "1.5"], ["b", "2.5"], ["c", "3.5"]]


def test_html_ragged_rows_are_padded_and_invalid_spans_are_one() -> None:
    grid = read_html_tables('<table><tr><td rowspan="-2">x</td><td colspan="abc">y</td><td>z</td></tr>'
                            '<tr><td>1</td></tr></table>')[0]  # fmt: skip
    assert texts(grid) == [["x", "y", "z"], ["1", "", ""]]
    assert grid[(1, 2)].filler


def test_html_external_entities_are_not_resolved_or_fetched() -> None:
    html = (
        '<!DOCTYPE html [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>'
        "<table><tr><td>&xxe;</td><td>&amp; &#x41;</td></tr></table>"
    )
    grid = read_html_tables(html)[0]
    assert "root:" not in grid.text(0, 0)
    assert grid.text(0, 1) == "& A"


def test_html_nested_table_joins_the_enclosing_cell() -> None:
    grid = read_html_tables(
        "<table><tr><td>a<table><tr><td>inner</td></tr></table></td><td>1</td></tr></table>"
    )
    assert len(grid) == 1
    assert texts(grid[0]) == [["ainner", "1"]]


@pytest.mark.parametrize("html", ["", "<p>no tables here</p>", "<table></table>", "<table><tr></tr></table>"])
def test_html_without_rows_is_a_clear_error(html: str) -> None:
    with pytest.raises(TableError, match="no <table> with rows"):
        read_html_tables(html, "page.html")


def test_figcaption_is_the_caption_of_an_ar5iv_table() -> None:
    html = "<figure><figcaption>Table 2: Ablation.</figcaption><table><tr><td>1</td></tr></table></figure>"
    assert read_html_tables(html)[0].caption == "Table 2: Ablation."


LATEX = r"""
\begin{table}[t]
\centering
\caption{Results on \textbf{COCO}.}
\begin{tabular}{l|cc}
\toprule
\multirow{2}{*}{Method} & \multicolumn{2}{c}{AP} \\
 & box & mask \\ \midrule
Ours & $\mathbf{45.3}\pm0.2$ & 40.1 \\ % a comment & more
Base \& co & 12.3 & \cellcolor{gray}11.0 \\
\multirow{2}{*}{Big} & 50.1 & 44.0 \\
 & 51.2 & 45.5 \\
\bottomrule
\end{tabular}
\end{table}
"""


def test_latex_tabular_with_multicolumn_multirow_and_caption() -> None:
    grid = read_latex_tables(LATEX)[0]
    assert grid.caption == r"Results on \textbf{COCO}."
    rows = texts(grid)
    assert rows[0] == ["Method", "AP", "AP"]
    assert rows[1] == ["Method", "box", "mask"]
    assert rows[2] == ["Ours", r"$\mathbf{45.3}\pm0.2$", "40.1"]
    assert rows[3] == [r"Base \& co", "12.3", r"\cellcolor{gray}11.0"]
    assert rows[5][0] == "Big" and grid[(5, 0)].origin == (4, 0)
    assert grid.header_row_count == 2
    assert grid.data_measurements[(2, 1)].uncertainty is not None


def test_latex_errors_are_clear() -> None:
    with pytest.raises(TableError, match="no \\\\begin"):
        read_latex_tables("just text", "paper.tex")
    with pytest.raises(TableError, match="has no"):
        read_latex_tables(r"\begin{tabular}{cc} a & b \\", "paper.tex")


def test_markdown_tables_with_caption() -> None:
    text = "Intro.\n\nTable 1: Scores.\n| Model | Acc |\n|---|---:|\n| A | 91.2 |\n| B \\| C | 88.0 |\n\nEnd."
    grid = read_markdown_tables(text)[0]
    assert grid.caption == "Table 1: Scores."
    assert texts(grid) == [["Model", "Acc"], ["A", "91.2"], ["B | C", "88.0"]]


def test_markdown_cells_lose_their_inline_markup() -> None:
    text = (
        "| <sub>Method</sub> | <sub>AP<sub>S</sub></sub> | params<br>(M) |\n|---|---|---|\n"
        "| <sub><sub>[Deformable DETR](https://x.org/a_(b))</sub></sub> | <sub>**44.5**</sub> | `40` |\n"
        "| DETR&dagger; | __42.0__ | <b>41</b> |\n| a < b | 3 <br/> 4 | x<y |\n"
    )
    grid = read_markdown_tables(text)[0]
    assert texts(grid) == [
        ["Method", "APS", "params (M)"],
        ["[Deformable DETR](https://x.org/a_(b))", "44.5", "40"],
        ["DETR\u2020", "42.0", "41"],
        ["a < b", "3 4", "x<y"],
    ]
    assert grid.data_measurements[(1, 1)].value == Decimal("44.5")
    link = read_markdown_tables("| m | v |\n|---|---|\n| [Swin-T](https://github.com/x) | 81.3 |\n")[0]
    assert texts(link)[1] == ["Swin-T", "81.3"]


def test_markdown_reads_html_tables_in_order_with_heading_captions() -> None:
    text = (
        "# Zoo\n\n## ImageNet-1K\n\n| Model | Top-1 |\n|---|---|\n| A | 81.3 |\n\n"
        "## COCO\n\n<table>\n<tr><th>Model</th><th>AP</th></tr>\n<tr><td>A</td><td><sub>44.5</sub></td></tr>\n"
        "<tr><td>B</td><td><table><tr><td>inner</td></tr></table></td></tr>\n</table>\n\n"
        "Table 3: Speed.\n<table><caption>Throughput</caption><tr><td>A</td><td>755</td></tr></table>\n"
        "<table></table>\n| Model | FPS |\n|---|---|\n| B | 437 |\n"
    )
    grids = read_markdown_tables(text, "README.md")
    assert [g.name for g in grids] == [f"README.md#table{n}" for n in (1, 2, 3, 4)]
    assert [g.caption for g in grids] == ["ImageNet-1K", "COCO", "Throughput", "COCO"]
    assert texts(grids[1])[1] == ["A", "44.5"]
    assert texts(grids[2]) == [["A", "755"]]
    unclosed = read_markdown_tables("## R\n<table><tr><td>1.5</td></tr>\n| not | read |\n|---|---|\n")
    assert len(unclosed) == 1 and texts(unclosed[0])[0][0] == "1.5"
    with pytest.raises(TableError, match="or <table> found"):
        read_markdown_tables("<table></table>\nno pipes here")


def test_markdown_footnote_marks_links_after_numbers_and_one_hyphen_delimiters() -> None:
    text = (
        "| Model | MMLU | Top-1 |\n| :- | -: | - |\n"
        "| XVERSE-13B | 46.9<sup>4</sup> | 76.8% ([ckpt](https://x.org/b0.tar.gz)) |\n"
        "| [B0](https://x.org) | <sup>1</sup> | **77.1** [log](https://x.org/l) |\n"
    )
    grid = read_markdown_tables(text)[0]
    assert texts(grid) == [
        ["Model", "MMLU", "Top-1"],
        ["XVERSE-13B", "46.9^{4}", "76.8%"],
        ["B0", "1", "77.1"],
    ]
    assert [m.value for _, m in sorted(grid.data_measurements.items())] == [
        Decimal("46.9"), Decimal("76.8"), Decimal("1"), Decimal("77.1"),
    ]  # fmt: skip
    with pytest.raises(TableError):  # a lone hyphen under a line is a list item, not a delimiter row
        read_markdown_tables("a | b\n-\n")
    assert len(read_markdown_tables("a | b\n--- | ---\n1 | 2\n")) == 1


def test_markdown_comments_hide_rows_and_tables() -> None:
    text = (
        "## Results\n| Model | AP |\n|---|---|\n| A | 44.5 |\n<!-- | B | 50.2 | -->\n| C | 45.1 |\n\n"
        "<!--\n| Old | AP |\n|---|---|\n| D | 1.0 |\n-->\n| E | F |\n|---|---|\n| 1 | 2 |\n<!-- | G | 9.9 |"
    )
    grids = read_markdown_tables(text)
    assert [texts(g) for g in grids] == [
        [["Model", "AP"], ["A", "44.5"], ["C", "45.1"]],
        [["E", "F"], ["1", "2"]],
    ]


def test_markdown_html_blocks_start_a_line_and_code_is_not_a_table() -> None:
    prose = "We render results as a `<table>` element.\n\n| Model | AP |\n|---|---|\n| A | 45.3 |\n"
    assert [texts(g) for g in read_markdown_tables(prose)] == [[["Model", "AP"], ["A", "45.3"]]]
    fenced = (
        "```html\n<table><tr><td>9.9</td></tr></table>\n| x | y |\n|---|---|\n```\n"
        "~~~\n| a | b |\n|---|---|\n~~~~\n| Model | AP |\n|---|---|\n| A | 45.3 |\n"
    )
    assert [texts(g) for g in read_markdown_tables(fenced)] == [[["Model", "AP"], ["A", "45.3"]]]
    unclosed = "<table><tr><td>1.5</td></tr>\n\n| Model | AP |\n|---|---|\n| A | 45.3 |\n"
    assert [texts(g) for g in read_markdown_tables(unclosed)] == [[["1.5"]], [["Model", "AP"], ["A", "45.3"]]]


def test_markdown_comments_over_several_lines_keep_the_table_going() -> None:
    text = "| a | b |\n|---|---|\n| 1 | 2 |\n<!--\n| x | y |\n-->\n| 3 | 4 |\r\n<!-- | z | w |\n| v | u | -->\n| 5 | 6 |\n"
    assert texts(read_markdown_tables(text)[0]) == [["a", "b"], ["1", "2"], ["3", "4"], ["5", "6"]]
    private = "| a |\n|---|\n| 1 |\n\ue000\n| b |\n|---|\n| 2 |\n<!-- c -->"
    assert len(read_markdown_tables(private)) == 2


def test_pipe_separated_text_is_not_taken_for_markdown_by_one_hyphen_rows(tmp_path: Path) -> None:
    path = tmp_path / "psv.txt"
    path.write_text("name|a|b\nx|1.5|2.5\n-|-|-\ny|3.5|4.5\n", encoding="utf-8")
    assert read_tables(path)[0].n_rows == 4


def test_read_tables_by_extension_and_paper_json(tmp_path: Path) -> None:
    (tmp_path / "t.csv").write_text("model,acc\nA,91.2\n", encoding="utf-8")
    (tmp_path / "t.tex").write_text(LATEX, encoding="utf-8")
    (tmp_path / "t.html").write_text(SPANNED, encoding="utf-8")
    paper = {"list_table_and_caption": [{"table": "<table><tr><td>1.5</td></tr></table>", "caption": "T1"}]}
    (tmp_path / "paper.json").write_text(json.dumps(paper), encoding="utf-8")
    assert texts(read_tables(tmp_path / "t.csv")[0]) == [["model", "acc"], ["A", "91.2"]]
    assert read_tables(tmp_path / "t.tex")[0].n_rows == 6
    assert read_tables(tmp_path / "t.html")[0].n_columns == 4
    assert read_tables(tmp_path / "paper.json")[0].caption == "T1"


def test_read_tables_bad_input(tmp_path: Path) -> None:
    with pytest.raises(TableError, match="no such file"):
        read_tables(tmp_path / "missing.html")
    (tmp_path / "empty.html").write_text("", encoding="utf-8")
    with pytest.raises(TableError, match="empty"):
        read_tables(tmp_path / "empty.html")
    (tmp_path / "x.json").write_text('{"a": 1}', encoding="utf-8")
    with pytest.raises(TableError, match="list_table_and_caption"):
        read_tables(tmp_path / "x.json")


def test_large_table_reads() -> None:
    rows = "".join("<tr>" + "".join(f"<td>{i}.{j}</td>" for j in range(50)) + "</tr>" for i in range(500))
    grid = read_html_tables(f"<table>{rows}</table>")[0]
    assert (grid.n_rows, grid.n_columns) == (500, 50)


def test_latex_tabulars_nested_in_cells_are_their_text() -> None:
    tex = r"""\begin{table}\caption{Results}\begin{tabular}{lcc}\toprule
Method & \begin{tabular}[c]{@{}c@{}}AP\\(val)\end{tabular} & F1 \\ \midrule
A & 45.3 & 60.1 \\
B & 46.1 & \begin{tabular}{c}61.0\end{tabular} \\ \bottomrule
\end{tabular}\end{table}"""
    grids = read_latex_tables(tex)
    # one table (the nested tabulars are cells, not tables), read to its own \end
    assert len(grids) == 1 and grids[0].caption == "Results"
    assert texts(grids[0]) == [["Method", "AP (val)", "F1"], ["A", "45.3", "60.1"], ["B", "46.1", "61.0"]]
    assert grids[0].header_row_count == 1 and (2, 2) in grids[0].data_measurements


def test_paper_json_numbers_every_table_in_order_and_skips_entries_without_one(tmp_path: Path) -> None:
    import json

    from tabverify.table.documents import read_paper_json

    one = "<table><tr><td>a</td><td>1.5</td></tr></table>"
    two = (
        "<table><tr><td>b</td><td>2.5</td></tr></table><p>x</p><table><tr><td>c</td><td>3.5</td></tr></table>"
    )
    record = {
        "list_table_and_caption": [
            {"table": one, "caption": "Table 1: first"},
            {"table": "<img src='fig.png'>", "caption": "Figure 2"},
            {"table": None, "caption": None},
            {"table": two, "caption": "Table 3: two parts"},
        ]
    }
    grids = read_paper_json(record, "paper.json")
    assert [g.name for g in grids] == ["paper.json#table1", "paper.json#table2", "paper.json#table3"]
    assert [g.text(0, 0) for g in grids] == ["a", "b", "c"]  # the second <table> of an entry is kept
    assert [g.caption for g in grids] == ["Table 1: first", "Table 3: two parts", "Table 3: two parts"]
    path = tmp_path / "paper.json"
    path.write_text(json.dumps(record))
    assert [g.name for g in read_tables(path)] == [g.name for g in grids]  # as `tabverify tables` lists
