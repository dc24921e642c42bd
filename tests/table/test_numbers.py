"""The one number model: the numeric token, scientific notation, precision equality, agreement."""

from __future__ import annotations

from decimal import Decimal

import pytest

from tabverify.program import execute
from tabverify.program.values import values_match
from tabverify.table import (
    Agreement,
    Grid,
    Number,
    Table,
    agreement,
    parse_decimal,
    parse_measurement,
    parse_quantity,
)
from tabverify.table.numbers import rounds_to, same_at_precision


@pytest.mark.parametrize(
    ("token", "expected"),
    [
        ("1,234.50", Decimal("1234.50")),
        ("\u22123.5", Decimal("-3.5")),
        ("+17.3", Decimal("17.3")),
        (".94", Decimal("0.94")),
        ("12.", Decimal("12")),
        ("1e3", Decimal("1000")),
        ("1.5E-3", Decimal("0.0015")),
        ("2e+2", Decimal("200")),
    ],
)
def test_numeric_tokens_are_read_with_their_value(token: str, expected: Decimal) -> None:
    assert parse_decimal(token) == expected


@pytest.mark.parametrize(
    "token",
    [
        "1e999999",
        "1958e999999",
        "0e999999",
        "1e400",
        "1e-400",
        "9" * 400,
        "1e" + "9" * 50,
        "abc",
        "1.2.3",
        "",
    ],
)
def test_out_of_range_or_malformed_tokens_are_not_numbers(token: str) -> None:
    assert parse_decimal(token) is None


def test_written_precision_survives_scientific_notation() -> None:
    assert parse_decimal("45.30").as_tuple().exponent == -2  # type: ignore[union-attr]
    assert parse_decimal("1.50e1") == Decimal("15.0")
    assert parse_decimal("1.50e1").as_tuple().exponent == -1  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("text", "value"), [("1e3", 1000.0), ("1.5e3 kg", 1500.0), ("-2.5E-2", -0.025), ("3E2%", 300.0)]
)
def test_quantities_read_scientific_notation_whole(text: str, value: float) -> None:
    quantity = parse_quantity(text)
    assert quantity is not None and quantity.value == value


@pytest.mark.parametrize(
    "text", ["1e400", "1e999999", "-1e999", "9" * 400, "t" + "9" * 400, "9" * 5000 + ":30"]
)
def test_quantities_beyond_float_range_are_no_number(text: str) -> None:
    # never infinity and never the prefix before the exponent (1e400 was read as 1)
    assert parse_quantity(text) is None


def test_scientific_cells_are_read_or_left_as_text() -> None:
    m = parse_measurement("1.2e-3")
    assert m is not None and m.value == Decimal("0.0012")
    assert parse_measurement("1e999999") is None
    assert parse_measurement(r"$\mathbf{1e400}\pm0.2$") is None


def test_program_equality_reads_scientific_notation() -> None:
    assert values_match("1e3", "1000")
    assert not values_match("1e3", "1")
    assert not values_match("1e400", "1")
    table = Table.from_rows(["item", "mass"], [["a", "1e400"], ["b", "1e3"]])
    assert execute("eq{hop{filter_eq{all_rows; item; b}; mass}; 1000}", table).value is True
    assert execute("eq{hop{filter_eq{all_rows; item; a}; mass}; 1}", table).value is False


def test_computed_values_are_read_at_the_literals_precision() -> None:
    assert same_at_precision(120.8333, 120.8, 1)
    assert same_at_precision(4.35, 4.4, 1) and same_at_precision(4.35, 4.3, 1)  # round or truncate
    assert same_at_precision(4.4, 4.0, 0)  # any number of significant digits
    assert same_at_precision(4.6, 5.0, 0) and same_at_precision(4.6, 4.0, 0)
    assert not same_at_precision(4.6, 3.0, 0) and not same_at_precision(4.6, 4.5, 1)
    assert not same_at_precision(float("inf"), 4.0, 0)
    assert not same_at_precision(0.5, 0.5, 400)  # a precision no float can scale to


def test_written_values_need_two_significant_digits_to_round() -> None:
    assert rounds_to(Decimal("0.3535"), Decimal("0.354"))
    assert rounds_to(Decimal("0.3535"), Decimal("0.353"))  # truncated
    assert not rounds_to(Decimal("0.3535"), Decimal("0.4"))  # one significant digit
    assert not rounds_to(Decimal("0.354"), Decimal("0.3535"))  # the coarse side must be coarser


def test_agreement_vocabulary() -> None:
    million, thousands = (
        Number(Decimal("1.5"), scale=Decimal(10**6)),
        Number(Decimal("1500"), scale=Decimal(1000)),
    )
    assert agreement(million, thousands) is Agreement.EXACT
    assert agreement(Number(Decimal("0.354")), Number(Decimal("0.3535"))) is Agreement.ROUNDED
    assert agreement(Number(Decimal("68.4")), Number(Decimal("0.684"))) is Agreement.SCALED
    assert agreement(Number(Decimal("68.4")), Number(Decimal("0.684")), scale=False) is Agreement.DIFFERENT
    assert agreement(Number(Decimal("6.84")), Number(Decimal("0.684"))) is Agreement.DIFFERENT


def test_measurements_share_the_number_model() -> None:
    m = parse_measurement("21M")
    assert m is not None and m.number == Number(Decimal("21"), False, Decimal(10**6))
    assert m.number.scaled == Decimal(21 * 10**6)
    pct = parse_measurement(r"68.40\%")
    assert pct is not None and pct.number.percent and pct.number.exponent == -2


def test_huge_exponents_never_reach_decimal_arithmetic() -> None:
    # 1e999999 overflowed Decimal arithmetic in the crosscheck (decimal.Overflow traceback)
    from tabverify.crosscheck import crosscheck

    grid = Grid.from_rows(
        [["model", "AP"], ["a", "1e999999"], ["b", "2.5"], ["c", "3.75"], ["d", "1e-999999"]]
    )
    report = crosscheck(grid, [grid])
    assert {p.target for p in report.pairs} == {(2, 1), (3, 1)}


def test_the_docstring_examples_hold() -> None:
    import doctest

    from tabverify.table import numbers, scientific

    for module in (numbers, scientific):
        result = doctest.testmod(module)
        assert result.attempted > 0 and result.failed == 0, module.__name__


@pytest.mark.parametrize(
    ("text", "value", "others"),
    [
        ("25,600", "25600", ()),
        ("1,000,000", "1000000", ()),
        ("$25{,}600$", "25600", ()),
        ("25,600.5", "25600.5", ()),
        ("1,2", "1", ("2",)),
        ("0.5,0.7", "0.5", ("0.7",)),
        ("0,123", "0", ("123",)),
        ("12,345,67", "12", ("345", "67")),
        ("1,2345", "1", ("2345",)),
        ("８１．９", "81.9", ()),
    ],
)
def test_thousands_separators_are_read_only_in_groups_of_three(
    text: str, value: str, others: tuple[str, ...]
) -> None:
    m = parse_measurement(text)
    assert m is not None and m.value == Decimal(value) and m.others == tuple(Decimal(o) for o in others)


def test_underscores_and_broken_groups_are_not_numbers() -> None:
    assert parse_measurement("1_234") is None
    assert parse_decimal("1_234") is None
    assert parse_decimal("1,2") is None and parse_decimal("0,123") is None and parse_decimal("1,2345") is None
    assert parse_decimal("1,234.5") == Decimal("1234.5") and parse_decimal("−１,２３４") == Decimal("-1234")
    m = parse_measurement("８１．９％")
    assert m is not None and m.percent and m.value == Decimal("81.9")
