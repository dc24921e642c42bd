"""Discrepancy flags worth reading: which rows and columns are judged, and what each error is called.

Every table is written to disk as HTML and read back, as `tabverify crosscheck` reads documents.
"""

from __future__ import annotations

import importlib.util
import random
import sys
from decimal import Decimal
from pathlib import Path
from types import ModuleType

import pytest

from tabverify.bench.arxiveri import Pair
from tabverify.crosscheck import DiscrepancyKind, crosscheck
from tabverify.crosscheck.report import added_components_differ, is_result, own_marks, own_rows
from tabverify.table import read_tables
from tabverify.table.scientific import parse_measurement
from tests.crosscheck.html_files import write

SOURCE = [
    ["Method", "Top-1", "Top-5", "Params (M)", "FLOPs (G)"],
    ["ResNet-50", "76.13", "92.86", "25.6", "4.1"],
    ["ResNet-101", "77.37", "93.55", "44.5", "7.8"],
    ["DeiT-S", "79.85", "95.04", "22.1", "4.6"],
    ["Swin-T", "81.29", "95.53", "28.3", "4.5"],
    ["ConvNeXt-T", "82.14", "95.86", "28.6", "4.5"],
]


def check(tmp_path: Path, target: list[list[str]], caption: str = "", source: list[list[str]] = SOURCE):
    """The discrepancies of ``target`` against ``source``, by target position."""
    report = crosscheck(
        write(tmp_path, "target.html", target, caption), write(tmp_path, "source.html", source)
    )
    assert report.source_index == 0
    return {d.target: d for d in report.discrepancies}


def copy(*changes: tuple[int, int, str]) -> list[list[str]]:
    rows = [list(row) for row in SOURCE]
    for i, j, text in changes:
        rows[i][j] = text
    return rows


@pytest.mark.parametrize(
    ("cell", "written", "kind"),
    [
        ((2, 1), "77.47", DiscrepancyKind.DIGIT),
        ((2, 1), "77.73", DiscrepancyKind.TRANSPOSITION),
        ((3, 2), "95.1", DiscrepancyKind.ROUNDING),  # 95.04 is 95.0 rounded or truncated, never 95.1
        ((2, 1), "773.7", DiscrepancyKind.SCALE),
        ((2, 1), "7.737", DiscrepancyKind.SCALE),
        ((1, 3), "256", DiscrepancyKind.SCALE),
        ((1, 1), "76.31", DiscrepancyKind.TRANSPOSITION),  # not a rounding of 76.13
    ],
)
def test_each_kind_of_slip_is_named(
    tmp_path: Path, cell: tuple[int, int], written: str, kind: DiscrepancyKind
) -> None:
    flags = check(tmp_path, copy((*cell, written)))
    assert list(flags) == [cell] and flags[cell].kind is kind


def test_a_correct_rounding_is_no_slip(tmp_path: Path) -> None:
    assert check(tmp_path, copy((2, 1, "77.4"), (3, 2, "95.0"))) == {}


def test_a_fraction_among_percentages_is_a_scale_slip(tmp_path: Path) -> None:
    # 0.7737 agrees with 77.37 through the percent factor, but the rest of the column is percentages
    flags = check(tmp_path, copy((2, 1, "0.7737")))
    assert list(flags) == [(2, 1)] and flags[(2, 1)].kind is DiscrepancyKind.SCALE
    # a whole column written as fractions is a unit choice, not a slip
    fractions = copy(*[(i, 1, str(Decimal(SOURCE[i][1]) / 100)) for i in range(1, 6)])
    assert check(tmp_path, fractions) == {}


def test_a_fraction_in_a_column_of_two_copied_values_is_a_scale_slip(tmp_path: Path) -> None:
    # a target quoting two of the source's rows: one Top-1 is copied as written, the other as a fraction
    target = [list(SOURCE[0]), list(SOURCE[1]), list(SOURCE[2])]
    target[2][1] = "0.7737"
    flags = check(tmp_path, target)
    assert list(flags) == [(2, 1)] and flags[(2, 1)].kind is DiscrepancyKind.SCALE


def test_two_rows_exchanged_in_a_column_are_a_row_swap(tmp_path: Path) -> None:
    flags = check(tmp_path, copy((2, 1, "79.85"), (3, 1, "77.37")))
    assert {p: d.kind for p, d in flags.items()} == {
        (2, 1): DiscrepancyKind.ROW_SWAP,
        (3, 1): DiscrepancyKind.ROW_SWAP,
    }


def test_two_columns_exchanged_in_a_row_are_a_column_swap(tmp_path: Path) -> None:
    flags = check(tmp_path, copy((4, 1, "95.53"), (4, 2, "81.29")))
    assert {p: d.kind for p, d in flags.items()} == {
        (4, 1): DiscrepancyKind.COLUMN_SWAP,
        (4, 2): DiscrepancyKind.COLUMN_SWAP,
    }


def test_a_row_tied_by_one_shared_value_is_not_judged(tmp_path: Path) -> None:
    source = [
        ["Method", "Size", "Top-1", "FLOPs (G)", "Params (M)"],
        ["ResNet-50", "224", "76.13", "4.1", "25.6"],
        ["ViT-B", "384", "77.91", "55.5", "86.6"],
        ["DeiT-S", "224", "79.85", "4.6", "22.1"],
    ]
    target = [list(row) for row in source]
    target[1] = ["ResNet-50", "224", "77.13", "", ""]  # only the input size is shared
    assert check(tmp_path, target, source=source) == {}
    target[1] = ["ResNet-50", "224", "79.85", "", ""]  # nor is a value of another source row judged
    assert check(tmp_path, target, source=source) == {}
    target[1] = ["ResNet-50", "224", "79.85", "4.1", ""]
    assert {p: d.kind for p, d in check(tmp_path, target, source=source).items()} == {
        (1, 2): DiscrepancyKind.OTHER_ROW
    }
    target[1] = ["ResNet-50", "224", "77.13", "4.1", ""]  # two result cells tie the row: judged
    assert list(check(tmp_path, target, source=source)) == [(1, 2)]
    assert is_result(number("224")) and is_result(number("4.1")) and is_result(number("21M"))
    assert not is_result(number("12"))  # a small whole number (epochs, layers) is shared by chance


def test_rows_the_caption_marks_as_reimplemented_are_not_copies(tmp_path: Path) -> None:
    target = copy((2, 1, "77.73"), (2, 0, "ResNet-101*"))
    assert list(check(tmp_path, target)) == [(2, 1)]  # an unexplained mark: still a copy
    assert check(tmp_path, target, caption="Results on ImageNet. * denotes re-implemented results.") == {}
    assert (
        check(tmp_path, target, caption="Results. Methods marked with * were reproduced with our code.") == {}
    )
    # a run attributed to a cited work is that work's number, copied: still judged
    assert list(check(tmp_path, target, caption="*: re-implemented by [31].")) == [(2, 1)]


def test_rows_labelled_or_grouped_as_own_are_not_copies(tmp_path: Path) -> None:
    assert check(tmp_path, copy((2, 1, "77.73"), (2, 0, "ResNet-101 (ours)"))) == {}
    assert check(tmp_path, copy((2, 1, "77.73"), (2, 0, "ResNet-101 (reproduced)"))) == {}
    sectioned = copy((2, 1, "77.73"))
    sectioned.insert(2, ["Our implementation", "", "", "", ""])
    rows, _ = own_rows(read_tables(write(tmp_path, "s.html", sectioned))[0])
    assert rows == {3, 4, 5, 6}  # every row below the section row


def test_own_marks_are_read_from_the_legend() -> None:
    assert own_marks("\\dagger: our implementation. \\ddagger: reported by the authors.") == {"†"}
    assert own_marks("{}^{\\ast}: MonoFlex is our baseline and re-implemented ourselves.") == {"*"}
    assert own_marks("‡: M3D-RPN is re-implemented by [31]. † indicates ImageNet pretraining.") == set()
    # "et al." ends no sentence: the citation after it still attributes the run
    assert own_marks("Results with † are re-implemented by Chen et al. [31].") == set()
    # a mark's explanation ends at its clause: a later "we ..." explains nothing about it
    assert own_marks("* marks results from [12]; we report top-1.") == set()
    assert own_marks("* p < 0.05; we use a t-test.") == set()
    assert own_marks("results we re-ran are marked with \\ddagger") == {"‡"}


@pytest.mark.parametrize(
    "label",
    ["Official implementation", "PyTorch implementation", "implemented in JAX", "WE-LSTM", "Proposed by [3]"],
)
def test_ordinary_labels_are_not_own_rows(tmp_path: Path, label: str) -> None:
    # the row is a copy (its label names no run of the citing paper's own), so it is still judged
    grid = read_tables(write(tmp_path, "s.html", copy((2, 1, "77.73"), (2, 0, label))))[0]
    assert own_rows(grid) == (set(), set())


def test_a_method_with_added_components_is_not_its_base(tmp_path: Path) -> None:
    assert added_components_differ("DeiT-S + distillation", "DeiT-S")
    assert added_components_differ("DeiT-S w/ token labelling", "DeiT-S [12]")
    assert not added_components_differ("FCMNet P+L", "FCMNet [20]")  # lone letters add nothing checkable
    target = copy((3, 0, "DeiT-S + KD"), (3, 1, "81.20"))  # 95.04, 22.1, 4.6 still agree
    assert check(tmp_path, target) == {}
    assert list(check(tmp_path, copy((3, 1, "81.20")))) == [(3, 1)]


def test_columns_whose_headers_disagree_are_not_judged(tmp_path: Path) -> None:
    target = copy((2, 4, "7.9"))
    assert list(check(tmp_path, target)) == [(2, 4)]
    target[0][4] = "Latency (ms)"  # the same numbers under another header: not the source's FLOPs
    assert check(tmp_path, target) == {}
    target[0][4] = "GFLOPs"  # an abbreviation of the same header
    assert list(check(tmp_path, target)) == [(2, 4)]


def test_one_specific_value_under_the_same_name_ties_a_row(tmp_path: Path) -> None:
    source = [
        ["Method", "Size", "Top-1", "Params (M)"],
        ["ResNet-50", "224", "76.13", "25.6"],
        ["DeiT-S", "224", "79.85", "22.1"],
    ]
    target = [list(row) for row in source]
    target[1] = ["ResNet-50 [12]", "", "77.13", "25.6"]  # the name and 25.6 agree: 77.13 is judged
    assert {p: d.kind for p, d in check(tmp_path, target, source=source).items()} == {
        (1, 2): DiscrepancyKind.DIGIT
    }
    target[1] = ["ResNet-101", "", "77.13", "25.6"]  # another name: one shared value is a coincidence
    assert check(tmp_path, target, source=source) == {}
    target[1] = ["ResNet-50", "", "77.13", "25"]  # a whole number is no specific value
    assert check(tmp_path, target, source=source) == {}


def test_a_row_disagreeing_as_often_as_it_agrees_is_another_experiment(tmp_path: Path) -> None:
    target = copy((2, 1, "78.01"), (2, 2, "94.02"))  # 44.5 and 7.8 agree, two results differ
    assert check(tmp_path, target) == {}
    assert list(check(tmp_path, copy((2, 1, "78.01")))) == [(2, 1)]


# --- the injection helpers of scripts/bench_crosscheck_flags.py


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    path = Path(__file__).parents[2] / "scripts" / "bench_crosscheck_flags.py"
    spec = importlib.util.spec_from_file_location("bench_crosscheck_flags", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def number(text: str):  # type: ignore[no-untyped-def]
    m = parse_measurement(text)
    assert m is not None
    return m


def test_injected_digit_changes_and_transpositions(bench: ModuleType) -> None:
    rng = random.Random(0)
    for _ in range(50):
        changed = bench.digit_change(number("45.67"), rng)
        assert len(changed) == 5 and sum(a != b for a, b in zip(changed, "45.67", strict=True)) == 1
        assert not changed.startswith("0")
        swapped = bench.transposition(number("45.67"), rng)
        assert swapped in {"54.67", "45.76"}  # neighbouring digits; the point stays
    assert bench.transposition(number("11.1"), rng) is None
    assert bench.transposition(number("105"), rng) in {"150"}  # never "015"


def test_injected_wrong_rounding_and_scale(bench: ModuleType) -> None:
    rng = random.Random(0)
    assert bench.wrong_rounding(number("45.63"), rng) == "45.7"
    assert bench.wrong_rounding(number("45.67"), rng) is None  # 45.7 and 45.6 would both be right
    assert bench.wrong_rounding(number("45"), rng) is None
    assert {bench.scale_slip(number("45.67"), random.Random(s), 1) for s in range(20)} == {"456.7", "4.567"}
    assert {bench.scale_slip(number("45.67"), random.Random(s), 2) for s in range(20)} == {"4567", "0.4567"}


def test_replace_number_keeps_the_marks(bench: ModuleType) -> None:
    assert bench.replace_number(r"\mathbf{45.60}", Decimal("45.60"), "45.06") == r"\mathbf{45.06}"
    assert bench.replace_number("45.6 ± 0.2", Decimal("45.6"), "46.5") == "46.5 ± 0.2"
    assert bench.replace_number("45.60", Decimal("45.6"), "1") is None  # written differently


def test_injections_are_found_on_a_clean_copy(tmp_path: Path, bench: ModuleType) -> None:
    target = read_tables(write(tmp_path, "t.html", SOURCE, "Results."))[0]
    source = read_tables(write(tmp_path, "s.html", SOURCE))[0]
    cells = frozenset(((i, j), (i, j)) for i in range(1, 6) for j in range(1, 5))
    pair = Pair("t", "s", target, (source,), ("",), "x", 0, cells)
    runs, _ = bench.injections(pair, "digit", seed=0)
    assert runs == bench.injections(pair, "digit", seed=0)[0]  # seeded
    for run in runs:  # at most three cells, no two in one row or column
        assert 1 <= len(run) <= 3 and len({p[0] for p in run}) == len(run) == len({p[1] for p in run})
    result = bench.injected_recall([pair], seed=0)
    for kind, row in result["per_kind"].items():
        assert row["injected"] > 0, kind
        assert row["recall"] == 1.0 and row["label_accuracy"] == 1.0, (kind, row)


def test_the_script_says_one_line_on_a_bad_folder(tmp_path: Path, bench: ModuleType, capsys) -> None:  # type: ignore[no-untyped-def]
    assert bench.main(["--data", str(tmp_path / "missing")]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_the_html_page_says_which_rows_are_not_checked(tmp_path: Path) -> None:
    from tabverify.crosscheck.html import render_html

    target = write(tmp_path, "t.html", copy((2, 1, "77.73"), (2, 0, "ResNet-101 (ours)"), (3, 1, "79.58")))
    report = crosscheck(target, write(tmp_path, "s.html", SOURCE))
    page = render_html([("t", report)])
    assert [d.target for d in report.discrepancies] == [(3, 1)]
    assert page.count("not checked: the table marks this as its own") == len(SOURCE[0])
    assert 'title="transposition: 79.58 is 79.85 with two neighbouring digits swapped' in page


def test_a_row_named_differently_is_tied_by_two_results(tmp_path: Path) -> None:
    # "He et al." names ResNet-101 by its authors: two agreeing results tie it as they tie a row
    # named alike (the rule)
    assert list(check(tmp_path, copy((2, 0, "He et al."), (2, 1, "78.01"), (2, 4, "")))) == [(2, 1)]
    assert list(check(tmp_path, copy((2, 1, "78.01"), (2, 4, "")))) == [(2, 1)]


def test_a_column_disagreeing_more_often_than_it_agrees_is_another_setting(tmp_path: Path) -> None:
    """Rows tied by Top-1, Params and FLOPs; a Top-5 column that differs in most of them holds
    another setting (the issue's burst of flags from one misaligned column), not three typos."""
    other_setting = copy((1, 2, "90.11"), (2, 2, "91.02"), (3, 2, "93.37"))
    assert check(tmp_path, other_setting) == {}
    two_slips = copy((1, 2, "92.68"), (2, 2, "93.65"))  # three cells of the column still agree
    assert list(check(tmp_path, two_slips)) == [(1, 2), (2, 2)]
    lone = [row[:3] for row in copy((1, 2, "92.68"))[:2]] + [row[:3] for row in SOURCE[2:]]
    lone[3][2] = lone[4][2] = "-"  # one wrong cell is no pattern, whatever else the column holds
    assert (1, 2) in check(tmp_path, lone)


def test_one_tie_is_specific_only_when_both_sides_are_written_precisely(tmp_path: Path) -> None:
    source = [
        ["Method", "Size", "Top-1", "Params (M)"],
        ["ResNet-50", "224", "76.13", "26"],
        ["DeiT-S", "224", "79.85", "22.1"],
    ]
    target = [list(row) for row in source]
    target[1] = ["ResNet-50", "", "77.13", "25.6"]  # 25.6 rounds to the source's 26: two digits shared
    assert check(tmp_path, target, source=source) == {}
    source[1][3] = "25.6"
    assert list(check(tmp_path, target, source=source)) == [(1, 2)]


def test_a_header_flag_reads_the_column_s_own_header_not_the_group_above(tmp_path: Path) -> None:
    """'AP^b' under the group 'Mask R-CNN' is the source's box AP, not its 'AP mask' column."""
    source = [
        ["Backbone", "AP box", "AP50 box", "AP mask"],
        ["ResNet-50", "38.01", "58.62", "34.43"],
        ["ResNet-101", "40.41", "61.12", "36.42"],
        ["PVT-S", "40.43", "62.91", "37.82"],
    ]
    target = [["Backbone", "Mask R-CNN", "Mask R-CNN", "Mask R-CNN"], ["", "AP^b", "AP50^b", "AP^m"]]
    target += [list(row) for row in source[1:]]
    report = crosscheck(
        write(tmp_path, "target.html", target, header_rows=2), write(tmp_path, "source.html", source)
    )
    assert report.source_index == 0 and report.discrepancies == ()
    target[1][1] = "AP mask"  # the column's own header names the other source column
    report = crosscheck(
        write(tmp_path, "target.html", target, header_rows=2), write(tmp_path, "source.html", source)
    )
    assert [d.kind for d in report.discrepancies] == [DiscrepancyKind.HEADER]


def test_a_table_whose_rows_all_bear_other_names_shares_values_by_chance(tmp_path: Path) -> None:
    """Rows tied to the source only by their values, every one named otherwise than its source row
    ("MoCo v2" against "ResNet-50"), are another paper's methods that share numbers by chance: no
    cell of such an alignment is judged. One row named like its source row anchors the copy; so
    does a row named by its authors, which no word test can compare with a method's name."""
    others = ["MoCo v2", "InfoMin", "PixPro", "BYOL", "SimCLR"]
    target = copy((2, 1, "78.01"))
    for i, name in enumerate(others, start=1):
        target[i][0] = name

    def flagged(rows: list[list[str]]) -> list[tuple[int, int]]:
        report = crosscheck(
            write(tmp_path, "target.html", rows), write(tmp_path, "source.html", SOURCE), model=None
        )
        assert report.source_index == 0
        return [d.target for d in report.discrepancies]

    assert flagged(target) == []
    target[4][0] = "Swin-T [23]"
    assert flagged(target) == [(2, 1)]
    target[4][0] = "Liu et al."
    assert flagged(target) == [(2, 1)]
    # a header flag needs the anchor too
    swapped = [list(row) for row in target]
    swapped[0][1], swapped[0][2] = "Top-5", "Top-1"
    swapped[4][0] = "SimCLR"
    assert flagged(swapped) == []
    swapped[4][0] = "Swin-T"
    assert {d for d in flagged(swapped) if d[0] == 0}


def test_the_anchor_is_a_row_whose_cells_are_judged(tmp_path: Path) -> None:
    """A row named like its source row anchors the copy only when it is tied well enough to be
    judged itself: "ResNet-18" sharing one value with "ResNet-50" is no anchor for rows that all
    bear other names."""
    target = copy((3, 1, "79.58"))
    for i, name in enumerate(["ResNet-18", "InfoMin", "PixPro", "BYOL", "SimCLR"], start=1):
        target[i][0] = name
    target[1][2:] = ["", "", ""]  # "ResNet-18" keeps one shared value
    report = crosscheck(
        write(tmp_path, "target.html", target), write(tmp_path, "source.html", SOURCE), model=None
    )
    assert report.source_index == 0 and report.discrepancies == ()
    target[1][2] = "92.86"  # two agreeing results: judged, and named like "ResNet-50"
    report = crosscheck(
        write(tmp_path, "target.html", target), write(tmp_path, "source.html", SOURCE), model=None
    )
    assert [d.target for d in report.discrepancies] == [(3, 1)]


def test_a_row_tied_only_by_its_size_and_cost_keeps_only_near_misses(tmp_path: Path) -> None:
    """Parameters and FLOPs agreeing say the architecture is the same, not the experiment: a
    result far from the source's is another training run, a near miss is still a slip."""
    target = copy((1, 1, "79.02"), (1, 2, ""))  # ResNet-50 retrained with another recipe
    assert check(tmp_path, target) == {}
    target = copy((1, 1, "76.31"), (1, 2, ""))  # two digits swapped: a slip whatever the tie
    assert {p: d.kind for p, d in check(tmp_path, target).items()} == {(1, 1): DiscrepancyKind.TRANSPOSITION}
    target = copy((1, 1, "79.02"))  # Top-5 agrees too: the same experiment, a wrong Top-1
    assert list(check(tmp_path, target)) == [(1, 1)]


def test_no_header_flag_when_the_source_headers_overhang_its_body(tmp_path: Path) -> None:
    """A source whose header row has a headed column with nothing under it has its headers shifted
    against its body (an extra header cell), so its headers cannot prove a header swap."""
    target = copy()
    target[0][1], target[0][2] = "Top-5", "Top-1"
    assert {d.kind for d in check(tmp_path, target).values()} == {DiscrepancyKind.HEADER}
    source = [row + [""] for row in SOURCE]
    source[0][-1] = "FPS"
    assert check(tmp_path, target, source=source) == {}
