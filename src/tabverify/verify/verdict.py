"""The Verdict: what every verifier returns, with evidence that re-executes."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol, TypeVar

from tabverify.table import CellRef

ResultValue = bool | int | float | str | list[int] | None
"""A program's result as JSON sees it: a boolean, a number, text (a cell or a value as written),
the 0-based data rows of a view, or None when there is no program."""


class Label(StrEnum):
    """Verdict labels shared by all verifiers (tables use the first two)."""

    ENTAILED = "ENTAILED"
    REFUTED = "REFUTED"
    NOT_ENOUGH_INFO = "NOT ENOUGH INFO"


class NeiSubtype(StrEnum):
    """Why the evidence cannot settle a claim (ClaimDB's three kinds of NOT ENOUGH INFO)."""

    OUT_OF_SCHEMA = "out-of-schema"
    COUNTERFACTUAL = "counterfactual"
    SUBJECTIVE = "subjective"


@dataclass(frozen=True, slots=True)
class TraceStep:
    """One step of a verification, for audit: a query run, a model message, a note.

    Attributes:
        kind: ``query`` (SQL sent to the database), ``message`` (to or from a model) or ``note``.
        text: the SQL, the message or the note.
        rows: rows the query returned (queries only).
        elapsed_s: how long the step took.
        error: the error a query came back with, if any.
    """

    kind: str
    text: str
    rows: int | None = None
    elapsed_s: float = 0.0
    error: str | None = None

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready dict."""
        return {
            "kind": self.kind,
            "text": self.text,
            "rows": self.rows,
            "elapsed_s": round(self.elapsed_s, 4),
            "error": self.error,
        }


@dataclass(frozen=True, slots=True)
class Alternative:
    """A runner-up program: its text, its result and the ranker's probability for it."""

    program: str
    result: ResultValue
    probability: float

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready dict."""
        return {"program": self.program, "result": self.result, "probability": round(self.probability, 4)}


@dataclass(frozen=True, slots=True)
class LimitNotice:
    """A bound on the work that cut this verification (the verdict may have missed a reading).

    Attributes:
        limit: the name of the limit (a field of ``SearchLimits`` for table verifiers).
        value: its setting.
        message: what it means, in one sentence for users.
    """

    limit: str
    value: int
    message: str

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready dict."""
        return {"limit": self.limit, "value": self.value, "message": self.message}


@dataclass(frozen=True)
class Verdict:
    """The answer to "is this statement supported by the evidence?".

    Attributes:
        statement: the statement as given.
        label: ENTAILED, REFUTED (or NOT ENOUGH INFO for verifiers that can abstain).
        program: the evidence program in the TabFact brace syntax ("" when none was found).
        result: what the program returned (a boolean for the programs a verifier picks; None
            when no program was found); :attr:`result_text` is how users see it.
        confidence: the verifier's probability that the label is right, in [0.5, 1].
        evidence: the table cells the program read (row: the 0-based data row of a table, or the
            row key of a database table; column: the column index).
        alternatives: the next-best programs with their results, best first.
        limits: the bounds that cut the work for this statement (empty on ordinary input).
        subtype: for NOT ENOUGH INFO, why (:class:`NeiSubtype`); None otherwise.
        sql: the SQL the evidence program compiles to, when the evidence lives in a database
            ("" for an in-memory table).
        source: where the evidence lives (a table name, or ``database target : table``).
        trace: the queries (and messages) the verification ran, in order, for audit.
        evidence_table: the lake table the statement was verified against, when the table was
            retrieved from a lake (``check --lake``); None otherwise.
        runners_up: the other tables retrieved for the statement, best first (with
            ``evidence_table`` only).
        guess: for a NOT ENOUGH INFO verdict of a verifier that can be forced to choose (the
            table verifier), the label it would give if it had to: only benchmarks whose protocol
            forces a binary answer (TabFact) read it. None otherwise.
        notes: why the verdict is less sure than its model, or why it abstained, one sentence
            each for users: a meaning-carrying word of the statement the evidence program does
            not cover ("'largest' asks for the largest values; the program reads the smallest"),
            or, for NOT ENOUGH INFO, "no evidence found" with what could not be linked.
    """

    statement: str
    label: Label
    program: str
    result: ResultValue
    confidence: float
    evidence: tuple[CellRef, ...] = ()
    alternatives: tuple[Alternative, ...] = field(default=())
    limits: tuple[LimitNotice, ...] = field(default=())
    subtype: NeiSubtype | None = None
    sql: str = ""
    source: str = ""
    trace: tuple[TraceStep, ...] = field(default=())
    evidence_table: str | None = None
    runners_up: tuple[str, ...] = field(default=())
    guess: Label | None = None
    notes: tuple[str, ...] = field(default=())

    @property
    def entailed(self) -> bool:
        """True when the label is ENTAILED."""
        return self.label is Label.ENTAILED

    @property
    def forced_label(self) -> Label:
        """The label under a protocol that forces a binary answer: :attr:`guess` when the verdict
        abstained (NOT ENOUGH INFO) and has one, else :attr:`label`."""
        return self.guess if self.label is Label.NOT_ENOUGH_INFO and self.guess is not None else self.label

    @property
    def result_text(self) -> str:
        """The result as users read it: ``True``/``False``, a number, text, ``rows 1, 2``."""
        return result_text(self.result)

    @property
    def warnings(self) -> tuple[str, ...]:
        """One sentence per limit that cut the work, for the user."""
        return tuple(notice.message for notice in self.limits)

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready dict: ``result`` is a JSON boolean, number, string, list of rows or null."""
        out: dict[str, object] = {
            "statement": self.statement,
            "label": self.label.value,
            "program": self.program,
            "result": self.result,
            "confidence": round(self.confidence, 4),
            "evidence": [{"row": ref.row, "column": ref.column} for ref in self.evidence],
            "alternatives": [alternative.to_dict() for alternative in self.alternatives],
            "limits": [notice.to_dict() for notice in self.limits],
            "subtype": self.subtype.value if self.subtype is not None else None,
            "sql": self.sql,
            "source": self.source,
            "trace": [step.to_dict() for step in self.trace],
            "notes": list(self.notes),
        }
        if self.guess is not None:
            out["guess"] = self.guess.value
        if self.evidence_table is not None:  # only for verdicts on a table retrieved from a lake
            out["evidence_table"] = self.evidence_table
            out["runners_up"] = list(self.runners_up)
        return out


def result_text(result: ResultValue) -> str:
    """How a result reads for users: ``True``/``False``, ``3``, ``2.5``, text, ``rows 1, 2``
    (1-based, as rows are numbered on screen), ``""`` for no result."""
    if result is None:
        return ""
    if isinstance(result, bool):
        return str(result)
    if isinstance(result, list):
        return f"rows {', '.join(str(r + 1) for r in result)}"
    return str(result)


EvidenceT = TypeVar("EvidenceT", contravariant=True)


class Verifier(Protocol[EvidenceT]):
    """What every verifier is: ``verify(claim, evidence) -> Verdict``. The evidence is what the
    verifier reads: a :class:`tabverify.table.Table`, a database table
    (:class:`tabverify.verify.database_verifier.DatabaseTableRef`), a whole database..."""

    def verify(self, claim: str, evidence: EvidenceT) -> Verdict:
        """The verdict on ``claim`` given ``evidence``."""
        ...
