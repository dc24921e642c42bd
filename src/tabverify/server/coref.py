"""The coref page and its API: score a coreference response against a key (every format ``tabverify
coref score`` reads, its options) with the scores and the alignment view, and resolve pasted Hebrew
text with the shipped resolver, its entities marked on the text.

``POST /api/coref/score`` answers what ``tabverify coref score --json`` prints; ``POST
/api/coref/resolve`` the document JSON the scorer reads (one line of what ``coref resolve --format
json`` writes). Reading, scoring and resolving run in worker processes under the time limit; the
coreference readers read files, so uploads are written under generated names into a temporary
folder that is removed afterwards (:func:`tabverify.server.uploads.saved`).
"""

from __future__ import annotations

import base64
import json
from typing import Annotated, Any

from fastapi import APIRouter, Depends, File, Form, Request, UploadFile
from markupsafe import Markup
from pydantic import BaseModel, Field
from starlette.responses import HTMLResponse, Response

from tabverify.coref import read_documents, resolve, score
from tabverify.coref.align import MATCH_MODES
from tabverify.coref.formats import FORMATS
from tabverify.coref.html import REPORT_STYLE, alignment_fragment, render_entities
from tabverify.coref.json_format import document_line, document_record
from tabverify.coref.options import parse_weights
from tabverify.coref.resolver.pipeline import MAX_CHARACTERS
from tabverify.coref.source import CorefFormatError
from tabverify.errors import TabverifyError
from tabverify.server.limits import ApiError, as_api_error, require_json, require_multipart
from tabverify.server.render import page
from tabverify.server.state import workers_of
from tabverify.server.uploads import MAX_NAME_CHARS, Upload, read_upload, saved, scratch_folder

router = APIRouter()

MAX_RAW_FILES = 200
"""The most KibutzR raw texts one request may carry."""

DEFAULT_THRESHOLD = 0.8
"""The overlap threshold when none is given (as ``coref score``)."""

KeyFile = Annotated[
    UploadFile, File(description="Gold documents: CoNLL-2012, CoNLL-U, JSON/JSON Lines or KibutzR")
]
ResponseFile = Annotated[
    UploadFile, File(description="System documents, paired with the key's by document id")
]
RawFiles = Annotated[
    list[UploadFile] | None,
    File(description="KibutzR: raw texts (<n>.txt for htb:<n>.conllu) to align morphemes onto, as --raw"),
]
FormatField = Annotated[str, Form(description=f"auto (by name and content) or one of {', '.join(FORMATS)}")]
MatchField = Annotated[str, Form(description=f"Mention matching: {', '.join(MATCH_MODES)}")]
ThresholdField = Annotated[
    str, Form(description=f"overlap only: share of the shorter mention to cover (empty: {DEFAULT_THRESHOLD})")
]
KeepField = Annotated[str, Form(description="keep or drop")]
ZeroMatchField = Annotated[str, Form(description="Zeros: linear (by position) or dependent (by DEPS)")]
BlancField = Annotated[str, Form(description="BLANC edge cases: conll or corefud")]
WeightField = Annotated[
    str, Form(description="KIND=W items, one a line or comma-separated, for the 'weighted' mention view")
]


def score_work(
    key: Upload, response: Upload, raw: list[Upload], options: dict[str, Any], with_html: bool, folder: str
) -> dict[str, Any]:
    """Read and score the uploads (in a worker): ``{"payload": <coref score --json>}`` plus, with
    ``with_html``, ``"html"``: the alignment view as a fragment. ``raw``: KibutzR raw texts
    (``<n>.txt``) to align morphemes onto, as ``coref score --raw FOLDER``. ``folder``: an empty
    scratch folder for the uploads' temporary copies (the server removes it)."""
    fmt = options.pop("fmt")
    uploads: dict[str, Upload | list[Upload]] = {"key": key, "response": response}
    if raw:
        uploads["raw"] = raw
    with saved(uploads, CorefFormatError, folder) as paths:
        documents = {}
        for role in ("key", "response"):
            path = paths[role]
            documents[role] = read_documents(path, fmt, paths.get("raw"))
            if not documents[role]:
                raise CorefFormatError(f"{path}: holds no documents; check the file and the format")
        result = score(documents["key"], documents["response"], **options)
    output: dict[str, Any] = {"payload": result.to_dict()}
    if with_html:
        output["html"] = alignment_fragment(result)
    return output


def resolve_work(text: str, doc_id: str, with_html: bool) -> dict[str, Any]:
    """Resolve one text (in a worker): ``{"record": <the document's JSON>, "jsonl": <as coref resolve
    writes it>}`` plus, with ``with_html``, ``"html"``: the text with the entities marked."""
    document = resolve(text, doc_id)
    output: dict[str, Any] = {"record": document_record(document), "jsonl": document_line(document)}
    if with_html:
        output["html"] = render_entities(document)
    return output


def _options(fmt: str, match: str, threshold: str, singletons: str, zeros: str, zero_match: str,
             blanc: str, weights: str) -> dict[str, Any]:  # fmt: skip
    """The form's options as :func:`tabverify.coref.score` arguments, checked as ``coref score`` does."""
    if fmt not in ("auto", *FORMATS):
        raise ApiError(400, f"format {fmt[:20]!r}: use auto or one of {', '.join(FORMATS)}")
    for name, value in (("singletons", singletons), ("zeros", zeros)):
        if value not in ("keep", "drop"):
            raise ApiError(400, f"{name} {value[:20]!r}: use keep or drop")
    if threshold.strip():
        if match != "overlap":
            raise ApiError(
                400, f"threshold applies to match overlap only (this request matches {match[:20]})"
            )
        try:
            share = float(threshold)
        except ValueError:
            raise ApiError(400, f"threshold {threshold[:20]!r}: write a number in (0, 1]") from None
    else:
        share = DEFAULT_THRESHOLD
    try:
        kind_weights = parse_weights(
            item.strip() for item in weights.replace(",", "\n").splitlines() if item.strip()
        )
    except TabverifyError as exc:
        raise ApiError(400, f"weight {exc}") from None
    return {
        "fmt": fmt, "match": match, "threshold": share, "keep_singletons": singletons == "keep",
        "keep_zeros": zeros == "keep", "zero_match": zero_match, "blanc_variant": blanc,
        "kind_weights": kind_weights or None,
    }  # fmt: skip


class ScoreForm:
    """The score form's fields (the page and ``POST /api/coref/score`` take the same)."""

    def __init__(
        self,
        key: KeyFile,
        response: ResponseFile,
        raw: RawFiles = None,
        format: FormatField = "auto",  # noqa: A002 - the CLI's option name
        match: MatchField = "exact",
        threshold: ThresholdField = "",
        singletons: Annotated[str, Form(description="Score one-mention entities: keep or drop")] = "keep",
        zeros: Annotated[
            str, Form(description="CoNLL-U: mentions headed by empty nodes: keep or drop")
        ] = "keep",
        zero_match: ZeroMatchField = "linear",
        blanc: BlancField = "conll",
        weights: WeightField = "",
    ) -> None:
        self.key, self.response, self.raw = key, response, raw or []
        self.fields = {
            "format": format, "match": match, "threshold": threshold, "singletons": singletons,
            "zeros": zeros, "zero_match": zero_match, "blanc": blanc, "weights": weights,
        }  # fmt: skip

    async def run(self, request: Request, with_html: bool) -> dict[str, Any]:
        """Check the options, read the uploads and score them in a worker."""
        f = self.fields
        options = _options(f["format"], f["match"], f["threshold"], f["singletons"], f["zeros"],
                           f["zero_match"], f["blanc"], f["weights"])  # fmt: skip
        # a file input left empty sends a part without a name: no raw texts
        chosen = [item for item in self.raw if item.filename]
        if chosen and options["fmt"] not in ("auto", "kibutzr"):
            raise ApiError(400, f"raw texts apply to KibutzR morpheme files, not format {options['fmt']}")
        if len(chosen) > MAX_RAW_FILES:
            raise ApiError(413, f"{len(chosen)} raw texts: one request takes at most {MAX_RAW_FILES}")
        key = await read_upload(self.key, "key")
        response = await read_upload(self.response, "response")
        raw = [await read_upload(item, "raw") for item in chosen]
        async with scratch_folder() as folder:
            return await workers_of(request).run(score_work, key, response, raw, options, with_html, folder)


DEFAULT_FIELDS = {
    "format": "auto", "match": "exact", "threshold": "", "singletons": "keep", "zeros": "keep",
    "zero_match": "linear", "blanc": "conll", "weights": "", "text": "", "doc_id": "doc",
}  # fmt: skip


def _page(request: Request, status: int = 200, error: str | None = None, **context: Any) -> HTMLResponse:
    fields = {**DEFAULT_FIELDS, **context.pop("fields", {})}
    context.setdefault("scores", None)
    context.setdefault("resolved", None)
    return page(request, "coref.html", status=status, error=error, fields=fields, formats=FORMATS,
                match_modes=MATCH_MODES, max_characters=MAX_CHARACTERS, **context)  # fmt: skip


def _json_text(payload: dict[str, Any]) -> str:
    """The payload as ``tabverify coref score --json`` prints it."""
    return json.dumps(payload, ensure_ascii=False, indent=2, allow_nan=False) + "\n"


def _download(text: str) -> str:
    return base64.b64encode(text.encode("utf-8")).decode("ascii")


def _check_text(text: str, doc_id: str) -> None:
    if not text.strip():
        raise ApiError(400, "text: paste the Hebrew text to resolve")
    if len(text) > MAX_CHARACTERS:
        raise ApiError(
            413, f"the text has {len(text):,} characters; the resolver takes at most {MAX_CHARACTERS:,}"
        )
    if not doc_id.strip() or len(doc_id) > MAX_NAME_CHARS:
        raise ApiError(400, f"doc_id: give a document id of 1 to {MAX_NAME_CHARS} characters")


@router.get("/coref", include_in_schema=False, response_class=HTMLResponse)
async def coref_page(request: Request) -> Response:
    return _page(request)


@router.get("/coref/report.css", include_in_schema=False)
async def report_style() -> Response:
    return Response(REPORT_STYLE, media_type="text/css")


@router.post("/coref/score", include_in_schema=False, response_class=HTMLResponse)
async def score_form(request: Request, form: Annotated[ScoreForm, Depends()]) -> Response:
    try:
        result = await form.run(request, with_html=True)
    except (ApiError, TabverifyError) as exc:
        error = as_api_error(exc)
        return _page(request, error.status, error.message, fields=form.fields)
    payload = result["payload"]
    text = _json_text(payload)
    # the fragment comes from the library's renderer, which escapes every text of the documents
    return _page(request, fields=form.fields, scores=payload, download=_download(text),
                 alignment=Markup(result["html"]))  # fmt: skip


@router.post("/coref/resolve", include_in_schema=False, response_class=HTMLResponse)
async def resolve_form(
    request: Request, text: Annotated[str, Form()] = "", doc_id: Annotated[str, Form()] = "doc"
) -> Response:
    fields = {"text": text, "doc_id": doc_id}
    try:
        _check_text(text, doc_id)
        result = await workers_of(request).run(resolve_work, text, doc_id, True)
    except (ApiError, TabverifyError) as exc:
        error = as_api_error(exc)
        return _page(request, error.status, error.message, fields=fields)
    hebrew = any("\u0590" <= ch <= "\u05ff" for ch in text)
    return _page(request, fields=fields, resolved=result["record"], download=_download(result["jsonl"]),
                 entities=Markup(result["html"]), hebrew=hebrew)  # fmt: skip


@router.post(
    "/api/coref/score",
    summary="Score a coreference response against a key",
    tags=["coref"],
    response_description="What `tabverify coref score --json` prints",
    dependencies=[Depends(require_multipart)],
)
async def score_api(request: Request, form: Annotated[ScoreForm, Depends()]) -> Response:
    """Multipart form: `key` and `response` files (CoNLL-2012, CoNLL-U, JSON/JSON Lines with
    character offsets, KibutzR; `format` auto detects by name and content) and the options of
    `tabverify coref score`: `match` (exact, partial, head, overlap), `threshold` (overlap only),
    `singletons` and `zeros` (keep or drop), `zero_match` (linear, dependent), `blanc` (conll,
    corefud), `weights` (KIND=W items).

    Answers `{"metrics": {"muc", "b_cubed", "ceafm", "ceafe", "blanc", "lea", "conll_f1"},
    "mentions", "options", "documents", "warnings"}` as `coref score --json` does. 400 for an empty,
    binary or malformed file, documents that do not pair up or a bad option; 504 past the time limit."""
    result = await form.run(request, with_html=False)
    return Response(_json_text(result["payload"]), media_type="application/json")


class ResolveBody(BaseModel):
    """Text to resolve and the id its document gets."""

    text: str = Field(description=f"Hebrew text, at most {MAX_CHARACTERS:,} characters")
    doc_id: str = Field("doc", description="The document's id in the answer")


@router.post(
    "/api/coref/resolve",
    summary="Resolve Hebrew coreference in a text",
    tags=["coref"],
    dependencies=[Depends(require_json)],
    response_description="The document JSON the scorer reads (as `coref resolve --format json` writes)",
)
async def resolve_api(request: Request, body: ResolveBody) -> Response:
    """JSON body `{"text": ..., "doc_id"?: ...}`. Answers `{"doc_id", "text", "clusters": [[[start,
    end, {"kind", "subkind"}], ...], ...]}`: mentions as character offsets (sub-word mentions inside
    their words), entities of two or more mentions. 400 for empty text, 413 past the length cap,
    415 unless sent as application/json."""
    _check_text(body.text, body.doc_id)  # resolve's own length check (a ValueError) can then not fail
    result = await workers_of(request).run(resolve_work, body.text, body.doc_id, False)
    return Response(result["jsonl"], media_type="application/json")
