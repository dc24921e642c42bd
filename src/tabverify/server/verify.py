"""The verify page and its API: statements checked against a pasted or uploaded table (CSV, TSV,
JSON, HTML, Markdown, LaTeX) or a table of a database named at start-up, with each verdict's
program, its evidence cells highlighted, its runners-up, and a program box that re-runs on the table.

The route handlers only read requests and render pages; reading the table, verifying and running
programs happen in the worker processes (:func:`check_work`, :func:`run_work`), under the server's
time limit. ``POST /api/check`` answers exactly what ``tabverify check --json`` prints.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, Field, StringConstraints, model_validator
from starlette.datastructures import FormData, UploadFile
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import HTMLResponse, Response

from tabverify.database import connect
from tabverify.errors import TableError, TabverifyError
from tabverify.program.database_table import DatabaseTable, open_table
from tabverify.program.execute import execute
from tabverify.program.tree import AllRows, parse_program
from tabverify.server.limits import ApiError, as_api_error, require_json
from tabverify.server.render import page
from tabverify.server.state import settings_of, workers_of
from tabverify.table import Table, read_table_text, table_from_json
from tabverify.table.readers import MAX_TABLE_CELLS, MAX_TABLE_COLUMNS
from tabverify.verify import TableVerifier
from tabverify.verify.verdict import result_text

router = APIRouter()

MAX_STATEMENT_CHARS = 1_000
"""The longest statement a request may carry."""
MAX_PROGRAM_CHARS = 4_000
"""The longest program a request may carry."""
MAX_NAME_CHARS = 200
"""The longest database or table name a request may carry."""
ROWS_SHOWN = 30
"""The page shows a table's first rows, plus every row that holds evidence."""
FORMATS = ("auto", "csv", "tsv", "json", "html", "markdown", "latex")
"""The table formats the page and the API read (``auto``: by file name, then by content)."""
KEEP_TEXT_BYTES = 500_000
"""An uploaded table up to this size is put back into the page's text box, so a re-run (which
sends the form again) has it; Starlette refuses a text field over 1 MB, and a browser sends the
box's line ends as two bytes each."""

Cell = str | int | float | bool | None
Statement = Annotated[str, StringConstraints(min_length=1, max_length=MAX_STATEMENT_CHARS)]
Name = Annotated[str, StringConstraints(min_length=1, max_length=MAX_NAME_CHARS)]


class TableBody(BaseModel):
    """A table as JSON: the header, rows of cells (text, numbers, booleans or null) and a caption."""

    header: list[Cell] = Field(max_length=MAX_TABLE_COLUMNS)
    rows: list[Annotated[list[Cell], Field(max_length=MAX_TABLE_COLUMNS)]] = Field(max_length=MAX_TABLE_CELLS)
    caption: str = Field("", max_length=MAX_STATEMENT_CHARS)


class TableSource(BaseModel):
    """Where the table comes from: exactly one of ``table``, ``csv``, ``text`` (with ``format`` and,
    for a document holding several tables, ``number``) or ``database`` with ``table_name``."""

    table: TableBody | None = None
    csv: str | None = Field(None, description="A CSV table, first line the header")
    text: str | None = Field(None, description="A table in any of the formats of `format`")
    format: Literal["auto", "csv", "tsv", "json", "html", "markdown", "latex"] = "auto"
    number: int = Field(1, ge=1, le=1000, description="Which table of a document holding several")
    database: Name | None = Field(None, description="A database named when the server started")
    table_name: Name | None = Field(None, description="A table of that database")

    @model_validator(mode="after")
    def _one_source(self) -> TableSource:
        given = [
            self.table is not None,
            self.csv is not None,
            self.text is not None,
            self.database is not None,
        ]
        if sum(given) != 1:
            raise ValueError("give exactly one of table, csv, text or database (with table_name)")
        if (self.database is None) != (self.table_name is None):
            raise ValueError("database and table_name go together")
        return self


class CheckRequest(TableSource):
    """Statements to check against a table."""

    statements: list[Statement] = Field(min_length=1, max_length=10_000)


class ProgramRequest(TableSource):
    """A program to run on a table."""

    program: str = Field(min_length=1, max_length=MAX_PROGRAM_CHARS)


# ---- the work, in worker processes ------------------------------------------------------------


@cache
def _verifier() -> TableVerifier:
    """One verifier per worker process: loading its models once, not per request."""
    return TableVerifier()


def _open(source: dict[str, Any], database: Any = None) -> tuple[Table | DatabaseTable, str]:
    """The table a source names (see :func:`source_of`) and a note for the user ("" when none).

    ``database``: the open database of a ``database`` source.
    """
    if source["kind"] == "database":
        return open_table(database, source["table_name"]), ""
    if source["kind"] == "table":
        return table_from_json(source["data"], source="table", name="table"), ""
    text = source["text"]
    name = source["name"]
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise TableError(f"{name}: not UTF-8 text; save the table as UTF-8") from None
    table, count = read_table_text(text, source["format"], name, source["number"])
    note = f"the document holds {count} tables; this is table {source['number']}" if count > 1 else ""
    return table, note


def _with_table(source: dict[str, Any], work: Any) -> dict[str, Any]:
    """``work(table, note)`` on the source's table (a database opened read-only for it and closed).
    A database is named by its configured name in the answer and in errors, never by its path."""
    if source["kind"] != "database":
        return work(*_open(source))
    target, name = source["target"], source["name"]
    try:
        with connect(target) as database:
            result = work(*_open(source, database))
    except TabverifyError as exc:
        raise type(exc)(str(exc).replace(target, name)) from None
    escaped = json.dumps(target)[1:-1]
    return json.loads(json.dumps(result).replace(escaped, json.dumps(name)[1:-1]))


def _view(table: Table | DatabaseTable, evidence_rows: set[int], limit: int) -> dict[str, Any]:
    """What the page shows of a table: its header and its first ``limit`` rows plus every evidence
    row, each as ``[row id, label, cell texts]`` (row id: the 0-based data row, or a database row's
    key), and how many rows are not shown."""
    if isinstance(table, Table):
        shown = [r for r in range(table.n_rows) if r < limit or r in evidence_rows]
        rows = [[r, str(r + 1), [cell.text for cell in table.rows[r]]] for r in shown]
    else:
        keys = sorted(set(table.first_keys(AllRows(), limit)) | evidence_rows)
        texts = table.row_texts(keys)
        rows = [[k, str(k), texts[k]] for k in keys]
    return {
        "header": list(table.header),
        "caption": table.caption if isinstance(table, Table) else "",
        "rows": rows,
        "hidden": max(0, table.n_rows - len(rows)),
    }


def check_work(source: dict[str, Any], statements: list[str], view: bool) -> dict[str, Any]:
    """Verify ``statements`` against the source's table (in a worker): ``{"table", "verdicts"}``
    as ``tabverify check --json`` prints, plus ``view`` (what the page shows of the table, when
    asked for), ``note`` and ``text`` (the text of an uploaded table, to keep in the form)."""

    def work(table: Table | DatabaseTable, note: str) -> dict[str, Any]:
        verdicts = [_verifier().verify(statement, table).to_dict() for statement in statements]
        result: dict[str, Any] = {"table": source["label"], "verdicts": verdicts}
        if view:
            rows = {cell["row"] for verdict in verdicts for cell in verdict["evidence"]}
            result["extra"] = {"view": _view(table, rows, ROWS_SHOWN), "note": note, "text": _kept(source)}
        return result

    return _with_table(source, work)


def run_work(source: dict[str, Any], program: str, view: bool) -> dict[str, Any]:
    """Run ``program`` on the source's table (in a worker): ``program`` (as parsed), ``value`` (as
    JSON holds it), ``display``, ``evidence`` cells, and ``sql`` on a database table; ``extra``
    as in :func:`check_work` when ``view``.

    Raises:
        ProgramSyntaxError / ProgramTypeError / ProgramExecutionError: the program does not parse,
            does not type-check, or cannot run on the table (HTTP 422).
    """
    parsed = parse_program(program)

    def work(table: Table | DatabaseTable, note: str) -> dict[str, Any]:
        result: dict[str, Any] = {"program": str(parsed)}
        if isinstance(table, Table):
            execution = execute(parsed, table)
            result.update(value=execution.json, display=execution.display, evidence=execution.evidence)
        else:
            value, evidence, sql = table.evidence(parsed)
            result.update(value=value, display=result_text(value), evidence=evidence, sql=sql)  # type: ignore[arg-type]
        cells = sorted(result["evidence"], key=lambda ref: (ref.row, ref.column))
        result["evidence"] = [{"row": ref.row, "column": ref.column} for ref in cells]
        if view:
            rows = {ref["row"] for ref in result["evidence"]}
            result["extra"] = {"view": _view(table, rows, ROWS_SHOWN), "note": note, "text": _kept(source)}
        return result

    return _with_table(source, work)


def _kept(source: dict[str, Any]) -> str | None:
    """The text of an uploaded table for the page's text box (None when it is too large or not text)."""
    text = source.get("text")
    if isinstance(text, bytes) and len(text) <= KEEP_TEXT_BYTES:
        try:
            return text.decode("utf-8-sig")
        except UnicodeDecodeError:
            return None
    return None


# ---- requests to sources ------------------------------------------------------------------------


def source_of(body: TableSource, request: Request) -> dict[str, Any]:
    """The plain-data description of a request's table that a worker opens: a configured database
    is looked up by name here (a user never names a server-side path)."""
    if body.database is not None:
        return _database_source(request, body.database, body.table_name or "")
    if body.table is not None:
        return {"kind": "table", "data": body.table.model_dump(), "label": "table"}
    if body.csv is not None:
        return _text_source(body.csv, "csv", 1, "csv")
    return _text_source(body.text or "", body.format, body.number, "text")


def _text_source(text: str | bytes, fmt: str, number: int, name: str) -> dict[str, Any]:
    return {"kind": "text", "text": text, "format": fmt, "number": number, "name": name, "label": name}


def _database_source(request: Request, name: str, table_name: str) -> dict[str, Any]:
    databases = settings_of(request).databases
    if name not in databases:
        known = ", ".join(sorted(databases)) or "none (start the server with --db)"
        raise ApiError(400, f"no database named {name!r}; the server's databases: {known}")
    if not table_name.strip():
        raise ApiError(400, f"name a table of the database {name!r}")
    return {
        "kind": "database",
        "name": name,
        "target": databases[name],
        "table_name": table_name,
        "label": f"{name} : {table_name}",
    }


def _check_statements(statements: list[str], request: Request) -> None:
    limit = settings_of(request).max_statements
    if len(statements) > limit:
        raise ApiError(422, f"{len(statements)} statements; a request may carry at most {limit}")


# ---- the API --------------------------------------------------------------------------------------


@router.post(
    "/api/check",
    tags=["verify"],
    summary="Verify statements against a table",
    description="The table is given as JSON (`table`: header, rows, caption), as CSV (`csv`), as text in "
    "any format (`text` with `format`: CSV, TSV, JSON, HTML, Markdown or LaTeX; `number` picks a table "
    "of a document), or as `database` + `table_name` of a database named when the server started. "
    "Answers what `tabverify check --json` prints: `{table, verdicts}`, each verdict with label, "
    "confidence, program, result, evidence cells, runner-up programs and, on a database, its SQL. "
    "400: a table that cannot be read; 422: an invalid request or too many statements; 504: past "
    "the time limit.",
    dependencies=[Depends(require_json)],
)
async def api_check(body: CheckRequest, request: Request) -> dict[str, Any]:
    """Verify the statements of a JSON request."""
    _check_statements(body.statements, request)
    source = source_of(body, request)
    return await workers_of(request).run(check_work, source, body.statements, False)


@router.post(
    "/api/program/run",
    tags=["verify"],
    summary="Run a program on a table",
    description="Runs a program in the TabFact brace syntax (e.g. `count{filter_eq{all_rows; opponent; "
    "dayton rivers}}`) on a table given as for `/api/check`. Answers the program as parsed, its value "
    "(as JSON), how it reads (`display`), the evidence cells it read (`row`: the 0-based data row, or "
    "a database row's key; `column`) and, on a database table, the SQL it ran. 422: a program that "
    "does not parse, does not type-check or cannot run on the table.",
    dependencies=[Depends(require_json)],
)
async def api_program_run(body: ProgramRequest, request: Request) -> dict[str, Any]:
    """Run the program of a JSON request."""
    return await workers_of(request).run(run_work, source_of(body, request), body.program, False)


# ---- the page -------------------------------------------------------------------------------------


async def _table_names(request: Request) -> dict[str, list[str]]:
    """The tables of each configured database, for the table picker (none when listing them fails:
    the form still takes a typed name)."""
    from tabverify.server.database import database_tables

    databases = settings_of(request).databases
    if not databases:
        return {}
    try:
        return await workers_of(request).run(database_tables, dict(databases))
    except TabverifyError:
        return {}


async def _form_page(
    request: Request, form: dict[str, Any], status: int = 200, **context: Any
) -> HTMLResponse:
    settings = settings_of(request)
    return page(
        request,
        "verify.html",
        status=status,
        form=form,
        formats=FORMATS,
        databases=sorted(settings.databases),
        tables=await _table_names(request),
        max_statements=settings.max_statements,
        result_text=result_text,
        **context,
    )


EMPTY_FORM = {"text": "", "format": "auto", "number": "1", "database": "", "table_name": "", "statements": ""}


@router.get("/verify", include_in_schema=False, response_class=HTMLResponse)
async def verify_page(request: Request) -> Response:
    """The form: a table (pasted, uploaded or from a database) and statements."""
    return await _form_page(request, dict(EMPTY_FORM))


@router.post("/verify", include_in_schema=False, response_class=HTMLResponse)
async def verify_submit(request: Request) -> Response:
    """Check the statements of the form (or, with ``rerun``, run one edited program) and show the
    verdicts on the page; a bad table or statement is one line on the page, the input kept."""
    fields = dict(EMPTY_FORM)
    try:
        try:
            # a pasted table may be as large as an uploaded one (Starlette's own cap is 1 MB a field)
            data = await request.form(max_part_size=settings_of(request).max_upload_bytes)
        except StarletteHTTPException as exc:  # a malformed or oversized form
            raise ApiError(
                exc.status_code, f"the form could not be read ({exc.detail}); upload a large table as a file"
            ) from None
        fields.update({k: v for k, v in data.items() if isinstance(v, str) and k in EMPTY_FORM})
        source = await _form_source(request, data, fields)
        if data.get("rerun") is not None:
            return await _rerun(request, data, fields, source)
        statements = [line.strip() for line in fields["statements"].splitlines() if line.strip()]
        if not statements:
            raise ApiError(400, "give at least one statement, one a line")
        long = next((s for s in statements if len(s) > MAX_STATEMENT_CHARS), None)
        if long is not None:
            raise ApiError(400, f"a statement is {len(long):,} characters; at most {MAX_STATEMENT_CHARS:,}")
        _check_statements(statements, request)
        result = await workers_of(request).run(check_work, source, statements, True)
    except (ApiError, TabverifyError) as exc:
        error = as_api_error(exc)
        return await _form_page(request, fields, error.status, error=error.message)
    extra = result.pop("extra")
    _keep_text(fields, extra, source)
    marks = [{(c["row"], c["column"]) for c in verdict["evidence"]} for verdict in result["verdicts"]]
    return await _form_page(
        request, fields, result=result, view=extra["view"], note=extra["note"], marks=marks
    )


async def _rerun(
    request: Request, data: FormData, fields: dict[str, str], source: dict[str, Any]
) -> Response:
    """Run the program of the box whose button was pressed (``rerun`` is its index)."""
    programs = [p for p in data.getlist("program") if isinstance(p, str)]
    index = str(data.get("rerun"))
    if not index.isdigit() or int(index) >= len(programs):
        raise ApiError(400, "the form names no program box to run")
    program = programs[int(index)]
    if not program.strip():
        raise ApiError(422, "the program box is empty; write a program, e.g. count{all_rows}")
    if len(program) > MAX_PROGRAM_CHARS:
        raise ApiError(422, f"the program is {len(program):,} characters; at most {MAX_PROGRAM_CHARS:,}")
    run = await workers_of(request).run(run_work, source, program, True)
    extra = run.pop("extra")
    _keep_text(fields, extra, source)
    marks = {(c["row"], c["column"]) for c in run["evidence"]}
    return await _form_page(request, fields, run=run, view=extra["view"], note=extra["note"], run_marks=marks)


def _keep_text(fields: dict[str, str], extra: dict[str, Any], source: dict[str, Any]) -> None:
    """Put an uploaded table's text into the form's text box, or say why it is not there."""
    if extra.get("text") is not None:
        fields["text"] = extra["text"]
    elif isinstance(source.get("text"), bytes):
        kept = f"the uploaded table is larger than {KEEP_TEXT_BYTES:,} bytes, too large to keep in the form: "
        extra["note"] = " ".join(filter(None, [extra["note"], kept + "upload it again to run a program"]))


async def _form_source(request: Request, data: FormData, fields: dict[str, str]) -> dict[str, Any]:
    """The table of the form: a database table when one is picked, else the uploaded file, else the
    pasted text."""
    fmt = fields["format"] if fields["format"] in FORMATS else "auto"
    number = int(fields["number"]) if fields["number"].strip().isdigit() else 1
    if fields["database"]:
        return _database_source(request, fields["database"], fields["table_name"])
    upload = data.get("file")
    if isinstance(upload, UploadFile) and upload.filename:
        content = await upload.read()
        if not content.strip():
            raise ApiError(400, f"{upload.filename}: the uploaded file is empty")
        return _text_source(content, fmt, max(1, number), upload.filename)
    if fields["text"].strip():
        return _text_source(fields["text"], fmt, max(1, number), "pasted table")
    raise ApiError(400, "paste a table, upload a table file, or pick a database table")
