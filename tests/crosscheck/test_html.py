"""The crosscheck HTML page, read back with an HTML parser: rendered cells with the raw text on hover,
rounded and scaled pairs marked, the legend, table numbers from 1, and escaping of every text."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

from tabverify.crosscheck import crosscheck
from tabverify.crosscheck.html import render_html
from tabverify.table import Grid


class _Page(HTMLParser):
    """Every ``<td>`` and legend key of a page: (classes, title, text), the grid (0: target, 1: source)
    of each, plus the script tags seen."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.cells: list[tuple[set[str], str, str]] = []
        self.grid_of: list[int] = []
        self._grids = -1
        self.keys: list[set[str]] = []
        self.scripts = 0
        self._open: tuple[set[str], str] | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        classes = set((values.get("class") or "").split())
        if tag == "script":
            self.scripts += 1
        if tag == "table" and "grid" in classes:
            self._grids += 1
        if tag == "span" and "key" in classes:
            self.keys.append(classes)
        if tag == "td":
            self._open, self._text = (classes, values.get("title") or ""), []

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._open is not None:
            self.cells.append((*self._open, "".join(self._text)))
            self.grid_of.append(self._grids)
            self._open = None

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            self._text.append(data)


def parse(page: str) -> _Page:
    parser = _Page()
    parser.feed(page)
    parser.close()
    return parser


def cell(page: _Page, grid: int, text: str, position: tuple[int, int]) -> tuple[set[str], str]:
    """The classes and title of the cell of ``grid`` (0: target, 1: source) showing ``text`` at
    ``position`` (the last line of its hover text)."""
    found = [
        (c, t)
        for (c, t, shown), g in zip(page.cells, page.grid_of, strict=True)
        if g == grid and shown == text and t.split("\n")[-1] == f"cell {position}"
    ]
    assert len(found) == 1, (text, position, found)
    return found[0]


def test_cells_show_the_typeset_value_with_the_written_text_on_hover(
    target_path: Path, source_path: Path
) -> None:
    page = parse(render_html([("paper <- cited", crosscheck(target_path, source_path))]))
    classes, title = cell(page, 1, "43.7", (2, 1))  # the source's \textbf{43.7}
    assert r"written: \textbf{43.7}" in title and "copied (exact) to target cell (3, 1)" in title
    assert not classes & {"rounded", "scaled", "bad", "lost"}
    assert not any("\\" in shown for _, _, shown in page.cells)  # no raw LaTeX on the page
    _, header = cell(page, 1, "AP50", (0, 2))
    assert "written: AP$_{50}$" in header


def test_rounded_and_wrong_copies_are_marked_apart_from_exact_ones(
    target_path: Path, source_path: Path
) -> None:
    page = parse(render_html([("paper <- cited", crosscheck(target_path, source_path))]))
    target_classes, target_title = cell(page, 0, "26M", (2, 3))
    source_classes, _ = cell(page, 1, "25.6", (1, 3))
    assert "rounded" in target_classes and "rounded" in source_classes
    assert "rounded copy of source cell (1, 3)" in target_title
    bad_classes, bad_title = cell(page, 0, "66.9", (4, 2))
    assert "bad" in bad_classes and bad_title.startswith("digit:")
    lost_classes, lost_title = cell(page, 1, "66.6", (3, 2))
    assert "lost" in lost_classes and "copied as 66.9 in target cell (4, 2)" in lost_title
    # the legend shows every mark the tables use, the dashed outline included
    assert {"rounded", "scaled", "bad", "lost"} <= set().union(*page.keys)


def test_scaled_pairs_are_marked() -> None:
    source = Grid.from_rows([["Method", "Acc", "F1"], ["alpha", "68.4", "70.1"], ["beta", "72.3", "75.8"]])
    target = Grid.from_rows(
        [["Method", "Acc", "F1"], ["alpha", "0.684", "0.701"], ["beta", "0.723", "0.758"]]
    )
    report = crosscheck(target, [source])
    assert {str(p.agreement) for p in report.pairs} == {"scaled"}
    page = parse(render_html([("t <- s", report)]))
    classes, title = cell(page, 0, "0.684", (1, 1))
    assert "scaled" in classes and "scaled copy of source cell (1, 1)" in title


def test_table_numbers_on_the_page_count_from_one(target_path: Path, source_path: Path) -> None:
    page = render_html([("paper <- cited", crosscheck(target_path, source_path))])
    assert "Matched source table 2 (cited.tex#table2)" in page and "Source table 2" in page


def test_every_text_from_the_documents_is_escaped() -> None:
    hostile = '<script>alert("x")</script> & "quoted" \'single\' {braced}'
    shown = '<script>alert("x")</script> & "quoted" \'single\' braced'  # as typeset: braces gone
    source = Grid.from_rows(
        [["Method", "AP"], [hostile, "40.1"], ["b", "41.2"], ["c", "42.3"]], caption=hostile
    )
    target = Grid.from_rows(
        [["Method", "AP"], [hostile, "40.1"], ["b", "41.2"], ["c", "42.9"]], caption=hostile
    )
    raw = render_html([(hostile, crosscheck(target, [source]))], title=hostile)
    page = parse(raw)
    assert page.scripts == 0 and "<script>" not in raw
    # the texts come back whole through a parser: escaped, neither dropped nor cut at a quote
    labels = [(classes, title) for classes, title, text in page.cells if text == shown]
    assert len(labels) == 2 and all(f"written: {hostile}\n" in title for _, title in labels)
