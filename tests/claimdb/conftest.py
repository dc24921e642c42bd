"""Shared ClaimDB fixtures: the generated ``formula_1`` sample (real schema, generated rows, claims
with computed answers; :mod:`tabverify.claimdb.sample`), built once per test session.

Tests that use :func:`claimdb_sample` read ../shared/datasets/claimdb/schema: mark them
``pytest.mark.data`` (the fixture skips, or fails in CI, when the folder is missing)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tabverify.claimdb.sample import SamplePaths, build_sample
from tests.conftest import SHARED

CLAIMDB = SHARED / "claimdb"
CLAIMDB_SCHEMA = CLAIMDB / "schema"
"""The ClaimDB schema folder (dev_tables.json + database_description/) the sample is built from."""


def needs_claimdb_schema() -> None:
    """Skip the calling test when ../shared/datasets/claimdb/schema is missing (a failure in CI)."""
    if not (CLAIMDB_SCHEMA / "dev_tables.json").is_file():
        pytest.skip("../shared/datasets/claimdb/schema is not present")


@pytest.fixture(scope="session")
def claimdb_sample(tmp_path_factory: pytest.TempPathFactory) -> SamplePaths:
    """The sample (seed 7) in a session temporary folder: ``db_path``, ``claims_path``,
    ``schema_dir`` (a one-database schema folder) and ``root`` (the BIRD-layout database folder).
    Treat it as read-only: other tests share it."""
    needs_claimdb_schema()
    return build_sample(tmp_path_factory.mktemp("claimdb_sample"), schema_dir=CLAIMDB_SCHEMA, seed=7)


def sample_records(path: Path) -> list[dict[str, object]]:
    """The raw records of a sample claims file, with the test-only ``sql`` and ``answer`` fields."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="session")
def claimdb_sample_records(claimdb_sample: SamplePaths) -> list[dict[str, object]]:
    """The sample's 36 claim records (claim_id, db_name, label, category, claim, extra_info, sql, answer)."""
    return sample_records(claimdb_sample.claims_path)
