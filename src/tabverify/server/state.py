"""What a route handler reads from the running app: its settings and its worker pool."""

from __future__ import annotations

from starlette.requests import Request

from tabverify.server.settings import ServerSettings
from tabverify.server.workers import Workers


def settings_of(request: Request) -> ServerSettings:
    """The settings the server was started with."""
    return request.app.state.settings


def workers_of(request: Request) -> Workers:
    """The worker pool that runs a request's work (with the time limit)."""
    return request.app.state.workers
