"""Table matching, cell matching and the discrepancy report on small tables made here."""

from __future__ import annotations

from pathlib import Path

import pytest

import tabverify
from tabverify.crosscheck import DiscrepancyKind, align, crosscheck, match_cells, match_table
from tabverify.crosscheck.cells import label_words, same_name
from tabverify.crosscheck.html import render_html
from tabverify.table import Grid, Table, read_html_tables, read_tables
from tabverify.table.scientific import Agreement
from tests.conftest import browser_dom
from tests.crosscheck.conftest import TARGET_ROWS, target_html


def test_finds_the_source_table_the_pairs_and_the_typo(target_path: Path, source_path: Path) -> None:
    report = tabverify.crosscheck(target_path, source_path)
    assert report.source_index == 1  # the second tabular: the detection results
    assert report.source is not None and "COCO" in report.source.caption
    pairs = {(p.target, p.source): p.agreement for p in report.pairs}
    # 66.6 sits in two source rows; the Swin-T copy pairs with Swin-T's, by position
    assert pairs[((3, 2), (2, 2))] is Agreement.EXACT
    assert pairs[((2, 3), (1, 3))] is Agreement.ROUNDED  # 26M vs 25.6
    assert ((4, 2), (3, 2)) not in pairs
    assert not any(p.target[0] == 5 for p in report.pairs)  # the citing paper's own row
    assert len(report.discrepancies) == 1
    wrong = report.discrepancies[0]
    assert (wrong.target, wrong.source, wrong.kind) == ((4, 2), (3, 2), DiscrepancyKind.DIGIT)
    assert wrong.target_text == "66.9" and wrong.source_text == "66.6"
    assert not report.ok


def test_a_correct_copy_is_ok(clean_target_path: Path, source_path: Path) -> None:
    report = crosscheck(clean_target_path, source_path)
    assert report.ok and report.source_index == 1 and len(report.pairs) == 9


def test_no_match_when_no_table_supports_the_target(target_path: Path, unrelated_path: Path) -> None:
    report = crosscheck(target_path, unrelated_path)
    assert report.source_index is None and report.pairs == () and report.ok


@pytest.mark.parametrize(
    "caption", ["Table 4: Ablation study of the backbone on COCO.", "Table 5: Results of ablated versions."]
)
def test_an_ablation_table_is_no_match(source_path: Path, caption: str) -> None:
    html = target_html().replace("Table 3: Comparison on COCO.", caption)
    target = read_html_tables(html)[0]
    sources = read_tables(source_path)
    report = crosscheck(target, sources)
    # the same rows would be matched under a comparison caption (test above); an ablation is the
    # paper's own experiments, and it says why nothing was matched
    assert report.source_index is None and report.discrepancies == ()
    assert any("ablation" in w for w in report.warnings)
    assert match_table(target, sources)[0] is None
    forced = crosscheck(target, sources, model=None)  # the caller knows the source: it is checked
    assert forced.source_index == 1 and len(forced.discrepancies) == 1


def test_a_row_tied_by_one_cell_is_not_judged(source_path: Path) -> None:
    rows = list(TARGET_ROWS)
    rows[0] = ("ResNet-50 [12]", "58.1", "38.2", "26M")  # AP and AP50 swapped in one row
    target = read_html_tables(target_html(rows))[0]
    report = crosscheck(target, read_tables(source_path))
    # only 26M (25.6) still agrees: one shared value does not establish that the row is a copy
    # (swaps in rows tied by two cells are classified: tests/crosscheck/test_flags.py)
    assert not any(d.target[0] == 2 for d in report.discrepancies)


def test_value_from_another_row_is_classified(source_path: Path) -> None:
    rows = list(TARGET_ROWS)
    rows[2] = ("ConvNeXt-T [31]", "43.7", "66.6", "29M")  # Swin-T's AP copied into ConvNeXt-T's row
    report = crosscheck(read_html_tables(target_html(rows))[0], read_tables(source_path))
    wrong = {d.target: d for d in report.discrepancies}
    assert wrong[(4, 1)].kind is DiscrepancyKind.OTHER_ROW and wrong[(4, 1)].found_at == (2, 1)


def test_scale_and_rounding_slips_are_classified(source_path: Path) -> None:
    rows = list(TARGET_ROWS)
    rows[0] = ("ResNet-50 [12]", "3.82", "58.1", "26M")
    rows[2] = ("ConvNeXt-T [31]", "44.2", "66.6", "28.5M")  # 28.6 is the source's
    report = crosscheck(read_html_tables(target_html(rows))[0], read_tables(source_path))
    kinds = {d.target: d.kind for d in report.discrepancies}
    assert kinds[(2, 1)] is DiscrepancyKind.SCALE
    assert kinds[(4, 3)] is DiscrepancyKind.DIGIT


def test_permuted_column_headers_are_found(source_path: Path) -> None:
    target = read_html_tables(target_html(headers=("AP50", "AP")))[0]  # numbers right, headers swapped
    report = crosscheck(target, read_tables(source_path))
    headers = [d for d in report.discrepancies if d.kind is DiscrepancyKind.HEADER]
    assert {d.target for d in headers} == {(1, 1), (1, 2)}


def test_transposed_copy_is_aligned() -> None:
    source = Grid.from_rows([["Method", "AP", "AR"], ["A", "41.2", "55.3"], ["B", "43.9", "57.1"]])
    target = Grid.from_rows([["Metric", "A", "B"], ["AP", "41.2", "43.9"], ["AR", "55.3", "57.1"]])
    alignment = align(target, source)
    assert alignment.transposed
    assert {(p.target, p.source) for p in alignment.pairs} == {
        ((1, 1), (1, 1)), ((1, 2), (2, 1)), ((2, 1), (1, 2)), ((2, 2), (2, 2)),
    }  # fmt: skip


def test_multi_metric_cells_pair_only_with_cells_of_as_many_numbers() -> None:
    source = Grid.from_rows([["Method", "AP / AR"], ["A", "45.1 / 60.2"], ["B", "41.0 / 55.5"]])
    target = Grid.from_rows([["Method", "AP / AR"], ["A", "45.1 / 60.2"], ["B", "41.0 / 55.5"]])
    assert [(p.target, p.source) for p in match_cells(target, source)] == [((1, 1), (1, 1)), ((2, 1), (2, 1))]
    single = Grid.from_rows([["Method", "AP", "AR"], ["A", "45.1", "60.2"], ["B", "41.0", "55.5"]])
    assert match_cells(target, single) == [] and match_cells(single, source) == []


def test_tables_and_grids_are_accepted() -> None:
    table = Table.from_rows(["model", "acc"], [["a", "91.25"], ["b", "88.75"], ["c", "70.5"]])
    report = crosscheck(table, [Grid.from_table(table)])
    assert report.source_index == 0 and len(report.pairs) == 3


def test_non_numeric_and_empty_tables_do_not_crash() -> None:
    words = Grid.from_rows([["name", "city"], ["ann", "oslo"], ["bob", "rome"]])
    assert crosscheck(words, [words]).source_index is None
    empty = Grid.from_rows([["only a header"]])
    assert crosscheck(empty, [words]).source_index is None
    best, ranking = match_table(words, [])
    assert best is None and ranking == []


def test_large_tables(tmp_path: Path) -> None:
    # 19,600 numbers: just under MAX_CROSSCHECK_NUMBERS
    rows = [["name"] + [f"c{j}" for j in range(49)]]
    rows += [[f"row {i}"] + [f"{(i * 49 + j) % 997 / 10:.1f}" for j in range(49)] for i in range(400)]
    grid = Grid.from_rows(rows)
    report = crosscheck(grid, [grid])
    assert report.source_index == 0 and len(report.pairs) == 400 * 49 and report.ok


def test_labels() -> None:
    assert label_words(r"ResNet-50 [12] \checkmark") == {"resnet", "50"}
    assert same_name("Swin-T [20] Transformer", "Swin-T DBLP:journals/corr/abs-2103-14030")
    assert same_name("CasMVSNet [13]", "CascadeMVSNet [15]")
    assert not same_name("ResNet-18", "ResNet-50")
    assert not same_name("Ours", "Ours")  # "ours" names a different method in each paper


def test_report_json_and_html(target_path: Path, source_path: Path) -> None:
    report = crosscheck(target_path, source_path)
    data = report.to_dict()
    # tables are numbered from 1 in the JSON (the second tabular is table 2, as `tabverify tables`
    # lists it); the Python index is 0-based; cell positions are 0-based
    assert report.source_index == 1 and data["source_table"] == 2 and data["ranking"][0]["table"] == 2
    assert data["source_name"].endswith("#table2") and data["warnings"] == []
    assert data["discrepancies"][0]["kind"] == "digit" and data["discrepancies"][0]["target"] == [4, 2]
    assert data["pairs"][0]["target_text"]
    page = render_html([("paper <- cited", report)])
    assert page.startswith("<!DOCTYPE html>") and "<script" not in page
    grids = read_html_tables(page)  # the page's own tables read back: target, source, discrepancy list
    assert len(grids) == 3
    assert grids[0].text(4, 2) == "66.9" and grids[1].text(3, 2) == "66.6"
    assert 'class="bad"' in page and "&lt;- cited" in page


def test_html_report_renders_in_a_real_browser(tmp_path: Path, target_path: Path, source_path: Path) -> None:
    page = tmp_path / "report.html"
    page.write_text(render_html([("paper <- cited", crosscheck(target_path, source_path))]), encoding="utf-8")
    dom = browser_dom(page)
    grids = read_html_tables(dom)  # what the browser built, read back
    assert len(grids) == 3
    assert grids[0].text(4, 2) == "66.9" and grids[0].n_columns == 4
    assert 'class="bad"' in dom and "1 discrepancy" in dom


def _other_table(k: int) -> Grid:
    """A small results table of its own (values that appear in no other table of the test)."""
    rows = [["Method", "BLEU", "ROUGE"]] + [[f"system {k}-{r}", f"{k}.{r}1", f"{k}.{r}7"] for r in range(3)]
    return Grid.from_rows(rows, caption=f"Other results {k}")


def test_many_source_tables_are_shortlisted_by_shared_values(
    monkeypatch: pytest.MonkeyPatch, target_path: Path, source_path: Path
) -> None:
    from tabverify.crosscheck import tables as table_matching

    sources = [_other_table(k) for k in range(10, 130)] + read_tables(source_path)
    aligned: list[Grid] = []
    real_align = table_matching.align

    def counting_align(target: Grid, source: Grid):  # type: ignore[no-untyped-def]
        aligned.append(source)
        return real_align(target, source)

    monkeypatch.setattr(table_matching, "align", counting_align)
    report = crosscheck(target_path, sources, max_aligned=5)
    # the work is bounded: 5 alignments, not 122, and the report says a limit cut it
    assert len(aligned) == 5 and len(report.ranking) == 5
    assert report.warnings and "only 5 of the 122 source tables" in report.warnings[0]
    assert report.to_dict()["warnings"] == list(report.warnings)
    # the shortlist kept the table the numbers come from (table 122, index 121: COCO results)
    assert report.source_index == 121 and report.to_dict()["source_table"] == 122
    assert [d.kind for d in report.discrepancies] == [DiscrepancyKind.DIGIT]


def test_up_to_the_limit_every_source_table_is_compared(target_path: Path, source_path: Path) -> None:
    sources = [_other_table(k) for k in range(10, 15)] + read_tables(source_path)
    report = crosscheck(target_path, sources)
    assert report.warnings == () and len(report.ranking) == len(sources)
    assert report.source_index == 6


def test_a_document_checked_against_itself_table_by_table_stays_linear() -> None:
    # every table of a 300-table document against all 300: each target aligns with at most
    # MAX_ALIGNED_TABLES of them, and each finds itself
    from tabverify.crosscheck import MAX_ALIGNED_TABLES

    grids = [_other_table(k) for k in range(10, 310)]
    for number in (0, 150, 299):
        report = crosscheck(grids[number], grids)
        assert report.source_index == number and len(report.ranking) == MAX_ALIGNED_TABLES
        assert report.warnings
