import pytest

from tabverify.table import parse_quantity


@pytest.mark.parametrize(
    ("text", "value", "kind"),
    [
        ("1,234.5", 1234.5, "number"),
        ("45%", 45.0, "percent"),
        ("-3", -3.0, "number"),
        ("\u22123.5", -3.5, "number"),
        ("+17.3", 17.3, "number"),
        (".94", 0.94, "number"),
        ("7-5", 7.0, "range"),
        ("2 - 1", 2.0, "range"),
        ("3rd", 3.0, "ordinal"),
        ("third", 3.0, "ordinal"),
        ("t5", 5.0, "ordinal"),
        ("two", 2.0, "number"),
        ("1370 lb (635 kg)", 1370.0, "number"),
        ("11 june 1958", 19580611.0, "date"),
        ("june 11, 1958", 19580611.0, "date"),
        ("october 15", 1015.0, "date"),
        ("1958-06-11", 19580611.0, "date"),
        ("2005", 2005.0, "year"),
        ("1:23.4", 83.4, "duration"),
        ("- 2", -2.0, "number"),
        ("69 + 71 = 140", 140.0, "number"),
    ],
)
def test_parse_quantity_reads_value_and_kind(text: str, value: float, kind: str) -> None:
    quantity = parse_quantity(text)
    assert quantity is not None
    assert quantity.value == pytest.approx(value)
    assert quantity.kind == kind
    assert quantity.text == text


@pytest.mark.parametrize("text", ["", "round 3", "democratic", "n/a"])
def test_non_numbers_have_no_quantity(text: str) -> None:
    assert parse_quantity(text) is None


def test_range_keeps_second_number_and_units_are_kept() -> None:
    assert parse_quantity("7 - 5").second == 5.0  # type: ignore[union-attr]
    assert parse_quantity("1370 lb (635 kg)").unit == "lb"  # type: ignore[union-attr]
    assert parse_quantity("2069.16").decimals == 2  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("text", "value"),
    [("1\u2009000", 1000.0), ("3\xa0000", 3000.0), ("1\u202f234\u202f567", 1234567.0), ("12\u2009345.5", 12345.5),
     ("7\u20095", 7.0), ("2 000", 2.0)],
)  # fmt: skip
def test_thin_and_no_break_spaces_group_thousands(text: str, value: float) -> None:
    # a thin or no-break space before exactly three digits separates thousands, as crosscheck reads
    # it too; a plain space does not (it separates numbers in scores and lists)
    quantity = parse_quantity(text)
    assert quantity is not None and quantity.value == value
