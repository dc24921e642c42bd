"""The ``lake`` command group: ``lake index`` (encode every table of a folder or database once into
a lake) and ``lake search`` (tables for a text or a table). Other modules add commands to
:data:`lake_app` (``cli/lake_enrich.py``: related, enrich, make-dlte).

Exit codes: ``lake index`` 0 when every table was indexed, 1 when some tables were skipped (listed),
2 on bad input; ``lake search`` 0, or 2 on bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.text import Text

from tabverify.cli.output import (
    EXIT_FINDINGS,
    EXIT_OK,
    count,
    err,
    fail,
    input_errors,
    out,
    progress,
    text,
    warn,
    worker_count,
)

MAX_LISTED_SKIPS = 20
"""Skipped tables listed by ``lake index`` (the rest are counted)."""

MAX_K = 1000

LAKE_EXAMPLES = """Examples:

\b
  tabverify lake index ../shared/datasets/tabfact/data/all_csv --encoder lexical --out results/tabfact.lake \\
      --captions ../shared/datasets/tabfact/data/table_to_page.json --jobs 2
  tabverify lake index my_database.sqlite --encoder minilm --out results/db.lake
  tabverify lake search results/tabfact.lake --query "new orleans saints 1982 season"
  tabverify lake search results/tabfact.lake --table my_table.csv --k 5 --json
"""

lake_app = typer.Typer(
    help="A table lake: encode tables once (table and column vectors, sketches, keywords), then search them.",
    no_args_is_help=True,
    rich_markup_mode=None,
    epilog=LAKE_EXAMPLES,
)


def lake_index(
    source: Annotated[
        str,
        typer.Argument(
            metavar="SOURCE",
            help="A folder of tables (.csv .tsv .json .html.csv .parquet, recursive), a DuckDB/SQLite file "
            "or a postgresql:// URL",
            show_default=False,
        ),
    ],
    encoder: Annotated[
        str,
        typer.Option(
            "--encoder", metavar="NAME", help="The table encoder (e.g. lexical, minilm)", show_default=False
        ),
    ],
    lake: Annotated[
        Path,
        typer.Option(
            "--out", metavar="LAKE", help="The lake folder (created, or updated)", show_default=False
        ),
    ],
    jobs: Annotated[
        int, typer.Option("--jobs", metavar="N", min=1, help="Processes reading tables while one encodes")
    ] = 1,
    captions: Annotated[
        Path | None,
        typer.Option(
            "--captions",
            metavar="FILE",
            help="JSON {table file name: caption or [caption, url]} (e.g. TabFact's table_to_page.json)",
            show_default=False,
        ),
    ] = None,
    batch: Annotated[
        int,
        typer.Option("--batch", metavar="N", min=1, max=10_000, help="Tables encoded and committed together"),
    ] = 64,
) -> None:
    """Encode every table of SOURCE once into LAKE. Re-running encodes only new and changed tables
    and drops tables whose source is gone; an interrupted run resumes where it stopped."""
    from tabverify.lake.encoders import get_table_encoder
    from tabverify.lake.indexing import build_lake

    with input_errors():
        table_encoder = get_table_encoder(encoder)
    jobs = worker_count(jobs)
    try:
        with input_errors(), progress() as report:
            summary = build_lake(
                source, lake, table_encoder, jobs=jobs, captions=captions, progress=report, batch=batch
            )
    except KeyboardInterrupt:
        err.print(
            f"interrupted; the batches already committed are kept in {lake}: run the same command again "
            "to resume"
        )
        raise typer.Exit(130) from None
    out.print(text(f"{lake}: {summary.line()}"))
    for table_id, reason in summary.skipped[:MAX_LISTED_SKIPS]:
        warn(f"skipped {table_id}: {reason}")
    if len(summary.skipped) > MAX_LISTED_SKIPS:
        warn(
            f"... and {count(len(summary.skipped) - MAX_LISTED_SKIPS, 'more skipped table', 'more skipped tables')}"
        )
    raise typer.Exit(EXIT_FINDINGS if summary.skipped else EXIT_OK)


def lake_search(
    lake: Annotated[
        Path, typer.Argument(metavar="LAKE", help="A lake built by `lake index`", show_default=False)
    ],
    query: Annotated[
        str | None, typer.Option("--query", metavar="TEXT", help="Tables for this text", show_default=False)
    ] = None,
    table: Annotated[
        Path | None,
        typer.Option(
            "--table",
            metavar="FILE",
            help="Tables like this one (.csv .tsv .json .html.csv .parquet)",
            show_default=False,
        ),
    ] = None,
    k: Annotated[int, typer.Option("--k", metavar="K", min=1, max=MAX_K, help="How many tables")] = 10,
    keywords: Annotated[
        bool,
        typer.Option("--keywords", help="Keyword search (BM25 over captions, headers, cells) for --query"),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output")] = False,
) -> None:
    """The K tables of LAKE nearest a text (--query) or a table (--table): id, score, caption."""
    from tabverify.lake.store import Lake, search_record

    if (query is None) == (table is None):
        fail("give one of --query TEXT or --table FILE")
    if query is not None and not query.strip():
        fail("--query: the text is empty")
    if keywords and query is None:
        fail("--keywords searches text: give --query TEXT")
    with input_errors():
        opened = Lake.open(lake)
        with opened:
            if query is not None:
                hits = opened.search_keywords(query, k) if keywords else opened.search_text(query, k)
            else:
                assert table is not None
                hits = opened.search_table(_read_table(table), k)
            record = search_record(
                opened, hits, source=str(lake), query=query, table=str(table) if table is not None else None,
                mode="keywords" if keywords else "vector",
            )  # fmt: skip
    rows = record["hits"]
    if as_json:
        out.print(json.dumps(record, ensure_ascii=False), soft_wrap=True)
        return
    if not rows:
        out.print("no tables found")
        return
    for row in rows:
        out.print(
            Text.assemble(
                (f"{row['rank']:>3}  {row['score']:.4f}  ", ""),
                field(row["id"], "bold"),
                field(f"  {row['caption']}" if row["caption"] else ""),
            )
        )


def field(value: str, style: str = "") -> Text:
    """A table id, caption, header or reason for one line of output: :func:`text`, with line breaks
    and tabs shown as escapes too (a file named ``"a.csv\\n  1  0.99  b.csv"`` must not print as two hits)."""
    return text(value.replace("\n", "\\n").replace("\t", "\\t"), style)


def _read_table(path: Path) -> Any:
    """A query table: CSV/TSV/JSON/TabFact through the table readers, Parquet through DuckDB."""
    if path.name.lower().endswith((".parquet", ".pq")):
        from tabverify.lake.sources import TableRef, load_ref

        if not path.is_file():
            fail(f"--table {path}: no such file")
        return load_ref(TableRef("parquet", str(path), path.name))
    if not path.is_dir() and not path.name.lower().endswith((".csv", ".txt", ".tsv", ".tab", ".json")):
        fail(
            f"--table {path}: unknown table format; use a .csv, .tsv, .json, TabFact .html.csv or .parquet file"
        )
    from tabverify.table.readers import load_table

    return load_table(path)


def register(app: typer.Typer) -> None:
    """Add the ``lake`` command group."""
    lake_app.command("index", epilog=LAKE_EXAMPLES)(lake_index)
    lake_app.command("search", epilog=LAKE_EXAMPLES)(lake_search)
    app.add_typer(lake_app, name="lake")
