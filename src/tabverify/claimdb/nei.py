"""NOT ENOUGH INFO detection from the claim, its extra_info and the schema alone (no rows, no
network, no model download)."""

from __future__ import annotations

from dataclasses import dataclass

from tabverify.verify.verdict import NeiSubtype


@dataclass(frozen=True)
class NeiCheck:
    """The offline NOT ENOUGH INFO pre-check of one claim.

    ``nei``: whether the claim cannot be settled by the database; ``subtype``: why (None when not
    NEI); ``probability``: the model's P(NEI); ``reason``: one sentence for a person;
    ``phrases``: the claim phrases behind the decision (the phrase with no counterpart in the
    schema, the counterfactual construction, the value judgement)."""

    nei: bool
    subtype: NeiSubtype | None
    probability: float
    reason: str
    phrases: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, object]:
        return {
            "nei": self.nei,
            "subtype": self.subtype.value if self.subtype else None,
            "probability": round(self.probability, 4),
            "reason": self.reason,
            "phrases": list(self.phrases),
        }
