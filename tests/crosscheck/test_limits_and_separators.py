"""The crosscheck's size bound (a table of more than MAX_CROSSCHECK_NUMBERS numbers is refused, quickly)
and numbers written with thousands separators or full-width digits being paired and checked."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tabverify.crosscheck import crosscheck
from tabverify.crosscheck.cells import check_numbers
from tabverify.errors import TableSizeError
from tabverify.table import Grid, read_tables


def _tall(rows: int) -> Grid:
    header = ["name"] + [f"c{i}" for i in range(9)]
    body = [[f"row{r}"] + [f"{r * 10 + i}.5" for i in range(9)] for r in range(rows)]
    return Grid.from_rows([header, *body], name="tall")


def test_a_table_past_the_number_limit_is_refused_naming_it() -> None:
    small, big = _tall(4), _tall(10)  # 36 and 90 numbers
    check_numbers(small, "t", limit=50)
    with pytest.raises(TableSizeError, match="target table .*more than 50 numbers"):
        check_numbers(big, "the target table", limit=50)
    with pytest.raises(TableSizeError, match="source table 2"):
        _check(small, [small, big])


def _check(target: Grid, sources: list[Grid]) -> None:
    for number, source in enumerate(sources, start=1):
        check_numbers(source, f"source table {number}", limit=50)


def test_the_default_limit_refuses_a_big_table_fast_and_keeps_cells_without_digits_free() -> None:
    big = _tall(2300)  # 20,700 numbers
    started = time.perf_counter()
    with pytest.raises(TableSizeError, match="the target table .*20,000 numbers"):
        crosscheck(big, big)
    assert time.perf_counter() - started < 10
    # many cells holding digits but few numbers ("row12" labels) pass the count
    words = Grid.from_rows([["a", "b"]] + [[f"v{r}", f"x{r}"] for r in range(25_000)], name="words")
    check_numbers(words, "the target table")


def test_a_table_at_the_limit_is_crosschecked() -> None:
    table = _tall(200)  # 1,800 numbers, distinct
    report = crosscheck(table, table)
    assert report.source_index == 0 and len(report.pairs) == 1800 and report.ok


SOURCE = r"""
\begin{table}\caption{Dataset sizes}
\begin{tabular}{lrrr}
\toprule
Dataset & Images & Classes & Size (GB) \\
\midrule
Small & 1,234 & 10 & 0.25 \\
Medium & 25,600 & 100 & 3.75 \\
Large & 88,000 & 1{,}000 & 12.5 \\
Huge & 197,000 & 21,841 & 48.1 \\
\bottomrule
\end{tabular}\end{table}
"""


def test_a_miscopied_number_with_thousands_separators_is_a_discrepancy(tmp_path: Path) -> None:
    source, target = tmp_path / "source.tex", tmp_path / "target.tex"
    source.write_text(SOURCE)
    target.write_text(SOURCE.replace("25,600", "25,060"))  # its row still tied by 100 and 3.75
    report = crosscheck(target, source)
    assert report.source_index == 0
    assert {(p.target, p.source) for p in report.pairs} >= {
        ((1, 1), (1, 1)),
        ((4, 1), (4, 1)),
        ((3, 2), (3, 2)),
    }
    assert [(d.target, d.target_text, d.source_text) for d in report.discrepancies] == [
        ((2, 1), "25,060", "25,600")
    ]


def test_full_width_digits_pair_with_ascii_ones() -> None:
    source = Grid.from_rows([["m", "acc", "f1"], ["a", "81.9", "70.2"], ["b", "75.3", "66.1"]])
    target = Grid.from_rows([["m", "acc", "f1"], ["a", "８１．９", "７０．２"], ["b", "75.3", "６６．１"]])
    report = crosscheck(target, source)
    assert len(report.pairs) == 4 and report.ok


def test_documents_read_thousands_the_same_way_in_every_format(tmp_path: Path) -> None:
    csv = tmp_path / "t.csv"
    csv.write_text('name,images\nmedium,"25,600"\nsmall,"1,2"\n')
    grid = read_tables(csv)[0]
    assert grid.measurements[(1, 1)].value == 25600 and not grid.measurements[(1, 1)].multi
    assert grid.measurements[(2, 1)].multi  # "1,2" lists two values
