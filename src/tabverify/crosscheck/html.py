"""A self-contained HTML page showing crosscheck reports: target and source tables side by side,
each agreeing pair in a shared colour (marked ``≈`` when one side is the other rounded, ``×100``
when scaled), wrong copies outlined in red, and the source cell each should have copied outlined in
dashed red. Rows (and cells) the target marks as its own, reproduced or re-implemented results are
not checked, and their hover text says so.

Cells show their text as typeset (``\\textbf{43.7}`` shows 43.7); hovering shows the text as written,
the cell's position and, for pairs and wrong copies, what relates them. Tables are numbered from 1;
cell positions are 0-based ``(row, column)`` offsets into the expanded grid, header rows included.
The page has no scripts and loads nothing; every text from the documents is escaped.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from html import escape as escape_html

from tabverify.crosscheck.cells import check_time
from tabverify.crosscheck.report import Report, own_rows
from tabverify.errors import TableSizeError
from tabverify.table.grid import Grid
from tabverify.table.numbers import Agreement
from tabverify.table.scientific import display_text

Position = tuple[int, int]

_PAGE_STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 2em; border-top: 1px solid #ccc; padding-top: 1em; }
"""

REPORT_STYLE = """
.side { display: flex; gap: 2em; align-items: flex-start; flex-wrap: wrap; }
.side > div { overflow-x: auto; max-width: 100%; }
table.grid { border-collapse: collapse; font-size: 0.85em; }
table.grid td { border: 1px solid #ddd; padding: 2px 6px; white-space: nowrap; }
table.grid td.head { background: #f3f3f3; font-weight: 600; }
.bad { outline: 3px solid #d00; outline-offset: -3px; font-weight: 700; }
.lost { outline: 3px dashed #d00; outline-offset: -3px; }
.rounded::after { content: " \\2248"; color: #555; font-size: 0.85em; }
.scaled::after { content: " \\00d7" "100"; color: #555; font-size: 0.85em; }
.caption { font-style: italic; color: #555; max-width: 60em; }
.summary { margin: 0.5em 0; }
.warning { color: #8a5a00; }
.ok { color: #070; font-weight: 600; } .wrong { color: #c00; font-weight: 600; }
ul.legend { list-style: none; padding: 0; display: flex; flex-wrap: wrap; gap: 0.5em 1.5em; font-size: 0.9em; }
ul.legend .key { display: inline-block; min-width: 2.5em; padding: 1px 6px; border: 1px solid #ddd; margin-right: 0.4em; }
table.list { border-collapse: collapse; margin-top: 1em; font-size: 0.9em; }
table.list td, table.list th { border: 1px solid #ccc; padding: 3px 8px; text-align: left; }
"""

_LEGEND = (
    '<ul class="legend">'
    f'<li><span class="key" style="background:{"hsl(0, 70%, 85%)"}">45.3</span>a pair: the same number in '
    "both tables (one colour per pair)</li>"
    f'<li><span class="key rounded" style="background:{"hsl(137, 70%, 85%)"}">45.3</span>one side is the '
    "other rounded to fewer digits</li>"
    f'<li><span class="key scaled" style="background:{"hsl(275, 70%, 85%)"}">0.453</span>one side is the '
    "other times 100 (fraction vs percent)</li>"
    '<li><span class="key bad">45.8</span>a wrong copy in the target (hover for why)</li>'
    '<li><span class="key lost">45.3</span>the source cell it should have copied</li>'
    "</ul>"
)

_MARK = {Agreement.ROUNDED: "rounded", Agreement.SCALED: "scaled"}

_REORDERING = re.compile("[\u202a-\u202e\u2066-\u2069]")


def escape(text: str) -> str:
    """Document text for the page: HTML-escaped, and the bidirectional embeddings, overrides and
    isolates (U+202A-U+202E, U+2066-U+2069), which would reorder what a reader sees of a cell or a
    caption, written as visible ``\\u202e`` escapes, as the terminal output shows them."""
    return _REORDERING.sub(lambda m: f"\\u{ord(m.group()):04x}", escape_html(text))


def _colour(index: int) -> str:
    hue = (index * 137.508) % 360  # golden angle: neighbouring pairs get distinct colours
    return f"hsl({hue:.0f}, 70%, 85%)"


def _grid_html(
    grid: Grid,
    colours: dict[Position, str],
    notes: dict[Position, str],
    marks: dict[Position, str],
) -> str:
    """A grid as an HTML table; ``marks`` gives cells a class (bad, lost, rounded, scaled) and
    ``notes`` a first line of their hover text."""
    rows = []
    header_rows = grid.header_row_count
    for i, row in enumerate(grid.cells):
        if i % 64 == 0:
            check_time()
        cells = []
        j = 0
        while j < len(row):
            cell = row[j]
            if cell.origin != (i, j):  # a spanned copy: drawn by its origin
                j += 1
                continue
            span = 1
            while j + span < len(row) and row[j + span].origin == (i, j):
                span += 1
            rowspan = 1
            while i + rowspan < grid.n_rows and grid.cells[i + rowspan][j].origin == (i, j):
                rowspan += 1
            written = cell.text.strip()
            shown = display_text(written)
            hover = [notes[(i, j)]] if (i, j) in notes else []
            if shown != written:
                hover.append(f"written: {written}")
            hover.append(f"cell ({i}, {j})")
            classes = []
            if i < header_rows or cell.header:
                classes.append("head")
            if (i, j) in marks:
                classes.append(marks[(i, j)])
            attributes = [f'title="{escape(chr(10).join(hover))}"']
            if (i, j) in colours:
                attributes.append(f'style="background:{colours[(i, j)]}"')
            if classes:
                attributes.append(f'class="{" ".join(classes)}"')
            if span > 1:
                attributes.append(f'colspan="{span}"')
            if rowspan > 1:
                attributes.append(f'rowspan="{rowspan}"')
            cells.append(f"<td {' '.join(attributes)}>{escape(shown)}</td>")
            j += span
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return '<table class="grid">' + "".join(rows) + "</table>"


def _section(title: str, report: Report) -> str:
    parts = [f"<h2>{escape(title)}</h2>"]
    parts.extend(f'<p class="warning">{escape(note)}</p>' for note in report.warnings)
    source = report.source
    if source is None:
        best = report.ranking[0].support if report.ranking else 0.0
        parts.append(
            f'<p class="summary">No table of this source supports the target (best evidence {best:.2f}); '
            "the citation may credit a method without copying numbers.</p>"
        )
        parts.append(f'<p class="caption">{escape(report.target.caption)}</p>')
        parts.append(_grid_html(report.target, {}, {}, {}))
        return "\n".join(parts)
    colours: dict[Position, str] = {}
    source_colours: dict[Position, str] = {}
    notes: dict[Position, str] = {}
    source_notes: dict[Position, str] = {}
    marks: dict[Position, str] = {}
    source_marks: dict[Position, str] = {}
    for number, pair in enumerate(report.pairs):
        colours[pair.target] = source_colours[pair.source] = _colour(number)
        notes[pair.target] = f"{pair.agreement} copy of source cell {pair.source}"
        source_notes[pair.source] = f"copied ({pair.agreement}) to target cell {pair.target}"
        if pair.agreement in _MARK:
            marks[pair.target] = source_marks[pair.source] = _MARK[pair.agreement]
    own, own_cells = own_rows(report.target)
    unchecked = {(row, j) for row in own for j in range(report.target.n_columns)} | own_cells
    for position in unchecked:
        note = "not checked: the table marks this as its own, reproduced or re-implemented result"
        notes[position] = f"{note}; {notes[position]}" if position in notes else note
    for d in report.discrepancies:
        notes[d.target] = f"{d.kind}: {d.evidence}"
        marks[d.target] = "bad"
        source_notes[d.source] = f"{d.kind}: copied as {d.target_text} in target cell {d.target}"
        source_marks[d.source] = "lost"
    wrong = len(report.discrepancies)
    verdict = (
        '<span class="ok">no discrepancies</span>'
        if report.ok
        else f'<span class="wrong">{wrong} {"discrepancy" if wrong == 1 else "discrepancies"}</span>'
    )
    number = report.source_index + 1 if report.source_index is not None else 0
    parts.append(
        f'<p class="summary">Matched source table {number} ({escape(source.name)}): '
        f"{len(report.pairs)} cells agree, {verdict}.</p>"
    )
    parts.append(_LEGEND)
    parts.append('<div class="side">')
    parts.append(
        f'<div><h3>Target</h3><p class="caption">{escape(report.target.caption)}</p>'
        f"{_grid_html(report.target, colours, notes, marks)}</div>"
    )
    parts.append(
        f'<div><h3>Source table {number}</h3><p class="caption">{escape(source.caption)}</p>'
        f"{_grid_html(source, source_colours, source_notes, source_marks)}</div>"
    )
    parts.append("</div>")
    if report.discrepancies:
        items = "".join(
            f"<tr><td>{d.target[0]}, {d.target[1]}</td><td>{escape(display_text(d.target_text))}</td>"
            f"<td>{d.source[0]}, {d.source[1]}</td><td>{escape(display_text(d.source_text))}</td>"
            f"<td>{escape(str(d.kind))}</td><td>{escape(d.evidence)}</td></tr>"
            for d in report.discrepancies
        )
        parts.append(
            '<table class="list"><tr><th>target cell (row, column from 0)</th><th>copied</th>'
            f"<th>source cell</th><th>source</th><th>kind</th><th>evidence</th></tr>{items}</table>"
        )
    return "\n".join(parts)


MAX_REPORT_CHARS = 50_000_000
"""The longest HTML report rendered: every result shows its target and its matched source table in
full, so a large source matched by many target tables repeats (120 results of a 10 MB source wrote
1.2 GB); a paper's report is well under a megabyte."""


def render_sections(sections: Sequence[tuple[str, Report]]) -> str:
    """The report's body as an HTML fragment, one section per (title, report), styled by
    :data:`REPORT_STYLE` (the web app shows it inside its own page)."""
    parts, size = [], 0
    for name, report in sections:
        parts.append(_section(name, report))
        size += len(parts[-1])
        if size > MAX_REPORT_CHARS:
            raise TableSizeError(
                f"the HTML report would be longer than {MAX_REPORT_CHARS:,} characters (each result "
                "shows its target and source tables in full); check some target tables with --table N, "
                "or leave out --html and use --json"
            )
    return "\n".join(parts)


def render_html(sections: Sequence[tuple[str, Report]], title: str = "tabverify crosscheck") -> str:
    """A complete HTML page with one section per (title, report)."""
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
        f"<style>{_PAGE_STYLE}{REPORT_STYLE}</style></head><body><h1>{escape(title)}</h1>\n"
        f"{render_sections(sections)}\n</body></html>\n"
    )
