"""The database page and its API routes: the databases and lakes named at start-up (``serve --db``,
``--lake``), reached by name only - a request never names a server-side path.

Per database: its schema (with the BIRD column descriptions when the database has them), one
read-only query through the safe query layer, and claims against the whole database (the offline
ClaimDB path of ``check --db TARGET CLAIM``). Per lake: text search and claims checked against the
lake's best tables. Every JSON answer is the record the matching CLI command prints with ``--json``
(``sql``, ``sql --schema``, ``check --db``, ``lake search``, ``check --lake``), except that the
database or lake is named by its configured name wherever the CLI prints its path (the server's file
layout is never shown), and a lake verdict also carries its table's caption (``evidence_caption``).
The work runs in the worker processes, which keep the databases and lakes they opened.
"""

from __future__ import annotations

from functools import cache
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Form, Request
from pydantic import BaseModel, ConfigDict, Field
from starlette.responses import HTMLResponse, Response

from tabverify.server.limits import ApiError, require_json
from tabverify.server.render import page
from tabverify.server.state import settings_of, workers_of

router = APIRouter()

MAX_SQL_CHARS = 100_000
MAX_QUERY_ROWS = 1000
"""Rows one query may return to a browser or client (the page shows them all)."""
MAX_QUERY_BYTES = 2_000_000
QUERY_TIMEOUT_S = 10.0
"""A query's own limit; kept below the server's time limit so the query layer stops it first and
the user reads its message (narrow the query) instead of a bare 504."""
MAX_CLAIM_CHARS = 20_000
MAX_SEARCH_CHARS = 2_000
MAX_K = 100
ENCODERS = ("auto", "minilm", "hashing")
"""The NOT ENOUGH INFO detector's encoders (``check --db --encoder``)."""


Claim = Annotated[str, Field(min_length=1, max_length=MAX_CLAIM_CHARS)]


class QueryBody(BaseModel):
    """One read-only SQL query (SELECT ...) and how many rows to return."""

    model_config = ConfigDict(extra="forbid")
    sql: Annotated[str, Field(min_length=1, max_length=MAX_SQL_CHARS)]
    max_rows: int = Field(100, ge=1, le=MAX_QUERY_ROWS)


class ClaimsBody(BaseModel):
    """Claims against the whole database, with ``check --db``'s ``--encoder`` and ``--extra-info``."""

    model_config = ConfigDict(extra="forbid")
    claims: list[Claim] = Field(min_length=1)
    encoder: Literal["auto", "minilm", "hashing"] = "auto"
    extra_info: Annotated[str, Field(max_length=MAX_CLAIM_CHARS)] = ""


class SearchBody(BaseModel):
    """A text search of a lake: the ``k`` best tables, by vectors or (``keywords``) BM25."""

    model_config = ConfigDict(extra="forbid")
    query: Annotated[str, Field(min_length=1, max_length=MAX_SEARCH_CHARS)]
    k: int = Field(10, ge=1, le=MAX_K)
    keywords: bool = False


class StatementsBody(BaseModel):
    """Statements checked against a lake's best tables."""

    model_config = ConfigDict(extra="forbid")
    statements: list[Claim] = Field(min_length=1)


# ---- the work, in the worker processes (module-level functions, plain arguments and results) -------


@cache
def _database(target: str) -> Any:
    """The database at ``target``, opened once per worker process."""
    from tabverify.database import connect

    return connect(target)


@cache
def _claim_verifier(target: str, encoder: str) -> Any:
    """The offline whole-database claim verifier of ``target`` (its detector loads once)."""
    from tabverify.claimdb.verifier import DatabaseClaimVerifier

    return DatabaseClaimVerifier(_database(target), verifier="offline", encoder=encoder)


@cache
def _lake(path: str) -> Any:
    """The lake at ``path`` with its retriever and table verifier, opened once per worker process."""
    from tabverify.lake.retrieve import Retriever
    from tabverify.lake.store import Lake
    from tabverify.verify import TableVerifier

    opened = Lake.open(path)
    return opened, Retriever(opened), TableVerifier()


def database_kinds(targets: dict[str, str]) -> list[dict[str, str | None]]:
    """Each database's name and kind (its SQL dialect), or the one-line reason it cannot be opened."""
    from tabverify.errors import TabverifyError

    found: list[dict[str, str | None]] = []
    for name, target in targets.items():
        try:
            found.append({"name": name, "kind": _database(target).dialect, "error": None})
        except TabverifyError as exc:
            found.append({"name": name, "kind": None, "error": str(exc).replace(target, name)})
    return found


def database_tables(targets: dict[str, str]) -> dict[str, list[str]]:
    """The table names of each database (for the verify page's table picker); a database that
    cannot be opened offers none (the database page says why)."""
    from tabverify.errors import TabverifyError

    found: dict[str, list[str]] = {}
    for name, target in targets.items():
        try:
            found[name] = list(_database(target).schema().table_names)
        except TabverifyError:
            found[name] = []
    return found


def database_schema(target: str, name: str) -> dict[str, Any]:
    """``sql --schema --json`` of the database at ``target``, named ``name``."""
    record = _database(target).schema().to_dict()
    record["target"] = name
    record["warnings"] = [w.replace(target, name) for w in record["warnings"]]
    return record


def database_query(target: str, sql: str, max_rows: int, timeout_s: float) -> dict[str, Any]:
    """``sql --json``: one read-only query through the safe query layer (errors come back in it)."""
    result = _database(target).query(sql, max_rows=max_rows, max_bytes=MAX_QUERY_BYTES, timeout_s=timeout_s)
    return result.to_dict()


def database_check(
    target: str, name: str, claims: list[str], encoder: str, extra_info: str
) -> dict[str, Any]:
    """``check --db --json`` (offline): claims against the whole database at ``target``."""
    from tabverify.claimdb.verifier import claims_report

    checker = _claim_verifier(target, encoder)
    record = claims_report(name, checker.mode, [checker.verify(c, extra_info) for c in claims])
    for verdict in record["verdicts"]:  # "TARGET : table" names the database by its server path
        if isinstance(verdict.get("source"), str):
            verdict["source"] = verdict["source"].replace(target, name)
    return record


def lake_search(path: str, name: str, query: str, k: int, keywords: bool) -> dict[str, Any]:
    """``lake search --query --json`` of the lake at ``path``, named ``name``."""
    from tabverify.lake.store import search_record

    opened = _lake(path)[0]
    hits = opened.search_keywords(query, k) if keywords else opened.search_text(query, k)
    return search_record(
        opened, hits, source=name, query=query, table=None, mode="keywords" if keywords else "vector"
    )


def lake_check(path: str, name: str, statements: list[str]) -> dict[str, Any]:
    """``check --lake --json``: each statement verified against the lake's best tables for it."""
    from tabverify.lake.retrieve import check_with_lake, lake_check_record

    opened, retriever, verifier = _lake(path)
    verdicts = [check_with_lake(opened, s, verifier=verifier, retriever=retriever) for s in statements]
    record = lake_check_record(name, verdicts)
    for verdict in record["verdicts"]:  # the page shows each table's caption; the CLI prints it too
        table = verdict.get("evidence_table")
        verdict["evidence_caption"] = opened.info(table).caption if table else None
    return record


# ---- helpers of the routes ---------------------------------------------------------------------------


def _target(request: Request, name: str) -> str:
    target = settings_of(request).databases.get(name)
    if target is None:
        raise ApiError(404, f"no database named {name!r} on this server; see /api/databases")
    return target


def _lake_path(request: Request, name: str) -> str:
    path = settings_of(request).lakes.get(name)
    if path is None:
        raise ApiError(404, f"no lake named {name!r} on this server; see /api/lakes")
    return path


def _query_timeout(request: Request) -> float:
    # stop the query a little before the worker's hard limit, so its message reaches the user
    return max(0.1, min(QUERY_TIMEOUT_S, settings_of(request).time_limit_s * 0.8))


def _query_error(result: dict[str, Any]) -> ApiError | None:
    """A failed query as the error the user gets: 504 past its time limit, else 422 (refused,
    syntax, execution)."""
    if result["ok"]:
        return None
    return ApiError(504 if result["error_kind"] == "timeout" else 422, result["error"] or "the query failed")


def _check_count(request: Request, count: int) -> None:
    most = settings_of(request).max_statements
    if count > most:
        raise ApiError(422, f"{count} claims in one request; this server checks at most {most}")


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


# ---- API -------------------------------------------------------------------------------------------


@router.get("/api/databases", summary="The databases this server was started with", tags=["database"])
async def api_databases(request: Request) -> dict[str, Any]:
    """Each database named with ``serve --db NAME=TARGET``: its name and kind (SQL dialect:
    duckdb, sqlite, postgres), or why it cannot be opened. Other routes name a database by this name."""
    targets = settings_of(request).databases
    found = await workers_of(request).run(database_kinds, dict(targets)) if targets else []
    return {"databases": found}


@router.get(
    "/api/databases/{name}/schema", summary="A database's tables, columns and keys", tags=["database"]
)
async def api_schema(request: Request, name: str) -> dict[str, Any]:
    """As ``tabverify sql TARGET --schema --json``: tables and views with columns (type, nullable,
    primary key, BIRD column and value descriptions when the database has them), foreign keys and
    row counts. ``target`` is the database's name. 404 for a name the server was not started with."""
    return await workers_of(request).run(database_schema, _target(request, name), name)


@router.post(
    "/api/databases/{name}/query",
    summary="Run one read-only SQL query",
    tags=["database"],
    dependencies=[Depends(require_json)],
)
async def api_query(request: Request, name: str, body: QueryBody) -> dict[str, Any]:
    """As ``tabverify sql TARGET QUERY --json``: body ``{"sql": "SELECT ...", "max_rows": 100}``.
    One statement, read-only (no writes, settings, files or extensions); the rows are capped.
    A refused or invalid query is 422 with the reason; one past its time limit, 504."""
    result = await workers_of(request).run(
        database_query, _target(request, name), body.sql, body.max_rows, _query_timeout(request)
    )
    error = _query_error(result)
    if error is not None:
        raise error
    return result


@router.post(
    "/api/databases/{name}/check",
    summary="Check claims against a whole database",
    tags=["database"],
    dependencies=[Depends(require_json)],
)
async def api_check(request: Request, name: str, body: ClaimsBody) -> dict[str, Any]:
    """As ``tabverify check --db TARGET CLAIM... --verifier offline --json``: body
    ``{"claims": [...], "encoder"?: "auto"|"minilm"|"hashing", "extra_info"?: str}``. Each claim gets
    NOT ENOUGH INFO from the schema-only detector, or the single-table program search when it is
    about one table (label, confidence, program, SQL, source), or ``label: null`` with the reason
    when deciding it needs a model."""
    _check_count(request, len(body.claims))
    return await workers_of(request).run(
        database_check, _target(request, name), name, body.claims, body.encoder, body.extra_info
    )


@router.get("/api/lakes", summary="The table lakes this server was started with", tags=["database"])
async def api_lakes(request: Request) -> dict[str, Any]:
    """Each lake named with ``serve --lake NAME=LAKE``, by name."""
    return {"lakes": [{"name": name} for name in settings_of(request).lakes]}


@router.post(
    "/api/lakes/{name}/search",
    summary="Search a lake's tables by text",
    tags=["database"],
    dependencies=[Depends(require_json)],
)
async def api_lake_search(request: Request, name: str, body: SearchBody) -> dict[str, Any]:
    """As ``tabverify lake search LAKE --query TEXT --k K --json``: body ``{"query": "...", "k"?: 10,
    "keywords"?: false}``; the hits with rank, id, score, caption and size."""
    return await workers_of(request).run(
        lake_search, _lake_path(request, name), name, body.query, body.k, body.keywords
    )


@router.post(
    "/api/lakes/{name}/check",
    summary="Check statements against a lake",
    tags=["database"],
    dependencies=[Depends(require_json)],
)
async def api_lake_check(request: Request, name: str, body: StatementsBody) -> dict[str, Any]:
    """As ``tabverify check --lake LAKE STATEMENT... --json``: body ``{"statements": [...]}``; each
    verdict names the table it was verified against (``evidence_table``, with
    ``evidence_caption``) and the other candidates (``runners_up``)."""
    _check_count(request, len(body.statements))
    return await workers_of(request).run(lake_check, _lake_path(request, name), name, body.statements)


# ---- pages -----------------------------------------------------------------------------------------


@router.get("/database", include_in_schema=False, response_class=HTMLResponse)
async def database_index(request: Request) -> Response:
    settings = settings_of(request)
    found = (
        await workers_of(request).run(database_kinds, dict(settings.databases)) if settings.databases else []
    )
    return page(request, "database.html", databases=found, lakes=list(settings.lakes))


async def _database_page(
    request: Request, name: str, status: int = 200, error: str | None = None, **context: Any
) -> Response:
    target = _target(request, name)
    schema = await workers_of(request).run(database_schema, target, name)
    context.setdefault("sql", "")
    context.setdefault("max_rows", 100)
    context.setdefault("claims", "")
    context.setdefault("encoder", "auto")
    context.setdefault("result", None)
    context.setdefault("checked", None)
    return page(request, "database_db.html", status=status, error=error, name=name, schema=schema,
                encoders=ENCODERS, max_query_rows=MAX_QUERY_ROWS, **context)  # fmt: skip


@router.get("/database/db/{name}", include_in_schema=False, response_class=HTMLResponse)
async def database_page(request: Request, name: str) -> Response:
    return await _database_page(request, name)


@router.post("/database/db/{name}/query", include_in_schema=False, response_class=HTMLResponse)
async def database_page_query(
    request: Request,
    name: str,
    sql: Annotated[str, Form(max_length=MAX_SQL_CHARS)] = "",
    max_rows: Annotated[int, Form(ge=1, le=MAX_QUERY_ROWS)] = 100,
) -> Response:
    target = _target(request, name)
    if not sql.strip():
        return await _database_page(
            request, name, 400, "the query is empty; write one SELECT", max_rows=max_rows
        )
    result = await workers_of(request).run(database_query, target, sql, max_rows, _query_timeout(request))
    error = _query_error(result)
    return await _database_page(
        request, name, error.status if error else 200, error.message if error else None, sql=sql,
        max_rows=max_rows, result=None if error else result,
    )  # fmt: skip


@router.post("/database/db/{name}/check", include_in_schema=False, response_class=HTMLResponse)
async def database_page_check(
    request: Request,
    name: str,
    claims: Annotated[str, Form(max_length=MAX_CLAIM_CHARS * 10)] = "",
    encoder: Annotated[Literal["auto", "minilm", "hashing"], Form()] = "auto",
) -> Response:
    target = _target(request, name)
    lines = _lines(claims)
    if not lines:
        return await _database_page(
            request, name, 400, "no claims: write one claim per line", encoder=encoder
        )
    _check_count(request, len(lines))
    checked = await workers_of(request).run(database_check, target, name, lines, encoder, "")
    return await _database_page(request, name, claims=claims, encoder=encoder, checked=checked)


def _lake_page(
    request: Request, name: str, status: int = 200, error: str | None = None, **context: Any
) -> Response:
    _lake_path(request, name)
    for key, default in (("query", ""), ("k", 10), ("statements", ""), ("found", None), ("checked", None)):
        context.setdefault(key, default)
    return page(request, "database_lake.html", status=status, error=error, name=name, max_k=MAX_K, **context)


@router.get("/database/lake/{name}", include_in_schema=False, response_class=HTMLResponse)
async def lake_page(request: Request, name: str) -> Response:
    return _lake_page(request, name)


@router.post("/database/lake/{name}/search", include_in_schema=False, response_class=HTMLResponse)
async def lake_page_search(
    request: Request,
    name: str,
    query: Annotated[str, Form(max_length=MAX_SEARCH_CHARS)] = "",
    k: Annotated[int, Form(ge=1, le=MAX_K)] = 10,
) -> Response:
    path = _lake_path(request, name)
    if not query.strip():
        return _lake_page(request, name, 400, "the search text is empty", k=k)
    found = await workers_of(request).run(lake_search, path, name, query, k, False)
    return _lake_page(request, name, query=query, k=k, found=found)


@router.post("/database/lake/{name}/check", include_in_schema=False, response_class=HTMLResponse)
async def lake_page_check(
    request: Request, name: str, statements: Annotated[str, Form(max_length=MAX_CLAIM_CHARS * 10)] = ""
) -> Response:
    path = _lake_path(request, name)
    lines = _lines(statements)
    if not lines:
        return _lake_page(request, name, 400, "no statements: write one statement per line")
    _check_count(request, len(lines))
    checked = await workers_of(request).run(lake_check, path, name, lines)
    return _lake_page(request, name, statements=statements, checked=checked)
