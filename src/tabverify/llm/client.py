"""A small client for OpenAI-compatible chat-completion servers (OpenAI, vLLM, llama.cpp, Ollama's
``/v1``, LiteLLM, ...), standard library only.

One request is one ``POST {base_url}/chat/completions``. Connection errors, timeouts, HTTP 429 and
5xx are retried with exponential backoff and jitter (a ``Retry-After`` header is honoured); other
4xx are not. Every failure is a :class:`ChatError` (an :class:`~tabverify.errors.LlmError`) with one
actionable line and a ``kind`` saying what failed. The API key is read from an environment variable
(never a flag, never logged) and travels only in the ``Authorization`` header.
"""

from __future__ import annotations

import email.utils
import http.client
import json
import os
import random
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any

from tabverify.errors import LlmError

MAX_RESPONSE_BYTES = 8 * 1024 * 1024
"""A reply body larger than this is refused (read bounded: at most this many bytes plus one)."""

MAX_RETRY_AFTER_S = 120.0
"""A server's ``Retry-After`` is honoured up to this many seconds."""

DEFAULT_API_KEY_ENV = "TABVERIFY_LLM_API_KEY"

TOOL_CHOICE_ENV = "TABVERIFY_LLM_TOOL_CHOICE"
"""Overrides :attr:`LlmConfig.tool_choice` when set: ``auto``, ``required``, ``none``, or ``omit``
(send no ``tool_choice``)."""

TOOL_CHOICES = ("auto", "required", "none")

BASE_URL_HELP = (
    "--llm-base-url must point at an OpenAI-compatible /v1 endpoint (e.g. http://127.0.0.1:8080/v1)"
)

ERROR_KINDS = (
    "config",  # a bad base_url or argument
    "unreachable",  # connection refused, DNS failure, TLS failure (after retries)
    "timeout",  # no complete reply within timeout_s (after retries)
    "auth",  # HTTP 401/403
    "model",  # HTTP 404: the model (or the endpoint) is not on the server
    "bad_request",  # another 4xx (400 context too long, 413, 422, ...)
    "rate_limit",  # HTTP 429 after retries
    "server",  # HTTP 5xx after retries
    "protocol",  # a reply that is not a chat completion (not JSON, no choices, ...)
    "too_large",  # a reply body over MAX_RESPONSE_BYTES
)


class ChatError(LlmError):
    """An :class:`LlmError` from one request, with ``kind`` (one of :data:`ERROR_KINDS`), the HTTP
    ``status`` when there was one, and the number of ``attempts`` made."""

    def __init__(self, message: str, kind: str, status: int | None = None, attempts: int = 1):
        super().__init__(message)
        self.kind = kind
        self.status = status
        self.attempts = attempts


@dataclass(frozen=True)
class LlmConfig:
    """Where and how to reach a model.

    Attributes:
        base_url: the server's OpenAI-compatible root, e.g. ``http://127.0.0.1:8080/v1``
            (``/chat/completions`` and ``/models`` are appended).
        model: the model name sent with every request.
        api_key_env: the environment variable holding the API key; when it is unset or empty no
            ``Authorization`` header is sent.
        timeout_s: the limit for one request (connect and read).
        max_retries: retries after the first attempt on connection errors, timeouts, 429 and 5xx.
        backoff_s: the first retry waits about this long; each further retry doubles it (with
            jitter between 0.5x and 1.5x). A longer ``Retry-After`` from the server wins.
        temperature: sampling temperature.
        max_tokens: the completion token limit sent to the server (None: the server's default).
        tool_choice: sent with every request that offers tools when the caller gives none. ``auto``
            is OpenAI's default, sent explicitly because some servers act on tools only when it is
            there (llama-cpp-python's ``chatml-function-calling`` format drops the tools without it
            and the model never sees them); None sends no ``tool_choice``; a dict
            ``{"type": "function", "function": {"name": ...}}`` forces that tool on every request
            that offers tools. The ``TABVERIFY_LLM_TOOL_CHOICE`` environment variable, when set,
            overrides it (``auto``, ``required``, ``none``, or ``omit`` for None).
    """

    base_url: str
    model: str
    api_key_env: str = DEFAULT_API_KEY_ENV
    timeout_s: float = 60.0
    max_retries: int = 3
    backoff_s: float = 1.0
    temperature: float = 0.0
    max_tokens: int | None = 1024
    tool_choice: str | dict[str, Any] | None = "auto"


@dataclass(frozen=True)
class ChatReply:
    """One chat completion.

    Attributes:
        message: the assistant message as received (``role``, ``content`` as a string, "" when the
            server sent null, and ``tool_calls`` as a list of ``{id, type, function: {name,
            arguments}}`` with ``arguments`` a string), ready to be sent back in the conversation.
        finish_reason: ``stop``, ``tool_calls``, ``length``... ("" when the server gave none).
        usage: ``prompt_tokens``, ``completion_tokens``, ``total_tokens`` (0 when not given).
        elapsed_s: wall time of the request, retries and waits included.
        attempts: how many requests were sent (1 when the first one succeeded).
    """

    message: dict[str, Any]
    finish_reason: str
    usage: dict[str, int] = field(default_factory=dict)
    elapsed_s: float = 0.0
    attempts: int = 1

    @property
    def content(self) -> str:
        """The message text ("" when there is none)."""
        content = self.message.get("content")
        return content if isinstance(content, str) else ""

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        """The tool calls of the message (empty when there are none)."""
        calls = self.message.get("tool_calls")
        return calls if isinstance(calls, list) else []


def _check_config(config: LlmConfig) -> str:
    """The validated base URL without a trailing slash (ChatError kind ``config`` otherwise)."""
    url = (config.base_url or "").strip()
    parsed = urllib.parse.urlsplit(url)
    if parsed.scheme.lower() not in ("http", "https") or not parsed.netloc:
        raise ChatError(f"LLM base URL {url!r} is not an http:// or https:// URL; {BASE_URL_HELP}", "config")
    if parsed.query or parsed.fragment:
        raise ChatError(f"LLM base URL {url!r} has a query or fragment; {BASE_URL_HELP}", "config")
    if not config.model or not config.model.strip():
        raise ChatError(
            "no LLM model name given; name the model the server serves (e.g. --llm-model)", "config"
        )
    if not config.timeout_s > 0 or config.max_retries < 0 or config.backoff_s < 0:
        raise ChatError(
            f"invalid LLM client limits (timeout_s={config.timeout_s}, max_retries={config.max_retries}, "
            f"backoff_s={config.backoff_s}); timeout_s must be > 0, the others >= 0",
            "config",
        )
    return url.rstrip("/")


def _tool_choice(config: LlmConfig) -> str | dict[str, Any] | None:
    """The tool_choice to send with tools: the environment's override, else the config's
    (ChatError kind ``config`` when it is not one of :data:`TOOL_CHOICES` or a named function)."""
    value: object = os.environ.get(TOOL_CHOICE_ENV, "").strip().lower()
    where = f"the {TOOL_CHOICE_ENV} environment variable"
    if not value:
        value, where = config.tool_choice, "tool_choice"
        if value is None:
            return None
        if isinstance(value, dict):
            function = value.get("function")
            name = function.get("name") if isinstance(function, dict) else None
            if value.get("type") == "function" and isinstance(name, str) and name:
                return {"type": "function", "function": {"name": name}}
    if value == "omit":
        return None
    if value not in TOOL_CHOICES:
        raise ChatError(
            f"{where} is {value!r}; give auto, required, none, omit (send no tool_choice) or, in "
            'the config, {"type": "function", "function": {"name": ...}}',
            "config",
        )
    return str(value)


def _server_message(body: bytes) -> str:
    """The error message of an error reply (OpenAI's ``{"error": {"message": ...}}`` or the text)."""
    text = body[:4000].decode("utf-8", "replace")
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict):
        error = data.get("error", data.get("detail", data.get("message")))
        if isinstance(error, dict):
            error = error.get("message") or error
        if error:
            text = str(error)
    text = " ".join(text.split())
    return text[:300] + ("…" if len(text) > 300 else "")


def _retry_after(headers: Any) -> float | None:
    """Seconds from a ``Retry-After`` header (a number or an HTTP date), None when absent."""
    value = headers.get("Retry-After") if headers is not None else None
    if not value:
        return None
    value = str(value).strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        seconds = when.timestamp() - time.time()
    return min(max(seconds, 0.0), MAX_RETRY_AFTER_S)


def _read_bounded(response: Any, url: str) -> bytes:
    length = response.headers.get("Content-Length")
    if length and length.strip().isdigit() and int(length) > MAX_RESPONSE_BYTES:
        raise ChatError(
            f"the model server at {url} sent a reply of {int(length):,} bytes (limit "
            f"{MAX_RESPONSE_BYTES:,}); lower max_tokens",
            "too_large",
        )
    body = response.read(MAX_RESPONSE_BYTES + 1)
    if len(body) > MAX_RESPONSE_BYTES:
        raise ChatError(
            f"the model server at {url} sent a reply over {MAX_RESPONSE_BYTES:,} bytes; lower max_tokens",
            "too_large",
        )
    return body


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _normalise_tool_calls(calls: object) -> list[dict[str, Any]]:
    """Tool calls in the wire shape, ``arguments`` always a string (some servers send an object)."""
    result: list[dict[str, Any]] = []
    if not isinstance(calls, list):
        return result
    for index, call in enumerate(calls):
        if not isinstance(call, dict):
            continue
        function = call.get("function") if isinstance(call.get("function"), dict) else {}
        name = function.get("name")
        arguments = function.get("arguments", "")
        if not isinstance(arguments, str):
            try:
                arguments = json.dumps(arguments, ensure_ascii=False)
            except (TypeError, ValueError):
                arguments = str(arguments)
        call_id = call.get("id")
        result.append(
            {
                "id": call_id if isinstance(call_id, str) and call_id else f"call_{index}",
                "type": "function",
                "function": {"name": name if isinstance(name, str) else "", "arguments": arguments},
            }
        )
    return result


def parse_completion(data: object) -> tuple[dict[str, Any], str, dict[str, int]]:
    """The (message, finish_reason, usage) of a decoded chat completion; ValueError saying what is
    missing when ``data`` is not one."""
    if not isinstance(data, dict):
        raise ValueError("the reply is not a JSON object")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ValueError('the reply has no "choices"')
    message = choices[0].get("message")
    if not isinstance(message, dict):
        raise ValueError('the first choice has no "message"')
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        if isinstance(content, list):  # content parts: keep the text ones
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        else:
            raise ValueError('the message "content" is not text')
    # null content (a reply with tool calls) becomes "": the agent sends the message back, and some
    # servers refuse an assistant message whose content is null (llama-cpp-python answers HTTP 500)
    clean: dict[str, Any] = {"role": "assistant", "content": content if content is not None else ""}
    calls = _normalise_tool_calls(message.get("tool_calls"))
    if calls:
        clean["tool_calls"] = calls
    finish = choices[0].get("finish_reason")
    raw_usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    usage = {key: _int(raw_usage.get(key)) for key in ("prompt_tokens", "completion_tokens", "total_tokens")}
    if not usage["total_tokens"]:
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
    return clean, finish if isinstance(finish, str) else "", usage


class ChatClient:
    """Chat completions from one model on one OpenAI-compatible server (safe to share between
    threads: it keeps no per-request state)."""

    def __init__(self, config: LlmConfig):
        self.config = config
        self.base_url = _check_config(config)
        self.tool_choice = _tool_choice(config)
        self._sleep = time.sleep

    @property
    def model(self) -> str:
        """The model name sent with each request."""
        return self.config.model

    def _headers(self) -> dict[str, str]:
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": "tabverify",
        }
        key = os.environ.get(self.config.api_key_env, "").strip()
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        wait = self.config.backoff_s * (2 ** (attempt - 1)) * random.uniform(0.5, 1.5)
        return max(wait, retry_after or 0.0)

    def _request(self, method: str, path: str, payload: dict[str, Any] | None) -> tuple[bytes, int, float]:
        """The body of a successful reply (2xx), the attempts made and the elapsed seconds;
        ChatError after retries otherwise."""
        url = self.base_url + path
        data = None if payload is None else json.dumps(payload, ensure_ascii=False).encode("utf-8")
        started = time.monotonic()
        attempt = 0
        while True:
            attempt += 1
            request = urllib.request.Request(url, data=data, headers=self._headers(), method=method)
            retry_after: float | None = None
            try:
                with urllib.request.urlopen(request, timeout=self.config.timeout_s) as response:  # noqa: S310
                    body = _read_bounded(response, url)
                return body, attempt, time.monotonic() - started
            except ChatError as exc:
                exc.attempts = attempt
                raise
            except urllib.error.HTTPError as exc:
                status = exc.code
                try:
                    body = exc.read(64 * 1024)
                except (OSError, http.client.HTTPException):
                    body = b""
                retry_after = _retry_after(exc.headers)
                if status == 429 or status >= 500:
                    error = self._status_error(status, body, url, attempt, path)
                else:
                    raise self._status_error(status, body, url, attempt, path) from None
            except TimeoutError:
                error = self._timeout_error(url, attempt)
            except urllib.error.URLError as exc:
                reason = exc.reason
                if isinstance(reason, TimeoutError):
                    error = self._timeout_error(url, attempt)
                else:
                    text = getattr(reason, "strerror", None) or str(reason)
                    error = ChatError(
                        f"cannot reach the model server at {url} ({text}); {BASE_URL_HELP}",
                        "unreachable",
                        attempts=attempt,
                    )
            except (ConnectionError, http.client.HTTPException, OSError) as exc:
                text = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
                error = ChatError(
                    f"the connection to the model server at {url} failed ({text}); {BASE_URL_HELP}",
                    "unreachable",
                    attempts=attempt,
                )
            if attempt > self.config.max_retries:
                raise error
            self._sleep(self._backoff(attempt, retry_after))

    def _timeout_error(self, url: str, attempt: int) -> ChatError:
        plural = "s" if attempt > 1 else ""
        return ChatError(
            f"the model server at {url} gave no reply within {self.config.timeout_s:g} s ({attempt} "
            f"attempt{plural}); raise the LLM timeout or use a faster or smaller model",
            "timeout",
            attempts=attempt,
        )

    def _status_error(self, status: int, body: bytes, url: str, attempt: int, path: str) -> ChatError:
        message = _server_message(body)
        said = f": {message}" if message else ""
        if status in (401, 403):
            env = self.config.api_key_env
            has_key = bool(os.environ.get(env, "").strip())
            hint = (
                f"the key in the {env} environment variable was refused"
                if has_key
                else f"set the API key in the {env} environment variable"
            )
            return ChatError(
                f"the model server at {url} answered HTTP {status}{said}; {hint}", "auth", status, attempt
            )
        if status == 404:
            if path != "/chat/completions":
                return ChatError(f"HTTP 404 for {url}{said}; {BASE_URL_HELP}", "model", status, attempt)
            return ChatError(self._not_found(url, message), "model", status, attempt)
        if status == 429:
            return ChatError(
                f"the model server at {url} kept answering HTTP 429 (rate limited) after {attempt} "
                f"attempts{said}; "
                "slow down (fewer workers) or raise the retries",
                "rate_limit",
                status,
                attempt,
            )
        if status >= 500:
            return ChatError(
                f"the model server at {url} answered HTTP {status} after {attempt} attempt"
                f"{'s' if attempt > 1 else ''}{said}",
                "server",
                status,
                attempt,
            )
        message = f"the model server at {url} refused the request with HTTP {status}{said}"
        return ChatError(message, "bad_request", status, attempt)

    def _not_found(self, url: str, message: str) -> str:
        model = self.config.model
        try:
            available = self.models()
        except LlmError:
            available = None
        if available is not None and model not in available:
            shown = ", ".join(available[:20]) + (", ..." if len(available) > 20 else "")
            return f"model {model!r} is not on the server at {self.base_url} (it has: {shown or 'none'})"
        said = f" ({message})" if message else ""
        if available is not None:
            return f"the model server answered HTTP 404 for {url}{said}; {BASE_URL_HELP}"
        return f"HTTP 404 for {url}{said}: model {model!r} or the endpoint is unknown; {BASE_URL_HELP}"

    def chat(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        tool_choice: str | dict[str, Any] | None = None,
    ) -> ChatReply:
        """One chat completion for ``messages`` (OpenAI wire format), offering ``tools`` when given
        (with ``tool_choice``, else the client's :attr:`LlmConfig.tool_choice`).

        Raises :class:`ChatError` (an LlmError) when the server cannot be reached, refuses the
        request, does not answer in time after the retries, or answers with something that is not a
        chat completion."""
        payload: dict[str, Any] = {
            "model": self.config.model,
            "messages": messages,
            "temperature": self.config.temperature,
        }
        if self.config.max_tokens is not None:
            payload["max_tokens"] = self.config.max_tokens
        if tools:
            payload["tools"] = tools
            tool_choice = tool_choice if tool_choice is not None else self.tool_choice
            if tool_choice is not None:
                payload["tool_choice"] = tool_choice
        body, attempts, elapsed = self._request("POST", "/chat/completions", payload)
        url = self.base_url + "/chat/completions"
        try:
            data = json.loads(body.decode("utf-8"))
            message, finish, usage = parse_completion(data)
        except (UnicodeDecodeError, ValueError) as exc:
            reason = str(exc) if not isinstance(exc, json.JSONDecodeError) else "the reply is not JSON"
            raise ChatError(
                f"the server at {url} answered with something that is not a chat completion ({reason}); "
                f"{BASE_URL_HELP}",
                "protocol",
                attempts=attempts,
            ) from None
        return ChatReply(message, finish, usage, elapsed, attempts)

    def models(self) -> list[str]:
        """The model names the server lists at ``GET {base_url}/models`` (ChatError when it cannot)."""
        body, attempts, _ = self._request("GET", "/models", None)
        try:
            data = json.loads(body.decode("utf-8"))
            entries = data["data"] if isinstance(data, dict) else data
            names = [str(e["id"]) if isinstance(e, dict) else str(e) for e in entries]
        except (UnicodeDecodeError, ValueError, KeyError, TypeError):
            raise ChatError(
                f"the server at {self.base_url}/models did not answer with a model list; {BASE_URL_HELP}",
                "protocol",
                attempts=attempts,
            ) from None
        return names
