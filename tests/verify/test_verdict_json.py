"""Verdict.to_dict(): results are JSON booleans and numbers, strings only for text."""

import json

from tabverify import TableVerifier, verify
from tabverify.program import execute
from tabverify.table import Table
from tabverify.verify import Label, Verdict
from tabverify.verify.verdict import Alternative, LimitNotice


def test_results_are_json_booleans(election: Table) -> None:
    verdict = verify(election, "there be 3 incumbent from the democratic party")
    payload = json.loads(json.dumps(verdict.to_dict()))
    assert payload["result"] is True or payload["result"] is False
    assert payload["result"] is verdict.result
    assert payload["alternatives"]
    for alternative in payload["alternatives"]:
        assert isinstance(alternative["result"], bool)
        assert 0.0 <= alternative["probability"] <= 1.0
    assert set(payload) == {
        "statement",
        "label",
        "program",
        "result",
        "confidence",
        "evidence",
        "alternatives",
        "limits",
        "subtype",
        "sql",
        "source",
        "trace",
        "notes",
    }
    # an in-memory table: no database evidence, no abstention
    assert payload["subtype"] is None and payload["sql"] == "" and payload["trace"] == []
    assert verdict.result_text in ("True", "False")


def test_a_verdict_without_a_program_has_a_null_result(election: Table) -> None:
    verifier = TableVerifier()
    verdict = verifier.verify("zebras fly over mountains", election)
    if verdict.program:  # the search may still find a reading; build the no-program case directly
        verdict = Verdict(verdict.statement, verdict.label, "", None, verdict.confidence)
    payload = json.loads(json.dumps(verdict.to_dict()))
    assert payload["program"] == "" and payload["result"] is None
    assert verdict.result_text == ""


def test_execution_values_become_json_numbers_text_and_rows(election: Table) -> None:
    assert execute("count{filter_eq{all_rows; party; democratic}}", election).json == 3
    assert isinstance(execute("count{all_rows}", election).json, int)
    assert execute("avg{all_rows; first elected}", election).json == 1992
    assert execute("avg{filter_eq{all_rows; party; republican}; votes}", election).json == 50228.5
    assert execute("hop{argmax{all_rows; votes}; incumbent}", election).json == "mary jones"
    # a cell is text as written, even when it holds a number
    assert execute("hop{argmax{all_rows; votes}; votes}", election).json == "61,002"
    assert execute("filter_eq{all_rows; party; republican}", election).json == [1, 4]
    assert execute("eq{1; 1}", election).json is True


def test_hand_built_verdicts_serialise_typed_values() -> None:
    verdict = Verdict(
        "s",
        Label.REFUTED,
        "eq{count{all_rows}; 2}",
        False,
        0.8,
        alternatives=(Alternative("eq{count{all_rows}; 3}", True, 0.1),),
        limits=(LimitNotice("max_evaluations", 10, "the search stopped after 10 function evaluations"),),
    )
    text = json.dumps(verdict.to_dict())
    assert '"result": false' in text and '"result": true' in text
    assert verdict.warnings == ("the search stopped after 10 function evaluations",)
