"""Request limits and the one error path of the web app.

Every failure a user can cause ends as the right HTTP status with one line of text: JSON
(``{"error": {"status": 400, "message": "..."}}``) under ``/api/``, the page with the message
elsewhere. A body larger than the limit is refused with 413 as soon as its declared length (or,
for a chunked body, the bytes received so far) passes the limit - it is never read whole.
"""

from __future__ import annotations

import json
import logging
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
from tabverify.server.workers import WorkerDied, WorkTimeout

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
    well-formed input but invalid, 504 past the time limit, 500 a dead worker, 400 other bad input."""
    if isinstance(exc, TableSizeError):
        return 413
    if isinstance(exc, (ProgramSyntaxError, ProgramTypeError, ProgramExecutionError, UnsafeQueryError)):
        return 422
    if isinstance(exc, WorkTimeout):
        return 504
    if isinstance(exc, WorkerDied):
        return 500
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


async def require_json(request: Request) -> None:
    """A dependency of the JSON endpoints: the body must be sent as ``application/json`` (415)."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/json":
        raise ApiError(415, f"send the body as application/json (got {kind or 'no content type'})")


class BodyLimit:
    """ASGI middleware: refuse a request body larger than ``limit`` bytes with 413, before it is
    read whole - at once when Content-Length says so, else as soon as the received bytes pass it."""

    def __init__(self, app: Callable[..., Awaitable[None]], limit: int) -> None:
        self.app = app
        self.limit = limit

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
        started = refused = False

        async def bounded_receive() -> Message:
            nonlocal received, started, refused
            if refused:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
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
