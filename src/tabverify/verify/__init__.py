"""Verifiers and the Verdict they return."""

from tabverify.verify.table_verifier import TableVerifier, verify
from tabverify.verify.verdict import Label, Verdict

__all__ = ["Label", "TableVerifier", "Verdict", "verify"]
