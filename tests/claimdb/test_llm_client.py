"""The OpenAI-compatible chat client over real HTTP (tests/server.py): requests on the wire, the
API key from the environment, retries with backoff, and one-line errors for every way a server fails."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest

from tabverify.errors import LlmError
from tabverify.llm import ChatClient, ChatError, LlmConfig, parse_completion
from tests.llm_server import FlakyModel, LlmServer, Reply, answer, good_model, standard_models

KEY = "sk-test-0123456789-SECRET"
MESSAGES = [{"role": "user", "content": "Claim: Ana Ruiz scored 31 points in the final."}]


@pytest.fixture
def server() -> Iterator[LlmServer]:
    with LlmServer(standard_models()) as started:
        yield started


def client(url: str, model: str = "good", **overrides: object) -> ChatClient:
    settings: dict[str, object] = {"timeout_s": 5.0, "max_retries": 2, "backoff_s": 0.01} | overrides
    return ChatClient(LlmConfig(base_url=url, model=model, **settings))  # type: ignore[arg-type]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_chat_request_and_its_reply(server: LlmServer) -> None:
    reply = client(server.url).chat(MESSAGES, tools=[{"type": "function", "function": {"name": "f"}}])
    assert reply.finish_reason == "tool_calls"
    call = reply.tool_calls[0]
    assert call["function"]["name"] == "execute_sql" and isinstance(call["function"]["arguments"], str)
    assert reply.usage["total_tokens"] == reply.usage["prompt_tokens"] + reply.usage["completion_tokens"] > 0
    assert reply.attempts == 1 and reply.elapsed_s > 0
    body = server.chats()[0]
    assert body["model"] == "good" and body["messages"] == MESSAGES
    assert body["temperature"] == 0.0 and body["max_tokens"] == 1024 and body["tools"]
    assert "authorization" not in server.requests[0].headers  # no key in the environment


def test_models_lists_the_server_models(server: LlmServer) -> None:
    assert "good" in client(server.url).models()


def test_the_api_key_travels_in_the_authorization_header(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TABVERIFY_LLM_API_KEY", KEY)
    with LlmServer({"good": good_model}, api_key=KEY) as server:
        client(server.url).chat(MESSAGES)
        assert server.requests[-1].headers["authorization"] == f"Bearer {KEY}"
        monkeypatch.setenv("MY_KEY", KEY)
        monkeypatch.delenv("TABVERIFY_LLM_API_KEY")
        client(server.url, api_key_env="MY_KEY").chat(MESSAGES)
        assert server.requests[-1].headers["authorization"] == f"Bearer {KEY}"


def test_a_missing_or_refused_key_names_the_environment_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TABVERIFY_LLM_API_KEY", raising=False)
    with LlmServer({"good": good_model}, api_key=KEY) as server:
        with pytest.raises(ChatError) as caught:
            client(server.url).chat(MESSAGES)
        assert caught.value.kind == "auth" and caught.value.status == 401
        assert "set the API key in the TABVERIFY_LLM_API_KEY environment variable" in str(caught.value)
        assert caught.value.attempts == 1  # 4xx is not retried
        monkeypatch.setenv("TABVERIFY_LLM_API_KEY", "wrong")
        with pytest.raises(
            ChatError, match="the key in the TABVERIFY_LLM_API_KEY environment variable was refused"
        ):
            client(server.url).chat(MESSAGES)
        assert "\n" not in str(caught.value)


def test_an_unknown_model_lists_the_server_models(server: LlmServer) -> None:
    with pytest.raises(ChatError) as caught:
        client(server.url, model="gpt-99").chat(MESSAGES)
    assert caught.value.kind == "model"
    assert "model 'gpt-99' is not on the server" in str(caught.value)
    assert "(it has: good, liar" in str(caught.value)


def test_a_wrong_path_says_where_the_base_url_must_point(server: LlmServer) -> None:
    root = server.url.removesuffix("/v1")
    with pytest.raises(ChatError) as caught:
        client(root).chat(MESSAGES)
    assert caught.value.kind == "model"
    assert "--llm-base-url must point at an OpenAI-compatible /v1" in str(caught.value)


def test_an_unreachable_server_is_retried_then_named() -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    started = time.monotonic()
    with pytest.raises(ChatError) as caught:
        client(url, max_retries=2).chat(MESSAGES)
    assert caught.value.kind == "unreachable" and caught.value.attempts == 3
    assert url in str(caught.value) and "--llm-base-url must point at an OpenAI-compatible /v1" in str(
        caught.value
    )
    assert time.monotonic() - started < 5


@pytest.mark.parametrize("url", ["ftp://127.0.0.1/v1", "127.0.0.1:8080/v1", "http:///v1", "http://h/v1?x=1"])
def test_base_url_must_be_http_or_https(url: str) -> None:
    with pytest.raises(ChatError) as caught:
        client(url)
    assert caught.value.kind == "config" and "--llm-base-url" in str(caught.value)


def test_server_errors_and_rate_limits_are_retried_with_backoff(server: LlmServer) -> None:
    flaky = FlakyModel(failures=3)  # 500, 503, 429 (Retry-After: 0), then good
    server.models["flaky3"] = flaky
    chat = client(server.url, model="flaky3", max_retries=3, backoff_s=0.05)
    waits: list[float] = []
    chat._sleep = waits.append  # record the backoff instead of sleeping
    reply = chat.chat(MESSAGES)
    assert reply.attempts == 4 and flaky.calls == 4
    assert len(server.chats("flaky3")) == 4
    assert len(waits) == 3
    for attempt, wait in enumerate(waits, start=1):  # exponential, with jitter 0.5x-1.5x
        base = 0.05 * 2 ** (attempt - 1)
        assert 0.5 * base <= wait <= 1.5 * base


def test_retries_give_up_with_the_last_error(server: LlmServer) -> None:
    server.models["down"] = FlakyModel(failures=100)
    chat = client(server.url, model="down", max_retries=1)
    with pytest.raises(ChatError) as caught:
        chat.chat(MESSAGES)
    assert caught.value.kind == "server" and caught.value.status == 503 and caught.value.attempts == 2
    assert "overloaded (2)" in str(caught.value)


def test_retry_after_is_honoured(server: LlmServer) -> None:
    calls = {"n": 0}

    def limited(request: dict) -> dict | Reply:
        calls["n"] += 1
        if calls["n"] == 1:
            return Reply(status=429, body={"error": {"message": "slow down"}}, headers={"Retry-After": "7"})
        return answer("ENTAILED")

    server.models["limited"] = limited
    chat = client(server.url, model="limited", backoff_s=0.01)
    waits: list[float] = []
    chat._sleep = waits.append
    assert chat.chat(MESSAGES).attempts == 2
    assert waits == [7.0]


def test_bad_requests_are_not_retried(server: LlmServer) -> None:
    with pytest.raises(ChatError) as caught:
        client(server.url, model="bad-request").chat(MESSAGES)
    assert caught.value.kind == "bad_request" and caught.value.attempts == 1
    assert "HTTP 400: context length exceeded" in str(caught.value)
    assert len(server.chats("bad-request")) == 1


def test_a_request_that_takes_too_long_times_out(server: LlmServer) -> None:
    started = time.monotonic()
    with pytest.raises(ChatError) as caught:
        client(server.url, model="sleepy", timeout_s=0.3, max_retries=1).chat(MESSAGES)
    assert caught.value.kind == "timeout" and caught.value.attempts == 2
    assert "no reply within 0.3 s (2 attempts)" in str(caught.value)
    assert time.monotonic() - started < 1.4


def test_a_reply_that_is_not_a_chat_completion(server: LlmServer) -> None:
    with pytest.raises(ChatError) as caught:
        client(server.url, model="not-chat").chat(MESSAGES)
    assert caught.value.kind == "protocol" and isinstance(caught.value, LlmError)
    assert "not a chat completion" in str(caught.value) and "--llm-base-url" in str(caught.value)


def test_a_reply_body_over_the_cap_is_refused(server: LlmServer) -> None:
    with pytest.raises(ChatError) as caught:
        client(server.url, model="huge").chat(MESSAGES)
    assert caught.value.kind == "too_large" and "lower max_tokens" in str(caught.value)


def test_parse_completion_normalises_what_servers_vary_on() -> None:
    message, finish, usage = parse_completion(
        {
            "choices": [
                {
                    "message": {
                        "content": [{"type": "text", "text": "hi"}],
                        "tool_calls": [
                            {"function": {"name": "execute_sql", "arguments": {"query": "SELECT 1"}}}
                        ],
                    }
                }
            ]
        }
    )
    assert message["content"] == "hi" and finish == ""
    assert message["tool_calls"][0]["id"] == "call_0"
    assert message["tool_calls"][0]["function"]["arguments"] == '{"query": "SELECT 1"}'
    assert usage == {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
    for bad in ({}, {"choices": []}, {"choices": [{"text": "x"}]}, []):
        with pytest.raises(ValueError):
            parse_completion(bad)


def test_tool_choice_auto_is_sent_with_tools(server: LlmServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """llama-cpp-python's chatml-function-calling format drops the tools when a request has no
    tool_choice (the model never sees them), so "auto", OpenAI's default, is said explicitly."""
    monkeypatch.delenv("TABVERIFY_LLM_TOOL_CHOICE", raising=False)
    tools = [{"type": "function", "function": {"name": "f"}}]
    client(server.url).chat(MESSAGES, tools=tools)
    client(server.url).chat(MESSAGES)
    client(server.url).chat(MESSAGES, tools=tools, tool_choice="required")
    client(server.url, tool_choice=None).chat(MESSAGES, tools=tools)
    first, plain, forced, unset = server.chats()
    assert first["tool_choice"] == "auto"
    assert "tool_choice" not in plain and "tools" not in plain  # no tools, no tool_choice
    assert forced["tool_choice"] == "required"
    assert "tool_choice" not in unset


def test_tool_choice_from_the_environment(server: LlmServer, monkeypatch: pytest.MonkeyPatch) -> None:
    tools = [{"type": "function", "function": {"name": "f"}}]
    monkeypatch.setenv("TABVERIFY_LLM_TOOL_CHOICE", "omit")
    client(server.url).chat(MESSAGES, tools=tools)
    monkeypatch.setenv("TABVERIFY_LLM_TOOL_CHOICE", "Required")
    client(server.url).chat(MESSAGES, tools=tools)
    omitted, required = server.chats()
    assert "tool_choice" not in omitted and required["tool_choice"] == "required"
    monkeypatch.setenv("TABVERIFY_LLM_TOOL_CHOICE", "sometimes")
    with pytest.raises(
        ChatError, match="TABVERIFY_LLM_TOOL_CHOICE environment variable is 'sometimes'"
    ) as caught:
        client(server.url)
    assert caught.value.kind == "config"
    monkeypatch.delenv("TABVERIFY_LLM_TOOL_CHOICE")
    with pytest.raises(ChatError, match="tool_choice is 'always'"):
        client(server.url, tool_choice="always")


def test_a_named_tool_can_be_forced(server: LlmServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TABVERIFY_LLM_TOOL_CHOICE", raising=False)
    forced = {"type": "function", "function": {"name": "execute_sql"}}
    client(server.url, tool_choice=forced).chat(
        MESSAGES, tools=[{"type": "function", "function": {"name": "f"}}]
    )
    assert server.chats()[0]["tool_choice"] == forced
    with pytest.raises(ChatError, match="tool_choice is"):
        client(server.url, tool_choice={"type": "function", "function": {}})
