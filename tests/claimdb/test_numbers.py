"""The numbers rule of the ClaimDB agent: the numbers a claim asserts, read at their written
precision, against the values the queries returned; when it overrides, warns, or stays silent."""

from __future__ import annotations

import pytest

from tabverify.claimdb.numbers import (
    ClaimNumber,
    check_numbers,
    claim_numbers,
    judge_numbers,
    matches,
    numbers_in_text,
)
from tabverify.database import QueryResult
from tabverify.verify.verdict import Label


def one(text: str) -> ClaimNumber:
    numbers, _ = claim_numbers(text)
    assert len(numbers) == 1, numbers
    return numbers[0]


def result(
    *rows: tuple[object, ...], columns: tuple[str, ...] = ("v",), truncated: bool = False
) -> QueryResult:
    return QueryResult(sql="SELECT v FROM t", columns=columns, rows=tuple(rows), truncated=truncated)


@pytest.mark.parametrize(
    ("text", "value", "step", "percent"),
    [
        ("The total is 1,234.", 1234.0, 1.0, False),
        ("It came to $745.29 in total.", 745.29, 0.01, False),
        ("Revenue reached 2.5 million dollars.", 2_500_000.0, 100_000.0, False),
        ("Exactly 12.3% of them are blue.", 12.3, 0.1, True),
        ("Exactly 40 percent of them are blue.", 40.0, 1.0, True),
        ("The growth rate was -8.5.", -8.5, 0.1, False),
        ("The average is 397.0.", 397.0, 0.1, False),
        ("They sold 3k units.", 3000.0, 1000.0, False),
        ("The ratio is .75 overall.", 0.75, 0.01, False),
        ("Eighty-three heroes can fly.", 83.0, 1.0, False),
    ],
)
def test_claim_numbers_read_value_precision_and_percent(
    text: str, value: float, step: float, percent: bool
) -> None:
    number = one(text)
    assert number.value == pytest.approx(value)
    assert number.step == pytest.approx(step)
    assert number.percent is percent


def test_dates_phones_codes_ordinals_and_names_are_not_quantities() -> None:
    text = (
        "On 2012-08-24 at 16:25:00, school TR001 (K-12, charter 00D4) called (714) 220-3055 for the "
        "3rd time, on January 3, 1996, about Formula 1 and France Ligue 1; version 1.2.3."
    )
    numbers, skipped = claim_numbers(text)
    assert numbers == []
    reasons = {s.text: s.reason for s in skipped}
    assert reasons["2012-08-24"] == "date"
    assert reasons["16:25:00"] == "time"
    assert reasons["(714) 220-3055"] == "phone"
    assert reasons["3rd"] == "ordinal"
    assert reasons["January 3, 1996"] == "date"
    assert "code" in reasons.values() and "name" in reasons.values()


@pytest.mark.parametrize(
    "text",
    [
        "Over 1,800 users received a badge.",
        "At least 20 molecules are carcinogenic.",
        "Players scoring 1500 or more are rare.",
        "Ratings between 60 and 65 are common.",
        "The seasons 1980–2010 are covered.",
        "Fewer than 20% of players are tall.",
        "Accounts 1 to 10 are old.",
    ],
)
def test_conditions_and_bounds_are_bounds(text: str) -> None:
    numbers, _ = claim_numbers(text)
    assert numbers and all(n.bound for n in numbers)
    assert not any(n.firm for n in numbers)


def test_hedged_years_and_spelled_numbers_are_not_firm() -> None:
    assert one("It was about 55% of them.").hedged
    assert one("He debuted in 2007.").kind == "year"
    assert one("There are exactly six of them.").kind == "spelled"
    assert one("The count is 459.").firm
    numbers, _ = claim_numbers("One of the clients is old.")
    assert numbers == []  # "one of" is not a count


@pytest.mark.parametrize(
    ("claim", "value", "expected"),
    [
        ("is 397", 397.0, "exact"),
        ("is 397", 396.6, "exact"),  # rounding
        ("is 397", 397.4, "exact"),
        ("is 397", 398.0, None),
        ("is 397.0", 397.0, "exact"),
        ("is 397.0", 397.04, "exact"),
        ("is 397.0", 397.2, None),
        ("is 17.22%", 17.2299, "exact"),  # truncation
        ("is 17.22%", 0.1722, "exact"),  # a fraction for a percent
        ("is 12.3%", 0.123, "exact"),
        ("is 12.3%", 0.13, None),
        ("is 0.25", 25.0, "scaled"),  # a percent for a fraction
        ("is 1,234", 1234.0, "exact"),
        ("is 1,234", 1235.0, None),
        ("is 2.5 million", 2_512_345.0, "exact"),
        ("is 2.5 million", 2_600_000.0, None),
        ("is 51.023 seconds", 51023.0, "scaled"),  # milliseconds
        ("is about 18", 17.2, "hedged"),
        ("is about 18", 17.0, None),
        ("is -39", -39.0, "exact"),
        ("is -39", 39.0, None),
    ],
)
def test_matches_at_the_written_precision(claim: str, value: float, expected: str | None) -> None:
    assert matches(one(claim), value) == expected


def test_a_value_written_more_coarsely_matches_when_the_claim_rounds_to_it() -> None:
    number = one("is 39.75203%")
    assert matches(number, 39.8) is None
    assert matches(number, 39.8, value_step=0.1) == "coarse"
    assert matches(number, 39.7, value_step=0.1) is None


def test_numbers_in_text_reads_sql_literals() -> None:
    sql = "SELECT COUNT(*) FROM t WHERE x > 1,500 AND d LIKE '1996-%' AND r = 0.25 LIMIT 3"
    assert {1500.0, 1996.0, 0.25, 3.0} <= numbers_in_text(sql)


def test_check_numbers_finds_values_row_counts_and_arithmetic() -> None:
    # the claimed 55% is 11 of 20, computed by the model from two queries
    check = check_numbers(
        "Exactly 55% of the accounts were opened in Decin.",
        [result((11,)), result((20,))],
    )
    assert [m.how for m in check.matches] == ["derived"]
    # the claimed 21 is the number of rows a query listed
    check = check_numbers("There are 21 atoms in TR001.", [result(*[(f"a{i}",) for i in range(21)])])
    assert check.matches[0].matched and check.matches[0].source.startswith("row count")
    # numeric text cells are read
    check = check_numbers("The votes were 52,340.", [result(("52,340",))])
    assert check.matches[0].how == "exact"


def test_numbers_used_as_conditions_are_skipped() -> None:
    check = check_numbers(
        "Schools with an average above 400 number 4, and 7 have code 66.",
        [result((4,))],
        extra_info="code 66 refers to ownership",
        queries=["SELECT COUNT(*) FROM s WHERE avg > 400 AND x = 7"],
    )
    reasons = {s.text: s.reason for s in check.skipped}
    assert reasons == {"400": "bound", "7": "in a query", "66": "in extra_info"}
    assert [m.number.text for m in check.matches] == ["4"]


def test_entailed_with_an_unmatched_firm_number_is_overridden() -> None:
    check = check_numbers("Pizza spending came to $745.29 in total.", [result((731.4,))])
    finding = judge_numbers(Label.ENTAILED, check)
    assert finding.action == "override" and finding.label is Label.REFUTED
    assert "745.29" in finding.message and "731.4" in finding.message


def test_entailed_with_a_matching_number_is_left_alone() -> None:
    check = check_numbers("Pizza spending came to $745.29 in total.", [result((745.2899999,))])
    assert judge_numbers(Label.ENTAILED, check).action == "none"


@pytest.mark.parametrize(
    ("claim", "results", "why"),
    [
        ("It was about 55% of them.", [result((0.7,))], "approximate"),  # hedged
        ("Hamilton debuted in 2007.", [result((2010,))], "approximate"),  # a year
        ("The count is 459.", [result((1,), truncated=True)], "truncated"),  # incomplete evidence
        ("It is 9 versus 4.", [result((9,))], "other numbers"),  # one matches, one does not
        (
            "The count is 459.",
            [QueryResult(sql="SELECT", error="syntax error: x", error_kind="syntax")],
            "no query",
        ),
    ],
)
def test_unclear_evidence_only_warns(claim: str, results: list[QueryResult], why: str) -> None:
    finding = judge_numbers(Label.ENTAILED, check_numbers(claim, results))
    assert finding.action == "warn" and finding.label is Label.ENTAILED
    assert why in finding.message


def test_contradicted_with_every_number_matching_warns_but_keeps_the_label() -> None:
    finding = judge_numbers(
        Label.REFUTED, check_numbers("McLaren led with 218.5 points.", [result((218.5,))])
    )
    assert finding.action == "warn" and finding.label is Label.REFUTED
    # a bound in the claim may be what is contradicted: no warning
    finding = judge_numbers(Label.REFUTED, check_numbers("Over 1,800 users got 3 badges.", [result((3,))]))
    assert finding.action == "none"
    # a number that does not match supports the contradiction
    finding = judge_numbers(Label.REFUTED, check_numbers("The count is 459.", [result((460,))]))
    assert finding.action == "none"


def test_not_enough_info_is_never_judged() -> None:
    check = check_numbers("The count is 459.", [result((1,))])
    assert judge_numbers(Label.NOT_ENOUGH_INFO, check).action == "none"


def test_to_dict_is_json_ready() -> None:
    import json

    check = check_numbers("The count is 459 and about 3.5%.", [result((float("inf"),), (459,))])
    json.dumps(check.to_dict(), allow_nan=False)
