"""Verifiers and the Verdict they return."""

from tabverify.verify.table_verifier import Ranking, TableVerifier, verify
from tabverify.verify.verdict import Alternative, Label, LimitNotice, Verdict

__all__ = ["Alternative", "Label", "LimitNotice", "Ranking", "TableVerifier", "Verdict", "verify"]
