"""The alignment keeps a copied cell's row and column once its value is miscopied.

A column whose values were exchanged between two rows, whose only copied value was changed, or
whose group header differs from the source's must still correspond to its source column, so that
the miscopied cell is judged; a column the target measured itself must not be made to correspond.
Every table is written to disk as HTML (header rows in ``<thead>``) and read back.
"""

from __future__ import annotations

from pathlib import Path

from tabverify.crosscheck import DiscrepancyKind, align, crosscheck, match_cells
from tabverify.table import read_tables
from tests.crosscheck.html_files import write


def flags(
    tmp_path: Path, target: list[list[str]], source: list[list[str]], header_rows: tuple[int, int] = (1, 1)
):
    """The discrepancies of ``target`` against ``source`` (the source table given), by position."""
    report = crosscheck(
        write(tmp_path, "target.html", target, header_rows=header_rows[0]),
        write(tmp_path, "source.html", source, header_rows=header_rows[1]),
        model=None,
    )
    return {d.target: d for d in report.discrepancies}


def columns(
    tmp_path: Path, target: list[list[str]], source: list[list[str]], header_rows: tuple[int, int] = (1, 1)
):
    """The target column -> source column map of the alignment."""
    t = read_tables(write(tmp_path, "target.html", target, header_rows=header_rows[0]))[0]
    s = read_tables(write(tmp_path, "source.html", source, header_rows=header_rows[1]))[0]
    return align(t, s).columns


# a column holding values in two rows only (the others leave it empty)
SPARSE = [
    ["Method", "AP", "AP50", "AR@100"],
    ["DenseCL", "40.3", "59.9", "-"],
    ["ReSim", "39.8", "60.2", "-"],
    ["LEWEL", "41.3", "61.2", "52.7"],
    ["PixPro", "41.4", "61.6", "54.1"],
]


def test_a_row_swap_in_a_column_of_two_values_is_flagged(tmp_path: Path) -> None:
    """The two values of 'AR' exchanged leave it no agreeing value in its own rows; the values, each
    in the other's row, still name the source column (headers named otherwise give no vote)."""
    swapped = [list(r) for r in SPARSE]
    swapped[0][3] = "AR (%)"
    swapped[3][3], swapped[4][3] = "54.1", "52.7"
    assert columns(tmp_path, swapped, SPARSE)[3] == 3
    found = flags(tmp_path, swapped, SPARSE)
    assert set(found) == {(3, 3), (4, 3)}
    assert {d.kind for d in found.values()} == {DiscrepancyKind.ROW_SWAP}


def test_values_of_other_rows_without_an_exchange_map_no_column(tmp_path: Path) -> None:
    """A target column whose values each sit in another row of a source column (a different metric
    sharing values, no two of them exchanged) is not taken for that column: nothing is flagged."""
    target = [
        ["Method", "AP", "AP50", "F"],
        ["DenseCL", "40.3", "59.9", "52.7"],
        ["ReSim", "39.8", "60.2", "54.1"],
        ["LEWEL", "41.3", "61.2", "55.0"],
        ["PixPro", "41.4", "61.6", "56.3"],
    ]
    source = [
        ["Method", "AP", "AP50", "F-mean"],
        ["DenseCL", "40.3", "59.9", "50.2"],
        ["ReSim", "39.8", "60.2", "52.7"],
        ["LEWEL", "41.3", "61.2", "54.1"],
        ["PixPro", "41.4", "61.6", "58.8"],
    ]
    assert 3 not in columns(tmp_path, target, source)
    assert flags(tmp_path, target, source) == {}


# one row copied, among rows of the target's own; the source's headers are grouped
SOURCE_GROUPED = [
    ["", "Supervised", "Supervised", "Supervised", "Diversity"],
    ["Method", "B@4", "M", "C", "Vocab"],
    ["ClipCap", "32.15", "27.1", "108.35", "1650"],
    ["VinVL", "41.0", "31.1", "140.9", "1125"],
    ["ESPER", "2.6", "11.5", "14.6", "8681"],
]
TARGET_ONE_ROW = [
    ["Model", "B@4", "M", "C", "Time"],
    ["Pseudo-Align", "5.2", "15.5", "29.4", "-"],
    ["ESPER", "2.6", "11.5", "14.6", "65s"],
    ["Retrieval", "4.8", "11.2", "13.4", "0.37s"],
]


def test_a_column_named_alike_under_another_group_header_keeps_its_source(tmp_path: Path) -> None:
    """'C' under 'Supervised' is the target's 'C': its only copied value miscopied, the column is
    still found by its lowest header, and the digit slip is flagged."""
    target = [list(r) for r in TARGET_ONE_ROW]
    target[2][3] = "16.6"
    assert columns(tmp_path, target, SOURCE_GROUPED, (1, 2))[3] == 3
    found = flags(tmp_path, target, SOURCE_GROUPED, (1, 2))
    assert list(found) == [(2, 3)] and found[(2, 3)].kind is DiscrepancyKind.DIGIT


# one row copied under headers named differently in the two papers
SOURCE_RANKS = [
    ["Method", "mAP", "top-1", "top-5", "top-10"],
    ["Baseline", "59.5", "80.3", "90.4", "93.0"],
    ["Baseline + TMB + GLT", "79.5", "92.2", "96.5", "97.8"],
]
TARGET_RANKS = [
    ["Method", "rank-1", "rank-5", "rank-10", "mAP"],
    ["LOMO", "27.2", "41.6", "49.1", "8.0"],
    ["GLT", "92.2", "96.5", "97.8", "79.5"],
    ["MMT", "86.8", "94.6", "96.9", "69.0"],
]


def test_a_miscopied_column_between_two_copied_ones_is_judged(tmp_path: Path) -> None:
    """rank-5 lies between rank-1 and rank-10, which correspond to top-1 and top-10: it is top-5."""
    target = [list(r) for r in TARGET_RANKS]
    target[2][2] = "96.6"
    assert columns(tmp_path, target, SOURCE_RANKS)[2] == 3
    found = flags(tmp_path, target, SOURCE_RANKS)
    assert list(found) == [(2, 2)] and found[(2, 2)].kind is DiscrepancyKind.DIGIT


def test_a_miscopied_column_at_the_end_of_a_block_is_judged_when_its_label_agrees(tmp_path: Path) -> None:
    """rank-1 is next to rank-5 (top-5), and shares '1' with top-1, the column next to top-5."""
    target = [list(r) for r in TARGET_RANKS]
    target[2][1] = "93.2"
    assert columns(tmp_path, target, SOURCE_RANKS)[1] == 2
    found = flags(tmp_path, target, SOURCE_RANKS)
    assert list(found) == [(2, 1)] and found[(2, 1)].kind is DiscrepancyKind.DIGIT


def test_a_column_the_target_measured_itself_is_not_filled_in(tmp_path: Path) -> None:
    """Throughput measured again by the citing paper (and named otherwise) differs in every copied
    row: the column between two copied ones is not the source's, and nothing is flagged."""
    source = [
        ["Method", "Params", "Throughput", "Top-1"],
        ["ResT-Small", "13.66", "1043", "79.6"],
        ["ResT-Base", "30.28", "673", "81.6"],
        ["DeiT-S", "22.05", "940", "79.8"],
    ]
    target = [
        ["Method", "Params", "Speed (img/s)", "Top-1"],
        ["ResT-Small", "13.66", "1298", "79.6"],
        ["ResT-Base", "30.28", "735", "81.6"],
        ["DeiT-S", "22.05", "961", "79.8"],
    ]
    assert 2 not in columns(tmp_path, target, source)
    assert flags(tmp_path, target, source) == {}


def test_a_row_tied_by_one_value_does_not_take_a_column_from_a_copied_row(tmp_path: Path) -> None:
    """One copied row (three values) and another target row sharing a single value with another
    source row by chance: the columns follow the copied row."""
    source = [
        ["Setting", "Method", "BLEU-4", "METEOR", "ROUGE-L", "CIDEr"],
        ["A", "Feng", "5.6", "12.4", "28.7", "28.6"],
        ["B", "Laina", "6.5", "12.9", "35.1", "22.7"],
        ["B", "Ours", "7.6", "13.5", "37.3", "31.8"],
    ]
    target = [
        ["Model", "B@4", "M", "C"],
        ["Honda", "7.6", "13.5", "31.8"],
        ["Retrieval", "4.8", "11.2", "35.1"],
    ]
    assert columns(tmp_path, target, source) == {1: 2, 2: 3, 3: 5}


def test_a_target_stacking_two_blocks_of_the_source_pairs_both(tmp_path: Path) -> None:
    """The source puts two splits side by side; the target lists each method once per split. No one
    map of rows and columns holds both, so the second split is a block of its own."""
    source = [
        ["Method", "SS 1", "SS 5", "SS 10", "TZ 1", "TZ 5", "TZ 10"],
        ["C3D-PN", "57.1", "66.4", "71.7", "50.9", "61.9", "67.5"],
        ["ARN", "66.3", "73.1", "77.9", "61.2", "70.7", "75.2"],
        ["TRX", "77.5", "88.8", "92.8", "75.2", "88.1", "91.5"],
    ]
    target = [
        ["Method", "Split", "1-shot", "5-shot", "10-shot"],
        ["C3D-PN", "S", "57.1", "66.4", "71.7"],
        ["ARN", "S", "66.3", "73.1", "77.9"],
        ["TRX", "S", "77.5", "88.8", "92.8"],
        ["C3D-PN", "T", "50.9", "61.9", "67.5"],
        ["ARN", "T", "61.2", "70.7", "75.2"],
        ["TRX", "T", "75.2", "88.1", "91.5"],
    ]
    t = read_tables(write(tmp_path, "target.html", target))[0]
    s = read_tables(write(tmp_path, "source.html", source))[0]
    alignment = align(t, s)
    assert len(alignment.blocks) == 1
    pairs = {p.target: p.source for p in match_cells(t, s)}
    assert len(pairs) == 18 and pairs[(4, 2)] == (1, 4) and pairs[(6, 4)] == (3, 6)


def test_rows_sharing_single_values_make_no_block(tmp_path: Path) -> None:
    """Target rows left over that share one value each with the source are no further block."""
    target = [list(r) for r in SPARSE] + [["Other", "40.3", "1.0", "-"], ["Another", "9.9", "61.2", "-"]]
    t = read_tables(write(tmp_path, "target.html", target))[0]
    s = read_tables(write(tmp_path, "source.html", SPARSE))[0]
    assert align(t, s).blocks == ()
