"""The ``coref`` commands: score a coreference response against a key (mentions may sit inside words)."""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table as RichTable

from tabverify.cli.output import check_output, fail, input_errors, out, text, warn, write_output

coref_app = typer.Typer(
    help="Score coreference, also with mentions inside words (Hebrew).",
    no_args_is_help=True,
    rich_markup_mode=None,
)


def parse_weights(items: list[str]) -> dict[str, float]:
    """``KIND=W`` options as a dict; a weight must be a finite number >= 0."""
    weights: dict[str, float] = {}
    for item in items:
        kind, _, value = item.partition("=")
        try:
            number = float(value)
        except ValueError:
            fail(f"--weight {item!r}: write KIND=NUMBER, e.g. embedded_pronoun=3")
        if not kind.strip() or not math.isfinite(number) or number < 0:
            fail(
                f"--weight {item!r}: the weight must be a finite number >= 0 after a kind, e.g. embedded_pronoun=3"
            )
        weights[kind.strip()] = number
    return weights


class _StderrWarnings(logging.Handler):
    """The library's warnings (e.g. a duplicate mention) as one-line ``warning:`` messages."""

    def emit(self, record: logging.LogRecord) -> None:
        warn(record.getMessage())


def score(
    key: Annotated[
        Path,
        typer.Argument(metavar="KEY", help="Gold documents: a file or a folder of files", show_default=False),
    ],
    response: Annotated[
        Path,
        typer.Argument(
            metavar="RESPONSE",
            help="System documents, paired with the key's by document id",
            show_default=False,
        ),
    ],
    fmt: Annotated[
        str,
        typer.Option(
            "--format", metavar="FORMAT", help="conll, conllu, json, kibutzr or auto (by name and content)"
        ),
    ] = "auto",
    raw: Annotated[
        Path | None,
        typer.Option(metavar="FOLDER", help="KibutzR: folder of raw texts (<n>.txt) to align morphemes onto"),
    ] = None,
    match: Annotated[
        str, typer.Option(metavar="MODE", help="Mention matching: exact, partial, head or overlap")
    ] = "exact",
    threshold: Annotated[
        float | None,
        typer.Option(
            metavar="SHARE",
            help="overlap: share of the shorter mention the overlap must cover [default: 0.8]",
        ),
    ] = None,
    keep_singletons: Annotated[
        bool,
        typer.Option("--keep-singletons/--drop-singletons", help="Score one-mention entities or remove them"),
    ] = True,
    keep_zeros: Annotated[
        bool, typer.Option("--keep-zeros/--drop-zeros", help="CoNLL-U: keep mentions headed by empty nodes")
    ] = True,
    zero_match: Annotated[
        str, typer.Option(metavar="MODE", help="Zeros: linear (by position) or dependent (by DEPS)")
    ] = "linear",
    blanc_variant: Annotated[
        str, typer.Option("--blanc", metavar="VARIANT", help="BLANC edge cases: conll or corefud")
    ] = "conll",
    weight: Annotated[
        list[str] | None,
        typer.Option(
            metavar="KIND=W",
            help="Weight key mentions of a kind in an extra 'weighted' mention view, e.g. embedded_pronoun=3 "
            "(repeatable; the metrics never use it)",
            show_default=False,
        ),
    ] = None,
    html: Annotated[
        Path | None, typer.Option(metavar="FILE", help="Write an HTML alignment view here")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the scores as JSON")] = False,
) -> None:
    """Score a coreference response against a key: MUC, B3, CEAF-m, CEAF-e, BLANC, LEA and CoNLL-F1,
    micro-averaged over documents, with mention detection views. Exit 0, or 2 on bad input."""
    from tabverify.coref import read_documents
    from tabverify.coref import score as run_score

    library_log = logging.getLogger("tabverify")
    if not any(isinstance(h, _StderrWarnings) for h in library_log.handlers):
        library_log.addHandler(_StderrWarnings(logging.WARNING))
    kind_weights = parse_weights(weight or [])
    check_output(html, "--html", [key, response, raw])
    if raw is not None:
        if fmt not in ("auto", "kibutzr"):
            fail(f"--raw applies to KibutzR morpheme files, not --format {fmt}")
        if not raw.is_dir():
            fail(f"--raw {raw}: not a folder; name the folder of raw texts (<n>.txt)")
    if threshold is None:
        threshold = 0.8
    elif match != "overlap":
        fail(f"--threshold applies to --match overlap only (this run matches {match})")
    with input_errors():
        key_docs, response_docs = read_documents(key, fmt, raw), read_documents(response, fmt, raw)
        for docs, path in ((key_docs, key), (response_docs, response)):
            if not docs:
                fail(f"{path}: holds no documents; check the file and --format")
        result = run_score(
            key_docs, response_docs, match=match, threshold=threshold, keep_singletons=keep_singletons,
            keep_zeros=keep_zeros, zero_match=zero_match, blanc_variant=blanc_variant,
            kind_weights=kind_weights or None,
        )  # fmt: skip
    if html is not None:
        from tabverify.coref.html import render_alignment

        write_output(html, render_alignment(result), "--html")
    if as_json:
        print(json.dumps(result.to_dict(), ensure_ascii=False, indent=2, allow_nan=False))
        return
    view = RichTable("metric", "recall", "precision", "F1")
    for name, metric in result.metrics.items():
        view.add_row(name, f"{metric.recall:.4f}", f"{metric.precision:.4f}", f"{metric.f1:.4f}")
    view.add_row("conll_f1", "", "", f"{result.conll_f1:.4f}", style="bold")
    out.print(view)
    mentions = RichTable("mentions", "recall", "precision", "F1")
    for name, metric in result.mentions.items():
        mentions.add_row(text(name), f"{metric.recall:.4f}", f"{metric.precision:.4f}", f"{metric.f1:.4f}")
    out.print(mentions)
    options = ", ".join(f"{k}={v}" for k, v in result.options.items() if v is not None)
    out.print(text(f"{result.documents} document(s); {options}"))
    if html is not None:
        out.print(text(f"wrote {html}"))


SCORE_EXAMPLES = """Examples:

\b
  tabverify coref score key.conll response.conll
  tabverify coref score gold.conllu system.conllu --match head --drop-singletons
  tabverify coref score gold.jsonl system.jsonl --match overlap --threshold 0.8 --html view.html --json
  tabverify coref score kibutzr/dev/ system/dev/ --raw raw_documents/dev --match overlap
"""


def register(app: typer.Typer) -> None:
    """Add the ``coref`` commands to the app."""
    coref_app.command("score", epilog=SCORE_EXAMPLES)(score)
    app.add_typer(coref_app, name="coref")
