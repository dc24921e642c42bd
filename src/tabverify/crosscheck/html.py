"""A self-contained HTML page showing crosscheck reports: target and source tables side by side,
each agreeing pair in a shared colour, discrepancies outlined in red with their explanation.

The page has no scripts and loads nothing; every table text is escaped.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from tabverify.crosscheck.report import Report
from tabverify.table.grid import Grid

Position = tuple[int, int]

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 2em; border-top: 1px solid #ccc; padding-top: 1em; }
.side { display: flex; gap: 2em; align-items: flex-start; flex-wrap: wrap; }
.side > div { overflow-x: auto; max-width: 100%; }
table.grid { border-collapse: collapse; font-size: 0.85em; }
table.grid td { border: 1px solid #ddd; padding: 2px 6px; white-space: nowrap; }
table.grid td.head { background: #f3f3f3; font-weight: 600; }
td.bad { outline: 3px solid #d00; outline-offset: -3px; font-weight: 700; }
td.lost { outline: 3px dashed #d00; outline-offset: -3px; }
.caption { font-style: italic; color: #555; max-width: 60em; }
.summary { margin: 0.5em 0; }
.ok { color: #070; font-weight: 600; } .wrong { color: #c00; font-weight: 600; }
table.list { border-collapse: collapse; margin-top: 1em; font-size: 0.9em; }
table.list td, table.list th { border: 1px solid #ccc; padding: 3px 8px; text-align: left; }
"""


def _colour(index: int) -> str:
    hue = (index * 137.508) % 360  # golden angle: neighbouring pairs get distinct colours
    return f"hsl({hue:.0f}, 70%, 85%)"


def _grid_html(
    grid: Grid, colours: dict[Position, str], bad: dict[Position, str], lost: set[Position]
) -> str:
    rows = []
    header_rows = grid.header_row_count
    for i, row in enumerate(grid.cells):
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
            classes = []
            if i < header_rows or cell.header:
                classes.append("head")
            attributes = [f'title="row {i}, column {j}"']
            if (i, j) in bad:
                classes.append("bad")
                attributes[0] = f'title="{escape(bad[(i, j)])}"'
            elif (i, j) in lost:
                classes.append("lost")
            if (i, j) in colours:
                attributes.append(f'style="background:{colours[(i, j)]}"')
            if classes:
                attributes.append(f'class="{" ".join(classes)}"')
            if span > 1:
                attributes.append(f'colspan="{span}"')
            if rowspan > 1:
                attributes.append(f'rowspan="{rowspan}"')
            cells.append(f"<td {' '.join(attributes)}>{escape(cell.text.strip())}</td>")
            j += span
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return '<table class="grid">' + "".join(rows) + "</table>"


def _section(title: str, report: Report) -> str:
    parts = [f"<h2>{escape(title)}</h2>"]
    source = report.source
    if source is None:
        best = report.ranking[0].support if report.ranking else 0.0
        parts.append(
            f'<p class="summary">No table of this source supports the target (best evidence {best:.2f}); '
            "the citation may credit a method without copying numbers.</p>"
        )
        parts.append(f'<p class="caption">{escape(report.target.caption)}</p>')
        parts.append(_grid_html(report.target, {}, {}, set()))
        return "\n".join(parts)
    colours: dict[Position, str] = {}
    source_colours: dict[Position, str] = {}
    for number, pair in enumerate(report.pairs):
        colours[pair.target] = source_colours[pair.source] = _colour(number)
    bad = {d.target: f"{d.kind}: {d.evidence}" for d in report.discrepancies}
    source_bad = {d.source: f"{d.kind}: copied as {d.target_text}" for d in report.discrepancies}
    verdict = (
        '<span class="ok">no discrepancies</span>'
        if report.ok
        else f'<span class="wrong">{len(report.discrepancies)} '
        f"{'discrepancy' if len(report.discrepancies) == 1 else 'discrepancies'}</span>"
    )
    parts.append(
        f'<p class="summary">Matched source table: {escape(source.name)} — {len(report.pairs)} cells agree, '
        f"{verdict}. Cells of the same colour are a pair; red outlines mark wrong copies (hover for why).</p>"
    )
    parts.append('<div class="side">')
    parts.append(
        f'<div><h3>Target</h3><p class="caption">{escape(report.target.caption)}</p>'
        f"{_grid_html(report.target, colours, bad, set())}</div>"
    )
    parts.append(
        f'<div><h3>Source</h3><p class="caption">{escape(source.caption)}</p>'
        f"{_grid_html(source, source_colours, {}, set(source_bad))}</div>"
    )
    parts.append("</div>")
    if report.discrepancies:
        items = "".join(
            f"<tr><td>{d.target[0]}, {d.target[1]}</td><td>{escape(d.target_text)}</td>"
            f"<td>{escape(d.source_text)}</td><td>{escape(str(d.kind))}</td><td>{escape(d.evidence)}</td></tr>"
            for d in report.discrepancies
        )
        parts.append(
            '<table class="list"><tr><th>target cell</th><th>copied</th><th>source</th><th>kind</th>'
            f"<th>evidence</th></tr>{items}</table>"
        )
    return "\n".join(parts)


def render_html(sections: Sequence[tuple[str, Report]], title: str = "tabverify crosscheck") -> str:
    """A complete HTML page with one section per (title, report)."""
    body = "\n".join(_section(name, report) for name, report in sections)
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
        f"<style>{_STYLE}</style></head><body><h1>{escape(title)}</h1>\n{body}\n</body></html>\n"
    )
