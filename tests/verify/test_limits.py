"""Every bound on the work lives in SearchLimits, and a verdict says when one cut the work.

No test here measures time: the inputs are sized so that, without the bounds, the search would
evaluate millions of functions; with them it must simply finish."""

import json
from dataclasses import fields

import pytest

from tabverify import Label, TabverifyError
from tabverify.program.search import SearchLimits, search
from tabverify.table import Table
from tabverify.text import link
from tabverify.verify import TableVerifier

NAMES = ["john smith", "mary jones", "alan brown", "lisa white", "tom green", "democratic", "republican"]


@pytest.fixture(scope="module")
def verifier() -> TableVerifier:
    return TableVerifier()


@pytest.fixture(scope="module")
def wide() -> Table:
    """80 columns, every name in most text columns, numbers in the others."""
    header = [f"name {c}" if c % 2 == 0 else f"stat {c}" for c in range(80)]
    rows = [
        [NAMES[(r * 3 + c) % len(NAMES)] if c % 2 == 0 else str((r * 7 + c * 11) % 60 + 1) for c in range(80)]
        for r in range(15)
    ]
    return Table.from_rows(header, rows)


def _long_statement(limit: int) -> str:
    """Clauses naming cells and numbers, up to ``limit`` characters."""
    clauses = []
    k = 0
    while True:
        clause = f"{NAMES[k % 7]} have more than {k % 50 + 3} stat {2 * k % 79 + 1} than {NAMES[(k + 2) % 7]}"
        if len(" , ".join([*clauses, clause])) > limit:
            return " , ".join(clauses)
        clauses.append(clause)
        k += 1


def test_a_long_statement_on_a_wide_table_finishes_and_says_what_was_cut(
    verifier: TableVerifier, wide: Table
) -> None:
    statement = _long_statement(SearchLimits().max_statement_chars)
    assert len(statement) > 900
    linking = link(statement, wide)
    assert len(linking.cells) > SearchLimits().max_cell_links  # the input is beyond the bounds
    verdict = verifier.verify(statement, wide)
    assert verdict.label in (Label.ENTAILED, Label.REFUTED)
    assert "max_cell_links" in [notice.limit for notice in verdict.limits]
    assert any("SearchLimits.max_cell_links" in warning for warning in verdict.warnings)
    payload = json.loads(json.dumps(verdict.to_dict()))
    assert {"limit": "max_cell_links", "value": 200} in [
        {k: v for k, v in notice.items() if k != "message"} for notice in payload["limits"]
    ]


def test_a_statement_over_the_length_limit_is_refused(verifier: TableVerifier, wide: Table) -> None:
    statement = "john smith have 3 stat 1 , " * 4000  # about 100 KB
    with pytest.raises(TabverifyError, match="max_statement_chars"):
        verifier.verify(statement, wide)
    short = TableVerifier(limits=SearchLimits(max_statement_chars=20))
    with pytest.raises(TabverifyError, match="at most 20"):
        short.verify("john smith have more than 3 stat 1", wide)


def test_the_evaluation_budget_stops_the_search_and_is_reported(election: Table) -> None:
    statement = "there be 3 democratic incumbent and 2 republican incumbent first elected after 1990"
    limits = SearchLimits(max_evaluations=12)
    result = search(election, link(statement, election), limits)
    assert result.evaluations == 12
    assert "max_evaluations" in result.cut
    unbounded = search(election, link(statement, election))
    assert unbounded.evaluations > 12 and "max_evaluations" not in unbounded.cut
    verdict = TableVerifier(limits=limits).verify(statement, election)
    assert [notice.limit for notice in verdict.limits] == ["max_evaluations"]
    assert verdict.limits[0].value == 12


def test_the_cells_read_budget_bounds_tall_tables() -> None:
    tall = Table.from_rows(
        ["player", "team", "goals"], [[f"player {i}", f"team {i % 40}", str(i % 17)] for i in range(3000)]
    )
    result = search(
        tall,
        link("team 3 and team 5 score more goal than team 7 , total 12 goal", tall),
        SearchLimits(max_cells_read=20_000),
    )
    assert "max_cells_read" in result.cut
    assert result.cells_read <= 20_000 + tall.n_rows  # the budget is checked before each evaluation


def test_ordinary_statements_report_no_limits(verifier: TableVerifier, election: Table) -> None:
    for statement in (
        "mary jones be first elected in 1986",
        "there be 3 incumbent from the democratic party",
    ):
        verdict = verifier.verify(statement, election)
        assert verdict.limits == () and verdict.warnings == ()
        assert verdict.to_dict()["limits"] == []


def test_every_limit_is_a_documented_non_negative_integer() -> None:
    limits = SearchLimits()
    for item in fields(SearchLimits):
        assert f"SearchLimits.{item.name}" in limits.describe(item.name)
        assert f"{item.name}:" in (SearchLimits.__doc__ or "")
        with pytest.raises(ValueError, match=item.name):
            SearchLimits(**{item.name: -1})
    assert SearchLimits.REPORTED <= {item.name for item in fields(SearchLimits)}
