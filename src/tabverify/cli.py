"""The tabverify command line: one Typer app; each command calls one public function."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TimeRemainingColumn
from rich.table import Table as RichTable

from tabverify.errors import TabverifyError
from tabverify.table import CellRef, Table, load_table
from tabverify.table.grid import Grid

if TYPE_CHECKING:
    from tabverify.crosscheck import Report

app = typer.Typer(
    help="Check text against structured evidence, and measure how well the checking works.",
    epilog="""Examples:

  tabverify check results.csv "the hawks won both games against dayton"

  tabverify program run results.csv "eq{count{filter_eq{all_rows; opponent; dayton}}; 2}"

  tabverify crosscheck my-paper.tex --source cited-paper.html

  tabverify bench tabfact --data ../shared/datasets/tabfact --split val --jobs 2
""",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
)
program_app = typer.Typer(
    help="Run and inspect table programs in the TabFact brace syntax.", no_args_is_help=True
)
bench_app = typer.Typer(help="Reproduce benchmark protocols and metrics.", no_args_is_help=True)
train_app = typer.Typer(help="Train the models that ship with tabverify.", no_args_is_help=True)
coref_app = typer.Typer(
    help="Score coreference, also with mentions inside words (Hebrew).", no_args_is_help=True
)
app.add_typer(program_app, name="program")
app.add_typer(bench_app, name="bench")
app.add_typer(train_app, name="train")
app.add_typer(coref_app, name="coref")

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)

EXIT_OK, EXIT_FINDINGS, EXIT_INPUT = 0, 1, 2


def _fail(message: str) -> typer.Exit:
    err.print(f"[bold red]error:[/] {message}", markup=True)
    return typer.Exit(EXIT_INPUT)


def _load(path: Path, caption: str = "") -> Table:
    try:
        return load_table(path, caption=caption)
    except TabverifyError as exc:
        raise _fail(str(exc)) from None


@contextmanager
def _progress() -> Iterator[Callable[[str, int, int], None]]:
    """A progress reporter ``(stage, done, total)``: bars on a terminal, a line per 10% otherwise
    (CI logs, files)."""
    if err.is_terminal:
        columns = (
            "[progress.description]{task.description}",
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
        )
        with Progress(*columns, console=err, transient=True) as bar:
            tasks: dict[str, TaskID] = {}

            def update(stage: str, done: int, total: int) -> None:
                if stage not in tasks:
                    tasks[stage] = bar.add_task(stage, total=total)
                bar.update(tasks[stage], completed=done, total=total)

            yield update
        return
    reported: dict[str, int] = {}

    def report(stage: str, done: int, total: int) -> None:
        tenth = done * 10 // max(total, 1)
        if reported.get(stage, -1) < tenth:
            reported[stage] = tenth
            print(f"{stage}: {done}/{total}", file=sys.stderr, flush=True)

    yield report


def print_evidence(table: Table, evidence: set[CellRef]) -> None:
    """Print the table with its evidence cells marked (and, off a terminal, what the marks mean)."""
    out.print(render_table(table, evidence))
    if not out.is_terminal:
        out.print("  *cell* = evidence read by the program")


def render_table(table: Table, evidence: set[CellRef], max_rows: int = 40) -> RichTable:
    """The table for the terminal, evidence cells highlighted; long tables keep evidence rows."""
    view = RichTable(show_lines=False, title=table.caption or table.name or None)

    view.add_column("#", style="dim", justify="right")
    for header in table.header:
        view.add_column(header)
    evidence_rows = {ref.row for ref in evidence}
    shown = [r for r in range(table.n_rows) if r < max_rows or r in evidence_rows]
    for r in shown:
        cells = []
        for c, cell in enumerate(table.rows[r]):
            text = cell.text.replace("[", r"\[")
            if CellRef(r, c) in evidence:
                # colour on a terminal; asterisks when the output is a file or a pipe
                text = f"[bold black on yellow]{text}[/]" if out.is_terminal else f"*{text}*"
            cells.append(text)
        view.add_row(str(r + 1), *cells)
    if len(shown) < table.n_rows:
        view.caption = f"{table.n_rows - len(shown)} rows not shown"
    return view


@app.command(
    epilog="""Examples:

  tabverify check results.csv "the hawks won both games against dayton"

  tabverify check data/all_csv/2-1859269-1.html.csv "round 1 begin with 156 club" --json
"""
)
def check(
    table_path: Annotated[
        Path, typer.Argument(metavar="TABLE", help="Table file: .csv, .tsv, .json or TabFact .html.csv")
    ],
    statements: Annotated[
        list[str], typer.Argument(metavar="STATEMENT...", help="One or more statements to check")
    ],
    caption: Annotated[str, typer.Option(help="The table's caption (context for the statement)")] = "",
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object with every verdict")] = False,
) -> None:
    """Verify statements against a table. Exit 0: all entailed; 1: some refuted; 2: bad input."""
    from tabverify.verify import TableVerifier

    table = _load(table_path, caption)
    try:
        verifier = TableVerifier()
        verdicts = [verifier.verify(table, s) for s in statements]
    except TabverifyError as exc:
        raise _fail(str(exc)) from None
    if as_json:
        print(
            json.dumps(
                {"table": str(table_path), "verdicts": [v.to_dict() for v in verdicts]},
                ensure_ascii=False,
                indent=2,
            )
        )
    else:
        for verdict in verdicts:
            colour = "green" if verdict.entailed else "red"
            out.print(
                f"[bold {colour}]{verdict.label.value}[/] ({verdict.confidence:.0%})  {verdict.statement}",
                markup=True,
            )
            if verdict.program:
                out.print(f"  program: {verdict.program} = {verdict.result}")
            else:
                out.print("  program: none found (the statement's values could not be linked to the table)")
            if verdict.evidence:
                print_evidence(table, set(verdict.evidence))
    raise typer.Exit(EXIT_OK if all(v.entailed for v in verdicts) else EXIT_FINDINGS)


def _read_document(path: Path) -> list[Grid]:
    from tabverify.table.documents import read_tables

    try:
        return read_tables(path)
    except TabverifyError as exc:
        raise _fail(str(exc)) from None


def _where(grid: Grid, position: tuple[int, int]) -> str:
    row_label, column_label = grid.row_label(position[0]), grid.column_label(position[1])
    names = " / ".join(x for x in (row_label, column_label) if x)
    return f"({position[0]}, {position[1]})" + (f" {names}" if names else "")


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _print_report(title: str, report: Report) -> None:
    source = report.source
    if source is None:
        best = report.ranking[0].support if report.ranking else 0.0
        out.print(f"[bold]{title}[/]: no matching table (best evidence {best:.2f})", markup=True)
        return
    status = (
        "[green]no discrepancies[/]"
        if report.ok
        else f"[bold red]{_count(len(report.discrepancies), 'discrepancy', 'discrepancies')}[/]"
    )
    out.print(
        f"[bold]{title}[/]: matches {source.name}"
        f"{' (' + source.caption[:80] + ')' if source.caption else ''}: {len(report.pairs)} cells agree, {status}",
        markup=True,
    )
    if report.discrepancies:
        view = RichTable("target cell", "copied", "source cell", "source", "kind", "why")
        for d in report.discrepancies:
            view.add_row(
                _where(report.target, d.target).replace("[", r"\["),
                d.target_text.replace("[", r"\["),
                _where(source, d.source).replace("[", r"\["),
                d.source_text.replace("[", r"\["),
                str(d.kind),
                d.evidence.replace("[", r"\["),
            )
        out.print(view)


@app.command(
    epilog="""Examples:

  tabverify crosscheck paper.tex --source cited.html

  tabverify crosscheck paper.html --table 2 --source a.html --source b.tex --html report.html

  tabverify crosscheck target.csv --source source.md --json
"""
)
def crosscheck(
    target: Annotated[
        Path,
        typer.Argument(
            help="The citing document or table: .html, .tex, .md, .csv/.tsv, or an arXiVeri paper .json"
        ),
    ],
    sources: Annotated[
        list[Path],
        typer.Option(
            "--source", metavar="SOURCE", help="A cited document or table (repeat for several sources)"
        ),
    ],
    table: Annotated[
        int | None, typer.Option(help="Check only the target's N-th table (1-based) [default: every table]")
    ] = None,
    html: Annotated[Path | None, typer.Option(help="Write a side-by-side HTML report here")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object with every result")] = False,
) -> None:
    """Check the numbers a table copied from cited sources: which source table, which cells, which
    copies are wrong. Exit 0: nothing wrong; 1: discrepancies found; 2: bad input."""
    from tabverify.crosscheck import crosscheck as run_crosscheck

    targets = _read_document(target)
    if table is not None:
        if not 1 <= table <= len(targets):
            raise _fail(f"--table {table}: {target} has {len(targets)} table(s); choose 1 to {len(targets)}")
        chosen = [(table - 1, targets[table - 1])]
    else:
        chosen = list(enumerate(targets))
    documents = [(path, _read_document(path)) for path in sources]
    results: list[tuple[str, Path, int, Report]] = []
    for index, grid in chosen:
        for path, tables in documents:
            title = f"{target.name} table {index + 1} <- {path.name}"
            results.append((title, path, index, run_crosscheck(grid, tables)))
    found = sum(len(report.discrepancies) for *_, report in results)
    if as_json:
        payload = {
            "target": str(target),
            "discrepancies": found,
            "results": [
                {"target_table": index + 1, "source": str(path), **report.to_dict()}
                for _, path, index, report in results
            ],
        }
        print(json.dumps(payload, ensure_ascii=False, indent=2))
    else:
        for title, _, _, report in results:
            _print_report(title, report)
    if html is not None:
        from tabverify.crosscheck.html import render_html

        try:
            html.parent.mkdir(parents=True, exist_ok=True)
            html.write_text(
                render_html([(title, report) for title, _, _, report in results]), encoding="utf-8"
            )
        except OSError as exc:
            raise _fail(f"--html {html}: cannot write ({exc.strerror})") from None
        if not as_json:
            out.print(f"wrote {html}")
    raise typer.Exit(EXIT_FINDINGS if found else EXIT_OK)


@app.command(
    epilog="""Examples:

  tabverify tables paper.html

  tabverify tables paper.tex --json
"""
)
def tables(
    document: Annotated[
        Path,
        typer.Argument(metavar="DOCUMENT", help="An HTML page, .tex, .md, .csv/.tsv or arXiVeri paper .json"),
    ],
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the tables as JSON (rows of cell texts)")
    ] = False,
) -> None:
    """List the tables of a document with their size and caption (numbers for --table)."""
    grids = _read_document(document)
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
        caption = grid.caption.replace("[", r"\[") or "(no caption)"
        out.print(
            f"{number}. {grid.n_rows} x {grid.n_columns}, {len(grid.data_measurements)} numbers  {caption}"
        )


@coref_app.command(
    "score",
    epilog="""Examples:

  tabverify coref score key.conll response.conll

  tabverify coref score gold.conllu system.conllu --match head --drop-singletons

  tabverify coref score gold.jsonl system.jsonl --match overlap --threshold 0.8 --html view.html --json

  tabverify coref score kibutzr/dev/ system/dev/ --raw raw_documents/dev --match overlap
""",
)
def coref_score(
    key: Annotated[Path, typer.Argument(metavar="KEY", help="Gold documents: a file or a folder of files")],
    response: Annotated[
        Path,
        typer.Argument(metavar="RESPONSE", help="System documents, paired with the key's by document id"),
    ],
    fmt: Annotated[
        str, typer.Option("--format", help="conll, conllu, json, kibutzr or auto (by name and content)")
    ] = "auto",
    raw: Annotated[
        Path | None, typer.Option(help="KibutzR: folder of raw texts (<n>.txt) to align morphemes onto")
    ] = None,
    match: Annotated[str, typer.Option(help="Mention matching: exact, partial, head or overlap")] = "exact",
    threshold: Annotated[
        float, typer.Option(help="overlap: share of the shorter mention the overlap must cover")
    ] = 0.8,
    keep_singletons: Annotated[
        bool,
        typer.Option("--keep-singletons/--drop-singletons", help="Score one-mention entities or remove them"),
    ] = True,
    keep_zeros: Annotated[
        bool, typer.Option("--keep-zeros/--drop-zeros", help="CoNLL-U: keep mentions headed by empty nodes")
    ] = True,
    zero_match: Annotated[
        str, typer.Option(help="Zeros: linear (by position) or dependent (by DEPS)")
    ] = "linear",
    blanc_variant: Annotated[
        str, typer.Option("--blanc", help="BLANC edge cases: conll or corefud")
    ] = "conll",
    weight: Annotated[
        list[str] | None,
        typer.Option(
            help="KIND=W: weight key mentions of a kind in an extra 'weighted' mention view, e.g. "
            "embedded_pronoun=3 (the metrics never use it)"
        ),  # fmt: skip
    ] = None,
    html: Annotated[Path | None, typer.Option(help="Write an HTML alignment view here")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the scores as JSON")] = False,
) -> None:
    """Score a coreference response against a key: MUC, B3, CEAF-m, CEAF-e, BLANC, LEA and CoNLL-F1,
    micro-averaged over documents, with mention detection views. Exit 0, or 2 on bad input."""
    from tabverify.coref import read_documents, score

    logging.basicConfig(level=logging.WARNING, format="warning: %(message)s")
    kind_weights = {}
    for item in weight or []:
        kind, _, value = item.partition("=")
        try:
            kind_weights[kind.strip()] = float(value)
        except ValueError:
            raise _fail(f"--weight {item!r}: write KIND=NUMBER, e.g. embedded_pronoun=3") from None
    try:
        key_docs, response_docs = read_documents(key, fmt, raw), read_documents(response, fmt, raw)
        for docs, path in ((key_docs, key), (response_docs, response)):
            if not docs:
                raise _fail(f"{path}: holds no documents; check the file and --format")
        result = score(
            key_docs, response_docs, match=match, threshold=threshold, keep_singletons=keep_singletons,
            keep_zeros=keep_zeros, zero_match=zero_match, blanc_variant=blanc_variant,
            kind_weights=kind_weights or None,
        )  # fmt: skip
    except TabverifyError as exc:
        raise _fail(str(exc)) from None
    if html is not None:
        from tabverify.coref.html import render_alignment

        try:
            html.parent.mkdir(parents=True, exist_ok=True)
            html.write_text(
                render_alignment(result),
                encoding="utf-8",
            )
        except OSError as exc:
            raise _fail(f"--html {html}: cannot write ({exc.strerror})") from None
    if as_json:
        print(json.dumps(result.to_dict(), ensure_ascii=False, indent=2))
        return
    view = RichTable("metric", "recall", "precision", "F1")
    for name, metric in result.metrics.items():
        view.add_row(name, f"{metric.recall:.4f}", f"{metric.precision:.4f}", f"{metric.f1:.4f}")
    view.add_row("conll_f1", "", "", f"{result.conll_f1:.4f}", style="bold")
    out.print(view)
    mentions = RichTable("mentions", "recall", "precision", "F1")
    for name, metric in result.mentions.items():
        mentions.add_row(name, f"{metric.recall:.4f}", f"{metric.precision:.4f}", f"{metric.f1:.4f}")
    out.print(mentions)
    options = ", ".join(f"{k}={v}" for k, v in result.options.items() if v is not None)
    out.print(f"{result.documents} document(s); {options}")
    if html is not None:
        out.print(f"wrote {html}")


@program_app.command(
    "run",
    epilog="""Examples:

  tabverify program run votes.csv "eq{count{filter_eq{all_rows; party; democratic}}; 3}"

  tabverify program run votes.csv "hop{argmax{all_rows; votes}; candidate}"
""",
)
def program_run(
    table_path: Annotated[Path, typer.Argument(metavar="TABLE", help="Table file")],
    program: Annotated[str, typer.Argument(help="Program in the brace syntax; a trailing =True is ignored")],
) -> None:
    """Execute a program on a table; its value is printed on the last line."""
    from tabverify.program import execute

    table = _load(table_path)
    try:
        execution = execute(program, table)
    except TabverifyError as exc:
        raise _fail(str(exc)) from None
    if execution.evidence:
        print_evidence(table, set(execution.evidence))
    print(execution.display)


@program_app.command("functions")
def program_functions() -> None:
    """List the functions of the program language with their types."""
    from tabverify.program.functions import FUNCTIONS

    view = RichTable("function", "arguments", "returns", "meaning")
    for name, function in sorted(FUNCTIONS.items()):
        view.add_row(name, ", ".join(function.args), function.returns, function.doc)
    out.print(view)


@bench_app.command(
    "tabfact",
    epilog="""Examples:

  tabverify bench tabfact --data ../shared/datasets/tabfact --split val --jobs 2 --out results/val.json

  tabverify bench tabfact --data DIR --split val --limit 500
""",
)
def bench_tabfact(
    data: Annotated[Path, typer.Option(help="Folder in the TabFact release layout")],
    split: Annotated[str, typer.Option(help="val, test, simple_test, complex_test or small_test")] = "val",
    limit: Annotated[int | None, typer.Option(help="Only the first N statements")] = None,
    jobs: Annotated[int, typer.Option(help="Worker processes")] = 1,
    out_file: Annotated[Path | None, typer.Option("--out", help="Write the JSON result here")] = None,
) -> None:
    """Run the TabFact benchmark: accuracy (and the simple/complex channels on val)."""
    from tabverify.bench.tabfact import SPLITS, run_benchmark

    if split not in SPLITS or split == "train":
        raise _fail(f"unknown split {split!r}; choose val, test, simple_test, complex_test or small_test")
    if not data.is_dir():
        raise _fail(f"--data {data}: not a folder")
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(message)s")
    with _progress() as progress:
        try:
            result = run_benchmark(
                data,
                split,
                limit=limit,
                jobs=jobs,
                progress=lambda done, total: progress(f"tabfact {split}", done, total),
            )
        except TabverifyError as exc:
            raise _fail(str(exc)) from None
    if out_file is not None:
        out_file.parent.mkdir(parents=True, exist_ok=True)
        out_file.write_text(json.dumps(result, ensure_ascii=False, indent=1), encoding="utf-8")
    out.print(
        json.dumps(
            {"benchmark": "tabfact", "split": split, "n": result["n"], "metrics": result["metrics"]}, indent=2
        )
    )


@bench_app.command(
    "arxiveri",
    epilog="""Examples:

  tabverify bench arxiveri --data ../shared/datasets/arxiveri

  tabverify bench arxiveri --data DIR --out results/arxiveri.json
""",
)
def bench_arxiveri(
    data: Annotated[
        Path, typer.Option(help="Folder in the arXiVeri release layout (ground_truth/, source_papers/)")
    ],
    out_file: Annotated[
        Path | None, typer.Option("--out", help="Write the JSON result (with every pair) here")
    ] = None,
) -> None:
    """Run the arXiVeri benchmark: table-matching accuracy (th->td normalised and verbatim) and
    cell-matching precision/recall/F1 pooled over pairs."""
    from tabverify.bench.arxiveri import run_benchmark

    if not data.is_dir():
        raise _fail(f"--data {data}: not a folder")
    with _progress() as progress:
        try:
            result = run_benchmark(data, progress=lambda done, total: progress("arxiveri", done, total))
        except TabverifyError as exc:
            raise _fail(str(exc)) from None
    if out_file is not None:
        out_file.parent.mkdir(parents=True, exist_ok=True)
        out_file.write_text(json.dumps(result, ensure_ascii=False, indent=1), encoding="utf-8")
    summary = {k: result[k] for k in ("benchmark", "n_pairs", "metrics", "comparison", "seconds")}
    out.print(json.dumps(summary, indent=2))


@train_app.command(
    "tabfact",
    epilog="""Example (the command that produced the shipped models):

  tabverify train tabfact --data ../shared/datasets/tabfact --jobs 2
""",
)
def train_tabfact(
    data: Annotated[Path, typer.Option(help="Folder in the TabFact release layout (only train is read)")],
    ranker_tables: Annotated[int, typer.Option(help="Train tables for the program ranker")] = 3000,
    verdict_tables: Annotated[
        int | None, typer.Option(help="Further train tables for the verdict model [default: all the rest]")
    ] = None,
    jobs: Annotated[int, typer.Option(help="Worker processes")] = 1,
    seed: Annotated[int, typer.Option(help="Seed of the table shuffle and the ranker's SGD order")] = 0,
    out_dir: Annotated[
        Path | None, typer.Option(help="Where to write the models (default: the package)")
    ] = None,
) -> None:
    """Train the ranker (weak supervision) and the verdict model on the train split."""
    from tabverify.bench.tabfact import train_models
    from tabverify.program.ranker import WEIGHTS_FILE
    from tabverify.verify.decision import MODEL_FILE

    target = out_dir or Path(__file__).parent / "models"
    target.mkdir(parents=True, exist_ok=True)
    with _progress() as progress:
        try:
            ranker, model = train_models(
                data, ranker_tables, verdict_tables, jobs=jobs, seed=seed, progress=progress
            )
        except TabverifyError as exc:
            raise _fail(str(exc)) from None
    ranker.save(target / WEIGHTS_FILE)
    model.save(target / MODEL_FILE)  # type: ignore[attr-defined]
    out.print(f"wrote {target / WEIGHTS_FILE} and {target / MODEL_FILE}")


def main() -> None:
    """Entry point: run the app; bad input exits 2 with a message, never a traceback."""
    try:
        app()
    except TabverifyError as exc:
        err.print(f"error: {exc}")
        sys.exit(EXIT_INPUT)


if __name__ == "__main__":
    main()
