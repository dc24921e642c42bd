"""Scientific numbers: what a cell holds, and how two written numbers agree."""

from __future__ import annotations

from decimal import Decimal

import pytest

from tabverify.table.scientific import Agreement, compare, parse_measurement, rounds_to


def value(text: str) -> Decimal:
    m = parse_measurement(text)
    assert m is not None, text
    return m.value


@pytest.mark.parametrize(
    ("text", "expected", "uncertainty"),
    [
        (r"45.3\pm0.2", "45.3", "0.2"),
        ("45.3 ± 0.2", "45.3", "0.2"),
        ("45.3 (±0.2)", "45.3", "0.2"),
        (r"$\mathbf{45.3}\pm 0.2$", "45.3", "0.2"),
        (r"45.3_{(0.2)}", "45.3", "0.2"),
        (r"\mathbf{0.902\pm 0.036}", "0.902", "0.036"),
    ],
)
def test_plus_minus(text: str, expected: str, uncertainty: str) -> None:
    m = parse_measurement(text)
    assert m is not None and m.value == Decimal(expected) and m.uncertainty == Decimal(uncertainty)


def test_precision_is_kept() -> None:
    m = parse_measurement("90.60")
    assert m is not None and m.exponent == -2 and m.decimals == 2 and str(m.value) == "90.60"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("\u22120.5", "-0.5"),  # U+2212 minus
        ("11\u2009108", "11108"),  # thin-space thousands
        ("1,234", "1234"),  # thousands commas in groups of three
        ("1,23", "1"),  # any other comma separates metrics, see test_multi_metric_cells
        (r"\textbf{70.2}", "70.2"),
        (r"\underline{70.2}", "70.2"),
        (r"\ul{70.2}", "70.2"),
        (r"70.2$^\dagger$", "70.2"),
        ("70.2*", "70.2"),
        ("1.5e-3", "0.0015"),
        ("9.9ms", "9.9"),
        ("  33.2  ", "33.2"),
    ],
)
def test_values(text: str, expected: str) -> None:
    assert value(text) == Decimal(expected)


def test_percent_and_suffixes() -> None:
    percent = parse_measurement("68.4%")
    assert percent is not None and percent.percent
    latex_percent = parse_measurement(r"68.4\%")
    assert latex_percent is not None and latex_percent.percent
    for text, suffix, scaled in (("21M", "M", "21000000"), ("3.5k", "k", "3500"), ("1.8B", "B", "1.8E+9")):
        m = parse_measurement(text)
        assert m is not None and m.suffix == suffix and m.scaled == Decimal(scaled)


@pytest.mark.parametrize(
    ("text", "delta"),
    [
        ("39.0(+2.6)", "2.6"),
        ("47.7 (+1.5)", "1.5"),
        (r"83.6 (\uparrow 3.3)", "3.3"),
        (r"80.1 (\downarrow 0.4)", "-0.4"),
    ],
)
def test_deltas(text: str, delta: str) -> None:
    m = parse_measurement(text)
    assert m is not None and m.delta == Decimal(delta) and not m.multi


def test_multi_metric_cells() -> None:
    for text in ("45.1 / 60.2", "45.1/60.2", "45.1 | 60.2 | 70.0"):
        m = parse_measurement(text)
        assert m is not None and m.multi and m.value == Decimal("45.1")


@pytest.mark.parametrize(
    "text", ["ResNet-50", "CVPR 2021", "(1)", "-", "", "AP{}_{50}", "top-5", "&lt;9", "a" * 100 + "1"]
)
def test_text_is_not_a_measurement(text: str) -> None:
    assert parse_measurement(text) is None


def test_signed_values_are_marked() -> None:
    plus = parse_measurement("+0.9")
    plain = parse_measurement("0.9")
    assert plus is not None and plain is not None and plus.signed and not plain.signed


def agreement(a: str, b: str, **kwargs: bool) -> Agreement:
    x, y = parse_measurement(a), parse_measurement(b)
    assert x is not None and y is not None
    return compare(x, y, **kwargs)


def test_exact_at_written_precision() -> None:
    assert agreement("90.6", "90.60") is Agreement.EXACT
    assert agreement("12.3", "12.4") is Agreement.DIFFERENT  # same precision: must be identical


def test_rounding_tolerant() -> None:
    assert agreement("0.354", "0.3535") is Agreement.ROUNDED
    assert agreement("0.3537", "0.354") is Agreement.ROUNDED
    assert agreement("21M", "20.6") is Agreement.ROUNDED
    assert agreement("0.558", "0.5581") is Agreement.ROUNDED  # truncation
    assert agreement("0.354", "0.3535", rounding=False) is Agreement.DIFFERENT
    assert agreement("0", "0.3") is Agreement.DIFFERENT  # one significant digit says nothing
    assert not rounds_to(Decimal("46.20"), Decimal("46.26"))


def test_scale_tolerant() -> None:
    assert agreement("68.4", "0.684") is Agreement.SCALED
    assert agreement("70.50", r"\mathbf{0.705}") is Agreement.SCALED
    assert agreement("35.4", "0.3535") is Agreement.SCALED  # scale and rounding together
    assert agreement("68.4", "0.684", scale=False) is Agreement.DIFFERENT
    assert agreement("6.84", "0.684") is Agreement.DIFFERENT


def test_suffixes_compare_by_what_they_stand_for() -> None:
    assert agreement("1.5M", "1500K") is Agreement.EXACT
    assert agreement("4.0G", "4.0") is Agreement.EXACT  # a suffix on one side is a unit


@pytest.mark.parametrize(
    "text",
    [
        r"43.7\dag",
        r"43.7\ddag",
        r"43.7\textsuperscript{a}",
        r"43.7$^{a}$",
        r"43.7$^\dagger$",
        r"43.7$^*$",
        r"43.7\footnotemark",
        r"43.7\footnotemark[2]",
        r"43.7\footnote{Trained for 12 {\it more} epochs.}",
        r"43.7\footnote[3]{See 5.1}",
        r"\textbf{43.7}\dag",
    ],
)
def test_footnote_marks_are_read_through(text: str) -> None:
    m = parse_measurement(text)
    assert m is not None and m.value == Decimal("43.7") and not m.multi, text


@pytest.mark.parametrize("text", [">43.7", "$<$43.7", r"\leq 43.7", r"$\geq$ 5", "≥ 5", "&lt;0.1", "<=3"])
def test_inequalities_are_bounds_not_values(text: str) -> None:
    from tabverify.table.scientific import is_bound

    assert parse_measurement(text) is None
    assert is_bound(text)


@pytest.mark.parametrize("text", ["43.7", "x>3", ">abc", r"\left 3", "ResNet-50", ""])
def test_values_and_text_are_not_bounds(text: str) -> None:
    from tabverify.table.scientific import is_bound

    assert not is_bound(text)


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        (r"43.7\dag", "43.7†"),
        (r"43.7\ddag", "43.7‡"),
        (r"43.7\textsuperscript{a}", "43.7^a"),
        (r"43.7\footnotemark", "43.7"),
        (r"43.7\footnote{Re-run.}", "43.7"),
        (r"\leq 43.7", "≤ 43.7"),
    ],
)
def test_display_text_of_marked_cells(text: str, shown: str) -> None:
    from tabverify.table.scientific import display_text

    assert display_text(text) == shown


def test_a_bound_ends_the_row_label() -> None:
    from tabverify.table import read_latex_tables

    grid = read_latex_tables(
        "\\begin{tabular}{lll}\nMethod & AP & AP50 \\\\\nSwin-T & $>$43.7 & 66.9 \\\\\n\\end{tabular}"
    )[0]
    assert grid.row_label(1) == "Swin-T"
    assert (1, 1) not in grid.data_measurements and (1, 2) in grid.data_measurements
