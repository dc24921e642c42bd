"""Lake commands beyond index and search: ``lake related`` (union and join candidates for a
table, with aligned columns and reasons), ``lake enrich`` (the three DLTE stages: the enriched table
and a provenance report) and ``lake make-dlte`` (the DLTE benchmark generator).

The commands are added to :data:`tabverify.cli.lake.lake_app` when this module is imported
(:func:`register` does it too, for the app's module loop).

Exit codes: ``related`` 0 (also when nothing is related: it says so), ``enrich`` 0 when cells were
added and 1 when nothing was found to add (the table and report are still written), ``make-dlte`` 0;
2 on bad input, with one ``error:`` line."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from tabverify.cli.lake import field, lake_app
from tabverify.cli.output import (
    EXIT_FINDINGS,
    EXIT_OK,
    check_output,
    fail,
    input_errors,
    out,
    progress,
    text,
    write_output,
)

MAX_K = 200

ENRICH_EXAMPLES = """Examples:

\b
  tabverify lake related results/tabfact.lake --table players.csv --k 10
  tabverify lake enrich results/tabfact.lake --table players.csv --out players.enriched.csv --report players.json
  tabverify lake make-dlte ../shared/datasets/tabfact/data/all_csv --out results/dlte --seed 0
"""

LakeArgument = Annotated[
    Path, typer.Argument(metavar="LAKE", help="A lake built by `lake index`", show_default=False)
]
TableOption = Annotated[
    Path,
    typer.Option(
        "--table", metavar="FILE", help="The table (.csv .tsv .json .html.csv .parquet)", show_default=False
    ),
]
KOption = Annotated[
    int, typer.Option("--k", metavar="K", min=1, max=MAX_K, help="Tables retrieved by vector (stage 1)")
]


def _load(table: Path):
    from tabverify.cli.lake import _read_table

    loaded = _read_table(table)  # Parquet too, as `lake index` and `lake search --table` read it
    if loaded.n_columns == 0 or loaded.n_rows == 0:
        fail(f"--table {table}: the table has no data rows; nothing to relate")
    return loaded


def lake_related(
    lake: LakeArgument,
    table: TableOption,
    k: KOption = 10,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output")] = False,
) -> None:
    """Tables of LAKE that extend FILE with rows (union) or columns (join): operation, score,
    aligned columns and the reason."""
    from tabverify.lake.related import related_tables
    from tabverify.lake.store import Lake

    with input_errors():
        query = _load(table)
        with Lake.open(lake) as opened:
            found = related_tables(opened, query, k)
    if as_json:
        record = {"lake": str(lake), "table": str(table), "related": [r.to_dict() for r in found]}
        out.print(json.dumps(record, ensure_ascii=False), soft_wrap=True)
        return
    if not found:
        out.print("no related tables found")
        return
    for rank, r in enumerate(found, start=1):
        out.print(
            Text.assemble(
                (f"{rank:>3}  {r.operation:<5}  {r.score:.3f}  ", ""),
                field(r.id, "bold"),
                "  ",
                field(r.reason),
            )
        )
        pairs = ", ".join(f"{q} = {c} ({s:.2f})" for q, c, s in r.aligned)
        if pairs:
            out.print(field(f"       aligned: {pairs}"))


def _csv_text(header, rows) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return buffer.getvalue()


def lake_enrich(
    lake: LakeArgument,
    table: TableOption,
    out_file: Annotated[
        Path,
        typer.Option("--out", metavar="FILE", help="Write the enriched table here (CSV)", show_default=False),
    ],
    report: Annotated[
        Path | None,
        typer.Option(
            "--report", metavar="FILE", help="Write the provenance report here (JSON)", show_default=False
        ),
    ] = None,
    k: KOption = 10,
) -> None:
    """Enrich FILE from LAKE: retrieve candidates, align columns and decide union/join/none, match
    rows and fill. Writes the enriched table and (with --report) where every added cell came from."""
    from tabverify.lake.enrich import enrich_table
    from tabverify.lake.store import Lake

    check_output(out_file, "--out", [table, lake])
    check_output(report, "--report", [table, lake])
    if report is not None and out_file.resolve() == report.resolve():
        fail("--report: name another file than --out")
    with input_errors():
        query = _load(table)
        with Lake.open(lake) as opened:
            enrichment = enrich_table(opened, query, k)
    enriched = enrichment.table
    write_output(out_file, _csv_text(enriched.header, [[c.text for c in r] for r in enriched.rows]), "--out")
    if report is not None:
        record = {"lake": str(lake), "table": str(table), "out": str(out_file), **enrichment.report()}
        write_output(report, json.dumps(record, ensure_ascii=False, indent=1), "--report")
    sources = sorted({c.source for c in enrichment.provenance})
    out.print(
        text(
            f"{out_file}: +{enrichment.added_rows} rows, +{enrichment.added_columns} columns, "
            f"{len(enrichment.provenance)} cells added from {len(sources)} tables"
        )
    )
    for r in enrichment.decisions:
        if r.operation != "none":
            out.print(
                Text.assemble((f"  {r.operation:<5}  ", ""), field(r.id, "bold"), "  ", field(r.reason))
            )
    if not enrichment.provenance:
        out.print("nothing found to add")
        raise typer.Exit(EXIT_FINDINGS)
    raise typer.Exit(EXIT_OK)


def lake_make_dlte(
    tables: Annotated[
        Path,
        typer.Argument(
            metavar="TABLES",
            help="A folder of tables (TabFact .html.csv, .csv, .tsv, .json)",
            show_default=False,
        ),
    ],
    out_dir: Annotated[
        Path, typer.Option("--out", metavar="DIR", help="The benchmark folder to write", show_default=False)
    ],
    seed: Annotated[int, typer.Option("--seed", metavar="N", help="The random seed")] = 0,
    mothers: Annotated[
        int, typer.Option("--mothers", metavar="N", min=2, help="How many mother tables to carve")
    ] = 1000,
    tiers: Annotated[str, typer.Option("--tiers", metavar="LIST", help="Noise tiers to build")] = "0,1,2,3",
    dev_share: Annotated[
        float, typer.Option("--dev-share", metavar="X", help="Share of the mothers in the dev split")
    ] = 0.5,
) -> None:
    """Build a DLTE benchmark (TRL-Bench's data-lake table enrichment) from a folder of tables: carve
    mother tables into a seed query, a union target and a join target, at noise tiers 0-3."""
    from tabverify.lake.dlte import make_dlte

    if not tables.is_dir():
        fail(f"{tables}: not a folder of tables")
    if not out_dir.parent.is_dir():
        fail(f"--out {out_dir}: the folder {out_dir.parent} does not exist; create it first")
    if out_dir.exists() and not out_dir.is_dir():
        fail(f"--out {out_dir}: not a folder")
    target, source = out_dir.resolve(), tables.resolve()
    if target == source or source in target.parents or target in source.parents:
        fail(f"--out {out_dir}: must lie outside TABLES ({tables}) and not contain it")
    try:
        tier_list = tuple(int(t) for t in tiers.split(","))
    except ValueError:
        fail(f"--tiers {tiers!r}: give tier numbers 0-3 separated by commas, e.g. 0,1")
    with input_errors(), progress() as report:
        summary = make_dlte(
            tables,
            out_dir,
            seed=seed,
            tiers=tier_list,
            dev_share=dev_share,
            max_mothers=mothers,
            progress=report,
        )
    out.print(
        text(
            f"{out_dir}: {summary['n_mothers']} mothers ({summary['n_dev_mothers']} dev, "
            f"{summary['n_test_mothers']} test), {summary['n_queries']} queries, {summary['n_targets']} targets, "
            f"{summary['n_distractors']} distractors (in {tables})"
        )
    )


def register(app: typer.Typer) -> None:
    """Add related, enrich and make-dlte to the ``lake`` group (which :mod:`tabverify.cli.lake`
    adds to the app; this module registers after it)."""
    lake_app.command("related", epilog=ENRICH_EXAMPLES)(lake_related)
    lake_app.command("enrich", epilog=ENRICH_EXAMPLES)(lake_enrich)
    lake_app.command("make-dlte", epilog=ENRICH_EXAMPLES)(lake_make_dlte)
