"""Verifiers and the Verdict they return."""

from tabverify.verify.table_verifier import Ranking, TableVerifier, verify
from tabverify.verify.verdict import (
    Alternative,
    Label,
    LimitNotice,
    NeiSubtype,
    TraceStep,
    Verdict,
    Verifier,
)

__all__ = [
    "Alternative",
    "Label",
    "LimitNotice",
    "NeiSubtype",
    "Ranking",
    "TableVerifier",
    "TraceStep",
    "Verdict",
    "Verifier",
    "verify",
]
