"""Rules found on a sample gathered outside arXiVeri (GitHub READMEs, session of 2026-12-06): cells
of several numbers take part, a copy never gains digits, a difference of precision is no
contradiction, headers that abbreviate each other agree, and speed is measured again.

Every table is written to disk as HTML and read back, as `tabverify crosscheck` reads documents.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from tabverify.crosscheck import DiscrepancyKind, crosscheck
from tabverify.table.numbers import Agreement, Number, only_precision_differs
from tabverify.table.scientific import compare, contradiction, parse_measurement
from tests.crosscheck.html_files import write


def _m(text: str):
    m = parse_measurement(text)
    assert m is not None, text
    return m


def _report(tmp_path: Path, target: list[list[str]], source: list[list[str]]):
    return crosscheck(write(tmp_path, "target.html", target), write(tmp_path, "source.html", source))


def test_cells_of_several_numbers_compare_number_by_number() -> None:
    both = _m("65.5 (64.4) / 84.5 (84.0)")
    assert both.value == Decimal("65.5") and both.others == (Decimal("84.5"),)
    assert compare(both, _m("65.5 / 84.5")) is Agreement.EXACT
    assert compare(_m("65.5 / 84.52"), _m("65.5 / 84.5")) is Agreement.ROUNDED
    assert compare(_m("65.5 / 84.6"), both) is Agreement.DIFFERENT
    assert compare(_m("65.5"), both) is Agreement.DIFFERENT  # never a single number
    assert compare(_m("65.5 / 84.5 / 1.0"), both) is Agreement.DIFFERENT
    first, second = contradiction(_m("65.5 / 84.6"), both)
    assert (first.value, second.value, first.others) == (Decimal("84.6"), Decimal("84.5"), ())
    assert contradiction(both, _m("65.5 / 84.5")) is None
    assert contradiction(_m("0.9 / 45.31"), _m("0.880 / 45.31")) is None  # precision only
    first, second = contradiction(_m("0.9 / 55.31"), _m("0.880 / 45.31"))  # the later pair contradicts
    assert (first.value, second.value) == (Decimal("55.31"), Decimal("45.31"))
    assert parse_measurement("1 / 2 ± 3 ± 4") is None
    assert _m("48.80 / 51.25±2.52").uncertainty is None
    spread = _m("48.80±3.16 / 51.25±2.52")
    assert (spread.value, spread.others, spread.uncertainty) == (
        Decimal("48.80"),
        (Decimal("51.25"),),
        Decimal("3.16"),
    )


def test_a_copy_may_round_but_never_gains_digits() -> None:
    assert compare(_m("45.6"), _m("45.63"), copy=True) is Agreement.ROUNDED
    assert compare(_m("87.5"), _m("88M"), copy=True) is Agreement.DIFFERENT
    assert compare(_m("87.5"), _m("88M")) is Agreement.ROUNDED  # without a direction, either way
    assert only_precision_differs(Number(_m("0.880").value), Number(_m("0.9").value))
    assert only_precision_differs(Number(_m("0.880").value), Number(_m("0.8").value))  # truncated
    assert not only_precision_differs(Number(_m("0.880").value), Number(_m("0.7").value))
    assert not only_precision_differs(Number(_m("0.88").value), Number(_m("0.880").value))


SCORES = [
    ["Model", "Dev", "Test", "Params"],
    ["BERT", "65.5 (64.4) / 84.5 (84.0)", "70.0 (68.7) / 87.0 (86.3)", "102M"],
    ["BERT-wwm", "66.3 (65.0) / 85.6 (84.7)", "70.5 (69.1) / 87.4 (86.7)", "102M"],
    ["RoBERTa-wwm-ext", "67.4 (66.5) / 87.2 (86.5)", "72.6 (71.4) / 89.4 (88.8)", "102M"],
    ["MacBERT-base", "68.5 (67.3) / 87.9 (87.1)", "73.2 (72.4) / 89.5 (89.2)", "102M"],
]


def test_a_table_of_two_number_cells_is_matched_and_a_miscopied_one_flagged(tmp_path: Path) -> None:
    target = [row[:3] for row in SCORES]
    target[3][2] = "72.6 (71.4) / 89.7 (88.8)"  # one digit of the second number changed
    report = _report(tmp_path, target, SCORES)
    assert report.source_index == 0
    assert len(report.pairs) == 7
    [flag] = report.discrepancies
    assert flag.target == (3, 2) and flag.kind is DiscrepancyKind.DIGIT


def test_a_coarser_value_with_one_significant_digit_is_not_flagged(tmp_path: Path) -> None:
    source = [
        ["Model", "Top-1", "Top-5", "FLOPs (G)"],
        ["VAN-B0", "75.4", "92.91", "0.9"],
        ["VAN-B1", "81.1", "95.67", "2.5"],
    ]
    target = [
        ["Model", "Top-1", "Top-5", "FLOPs (G)"],
        ["VAN-B0", "75.4", "92.91", "0.880"],
        ["VAN-B1", "81.1", "95.67", "2.6"],
    ]
    flags = {d.target: d.kind for d in _report(tmp_path, target, source).discrepancies}
    assert flags == {(2, 3): DiscrepancyKind.DIGIT}


def test_speed_measured_again_is_not_flagged_but_a_slip_there_is(tmp_path: Path) -> None:
    source = [
        ["Model", "AP", "AP50", "FPS"],
        ["DETR-DC5", "43.3", "63.1", "11.4"],
        ["Deformable DETR", "43.8", "62.6", "19.0"],
        ["Conditional DETR", "43.0", "64.0", "10.5"],
        ["Anchor DETR", "44.2", "64.7", "19.9"],
    ]
    target = [list(row) for row in source]
    target[1][3] = "7.2"  # measured again on other hardware: another value, not a slip
    target[2][3] = "19.6"  # one digit changed
    flags = {d.target: d.kind for d in _report(tmp_path, target, source).discrepancies}
    assert flags == {(2, 3): DiscrepancyKind.DIGIT}


def test_a_group_header_about_speed_does_not_make_its_metrics_timed(tmp_path: Path) -> None:
    rows = [
        ["m1", "44.11", "50.12"],
        ["m2", "45.27", "51.36"],
        ["m3", "46.31", "52.48"],
        ["m4", "47.42", "53.57"],
    ]
    source = [["Method", "Same training speed", "Same training speed"], ["Method", "AP", "AR"], *rows]
    target = [list(row) for row in source]
    target[3][1] = "71.93"
    report = crosscheck(
        write(tmp_path, "target.html", target, header_rows=2),
        write(tmp_path, "source.html", source, header_rows=2),
    )
    assert {d.target: d.kind for d in report.discrepancies} == {(3, 1): DiscrepancyKind.DIFFERENT}


def test_cells_of_several_numbers_written_alike_but_not_equal_are_told_apart(tmp_path: Path) -> None:
    rows = [["m1", "12 / 45.34", "50.12"], ["m2", "13 / 46.21", "51.36"], ["m3", "14 / 47.35", "52.48"]]
    source = [["Method", "N / AP", "AR"], *rows]
    target = [list(row) for row in source]
    target[1][1], target[2][1] = "12 / 45.3", "13 / 46.20"  # a rounding; then a digit changed
    flags = {d.target: d.kind for d in _report(tmp_path, target, source).discrepancies}
    assert flags == {(2, 1): DiscrepancyKind.DIGIT}


@pytest.mark.parametrize(
    ("target_header", "flagged"),
    [("Average(hard)", False), ("Top1", False), ("Average", True)],
)
def test_a_header_flag_needs_a_better_named_column(tmp_path: Path, target_header: str, flagged: bool) -> None:
    source = [
        ["Model", "Average", "Avg(Hard)", "1K"],
        ["A-7B", "42.8", "31.57", "7"],
        ["B-7B", "51.7", "38.21", "7"],
        ["C-13B", "53.6", "40.33", "13"],
    ]
    target = [["Model", target_header], ["A-7B", "31.57"], ["B-7B", "38.21"], ["C-13B", "40.33"]]
    if target_header == "Top1":
        source = [[c.replace("Avg(Hard)", "acc@1") for c in row] for row in source]
        source[0][3] = "1"
    kinds = [d.kind for d in _report(tmp_path, target, source).discrepancies]
    assert kinds == ([DiscrepancyKind.HEADER] if flagged else [])
