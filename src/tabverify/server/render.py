"""Server-rendered pages: one Jinja2 environment with autoescaping on, so every user string
(cells, statements, file names, document ids) reaches the page as text, never as markup."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import HTMLResponse

from tabverify.server.limits import ApiError

PAGES = (("/verify", "Verify"), ("/crosscheck", "Crosscheck"), ("/coref", "Coref"), ("/database", "Database"))
"""The navigation bar: path and title of each page (a page module registers its routes)."""


def _json_script(value: Any) -> Markup:
    """``value`` as JSON safe inside a ``<script type="application/json">`` element: ``<``, ``>``
    and ``&`` escaped, so user text can never close the element."""
    text = json.dumps(value, ensure_ascii=False)
    text = text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
    return Markup(text)


@cache
def environment() -> Environment:
    """The templates of ``tabverify/server/templates`` (HTML escaped, undefined names an error)."""
    from jinja2 import StrictUndefined

    env = Environment(
        loader=PackageLoader("tabverify.server", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["json_script"] = _json_script
    env.globals["pages"] = PAGES
    return env


def page(request: Request | None, template: str, status: int = 200, **context: Any) -> HTMLResponse:
    """Render ``template`` with ``context`` (plus ``request``, ``error`` and ``current`` defaults)."""
    context.setdefault("error", None)
    context.setdefault("current", request.url.path if request is not None else "")
    html = environment().get_template(template).render(request=request, **context)
    return HTMLResponse(html, status_code=status)


def error_page(error: ApiError, request: Request | None = None) -> HTMLResponse:
    """A page that says what went wrong in one line, with the error's status."""
    return page(request, "error.html", status=error.status, error=error.message, status_code=error.status)
