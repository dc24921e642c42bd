"""The ClaimDB verifier agent: a language model with one tool, ``execute_sql``, decides whether a
database ENTAILS or CONTRADICTS a claim, or holds NOT ENOUGH INFO (docs/llm.md).

It follows the paper's protocol (a system prompt defining the three labels with three examples, one
SQL tool, at most 20 tool calls, a JSON verdict) and improves on it where the paper's findings
point: the schema with its column and value descriptions comes up front (bounded), every tool result
is bounded in rows and characters and says when rows were left out (one ``SELECT *`` on a
million-row table cannot flood the context), an offline NOT ENOUGH INFO pre-check is offered as a
hint, the numbers of the claim are checked by rule against the query results
(:mod:`tabverify.claimdb.numbers`), and a model that misbehaves ends in a clean verdict with the
reason, never an exception.
"""

from __future__ import annotations

import difflib
import json
import math
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tabverify.claimdb.claims import claimdb_category, claimdb_label
from tabverify.claimdb.nei import NeiCheck
from tabverify.claimdb.numbers import NumberCheck, check_numbers, judge_numbers
from tabverify.claimdb.trace import TraceWriter
from tabverify.database import Database, QueryResult
from tabverify.database.schema import render_schema
from tabverify.errors import LlmError
from tabverify.llm.client import ChatClient, ChatReply
from tabverify.text.normalize import letter_words, one_line
from tabverify.verify.verdict import Label, LimitNotice, NeiSubtype, ResultValue, TraceStep, Verdict

TOOL_NAME = "execute_sql"

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": TOOL_NAME,
            "description": (
                "Run one read-only SQL query (a single SELECT) on the database and return its result "
                "rows. Results are capped; aggregate in SQL (COUNT, SUM, AVG, GROUP BY, ORDER BY ... "
                "LIMIT) rather than reading rows."
            ),
            "parameters": {
                "type": "object",
                "properties": {"query": {"type": "string", "description": "One SELECT statement."}},
                "required": ["query"],
            },
        },
    }
]
"""The one tool offered to the model (OpenAI ``tools`` format)."""

SYSTEM_PROMPT = """\
You verify a claim against a relational database ({dialect}). The database is far too large to read: \
compute what the claim needs with SQL using the execute_sql tool (one read-only SELECT per call; \
aggregates, ORDER BY ... LIMIT, joins). Each result shows at most {max_rows} rows and {max_chars} \
characters and says when rows were left out. You have at most {max_calls} tool calls; 4 to 8 focused \
queries are usually enough.

Labels:
- ENTAILED: the data supports the claim; every part of it agrees with the database.
- CONTRADICTED: the data contradicts the claim; at least one part (a number, a name, an order, a \
comparison) disagrees with the database.
- NOT ENOUGH INFO: the database cannot settle the claim, for one of three reasons (the subtype):
  - OUT-OF-SCHEMA: the claim depends on something the database does not record (a cause, a motive, \
an attribute with no column), even when the rest of the claim is about the database;
  - COUNTERFACTUAL: the claim is about a hypothetical situation ("if ... had ...", "would have");
  - SUBJECTIVE: the claim is a value judgement or opinion ("the best", "widely regarded", \
"disappointing").
A claim about facts the database records is ENTAILED or CONTRADICTED, never NOT ENOUGH INFO. \
A number agrees when it equals the data at the precision the claim writes it (rounding). \
The extra information maps the claim's wording to the schema; follow it.

When you are done, reply with only this JSON object and nothing else:
{{"verdict": "ENTAILED" | "CONTRADICTED" | "NOT ENOUGH INFO", "justification": "<one or two \
sentences citing the query results>", "subtype": "OUT-OF-SCHEMA" | "COUNTERFACTUAL" | "SUBJECTIVE" | null}}

Examples, on a database with a table employees(id, name, dept, salary):
1. Claim: "The engineering department has 12 employees." You run SELECT COUNT(*) FROM employees \
WHERE dept = 'Engineering' and get 12. Answer: {{"verdict": "ENTAILED", "justification": "There are \
12 employees in Engineering.", "subtype": null}}
2. Claim: "Ana Ruiz earns the highest salary." You run SELECT name FROM employees ORDER BY salary DESC \
LIMIT 1 and get Li Wei. Answer: {{"verdict": "CONTRADICTED", "justification": "The highest salary is \
Li Wei's, not Ana Ruiz's.", "subtype": null}}
3. Claim: "Li Wei is the most respected engineer in the company." Respect is an opinion no column \
records. Answer: {{"verdict": "NOT ENOUGH INFO", "justification": "Being respected is a value judgement \
the data cannot measure.", "subtype": "SUBJECTIVE"}}
"""

CORRECTION = (
    "That reply is not the JSON verdict. Reply with only one JSON object, for example "
    '{"verdict": "CONTRADICTED", "justification": "...", "subtype": null}, where verdict is ENTAILED, '
    "CONTRADICTED or NOT ENOUGH INFO and subtype is OUT-OF-SCHEMA, COUNTERFACTUAL, SUBJECTIVE or null."
)
FINAL_REQUEST = (
    "You have used all {n} tool calls. Do not call tools any more: reply now with only the JSON verdict "
    '{{"verdict": ..., "justification": ..., "subtype": ...}} based on the results you have.'
)
NUDGE = (
    "Your reply was empty. Reply now with only the JSON verdict "
    '{"verdict": ..., "justification": ..., "subtype": ...} based on the results you have.'
)
"""Sent after an empty reply, in a request WITHOUT tools: an empty reply is a turn that chose to
write a message, and some servers cannot return text while tools are offered (llama-cpp-python's
``chatml-function-calling`` with ``tool_choice`` ``auto`` constrains a message to nothing)."""

MAX_SQL_CHARS = 20_000
"""A tool call with a longer query is refused (and counted) without running it."""

FATAL_KINDS = frozenset({"config", "unreachable", "auth", "model", "protocol", "rate_limit"})
"""ChatError kinds that end the run (raised): the server, the key or the model name is wrong, and
the next claim would fail the same way. The other kinds (``timeout``, ``server`` 5xx after retries,
``bad_request`` such as a context overflow, ``too_large``) end this claim with a failure verdict."""

BASE_CONFIDENCE = 0.8
"""The confidence of a verdict the model gave (a fixed prior: models' own numbers are not calibrated)."""
DOUBT_CONFIDENCE = 0.6
"""... when it was given after the tool-call cap, from a non-JSON reply, or with a numbers warning
or override."""

_LABEL_FORMS: dict[str, Label] = {
    "ENTAILED": Label.ENTAILED, "ENTAIL": Label.ENTAILED, "ENTAILS": Label.ENTAILED,
    "ENTAILMENT": Label.ENTAILED, "SUPPORTED": Label.ENTAILED, "SUPPORTS": Label.ENTAILED,
    "TRUE": Label.ENTAILED, "CORRECT": Label.ENTAILED,
    "CONTRADICTED": Label.REFUTED, "CONTRADICT": Label.REFUTED, "CONTRADICTS": Label.REFUTED,
    "CONTRADICTION": Label.REFUTED, "CONTRADICTORY": Label.REFUTED, "REFUTED": Label.REFUTED,
    "REFUTES": Label.REFUTED, "REFUTE": Label.REFUTED, "FALSE": Label.REFUTED, "INCORRECT": Label.REFUTED,
    "NOT ENOUGH INFO": Label.NOT_ENOUGH_INFO, "NOT ENOUGH INFORMATION": Label.NOT_ENOUGH_INFO,
    "NEI": Label.NOT_ENOUGH_INFO, "NOT ENOUGH EVIDENCE": Label.NOT_ENOUGH_INFO,
    "INSUFFICIENT INFO": Label.NOT_ENOUGH_INFO, "INSUFFICIENT INFORMATION": Label.NOT_ENOUGH_INFO,
    "INSUFFICIENT": Label.NOT_ENOUGH_INFO, "UNVERIFIABLE": Label.NOT_ENOUGH_INFO,
    "CANNOT BE DETERMINED": Label.NOT_ENOUGH_INFO, "UNKNOWN": Label.NOT_ENOUGH_INFO,
}  # fmt: skip
_SUBTYPE_FORMS: dict[str, NeiSubtype] = {
    "OUT OF SCHEMA": NeiSubtype.OUT_OF_SCHEMA, "OUTOFSCHEMA": NeiSubtype.OUT_OF_SCHEMA,
    "OOS": NeiSubtype.OUT_OF_SCHEMA, "NOT IN SCHEMA": NeiSubtype.OUT_OF_SCHEMA,
    "COUNTERFACTUAL": NeiSubtype.COUNTERFACTUAL, "HYPOTHETICAL": NeiSubtype.COUNTERFACTUAL,
    "COUNTER FACTUAL": NeiSubtype.COUNTERFACTUAL,
    "SUBJECTIVE": NeiSubtype.SUBJECTIVE, "OPINION": NeiSubtype.SUBJECTIVE,
    "VALUE JUDGEMENT": NeiSubtype.SUBJECTIVE, "VALUE JUDGMENT": NeiSubtype.SUBJECTIVE,
}  # fmt: skip
_LABEL_KEYS = ("verdict", "label", "answer", "prediction", "decision", "classification")


# ---- the verdict the model writes ---------------------------------------------------------------


@dataclass(frozen=True)
class ParsedVerdict:
    """The model's verdict: label, NEI subtype (None unless NOT ENOUGH INFO) and justification;
    ``lenient`` when it was read from text that is not the JSON object (a last resort)."""

    label: Label
    subtype: NeiSubtype | None = None
    justification: str = ""
    lenient: bool = False


def normalise_label(text: object) -> tuple[Label | None, NeiSubtype | None]:
    """A label (and subtype, when written with it: ``NOT ENOUGH INFO (SUBJECTIVE)``) from the
    case and spelling variants models write; (None, None) when it is none of them."""
    if not isinstance(text, str) or not text.strip() or len(text) > 200:
        return None, None
    words = letter_words(text)
    for form in sorted(_LABEL_FORMS, key=len, reverse=True):
        if words == form or words.startswith(form + " "):
            rest = words[len(form) :].strip()
            return _LABEL_FORMS[form], normalise_subtype(rest) if rest else None
    close = difflib.get_close_matches(words, list(_LABEL_FORMS), n=1, cutoff=0.85)
    if close:
        return _LABEL_FORMS[close[0]], None
    return None, None


def normalise_subtype(text: object) -> NeiSubtype | None:
    """An NEI subtype from its variants (``out_of_schema``, ``Out-of-Schema``, ``hypothetical``)."""
    if not isinstance(text, str) or not text.strip() or len(text) > 100:
        return None
    words = letter_words(text)
    if words in _SUBTYPE_FORMS:
        return _SUBTYPE_FORMS[words]
    close = difflib.get_close_matches(words, list(_SUBTYPE_FORMS), n=1, cutoff=0.8)
    return _SUBTYPE_FORMS[close[0]] if close else None


def _json_objects(text: str) -> list[str]:
    """Candidate JSON object texts: fenced code blocks first, then each balanced ``{...}``."""
    found = [m.group(1) for m in re.finditer(r"```(?:json|JSON)?\s*(.*?)```", text, re.DOTALL)]
    depth, start, in_string, escaped = 0, -1, False, False
    for index, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
            continue
        if char == '"' and depth > 0:
            in_string = True
        elif char == "{":
            if depth == 0:
                start = index
            depth += 1
        elif char == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                found.append(text[start : index + 1])
    return found


def _loads(candidate: str) -> object:
    """``json.loads`` with the repairs models need: smart quotes, trailing commas, Python literals,
    single-quoted strings."""
    candidate = candidate.strip()
    attempts = [candidate]
    repaired = candidate.replace("\u201c", '"').replace("\u201d", '"').replace("\u2019", "'")
    repaired = re.sub(r",\s*([}\]])", r"\1", repaired)
    repaired = re.sub(r"\bNone\b", "null", repaired)
    attempts.append(repaired)
    if '"' not in repaired:
        attempts.append(repaired.replace("'", '"'))
    for attempt in attempts:
        try:
            return json.loads(attempt)
        except ValueError:
            continue
    return None


def parse_verdict(text: str) -> ParsedVerdict | None:
    """The verdict of a final model reply: a JSON object with ``verdict`` (or ``label``/``answer``),
    ``justification`` and ``subtype``, bare or inside a code fence or prose; labels read leniently
    (:func:`normalise_label`). None when no such object is there."""
    if not isinstance(text, str) or not text.strip():
        return None
    for candidate in [*_json_objects(text), text]:
        data = _loads(candidate)
        if not isinstance(data, dict):
            continue
        lowered = {str(k).lower(): v for k, v in data.items()}
        for key in _LABEL_KEYS:
            label, subtype = normalise_label(lowered.get(key))
            if label is not None:
                break
        if label is None:
            continue
        subtype = normalise_subtype(lowered.get("subtype") or lowered.get("category")) or subtype
        justification = lowered.get("justification") or lowered.get("reason") or lowered.get("explanation")
        return ParsedVerdict(
            label,
            subtype if label is Label.NOT_ENOUGH_INFO else None,
            str(justification).strip()[:2000] if justification else "",
        )
    return None


def label_from_text(text: str) -> ParsedVerdict | None:
    """A verdict from prose, the last resort after a failed correction: a ``verdict: LABEL`` line, or a
    reply that is only a label (``**Contradicted.**``). None when it is anything else."""
    if not isinstance(text, str):
        return None
    match = re.search(
        r"(?im)^\W*(?:final\s+)?(?:verdict|label|answer)\W*[:=]\W*([A-Za-z][A-Za-z _()-]{1,60})", text
    )
    candidate = match.group(1) if match else text if len(text) <= 60 else ""
    label, subtype = normalise_label(candidate)
    if label is None:
        return None
    justification = text.strip() if match else ""
    return ParsedVerdict(
        label, subtype if label is Label.NOT_ENOUGH_INFO else None, justification[:2000], True
    )


# ---- what the model sees ------------------------------------------------------------------------


def _cell(value: object, limit: int) -> object:
    if isinstance(value, str):
        return one_line(value, limit) if len(value) > limit else value
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, list | dict):
        return one_line(json.dumps(value, ensure_ascii=False, default=str), limit)
    return value


def format_result(result: QueryResult, max_rows: int = 50, max_chars: int = 4000) -> str:
    """A query result as the model reads it, at most about ``max_chars`` characters: the error, or
    the columns and one JSON row per line, with a note when rows were left out (the database's
    truncation notice, or the character cap)."""
    if not result.ok:
        return one_line(f"error ({result.error_kind}): {result.error}", max_chars)
    cell_limit = max(20, min(500, max_chars // 8))
    header = one_line(
        "columns: " + json.dumps(list(result.columns), ensure_ascii=False), max(100, max_chars // 3)
    )
    lines = [header]
    used = len(header)
    budget = max(0, max_chars - 260)
    shown = 0
    for row in result.rows[:max_rows]:
        line = json.dumps([_cell(v, cell_limit) for v in row], ensure_ascii=False, default=str)
        if used + len(line) + 1 > budget:
            break
        lines.append(line)
        used += len(line) + 1
        shown += 1
    total = result.total_rows if result.truncated else len(result.rows)
    if shown == len(result.rows) and not result.truncated:
        lines.append(f"({shown:,} row{'s' if shown != 1 else ''})")
    elif shown == len(result.rows) and result.notice:
        lines.append(f"note: {result.notice}")
    else:
        of = f"{total:,}" if total is not None else f"more than {len(result.rows):,}"
        lines.append(
            f"note: showing {shown:,} of {of} rows (tool output is capped at {max_chars:,} characters); "
            "aggregate in SQL (COUNT, SUM, GROUP BY, LIMIT) instead of reading rows"
        )
    return "\n".join(lines)


def _precheck_text(check: NeiCheck) -> str:
    intro = (
        "Hint from an offline NOT ENOUGH INFO pre-check (it reads only the claim and the schema and can "
        "be wrong; decide for yourself): "
    )
    phrases = f" (phrases: {', '.join(repr(p) for p in check.phrases[:5])})" if check.phrases else ""
    if check.nei:
        subtype = check.subtype.value.upper() if check.subtype else "NOT ENOUGH INFO"
        return f"{intro}the claim looks {subtype}, p={check.probability:.2f}: {one_line(check.reason, 300)}{phrases}"
    return f"{intro}no sign of NOT ENOUGH INFO, p={check.probability:.2f}: {one_line(check.reason, 300)}{phrases}"


# ---- the agent ----------------------------------------------------------------------------------


@dataclass
class _Session:
    """The state of one claim's verification."""

    claim: str
    extra_info: str
    claim_id: str
    messages: list[dict[str, Any]] = field(default_factory=list)
    results: list[QueryResult] = field(default_factory=list)
    queries: list[dict[str, Any]] = field(default_factory=list)
    steps: list[TraceStep] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    limits: list[LimitNotice] = field(default_factory=list)
    tokens: dict[str, int] = field(
        default_factory=lambda: {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
    )
    tool_calls: int = 0
    llm_calls: int = 0
    started: float = field(default_factory=time.monotonic)
    nei: NeiCheck | None = None
    numbers: NumberCheck | None = None
    justification: str = ""


class LlmVerifier:
    """Verifies ClaimDB claims against a database with a language model that calls ``execute_sql``.

    Args:
        client: the model (:class:`~tabverify.llm.ChatClient`).
        max_tool_calls: tool calls allowed per claim (the paper's 20); past it, one last request
            without tools asks for the verdict.
        max_result_rows: rows one query returns (the database caps it; the model is told).
        max_result_chars: characters of one tool result the model reads.
        query_timeout_s: time limit of one query.
        nei_check: ``nei_check(claim, extra_info) -> NeiCheck``, the offline NOT ENOUGH INFO pre-check,
            offered to the model as a hint (a pre-computed check can also be passed to :meth:`verify`).
        trace: where each claim's audit record goes (one JSON line per claim).
        max_schema_chars: the bound on the schema text in the first message.
        numbers_rule: ``override`` (default), ``warn`` (never change a label) or ``off``
            (:func:`tabverify.claimdb.numbers.judge_numbers`).
        max_consecutive_failures: after this many claims in a row ended by a server failure (timeouts,
            5xx), :meth:`verify` raises LlmError instead of returning another failure verdict.
    """

    def __init__(
        self,
        client: ChatClient,
        *,
        max_tool_calls: int = 20,
        max_result_rows: int = 50,
        max_result_chars: int = 4000,
        query_timeout_s: float = 30.0,
        nei_check: Callable[[str, str], NeiCheck] | None = None,
        trace: TraceWriter | None = None,
        max_schema_chars: int = 20_000,
        numbers_rule: str = "override",
        max_consecutive_failures: int = 5,
    ):
        if not 1 <= max_tool_calls <= 200:
            raise ValueError(f"max_tool_calls must be from 1 to 200, got {max_tool_calls!r}")
        if not 1 <= max_result_rows <= 10_000:
            raise ValueError(f"max_result_rows must be from 1 to 10,000, got {max_result_rows!r}")
        if max_result_chars < 200:
            raise ValueError(f"max_result_chars must be at least 200, got {max_result_chars!r}")
        if numbers_rule not in ("override", "warn", "off"):
            raise ValueError(f"numbers_rule must be override, warn or off, got {numbers_rule!r}")
        self.client = client
        self.max_tool_calls = max_tool_calls
        self.max_result_rows = max_result_rows
        self.max_result_chars = max_result_chars
        self.query_timeout_s = query_timeout_s
        self.nei_check = nei_check
        self.trace = trace
        self.max_schema_chars = max_schema_chars
        self.numbers_rule = numbers_rule
        self.max_consecutive_failures = max_consecutive_failures
        self._failures = 0
        self._failures_lock = threading.Lock()

    @property
    def source(self) -> str:
        """``llm:<model>``, the ``source`` of every verdict."""
        return f"llm:{getattr(self.client, 'model', None) or 'model'}"

    # ---- public ---------------------------------------------------------------------------------

    def verify(
        self,
        claim: str,
        database: Database,
        extra_info: str = "",
        claim_id: str = "",
        *,
        nei: NeiCheck | None = None,
    ) -> Verdict:
        """The verdict on ``claim`` given ``database`` (and the ClaimDB ``extra_info`` hints).

        A model that misbehaves (unknown tools, malformed arguments, empty or non-JSON replies, tool
        calls past the cap) or a request that times out ends in a verdict: NOT ENOUGH INFO with
        confidence 0 and a ``source`` saying what went wrong. A server that cannot be used at all
        (unreachable, key refused, unknown model, replies that are not chat completions) raises
        :class:`~tabverify.errors.LlmError`. ``nei``: a pre-computed NOT ENOUGH INFO check (else
        ``nei_check`` is called when given)."""
        session = _Session(claim, extra_info or "", str(claim_id))
        try:
            verdict = self._verify(session, database, nei)
        except LlmError as exc:
            kind = getattr(exc, "kind", "server")
            session.errors.append(f"{kind}: {exc}")
            if kind in FATAL_KINDS:
                self._write_trace(session, None, status="error")
                raise
            verdict = self._failure(session, f"the model server failed: {exc}")
            failures = self._count_failure(True)
            self._write_trace(session, verdict, status="failed")
            if failures >= self.max_consecutive_failures:
                raise LlmError(
                    f"the model server failed on {failures} claims in a row (last: {exc}); check the server"
                ) from None
            return verdict
        self._count_failure(False)
        self._write_trace(session, verdict, status="ok" if verdict.confidence > 0 else "failed")
        return verdict

    # ---- the loop -------------------------------------------------------------------------------

    def _count_failure(self, failed: bool) -> int:
        with self._failures_lock:
            self._failures = self._failures + 1 if failed else 0
            return self._failures

    def _first_message(self, session: _Session, database: Database) -> str:
        schema = database.schema()
        parts = [
            f"The database ({database.dialect}, {len(schema.tables)} tables):",
            render_schema(schema, self.max_schema_chars),
            "",
            f"Claim: {session.claim}",
            f"Extra information: {session.extra_info or 'none'}",
        ]
        if session.nei is not None:
            parts.append(_precheck_text(session.nei))
        parts.append("Check the claim with execute_sql, then reply with only the JSON verdict.")
        return "\n".join(parts)

    def _verify(self, session: _Session, database: Database, nei: NeiCheck | None) -> Verdict:
        session.nei = nei
        if session.nei is None and self.nei_check is not None:
            try:
                session.nei = self.nei_check(session.claim, session.extra_info)
            except Exception as exc:  # a hint must never stop the verification
                session.errors.append(f"nei pre-check failed: {type(exc).__name__}: {exc}")
        system = SYSTEM_PROMPT.format(
            dialect=database.dialect or "SQL",
            max_rows=self.max_result_rows,
            max_chars=f"{self.max_result_chars:,}",
            max_calls=self.max_tool_calls,
        )
        session.messages = [
            {"role": "system", "content": system},
            {"role": "user", "content": self._first_message(session, database)},
        ]
        final_requested = corrected = nudged = nudge_pending = False
        max_llm_calls = self.max_tool_calls + 3
        while True:
            if session.llm_calls >= max_llm_calls:
                return self._failure(session, f"no verdict after {session.llm_calls} model requests")
            reply = self._chat(session, offer_tools=not (final_requested or nudge_pending))
            nudge_pending = False
            content = reply.content
            calls = reply.tool_calls
            if calls and final_requested:
                session.errors.append(
                    f"the model called tools after the limit of {self.max_tool_calls} tool calls"
                )
                session.messages.append(reply.message)  # for the trace; the conversation ends here
                parsed = parse_verdict(content)
                if parsed is not None:
                    return self._finish(session, parsed, final_requested)
                return self._failure(
                    session,
                    f"the model kept calling tools after the limit of {self.max_tool_calls} tool calls",
                )
            if calls:
                session.messages.append(reply.message)
                for call in calls:
                    session.messages.append(self._tool_message(session, database, call))
                if session.tool_calls >= self.max_tool_calls:
                    final_requested = True
                    session.limits.append(
                        LimitNotice(
                            "max_tool_calls",
                            self.max_tool_calls,
                            f"the model used all {self.max_tool_calls} tool calls; the verdict was asked "
                            "for without further queries",
                        )
                    )
                    session.messages.append(
                        {"role": "user", "content": FINAL_REQUEST.format(n=self.max_tool_calls)}
                    )
                continue
            if not content.strip():
                session.errors.append("empty reply")
                if nudged:
                    return self._failure(session, "the model sent empty replies")
                nudged = nudge_pending = True  # the next request offers no tools
                session.messages.append({"role": "user", "content": NUDGE})
                continue
            session.messages.append({"role": "assistant", "content": content})
            parsed = parse_verdict(content)
            if parsed is not None:
                return self._finish(session, parsed, final_requested)
            session.errors.append("the reply is not the JSON verdict")
            if corrected:
                parsed = label_from_text(content)
                if parsed is not None:
                    return self._finish(session, parsed, final_requested)
                return self._failure(
                    session, "the model's replies were not the JSON verdict, even when asked again"
                )
            corrected = True
            session.messages.append({"role": "user", "content": CORRECTION})

    def _chat(self, session: _Session, offer_tools: bool) -> ChatReply:
        session.llm_calls += 1
        try:
            reply = self.client.chat(session.messages, tools=TOOLS if offer_tools else None)
        except LlmError as exc:
            session.steps.append(TraceStep("message", "request failed", error=str(exc)))
            raise
        for key in session.tokens:
            session.tokens[key] += int(reply.usage.get(key, 0) or 0)
        names = [str(c.get("function", {}).get("name", "")) for c in reply.tool_calls]
        text = reply.content.strip() or (f"tool calls: {', '.join(names)}" if names else "(empty reply)")
        session.steps.append(TraceStep("message", one_line(text, 2000), elapsed_s=reply.elapsed_s))
        return reply

    def _tool_message(self, session: _Session, database: Database, call: dict[str, Any]) -> dict[str, Any]:
        """Run one tool call (or refuse it) and return the ``tool`` message answering it."""
        call_id = str(call.get("id") or f"call_{session.tool_calls}")
        function = call.get("function") or {}
        name = str(function.get("name") or "")
        if session.tool_calls >= self.max_tool_calls:
            limit = self.max_tool_calls
            text = f"not run: the limit of {limit} tool calls is reached; reply with the JSON verdict"
            return {"role": "tool", "tool_call_id": call_id, "content": text}
        session.tool_calls += 1
        sql, problem = None, None
        if name != TOOL_NAME:
            problem = (
                f"unknown tool {one_line(name, 80)!r}; the only tool is {TOOL_NAME} with "
                '{"query": "SELECT ..."}'
            )
        else:
            arguments = function.get("arguments")
            data = _loads(arguments) if isinstance(arguments, str) else arguments
            if isinstance(data, dict):
                value = data.get("query", data.get("sql"))
                if isinstance(value, str) and value.strip():
                    sql = value.strip()
            if sql is None:
                problem = (
                    f"malformed arguments {one_line(str(arguments), 120)!r}; call {TOOL_NAME} with a JSON object "
                    '{"query": "SELECT ..."}'
                )
            elif len(sql) > MAX_SQL_CHARS:
                problem = (
                    f"the query has {len(sql):,} characters (limit {MAX_SQL_CHARS:,}); write a shorter query"
                )
                sql = None
        if problem is not None:
            session.errors.append(problem)
            session.steps.append(TraceStep("note", f"tool call refused: {problem}"))
            return {"role": "tool", "tool_call_id": call_id, "content": f"error: {problem}"}
        assert sql is not None
        result = database.query(
            sql,
            max_rows=self.max_result_rows,
            max_bytes=max(10_000, self.max_result_chars * 4),
            timeout_s=self.query_timeout_s,
        )
        session.results.append(result)
        session.queries.append(
            {
                "sql": sql,
                "ok": result.ok,
                "rows": len(result.rows),
                "total_rows": result.total_rows,
                "truncated": result.truncated,
                "error": result.error,
                "error_kind": result.error_kind,
                "elapsed_s": round(result.elapsed_s, 4),
            }
        )
        session.steps.append(
            TraceStep("query", sql, rows=len(result.rows) if result.ok else None, elapsed_s=result.elapsed_s,
                      error=result.error)
        )  # fmt: skip
        content = format_result(result, self.max_result_rows, self.max_result_chars)
        return {"role": "tool", "tool_call_id": call_id, "content": content}

    # ---- endings --------------------------------------------------------------------------------

    def _decisive(self, session: _Session) -> QueryResult | None:
        ok = [r for r in session.results if r.ok]
        return ok[-1] if ok else None

    def _finish(self, session: _Session, parsed: ParsedVerdict, after_cap: bool) -> Verdict:
        label, subtype = parsed.label, parsed.subtype
        confidence = DOUBT_CONFIDENCE if (after_cap or parsed.lenient) else BASE_CONFIDENCE
        session.justification = parsed.justification
        if parsed.lenient:
            session.steps.append(TraceStep("note", "verdict read from a reply that is not the JSON object"))
        if (
            label is Label.NOT_ENOUGH_INFO
            and subtype is None
            and session.nei is not None
            and session.nei.subtype
        ):
            subtype = session.nei.subtype
            session.steps.append(
                TraceStep("note", f"NEI subtype {subtype.value} taken from the offline pre-check")
            )
        if self.numbers_rule != "off" and label in (Label.ENTAILED, Label.REFUTED):
            session.numbers = check_numbers(
                session.claim,
                session.results,
                extra_info=session.extra_info,
                queries=[q["sql"] for q in session.queries],
            )
            finding = judge_numbers(label, session.numbers)
            if finding.action != "none":
                message = finding.message
                if finding.action == "override" and self.numbers_rule == "warn":
                    message = message.replace(
                        "ENTAILED changed to CONTRADICTED", "ENTAILED kept (numbers_rule=warn)"
                    )
                elif finding.action == "override":
                    label = finding.label
                session.steps.append(TraceStep("note", message))
                session.limits.append(LimitNotice("numbers_check", 0, message))
                confidence = min(confidence, DOUBT_CONFIDENCE)
        decisive = self._decisive(session)
        return Verdict(
            statement=session.claim,
            label=label,
            program="",
            result=_result_value(decisive),
            confidence=confidence,
            limits=tuple(session.limits),
            subtype=subtype,
            sql=decisive.sql if decisive is not None else "",
            source=self.source,
            trace=tuple(session.steps),
        )

    def _failure(self, session: _Session, reason: str) -> Verdict:
        session.steps.append(TraceStep("note", f"no verdict: {reason}"))
        session.limits.append(LimitNotice("llm", 0, f"no verdict from the model: {reason}"))
        session.justification = ""
        decisive = self._decisive(session)
        return Verdict(
            statement=session.claim,
            label=Label.NOT_ENOUGH_INFO,
            program="",
            result=_result_value(decisive),
            confidence=0.0,
            limits=tuple(session.limits),
            subtype=None,
            sql=decisive.sql if decisive is not None else "",
            source=f"{self.source} (no verdict: {one_line(reason, 300)})",
            trace=tuple(session.steps),
        )

    def _write_trace(self, session: _Session, verdict: Verdict | None, status: str) -> None:
        if self.trace is None:
            return
        record: dict[str, Any] = {
            "claim_id": session.claim_id,
            "claim": session.claim,
            "extra_info": session.extra_info,
            "model": getattr(self.client, "model", None),
            "status": status,
            "verdict": claimdb_label(verdict.label) if verdict is not None else None,
            "subtype": claimdb_category(verdict.subtype) if verdict is not None else None,
            "confidence": round(verdict.confidence, 4) if verdict is not None else None,
            "justification": session.justification,
            "source": verdict.source if verdict is not None else self.source,
            "warnings": list(verdict.warnings) if verdict is not None else [],
            "numbers": session.numbers.to_dict() if session.numbers is not None else None,
            "nei_check": session.nei.to_dict() if session.nei is not None else None,
            "queries": session.queries,
            "messages": session.messages,
            "tokens": dict(session.tokens),
            "tool_calls": session.tool_calls,
            "llm_calls": session.llm_calls,
            "elapsed_s": round(time.monotonic() - session.started, 3),
            "errors": session.errors,
        }
        self.trace.write(record)


def _result_value(result: QueryResult | None) -> ResultValue:
    """The decisive query's result for :attr:`Verdict.result`: its one value when it returned one
    row of one column, otherwise a short text of its rows."""
    if result is None:
        return None
    if len(result.rows) == 1 and len(result.columns) == 1:
        value = result.rows[0][0]
        if isinstance(value, float) and not math.isfinite(value):
            return str(value)
        if value is None or isinstance(value, bool | int | float | str):
            return value
    text = "; ".join(", ".join(str(v) for v in row) for row in result.rows[:10])
    if len(result.rows) > 10 or result.truncated:
        text += "; …"
    return one_line(text, 300)


__all__ = [
    "LlmVerifier",
    "ParsedVerdict",
    "TOOLS",
    "TOOL_NAME",
    "SYSTEM_PROMPT",
    "format_result",
    "label_from_text",
    "normalise_label",
    "normalise_subtype",
    "parse_verdict",
]
