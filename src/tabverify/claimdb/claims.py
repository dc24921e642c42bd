"""The ClaimDB claims file: one JSON object per line with ``claim_id``, ``db_name``, ``claim``,
``extra_info`` and, when labelled, ``label`` and (for NOT ENOUGH INFO) ``category``.

A verifier gets only :attr:`Claim.claim`, :attr:`Claim.extra_info` and the database: the label,
category and ``bird_id`` (an id into the question the claim was generated from) stay in the record
for scoring and are never passed on."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tabverify.errors import DatasetError
from tabverify.files import parse_json, read_text
from tabverify.verify.verdict import Label, NeiSubtype

MAX_CLAIMS_BYTES = 256 * 1024 * 1024
MAX_CLAIM_CHARS = 20_000
"""A claim or extra_info longer than this is refused (no ClaimDB claim is over 1,000 characters)."""

_LABELS = {label.value: label for label in Label} | {"CONTRADICTED": Label.REFUTED}
"""ClaimDB's CONTRADICTED is tabverify's REFUTED; :func:`claimdb_label` writes it back."""
_SUBTYPES = {subtype.value.upper(): subtype for subtype in NeiSubtype}


def claimdb_label(label: Label | None) -> str | None:
    """A label as the ClaimDB files write it (REFUTED is CONTRADICTED there)."""
    if label is None:
        return None
    return "CONTRADICTED" if label is Label.REFUTED else label.value


def claimdb_category(subtype: NeiSubtype | None) -> str | None:
    """An NEI subtype as the ClaimDB files write it (OUT-OF-SCHEMA, COUNTERFACTUAL, SUBJECTIVE)."""
    return subtype.value.upper() if subtype else None


@dataclass(frozen=True)
class Claim:
    """One claim to verify against the database ``db_name``.

    ``label``/``category`` are the gold answer when the file has one (None otherwise); ``line`` is
    the 1-based line of the claims file it came from."""

    claim_id: str
    db_name: str
    claim: str
    extra_info: str = ""
    label: Label | None = None
    category: NeiSubtype | None = None
    line: int = 0

    def to_dict(self) -> dict[str, object]:
        return {
            "claim_id": self.claim_id,
            "db_name": self.db_name,
            "claim": self.claim,
            "extra_info": self.extra_info,
            "label": claimdb_label(self.label),
            "category": claimdb_category(self.category),
        }


@dataclass(frozen=True)
class ClaimProblem:
    """A line of the claims file that was skipped, and why."""

    line: int
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}"


def _text(record: dict, key: str, required: bool) -> str:
    value = record.get(key)
    if value is None:
        if required:
            raise ValueError(f'no "{key}"')
        return ""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise ValueError(f'"{key}" must be a string')
    text = str(value).strip()
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:  # a JSON escape such as "\ud800" decodes to a lone surrogate
            raise ValueError(
                f'"{key}" is not valid Unicode text (a lone surrogate at character {exc.start})'
            ) from None
    if required and not text:
        raise ValueError(f'"{key}" is empty')
    if len(text) > MAX_CLAIM_CHARS:
        raise ValueError(f'"{key}" has {len(text):,} characters (limit {MAX_CLAIM_CHARS:,})')
    return text


def parse_claim(record: object, line: int = 0) -> Claim:
    """A :class:`Claim` from one decoded JSON record (ValueError with the reason when malformed)."""
    if not isinstance(record, dict):
        raise ValueError("not a JSON object")
    label_text = record.get("label")
    label = None
    if label_text not in (None, ""):
        label = _LABELS.get(str(label_text).strip().upper())
        if label is None:
            raise ValueError(f"unknown label {label_text!r}; use ENTAILED, CONTRADICTED or NOT ENOUGH INFO")
    category_text = record.get("category")
    category = None
    if category_text not in (None, ""):
        category = _SUBTYPES.get(str(category_text).strip().upper().replace("_", "-"))
        if category is None:
            raise ValueError(f"unknown category {category_text!r}; use one of {', '.join(_SUBTYPES)}")
    return Claim(
        claim_id=_text(record, "claim_id", False) or str(line),
        db_name=_text(record, "db_name", True),
        claim=_text(record, "claim", True),
        extra_info=_text(record, "extra_info", False),
        label=label,
        category=category,
        line=line,
    )


def read_claims(path: str | Path) -> tuple[list[Claim], list[ClaimProblem]]:
    """The claims of a JSON Lines file, and the lines that were skipped with their reasons.

    Raises :class:`DatasetError` only when the file itself cannot be read; a bad line is reported
    with its number and the rest of the file is still read."""
    text = read_text(path, "claims file (JSON Lines)", DatasetError, MAX_CLAIMS_BYTES)
    claims: list[Claim] = []
    problems: list[ClaimProblem] = []
    seen: set[str] = set()
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            record = parse_json(raw, f"line {number}", DatasetError)
            claim = parse_claim(record, number)
        except (DatasetError, ValueError) as exc:
            problems.append(ClaimProblem(number, str(exc).removeprefix(f"line {number}: ")))
            continue
        if claim.claim_id in seen:
            problems.append(ClaimProblem(number, f"claim_id {claim.claim_id} appears twice; kept the first"))
            continue
        seen.add(claim.claim_id)
        claims.append(claim)
    return claims, problems
