"""The ClaimDB benchmark (tabverify.bench.claimdb): the metrics on hand-made predictions, the
schema-only run on the sample claims, and the FULL run end to end on the sample database: a good
model on the stand-in server (tests/claimdb/sample_model.py) runs each claim's reference SQL through
the real agent and the real safe query layer and answers the verdict, so the whole
claim -> queries -> verdict path, the statistics and the trace are exercised over real HTTP."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tabverify.bench.claimdb import (
    database_paths,
    load_inputs,
    nei_metrics,
    run_full,
    run_schema_only,
    summary,
    token_statistics,
    verdict_metrics,
)
from tabverify.claimdb.agent import LlmVerifier
from tabverify.claimdb.claims import Claim, read_claims
from tabverify.claimdb.sample import SamplePaths
from tabverify.claimdb.trace import TRACE_FIELDS, TraceWriter, read_trace
from tabverify.errors import DatasetError, LlmError
from tabverify.llm import ChatClient, LlmConfig
from tabverify.verify.verdict import Label
from tests.claimdb.sample_model import DiesAfter, SampleModel
from tests.llm_server import LlmServer

NEI = "NOT ENOUGH INFO"


def prediction(label: str | None, predicted: str | None, subtype: str | None = None,
               predicted_subtype: str | None = None) -> dict[str, Any]:  # fmt: skip
    return {
        "label": label,
        "predicted": predicted,
        "subtype": subtype,
        "predicted_subtype": predicted_subtype,
    }


# ---- metrics on hand-made predictions -------------------------------------------------------------


def test_nei_metrics_by_hand() -> None:
    other = "SUPPORTED_OR_CONTRADICTED"
    predictions = [
        # gold NEI, predicted NEI: 3 (subtype right for 2 of them)
        prediction(NEI, NEI, "OUT-OF-SCHEMA", "OUT-OF-SCHEMA"),
        prediction(NEI, NEI, "COUNTERFACTUAL", "COUNTERFACTUAL"),
        prediction(NEI, NEI, "SUBJECTIVE", "OUT-OF-SCHEMA"),
        # gold NEI, missed: 1
        prediction(NEI, other, "SUBJECTIVE", None),
        # gold E/C, predicted NEI: 1 (a false positive: its subtype is not scored)
        prediction("ENTAILED", NEI, None, "SUBJECTIVE"),
        # gold E/C, not NEI: 3
        prediction("ENTAILED", other),
        prediction("CONTRADICTED", other),
        prediction("CONTRADICTED", other),
        # unlabelled: predicted, never scored
        prediction(None, NEI, None, "COUNTERFACTUAL"),
        prediction(None, other),
    ]
    m = nei_metrics(predictions)
    assert m["n_scored"] == 8
    assert m["nei_precision"] == 0.75 and m["nei_recall"] == 0.75 and m["nei_f1"] == 0.75
    assert m["subtype_n"] == 3 and m["subtype_accuracy"] == round(2 / 3, 4)
    assert m["per_subtype"] == {
        "OUT-OF-SCHEMA": {"n": 1, "nei_recall": 1.0, "subtype_recall": 1.0},
        "COUNTERFACTUAL": {"n": 1, "nei_recall": 1.0, "subtype_recall": 1.0},
        "SUBJECTIVE": {"n": 2, "nei_recall": 0.5, "subtype_recall": 0.0},
    }
    # precision 1/2, recall 1/4: F1 = 2 * 0.5 * 0.25 / 0.75
    skewed = [prediction(NEI, NEI), prediction(NEI, other), prediction(NEI, other), prediction(NEI, other),
              prediction("ENTAILED", NEI)]  # fmt: skip
    s = nei_metrics(skewed)
    assert (s["nei_precision"], s["nei_recall"], s["nei_f1"]) == (0.5, 0.25, round(1 / 3, 4))
    assert s["subtype_accuracy"] == 0.0 and s["subtype_n"] == 0  # no gold subtype to compare
    empty = nei_metrics([prediction(None, NEI)])
    assert empty["n_scored"] == 0 and empty["nei_f1"] == 0.0 and empty["subtype_accuracy"] == 0.0


def test_verdict_metrics_by_hand() -> None:
    E, C = "ENTAILED", "CONTRADICTED"  # noqa: N806
    predictions = [
        prediction(E, E), prediction(E, E), prediction(E, C), prediction(E, None),  # a failed claim: "none"
        prediction(C, C), prediction(C, C), prediction(C, E),
        prediction(NEI, NEI, "SUBJECTIVE", "SUBJECTIVE"), prediction(NEI, C, "OUT-OF-SCHEMA"),
        prediction(NEI, NEI, "COUNTERFACTUAL", "OUT-OF-SCHEMA"),
        prediction(None, E), prediction(None, NEI),  # unlabelled
    ]  # fmt: skip
    m = verdict_metrics(predictions)
    assert m["n_scored"] == 10 and m["accuracy"] == 0.6
    assert m["confusion"] == {
        E: {E: 2, C: 1, NEI: 0, "none": 1},
        C: {E: 1, C: 2, NEI: 0, "none": 0},
        NEI: {E: 0, C: 1, NEI: 2, "none": 0},
    }
    assert m["per_class"][E] == {"precision": round(2 / 3, 4), "recall": 0.5, "f1": round(4 / 7, 4), "n": 4}
    assert m["per_class"][C] == {"precision": 0.5, "recall": round(2 / 3, 4), "f1": round(4 / 7, 4), "n": 3}
    assert m["per_class"][NEI] == {"precision": 1.0, "recall": round(2 / 3, 4), "f1": 0.8, "n": 3}
    assert m["macro_f1"] == round((round(4 / 7, 4) * 2 + 0.8) / 3, 4)
    assert m["nei_recall_by_subtype"] == {"OUT-OF-SCHEMA": 0.0, "COUNTERFACTUAL": 1.0, "SUBJECTIVE": 1.0}
    # a model that never says NEI: fair accuracy, poor macro-F1 (the spec's warning)
    never = [prediction(E, E)] * 4 + [prediction(C, C)] * 4 + [prediction(NEI, C)] * 2
    n = verdict_metrics(never)
    assert n["accuracy"] == 0.8 and n["per_class"][NEI]["f1"] == 0.0 and n["macro_f1"] < n["accuracy"]


# ---- inputs ---------------------------------------------------------------------------------------


@pytest.mark.data
def test_load_inputs_reports_bad_lines_in_order_and_keeps_the_rest(
    tmp_path: Path, claimdb_sample: SamplePaths
) -> None:
    good = claimdb_sample.claims_path.read_text(encoding="utf-8").splitlines()
    path = tmp_path / "claims.jsonl"
    path.write_text("\n".join([
        good[0],
        '{"claim_id": "x1", "db_name": "nowhere", "claim": "A claim about another database."}',
        "{not json",
        good[1],
        '{"claim_id": "x2", "db_name": "formula_1"}',
        good[0],  # the same claim_id again
    ]) + "\n", encoding="utf-8")  # fmt: skip
    claims, schemas, problems = load_inputs(path, claimdb_sample.schema_dir)
    assert [c.claim_id for c in claims] == ["1", "2"] and "formula_1" in schemas
    assert [p.line for p in problems] == [2, 3, 5, 6]
    assert "unknown db_id 'nowhere'" in str(problems[0]) and "not valid JSON" in str(problems[1])
    assert 'no "claim"' in str(problems[2]) and "appears twice" in str(problems[3])
    assert [c.claim_id for c in load_inputs(path, claimdb_sample.schema_dir, limit=1)[0]] == ["1"]
    path.write_text(good[0].replace('"formula_1"', '"nowhere"') + "\n", encoding="utf-8")
    with pytest.raises(
        DatasetError, match=r"no usable claims \(1 line skipped; the first: line 1: unknown db_id"
    ):
        load_inputs(path, claimdb_sample.schema_dir)


# ---- schema-only ----------------------------------------------------------------------------------


@pytest.mark.data
def test_schema_only_on_the_sample_claims(claimdb_sample: SamplePaths) -> None:
    claims, schemas, problems = load_inputs(claimdb_sample.claims_path, claimdb_sample.schema_dir)
    assert problems == [] and len(claims) == 36
    seen: list[tuple[str, int, int]] = []
    result = run_schema_only(claims, schemas, encoder="hashing", progress=lambda *a: seen.append(a))
    assert result["mode"] == "schema-only" and result["encoder"] == "hashing"
    assert "training-set numbers" in result["protocol"] and seen[-1] == ("nei", 36, 36)
    predictions = result["predictions"]
    assert [p["id"] for p in predictions] == [c.claim_id for c in claims]
    by_id = {c.claim_id: c for c in claims}
    for p in predictions:
        claim = by_id[p["id"]]
        assert p["label"] == {Label.ENTAILED: "ENTAILED", Label.REFUTED: "CONTRADICTED"}.get(claim.label, NEI)
        assert p["predicted"] in (NEI, "SUPPORTED_OR_CONTRADICTED") and 0 <= p["probability"] <= 1
        assert (p["predicted_subtype"] is None) == (p["predicted"] != NEI) and p["reason"]
    metrics = result["metrics"]
    assert metrics == nei_metrics(predictions)  # the metrics are those of the predictions written
    # no ENTAILED/CONTRADICTED claim of the sample looks NEI; most NEI claims are found
    assert metrics["nei_precision"] == 1.0 and metrics["nei_recall"] >= 0.75 and metrics["nei_f1"] >= 0.85
    assert metrics["per_subtype"]["COUNTERFACTUAL"]["subtype_recall"] == 1.0
    # grouped cross-validation needs several databases: one database is a clear error, not a crash
    with pytest.raises(DatasetError, match="grouped by database and the claims come from 1 database"):
        run_schema_only(claims, schemas, encoder="hashing", cv=2)
    unlabelled = [Claim(c.claim_id, c.db_name, c.claim) for c in claims[:3]]
    with pytest.raises(DatasetError, match="labelled"):
        run_schema_only(unlabelled, schemas, encoder="hashing", cv=2)
    # unlabelled claims are predicted and written, never scored
    mixed = run_schema_only(unlabelled + claims[24:27], schemas, encoder="hashing")
    assert len(mixed["predictions"]) == 6 and mixed["metrics"]["n_scored"] == 3
    assert [p["label"] for p in mixed["predictions"][:3]] == [None] * 3


# ---- full mode, end to end -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sample_model(claimdb_sample_records: list[dict[str, Any]]) -> SampleModel:
    return SampleModel(claimdb_sample_records)


@pytest.fixture(scope="module")
def server(sample_model: SampleModel, claimdb_sample_records: list[dict[str, Any]]) -> Iterator[LlmServer]:
    models = {"sample": sample_model, "dies": DiesAfter(SampleModel(claimdb_sample_records), 3)}
    with LlmServer(models) as started:  # type: ignore[arg-type]
        yield started


def agent(server: LlmServer, model: str, trace: Path | None) -> LlmVerifier:
    config = LlmConfig(server.url, model, timeout_s=10.0, max_retries=0, backoff_s=0.0)
    return LlmVerifier(ChatClient(config), trace=TraceWriter(trace) if trace is not None else None)


def _run(claimdb_sample: SamplePaths, server: LlmServer, trace: Path, jobs: int = 1) -> dict[str, Any]:
    claims, schemas, _ = load_inputs(claimdb_sample.claims_path, claimdb_sample.schema_dir)
    progress: list[tuple[str, int, int]] = []
    result = run_full(
        claims, claimdb_sample.root, schemas, agent(server, "sample", trace), jobs=jobs,
        progress=lambda *a: progress.append(a),
    )  # fmt: skip
    assert sorted(p[1] for p in progress) == list(range(1, 37)) and {p[2] for p in progress} == {36}
    return result


@pytest.mark.data
@pytest.mark.parametrize("jobs", [1, 2])
def test_full_run_on_the_sample_database(
    claimdb_sample: SamplePaths,
    claimdb_sample_records: list[dict[str, Any]],
    server: LlmServer,
    sample_model: SampleModel,
    tmp_path: Path,
    jobs: int,
) -> None:
    trace = tmp_path / "run.trace.jsonl"
    before = claimdb_sample.db_path.read_bytes()
    asked = len(sample_model.seen)
    result = _run(claimdb_sample, server, trace, jobs)
    assert claimdb_sample.db_path.read_bytes() == before  # read only
    assert sample_model.mismatches == []  # every reference query returned the recorded answer
    assert sorted(sample_model.seen[asked:]) == sorted(str(r["claim"]) for r in claimdb_sample_records)
    predictions = result["predictions"]
    assert [p["id"] for p in predictions] == [str(r["claim_id"]) for r in claimdb_sample_records]  # in order
    gold = {str(r["claim_id"]): r for r in claimdb_sample_records}
    for p in predictions:
        record = gold[p["id"]]
        assert p["predicted"] == p["label"] == record["label"]
        assert p["predicted_subtype"] == p["subtype"] == record.get("category")
        assert not p["failed"] and p["confidence"] == 0.8
        if record["label"] == NEI:
            assert p["tool_calls"] == 0 and p["sql"] == ""
        else:  # the decisive query is the claim's reference SQL, run through the agent
            assert p["tool_calls"] == 1 and p["sql"] == record["sql"]
    metrics = result["metrics"]
    assert metrics["accuracy"] == 1.0 and metrics["macro_f1"] == 1.0 and metrics["n_scored"] == 36
    assert {c: v["n"] for c, v in metrics["per_class"].items()} == {
        "ENTAILED": 12,
        "CONTRADICTED": 12,
        NEI: 12,
    }
    assert metrics["nei_recall_by_subtype"] == {
        "OUT-OF-SCHEMA": 1.0,
        "COUNTERFACTUAL": 1.0,
        "SUBJECTIVE": 1.0,
    }
    assert metrics["tool_calls"] == {"mean": 0.67, "median": 1.0, "max": 1, "histogram": {0: 12, 1: 24}}
    assert metrics["failed_claims"] == 0
    # the trace: one complete line per claim, with the conversation and the query of each
    lines = trace.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 36
    records = [json.loads(line) for line in lines]
    assert sorted(r["claim_id"] for r in records) == sorted(gold)
    for record in records:
        assert list(record)[: len(TRACE_FIELDS)] == list(TRACE_FIELDS) and record["status"] == "ok"
        source = gold[record["claim_id"]]
        assert record["claim"] == source["claim"] and record["verdict"] == source["label"]
        assert [q["sql"] for q in record["queries"]] == ([source["sql"]] if source["sql"] else [])
        assert all(q["ok"] for q in record["queries"])
        assert record["tokens"]["prompt_tokens"] > 1000 and record["llm_calls"] == (2 if source["sql"] else 1)
    tokens = token_statistics(trace)
    assert tokens["claims"] == 36 and tokens["llm_calls_mean"] == round(60 / 36, 2)
    assert tokens["prompt_tokens_total"] == sum(r["tokens"]["prompt_tokens"] for r in records)
    assert tokens["completion_tokens_total"] == sum(r["tokens"]["completion_tokens"] for r in records)
    assert tokens["prompt_tokens_mean"] == round(tokens["prompt_tokens_total"] / 36, 1)
    # the stand-in server counts a quarter of the request's characters as prompt tokens
    requests = [r for r in server.chats("sample")][-60:]
    assert tokens["prompt_tokens_total"] == sum(len(json.dumps(r["messages"])) // 4 for r in requests)
    document = summary(result, claimdb_sample.claims_path, [])
    assert document["benchmark"] == "claimdb" and document["mode"] == "full" and document["n"] == 36
    assert document["predictions"] == predictions and document["skipped_lines"] == []
    json.dumps(document)


@pytest.mark.data
def test_full_run_needs_every_database_and_stops_when_the_server_dies(
    claimdb_sample: SamplePaths, server: LlmServer, tmp_path: Path
) -> None:
    claims, schemas, _ = load_inputs(claimdb_sample.claims_path, claimdb_sample.schema_dir)
    assert database_paths(claims, claimdb_sample.root) == {"formula_1": claimdb_sample.db_path}
    with pytest.raises(DatasetError, match=r"no formula_1/formula_1.sqlite; the BIRD layout"):
        run_full(claims, tmp_path, schemas, agent(server, "sample", None))
    # the server dies after three claims: five failed claims in a row stop the run with one error,
    # and the trace keeps every claim done, each line complete
    trace = tmp_path / "dies.trace.jsonl"
    with pytest.raises(LlmError, match="failed on 5 claims in a row"):
        run_full(claims, claimdb_sample.root, schemas, agent(server, "dies", trace))
    records = read_trace(trace)
    assert len(records) == len(trace.read_text(encoding="utf-8").splitlines()) >= 8
    assert [r["status"] for r in records[:3]] == ["ok"] * 3
    assert [r["verdict"] for r in records[:3]] == ["ENTAILED", "CONTRADICTED", "ENTAILED"]
    assert all(r["status"] == "failed" and "503" in r["errors"][0] for r in records[3:8])


def test_token_statistics_survive_a_damaged_trace(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    assert token_statistics(trace) == {}
    lines = [
        json.dumps(
            {"tokens": {"prompt_tokens": 100, "completion_tokens": 10}, "llm_calls": 2, "elapsed_s": 1.0}
        ),
        json.dumps({"tokens": None, "llm_calls": None}),
        "not json at all",
        json.dumps(
            {"tokens": {"prompt_tokens": 300, "completion_tokens": 30}, "llm_calls": 4, "elapsed_s": 3.0}
        ),
        '{"tokens": {"prompt_tok',  # a line cut by a crash
    ]
    trace.write_text("\n".join(lines), encoding="utf-8")
    stats = token_statistics(trace)
    assert stats == {
        "claims": 3,
        "prompt_tokens_mean": round(400 / 3, 1),
        "completion_tokens_mean": round(40 / 3, 1),
        "prompt_tokens_total": 400,
        "completion_tokens_total": 40,
        "llm_calls_mean": 2.0,
        "seconds_per_claim_median": 1.0,
    }


def test_the_claims_reader_refuses_what_a_verifier_cannot_use(tmp_path: Path) -> None:
    path = tmp_path / "claims.jsonl"
    path.write_text(
        '{"claim_id": 1, "db_name": "formula_1", "claim": "Lewis \\ud800 won 9 races."}\n'
        '{"claim_id": 2, "db_name": "formula_1", "claim": "Fine.", "extra_info": "bad \\udfff hint"}\n'
        '{"claim_id": 3, "db_name": "formula_1", "claim": "R\\u00e4ikk\\u00f6nen won \\ud83c\\udfce."}\n',
        encoding="utf-8",
    )
    claims, problems = read_claims(path)
    assert [c.claim_id for c in claims] == ["3"] and claims[0].claim == "Räikkönen won 🏎."
    assert [(p.line, "lone surrogate" in p.message) for p in problems] == [(1, True), (2, True)]
    assert claims[0].category is None and claims[0].label is None
