"""The ClaimDB verifier agent over real HTTP (tests/llm_server.py) and a real SQLite file: verdicts
from a good model, a clean verdict (or a clear LlmError) for every scripted misbehaviour within the
tool-call cap, bounded tool results, the numbers rule, and a complete JSONL trace without the key."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tabverify.claimdb.agent import (
    LlmVerifier,
    format_result,
    label_from_text,
    normalise_label,
    parse_verdict,
)
from tabverify.claimdb.nei import NeiCheck
from tabverify.claimdb.trace import TraceWriter, read_trace
from tabverify.database import Database, QueryResult, connect
from tabverify.errors import LlmError
from tabverify.llm import ChatClient, LlmConfig
from tabverify.verify.verdict import Label, NeiSubtype, Verifier
from tests.llm_server import LlmServer, Reply, answer, call, standard_models

KEY = "sk-test-agent-SECRET-4242"
GAMES = 30_000
PLAYERS = [("Ana Ruiz", "Lions", 31), ("Li Wei", "Tigers", 27), ("Sam Cole", "Lions", 12)]


@pytest.fixture(scope="module")
def db_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("league")
    path = folder / "league.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE players (name TEXT PRIMARY KEY, team TEXT, points INTEGER)")
        conn.executemany("INSERT INTO players VALUES (?, ?, ?)", PLAYERS)
        conn.execute("CREATE TABLE games (id INTEGER PRIMARY KEY, home TEXT, away TEXT, note TEXT)")
        conn.executemany(
            "INSERT INTO games VALUES (?, ?, ?, ?)",
            ((i, "Lions", "Tigers", "a fairly long note about the game " * 3) for i in range(GAMES)),
        )
    descriptions = folder / "database_description"
    descriptions.mkdir()
    (descriptions / "players.csv").write_text(
        "original_column_name,column_name,column_description,data_format,value_description\n"
        "name,name,the player's full name,text,\n"
        "points,points,points scored in the final,integer,0 means did not score\n",
        encoding="utf-8",
    )
    return path


@pytest.fixture
def db(db_path: Path) -> Iterator[Database]:
    with connect(db_path) as database:
        yield database


@pytest.fixture
def server() -> Iterator[LlmServer]:
    with LlmServer(standard_models()) as started:
        yield started


def verifier(
    server: LlmServer, model: str = "good", *, timeout_s: float = 5.0, retries: int = 2, **kwargs
) -> LlmVerifier:
    config = LlmConfig(
        base_url=server.url, model=model, timeout_s=timeout_s, max_retries=retries, backoff_s=0.01
    )
    return LlmVerifier(ChatClient(config), **kwargs)


# ---- a model that behaves -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("claim", "label", "subtype"),
    [
        ("Ana Ruiz scored 31 points in the final.", Label.ENTAILED, None),
        ("Li Wei scored 30 points in the final.", Label.REFUTED, None),
        ("If the final had been played indoors, Ana Ruiz would have scored more.", Label.NOT_ENOUGH_INFO,
         NeiSubtype.COUNTERFACTUAL),
        ("Ana Ruiz is widely regarded as the best player.", Label.NOT_ENOUGH_INFO, NeiSubtype.SUBJECTIVE),
        ("Ana Ruiz missed the semi-final because of a knee injury.", Label.NOT_ENOUGH_INFO,
         NeiSubtype.OUT_OF_SCHEMA),
    ],
)  # fmt: skip
def test_a_good_model_reaches_each_label(
    server: LlmServer, db: Database, claim: str, label: Label, subtype: NeiSubtype | None
) -> None:
    verdict = verifier(server).verify(claim, db)
    assert verdict.label is label and verdict.subtype is subtype
    assert verdict.confidence == 0.8 and verdict.source == "llm:good" and verdict.program == ""
    assert not verdict.limits


def test_the_verdict_names_its_decisive_query_and_result(server: LlmServer, db: Database) -> None:
    verdict = verifier(server).verify("Ana Ruiz scored 31 points in the final.", db)
    assert verdict.sql == "SELECT points FROM players WHERE name = 'Ana Ruiz'"
    assert verdict.result == 31
    kinds = [step.kind for step in verdict.trace]
    assert kinds == ["message", "query", "message"]
    assert verdict.trace[1].rows == 1 and verdict.trace[1].error is None


def test_the_first_request_holds_the_protocol(server: LlmServer, db: Database) -> None:
    verifier(server).verify(
        "Ana Ruiz scored 31 points in the final.", db, extra_info="the final means points"
    )
    first = server.chats()[0]
    system, user = first["messages"][0]["content"], first["messages"][1]["content"]
    for term in (
        "ENTAILED",
        "CONTRADICTED",
        "NOT ENOUGH INFO",
        "OUT-OF-SCHEMA",
        "COUNTERFACTUAL",
        "SUBJECTIVE",
    ):
        assert term in system
    assert system.count("Answer: {") == 3  # three examples
    assert "at most 20 tool calls" in system
    assert "table players (3 rows); primary key: name" in user
    assert "points (INTEGER): points scored in the final; values: 0 means did not score" in user
    assert f"table games ({GAMES:,} rows)" in user
    assert "Claim: Ana Ruiz scored 31 points in the final." in user
    assert "Extra information: the final means points" in user
    assert [tool["function"]["name"] for tool in first["tools"]] == ["execute_sql"]


def test_it_satisfies_the_verifier_protocol(server: LlmServer, db: Database) -> None:
    agent: Verifier[Database] = verifier(server)
    assert agent.verify("Ana Ruiz scored 31 points in the final.", db).entailed


def test_the_nei_precheck_is_offered_as_a_hint(server: LlmServer, db: Database) -> None:
    seen: list[tuple[str, str]] = []

    def precheck(claim: str, extra_info: str) -> NeiCheck:
        seen.append((claim, extra_info))
        return NeiCheck(True, NeiSubtype.OUT_OF_SCHEMA, 0.83, "no column records injuries", ("knee injury",))

    claim = "Ana Ruiz missed the semi-final because of a knee injury."
    verdict = verifier(server, nei_check=precheck).verify(claim, db, extra_info="hint")
    assert seen == [(claim, "hint")]
    user = server.chats()[0]["messages"][1]["content"]
    assert "Hint from an offline NOT ENOUGH INFO pre-check" in user and "can be wrong" in user
    assert (
        "the claim looks OUT-OF-SCHEMA, p=0.83: no column records injuries (phrases: 'knee injury')" in user
    )
    assert verdict.subtype is NeiSubtype.OUT_OF_SCHEMA


def test_a_failing_precheck_does_not_stop_the_verification(
    server: LlmServer, db: Database, tmp_path: Path
) -> None:
    def broken(claim: str, extra_info: str) -> NeiCheck:
        raise RuntimeError("model file missing")

    with TraceWriter(tmp_path / "trace.jsonl") as trace:
        verdict = verifier(server, nei_check=broken, trace=trace).verify("Ana Ruiz scored 31 points.", db)
    assert verdict.entailed
    assert (
        "nei pre-check failed: RuntimeError: model file missing"
        in read_trace(tmp_path / "trace.jsonl")[0]["errors"]
    )


# ---- misbehaving models: a clean verdict within the cap --------------------------------------------


def test_a_model_that_loops_gets_one_last_request_without_tools(server: LlmServer, db: Database) -> None:
    verdict = verifier(server, "looper", max_tool_calls=3).verify("Ana Ruiz scored 31 points.", db)
    chats = server.chats("looper")
    assert len(chats) == 4
    assert all(chat.get("tools") for chat in chats[:3]) and "tools" not in chats[3]
    assert "You have used all 3 tool calls" in chats[3]["messages"][-1]["content"]
    assert verdict.label is Label.REFUTED and verdict.confidence == 0.6
    assert [notice.limit for notice in verdict.limits] == ["max_tool_calls"]
    assert sum(step.kind == "query" for step in verdict.trace) == 3


def test_a_model_that_keeps_calling_tools_past_the_cap_ends_cleanly(server: LlmServer, db: Database) -> None:
    verdict = verifier(server, "stubborn", max_tool_calls=2).verify("Ana Ruiz scored 31 points.", db)
    assert verdict.label is Label.NOT_ENOUGH_INFO and verdict.subtype is None and verdict.confidence == 0.0
    assert verdict.source.startswith("llm:stubborn (no verdict: the model kept calling tools after the limit")
    assert len(server.chats("stubborn")) == 3


def test_unknown_tools_malformed_arguments_and_prose_end_in_a_clean_verdict(
    server: LlmServer, db: Database, tmp_path: Path
) -> None:
    with TraceWriter(tmp_path / "trace.jsonl") as trace:
        verdict = verifier(server, "chaos", trace=trace).verify(
            "Ana Ruiz scored 31 points.", db, claim_id="7"
        )
    assert verdict.label is Label.NOT_ENOUGH_INFO and verdict.confidence == 0.0
    assert "not the JSON verdict, even when asked again" in verdict.source
    record = read_trace(tmp_path / "trace.jsonl")[0]
    assert record["status"] == "failed" and record["tool_calls"] == 5 and record["llm_calls"] == 6
    tool_messages = [m["content"] for m in record["messages"] if m["role"] == "tool"]
    assert tool_messages[0].startswith("error: unknown tool 'search_web'; the only tool is execute_sql")
    assert tool_messages[1].startswith("error: malformed arguments '{not json'")
    assert tool_messages[2].startswith("error: malformed arguments")
    assert tool_messages[3].startswith("columns: ")  # the good call of the parallel pair ran
    assert tool_messages[4].startswith("error: unknown tool 'drop_tables'")
    assert any("That reply is not the JSON verdict" in (m["content"] or "") for m in record["messages"])
    assert len([q for q in record["queries"]]) == 1
    assert sum("unknown tool" in e for e in record["errors"]) == 2


def test_bad_tool_calls_count_towards_the_cap(server: LlmServer, db: Database) -> None:
    verdict = verifier(server, "chaos", max_tool_calls=2).verify("Ana Ruiz scored 31 points.", db)
    chats = server.chats("chaos")
    assert "tools" not in chats[2] and len(chats) <= 2 + 3
    assert verdict.confidence == 0.0


def test_a_lenient_parse_after_the_correction(server: LlmServer, db: Database) -> None:
    verdict = verifier(server, "chaos-recovers").verify("Ana Ruiz scored 40 points.", db)
    assert verdict.label is Label.REFUTED and verdict.confidence == 0.8


def test_empty_replies_end_in_a_clean_verdict(server: LlmServer, db: Database) -> None:
    verdict = verifier(server, "empty").verify("Ana Ruiz scored 31 points.", db)
    assert verdict.confidence == 0.0 and "empty replies" in verdict.source
    assert len(server.chats("empty")) == 2


def test_a_huge_select_star_is_bounded(server: LlmServer, db: Database, tmp_path: Path) -> None:
    with TraceWriter(tmp_path / "trace.jsonl") as trace:
        verifier(server, "flood", max_result_chars=3000, trace=trace).verify("Ana Ruiz scored 31 points.", db)
    second = server.chats("flood")[1]
    tool = [m for m in second["messages"] if m["role"] == "tool"][0]["content"]
    assert len(tool) <= 3000
    assert f"of {GAMES:,} rows" in tool and "aggregate in SQL" in tool
    query = read_trace(tmp_path / "trace.jsonl")[0]["queries"][0]
    assert query["truncated"] and query["rows"] <= 50 and query["total_rows"] == GAMES


# ---- server failures: a failure verdict, or LlmError when nothing can work ----------------------------


def test_a_request_timeout_ends_the_claim_not_the_run(
    server: LlmServer, db: Database, tmp_path: Path
) -> None:
    started = time.monotonic()
    with TraceWriter(tmp_path / "trace.jsonl") as trace:
        agent = verifier(server, "sleepy", timeout_s=0.3, retries=0, trace=trace, max_consecutive_failures=2)
        verdict = agent.verify("Ana Ruiz scored 31 points.", db, claim_id="a")
        assert verdict.label is Label.NOT_ENOUGH_INFO and verdict.confidence == 0.0
        assert "no verdict: the model server failed: the model server at" in verdict.source
        assert "no reply within 0.3 s" in verdict.source
        with pytest.raises(LlmError, match="failed on 2 claims in a row"):
            agent.verify("Ana Ruiz scored 31 points.", db, claim_id="b")
    assert time.monotonic() - started < 2.0
    records = read_trace(tmp_path / "trace.jsonl")
    assert [r["status"] for r in records] == ["failed", "failed"]


def test_server_errors_are_retried_and_the_claim_succeeds(server: LlmServer, db: Database) -> None:
    verdict = verifier(server, "flaky", retries=2).verify("Ana Ruiz scored 31 points.", db)
    assert verdict.entailed
    assert len(server.chats("flaky")) == 2 + 2  # two failures, then a tool call and the answer


@pytest.mark.parametrize("model", ["bad-request", "huge"])
def test_request_specific_failures_end_the_claim(server: LlmServer, db: Database, model: str) -> None:
    verdict = verifier(server, model).verify("Ana Ruiz scored 31 points.", db)
    assert verdict.confidence == 0.0 and verdict.label is Label.NOT_ENOUGH_INFO


@pytest.mark.parametrize(
    ("model", "message"), [("gpt-99", "is not on the server"), ("not-chat", "not a chat completion")]
)
def test_server_level_failures_raise(
    server: LlmServer, db: Database, tmp_path: Path, model: str, message: str
) -> None:
    with TraceWriter(tmp_path / "trace.jsonl") as trace, pytest.raises(LlmError, match=message):
        verifier(server, model, trace=trace).verify("Ana Ruiz scored 31 points.", db)
    assert read_trace(tmp_path / "trace.jsonl")[0]["status"] == "error"


def test_an_unreachable_server_raises(db: Database) -> None:
    config = LlmConfig(
        base_url="http://127.0.0.1:9/v1", model="good", timeout_s=1, max_retries=1, backoff_s=0.01
    )
    with pytest.raises(LlmError, match="cannot reach the model server"):
        LlmVerifier(ChatClient(config)).verify("Ana Ruiz scored 31 points.", db)


# ---- the numbers rule ------------------------------------------------------------------------------


def test_an_entailed_verdict_the_queries_contradict_is_overridden(server: LlmServer, db: Database) -> None:
    verdict = verifier(server, "liar").verify("Ana Ruiz scored 40 points in the final.", db)
    assert verdict.label is Label.REFUTED and verdict.confidence == 0.6
    assert verdict.warnings and "ENTAILED changed to CONTRADICTED" in verdict.warnings[0]
    assert any(step.kind == "note" and "40" in step.text for step in verdict.trace)
    kept = verifier(server, "liar", numbers_rule="warn").verify("Ana Ruiz scored 40 points in the final.", db)
    assert kept.label is Label.ENTAILED and "numbers_rule=warn" in kept.warnings[0]
    off = verifier(server, "liar", numbers_rule="off").verify("Ana Ruiz scored 40 points in the final.", db)
    assert off.label is Label.ENTAILED and not off.warnings


def test_an_entailed_verdict_the_queries_support_is_kept(server: LlmServer, db: Database) -> None:
    verdict = verifier(server, "liar").verify("Ana Ruiz scored 31 points in the final.", db)
    assert verdict.label is Label.ENTAILED and verdict.confidence == 0.8 and not verdict.warnings


# ---- the trace ---------------------------------------------------------------------------------------


def test_the_trace_has_one_complete_line_per_claim_and_never_the_key(
    db: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TABVERIFY_LLM_API_KEY", KEY)
    path = tmp_path / "runs" / "trace.jsonl"
    claims = [
        "Ana Ruiz scored 31 points.",
        "Li Wei scored 30 points.",
        "If it had rained, Li Wei would have lost.",
    ]
    with LlmServer(standard_models(), api_key=KEY) as server, TraceWriter(path) as trace:
        agent = verifier(server, trace=trace)
        for number, claim in enumerate(claims):
            agent.verify(claim, db, extra_info="x", claim_id=str(number))
        assert all(r.headers.get("authorization") == f"Bearer {KEY}" for r in server.requests)
    text = path.read_text(encoding="utf-8")
    assert KEY not in text
    records = [json.loads(line) for line in text.splitlines()]
    assert [r["claim_id"] for r in records] == ["0", "1", "2"]
    assert [r["verdict"] for r in records] == ["ENTAILED", "CONTRADICTED", "NOT ENOUGH INFO"]
    assert records[2]["subtype"] == "COUNTERFACTUAL"
    first = records[0]
    keys = (
        "claim extra_info messages queries verdict justification tokens tool_calls llm_calls elapsed_s errors"
    )
    for key in keys.split():
        assert key in first
    assert [m["role"] for m in first["messages"]] == ["system", "user", "assistant", "tool", "assistant"]
    assert first["queries"][0]["sql"].startswith("SELECT points") and first["queries"][0]["ok"]
    assert first["queries"][0]["rows"] == 1 and "elapsed_s" in first["queries"][0]
    assert first["tokens"]["total_tokens"] > 0 and first["tool_calls"] == 1 and first["llm_calls"] == 2
    assert first["justification"] == "The query returned 31." and first["errors"] == []


def test_the_trace_writer_is_thread_safe_and_flushes_each_line(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    with TraceWriter(path) as trace:

        def write(worker: int) -> None:
            for i in range(25):
                trace.write({"claim_id": f"{worker}-{i}", "messages": ["x" * 5000], "score": float("nan")})

        threads = [threading.Thread(target=write, args=(n,)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(read_trace(path)) == 200  # on disk before close
    records = read_trace(path)
    assert len({r["claim_id"] for r in records}) == 200 and records[0]["score"] == "nan"


# ---- pieces -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "label", "subtype"),
    [
        ('{"verdict": "ENTAILED", "justification": "ok", "subtype": null}', Label.ENTAILED, None),
        ('```json\n{"verdict": "Contradicted", "justification": "no"}\n```', Label.REFUTED, None),
        ('I checked. {"verdict": "not_enough_info", "subtype": "out_of_schema"} Done.', Label.NOT_ENOUGH_INFO,
         NeiSubtype.OUT_OF_SCHEMA),
        ('{"label": "NOT ENOUGH INFO (SUBJECTIVE)", "justification": "opinion",}', Label.NOT_ENOUGH_INFO,
         NeiSubtype.SUBJECTIVE),
        ("{'verdict': 'REFUTED', 'justification': 'x'}", Label.REFUTED, None),
        ('{"verdict": "ENTAILD"}', Label.ENTAILED, None),
        ('{"verdict": "CONTRADICTED", "subtype": "COUNTERFACTUAL"}', Label.REFUTED, None),
    ],
)  # fmt: skip
def test_parse_verdict_is_lenient(reply: str, label: Label, subtype: NeiSubtype | None) -> None:
    parsed = parse_verdict(reply)
    assert parsed is not None and parsed.label is label and parsed.subtype is subtype


@pytest.mark.parametrize(
    "reply", ["", "I think it is true.", '{"verdict": "maybe"}', '{"answer": 3}', "{broken"]
)
def test_parse_verdict_refuses_what_is_not_a_verdict(reply: str) -> None:
    assert parse_verdict(reply) is None


def test_label_from_text_is_the_last_resort() -> None:
    assert label_from_text("Verdict: CONTRADICTED\nbecause 30 != 27").label is Label.REFUTED
    assert label_from_text("**Entailed.**").label is Label.ENTAILED
    assert label_from_text("The claim could be entailed or contradicted, hard to say.") is None
    assert normalise_label("nei") == (Label.NOT_ENOUGH_INFO, None)


def test_format_result_bounds_rows_and_characters() -> None:
    rows = tuple((i, "x" * 900) for i in range(50))
    result = QueryResult(
        sql="SELECT", columns=("id", "text"), rows=rows, truncated=True, total_rows=1_000_000
    )
    text = format_result(result, max_rows=50, max_chars=2000)
    assert len(text) <= 2000 and "showing" in text and "of 1,000,000 rows" in text
    assert format_result(QueryResult(sql="SELECT", error="syntax error: near x", error_kind="syntax")) == (
        "error (syntax): syntax error: near x"
    )
    assert format_result(QueryResult(sql="SELECT", columns=("n",), rows=((3,),))).endswith("(1 row)")


def test_an_empty_reply_is_nudged_without_tools(db: Database) -> None:
    """A server that cannot write text while tools are offered (llama-cpp-python's
    chatml-function-calling with tool_choice "auto" constrains a message to nothing): the model
    queries, then sends an empty message; the nudge goes without tools, and the verdict comes."""

    def tools_or_nothing(request: dict) -> dict:
        if not request.get("tools"):
            return answer("ENTAILED", "Ana Ruiz scored 31.")
        if not any(m.get("role") == "tool" for m in request["messages"]):
            return call("SELECT points FROM players WHERE name = 'Ana Ruiz'")
        return {"role": "assistant", "content": ""}

    with LlmServer({"llama-cpp": tools_or_nothing}) as server:
        verdict = verifier(server, "llama-cpp").verify("Ana Ruiz scored 31 points.", db)
        chats = server.chats("llama-cpp")
    assert verdict.label is Label.ENTAILED and verdict.confidence == 0.8
    assert [bool(c.get("tools")) for c in chats] == [True, True, False]
    assert chats[2]["messages"][-1]["content"].startswith("Your reply was empty.")


def test_tool_call_messages_go_back_with_string_content(db: Database) -> None:
    """llama-cpp-python's server sends tool calls with ``"content": null`` but refuses (HTTP 500, a
    validation error) an assistant message with null content when it comes back in the history."""

    def strict(request: dict) -> dict | Reply:
        history = [m for m in request["messages"] if m.get("role") == "assistant"]
        if any(not isinstance(m.get("content"), str) for m in history):
            return Reply(status=500, body={"error": {"message": "messages: Input should be a valid string"}})
        if not history:
            return call("SELECT points FROM players WHERE name = 'Ana Ruiz'")  # content None
        return answer("ENTAILED", "Ana Ruiz scored 31.")

    with LlmServer({"strict": strict}) as server:
        verdict = verifier(server, "strict").verify("Ana Ruiz scored 31 points.", db)
        second = server.chats("strict")[1]
    assert verdict.label is Label.ENTAILED and verdict.confidence == 0.8
    assert second["messages"][2]["role"] == "assistant" and second["messages"][2]["content"] == ""
