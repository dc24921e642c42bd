"""TabFact's human programs give the same value compiled to SQL as in memory (a deterministic
sample on DuckDB and SQLite; scripts/bench_sql_agreement.py runs all of them)."""

from __future__ import annotations

import pytest

from tabverify.bench.tabfact import TableCache
from tabverify.program.sql.agreement import compare, human_programs
from tests.conftest import TABFACT, needs_tabfact

SAMPLE = 240


@pytest.mark.data
@needs_tabfact()
@pytest.mark.parametrize("engine", ["duckdb", "sqlite"])
def test_human_programs_agree_in_sql(engine: str) -> None:
    items = human_programs(TABFACT)
    step = max(1, len(items) // SAMPLE)
    sample = items[::step][:SAMPLE]
    cache = TableCache(TABFACT)
    tables = {table_id: cache.get(table_id) for table_id, _ in sample}
    result = compare(sample, tables, engine)
    shown = "\n".join(f"{d.table}: {d.program} memory {d.memory} sql {d.sql}" for d in result.disagreements)
    assert result.n == len(sample)
    assert result.rate >= 0.99, shown
