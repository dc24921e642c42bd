"""The crosscheck page and its API: upload a citing document and the cited ones, see which copied
numbers disagree with their source (the side-by-side report of ``tabverify crosscheck --html``), and
download exactly what ``tabverify crosscheck --json`` prints.

Uploads are read as text (:func:`tabverify.table.documents.read_tables_text`: no file is written),
and reading and crosschecking run in a worker process (:func:`crosscheck_work`) under the time limit.
"""

from __future__ import annotations

import base64
import json
from typing import Annotated, Any

from fastapi import APIRouter, Depends, File, Form, Request, UploadFile
from markupsafe import Markup
from starlette.responses import HTMLResponse, Response

from tabverify.crosscheck.documents import check_documents
from tabverify.crosscheck.html import REPORT_STYLE, render_sections
from tabverify.errors import TableError, TabverifyError
from tabverify.server.limits import ApiError, as_api_error, require_multipart
from tabverify.server.render import page
from tabverify.server.state import workers_of
from tabverify.server.uploads import Upload, read_upload, upload_text
from tabverify.table.documents import read_tables_text

router = APIRouter()

MAX_SOURCES = 20
"""The most source documents one request may carry."""

TargetFile = Annotated[
    UploadFile, File(description="The citing document: HTML, LaTeX, Markdown, CSV/TSV or arXiVeri paper JSON")
]
SourceFiles = Annotated[
    list[UploadFile], File(description="A cited document (repeat the field for several sources)")
]
TableNumber = Annotated[
    str, Form(description="Check only the target's N-th table (from 1); empty: every table")
]


def crosscheck_work(
    target: Upload, sources: list[Upload], table: int | None, with_html: bool
) -> dict[str, Any]:
    """Read the uploads and crosscheck them (in a worker): ``{"payload": <crosscheck --json>}`` plus,
    with ``with_html``, ``"html"``: the report's sections as a fragment."""
    target_tables = read_tables_text(upload_text(target, TableError), target[0])
    documents = [
        (source[0], read_tables_text(upload_text(source, TableError), source[0])) for source in sources
    ]
    run = check_documents(target[0], target_tables, documents, table)
    result: dict[str, Any] = {"payload": run.to_dict()}
    if with_html:
        result["html"] = render_sections(run.sections())
    return result


def _table_number(value: str) -> int | None:
    value = value.strip()
    if not value:
        return None
    if not value.isdigit() or int(value) < 1:
        raise ApiError(400, f"table {value[:20]!r}: write a table number from 1, or leave it empty")
    return int(value)


async def _run(
    request: Request, target: UploadFile, source: list[UploadFile], table: str, html: bool
) -> dict[str, Any]:
    if not source:
        raise ApiError(400, "source: upload at least one cited document")
    if len(source) > MAX_SOURCES:
        raise ApiError(413, f"{len(source)} sources: one request checks at most {MAX_SOURCES}")
    number = _table_number(table)
    uploads = [await read_upload(item, "source") for item in source]
    return await workers_of(request).run(
        crosscheck_work, await read_upload(target, "target"), uploads, number, html
    )


def payload_text(payload: dict[str, Any]) -> str:
    """The payload as ``tabverify crosscheck --json`` prints it."""
    return json.dumps(payload, ensure_ascii=False, indent=2) + "\n"


@router.get("/crosscheck", include_in_schema=False, response_class=HTMLResponse)
async def crosscheck_page(request: Request) -> Response:
    return page(request, "crosscheck.html", result=None, table="")


@router.post("/crosscheck", include_in_schema=False, response_class=HTMLResponse)
async def crosscheck_form(
    request: Request, target: TargetFile, source: SourceFiles, table: TableNumber = ""
) -> Response:
    try:
        result = await _run(request, target, source, table, html=True)
    except (ApiError, TabverifyError) as exc:
        error = as_api_error(exc)
        return page(
            request, "crosscheck.html", status=error.status, error=error.message, result=None, table=table
        )
    payload = result["payload"]
    download = base64.b64encode(payload_text(payload).encode("utf-8")).decode("ascii")
    # the fragment comes from the library's renderer, which escapes every text of the documents
    report = Markup(result["html"])
    return page(request, "crosscheck.html", result=payload, report=report, download=download, table=table)


@router.get("/crosscheck/report.css", include_in_schema=False)
async def report_style() -> Response:
    return Response(REPORT_STYLE, media_type="text/css")


@router.post(
    "/api/crosscheck",
    summary="Crosscheck a document's tables against cited documents",
    tags=["crosscheck"],
    response_description="What `tabverify crosscheck --json` prints",
    dependencies=[Depends(require_multipart)],
)
async def crosscheck_api(
    request: Request, target: TargetFile, source: SourceFiles, table: TableNumber = ""
) -> Response:
    """Multipart form: `target` (the citing document), `source` (one or more cited documents,
    repeated) and optional `table` (the target's N-th table, from 1). Formats by file name, then
    content: HTML, LaTeX, Markdown, CSV/TSV, arXiVeri paper JSON; files must be UTF-8 text.

    Answers `{"target", "discrepancies", "results": [{"target_table", "source", "source_table",
    "pairs", "discrepancies", ...}]}` as `tabverify crosscheck --json` does. 400 for an empty,
    binary or unreadable file or a document without a table, 413 for too much work, 504 past the
    time limit."""
    result = await _run(request, target, source, table, html=False)
    return Response(payload_text(result["payload"]), media_type="application/json")
