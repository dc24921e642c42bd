"""The ``sql`` command: run one read-only query (or show the schema) of a database from the shell."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.table import Table as RichTable

from tabverify.cli.output import EXIT_OK, err, fail, input_errors, out, text

EPILOG = """Examples:

\b
  tabverify sql data.sqlite "SELECT count(*) FROM users"
  tabverify sql warehouse.duckdb "SELECT * FROM orders ORDER BY total DESC" --max-rows 20
  tabverify sql ./parquet-folder "SELECT city, avg(price) FROM sales GROUP BY city" --json
  tabverify sql postgresql://reader@db.example.org/shop --schema
"""


def _cell(value: object) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, list | dict):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def sql(
    target: Annotated[
        str,
        typer.Argument(
            metavar="TARGET",
            help="DuckDB or SQLite file, Parquet/CSV/TSV file or folder, or postgresql:// URL",
            show_default=False,
        ),
    ],
    query: Annotated[
        str | None,
        typer.Argument(metavar="QUERY", help="One read-only SQL query (SELECT ...)", show_default=False),
    ] = None,
    max_rows: Annotated[int, typer.Option("--max-rows", metavar="N", help="Rows to show (1-100000)")] = 100,
    timeout: Annotated[
        float, typer.Option("--timeout", metavar="S", help="Seconds before the query is stopped")
    ] = 10.0,
    max_bytes: Annotated[
        int, typer.Option("--max-bytes", metavar="B", help="Approximate bytes of values to show")
    ] = 1_000_000,
    schema: Annotated[
        bool, typer.Option("--schema", help="Show tables, columns, keys and row counts instead")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object")] = False,
) -> None:
    """Run one read-only query against a database (or show its schema). Exit 0: it ran; 2: refused,
    invalid, timed out or the database could not be opened."""
    from tabverify.database import connect

    if schema == (query is not None):
        fail("give either a QUERY or --schema (see 'tabverify sql --help')")
    if not 1 <= max_rows <= 100_000:
        fail(f"--max-rows {max_rows}: give a number from 1 to 100000")
    if not 0 < timeout <= 600:
        fail(f"--timeout {timeout:g}: give seconds more than 0 and at most 600")
    if max_bytes < 1:
        fail(f"--max-bytes {max_bytes}: give a positive number of bytes")
    with input_errors():
        database = connect(target)
    with database:
        if schema:
            with input_errors():
                found = database.schema()
            _print_schema(found, as_json)
            raise typer.Exit(EXIT_OK)
        assert query is not None
        result = database.query(query, max_rows=max_rows, max_bytes=max_bytes, timeout_s=timeout)
    if as_json:
        print(json.dumps(result.to_dict(), ensure_ascii=False, indent=2))
        if not result.ok:
            raise typer.Exit(2)
        raise typer.Exit(EXIT_OK)
    if not result.ok:
        fail(result.error or "the query failed")
    view = RichTable(box=None, show_lines=False, pad_edge=False, header_style="bold")
    for column in result.columns:
        view.add_column(text(column))
    for row in result.rows:
        view.add_row(*(text(_cell(v)) for v in row))
    out.print(view)
    shown = f"{len(result.rows):,} row{'' if len(result.rows) == 1 else 's'}"
    if result.notice:
        err.print(text(f"note: {result.notice}"))
    else:
        err.print(text(f"({shown}, {result.elapsed_s:.2f} s)"))
    raise typer.Exit(EXIT_OK)


def _print_schema(found: object, as_json: bool) -> None:
    from tabverify.database import Schema

    assert isinstance(found, Schema)
    if as_json:
        print(json.dumps(found.to_dict(), ensure_ascii=False, indent=2))
        return
    for table in found.tables:
        if table.row_count is None:
            count = "rows unknown (counting took too long)"
        else:
            count = f"{'' if table.row_count_exact else '~'}{table.row_count:,} row{'' if table.row_count == 1 else 's'}"
        out.print(text(f"{table.kind} {table.name} ({count})"))
        for column in table.columns:
            flags = []
            if column.primary_key:
                flags.append("primary key")
            if not column.nullable:
                flags.append("not null")
            line = f"  {column.name}  {column.type}" + (f"  [{', '.join(flags)}]" if flags else "")
            if column.description:
                line += f"  -- {column.description}"
            if column.value_description:
                line += f" (values: {column.value_description})"
            out.print(text(line))
        for key in table.foreign_keys:
            out.print(
                text(
                    f"  foreign key ({', '.join(key.columns)}) -> {key.ref_table} ({', '.join(key.ref_columns)})"
                )
            )
    for note in found.warnings:
        err.print(text(f"warning: {note}"))


def register(app: typer.Typer) -> None:
    """Add the ``sql`` command to the app."""
    app.command("sql", epilog=EPILOG, no_args_is_help=True)(sql)
