"""The Verdict: what every verifier returns, with evidence that re-executes."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from tabverify.table import CellRef


class Label(StrEnum):
    """Verdict labels shared by all verifiers (tables use the first two)."""

    ENTAILED = "ENTAILED"
    REFUTED = "REFUTED"
    NOT_ENOUGH_INFO = "NOT ENOUGH INFO"


@dataclass(frozen=True)
class Verdict:
    """The answer to "is this statement supported by the evidence?".

    Attributes:
        statement: the statement as given.
        label: ENTAILED, REFUTED (or NOT ENOUGH INFO for verifiers that can abstain).
        program: the evidence program in the TabFact brace syntax ("" when none was found).
        result: what the program returned, as text ("True"/"False").
        confidence: the verifier's probability that the label is right, in [0.5, 1].
        evidence: the table cells the program read.
        alternatives: the next-best programs with their results, best first.
    """

    statement: str
    label: Label
    program: str
    result: str
    confidence: float
    evidence: tuple[CellRef, ...] = ()
    alternatives: tuple[tuple[str, str, float], ...] = field(default=())

    @property
    def entailed(self) -> bool:
        """True when the label is ENTAILED."""
        return self.label is Label.ENTAILED

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready dict."""
        return {
            "statement": self.statement,
            "label": self.label.value,
            "program": self.program,
            "result": self.result,
            "confidence": round(self.confidence, 4),
            "evidence": [{"row": ref.row, "column": ref.column} for ref in self.evidence],
            "alternatives": [
                {"program": p, "result": r, "probability": round(s, 4)} for p, r, s in self.alternatives
            ],
        }
