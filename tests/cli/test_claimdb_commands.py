"""The ClaimDB commands as a user runs them, in a real process: ``check --db`` without ``--table``
(offline, and against the stand-in model server over real HTTP), ``bench claimdb`` schema-only and
full, ``train nei``, ``claimdb sample`` and ``claimdb build``; then hostile input. Every failure is
exit 2 with one line on stderr and no traceback; a malformed claims line is reported with its number
and skipped; inputs are never written; the API key reaches the server and nothing else."""

from __future__ import annotations

import hashlib
import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tabverify.bench.claimdb import load_inputs
from tabverify.claimdb.nei import NeiDetector
from tabverify.claimdb.sample import SamplePaths, build_sample
from tabverify.claimdb.schema import load_schemas
from tabverify.errors import DatasetError
from tests.claimdb.conftest import CLAIMDB_SCHEMA, needs_claimdb_schema, sample_records
from tests.claimdb.sample_model import DiesAfter, SampleModel, hanging
from tests.cli.conftest import run
from tests.llm_server import LlmServer, text

pytestmark = pytest.mark.data

KEY = "sk-test-claimdb-SECRET-7319"
KEY_ENV = "TABVERIFY_TEST_CLAIMDB_KEY"
HASHING = ("--encoder", "hashing")  # the MiniLM load (seconds) only where a test is about it
NO_RETRY = ("--llm-retries", "0")


def tv(
    *args: str, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """``tabverify ARGS`` in a new process, with the test API key in ``KEY_ENV`` and no model server
    configured through the environment."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("TABVERIFY_LLM")}
    environment.pop("TABVERIFY_DEBUG", None)
    environment[KEY_ENV] = KEY
    environment.update(env or {})
    return run(*args, timeout=timeout, env=environment)


PROGRESS = re.compile(r"^[a-z][a-z -]*: \d+/\d+$")
"""A progress line (stderr off a terminal: one per tenth of a stage), not part of an error."""


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    """The one ``error:`` line of a run that exited 2 (progress lines before it aside)."""
    assert result.returncode == 2, (result.returncode, result.stdout[-2000:], result.stderr[-2000:])
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    lines = [line for line in result.stderr.strip().splitlines() if not PROGRESS.match(line)]
    assert len(lines) == 1 and lines[0].startswith("error:"), result.stderr
    return lines[0]


def no_secret(*texts: str) -> None:
    for value in texts:
        assert KEY not in value


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def generator(request: dict[str, Any]) -> dict[str, Any]:
    """A claim generator for ``claimdb build``: claims made from the pair's question id."""
    prompt = request["messages"][-1]["content"]
    question = re.search(r"Question: (.*)", prompt).group(1)[:60]  # type: ignore[union-attr]
    if "ENTAILS" in prompt:
        return text(json.dumps({"claims": [f"It holds that {question}"]}))
    if "CONTRADICTS" in prompt:
        return text(json.dumps({"claims": [f"It does not hold that {question}"]}))
    return text(json.dumps({"claims": [
        {"category": "OUT-OF-SCHEMA", "claim": f"The weather explains why {question}"},
        {"category": "COUNTERFACTUAL", "claim": f"If it had rained, then {question}"},
        {"category": "SUBJECTIVE", "claim": f"Fans loved that {question}"},
    ]}))  # fmt: skip


def judge(request: dict[str, Any]) -> dict[str, Any]:
    """A judge that says yes to every question of its rubric."""
    keys = re.findall(r"^- (\w+): ", request["messages"][-1]["content"], re.M)
    return text(json.dumps(dict.fromkeys(keys, "yes")))


@pytest.fixture(scope="module")
def claimdb_sample(tmp_path_factory: pytest.TempPathFactory) -> SamplePaths:
    """The formula_1 sample (as tests/claimdb/conftest.py builds it; read-only here)."""
    needs_claimdb_schema()
    return build_sample(tmp_path_factory.mktemp("claimdb_sample"), schema_dir=CLAIMDB_SCHEMA, seed=7)


@pytest.fixture(scope="module")
def records(claimdb_sample: SamplePaths) -> list[dict[str, Any]]:
    return sample_records(claimdb_sample.claims_path)


@pytest.fixture(scope="module")
def server(records: list[dict[str, Any]]) -> Iterator[LlmServer]:
    models = {
        "sample": SampleModel(records),
        "hang": hanging(5.0),
        "dies": DiesAfter(SampleModel(records), 3),
        "gen": generator,
        "judge": judge,
    }
    with LlmServer(models, api_key=KEY) as started:  # type: ignore[arg-type]
        yield started


def llm(server: LlmServer, model: str = "sample") -> tuple[str, ...]:
    return ("--llm-base-url", server.url, "--model", model, "--api-key-env", KEY_ENV, *NO_RETRY)


def claim_of(records: list[dict[str, Any]], claim_id: int) -> str:
    return next(str(r["claim"]) for r in records if r["claim_id"] == claim_id)


# ---- check --db without --table: offline -----------------------------------------------------------


def test_check_offline_exit_codes(claimdb_sample: SamplePaths) -> None:
    db = str(claimdb_sample.db_path)
    before = digest(claimdb_sample.db_path)
    # the default encoder (MiniLM, the neural extra) on three NOT ENOUGH INFO claims and a refuted one
    claims = [
        "If Michael Schumacher had not retired in 2012, he would have won the title.",
        "Monaco is the most beautiful and glamorous circuit on the calendar.",
        "The catering at the 2012 Hungarian Grand Prix was supplied by a bakery.",
        "The circuits table lists 19 circuits.",
    ]
    found = tv("check", "--db", db, *claims)
    assert found.returncode == 1 and found.stderr == "", found.stderr
    heads = [line for line in found.stdout.splitlines() if not line.startswith("  ")]
    assert [h.split(" (")[0] for h in heads] == ["NOT ENOUGH INFO"] * 3 + ["REFUTED"]
    assert [h.split(") (")[0] for h in heads[:3]] == [
        "NOT ENOUGH INFO (counterfactual", "NOT ENOUGH INFO (subjective", "NOT ENOUGH INFO (out-of-schema"
    ]  # fmt: skip
    assert all(h.endswith(c) for h, c in zip(heads, claims, strict=True))
    assert "a what-if: 'If Michael Schumacher had not retired in 2012' describes" in found.stdout
    assert "no counterpart in the schema for" in found.stdout and "'catering'" in found.stdout
    assert found.stdout.count("source: offline: NOT ENOUGH INFO detector (schema only)") == 3
    # one table named, every word its own: the single-table program search decides
    entailed = tv("check", "--db", db, "The circuits table lists 14 circuits.", *HASHING)
    assert entailed.returncode == 0 and entailed.stdout.startswith("ENTAILED (") and entailed.stderr == ""
    assert "program: eq{count{all_rows}; 14} = True" in entailed.stdout
    # several tables: undecided, exit 2 with one line saying what would decide it
    wins = "Lewis Hamilton won 9 Grands Prix across the 2010-2013 seasons."  # names "seasons", needs results
    undecided = tv("check", "--db", db, wins, *HASHING)
    line = one_line_error(undecided)
    assert line.startswith(
        "error: 1 of 1 claim left without a verdict: ENTAILED or CONTRADICTED over several tables"
    )
    assert undecided.stdout.startswith(f"UNDECIDED  {wins}")
    both = tv("check", "--db", db, "The circuits table lists 14 circuits.", wins, "--json", *HASHING)
    assert one_line_error(both).startswith("error: 1 of 2 claims left without a verdict")
    payload = json.loads(both.stdout)
    assert payload["verifier"] == "offline"
    assert [v["label"] for v in payload["verdicts"]] == ["ENTAILED", None]
    assert payload["verdicts"][1]["nei_check"]["nei"] is False
    assert digest(claimdb_sample.db_path) == before


def test_check_with_a_model_over_http(
    claimdb_sample: SamplePaths, records: list[dict[str, Any]], server: LlmServer, tmp_path: Path
) -> None:
    db = str(claimdb_sample.db_path)
    trace = tmp_path / "check.trace.jsonl"
    entailed = claim_of(records, 7)  # "Exactly 4 drivers retired from the 2012 Chinese Grand Prix."
    first = len(server.requests)
    ok = tv("check", "--db", db, entailed, "--trace", str(trace), *llm(server), *HASHING)
    assert ok.returncode == 0 and ok.stderr == "", ok.stderr
    assert ok.stdout.startswith(f"ENTAILED (80%)  {entailed}")
    sql = next(str(r["sql"]) for r in records if r["claim_id"] == 7)
    assert f"sql: {sql}" in ok.stdout and "source: llm:sample" in ok.stdout
    contradicted = claim_of(records, 8)
    nei = claim_of(records, 29)
    mixed = tv(
        "check", "--db", db, contradicted, nei, "--trace", str(trace), "--json", *llm(server), *HASHING
    )
    assert mixed.returncode == 1, mixed.stderr
    verdicts = json.loads(mixed.stdout)["verdicts"]
    assert [(v["label"], v["subtype"]) for v in verdicts] == [
        ("REFUTED", None),
        ("NOT ENOUGH INFO", "counterfactual"),
    ]
    assert json.loads(mixed.stdout)["verifier"] == "llm"
    # the key travelled in the Authorization header, and only there
    chats = [r for r in server.requests[first:] if r.path.endswith("/chat/completions")]
    assert len(chats) == 5 and all(r.headers["authorization"] == f"Bearer {KEY}" for r in chats)
    records_written = [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines()]
    assert [r["claim"] for r in records_written] == [entailed, contradicted, nei]  # appended, claim by claim
    assert records_written[0]["queries"][0]["sql"] == sql and records_written[0]["nei_check"]["nei"] is False
    no_secret(ok.stdout, ok.stderr, mixed.stdout, mixed.stderr, trace.read_text(encoding="utf-8"))
    # a wrong key: one line naming the variable, never the key
    refused = tv("check", "--db", db, entailed, *llm(server), *HASHING, env={KEY_ENV: "sk-wrong-key-0000"})
    line = one_line_error(refused)
    assert "401" in line and KEY_ENV in line and "sk-wrong-key-0000" not in line + refused.stdout
    # the llm verifier without a model
    alone = tv("check", "--db", db, entailed, "--verifier", "llm", *HASHING)
    assert "no model configured" in one_line_error(alone)
    # the server named by the environment, as the help says
    by_env = tv("check", "--db", db, entailed, "--api-key-env", KEY_ENV, *NO_RETRY, *HASHING,
                env={"TABVERIFY_LLM_BASE_URL": server.url, "TABVERIFY_LLM_MODEL": "sample"})  # fmt: skip
    assert by_env.returncode == 0 and "source: llm:sample" in by_env.stdout


# ---- bench claimdb -------------------------------------------------------------------------------


def test_bench_schema_only(claimdb_sample: SamplePaths, tmp_path: Path) -> None:
    out = tmp_path / "nei.json"
    result = tv("bench", "claimdb", "--claims", str(claimdb_sample.claims_path), "--schema",
                str(claimdb_sample.schema_dir), "--schema-only", "--out", str(out), *HASHING)  # fmt: skip
    assert result.returncode == 0, result.stderr
    shown = json.loads(result.stdout)
    written = json.loads(out.read_text(encoding="utf-8"))
    assert shown["mode"] == written["mode"] == "schema-only" and "predictions" not in shown
    assert len(written["predictions"]) == written["n"] == 36
    assert written["metrics"] == shown["metrics"] and shown["metrics"]["nei_precision"] == 1.0
    assert "Traceback" not in result.stderr and "nei: 36/36" in result.stderr
    # --dbs without a model: the same, with a warning saying so
    quiet = tv("bench", "claimdb", "--claims", str(claimdb_sample.claims_path), "--schema",
               str(claimdb_sample.schema_dir), "--dbs", str(claimdb_sample.root), "--limit", "3", *HASHING)  # fmt: skip
    assert quiet.returncode == 0 and json.loads(quiet.stdout)["n"] == 3
    assert "warning: no model configured: running NOT ENOUGH INFO detection only" in quiet.stderr


def test_bench_full(claimdb_sample: SamplePaths, server: LlmServer, tmp_path: Path) -> None:
    out = tmp_path / "full.json"
    args = ("bench", "claimdb", "--claims", str(claimdb_sample.claims_path), "--schema", str(claimdb_sample.schema_dir),
            "--dbs", str(claimdb_sample.root), "--out", str(out), "--jobs", "2", *llm(server), *HASHING)  # fmt: skip
    result = tv(*args)
    assert result.returncode == 0, result.stderr
    document = json.loads(out.read_text(encoding="utf-8"))
    metrics = document["metrics"]
    assert document["mode"] == "full" and document["n"] == 36 and metrics["accuracy"] == 1.0
    assert metrics["macro_f1"] == 1.0 and metrics["failed_claims"] == 0
    assert metrics["tool_calls"]["histogram"] == {"0": 12, "1": 24}
    trace = tmp_path / "full.trace.jsonl"
    assert document["trace"] == str(trace)
    lines = trace.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 36 and all(json.loads(line)["status"] == "ok" for line in lines)
    assert metrics["tokens"]["claims"] == 36 and metrics["tokens"]["llm_calls_mean"] == round(60 / 36, 2)
    no_secret(
        result.stdout, result.stderr, out.read_text(encoding="utf-8"), trace.read_text(encoding="utf-8")
    )
    # a second run writes the trace anew: its token statistics are this run's, not both runs'
    again = tv(*args, "--limit", "4")
    assert again.returncode == 0, again.stderr
    assert len(trace.read_text(encoding="utf-8").splitlines()) == 4
    assert json.loads(out.read_text(encoding="utf-8"))["metrics"]["tokens"]["claims"] == 4


# ---- train nei, claimdb sample, claimdb build ------------------------------------------------------


def test_train_nei(claimdb_sample: SamplePaths, tmp_path: Path) -> None:
    out = tmp_path / "models"
    result = tv("train", "nei", "--claims", str(claimdb_sample.claims_path), "--schema",
                str(claimdb_sample.schema_dir), "--out", str(out), *HASHING)  # fmt: skip
    assert result.returncode == 0, result.stderr
    model = out / "nei_hashing.npz"
    assert f"wrote {model} (36 claims, encoder hashing)" in result.stdout
    detector = NeiDetector("hashing", model_path=model)
    schema = load_schemas(claimdb_sample.schema_dir).get("formula_1")
    checks = detector.check_many(
        [("If Red Bull had hired Kimi Raikkonen, Red Bull would have won the 2010 title.", "", schema),
         ("Lewis Hamilton won 9 Grands Prix across the 2010-2013 seasons.", "", schema)]
    )  # fmt: skip
    assert checks[0].nei and not checks[1].nei
    assert not np.array_equal(detector.model.claim_w, NeiDetector("hashing").model.claim_w)
    # a bad encoder name and unlabelled claims are one-line errors; the model file is untouched
    before = digest(model)
    bogus = tv("train", "nei", "--claims", str(claimdb_sample.claims_path), "--schema",
               str(claimdb_sample.schema_dir), "--out", str(out), "--encoder", "bogus")  # fmt: skip
    assert "unknown encoder 'bogus'" in one_line_error(bogus)
    unlabelled = tmp_path / "unlabelled.jsonl"
    unlabelled.write_text('{"claim_id": 1, "db_name": "formula_1", "claim": "A claim."}\n', encoding="utf-8")
    nothing = tv("train", "nei", "--claims", str(unlabelled), "--schema", str(claimdb_sample.schema_dir),
                 "--out", str(out), *HASHING)  # fmt: skip
    assert "both kinds" in one_line_error(nothing) and digest(model) == before
    onto = tv("train", "nei", "--claims", str(claimdb_sample.claims_path), "--schema",
              str(claimdb_sample.schema_dir), "--out", str(claimdb_sample.claims_path), *HASHING)  # fmt: skip
    assert "is a file" in one_line_error(onto)


def test_claimdb_sample_command(claimdb_sample: SamplePaths, tmp_path: Path) -> None:
    result = tv("claimdb", "sample", str(tmp_path / "sample"), "--schema", str(CLAIMDB_SCHEMA))
    assert result.returncode == 0, result.stderr
    db = tmp_path / "sample" / "formula_1" / "formula_1.sqlite"
    assert f"database: {db}" in result.stdout
    assert (tmp_path / "sample" / "claims.jsonl").read_bytes() == claimdb_sample.claims_path.read_bytes()
    assert digest(db) == digest(claimdb_sample.db_path)  # the same seed, the same bytes
    bad = tv("claimdb", "sample", str(tmp_path / "other"), "--schema", str(tmp_path / "nowhere"))
    one_line_error(bad)
    assert not (tmp_path / "other" / "claims.jsonl").exists()


def test_claimdb_build(records: list[dict[str, Any]], claimdb_sample: SamplePaths, server: LlmServer,
                       tmp_path: Path) -> None:  # fmt: skip
    pairs = tmp_path / "pairs.jsonl"
    lines = [
        json.dumps({"question_id": f"q{r['claim_id']}", "question": r["claim"], "SQL": r["sql"],
                    "db_id": "formula_1", "evidence": r["extra_info"]})
        for r in records if r["sql"]
    ]  # fmt: skip
    lines += [
        json.dumps({"question_id": "plain", "question": "Circuit 1?", "SQL": "SELECT name FROM circuits WHERE "
                    "circuitId = 1", "db_id": "formula_1"}),
        json.dumps({"question_id": "many", "question": "Results per driver?", "SQL": "SELECT driverId, COUNT(*) "
                    "FROM results GROUP BY driverId", "db_id": "formula_1"}),
        json.dumps({"question_id": "broken", "question": "?", "SQL": "SELECT COUNT(*) FROM nowhere",
                    "db_id": "formula_1"}),
        "not json",
    ]  # fmt: skip
    pairs.write_text("\n".join(lines) + "\n", encoding="utf-8")
    before = digest(claimdb_sample.db_path)
    out = tmp_path / "built"
    result = tv(
        "claimdb", "build", str(pairs), "--dbs", str(claimdb_sample.root), "--out", str(out), "--json"
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["pairs"]["read"] == 27 and report["pairs"]["problem_count"] == 1
    assert report["prefilter"]["kept"] == 24
    assert report["prefilter"]["dropped_by_reason"] == {
        "no_composition": 1,
        "too_many_rows": 1,
        "sql_error": 1,
    }
    assert report["generation"] == {"skipped": "no generator model given"}
    kept = [json.loads(line) for line in (out / "prefilter.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(kept) == 27 and digest(claimdb_sample.db_path) == before
    # with a generator and a judge on the stand-in server (two pairs)
    model_out = tmp_path / "with-models"
    spec = f"@{server.url}"
    built = tv("claimdb", "build", str(pairs), "--dbs", str(claimdb_sample.root), "--out", str(model_out),
               "--generator", "gen" + spec, "--judge", "judge" + spec, "--api-key-env", KEY_ENV, "--limit", "2",
               "--entailed", "1", "--contradicted", "1", "--nei-fraction", "1", "--json")  # fmt: skip
    assert built.returncode == 0, built.stderr
    data = json.loads(built.stdout)
    assert data["generation"]["claims"] == 2 * (1 + 1 + 3) and data["judging"]["kept"] == 10
    claims = [
        json.loads(line) for line in (model_out / "claims.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    assert len(claims) == 10 and {c["label"] for c in claims} == {
        "ENTAILED",
        "CONTRADICTED",
        "NOT ENOUGH INFO",
    }
    no_secret(built.stdout, built.stderr, *(p.read_text(encoding="utf-8") for p in model_out.iterdir()))


# ---- hostile input ---------------------------------------------------------------------------------


def bench(claims: Path, schema: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return tv(
        "bench",
        "claimdb",
        "--claims",
        str(claims),
        "--schema",
        str(schema),
        "--schema-only",
        *HASHING,
        *extra,
    )


def test_malformed_claims_lines_are_reported_and_skipped(claimdb_sample: SamplePaths, tmp_path: Path) -> None:
    good = claimdb_sample.claims_path.read_text(encoding="utf-8").splitlines()
    path = tmp_path / "claims.jsonl"
    lines = [
        good[0],
        "{bad json",
        '{"claim_id": 99, "db_name": "formula_1"}',
        '{"claim_id": 98, "db_name": "formula_1", "claim": ["a", "list"]}',
        '{"claim_id": 97, "db_name": "formula_1", "claim": "fine", "label": "MAYBE"}',
        '{"claim_id": 96, "db_name": "formula_1", "claim": "fine", "extra_info": {"a": 1}}',
        json.dumps({"claim_id": 95, "db_name": "formula_1", "claim": "x" * 3_000_000}),
        "[1, 2, 3]",
        '{"claim_id": 94, "db_name": "formula_1", "claim": "A lone \\ud800 surrogate."}',
        '{"claim_id": "[bold]\\u001b[2Jx", "db_name": "no\\u001b[31mwhere", "claim": "Markup [red]stays[/red]."}',
        good[1],
        "",
        good[2],
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "out.json"
    result = bench(path, claimdb_sample.schema_dir, "--out", str(out))
    assert result.returncode == 0 and "Traceback" not in result.stderr
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert [int(re.search(r": line (\d+):", w).group(1)) for w in warnings] == [2, 3, 4, 5, 6, 7, 8, 9, 10]  # type: ignore[union-attr]
    assert all(w.endswith("(skipped)") for w in warnings)
    assert (
        "not valid JSON" in warnings[0]
        and 'no "claim"' in warnings[1]
        and '"claim" must be a string' in warnings[2]
    )
    assert "unknown label 'MAYBE'" in warnings[3] and "3,000,000 characters" in warnings[5]
    assert "not a JSON object" in warnings[6] and "lone surrogate" in warnings[7]
    assert "unknown db_id 'no\\x1b[31mwhere'" in warnings[8] and "\x1b" not in result.stderr
    assert len(result.stderr) < 5000  # the 3 MB line is not echoed
    document = json.loads(out.read_text(encoding="utf-8"))
    assert [p["id"] for p in document["predictions"]] == ["1", "2", "3"]
    assert len(document["skipped_lines"]) == 9


UNUSABLE_CLAIMS = [
    (b"", "no usable claims (0 lines skipped)"),
    (b"\n \n\t\n", "no usable claims (0 lines skipped)"),
    (
        '{"claim_id": 1, "db_name": "formula_1", "claim": "Caf\u00e9."}\n'.encode("utf-16"),
        "looks like UTF-16",
    ),
    (b'{"claim_id": 1, "db_name": "formula_1", "claim": "ok"}\n\xff\xfe\x00\x80garbage\n', "not valid UTF-8"),
    (b"\x89PNG\r\n\x1a\n" + bytes(range(256)), "not valid UTF-8"),
    (b'{"claim_id": 1, "db_name": "nowhere", "claim": "A claim."}\n', "unknown db_id 'nowhere'"),
]


def test_unusable_claims_files_are_one_line_errors(claimdb_sample: SamplePaths, tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    for number, (content, needle) in enumerate(UNUSABLE_CLAIMS):
        path = tmp_path / f"claims-{number}.jsonl"
        path.write_bytes(content)
        # each one through the library (the message) and the first three through the command line
        with pytest.raises(DatasetError) as caught:
            load_inputs(path, claimdb_sample.schema_dir)
        assert needle in str(caught.value) and "\n" not in str(caught.value), content[:40]
        if number in (0, 2, 3):
            line = one_line_error(bench(path, claimdb_sample.schema_dir, "--out", str(out)))
            assert needle in line and not out.exists()


SCHEMA_LAYOUTS = [
    (None, "no dev_tables.json or tables.json"),
    ('{"db_id": "formula_1"}', "expected a JSON list of databases"),
    ('[{"db_id": "formula_1", "table_names_original": "races", "column_names_original": 5}]',
     "not in the Spider/BIRD layout"),
    ('[{"db_id": "formula_1", "table_names_original": ["a"], "column_names_original": [["zero", "x"]]}]',
     "not in the Spider/BIRD layout"),
    ('[{"db_id": "formula_1", "table_names_original": ["a"], "column_names_original": [[0, "x"]], '
     '"foreign_keys": [[0, 1e400]]}]', "not in the Spider/BIRD layout (OverflowError"),
    ('[{"db_id": "formula_1", "table_names_original": ["a"], "column_names_original": [[0, "x"]], '
     '"primary_keys": [[["x"]]]}]', "not in the Spider/BIRD layout"),
    ("[" * 50_000 + "]" * 50_000, "nested deeper than"),
    ("[5, 6]", "not in the Spider/BIRD layout"),
    ("not json", "not valid JSON"),
]  # fmt: skip


def test_schema_folders_in_the_wrong_layout(claimdb_sample: SamplePaths, tmp_path: Path) -> None:
    for number, (content, needle) in enumerate(SCHEMA_LAYOUTS):
        folder = tmp_path / f"schema-{number}"
        folder.mkdir()
        if content is not None:
            (folder / "dev_tables.json").write_text(content, encoding="utf-8")
        with pytest.raises(DatasetError) as caught:
            load_inputs(claimdb_sample.claims_path, folder)
        assert needle in str(caught.value) and "\n" not in str(caught.value), content
        if number in (0, 2, 4, 6):
            line = one_line_error(bench(claimdb_sample.claims_path, folder))
            assert needle in line and len(line) < 1000
    assert "no such schema folder" in one_line_error(bench(claimdb_sample.claims_path, tmp_path / "nowhere"))
    # a description file that is not a CSV: the schema still loads (without that table's descriptions)
    folder = tmp_path / "described"
    (folder / "database_description" / "formula_1").mkdir(parents=True)
    (folder / "dev_tables.json").write_bytes((claimdb_sample.schema_dir / "dev_tables.json").read_bytes())
    (folder / "database_description" / "formula_1" / "races.csv").write_bytes(b"\xff\xfe\x00\x01binary")
    try:
        schema = load_schemas(folder).get("formula_1")
    except DatasetError as exc:
        assert "\n" not in str(exc) and "races.csv" in str(exc)
    else:
        assert {t.name for t in schema.tables} >= {"races", "drivers"}


def test_bad_options_are_one_line_errors(claimdb_sample: SamplePaths) -> None:
    claims, schema = str(claimdb_sample.claims_path), str(claimdb_sample.schema_dir)
    for extra, needle in [
        (("--cv", "2"), "grouped by database and the claims come from 1 database"),
        (("--encoder", "lexical"), "ships models for auto, minilm, hashing"),
        (("--jobs", "0"), "give 1 to 64"),
    ]:
        result = tv("bench", "claimdb", "--claims", claims, "--schema", schema, "--schema-only", *extra)
        assert needle in one_line_error(result), extra


def test_full_mode_input_errors(claimdb_sample: SamplePaths, server: LlmServer, tmp_path: Path) -> None:
    claims, schema = str(claimdb_sample.claims_path), str(claimdb_sample.schema_dir)
    common = ("bench", "claimdb", "--claims", claims, "--schema", schema, *HASHING)
    # --dbs without the database: refused before any model request
    asked = len(server.requests)
    empty = tmp_path / "dbs"
    empty.mkdir()
    line = one_line_error(tv(*common, "--dbs", str(empty), *llm(server)))
    assert "no formula_1/formula_1.sqlite; the BIRD layout is" in line and len(server.requests) == asked
    dbs = ("--dbs", str(claimdb_sample.root))
    # outputs that must not be written
    before = digest(claimdb_sample.db_path), digest(claimdb_sample.claims_path)
    assert "does not exist; create it first" in one_line_error(
        tv(*common, *dbs, *llm(server), "--out", str(tmp_path / "missing" / "out.json"))
    )
    for option, target in (
        ("--out", claimdb_sample.db_path),
        ("--trace", claimdb_sample.claims_path),
        ("--out", claimdb_sample.schema_dir / "dev_tables.json"),
    ):
        line = one_line_error(tv(*common, *dbs, *llm(server), option, str(target)))
        assert line.startswith(f"error: {option} {target}: is ") and "an input" in line, line
    same = str(tmp_path / "same.json")
    assert "is the --out file" in one_line_error(
        tv(*common, *dbs, *llm(server), "--out", same, "--trace", same)
    )
    assert (digest(claimdb_sample.db_path), digest(claimdb_sample.claims_path)) == before
    assert len(server.requests) == asked
    # check --db: the trace may not be the database
    check = tv("check", "--db", str(claimdb_sample.db_path), "A claim.", "--trace", str(claimdb_sample.db_path),
               *llm(server), *HASHING)  # fmt: skip
    assert "is an input" in one_line_error(check) and digest(claimdb_sample.db_path) == before[0]


def test_model_servers_that_fail(claimdb_sample: SamplePaths, records: list[dict[str, Any]], server: LlmServer,
                                 tmp_path: Path) -> None:  # fmt: skip
    db = str(claimdb_sample.db_path)
    claim = claim_of(records, 7)
    port = closed_port()
    unreachable = ("--llm-base-url", f"http://127.0.0.1:{port}/v1", "--model", "m", *NO_RETRY)
    assert "cannot reach the model server" in one_line_error(
        tv("check", "--db", db, claim, *unreachable, *HASHING)
    )
    full = ("bench", "claimdb", "--claims", str(claimdb_sample.claims_path), "--schema", str(claimdb_sample.schema_dir),
            "--dbs", str(claimdb_sample.root), *HASHING)  # fmt: skip
    out = tmp_path / "out.json"
    out.write_text("an earlier result", encoding="utf-8")
    assert "cannot reach the model server" in one_line_error(tv(*full, *unreachable, "--out", str(out)))
    assert out.read_text(encoding="utf-8") == "an earlier result"  # a failed run does not overwrite it
    # a model the server does not serve: one line listing those it does
    unknown = one_line_error(tv("check", "--db", db, claim, *llm(server, "gpt-17"), *HASHING))
    assert "model 'gpt-17' is not on the server" in unknown and "sample" in unknown
    # a server that hangs: the claim gets no verdict, exit 2 with the reason on one line
    hung = tv("check", "--db", db, claim, *llm(server, "hang"), "--llm-timeout", "0.5", *HASHING)
    line = one_line_error(hung)
    assert "no reply within 0.5 s" in line and hung.stdout.startswith(f"NO VERDICT  {claim}")
    slow = tv(*full, *llm(server, "hang"), "--llm-timeout", "0.3", "--limit", "6", "--out", str(out))
    assert "failed on 5 claims in a row" in one_line_error(slow)
    # a server that dies after three claims: one line, and the trace keeps the claims already done
    died = tv(*full, *llm(server, "dies"), "--out", str(out))
    assert "failed on 5 claims in a row" in one_line_error(died) and "503" in died.stderr
    trace = tmp_path / "out.trace.jsonl"
    done = [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines()]
    assert [r["status"] for r in done[:3]] == ["ok"] * 3 and len(done) >= 8
    assert [r["claim_id"] for r in done[:3]] == ["1", "2", "3"]
    assert out.read_text(encoding="utf-8") == "an earlier result"


def test_claims_text_is_printed_literally(claimdb_sample: SamplePaths) -> None:
    db = str(claimdb_sample.db_path)
    claim = "[bold red]Kimi Räikkönen[/] is the \x1b[31mcoolest\x1b[0m driver, widely loved by fans :smile:"
    result = tv("check", "--db", db, claim, *HASHING)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    first = result.stdout.splitlines()[0]
    assert first.endswith(
        "[bold red]Kimi Räikkönen[/] is the \\x1b[31mcoolest\\x1b[0m driver, widely loved by fans :smile:"
    )
    assert "\x1b" not in result.stdout + result.stderr
    as_json = json.loads(tv("check", "--db", db, claim, "--json", *HASHING).stdout)
    assert as_json["verdicts"][0]["statement"] == claim  # JSON keeps the text exactly
    for bad, needle in [
        ("", "claim 1 is empty"),
        ("x" * 20_001, "20,001 characters"),
    ]:
        assert needle in one_line_error(tv("check", "--db", db, bad, *HASHING))
    undecodable = subprocess.run(
        [sys.executable, "-m", "tabverify.cli", "check", "--db", db.encode(), b"Lewis \xff won", *HASHING],  # type: ignore[list-item]
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert "not valid UTF-8" in one_line_error(undecodable)
