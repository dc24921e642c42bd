"""Commands over one table: ``check`` (verify statements) and ``program run/functions``."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Annotated, NoReturn

import typer
from rich.table import Table as RichTable
from rich.text import Text

from tabverify.cli import claimdb
from tabverify.cli.output import EXIT_FINDINGS, EXIT_OK, clean, fail, input_errors, out, text, warn
from tabverify.database import connect
from tabverify.errors import TabverifyError
from tabverify.program.database_table import DatabaseTable, open_table
from tabverify.program.sql import prepare_table, run_program
from tabverify.program.tree import parse_program
from tabverify.table import CellRef, Table, load_table
from tabverify.verify.verdict import Label, Verdict, result_text

program_app = typer.Typer(
    help="Run and inspect table programs in the TabFact brace syntax.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


DbOption = Annotated[
    str | None,
    typer.Option(
        metavar="TARGET",
        help="A table of a database instead of a TABLE file: a DuckDB or SQLite file, a Parquet/CSV file "
        "or folder, or a postgresql:// URL (give --table)",
    ),
]
TableNameOption = Annotated[
    str | None, typer.Option("--table", metavar="NAME", help="The database table (with --db)")
]
CacheOption = Annotated[
    Path | None,
    typer.Option(
        metavar="DIR",
        help="Folder for the database table's value index (with --db) [default: $TABVERIFY_CACHE or "
        "~/.cache/tabverify]",
    ),
]


def load(path: Path, caption: str = "") -> Table:
    """The table at ``path``, or exit 2 with the reader's message."""
    try:
        return load_table(path, caption=caption)
    except TabverifyError as exc:
        fail(str(exc))


def render_table(table: Table, evidence: set[CellRef], marked: bool, max_rows: int = 40) -> RichTable:
    """The table for the terminal with evidence cells highlighted (``marked``: as ``*text*`` for
    files and pipes); long tables keep their evidence rows."""
    view = RichTable(show_lines=False, title=text(table.caption or table.name or ""))
    view.add_column("#", style="dim", justify="right")
    for header in table.header:
        view.add_column(text(header))
    evidence_rows = {ref.row for ref in evidence}
    shown = [r for r in range(table.n_rows) if r < max_rows or r in evidence_rows]
    for r in shown:
        cells = []
        for c, cell in enumerate(table.rows[r]):
            if CellRef(r, c) not in evidence:
                cells.append(text(cell.text))
            elif marked:
                cells.append(text(f"*{cell.text}*"))
            else:
                cells.append(text(cell.text, "bold black on yellow"))
        view.add_row(str(r + 1), *cells)
    if len(shown) < table.n_rows:
        view.caption = f"{table.n_rows - len(shown)} rows not shown"
    return view


def print_evidence(table: Table, evidence: set[CellRef]) -> None:
    """Print the table with its evidence cells marked (and, off a terminal, what the marks mean)."""
    out.print(render_table(table, evidence, marked=not out.is_terminal))
    if not out.is_terminal:
        out.print("  *cell* = evidence read by the program")


def check(
    table_path: Annotated[
        str | None,
        typer.Argument(
            metavar="TABLE",
            help="Table file: .csv, .tsv, .json or TabFact .html.csv (left out with --db or --lake)",
            show_default=False,
        ),
    ] = None,
    statements: Annotated[
        list[str] | None,
        typer.Argument(metavar="STATEMENT", help="One or more statements to check", show_default=False),
    ] = None,
    db: DbOption = None,
    table_name: TableNameOption = None,
    cache: CacheOption = None,
    lake: Annotated[
        Path | None,
        typer.Option(
            "--lake",
            metavar="LAKE",
            help="A lake built by `tabverify lake index` instead of a TABLE file: each statement's "
            "evidence table is retrieved from it (the verdict names it and the runners-up)",
        ),
    ] = None,
    caption: Annotated[
        str, typer.Option(metavar="TEXT", help="The table's caption (context for the statement)")
    ] = "",
    models: Annotated[
        Path | None,
        typer.Option(
            metavar="DIR",
            help="Folder of models written by `tabverify train tabfact --out DIR` [default: the shipped ones]",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object with every verdict")] = False,
    extra_info: Annotated[
        str,
        typer.Option(
            metavar="TEXT", help="With --db and no --table: hints mapping the claim's words to the schema"
        ),
    ] = "",
    verifier: claimdb.VerifierOption = "auto",
    trace: Annotated[
        Path | None,
        typer.Option(
            metavar="FILE", help="With --db and no --table: the model's per-claim traces (JSON Lines)"
        ),
    ] = None,
    base_url: claimdb.LlmUrlOption = None,
    model: claimdb.ModelOption = None,
    api_key_env: claimdb.KeyEnvOption = "TABVERIFY_LLM_API_KEY",
    llm_timeout: claimdb.LlmTimeoutOption = 120.0,
    llm_retries: claimdb.LlmRetriesOption = 3,
    encoder: claimdb.EncoderOption = "auto",
) -> None:
    """Verify statements against a table, or claims against a whole database (--db without --table:
    ENTAILED / REFUTED (ClaimDB's CONTRADICTED) / NOT ENOUGH INFO, with a model or offline), or
    claims against the tables of a lake (--lake: each claim's table is retrieved first).
    Exit 0: all entailed; 1: some refuted or not enough info; 2: bad input or undecided."""
    from tabverify.program.ranker import WEIGHTS_FILE
    from tabverify.verify import TableVerifier
    from tabverify.verify.decision import MODEL_FILE

    statements = list(statements or [])
    if table_path is None:  # nothing given at all: what is missing depends on the mode
        fail(
            ("give at least one STATEMENT to check" if lake is not None or db is not None
             else "give a TABLE file and at least one STATEMENT (or --db TARGET / --lake LAKE and STATEMENTs)")
            + "; see tabverify check --help"
        )  # fmt: skip
    if lake is not None:
        _check_lake_usage(
            table_path, db, table_name, cache, caption, extra_info, trace, verifier, base_url, model
        )
        _check_against_lake(lake, [table_path, *statements], models, as_json)
    if db is not None:
        statements.insert(0, table_path)  # with --db there is no TABLE: every argument is a statement
    elif table_name is not None or cache is not None:
        fail("--table and --cache go with --db TARGET (a database); a table file is given as TABLE")
    if not statements:
        fail("give at least one STATEMENT to check")
    if models is not None and not models.is_dir():
        fail(f"--models {models}: not a folder; name the folder given to `tabverify train tabfact --out`")
    if db is not None and not table_name:
        if cache is not None or caption or models is not None:
            fail("--cache, --caption and --models go with --db TARGET --table NAME (one table)")
        claimdb.check_database(
            db, statements, extra_info=extra_info, verifier=verifier, trace=trace, base_url=base_url,
            model=model, api_key_env=api_key_env, llm_timeout=llm_timeout, encoder=encoder, as_json=as_json,
            llm_retries=llm_retries,
        )  # fmt: skip
    if extra_info or trace is not None or verifier != "auto" or base_url or model:
        fail("--extra-info, --verifier, --trace, --llm-base-url and --model are for claims against a "
             "whole database (--db TARGET without --table)")  # fmt: skip
    if db is not None:
        _cache_folder(cache)
        with input_errors():
            database = connect(db)
            table: Table | DatabaseTable = open_table(database, table_name, cache_dir=cache)
        source = table.source
    else:
        table = load(Path(table_path), caption)
        source = table_path
    with input_errors():
        if models is None:
            verifier = TableVerifier()
        else:
            verifier = TableVerifier(ranker=models / WEIGHTS_FILE, model=models / MODEL_FILE)
        verdicts = [verifier.verify(s, table) for s in statements]
    if as_json:
        payload = {"table": source, "verdicts": [v.to_dict() for v in verdicts]}
        print(json.dumps(payload, ensure_ascii=False, indent=2))
    else:
        for verdict in verdicts:
            _print_heading(verdict)
            _print_program(verdict)
            if verdict.sql:
                out.print(text(f"  sql: {verdict.sql}"))
            if verdict.evidence and isinstance(table, Table):
                print_evidence(table, set(verdict.evidence))
            elif verdict.evidence:
                print_database_evidence(table, verdict.evidence)
    raise typer.Exit(EXIT_OK if all(v.entailed for v in verdicts) else EXIT_FINDINGS)


_TABLE_SUFFIXES = (".csv", ".tsv", ".json", ".jsonl", ".parquet", ".pq", ".txt")


def _print_heading(verdict: Verdict) -> None:
    """A verdict's first line (label, confidence, statement) and its warnings."""
    colour = {Label.ENTAILED: "green", Label.REFUTED: "red"}.get(verdict.label, "yellow")
    # an abstention for want of evidence has no confidence to show ("(100%)" would read as certainty)
    abstained = verdict.label is Label.NOT_ENOUGH_INFO and verdict.guess is not None
    confidence = "" if abstained else f" ({verdict.confidence:.0%})"
    out.print(
        Text.assemble((verdict.label.value, f"bold {colour}"), clean(f"{confidence}  {verdict.statement}"))
    )
    for note in verdict.warnings:
        warn(note)


def _print_program(verdict: Verdict) -> None:
    """A verdict's evidence program and its result, then its notes (why the confidence is lower,
    or, for NOT ENOUGH INFO, that no evidence was found and what could not be linked)."""
    if verdict.program:
        out.print(text(f"  program: {verdict.program} = {verdict.result_text}"))
    elif verdict.label is not Label.NOT_ENOUGH_INFO:
        out.print("  program: none found (the statement's values could not be linked to the table)")
    for note in verdict.notes:
        out.print(text(f"  note: {note}"))


def _check_lake_usage(first: str, db: str | None, *others: object) -> None:
    """Refuse what does not go with --lake: a TABLE file, --db, and the table/database options."""
    if db is not None:
        fail("give one of a TABLE file, --db TARGET or --lake LAKE, not --db and --lake together")
    word = first.strip()
    if (" " not in word and word.lower().endswith(_TABLE_SUFFIXES)) or _is_file(word):
        fail(
            f"--lake LAKE retrieves the table itself: give only STATEMENTs, not a TABLE file ({word[:80]!r})"
        )
    if any(value not in (None, "", "auto") for value in others):
        fail("with --lake give only STATEMENTs (and --models, --json); --table, --cache, --caption, "
             "--extra-info, --trace, --verifier, --llm-base-url and --model go with a TABLE or --db")  # fmt: skip


def _is_file(word: str) -> bool:
    """Whether ``word`` names an existing file (a statement longer than a file name may be is none:
    asking the OS raised 'File name too long')."""
    try:
        return Path(word).is_file()
    except (OSError, ValueError):
        return False


def _check_against_lake(path: Path, statements: list[str], models: Path | None, as_json: bool) -> NoReturn:
    """Retrieve each statement's evidence table from the lake at ``path``, verify against the best
    candidates (:func:`tabverify.lake.retrieve.check_with_lake`), print the verdicts and exit."""
    from tabverify.lake.retrieve import Retriever, check_with_lake, lake_check_record
    from tabverify.lake.store import Lake
    from tabverify.program.ranker import WEIGHTS_FILE
    from tabverify.verify import TableVerifier
    from tabverify.verify.decision import MODEL_FILE

    if models is not None and not models.is_dir():
        fail(f"--models {models}: not a folder; name the folder given to `tabverify train tabfact --out`")
    if not path.exists():
        fail(
            f"--lake {path}: no such folder; build one with `tabverify lake index SOURCE --encoder NAME --out {path}`"
        )
    with input_errors():
        opened = Lake.open(path)
        opened.encoder  # noqa: B018 - a lake whose encoder is unknown or foreign is refused, as lake search does
        if models is None:
            verifier = TableVerifier()
        else:
            verifier = TableVerifier(ranker=models / WEIGHTS_FILE, model=models / MODEL_FILE)
        retriever = Retriever(opened)
        verdicts = [check_with_lake(opened, s, verifier=verifier, retriever=retriever) for s in statements]
    if as_json:
        print(json.dumps(lake_check_record(str(path), verdicts), ensure_ascii=False, indent=2))
    else:
        for verdict in verdicts:
            _print_heading(verdict)
            if verdict.evidence_table is None:
                for step in verdict.trace:
                    out.print(text(f"  {step.text}"))
                continue
            caption = opened.info(verdict.evidence_table).caption
            out.print(text(f"  table: {verdict.evidence_table}" + (f" ({caption})" if caption else "")))
            out.print(text(f"  runners-up: {', '.join(verdict.runners_up) or 'none'}"))
            _print_program(verdict)
            if verdict.evidence and verdict.evidence_table:
                print_evidence(opened.load(verdict.evidence_table), set(verdict.evidence))
    raise typer.Exit(EXIT_OK if all(v.entailed for v in verdicts) else EXIT_FINDINGS)


def program_run(
    table_path: Annotated[
        str, typer.Argument(metavar="TABLE", help="Table file (left out with --db)", show_default=False)
    ],
    program: Annotated[
        str | None,
        typer.Argument(
            metavar="PROGRAM",
            help="Program in the brace syntax; a trailing =True is ignored",
            show_default=False,
        ),
    ] = None,
    engine: Annotated[
        str,
        typer.Option(
            metavar="ENGINE",
            help="memory (Python), or duckdb / sqlite: the table file is loaded into that engine and the "
            "program runs as one SQL query",
        ),
    ] = "memory",
    db: DbOption = None,
    table_name: TableNameOption = None,
    cache: CacheOption = None,
) -> None:
    """Execute a program on a table; its value is printed on the last line (with SQL engines, the
    query is printed before it)."""
    from tabverify.program import execute

    if db is not None:
        if program is not None:
            fail("with --db give only the PROGRAM (the table is --table NAME), not a TABLE file")
        if engine != "memory":
            fail("--engine is for a TABLE file; with --db the program runs in the database's own engine")
        if not table_name:
            fail("--db needs --table NAME: the database table to run the program on")
        _cache_folder(cache)
        with input_errors():
            database = connect(db)
            table = open_table(database, table_name, cache_dir=cache)
            parsed = parse_program(table_path)
            value, evidence, sql = table.evidence(parsed)
        out.print(text(f"sql: {sql}"))
        if evidence:
            print_database_evidence(table, tuple(evidence))
        print(clean(result_text(value)))  # type: ignore[arg-type]
        return
    if program is None:
        fail("give a TABLE file and a PROGRAM (or --db TARGET --table NAME and a PROGRAM)")
    if table_name is not None or cache is not None:
        fail("--table and --cache go with --db TARGET")
    if engine not in ("memory", "duckdb", "sqlite"):
        fail(f"--engine {engine!r}: choose memory, duckdb or sqlite")
    loaded = load(Path(table_path))
    if engine != "memory":
        with input_errors(), tempfile.TemporaryDirectory(prefix="tabverify-") as scratch:
            sql_table = prepare_table(loaded, Path(scratch) / f"table.{engine}", engine)
            with connect(Path(scratch) / f"table.{engine}") as database:
                execution = run_program(program, database, sql_table)
        out.print(text(f"sql: {execution.sql}"))
        print(clean(result_text(execution.json)))
        return
    with input_errors():
        execution = execute(program, loaded)
    if execution.evidence:
        print_evidence(loaded, set(execution.evidence))
    print(clean(execution.display))


def _cache_folder(cache: Path | None) -> None:
    """Refuse a --cache that exists and is not a folder (the value index would never be kept)."""
    if cache is not None and cache.exists() and not cache.is_dir():
        fail(f"--cache {cache}: not a folder; name a folder for the value index (it is created if missing)")


def print_database_evidence(table: DatabaseTable, evidence: tuple[CellRef, ...], limit: int = 20) -> None:
    """The evidence cells of a database table, one line each: row key, column, text."""
    shown = evidence[:limit]
    texts = table.row_texts(sorted({ref.row for ref in shown}))
    out.print("  evidence (row key, column: cell):")
    for ref in shown:
        out.print(text(f"    {ref.row}  {table.header[ref.column]}: {texts[ref.row][ref.column]}"))
    if len(evidence) > limit:
        out.print(f"    ... {len(evidence) - limit} more cells")


def program_functions() -> None:
    """List the functions of the program language with their types."""
    from tabverify.program.functions import FUNCTIONS

    view = RichTable("function", "arguments", "returns", "meaning")
    for name, function in sorted(FUNCTIONS.items()):
        view.add_row(text(name), Text(", ".join(function.args)), text(function.returns), text(function.doc))
    out.print(view)


CHECK_EXAMPLES = """Examples:

\b
  tabverify check results.csv "the hawks won both games against dayton"
  tabverify check data/all_csv/2-1859269-1.html.csv "round 1 begin with 156 club" --json
  tabverify check --db matches.duckdb --table matches "arsenal scored more goals at home than away"
  tabverify check --db postgresql://reader@localhost/news --table results "there were 380 games"
  tabverify check --lake results/lakes/tabfact-lexical "the turkish cup third round had no new entries"
"""

RUN_EXAMPLES = """Examples:

\b
  tabverify program run votes.csv "eq{count{filter_eq{all_rows; party; democratic}}; 3}"
  tabverify program run votes.csv "hop{argmax{all_rows; votes}; candidate}"
  tabverify program run votes.csv "count{all_rows}" --engine duckdb
  tabverify program run --db matches.duckdb --table matches "max{all_rows; attendance}"
"""


def register(app: typer.Typer) -> None:
    """Add ``check`` and ``program`` to the app."""
    app.command("check", epilog=CHECK_EXAMPLES)(check)
    program_app.command("run", epilog=RUN_EXAMPLES)(program_run)
    program_app.command("functions", epilog="Example:\n\n\b\n  tabverify program functions\n")(
        program_functions
    )
    app.add_typer(program_app, name="program")
