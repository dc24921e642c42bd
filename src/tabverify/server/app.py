"""The web app: FastAPI with server-rendered pages and a JSON API, a thin skin over the library.

One module per capability registers its pages and API routes (``verify``, ``crosscheck``,
``coref``, ``database``); a new capability adds a module with a ``router`` and a line in
``CAPABILITIES``. The work of a request runs in worker processes (``workers.py``) under a time limit.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import HTMLResponse, Response

import tabverify
from tabverify.errors import TabverifyError
from tabverify.server import coref, crosscheck, database, verify
from tabverify.server.limits import (
    BODY_TIMEOUT_S,
    SECURITY_HEADERS,
    ApiError,
    BodyLimit,
    Shell,
    as_api_error,
    json_error,
    wants_json,
)
from tabverify.server.render import error_page, page
from tabverify.server.settings import ServerSettings
from tabverify.server.state import settings_of
from tabverify.server.workers import Workers

CAPABILITIES = (verify, crosscheck, coref, database)
"""The modules whose ``router`` the app includes, in navigation order."""


def create_app(settings: ServerSettings | None = None) -> FastAPI:
    """The web app for ``settings`` (defaults: no databases or lakes, 10 MB uploads, 30 s per request).

    Serve it with any ASGI server (``tabverify serve`` uses uvicorn); its lifespan starts and stops
    the worker processes.
    """
    settings = settings or ServerSettings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.workers = Workers(settings.workers, settings.time_limit_s, settings.max_waiting)
        try:
            yield
        finally:
            app.state.workers.close()

    app = FastAPI(
        title="tabverify",
        version=tabverify.__version__,
        description="Check text against structured evidence: verify statements against tables, crosscheck "
        "copied numbers, score and resolve coreference. Every endpoint mirrors a CLI command's --json output.",
        docs_url=None,  # Swagger UI would load its scripts from a CDN: /api/docs is our own page
        redoc_url=None,
        openapi_url="/api/openapi.json",
        lifespan=lifespan,
    )
    app.state.settings = settings
    app.mount("/static", StaticFiles(directory=Path(__file__).parent / "static"), name="static")
    for capability in CAPABILITIES:
        app.include_router(capability.router)

    @app.get("/", include_in_schema=False, response_class=HTMLResponse)
    async def index(request: Request) -> Response:
        current = settings_of(request)
        return page(request, "index.html", databases=current.databases, lakes=current.lakes)

    @app.get("/api/docs", include_in_schema=False, response_class=HTMLResponse)
    async def api_docs(request: Request) -> Response:
        return page(request, "api_docs.html", spec=app.openapi())

    @app.get("/api/health", summary="The server is up", tags=["server"])
    async def health() -> dict[str, str]:
        return {"status": "ok", "version": tabverify.__version__}

    async def handle(request: Request, exc: Exception) -> Response:
        error = as_api_error(exc)
        response = json_error(error) if wants_json(request) else error_page(error, request)
        if isinstance(exc, StarletteHTTPException) and exc.headers:
            response.headers.update(exc.headers)  # a 405's Allow
        # a 500 is sent by Starlette's outermost middleware, past Shell: give it the headers here
        for name, value in SECURITY_HEADERS.items():
            response.headers.setdefault(name, value)
        return response

    for kind in (ApiError, TabverifyError, RequestValidationError, StarletteHTTPException, Exception):
        app.add_exception_handler(kind, handle)

    app.add_middleware(
        BodyLimit, limit=settings.max_upload_bytes, body_timeout_s=min(BODY_TIMEOUT_S, settings.time_limit_s)
    )
    app.add_middleware(Shell)  # added last: the outermost, so even BodyLimit's refusals get headers
    return app


__all__ = ["create_app"]
