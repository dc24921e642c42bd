"""Request limits and the one error path of the web app.

Every failure a user can cause ends as the right HTTP status with one line of text: JSON
(``{"error": {"status": 400, "message": "..."}}``) under ``/api/``, the page with the message
elsewhere. A body larger than the limit is refused with 413 as soon as its declared length (or,
for a chunked body, the bytes received so far) passes the limit - it is never read whole.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from tabverify.errors import (
    DatabaseError,
    LakeError,
    ProgramExecutionError,
    ProgramSyntaxError,
    ProgramTypeError,
    TableSizeError,
    TabverifyError,
    UnsafeQueryError,
)
from tabverify.server.workers import ServerBusy, WorkerDied, WorkTimeout

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

log = logging.getLogger("tabverify.server")


class ApiError(Exception):
    """A request the app refuses: an HTTP status and a one-line message for the user."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = " ".join(message.split())


def status_of(exc: TabverifyError) -> int:
    """The HTTP status for an error of the library: 413 too large, 422 a program or query that is
    well-formed input but invalid, 504 past the time limit, 503 too many requests waiting, 500 a
    dead worker, 400 other bad input."""
    if isinstance(exc, TableSizeError):
        return 413
    if isinstance(exc, (ProgramSyntaxError, ProgramTypeError, ProgramExecutionError, UnsafeQueryError)):
        return 422
    if isinstance(exc, WorkTimeout):
        return 504
    if isinstance(exc, WorkerDied):
        return 500
    if isinstance(exc, ServerBusy):
        return 503
    if isinstance(exc, (DatabaseError, LakeError)):
        return 400
    return 400


def as_api_error(exc: BaseException) -> ApiError:
    """Any exception as an ``ApiError``: the library's own errors keep their message; anything else
    is a bug, logged with its traceback and answered with a generic 500."""
    if isinstance(exc, ApiError):
        return exc
    if isinstance(exc, TabverifyError):
        return ApiError(status_of(exc), str(exc))
    if isinstance(exc, StarletteHTTPException):
        return ApiError(exc.status_code, str(exc.detail))
    if isinstance(exc, RequestValidationError):
        return _validation_error(exc)
    if isinstance(exc, RecursionError):
        return ApiError(400, "the input is nested too deeply")
    log.error("internal error", exc_info=exc)
    return ApiError(
        500, f"internal error ({type(exc).__name__}); the server keeps running - please report it"
    )


def _validation_error(exc: RequestValidationError) -> ApiError:
    errors = exc.errors()
    for error in errors:
        if error.get("type") == "json_invalid":
            return ApiError(
                400, f"malformed JSON body: {error.get('ctx', {}).get('error', 'not valid JSON')}"
            )
        if error.get("type") == "missing" and tuple(error.get("loc", ())) == ("body",):
            return ApiError(400, "the request body is empty; send a JSON object")
    parts = []
    for error in errors[:3]:
        where = ".".join(str(p) for p in error.get("loc", ()) if p != "body") or "body"
        parts.append(f"{where}: {error.get('msg', 'invalid')}")
    return ApiError(422, "invalid request: " + "; ".join(parts))


def json_error(error: ApiError) -> Response:
    """The API's error response."""
    body = {"error": {"status": error.status, "message": error.message}}
    return Response(
        json.dumps(body, ensure_ascii=False), status_code=error.status, media_type="application/json"
    )


def wants_json(request: Request) -> bool:
    """API routes answer errors in JSON; pages answer with a page."""
    return request.url.path.startswith("/api/")


def _content_type(request: Request) -> str:
    return request.headers.get("content-type", "").split(";")[0].strip().lower()


_LONE_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")


def _has_lone_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return False
    if isinstance(value, dict):
        return any(_has_lone_surrogate(k) or _has_lone_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_lone_surrogate(v) for v in value)
    return False


async def require_json(request: Request) -> None:
    """A dependency of the JSON endpoints: the body must be sent as ``application/json`` (415) and
    hold only Unicode text (an unpaired surrogate escape such as ``\\ud800`` is not: 422)."""
    kind = _content_type(request)
    if kind != "application/json":
        raise ApiError(415, f"send the body as application/json (got {kind or 'no content type'})")
    body = await request.body()
    if _LONE_SURROGATE.search(body):  # a surrogate escape at all: only then is a second parse needed
        try:
            parsed = json.loads(body)
        except (ValueError, RecursionError):
            return  # the body's own validation says what is wrong with it
        if _has_lone_surrogate(parsed):
            raise ApiError(
                422, "the body holds an unpaired surrogate escape (such as \\ud800): not Unicode text"
            )


async def require_multipart(request: Request) -> None:
    """A dependency of the upload endpoints: the body must be ``multipart/form-data`` (415)."""
    kind = _content_type(request)
    if kind != "multipart/form-data":
        raise ApiError(415, f"send the files as multipart/form-data (got {kind or 'no content type'})")


SECURITY_HEADERS = {
    # no inline or foreign script can run, whatever reaches a page; styles may be inline (the
    # reports colour cells with style attributes)
    "content-security-policy": "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; frame-ancestors 'self'; form-action 'self'; base-uri 'none'",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "SAMEORIGIN",
}
"""Headers every response carries (:class:`Shell` adds them)."""

_HEADER_PAIRS = [(name.encode(), value.encode()) for name, value in SECURITY_HEADERS.items()]


class Shell:
    """The outermost ASGI middleware: every response carries :data:`SECURITY_HEADERS` (the 413 of
    :class:`BodyLimit` included), and ``HEAD`` is answered as ``GET`` without the body."""

    def __init__(self, app: Callable[..., Awaitable[None]]) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        head = scope.get("method") == "HEAD"
        if head:
            scope = {**scope, "method": "GET"}

        async def shell_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                present = {bytes(name).lower() for name, _ in message.get("headers", [])}
                extra = [(n, v) for n, v in _HEADER_PAIRS if n not in present]
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            elif message["type"] == "http.response.body" and head:
                message = {**message, "body": b""}
            await send(message)

        await self.app(scope, receive, shell_send)


BODY_TIMEOUT_S = 30.0
"""A client that stops sending its body for this long (or the time limit, if shorter) gets 408."""

HEADER_TIMEOUT_S = 10.0
"""A connection whose request headers have not arrived within this time (or the time limit, if
shorter) is closed (:func:`protocol_with_header_deadline`)."""


class BodyLimit:
    """ASGI middleware: refuse a request body larger than ``limit`` bytes with 413, before it is
    read whole - at once when Content-Length says so, else as soon as the received bytes pass it;
    and a body that stops arriving for ``body_timeout_s`` with 408."""

    def __init__(
        self, app: Callable[..., Awaitable[None]], limit: int, body_timeout_s: float = BODY_TIMEOUT_S
    ) -> None:
        self.app = app
        self.limit = limit
        self.body_timeout_s = body_timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        declared = headers.get(b"content-length")
        too_large = ApiError(
            413, f"the request body is larger than the server's limit of {_size(self.limit)}"
        )
        if declared is not None:
            try:
                length = int(declared)
            except ValueError:
                await self._refuse(scope, send, ApiError(400, "the Content-Length header is not a number"))
                return
            if length > self.limit:
                await self._refuse(scope, send, too_large)
                return
        received = 0
        started = refused = body_done = False
        too_slow = ApiError(
            408, f"the request body stopped arriving for {self.body_timeout_s:g} s; send it again"
        )

        async def bounded_receive() -> Message:
            nonlocal received, started, refused, body_done
            if refused:
                return {"type": "http.disconnect"}
            if body_done:
                return await receive()  # after the body only a disconnect can come: no time limit
            try:
                message = await asyncio.wait_for(receive(), self.body_timeout_s)
            except TimeoutError:
                refused = True
                if not started:
                    started = True
                    await self._refuse(scope, send, too_slow)
                return {"type": "http.disconnect"}
            if message["type"] == "http.request":
                body_done = not message.get("more_body", False)
                received += len(message.get("body", b""))
                if received > self.limit:
                    # answer now and tell the app the client left, so it stops reading; whatever the
                    # app answers to that is dropped
                    refused = True
                    if not started:
                        started = True
                        await self._refuse(scope, send, too_large)
                    return {"type": "http.disconnect"}
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if refused:
                return
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        await self.app(scope, bounded_receive, tracking_send)

    async def _refuse(self, scope: Scope, send: Send, error: ApiError) -> None:
        path = scope.get("path", "")
        if path.startswith("/api/"):
            response = json_error(error)
        else:
            from tabverify.server.render import error_page

            response = error_page(error)
        # the client may still be sending: tell it the connection closes, never wait for the rest
        response.headers["connection"] = "close"
        await response(scope, _no_body, send)


async def _no_body() -> Message:
    return {"type": "http.disconnect"}


def _size(limit: int) -> str:
    if limit >= 1024 * 1024:
        return f"{limit / (1024 * 1024):.3g} MB"
    if limit >= 1024:
        return f"{limit / 1024:.3g} KB"
    return f"{limit} bytes"


def protocol_with_header_deadline(seconds: float) -> type:
    """uvicorn's HTTP/1.1 protocol (h11) with a deadline on each request's headers: a connection whose
    request line and headers have not all arrived ``seconds`` after it opened (or after its previous
    response) is closed. uvicorn has no such deadline, so half-sent headers (slowloris) would hold a
    connection - and a place under ``limit_concurrency`` - for ever."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class HeaderDeadlineProtocol(H11Protocol):
        _deadline: asyncio.TimerHandle | None = None

        def _arm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
            self._deadline = self.loop.call_later(seconds, self._headers_too_slow)

        def _headers_too_slow(self) -> None:
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                self.transport.close()

        def connection_made(self, transport: Any) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
            super().connection_lost(exc)

    return HeaderDeadlineProtocol
