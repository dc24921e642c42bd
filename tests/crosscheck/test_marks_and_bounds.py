"""A copied cell with a footnote mark or an inequality must not hide the row's other copying errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import tabverify
from tabverify.crosscheck import DiscrepancyKind, crosscheck

CITED = Path(tabverify.__file__).parent / "examples" / "cited.tex"


def target_tex(swin_ap: str) -> str:
    """Table 2 of cited.tex copied with Swin-T's AP written as ``swin_ap`` and its AP50 miscopied."""
    rows = [
        r"ResNet-50 & 38.2 & 58.1 & 25.6 \\",
        rf"Swin-T & {swin_ap} & 66.9 & 28.3 \\",
        r"ConvNeXt-T & 44.2 & 66.6 & 28.6 \\",
        r"Ours & $45.1\pm0.2$ & 67.3 & 30.1 \\",
    ]
    return "\n".join(
        [
            r"\begin{tabular}{lccc}",
            r"Method & AP & AP$_{50}$ & Params (M) \\",
            r"\midrule",
            *rows,
            r"\end{tabular}",
        ]
    )


@pytest.mark.parametrize(
    ("swin_ap", "read"),
    [
        (r"43.7\dag", True),
        (r"43.7\ddag", True),
        (r"43.7\textsuperscript{a}", True),
        (r"43.7$^{a}$", True),
        (r"43.7\footnotemark", True),
        (r"43.7\footnote{Re-run with 12 epochs.}", True),
        (">43.7", False),
        ("$<$43.7", False),
        (r"\leq 43.7", False),
    ],
)
def test_the_miscopied_neighbour_of_a_marked_or_bounded_cell_is_found(
    tmp_path: Path, swin_ap: str, read: bool
) -> None:
    target = tmp_path / "target.tex"
    target.write_text(target_tex(swin_ap), encoding="utf-8")
    report = crosscheck(target, CITED)
    assert report.source_index == 1
    found = [(d.target, d.source, d.target_text, d.source_text) for d in report.discrepancies]
    # a read 43.7 and 28.3 tie the row by two cells, so its 66.9 is judged; with a bound only 28.3
    # agrees - a specific value (decimals, three digits) under the same name "Swin-T", which is
    # enough (one whole number such as an input size would not be: tests/crosscheck/test_flags.py)
    assert found == [((2, 2), (2, 2), "66.9", "66.6")]
    assert [d.kind for d in report.discrepancies] == [DiscrepancyKind.DIGIT]
    # a footnote-marked 43.7 is read and paired with the source's 43.7; a bound is not a value
    assert (((2, 1), (2, 1)) in {(p.target, p.source) for p in report.pairs}) is read


def test_crosscheck_command_exits_1_on_the_miscopied_cell(tmp_path: Path) -> None:
    target = tmp_path / "target.tex"
    target.write_text(target_tex(r"43.7\dag"), encoding="utf-8")
    done = subprocess.run(
        [str(Path(sys.executable).parent / "tabverify"), "crosscheck", str(target), "--source", str(CITED)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "66.9" in done.stdout and "66.6" in done.stdout
