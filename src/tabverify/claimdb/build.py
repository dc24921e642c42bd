"""The ClaimDB construction pipeline as a library: from (question, SQL, database) pairs to a claim
benchmark in the ClaimDB format (docs/claimdb-build.md).

The four stages, each usable on its own:

a. :func:`prefilter` keeps the pairs whose SQL needs composition (ORDER BY / superlative, an
   aggregate, a window function, 3+ tables) and whose answer, run through the safe query layer,
   has at most 10 rows; every dropped pair says why. No model.
b. :func:`generate` asks a chat model for ENTAILED and CONTRADICTED claims (one worked example
   each) and NOT ENOUGH INFO claims (zero-shot, given the schema) of the three subtypes.
c. :func:`judge` puts every claim to a panel of judges with a binary rubric; any "no", or a verdict
   that cannot be read, drops the claim.
d. :func:`rank_nei` embeds each NEI claim and its source question + answer and keeps the most
   similar quartile (the hardest NEI claims). No model needed: the default encoder is lexical.

:func:`build` runs a -> d over a pairs file and a BIRD-layout folder of databases and writes one
file per stage (resumed line by line when run again), ``claims.jsonl`` and ``report.json``.

Every stage is deterministic given its inputs (and, for b/c, given deterministic model replies:
the client's temperature defaults to 0). Chat clients are anything with the
:class:`tabverify.llm.client.ChatClient` ``chat(messages) -> reply`` method (see :class:`ChatLike`).
"""

from __future__ import annotations

import json
import math
import re
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from tabverify.claimdb.claims import claimdb_category, claimdb_label
from tabverify.database import Database, connect
from tabverify.database.safety import check
from tabverify.database.schema import render_schema
from tabverify.errors import DatabaseError, DatasetError, LlmError
from tabverify.files import parse_json, read_text
from tabverify.text.encoders import TextEncoder, embed, get_encoder
from tabverify.text.normalize import one_line
from tabverify.verify.verdict import Label, NeiSubtype

__all__ = [
    "CRITERIA",
    "DROP_REASONS",
    "RUBRIC",
    "Pair",
    "PairProblem",
    "Composition",
    "Kept",
    "Dropped",
    "BuiltClaim",
    "GenerationProblem",
    "JudgeVerdict",
    "Judged",
    "RankedNei",
    "BuildReport",
    "ChatLike",
    "BirdDatabases",
    "read_pairs",
    "composition",
    "prefilter",
    "generate",
    "parse_generated",
    "judge",
    "parse_verdict",
    "rank_nei",
    "similarities",
    "nei_threshold",
    "build",
]

# ---- constants -----------------------------------------------------------------------------------

CRITERIA = ("order_by", "superlative", "aggregate", "window", "join3")
"""The composition criteria of stage (a): ``order_by`` (an ORDER BY clause of a query),
``superlative`` (ORDER BY ... LIMIT, or an aggregate MAX/MIN), ``aggregate`` (AVG, SUM, COUNT, MIN,
MAX, GROUP_CONCAT, TOTAL, ... outside a window), ``window`` (any ``OVER``), ``join3`` (3 or more
distinct tables, subqueries included, CTE names not counted)."""

DROP_REASONS = (
    "unparseable",
    "refused",
    "no_composition",
    "no_database",
    "sql_error",
    "timeout",
    "too_many_rows",
    "answer_too_large",
    "empty_answer",
)
"""Why stage (a) drops a pair, in the order the checks run: sqlglot cannot parse the SQL as one
statement; the safe query layer refuses it (a write, a setting, a file); it meets no criterion; the
database file is missing or cannot be opened; the engine reports an error; it ran past the time
limit; its answer has more than ``max_rows`` rows; its answer is over the byte cap; its answer is
empty or all NULL (only with ``drop_empty``)."""

RUBRIC: dict[str, str] = {
    "label_correct": "Is the claim's label correct?",
    "self_contained": "Is the claim self-contained?",
    "subtype_correct": "Is the NOT ENOUGH INFO subtype right? (NEI claims only)",
    "no_schema_leak": "Is the claim free of table/column identifiers and SQL?",
}
"""The judges' binary questions. Each is phrased so that "yes" is good; any "no" drops a claim."""


DEFAULT_ENCODER = "lexical"
"""The encoder of stage (d) unless told (:mod:`tabverify.text.encoders`: numpy only, no model)."""
MAX_PAIRS_BYTES = 512 * 1024 * 1024
MAX_CLAIM_CHARS = 600
"""A generated claim longer than this is not a claim (discarded with a problem recorded)."""
MIN_CLAIM_CHARS = 8
MAX_SCHEMA_CHARS = 16_000
"""Schema text in a prompt is cut to this many characters."""
MAX_ANSWER_BYTES = 20_000
"""The byte cap on an answer in stage (a); larger answers are dropped (``answer_too_large``)."""
EXCERPT_CHARS = 400

STAGE_FILES = {
    "prefilter": "prefilter.jsonl",
    "generate": "generated.jsonl",
    "judge": "judged.jsonl",
    "rank": "nei_ranked.jsonl",
}
CLAIMS_FILE = "claims.jsonl"
REPORT_FILE = "report.json"
CONFIG_FILE = "config.json"

_NEI_CODES = {"OUT-OF-SCHEMA": NeiSubtype.OUT_OF_SCHEMA, "COUNTERFACTUAL": NeiSubtype.COUNTERFACTUAL,
              "SUBJECTIVE": NeiSubtype.SUBJECTIVE}  # fmt: skip
_WINDOW_ONLY = tuple(
    getattr(exp, name)
    for name in (
        "Rank",
        "DenseRank",
        "RowNumber",
        "CumeDist",
        "PercentRank",
        "Ntile",
        "Lag",
        "Lead",
        "FirstValue",
        "LastValue",
        "NthValue",
    )  # fmt: skip
    if hasattr(exp, name)
)
_ANONYMOUS_AGGREGATES = frozenset(
    "total group_concat string_agg median mode stdev stddev variance var_samp var_pop json_group_array "
    "json_group_object array_agg".split()
)


# ---- records -------------------------------------------------------------------------------------


def _plain_value(value: object) -> object:
    """A cell as JSON stores it (non-finite floats as strings, so the JSON stays strict)."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, list | tuple):
        return [_plain_value(v) for v in value]
    return value


def _rows_json(rows: Sequence[Sequence[object]]) -> list[list[object]]:
    return [[_plain_value(v) for v in row] for row in rows]


def _rows_from_json(data: object) -> tuple[tuple[object, ...], ...]:
    if not isinstance(data, list):
        return ()
    return tuple(tuple(row) if isinstance(row, list) else (row,) for row in data)


def _cell_text(value: object) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, float):
        return repr(round(value, 6)) if math.isfinite(value) else str(value)
    return str(value)


def answer_text(columns: Sequence[str], rows: Sequence[Sequence[object]], with_header: bool = True) -> str:
    """An answer as a small pipe-separated table (header line of column names first)."""
    lines = [" | ".join(columns)] if with_header and columns else []
    lines += [" | ".join(_cell_text(v) for v in row) for row in rows]
    return "\n".join(lines) if lines else "(no rows)"


def answer_values(rows: Sequence[Sequence[object]]) -> str:
    """The answer's values alone, for embedding (column names are schema identifiers, not words)."""
    return "; ".join(", ".join(_cell_text(v) for v in row) for row in rows)


@dataclass(frozen=True)
class Pair:
    """One (question, SQL, database) pair. ``evidence`` (BIRD's hint) becomes the claims' extra_info."""

    pair_id: str
    question: str
    sql: str
    db_id: str
    evidence: str = ""

    def to_dict(self) -> dict[str, object]:
        return {"pair_id": self.pair_id, "question": self.question, "SQL": self.sql, "db_id": self.db_id,
                "evidence": self.evidence}  # fmt: skip

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Pair:
        return cls(str(data["pair_id"]), str(data["question"]), str(data["SQL"]), str(data["db_id"]),
                   str(data.get("evidence") or ""))  # fmt: skip


@dataclass(frozen=True)
class PairProblem:
    """An input record that was skipped (``position``: its 1-based line, or list index + 1)."""

    position: int
    message: str

    def __str__(self) -> str:
        return f"record {self.position}: {self.message}"

    def to_dict(self) -> dict[str, object]:
        return {"position": self.position, "message": self.message}


@dataclass(frozen=True)
class Composition:
    """What the SQL syntax tree shows: the criteria met (in :data:`CRITERIA` order) and the distinct
    tables read (lower-case, CTE names excluded)."""

    criteria: tuple[str, ...]
    tables: tuple[str, ...]


@dataclass(frozen=True)
class Kept:
    """A pair kept by :func:`prefilter`: the criteria it meets, its tables and its answer."""

    pair: Pair
    criteria: tuple[str, ...]
    tables: tuple[str, ...]
    columns: tuple[str, ...]
    rows: tuple[tuple[object, ...], ...]

    def to_dict(self) -> dict[str, object]:
        return {**self.pair.to_dict(), "kept": True, "criteria": list(self.criteria),
                "tables": list(self.tables), "columns": list(self.columns),
                "rows": _rows_json(self.rows)}  # fmt: skip

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Kept:
        return cls(Pair.from_dict(data), tuple(data.get("criteria") or ()), tuple(data.get("tables") or ()),
                   tuple(data.get("columns") or ()), _rows_from_json(data.get("rows")))  # fmt: skip


@dataclass(frozen=True)
class Dropped:
    """A pair dropped by :func:`prefilter`: ``reason`` is one of :data:`DROP_REASONS`; ``detail``
    says more (the engine's message, the row count)."""

    pair: Pair
    reason: str
    detail: str = ""
    criteria: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, object]:
        return {**self.pair.to_dict(), "kept": False, "reason": self.reason, "detail": self.detail,
                "criteria": list(self.criteria)}  # fmt: skip

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Dropped:
        return cls(Pair.from_dict(data), str(data["reason"]), str(data.get("detail") or ""),
                   tuple(data.get("criteria") or ()))  # fmt: skip


@dataclass(frozen=True)
class BuiltClaim:
    """A generated claim with its provenance (the pair and answer it came from).

    :meth:`to_record` writes the ClaimDB format (``claim_id``, ``db_name``, ``label``, ``category``,
    ``claim``, ``extra_info``) plus ``source_id``, ``source_question``, ``source_sql``,
    ``source_answer`` ({columns, rows}), ``generator`` and, once ranked, ``similarity``. The
    claims reader (:func:`tabverify.claimdb.read_claims`) ignores the provenance fields, and a
    verifier only ever sees ``claim`` and ``extra_info``."""

    claim_id: str
    db_name: str
    label: Label
    category: NeiSubtype | None
    claim: str
    extra_info: str
    pair_id: str
    question: str
    sql: str
    columns: tuple[str, ...] = ()
    rows: tuple[tuple[object, ...], ...] = ()
    generator: str = ""
    similarity: float | None = None

    def to_record(self) -> dict[str, object]:
        record: dict[str, object] = {
            "claim_id": self.claim_id,
            "db_name": self.db_name,
            "label": claimdb_label(self.label),
            "category": claimdb_category(self.category),
            "claim": self.claim,
            "extra_info": self.extra_info,
            "source_id": self.pair_id,
            "source_question": self.question,
            "source_sql": self.sql,
            "source_answer": {"columns": list(self.columns), "rows": _rows_json(self.rows)},
            "generator": self.generator,
        }
        if self.similarity is not None:
            record["similarity"] = round(self.similarity, 6)
        return record

    @classmethod
    def from_record(cls, data: Mapping[str, Any]) -> BuiltClaim:
        label_text = str(data["label"]).upper()
        label = Label.REFUTED if label_text == "CONTRADICTED" else Label(label_text)
        category = _NEI_CODES.get(str(data.get("category") or "").upper())
        answer = data.get("source_answer") or {}
        similarity = data.get("similarity")
        return cls(
            claim_id=str(data["claim_id"]),
            db_name=str(data["db_name"]),
            label=label,
            category=category,
            claim=str(data["claim"]),
            extra_info=str(data.get("extra_info") or ""),
            pair_id=str(data.get("source_id") or ""),
            question=str(data.get("source_question") or ""),
            sql=str(data.get("source_sql") or ""),
            columns=tuple(answer.get("columns") or ()),
            rows=_rows_from_json(answer.get("rows")),
            generator=str(data.get("generator") or ""),
            similarity=float(similarity) if isinstance(similarity, int | float) else None,
        )


@dataclass(frozen=True)
class GenerationProblem:
    """A generation request whose reply was unusable (or whose call failed), or one claim in a reply
    that was discarded. ``kind``: ``entailed``, ``contradicted`` or ``nei``."""

    pair_id: str
    kind: str
    message: str
    reply: str = ""

    def to_dict(self) -> dict[str, object]:
        return {"pair_id": self.pair_id, "kind": self.kind, "message": self.message, "reply": self.reply}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GenerationProblem:
        return cls(
            str(data["pair_id"]), str(data["kind"]), str(data["message"]), str(data.get("reply") or "")
        )


@dataclass(frozen=True)
class JudgeVerdict:
    """One judge's answers on one claim. ``answers`` maps each asked rubric key to True (yes),
    False (no) or None (not answered, which counts as no). ``passed``: every answer yes.
    ``problem``: why the verdict could not be read or the call failed (then ``passed`` is False)."""

    judge: str
    answers: dict[str, bool | None]
    passed: bool
    problem: str = ""
    reply: str = ""

    @property
    def failed(self) -> tuple[str, ...]:
        """The rubric keys answered no (or not at all)."""
        return tuple(key for key, value in self.answers.items() if value is not True)

    def to_dict(self) -> dict[str, object]:
        return {"judge": self.judge, "answers": dict(self.answers), "passed": self.passed,
                "problem": self.problem, "reply": self.reply}  # fmt: skip

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> JudgeVerdict:
        answers = {
            str(k): (v if isinstance(v, bool) else None) for k, v in (data.get("answers") or {}).items()
        }
        return cls(str(data["judge"]), answers, bool(data.get("passed")), str(data.get("problem") or ""),
                   str(data.get("reply") or ""))  # fmt: skip


@dataclass(frozen=True)
class Judged:
    """A claim with every judge's verdict; ``kept`` when all of them passed it."""

    claim: BuiltClaim
    verdicts: tuple[JudgeVerdict, ...]

    @property
    def kept(self) -> bool:
        return all(v.passed for v in self.verdicts)

    def to_dict(self) -> dict[str, object]:
        return {"claim_id": self.claim.claim_id, "claim": self.claim.claim, "kept": self.kept,
                "verdicts": [v.to_dict() for v in self.verdicts]}  # fmt: skip


@dataclass(frozen=True)
class RankedNei:
    """An NEI claim's cosine similarity to its source question + answer, its rank (1 = most
    similar) and whether it is in the kept (most similar) fraction."""

    claim: BuiltClaim
    similarity: float
    rank: int
    kept: bool

    def to_dict(self) -> dict[str, object]:
        return {"claim_id": self.claim.claim_id, "category": claimdb_category(self.claim.category),
                "similarity": round(self.similarity, 6), "rank": self.rank, "kept": self.kept}  # fmt: skip


@dataclass
class BuildReport:
    """What :func:`build` did; :meth:`to_dict` is ``report.json``."""

    out_dir: Path
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def claims_path(self) -> Path:
        return self.out_dir / CLAIMS_FILE

    def to_dict(self) -> dict[str, Any]:
        return self.data


# ---- reading pairs -------------------------------------------------------------------------------


def _text_field(record: Mapping[str, Any], keys: Sequence[str], required: bool) -> str:
    for key in keys:
        value = record.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise ValueError(f'"{key}" must be a string')
        text = str(value).strip()
        if text:
            return text
    if required:
        raise ValueError(f'no "{keys[0]}"')
    return ""


def _pair_from_record(record: object, position: int) -> Pair:
    if not isinstance(record, dict):
        raise ValueError("not a JSON object")
    pair_id = _text_field(record, ("question_id", "pair_id", "id"), False) or str(position)
    return Pair(
        pair_id=pair_id,
        question=_text_field(record, ("question",), True),
        sql=_text_field(record, ("SQL", "sql", "query"), True),
        db_id=_text_field(record, ("db_id",), True),
        evidence=_text_field(record, ("evidence",), False),
    )


def read_pairs(path: str | Path) -> tuple[list[Pair], list[PairProblem]]:
    """The pairs of a BIRD-format file: JSON Lines (one object a line) or a JSON list (BIRD's
    ``dev.json``). Each record has ``question``, ``SQL`` (or ``sql``), ``db_id`` and optionally
    ``evidence`` and ``question_id`` (the pair id; else the record's position). Bad records are
    returned as problems; DatasetError only when the file cannot be read at all."""
    text = read_text(path, "pairs file (JSON Lines or a JSON list)", DatasetError, MAX_PAIRS_BYTES)
    records: list[tuple[int, object]] = []
    problems: list[PairProblem] = []
    if text.lstrip().startswith("["):
        data = parse_json(text, str(path), DatasetError)
        records = list(enumerate(data, start=1))
    else:
        for number, raw in enumerate(text.splitlines(), start=1):
            if not raw.strip():
                continue
            try:
                records.append((number, parse_json(raw, f"line {number}", DatasetError)))
            except DatasetError as exc:
                problems.append(PairProblem(number, str(exc).removeprefix(f"line {number}: ")))
    pairs: list[Pair] = []
    seen: set[str] = set()
    for position, record in records:
        try:
            pair = _pair_from_record(record, position)
        except ValueError as exc:
            problems.append(PairProblem(position, str(exc)))
            continue
        if pair.pair_id in seen:
            problems.append(PairProblem(position, f"pair id {pair.pair_id} appears twice; kept the first"))
            continue
        seen.add(pair.pair_id)
        pairs.append(pair)
    return pairs, problems


# ---- stage (a): prefilter ------------------------------------------------------------------------


def _parse_one(sql: str, dialect: str) -> exp.Expression:
    try:
        trees = [
            t for t in sqlglot.parse(sql, read=dialect) if t is not None and not isinstance(t, exp.Semicolon)
        ]
    except (ParseError, TokenError) as exc:
        message = re.sub(r"\x1b\[[0-9;]*m", "", " ".join(str(exc).split()))
        raise ValueError(message[:300]) from None
    except RecursionError:
        raise ValueError("nested too deeply to parse") from None
    if len(trees) != 1:
        raise ValueError(f"expected one statement, found {len(trees)}")
    return trees[0]


def _windowed(node: exp.Expression) -> bool:
    return isinstance(node.parent, exp.Window) and node.arg_key == "this"


def composition(sql: str, dialect: str = "sqlite") -> Composition:
    """The composition criteria (:data:`CRITERIA`) met by one SQL statement, from its sqlglot tree.

    ValueError when the text is not exactly one statement sqlglot can parse."""
    tree = _parse_one(sql, dialect)
    found: set[str] = set()
    for node in tree.walk():
        if isinstance(node, exp.Window):
            found.add("window")
        elif isinstance(node, exp.Order) and node.arg_key == "order" and isinstance(node.parent, exp.Query):
            found.add("order_by")
            if node.parent.args.get("limit") is not None:
                found.add("superlative")
        elif isinstance(node, exp.AggFunc) and not isinstance(node, _WINDOW_ONLY) and not _windowed(node):
            found.add("aggregate")
            if isinstance(node, exp.Max | exp.Min):
                found.add("superlative")
        elif (
            isinstance(node, exp.Anonymous)
            and str(node.this).lower() in _ANONYMOUS_AGGREGATES
            and not _windowed(node)
        ):
            found.add("aggregate")
    ctes = {cte.alias.lower() for cte in tree.find_all(exp.CTE) if cte.alias}
    tables: set[str] = set()
    for table in tree.find_all(exp.Table):
        name = table.name.lower()
        if not name or (not table.db and name in ctes):
            continue
        tables.add(f"{table.db.lower()}.{name}" if table.db else name)
    if len(tables) >= 3:
        found.add("join3")
    return Composition(tuple(c for c in CRITERIA if c in found), tuple(sorted(tables)))


class BirdDatabases:
    """The databases of a BIRD-layout folder, ``<dbs_dir>/<db_id>/<db_id>.sqlite``, opened read-only
    on first use (with their ``database_description/`` when present) and closed by :meth:`close`."""

    SUFFIXES = (".sqlite", ".sqlite3", ".db", ".duckdb")

    def __init__(self, dbs_dir: str | Path):
        self.folder = Path(dbs_dir)
        if not self.folder.is_dir():
            raise DatasetError(
                f"{self.folder}: no such folder; give the folder holding <db_id>/<db_id>.sqlite"
            )
        self._open: dict[str, Database | None] = {}
        self.problems: dict[str, str] = {}
        self._lock = threading.Lock()

    def path(self, db_id: str) -> Path | None:
        """The database file of ``db_id``, or None."""
        if not db_id or "/" in db_id or "\\" in db_id or db_id in (".", ".."):
            return None
        for suffix in self.SUFFIXES:
            candidate = self.folder / db_id / f"{db_id}{suffix}"
            if candidate.is_file():
                return candidate
        return None

    def get(self, db_id: str) -> Database | None:
        """The open database ``db_id``, or None (the reason is in :attr:`problems`)."""
        with self._lock:
            if db_id not in self._open:
                path = self.path(db_id)
                if path is None:
                    self._open[db_id] = None
                    self.problems[db_id] = f"no {self.folder}/{db_id}/{db_id}.sqlite"
                else:
                    try:
                        self._open[db_id] = connect(path)
                    except DatabaseError as exc:
                        self._open[db_id] = None
                        self.problems[db_id] = str(exc)
            return self._open[db_id]

    def close(self) -> None:
        with self._lock:
            for database in self._open.values():
                if database is not None:
                    database.close()
            self._open.clear()

    def __enter__(self) -> BirdDatabases:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


DatabasesLike = Mapping[str, Database] | BirdDatabases | str | Path


def _database_getter(
    databases: DatabasesLike,
) -> tuple[Callable[[str], Database | None], Callable[[str], str], Callable[[], None]]:
    """(get, why-missing, close) for any accepted ``databases`` argument."""
    if isinstance(databases, str | Path):
        owned = BirdDatabases(databases)
        return owned.get, lambda db: owned.problems.get(db, f"no database {db}"), owned.close
    if isinstance(databases, BirdDatabases):
        bird = databases
        return bird.get, lambda db: bird.problems.get(db, f"no database {db}"), lambda: None
    mapping = databases
    return mapping.get, lambda db: f"no database {db!r} among the {len(mapping)} given", lambda: None


def _all_null(rows: Sequence[Sequence[object]]) -> bool:
    return all(v is None for row in rows for v in row)


def _prefilter_one(
    pair: Pair,
    get: Callable[[str], Database | None],
    why_missing: Callable[[str], str],
    max_rows: int,
    timeout_s: float,
    drop_empty: bool,
    dialect: str,
) -> Kept | Dropped:
    try:
        found = composition(pair.sql, dialect)
    except ValueError as exc:
        return Dropped(pair, "unparseable", str(exc))
    checked = check(pair.sql, dialect)
    if checked.refusal is not None:
        return Dropped(pair, "refused", checked.refusal, found.criteria)
    if not found.criteria:
        return Dropped(pair, "no_composition", f"tables: {', '.join(found.tables) or 'none'}")
    database = get(pair.db_id)
    if database is None:
        return Dropped(pair, "no_database", why_missing(pair.db_id), found.criteria)
    result = database.query(pair.sql, max_rows=max_rows, max_bytes=MAX_ANSWER_BYTES, timeout_s=timeout_s)
    if not result.ok:
        reason = {"timeout": "timeout", "refused": "refused"}.get(result.error_kind or "", "sql_error")
        return Dropped(pair, reason, result.error or "", found.criteria)
    if result.truncated:
        if len(result.rows) >= max_rows or (result.total_rows or 0) > max_rows:
            total = f"{result.total_rows:,}" if result.total_rows is not None else f"more than {max_rows}"
            return Dropped(pair, "too_many_rows", f"{total} rows (limit {max_rows})", found.criteria)
        return Dropped(pair, "answer_too_large", f"over {MAX_ANSWER_BYTES:,} bytes in {len(result.rows)} rows",
                       found.criteria)  # fmt: skip
    if drop_empty and (not result.rows or _all_null(result.rows)):
        detail = "no rows" if not result.rows else "every value is NULL"
        return Dropped(pair, "empty_answer", detail, found.criteria)
    return Kept(pair, found.criteria, found.tables, tuple(result.columns), tuple(result.rows))


def prefilter(
    pairs: Iterable[Pair],
    databases: DatabasesLike,
    *,
    max_rows: int = 10,
    timeout_s: float = 30.0,
    drop_empty: bool = True,
    dialect: str = "sqlite",
    on_result: Callable[[Kept | Dropped], None] | None = None,
) -> tuple[list[Kept], list[Dropped]]:
    """Stage (a): keep the pairs whose SQL needs composition and whose answer has at most
    ``max_rows`` rows.

    ``databases``: a BIRD-layout folder (``<dir>/<db_id>/<db_id>.sqlite``), a :class:`BirdDatabases`,
    or a mapping ``db_id -> Database``. Every query goes through :meth:`Database.query` (read-only,
    ``timeout_s`` per query, ``max_rows`` rows and :data:`MAX_ANSWER_BYTES` bytes at most). Checks,
    in order: parse (sqlglot, ``dialect``), the parser safety layer, the criteria, then the query;
    see :data:`DROP_REASONS`. ``drop_empty`` also drops answers with no rows or only NULLs (nothing
    for a claim to state). ``on_result`` is called with each outcome as it is decided (for a
    stage file). Returns (kept, dropped), each in input order."""
    if isinstance(max_rows, bool) or not isinstance(max_rows, int) or max_rows < 1:
        raise ValueError(f"max_rows must be a positive integer, got {max_rows!r}")
    get, why_missing, close = _database_getter(databases)
    kept: list[Kept] = []
    dropped: list[Dropped] = []
    try:
        for pair in pairs:
            outcome = _prefilter_one(pair, get, why_missing, max_rows, timeout_s, drop_empty, dialect)
            (kept if isinstance(outcome, Kept) else dropped).append(outcome)  # type: ignore[arg-type]
            if on_result is not None:
                on_result(outcome)
    finally:
        close()
    return kept, dropped


# ---- schema text -------------------------------------------------------------------------------


def _schemas_for(databases: DatabasesLike, db_ids: Iterable[str]) -> dict[str, str]:
    get, _why, close = _database_getter(databases)
    texts: dict[str, str] = {}
    try:
        for db_id in sorted(set(db_ids)):
            database = get(db_id)
            if database is not None:
                try:
                    texts[db_id] = render_schema(database.schema(), MAX_SCHEMA_CHARS)
                except DatabaseError:
                    continue
    finally:
        close()
    return texts


# ---- chat clients --------------------------------------------------------------------------------


class ChatLike(Protocol):
    """What the pipeline needs of a chat client: :class:`tabverify.llm.client.ChatClient`'s
    ``chat``, returning an object whose ``message`` is the OpenAI-style assistant message dict."""

    def chat(self, messages: list[dict], tools: list[dict] | None = None, tool_choice: Any = None) -> Any: ...


def client_name(client: object, fallback: str) -> str:
    """A client's model name (``client.config.model``) or ``fallback``."""
    model = getattr(getattr(client, "config", None), "model", None)
    return str(model) if model else fallback


def _reply_text(reply: object) -> str:
    message = getattr(reply, "message", None)
    if message is None and isinstance(reply, Mapping):
        message = reply.get("message")
    content = message.get("content") if isinstance(message, Mapping) else None
    if isinstance(content, list):  # OpenAI content parts
        content = "".join(str(p.get("text") or "") for p in content if isinstance(p, Mapping))
    return content if isinstance(content, str) else ""


_THINK = re.compile(r"<think>.*?(</think>|$)", re.S | re.I)
_FENCE = re.compile(r"```[a-zA-Z]*\s*\n?(.*?)```", re.S)


def _json_candidates(text: str) -> Iterator[object]:
    """JSON values found in a model reply: the whole text, fenced blocks, then every decodable
    object or array starting at a bracket (outermost first)."""
    text = _THINK.sub("", text).strip()
    pieces = [text] + [m.group(1).strip() for m in _FENCE.finditer(text)]
    decoder = json.JSONDecoder()
    for piece in pieces:
        try:
            yield json.loads(piece)
            continue
        except (ValueError, RecursionError):
            pass
        index = 0
        while True:
            starts = [i for i in (piece.find("{", index), piece.find("[", index)) if i >= 0]
            if not starts:
                break
            start = min(starts)
            try:
                value, end = decoder.raw_decode(piece, start)
            except (ValueError, RecursionError):
                index = start + 1
                continue
            yield value
            index = end


CALL_FAILED = "the model call failed"
JUDGE_CALL_FAILED = "the judge call failed"


class _FailureGuard:
    """Counts model calls that failed in a row (over all threads) and stops the stage with an
    LlmError after ``limit`` of them: a wrong URL or a dead server should not turn every pair into
    a recorded failure. None: never stop."""

    def __init__(self, limit: int | None, what: str):
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
            raise ValueError(f"stop_after_failures must be a positive integer or None, got {limit!r}")
        self.limit = limit
        self.what = what
        self.in_row = 0
        self.stopped: LlmError | None = None
        self._lock = threading.Lock()

    def check(self) -> None:
        """Raise the stopping LlmError again once the limit was reached (no further calls)."""
        if self.stopped is not None:
            raise LlmError(str(self.stopped))

    def ok(self) -> None:
        with self._lock:
            self.in_row = 0

    def failed(self, error: LlmError) -> None:
        with self._lock:
            self.in_row += 1
            if self.stopped is None and self.limit is not None and self.in_row >= self.limit:
                self.stopped = LlmError(
                    f"stopped: {self.in_row} {self.what} calls in a row failed (the last: {error}); "
                    "check the server, then run again to resume"
                )
        self.check()


# ---- stage (b): generation -----------------------------------------------------------------------

GENERATE_SYSTEM = (
    "You write claims for a fact-verification benchmark over relational databases. A claim is one "
    "declarative sentence in plain natural language about the data. Every claim must be self-contained "
    "(a reader who never saw the question understands it: no 'this', 'the above', 'the query', 'the "
    "answer'), must never name tables, columns or SQL, and must read like something a person would "
    "write. Reply with JSON only."
)

_EXAMPLE = {
    "question": "How many schools in Alameda County enroll more than 500 students?",
    "evidence": "more than 500 students refers to enrollment > 500",
    "sql": "SELECT COUNT(*) FROM schools WHERE county = 'Alameda' AND enrollment > 500",
    "columns": ("COUNT(*)",),
    "rows": ((37,),),
    "entailed": [
        "Alameda County has 37 schools that each enroll more than 500 students.",
        "Exactly 37 schools in Alameda County have an enrollment above 500 students.",
    ],
    "contradicted": [
        "Alameda County has 52 schools that each enroll more than 500 students.",
        "Fewer than 30 schools in Alameda County enroll more than 500 students.",
    ],
}

_TASKS = {
    "entailed": (
        "Write {n} different claims that this answer ENTAILS: the answer proves each claim true. State the "
        "specific facts (names, numbers, dates) the answer gives, in natural wording; you may round "
        "numbers sensibly or restate a comparison, but never add facts the answer does not support."
    ),
    "contradicted": (
        "Write {n} different claims that this answer CONTRADICTS: the answer proves each claim false. Stay "
        "close to the question's subject and wording but change a value, the ranking, the comparison or "
        "the count so that the claim is plainly false (not merely unsupported)."
    ),
}


def _pair_block(pair: Pair, columns: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    return (
        f"Question: {pair.question}\n"
        f"Hint: {pair.evidence or '(none)'}\n"
        f"SQL: {pair.sql}\n"
        f"Answer ({len(rows)} row{'s' if len(rows) != 1 else ''}):\n{answer_text(columns, rows)}"
    )


def _format_rules(n: int) -> str:
    return f'Reply with JSON only, exactly {n} claims: {{"claims": ["...", "..."]}}'


def generation_messages(kept: Kept, kind: str, n: int, schema: str | None = None) -> list[dict]:
    """The chat messages asking for ``n`` claims of ``kind`` (``entailed`` / ``contradicted``, with
    one worked example) or ``n`` NEI claims of each subtype (``nei``, zero-shot, given the schema)."""
    block = _pair_block(kept.pair, kept.columns, kept.rows)
    if kind in _TASKS:
        example_pair = Pair("example", _EXAMPLE["question"], _EXAMPLE["sql"], "example", _EXAMPLE["evidence"])
        example_block = _pair_block(example_pair, _EXAMPLE["columns"], _EXAMPLE["rows"])
        example_claims = _EXAMPLE[kind]
        return [
            {"role": "system", "content": GENERATE_SYSTEM},
            {
                "role": "user",
                "content": f"{example_block}\n\n{_TASKS[kind].format(n=len(example_claims))}\n"
                f"{_format_rules(len(example_claims))}",
            },
            {"role": "assistant", "content": json.dumps({"claims": example_claims})},
            {"role": "user", "content": f"{block}\n\n{_TASKS[kind].format(n=n)}\n{_format_rules(n)}"},
        ]
    if kind != "nei":
        raise ValueError(f"unknown generation kind {kind!r}; use entailed, contradicted or nei")
    task = (
        f"Database schema:\n{schema or '(not given)'}\n\n{block}\n\n"
        f"Write claims on the topic of this question and about the same entities that this database CANNOT "
        f"settle either way, however it is queried: {n} of each kind.\n"
        "- OUT-OF-SCHEMA: about something the database does not record at all (a cause, a motive, a "
        "person's opinion, an attribute with no counterpart in the schema), while staying on the same "
        "entities;\n"
        '- COUNTERFACTUAL: a what-if about a hypothetical change ("If ..., ... would have ...");\n'
        "- SUBJECTIVE: a value judgement (the best, the most impressive, a disappointing ...).\n"
        "Stay close to the question's topic so the claims sound answerable, but make sure no data in the "
        "schema could prove or disprove them.\n"
        f'Reply with JSON only, {3 * n} claims: {{"claims": [{{"category": "OUT-OF-SCHEMA", "claim": "..."}}, '
        '{"category": "COUNTERFACTUAL", "claim": "..."}, {"category": "SUBJECTIVE", "claim": "..."}]}'
    )
    return [{"role": "system", "content": GENERATE_SYSTEM}, {"role": "user", "content": task}]


def _nei_category(text: object) -> NeiSubtype | None:
    key = re.sub(r"[\s_]+", "-", str(text or "").strip().upper())
    if key in _NEI_CODES:
        return _NEI_CODES[key]
    if key.startswith("OUT") or "SCHEMA" in key:
        return NeiSubtype.OUT_OF_SCHEMA
    if key.startswith("COUNTER") or "WHAT-IF" in key or "HYPOTHETICAL" in key:
        return NeiSubtype.COUNTERFACTUAL
    if key.startswith("SUBJ") or "OPINION" in key:
        return NeiSubtype.SUBJECTIVE
    return None


_CLAIM_KEYS = ("claim", "text", "statement", "sentence")
_CATEGORY_KEYS = ("category", "subtype", "type", "kind", "nei_type")


def _items(value: object, category: object = None) -> list[tuple[object, object]]:
    """(claim, category) items from a decoded reply, in order."""
    if isinstance(value, str):
        return [(value, category)]
    if isinstance(value, list):
        return [item for v in value for item in _items(v, category)]
    if isinstance(value, dict):
        for key in _CLAIM_KEYS:
            if isinstance(value.get(key), str):
                found = next((value[k] for k in _CATEGORY_KEYS if value.get(k) is not None), category)
                return [(value[key], found)]
        for key in ("claims", "entailed", "contradicted", "nei", "results", "items"):
            if key in value:
                return _items(value[key], category)
        results: list[tuple[object, object]] = []
        for key, inner in value.items():  # {"OUT-OF-SCHEMA": [...], ...}
            if _nei_category(key) is not None:
                results += _items(inner, key)
        return results
    return []


_LIST_LINE = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+(.*\S)\s*$")


def parse_generated(text: str, kind: str) -> list[tuple[str, NeiSubtype | None]] | None:
    """The (claim, NEI subtype) items of a generation reply, leniently: JSON anywhere in the text
    (fenced or not, ``{"claims": [...]}``, a bare list, objects with ``claim``/``category``, NEI
    claims keyed by subtype), else a bulleted or numbered list. None when nothing could be read.
    Items are returned as found; :func:`generate` validates them."""
    for value in _json_candidates(text):
        items = _items(value)
        if items:
            return [(str(c), _nei_category(cat) if kind == "nei" else None) for c, cat in items]
    lines = [m.group(1) for m in map(_LIST_LINE.match, _THINK.sub("", text).splitlines()) if m]
    if not lines:
        return None
    results: list[tuple[str, NeiSubtype | None]] = []
    for line in lines:
        category: NeiSubtype | None = None
        if kind == "nei":
            head, sep, rest = line.partition(":")
            category = _nei_category(head.strip("*[] ")) if sep else None
            line = rest if category is not None else line
        results.append((line, category))
    return results


def _clean_claim(text: str) -> str:
    text = " ".join(str(text).split())
    return text.strip().strip('"“”').strip()


@dataclass(frozen=True)
class _Counts:
    entailed: int
    contradicted: int
    nei: int


def _generate_one(
    kept: Kept, client: ChatLike, model: str, counts: _Counts, schema: str | None, guard: _FailureGuard
) -> tuple[list[BuiltClaim], list[GenerationProblem]]:
    pair = kept.pair
    claims: list[BuiltClaim] = []
    problems: list[GenerationProblem] = []
    seen: set[str] = set()
    plan = [("entailed", counts.entailed), ("contradicted", counts.contradicted), ("nei", counts.nei)]
    for kind, n in plan:
        if n <= 0:
            continue
        guard.check()
        try:
            reply = client.chat(generation_messages(kept, kind, n, schema))
        except LlmError as exc:
            guard.failed(exc)
            problems.append(GenerationProblem(pair.pair_id, kind, f"{CALL_FAILED}: {exc}"))
            continue
        guard.ok()
        text = _reply_text(reply)
        items = parse_generated(text, kind)
        if not items:
            problems.append(GenerationProblem(pair.pair_id, kind, "no claims could be read from the reply",
                                              one_line(text, EXCERPT_CHARS)))  # fmt: skip
            continue
        label = {"entailed": Label.ENTAILED, "contradicted": Label.REFUTED}.get(kind, Label.NOT_ENOUGH_INFO)
        taken: Counter[NeiSubtype | None] = Counter()
        for raw, category in items:
            claim = _clean_claim(raw)
            if kind == "nei" and category is None:
                problems.append(GenerationProblem(pair.pair_id, kind, "an NEI claim without a known subtype",
                                                  one_line(claim, EXCERPT_CHARS)))  # fmt: skip
                continue
            if not MIN_CLAIM_CHARS <= len(claim) <= MAX_CLAIM_CHARS:
                problems.append(GenerationProblem(pair.pair_id, kind, f"a claim of {len(claim)} characters",
                                                  one_line(claim, EXCERPT_CHARS)))  # fmt: skip
                continue
            if claim.casefold() in seen or taken[category] >= n:
                continue
            seen.add(claim.casefold())
            taken[category] += 1
            code = {"entailed": "E", "contradicted": "C"}.get(kind, "N")
            number = sum(1 for c in claims if c.claim_id.startswith(f"{pair.pair_id}-{code}")) + 1
            claims.append(
                BuiltClaim(
                    claim_id=f"{pair.pair_id}-{code}{number}",
                    db_name=pair.db_id,
                    label=label,
                    category=category if kind == "nei" else None,
                    claim=claim,
                    extra_info=pair.evidence,
                    pair_id=pair.pair_id,
                    question=pair.question,
                    sql=pair.sql,
                    columns=kept.columns,
                    rows=kept.rows,
                    generator=model,
                )
            )
    return claims, problems


def _ordered_map(function: Callable[[Any], Any], items: Sequence[Any], workers: int) -> Iterator[Any]:
    """``map`` in input order, over ``workers`` threads when more than one."""
    if workers <= 1 or len(items) <= 1:
        yield from map(function, items)
        return
    with ThreadPoolExecutor(max_workers=workers) as pool:
        yield from pool.map(function, items)


def generate(
    kept: Sequence[Kept],
    client: ChatLike,
    *,
    schemas: Mapping[str, str] | None = None,
    entailed: int = 2,
    contradicted: int = 2,
    nei_per_subtype: int = 1,
    workers: int = 1,
    stop_after_failures: int | None = 20,
    on_pair: Callable[[Kept, list[BuiltClaim], list[GenerationProblem]], None] | None = None,
) -> tuple[list[BuiltClaim], list[GenerationProblem]]:
    """Stage (b): claims from each kept pair's question, SQL and answer.

    Per pair, three requests: ``entailed`` ENTAILED claims and ``contradicted`` CONTRADICTED claims
    (each with one worked example), and ``nei_per_subtype`` NOT ENOUGH INFO claims of each subtype
    (zero-shot, given ``schemas[db_id]``, the schema text of
    :func:`~tabverify.database.schema.render_schema`, so they stay on-topic).
    Replies are read leniently (:func:`parse_generated`); a reply with nothing readable, a failed
    call (LlmError), an NEI claim without a known subtype or an over-long claim is recorded as a
    :class:`GenerationProblem` and skipped. Claim ids are ``<pair_id>-E1``, ``-C1``, ``-N1`` ...
    ``extra_info`` is the pair's evidence. ``workers`` > 1 sends requests for several pairs at once;
    results stay in input order. ``on_pair`` is called once per pair when its requests are done.
    After ``stop_after_failures`` failed calls in a row the stage stops with an LlmError (the pairs
    finished so far have been passed to ``on_pair``)."""
    counts = _Counts(max(0, entailed), max(0, contradicted), max(0, nei_per_subtype))
    model = client_name(client, "generator")
    guard = _FailureGuard(stop_after_failures, "generation")
    lock = threading.Lock()

    def run(item: Kept) -> tuple[list[BuiltClaim], list[GenerationProblem]]:
        schema = (schemas or {}).get(item.pair.db_id)
        result = _generate_one(item, client, model, counts, schema, guard)
        if on_pair is not None:
            with lock:
                on_pair(item, *result)
        return result

    claims: list[BuiltClaim] = []
    problems: list[GenerationProblem] = []
    for pair_claims, pair_problems in _ordered_map(run, list(kept), workers):
        claims += pair_claims
        problems += pair_problems
    return claims, problems


# ---- stage (c): judging --------------------------------------------------------------------------

JUDGE_SYSTEM = (
    "You are a strict quality judge for a fact-verification benchmark over relational databases. You "
    "answer yes/no questions about one generated claim. If you are unsure about a question, answer no. "
    "Reply with JSON only."
)

_SUBTYPE_DEFINITIONS = {
    NeiSubtype.OUT_OF_SCHEMA: "OUT-OF-SCHEMA: it is about something the database does not record at all",
    NeiSubtype.COUNTERFACTUAL: "COUNTERFACTUAL: a what-if about a hypothetical change",
    NeiSubtype.SUBJECTIVE: "SUBJECTIVE: a value judgement or opinion",
}


def rubric_keys(claim: BuiltClaim) -> tuple[str, ...]:
    """The rubric questions asked about ``claim`` (the subtype question only for NEI claims)."""
    if claim.label is Label.NOT_ENOUGH_INFO:
        return ("label_correct", "self_contained", "subtype_correct", "no_schema_leak")
    return ("label_correct", "self_contained", "no_schema_leak")


def judge_messages(claim: BuiltClaim, schema: str | None = None) -> list[dict]:
    """The chat messages putting the rubric questions about ``claim`` to a judge."""
    label = claimdb_label(claim.label)
    if claim.label is Label.ENTAILED:
        meaning = "the answer proves the claim true"
        correct = "Does the answer to the question prove the claim TRUE (every fact in it supported)?"
    elif claim.label is Label.REFUTED:
        meaning = "the answer proves the claim false"
        correct = "Does the answer to the question prove the claim FALSE (not merely leave it unsupported)?"
    else:
        meaning = "no query over this database could prove or disprove the claim"
        correct = "Is it impossible to prove or disprove the claim from this database's data, however it is queried?"
    questions = {
        "label_correct": correct,
        "self_contained": "Is the claim one self-contained statement a reader understands without the question "
        "(no 'this', 'the above', 'the query', 'the answer')?",
        "no_schema_leak": "Does the claim avoid naming tables or columns by their identifiers (snake_case or "
        "CamelCase names, T1.x, SQL)? Ordinary words that happen to match a column are fine.",
    }
    if claim.category is not None:
        questions["subtype_correct"] = (
            f"The claim is said to be {_SUBTYPE_DEFINITIONS[claim.category]}. Is it of that kind?"
        )
    keys = rubric_keys(claim)
    listed = "\n".join(f"- {key}: {questions[key]}" for key in keys)
    example = ", ".join(f'"{key}": "yes"' for key in keys)
    content = (
        f"Database schema:\n{schema or '(not given)'}\n\n"
        f"Source question: {claim.question}\nHint: {claim.extra_info or '(none)'}\nSQL: {claim.sql}\n"
        f"Answer ({len(claim.rows)} rows):\n{answer_text(claim.columns, claim.rows)}\n\n"
        f"Claim: {claim.claim}\nGiven label: {label}"
        + (f" ({claimdb_category(claim.category)})" if claim.category else "")
        + f" - {meaning}.\n\nAnswer each question yes or no; if unsure, answer no.\n{listed}\n\n"
        f'Reply with JSON only: {{{example}, "note": "one short sentence"}}'
    )
    return [{"role": "system", "content": JUDGE_SYSTEM}, {"role": "user", "content": content}]


_ALIASES = {
    "label": "label_correct", "correct_label": "label_correct", "label_is_correct": "label_correct",
    "selfcontained": "self_contained", "is_self_contained": "self_contained",
    "subtype": "subtype_correct", "nei_subtype_correct": "subtype_correct", "category_correct": "subtype_correct",
    "subtype_is_correct": "subtype_correct",
    "no_leak": "no_schema_leak", "schema_leak_free": "no_schema_leak", "no_schema_leakage": "no_schema_leak",
}  # fmt: skip
_INVERTED = {
    "schema_leak": "no_schema_leak",
    "schema_leaked": "no_schema_leak",
    "leaks_schema": "no_schema_leak",
}


def _yes_no(value: object) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        word = value.strip().strip(".!\"' ").lower()
        if word in ("yes", "y", "true", "pass", "correct"):
            return True
        if word in ("no", "n", "false", "fail", "incorrect"):
            return False
    return None


def _norm_key(key: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", key.lower()).strip("_")


def parse_verdict(text: str, keys: Sequence[str]) -> dict[str, bool | None] | None:
    """A judge's answers to the rubric ``keys`` (True yes / False no / None unanswered), read
    leniently: a JSON object anywhere in the reply (keys in any case, yes/no or true/false,
    ``schema_leak: yes`` read as ``no_schema_leak: no``), else ``key: yes`` lines. None when the
    reply answers none of the questions."""
    for value in _json_candidates(text):
        if not isinstance(value, dict):
            continue
        answers: dict[str, bool | None] = {}
        for raw_key, raw_value in value.items():
            key = _norm_key(str(raw_key))
            if key in _INVERTED:
                answer = _yes_no(raw_value)
                answers[_INVERTED[key]] = None if answer is None else not answer
                continue
            key = _ALIASES.get(key, key)
            if key in keys:
                answers[key] = _yes_no(raw_value)
        if answers:
            return {key: answers.get(key) for key in keys}
    plain = _THINK.sub("", text)
    answers = {}
    for key in keys:
        match = re.search(rf"{key}\W{{0,6}}(yes|no|true|false)\b", plain, re.I)
        if match:
            answers[key] = _yes_no(match.group(1))
    if not answers:
        return None
    return {key: answers.get(key) for key in keys}


def _named_judges(judges: Mapping[str, ChatLike] | Sequence[ChatLike]) -> list[tuple[str, ChatLike]]:
    if isinstance(judges, Mapping):
        return [(str(name), client) for name, client in judges.items()]
    named: list[tuple[str, ChatLike]] = []
    for index, client in enumerate(judges, start=1):
        name = client_name(client, f"judge{index}")
        while name in {n for n, _ in named}:
            name = f"{name}#{index}"
        named.append((name, client))
    return named


def _judge_one(
    claim: BuiltClaim, name: str, client: ChatLike, schema: str | None, guard: _FailureGuard
) -> JudgeVerdict:
    keys = rubric_keys(claim)
    guard.check()
    try:
        reply = client.chat(judge_messages(claim, schema))
    except LlmError as exc:
        guard.failed(exc)
        return JudgeVerdict(name, {}, False, f"{JUDGE_CALL_FAILED}: {exc}")
    guard.ok()
    text = _reply_text(reply)
    answers = parse_verdict(text, keys)
    if answers is None:
        return JudgeVerdict(name, {}, False, "unparseable verdict", one_line(text, EXCERPT_CHARS))
    passed = all(answers[key] is True for key in keys)
    return JudgeVerdict(name, answers, passed, "", one_line(text, EXCERPT_CHARS))


def judge(
    claims: Sequence[BuiltClaim],
    judges: Mapping[str, ChatLike] | Sequence[ChatLike],
    *,
    schemas: Mapping[str, str] | None = None,
    workers: int = 1,
    stop_after_failures: int | None = 20,
    on_claim: Callable[[Judged], None] | None = None,
) -> list[Judged]:
    """Stage (c): every claim put to every judge with the binary rubric (:data:`RUBRIC`): label
    correct, self-contained, NEI subtype right (NEI only), no schema identifiers. "If unsure, answer
    no." A claim is kept only when every judge answers yes to every question; a "no", an unanswered
    question, an unreadable verdict or a failed call drops it. Every judge's answers are recorded.

    ``judges``: a mapping ``name -> client`` or a list of clients (named by their model).
    ``schemas``: ``db_id -> schema text`` shown to the judges (for NEI and schema leaks). Returns
    every claim with its verdicts, in input order (``Judged.kept`` says which pass). After
    ``stop_after_failures`` failed calls in a row to one judge the stage stops with an LlmError."""
    panel = _named_judges(judges)
    if not panel:
        raise ValueError("judge needs at least one judge")
    guards = {name: _FailureGuard(stop_after_failures, f"judge {name}") for name, _ in panel}
    lock = threading.Lock()

    def run(claim: BuiltClaim) -> Judged:
        schema = (schemas or {}).get(claim.db_name)
        result = Judged(
            claim, tuple(_judge_one(claim, name, client, schema, guards[name]) for name, client in panel)
        )
        if on_claim is not None:
            with lock:
                on_claim(result)
        return result

    return list(_ordered_map(run, list(claims), workers))


# ---- stage (d): NEI difficulty ranking -----------------------------------------------------------


def source_text(claim: BuiltClaim) -> str:
    """What an NEI claim is compared with: its source question and the answer's values."""
    return f"{claim.question} {answer_values(claim.rows)}".strip()


def similarities(
    encoder: TextEncoder, left: Sequence[str], right: Sequence[str], batch_size: int = 256
) -> np.ndarray:
    """The cosine similarity of each ``left[i]`` to ``right[i]``, encoded ``batch_size`` pairs at a
    time (memory stays bounded whatever the number of texts)."""
    if len(left) != len(right):
        raise ValueError("left and right must have the same length")
    parts = [np.zeros(0)]
    for start in range(0, len(left), max(1, batch_size)):
        a = embed(encoder, left[start : start + batch_size])
        b = embed(encoder, right[start : start + batch_size])
        if a.shape != b.shape:
            raise ValueError(
                f"the encoder returned vectors of different sizes ({a.shape[1]} and {b.shape[1]})"
            )
        parts.append(np.einsum("ij,ij->i", a, b))
    return np.concatenate(parts)


def rank_nei(
    claims: Sequence[BuiltClaim],
    encoder: str | TextEncoder = DEFAULT_ENCODER,
    *,
    fraction: float = 0.25,
    per_category: bool = False,
    batch_size: int = 256,
) -> list[RankedNei]:
    """Stage (d): rank the NOT ENOUGH INFO claims among ``claims`` by the cosine similarity of the
    claim to its source question + answer (:func:`source_text`), most similar first, and mark the
    top ``fraction`` kept: ``ceil(n * fraction)`` claims, the hardest NEI cases. Other labels are
    ignored. Ties are broken by claim id, so the result is deterministic.

    ``encoder``: a :class:`~tabverify.text.encoders.TextEncoder` or a name for
    :func:`~tabverify.text.encoders.get_encoder` (default: ``lexical``, numpy only).
    ``per_category``: rank and cut each NEI subtype separately (keeps the subtypes balanced) instead
    of all together."""
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction must be more than 0 and at most 1, got {fraction!r}")
    nei = [c for c in claims if c.label is Label.NOT_ENOUGH_INFO]
    if not nei:
        return []
    function = get_encoder(encoder)
    values = similarities(function, [c.claim for c in nei], [source_text(c) for c in nei], batch_size)
    scored = [(round(float(s), 9), c) for s, c in zip(values, nei, strict=True)]
    groups: dict[object, list[tuple[float, BuiltClaim]]] = {}
    for item in scored:
        groups.setdefault(item[1].category if per_category else None, []).append(item)
    kept_ids: set[str] = set()
    for group in groups.values():
        group.sort(key=lambda item: (-item[0], item[1].claim_id))
        kept_ids.update(c.claim_id for _, c in group[: math.ceil(len(group) * fraction)])
    scored.sort(key=lambda item: (-item[0], item[1].claim_id))
    return [
        RankedNei(claim, similarity, rank, claim.claim_id in kept_ids)
        for rank, (similarity, claim) in enumerate(scored, start=1)
    ]


def nei_threshold(ranked: Sequence[RankedNei]) -> float | None:
    """The lowest similarity among the kept NEI claims (the quartile threshold), or None."""
    kept = [r.similarity for r in ranked if r.kept]
    return min(kept) if kept else None


# ---- the whole build -----------------------------------------------------------------------------


class _StageFile:
    """A JSON Lines stage file appended one record at a time (flushed), read back for resuming; a
    partly written last line (an interrupted run) is cut off before appending."""

    def __init__(self, path: Path, resume: bool):
        self.path = path
        self.records: list[dict[str, Any]] = []
        if resume and path.is_file():
            text = path.read_text(encoding="utf-8")
            if text and not text.endswith("\n"):
                text = text[: text.rfind("\n") + 1]
                path.write_text(text, encoding="utf-8")
            for line in text.splitlines():
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                if isinstance(record, dict):
                    self.records.append(record)
        else:
            path.write_text("", encoding="utf-8")
        self._lock = threading.Lock()

    def append(self, record: Mapping[str, Any]) -> None:
        line = json.dumps(record, ensure_ascii=False, sort_keys=False)
        with self._lock, self.path.open("a", encoding="utf-8") as handle:
            handle.write(line + "\n")


def _write_jsonl(path: Path, records: Iterable[Mapping[str, Any]]) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    with tmp.open("w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    tmp.replace(path)


def _check_config(out_dir: Path, config: dict[str, Any], resume: bool) -> None:
    """Refuse to resume a build made with other stage settings (its stage files would be mixed)."""
    path = out_dir / CONFIG_FILE
    if resume and path.is_file():
        try:
            previous = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            previous = {}
        for stage in ("prefilter", "generate", "judge"):
            old, new = previous.get(stage), config.get(stage)
            if (
                old is not None
                and new is not None
                and old != new
                and (out_dir / STAGE_FILES[stage]).is_file()
            ):
                raise DatasetError(
                    f"{out_dir}: the {stage} stage there was run with other settings ({json.dumps(old, sort_keys=True)}); "
                    f"use another --out folder, delete {STAGE_FILES[stage]}, or build without resuming"
                )
        merged = {**previous, **{k: v for k, v in config.items() if v is not None}}
    else:
        merged = config
    path.write_text(json.dumps(merged, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def _count(values: Iterable[str]) -> dict[str, int]:
    return dict(sorted(Counter(values).items()))


def _label_counts(claims: Iterable[BuiltClaim]) -> dict[str, int]:
    counts: Counter[str] = Counter()
    for claim in claims:
        counts[str(claimdb_label(claim.label))] += 1
        if claim.category is not None:
            counts[f"NOT ENOUGH INFO/{claimdb_category(claim.category)}"] += 1
    return dict(sorted(counts.items()))


def build(
    pairs_path: str | Path,
    dbs_dir: str | Path,
    out_dir: str | Path,
    *,
    generator: ChatLike | None = None,
    judges: Mapping[str, ChatLike] | Sequence[ChatLike] = (),
    encoder: str | TextEncoder = DEFAULT_ENCODER,
    max_rows: int = 10,
    timeout_s: float = 30.0,
    drop_empty: bool = True,
    entailed: int = 2,
    contradicted: int = 2,
    nei_per_subtype: int = 1,
    nei_fraction: float = 0.25,
    nei_per_category: bool = False,
    workers: int = 1,
    stop_after_failures: int | None = 20,
    limit: int | None = None,
    resume: bool = True,
    progress: Callable[[str, int, int], None] | None = None,
) -> BuildReport:
    """Run the whole pipeline: read the pairs (:func:`read_pairs`), (a) :func:`prefilter` against
    the BIRD-layout ``dbs_dir``, (b) :func:`generate` with ``generator``, (c) :func:`judge` with
    ``judges``, (d) :func:`rank_nei` with ``encoder``; write into ``out_dir``:

    - ``prefilter.jsonl`` (one line per pair: kept with criteria and answer, or dropped with the
      reason), ``generated.jsonl`` (one line per kept pair: its claims and problems),
      ``judged.jsonl`` (one line per claim: every judge's answers), ``nei_ranked.jsonl``;
    - ``claims.jsonl``: the claims in the ClaimDB format plus provenance (judged ENTAILED and
      CONTRADICTED claims, and the NEI claims in the kept similarity fraction);
    - ``report.json``: counts per stage, drop reasons, per-judge drops, the similarity threshold;
    - ``config.json``: the settings of each stage.

    Without ``generator`` only stage (a) runs (no claims file). Without judges stage (c) is skipped
    and the report says the claims are unjudged. With ``resume`` (the default) the units already in
    a stage file (pairs, claims) are read back instead of being run again, so an interrupted build
    continues where it stopped; pairs whose database was missing, and pairs and claims whose model
    call failed, are tried again. Resuming with other stage settings is refused (DatasetError).
    ``stop_after_failures`` model calls failing in a row stop the build with an LlmError (what is
    done is kept for the next run).
    ``limit`` takes the first N pairs only. ``progress(stage, done, total)`` is called as units
    finish. Returns the report (also written to ``report.json``)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    pairs, pair_problems = read_pairs(pairs_path)
    if limit is not None:
        pairs = pairs[: max(0, limit)]
    panel = _named_judges(judges)
    generator_name = client_name(generator, "generator") if generator is not None else None
    function = get_encoder(encoder)
    config: dict[str, Any] = {
        "prefilter": {"max_rows": max_rows, "timeout_s": timeout_s, "drop_empty": drop_empty, "dialect": "sqlite"},
        "generate": None if generator is None else {
            "model": generator_name, "entailed": entailed, "contradicted": contradicted,
            "nei_per_subtype": nei_per_subtype,
        },
        "judge": None if not panel else {"judges": [name for name, _ in panel]},
        "rank": {"encoder": function.name, "fraction": nei_fraction, "per_category": nei_per_category},
    }  # fmt: skip
    _check_config(out, config, resume)
    report: dict[str, Any] = {
        "pairs_file": str(pairs_path),
        "dbs_dir": str(dbs_dir),
        "config": config,
        "pairs": {
            "read": len(pairs),
            "problems": [p.to_dict() for p in pair_problems[:100]],
            "problem_count": len(pair_problems),
        },  # fmt: skip
    }

    def tick(stage: str, done: int, total: int) -> None:
        if progress is not None:
            progress(stage, done, total)

    # (a) prefilter
    stage_a = _StageFile(out / STAGE_FILES["prefilter"], resume)
    decided: dict[str, Kept | Dropped] = {}
    for record in stage_a.records:
        try:
            outcome: Kept | Dropped = (
                Kept.from_dict(record) if record.get("kept") else Dropped.from_dict(record)
            )
        except (KeyError, TypeError, ValueError):
            continue
        decided[outcome.pair.pair_id] = outcome
    todo = [p for p in pairs if p.pair_id not in decided]
    done_count = len(pairs) - len(todo)

    def record_a(result: Kept | Dropped) -> None:
        nonlocal done_count
        decided[result.pair.pair_id] = result
        stage_a.append(result.to_dict())
        done_count += 1
        tick("prefilter", done_count, len(pairs))

    with BirdDatabases(dbs_dir) as databases:
        if todo:
            prefilter(todo, databases, max_rows=max_rows, timeout_s=timeout_s, drop_empty=drop_empty,
                      on_result=record_a)  # fmt: skip
        outcomes = [decided[p.pair_id] for p in pairs if p.pair_id in decided]
        kept = [o for o in outcomes if isinstance(o, Kept)]
        dropped = [o for o in outcomes if isinstance(o, Dropped)]
        report["prefilter"] = {
            "kept": len(kept),
            "dropped": len(dropped),
            "dropped_by_reason": _count(d.reason for d in dropped),
            "kept_by_criterion": _count(c for k in kept for c in k.criteria),
            "kept_by_database": _count(k.pair.db_id for k in kept),
        }
        schemas = _schemas_for(databases, {k.pair.db_id for k in kept}) if generator is not None else {}

    claims: list[BuiltClaim] = []
    if generator is None:
        report["generation"] = {"skipped": "no generator model given"}
    else:
        # (b) generate
        stage_b = _StageFile(out / STAGE_FILES["generate"], resume)
        generated: dict[str, tuple[list[BuiltClaim], list[GenerationProblem]]] = {}
        for record in stage_b.records:
            if any(str(p.get("message", "")).startswith(CALL_FAILED) for p in record.get("problems") or ()):
                continue  # a failed call: the pair is generated again
            try:
                generated[str(record["pair_id"])] = (
                    [BuiltClaim.from_record(c) for c in record.get("claims") or ()],
                    [GenerationProblem.from_dict(p) for p in record.get("problems") or ()],
                )
            except (KeyError, TypeError, ValueError):
                continue
        todo_b = [k for k in kept if k.pair.pair_id not in generated]
        done_b = len(kept) - len(todo_b)

        def record_b(item: Kept, pair_claims: list[BuiltClaim], problems: list[GenerationProblem]) -> None:
            nonlocal done_b
            generated[item.pair.pair_id] = (pair_claims, problems)
            stage_b.append({"pair_id": item.pair.pair_id, "claims": [c.to_record() for c in pair_claims],
                            "problems": [p.to_dict() for p in problems]})  # fmt: skip
            done_b += 1
            tick("generate", done_b, len(kept))

        if todo_b:
            generate(todo_b, generator, schemas=schemas, entailed=entailed, contradicted=contradicted,
                     nei_per_subtype=nei_per_subtype, workers=workers, stop_after_failures=stop_after_failures,
                     on_pair=record_b)  # fmt: skip
        problems = [p for k in kept for p in generated.get(k.pair.pair_id, ([], []))[1]]
        claims = [c for k in kept for c in generated.get(k.pair.pair_id, ([], []))[0]]
        report["generation"] = {
            "model": generator_name,
            "pairs": len(kept),
            "claims": len(claims),
            "claims_by_label": _label_counts(claims),
            "problems": len(problems),
            "problems_by_kind": _count(f"{p.kind}: {p.message.split(':')[0]}" for p in problems),
        }

    # (c) judge
    judged_claims = claims
    if generator is not None and panel:
        stage_c = _StageFile(out / STAGE_FILES["judge"], resume)
        verdicts: dict[str, tuple[JudgeVerdict, ...]] = {}
        texts = {c.claim_id: c.claim for c in claims}
        for record in stage_c.records:
            try:
                if texts.get(str(record["claim_id"])) != record.get("claim"):
                    continue  # a verdict on another text under this id (generation was redone): judge again
                if any(str(v.get("problem", "")).startswith(JUDGE_CALL_FAILED) for v in record["verdicts"]):
                    continue  # a failed call: judged again
                verdicts[str(record["claim_id"])] = tuple(
                    JudgeVerdict.from_dict(v) for v in record["verdicts"]
                )
            except (KeyError, TypeError, ValueError):
                continue
        todo_c = [c for c in claims if c.claim_id not in verdicts]
        done_c = len(claims) - len(todo_c)

        def record_c(result: Judged) -> None:
            nonlocal done_c
            verdicts[result.claim.claim_id] = result.verdicts
            stage_c.append(result.to_dict())
            done_c += 1
            tick("judge", done_c, len(claims))

        if todo_c:
            judge(todo_c, dict(panel), schemas=schemas, workers=workers, stop_after_failures=stop_after_failures,
                  on_claim=record_c)  # fmt: skip
        results = [Judged(c, verdicts[c.claim_id]) for c in claims if c.claim_id in verdicts]
        judged_claims = [r.claim for r in results if r.kept]
        per_judge: dict[str, dict[str, Any]] = {}
        for name, _client in panel:
            mine = [v for r in results for v in r.verdicts if v.judge == name]
            per_judge[name] = {
                "drops": sum(1 for v in mine if not v.passed),
                "unparseable": sum(1 for v in mine if v.problem == "unparseable verdict"),
                "errors": sum(1 for v in mine if v.problem.startswith(JUDGE_CALL_FAILED)),
                "no_by_question": _count(key for v in mine if not v.problem for key in v.failed),
            }
        report["judging"] = {
            "judges": [name for name, _ in panel],
            "claims": len(results),
            "kept": len(judged_claims),
            "dropped": len(results) - len(judged_claims),
            "kept_by_label": _label_counts(judged_claims),
            "per_judge": per_judge,
        }
    elif generator is not None:
        report["judging"] = {"skipped": "no judges given: the claims are NOT quality-checked"}

    # (d) rank NEI claims
    if generator is not None:
        ranked = rank_nei(judged_claims, function, fraction=nei_fraction, per_category=nei_per_category)
        _write_jsonl(out / STAGE_FILES["rank"], (r.to_dict() for r in ranked))
        similarity_of = {r.claim.claim_id: r.similarity for r in ranked}
        kept_nei = {r.claim.claim_id for r in ranked if r.kept}
        final = [
            replace(c, similarity=similarity_of[c.claim_id]) if c.claim_id in similarity_of else c
            for c in judged_claims
            if c.label is not Label.NOT_ENOUGH_INFO or c.claim_id in kept_nei
        ]
        report["nei_ranking"] = {
            "encoder": function.name,
            "nei_claims": len(ranked),
            "kept": len(kept_nei),
            "fraction": nei_fraction,
            "per_category": nei_per_category,
            "threshold": None if nei_threshold(ranked) is None else round(nei_threshold(ranked) or 0.0, 6),
        }
        _write_jsonl(out / CLAIMS_FILE, (c.to_record() for c in final))
        report["claims"] = {
            "total": len(final),
            "by_label": _label_counts(final),
            "file": str(out / CLAIMS_FILE),
        }
    (out / REPORT_FILE).write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return BuildReport(out, report)
