"""Commands over documents with tables: ``crosscheck`` (copied numbers against cited sources) and
``tables`` (list a document's tables).

Tables are numbered from 1 everywhere (``--table``, ``tables``, the JSON output); cell positions are
0-based ``(row, column)`` offsets into the expanded grid, header rows included.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table as RichTable
from rich.text import Text

from tabverify.cli.output import (
    EXIT_FINDINGS,
    EXIT_OK,
    check_output,
    clean,
    count,
    fail,
    out,
    text,
    warn,
    write_output,
)
from tabverify.crosscheck.cells import DEFAULT_TIMEOUT_S, check_time, time_limit
from tabverify.errors import TabverifyError
from tabverify.table.grid import Grid
from tabverify.table.scientific import display_text

if TYPE_CHECKING:
    from tabverify.crosscheck import Report

DOCUMENT_HELP = "An HTML page, .tex, .md, .csv/.tsv or arXiVeri paper .json"


def read_document(path: Path) -> list[Grid]:
    """The tables of a document, or exit 2 with the reader's message."""
    from tabverify.table.documents import read_tables

    try:
        return read_tables(path)
    except TabverifyError as exc:
        fail(str(exc))


def _read_sources(paths: list[Path]) -> list[tuple[str, list[Grid]]]:
    """The source documents, each read once (a path given twice is one source), refused as soon
    as the sources alone pass :data:`~tabverify.crosscheck.cells.MAX_RUN_NUMBERS` numbers - not
    after every source has been read and held (300 copies of one 282 KB source took minutes and a
    gigabyte). The whole run, with the target tables ``--table`` picks, is checked afterwards
    (:func:`~tabverify.crosscheck.cells.check_workload`)."""
    from tabverify.crosscheck.cells import MAX_RUN_NUMBERS, check_numbers

    numbers = 0
    documents, seen = [], set()
    for path in paths:
        key = path.resolve()
        if key in seen:
            continue
        seen.add(key)
        grids = read_document(path)
        for number, grid in enumerate(grids, start=1):
            try:
                check_numbers(grid, f"table {number} of {path}")
            except TabverifyError as exc:
                fail(str(exc))
            numbers += len(grid.data_measurements)
        if numbers > MAX_RUN_NUMBERS:
            fail(
                f"the source tables of this run hold more than {MAX_RUN_NUMBERS:,} numbers in all (reached "
                f"at --source {path}); give fewer sources per run"
            )
        documents.append((str(path), grids))
    return documents


def _where(grid: Grid, position: tuple[int, int]) -> str:
    row_label = display_text(grid.row_label(position[0]))
    column_label = display_text(grid.column_label(position[1]))
    names = " / ".join(x for x in (row_label, column_label) if x)
    return f"({position[0]}, {position[1]})" + (f" {names}" if names else "")


def print_report(title: str, report: Report) -> None:
    """One target/source result for the terminal: the matched table and any discrepancies."""
    source = report.source
    if source is None:
        best = report.ranking[0].support if report.ranking else 0.0
        out.print(Text.assemble((clean(title), "bold"), f": no matching table (best evidence {best:.2f})"))
    else:
        status = (
            Text("no discrepancies", style="green")
            if report.ok
            else text(count(len(report.discrepancies), "discrepancy", "discrepancies"), style="bold red")
        )
        caption = f" ({display_text(source.caption)[:80]})" if source.caption else ""
        out.print(
            Text.assemble(
                (clean(title), "bold"),
                clean(f": matches {source.name}{caption}: {len(report.pairs)} cells agree, "),
                status,
            )
        )
    for note in report.warnings:
        warn(f"{title}: {note}")
    if source is not None and report.discrepancies:
        view = RichTable("target cell", "copied", "source cell", "source", "kind", "why")
        for d in report.discrepancies:
            view.add_row(
                text(_where(report.target, d.target)),
                text(display_text(d.target_text)),
                text(_where(source, d.source)),
                text(display_text(d.source_text)),
                text(str(d.kind)),
                text(d.evidence),
            )
        out.print(view)


def crosscheck(
    target: Annotated[
        Path,
        typer.Argument(
            metavar="TARGET",
            help="The citing document or table: .html, .tex, .md, .csv/.tsv, or an arXiVeri paper .json",
            show_default=False,
        ),
    ],
    sources: Annotated[
        list[Path],
        typer.Option(
            "--source",
            metavar="SOURCE",
            help="A cited document or table (repeat for several sources)",
            show_default=False,
        ),
    ],
    table: Annotated[
        int | None,
        typer.Option(
            metavar="N", help="Check only the target's N-th table (numbered from 1) [default: every table]"
        ),
    ] = None,
    html: Annotated[
        Path | None, typer.Option(metavar="FILE", help="Write a side-by-side HTML report here")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object with every result")] = False,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout",
            metavar="S",
            help="Seconds the run may take (counting, comparing, the report) before it stops with exit 2",
        ),
    ] = DEFAULT_TIMEOUT_S,
) -> None:
    """Check the numbers a table copied from cited sources: which source table, which cells, which
    copies are wrong. Exit 0: nothing wrong; 1: discrepancies found; 2: bad input or over --timeout."""
    from tabverify.crosscheck.documents import check_documents

    if not 0 < timeout <= 3600:
        fail(f"--timeout {timeout}: give seconds more than 0 and at most 3600")
    check_output(html, "--html", [target, *sources])
    try:
        # the limit holds from counting the tables' numbers to the last line of the report
        with time_limit(timeout):
            targets = read_document(target)
            documents = _read_sources(sources)
            run = check_documents(str(target), targets, documents, table)
            if html is not None:
                from tabverify.crosscheck.html import render_html

                write_output(html, render_html(run.sections()), "--html")
            if as_json:
                print(json.dumps(run.to_dict(), ensure_ascii=False, indent=2))
            else:
                for title, report in run.sections():
                    check_time()
                    print_report(title, report)
                if html is not None:
                    out.print(text(f"wrote {html}"))
    except TabverifyError as exc:
        fail(str(exc))
    raise typer.Exit(EXIT_FINDINGS if run.discrepancies else EXIT_OK)


def tables(
    document: Annotated[Path, typer.Argument(metavar="DOCUMENT", help=DOCUMENT_HELP, show_default=False)],
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the tables as JSON (rows of cell texts)")
    ] = False,
) -> None:
    """List the tables of a document with their size and caption (the numbers --table takes)."""
    grids = read_document(document)
    if as_json:
        payload = [
            {
                "table": number,
                "caption": grid.caption,
                "header_rows": grid.header_row_count,
                "rows": [[cell.text.strip() for cell in row] for row in grid.cells],
            }
            for number, grid in enumerate(grids, start=1)
        ]
        print(json.dumps(payload, ensure_ascii=False, indent=2))
        return
    for number, grid in enumerate(grids, start=1):
        caption = grid.caption or "(no caption)"
        out.print(
            text(
                f"{number}. {grid.n_rows} x {grid.n_columns}, {len(grid.data_measurements)} numbers  {caption}"
            )
        )


CROSSCHECK_EXAMPLES = """Examples:

\b
  tabverify crosscheck paper.tex --source cited.html
  tabverify crosscheck paper.html --table 2 --source a.html --source b.tex --html report.html
  tabverify crosscheck target.csv --source source.md --json
  tabverify crosscheck volume.html --source a.html --timeout 300
"""

TABLES_EXAMPLES = """Examples:

\b
  tabverify tables paper.html
  tabverify tables paper.tex --json
"""


def register(app: typer.Typer) -> None:
    """Add ``crosscheck`` and ``tables`` to the app."""
    app.command("crosscheck", epilog=CROSSCHECK_EXAMPLES)(crosscheck)
    app.command("tables", epilog=TABLES_EXAMPLES)(tables)
