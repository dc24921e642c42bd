"""What a route handler reads from the running app: its settings and its worker pool, bound to the
request so that work whose client has gone away is stopped."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import suppress
from typing import Any, TypeVar

from starlette.requests import Request

from tabverify.server.limits import ApiError
from tabverify.server.settings import ServerSettings
from tabverify.server.workers import Workers

T = TypeVar("T")

DISCONNECT_POLL_S = 0.25
"""How often a request waiting for its work checks that its client is still connected."""


def settings_of(request: Request) -> ServerSettings:
    """The settings the server was started with."""
    return request.app.state.settings


class RequestWorkers:
    """The worker pool as one request uses it: ``run`` stops the work when the client disconnects
    (neither uvicorn nor Starlette cancels a handler whose client left, so a runaway would otherwise
    keep a worker busy for the rest of the time limit)."""

    def __init__(self, workers: Workers, request: Request) -> None:
        self.workers = workers
        self.request = request

    async def run(self, function: Callable[..., T], *args: Any) -> T:
        """``Workers.run(function, *args)``, given up (and its worker freed) when the client leaves."""
        task = asyncio.ensure_future(self.workers.run(function, *args))
        while True:
            done, _ = await asyncio.wait({task}, timeout=DISCONNECT_POLL_S)
            if done:
                return task.result()
            if await self.request.is_disconnected():
                task.cancel()
                with suppress(asyncio.CancelledError):
                    await task
                raise ApiError(499, "the client closed the connection before the answer was ready")


def workers_of(request: Request) -> RequestWorkers:
    """The worker pool that runs a request's work (with the time limit), bound to the request."""
    return RequestWorkers(request.app.state.workers, request)
