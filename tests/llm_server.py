"""A stand-in OpenAI-compatible model server for tests: a real HTTP server on 127.0.0.1 that plays
scripted models, so the LLM client and agent are tested over the real wire protocol.

- ``POST /v1/chat/completions``: the ``model`` of the request picks a script; a script is a callable
  taking the request JSON and returning the assistant message (a dict), or a :class:`Reply` for full
  control (HTTP status, raw body, headers, finish reason, usage). The server wraps a message in a
  ``chat.completion`` object with ``choices[0].message``, ``finish_reason`` and ``usage``.
- ``GET /v1/models``: the script names.
- 401 when the server expects an API key and the request's ``Authorization`` header does not carry it;
  404 (OpenAI's error shape) for an unknown model.
- Every request is recorded (:attr:`LlmServer.requests`: method, path, headers, JSON body).

Other tests use the :func:`llm_server` fixture (a started :class:`LlmServer` playing
:func:`standard_models`) with ``from tests.llm_server import llm_server  # noqa: F401`` (ruff then
reports F811 where a test names it as a parameter), or start their own:
``with LlmServer(standard_models() | {"mine": script}, api_key=...) as server: ... server.url``.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


@dataclass
class Reply:
    """A scripted reply with full control: ``message`` wrapped as a chat completion, or ``body``
    sent as is (bytes, text or a JSON-able object); ``status`` and ``headers`` as given."""

    message: dict[str, Any] | None = None
    status: int = 200
    body: bytes | str | dict[str, Any] | list[Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    finish_reason: str | None = None
    usage: dict[str, int] | None = None


Script = Callable[[dict[str, Any]], "dict[str, Any] | Reply"]


@dataclass(frozen=True)
class Recorded:
    """One request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any] | None


# ---- helpers for writing scripts -----------------------------------------------------------------


def call(sql: str, call_id: str = "call_1", name: str = "execute_sql", arguments: str | None = None) -> dict:
    """An assistant message calling one tool (``execute_sql`` with ``{"query": sql}`` by default)."""
    args = json.dumps({"query": sql}) if arguments is None else arguments
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}],
    }


def answer(verdict: str, justification: str = "", subtype: str | None = None) -> dict:
    """An assistant message with the JSON verdict."""
    content = json.dumps({"verdict": verdict, "justification": justification, "subtype": subtype})
    return {"role": "assistant", "content": content}


def text(content: str) -> dict:
    """An assistant message with plain text."""
    return {"role": "assistant", "content": content}


def claim_of(request: dict) -> str:
    """The claim of the conversation (the ``Claim:`` line of the first user message)."""
    for message in request.get("messages", []):
        if message.get("role") == "user":
            match = re.search(r"^Claim: (.*)$", message.get("content") or "", re.MULTILINE)
            if match:
                return match.group(1)
    return ""


def tool_results(request: dict) -> list[str]:
    """The contents of the tool messages so far, in order."""
    return [m.get("content") or "" for m in request.get("messages", []) if m.get("role") == "tool"]


def turns(request: dict) -> int:
    """How many assistant messages the conversation holds (the script's turn number, from 0)."""
    return sum(1 for m in request.get("messages", []) if m.get("role") == "assistant")


def offers_tools(request: dict) -> bool:
    return bool(request.get("tools"))


def result_numbers(content: str) -> list[float]:
    """The numbers of the rows of a tool result (the lines after ``columns: ...``)."""
    rows = [line for line in content.splitlines()[1:] if line.startswith("[")]
    return [float(n) for line in rows for n in re.findall(r"-?\d+(?:\.\d+)?", line)]


# ---- the scripted models -------------------------------------------------------------------------

_POINTS = re.compile(r"^(?P<name>[A-Z][a-z]+(?: [A-Z][a-z]+)*) scored (?P<points>\d+(?:\.\d+)?) points")


def good_model(request: dict) -> dict:
    """Answers claims "<Name> scored <N> points ..." with ``SELECT points FROM players WHERE name =``,
    hypotheticals ("If ...") as COUNTERFACTUAL and "best"/"widely" claims as SUBJECTIVE, else
    OUT-OF-SCHEMA after one look at the table."""
    claim = claim_of(request)
    if claim.startswith("If "):
        return answer("NOT ENOUGH INFO", "A hypothetical.", "COUNTERFACTUAL")
    if re.search(r"\b(best|widely|greatest)\b", claim):
        return answer("NOT ENOUGH INFO", "A value judgement.", "SUBJECTIVE")
    results = tool_results(request)
    match = _POINTS.match(claim)
    if match is None:
        if not results:
            return call("SELECT COUNT(*) FROM players")
        return answer("NOT ENOUGH INFO", "Nothing in the schema records that.", "OUT-OF-SCHEMA")
    if not results:
        name = match.group("name").replace("'", "''")
        return call(f"SELECT points FROM players WHERE name = '{name}'")
    found = result_numbers(results[-1])
    claimed = float(match.group("points"))
    if found and found[0] == claimed:
        return answer("ENTAILED", f"The query returned {found[0]:g}.")
    return answer("CONTRADICTED", f"The query returned {found[0] if found else 'nothing'}.")


def liar_model(request: dict) -> dict:
    """Queries like the good model, then always says ENTAILED (for the numbers rule)."""
    reply = good_model(request)
    if reply.get("tool_calls"):
        return reply
    return answer("ENTAILED", "Looks right to me.")


def looper_model(request: dict) -> dict:
    """Calls ``execute_sql`` for ever while tools are offered; answers when they are not."""
    if offers_tools(request):
        return call(f"SELECT COUNT(*) FROM players WHERE points > {turns(request)}", f"call_{turns(request)}")
    return answer("CONTRADICTED", "After many queries.")


def stubborn_model(request: dict) -> dict:
    """Calls ``execute_sql`` for ever, even when no tools are offered."""
    return call("SELECT 1", f"call_{turns(request)}")


def chaos_model(request: dict) -> dict:
    """An unknown tool, malformed arguments (not JSON), arguments without a query, two parallel calls
    of which one is bad, then prose instead of the JSON verdict, twice."""
    step = turns(request)
    if step == 0:
        return call("SELECT 1", "c0", name="search_web")
    if step == 1:
        return call("", "c1", arguments="{not json")
    if step == 2:
        return call("", "c2", arguments='{"q": 1}')
    if step == 3:
        message = call("SELECT COUNT(*) FROM players", "c3a")
        message["tool_calls"].append(
            {"id": "c3b", "type": "function", "function": {"name": "drop_tables", "arguments": "{}"}}
        )
        return message
    if step == 4:
        return text("I believe the claim is probably fine, but I am not sure how to format this.")
    return text("Still thinking about the format, sorry!")


def chaos_recovers_model(request: dict) -> dict:
    """Like :func:`chaos_model`, but after the request to correct it answers in a code fence with a
    lower-case label variant."""
    if turns(request) >= 5:
        return text('Here you go:\n```json\n{"verdict": "contradicted", "justification": "fixed",}\n```')
    return chaos_model(request)


def flood_model(request: dict) -> dict:
    """Asks for ``SELECT * FROM games`` (a big table), then answers."""
    if not tool_results(request):
        return call("SELECT * FROM games")
    return answer("CONTRADICTED", "Read the games.")


def empty_model(request: dict) -> dict:
    """Always an empty message."""
    return {"role": "assistant", "content": ""}


def huge_model(request: dict) -> Reply:
    """A reply body over the client's 8 MB cap."""
    return Reply(message=text("x" * (9 * 1024 * 1024)))


def not_chat_model(request: dict) -> Reply:
    """A 200 reply that is an HTML page, not a chat completion."""
    return Reply(body="<html><body>It works!</body></html>", headers={"Content-Type": "text/html"})


def bad_request_model(request: dict) -> Reply:
    """A 400 (as a server answers a conversation over the context length)."""
    return Reply(
        status=400, body={"error": {"message": "context length exceeded", "type": "invalid_request"}}
    )


def sleepy_model(seconds: float) -> Script:
    """Sleeps ``seconds`` before answering (longer than the client's timeout in the tests)."""

    def script(request: dict) -> dict:
        time.sleep(seconds)
        return answer("ENTAILED", "Slowly.")

    return script


class FlakyModel:
    """Fails the first ``failures`` chat requests (HTTP 500, then 503 and 429 with Retry-After: 0),
    then behaves like ``then``."""

    def __init__(self, failures: int = 2, then: Script = good_model):
        self.failures = failures
        self.then = then
        self.calls = 0
        self._lock = threading.Lock()

    def __call__(self, request: dict) -> dict | Reply:
        with self._lock:
            self.calls += 1
            number = self.calls
        if number <= self.failures:
            status = (500, 503, 429)[(number - 1) % 3]
            headers = {"Retry-After": "0"} if status == 429 else {}
            return Reply(
                status=status, body={"error": {"message": f"overloaded ({number})"}}, headers=headers
            )
        return self.then(request)


def standard_models() -> dict[str, Script]:
    """The scripted models every test can use, by name."""
    return {
        "good": good_model,
        "liar": liar_model,
        "looper": looper_model,
        "stubborn": stubborn_model,
        "chaos": chaos_model,
        "chaos-recovers": chaos_recovers_model,
        "flood": flood_model,
        "empty": empty_model,
        "huge": huge_model,
        "not-chat": not_chat_model,
        "bad-request": bad_request_model,
        "sleepy": sleepy_model(1.5),
        "flaky": FlakyModel(),
    }


# ---- the server ----------------------------------------------------------------------------------


class LlmServer:
    """An OpenAI-compatible server on 127.0.0.1 (a free port) in a background thread.

    ``models``: scripts by model name. ``api_key``: when set, chat and model requests without
    ``Authorization: Bearer <api_key>`` get 401. Use as a context manager or call :meth:`start` /
    :meth:`stop`; :attr:`url` is the ``/v1`` base URL to give the client."""

    def __init__(self, models: dict[str, Script] | None = None, api_key: str | None = None):
        self.models: dict[str, Script] = dict(models or {})
        self.api_key = api_key
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        assert self._server is not None, "start the server first"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def chats(self, model: str | None = None) -> list[dict[str, Any]]:
        """The JSON bodies of the chat requests received (for ``model`` only when given)."""
        with self._lock:
            return [
                r.body
                for r in self.requests
                if r.path.endswith("/chat/completions") and r.body is not None
                and (model is None or r.body.get("model") == model)
            ]  # fmt: skip

    def _record(self, entry: Recorded) -> None:
        with self._lock:
            self.requests.append(entry)

    def start(self) -> LlmServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:  # quiet
                return

            def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
                try:
                    self.send_response(status)
                    sent = {k.lower() for k in (headers or {})}
                    for key, value in (headers or {}).items():
                        self.send_header(key, value)
                    if "content-type" not in sent:
                        self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

            def _error(self, status: int, message: str, kind: str) -> None:
                body = json.dumps({"error": {"message": message, "type": kind}}).encode()
                self._send(status, body)

            def _authorised(self) -> bool:
                if server.api_key is None:
                    return True
                if self.headers.get("Authorization") == f"Bearer {server.api_key}":
                    return True
                self._error(401, "Incorrect API key provided.", "invalid_request_error")
                return False

            def do_GET(self) -> None:
                server._record(
                    Recorded("GET", self.path, {k.lower(): v for k, v in self.headers.items()}, None)
                )
                if self.path.rstrip("/") != "/v1/models":
                    self._error(404, f"no route {self.path}", "not_found")
                    return
                if not self._authorised():
                    return
                data = {"object": "list", "data": [{"id": n, "object": "model"} for n in server.models]}
                self._send(200, json.dumps(data).encode())

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = None
                server._record(
                    Recorded("POST", self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                )
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._error(404, f"no route {self.path}", "not_found")
                    return
                if not self._authorised():
                    return
                if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
                    self._error(400, "the body must be a JSON object with messages", "invalid_request_error")
                    return
                model = body.get("model")
                script = server.models.get(model) if isinstance(model, str) else None
                if script is None:
                    self._error(404, f"The model `{model}` does not exist.", "model_not_found")
                    return
                outcome = script(body)
                reply = outcome if isinstance(outcome, Reply) else Reply(message=outcome)
                if reply.body is not None:
                    payload = reply.body
                    if isinstance(payload, dict | list):
                        payload = json.dumps(payload)
                    if isinstance(payload, str):
                        payload = payload.encode()
                    self._send(reply.status, payload, reply.headers)
                    return
                message = reply.message or {"role": "assistant", "content": ""}
                finish = reply.finish_reason or ("tool_calls" if message.get("tool_calls") else "stop")
                prompt = len(json.dumps(body.get("messages"))) // 4
                completion = len(json.dumps(message)) // 4
                usage = reply.usage or {
                    "prompt_tokens": prompt,
                    "completion_tokens": completion,
                    "total_tokens": prompt + completion,
                }
                data = {
                    "id": f"chatcmpl-{len(server.requests)}",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": model,
                    "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                    "usage": usage,
                }
                self._send(reply.status, json.dumps(data).encode(), reply.headers)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="llm-server", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> LlmServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@pytest.fixture
def llm_server() -> Iterator[LlmServer]:
    """A started :class:`LlmServer` playing :func:`standard_models` (no API key expected)."""
    with LlmServer(standard_models()) as server:
        yield server
