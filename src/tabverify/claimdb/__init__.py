"""ClaimDB: verify claims against whole databases (ENTAILED / CONTRADICTED / NOT ENOUGH INFO).

- :mod:`tabverify.claimdb.claims`: the claims file (JSON Lines) and its records.
- :mod:`tabverify.claimdb.schema`: schemas from a Spider-style ``dev_tables.json`` plus BIRD
  descriptions, for when the databases themselves are not at hand.
"""

from __future__ import annotations

from tabverify.claimdb.claims import Claim, ClaimProblem, claimdb_category, claimdb_label, read_claims
from tabverify.claimdb.schema import SchemaSet, load_schemas

__all__ = [
    "Claim",
    "ClaimProblem",
    "read_claims",
    "claimdb_label",
    "claimdb_category",
    "SchemaSet",
    "load_schemas",
]
